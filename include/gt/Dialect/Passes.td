// GT's passes. Each has a `gt-` flag, lives in one file of lib/Dialect/Transforms and has a lit
// test in test/Transforms named after its flag.
#ifndef GT_PASSES_TD
#define GT_PASSES_TD

include "mlir/Pass/PassBase.td"

def GTVerify : Pass<"gt-verify", "::mlir::ModuleOp"> {
  let summary = "checks lifetimes: no use of a value after its gt.free, no double free";
  let description = [{
    Op-level rules (shapes, dtypes) are checked by each op's verifier through the op table;
    this pass checks what spans ops. Before (an error):
    ```mlir
    gt.free %0 : tensor<4xf32>
    %1 = gt.neg %0 : tensor<4xf32> -> tensor<4xf32>   // error: used after gt.free
    ```
    Rationale: the client drives frees from Python reference counts; a bad stream from a buggy
    or hostile client must be refused at the dispatcher, not crash a worker.
  }];
}

def GTPlace : Pass<"gt-place", "::mlir::ModuleOp"> {
  let summary = "assigns every op a worker (`gt.worker`)";
  let description = [{
    1. An op whose operand already lives on a worker (a function argument carrying
       `gt.worker`, or the result of a placed op) runs on that worker.
    2. Any other op runs on `default-worker` (the session's home worker).
    Before / after:
    ```mlir
    %1 = gt.neg %0 : tensor<4xf32> -> tensor<4xf32>
    %1 = gt.neg %0 {gt.worker = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
    ```
    Rationale: placement is a pass of its own so that sharding passes (signals, propagation,
    collectives) can run before it and constrain it.
  }];
  let options = [
    Option<"defaultWorker", "default-worker", "int64_t", "0", "worker for ops with no placed operand">
  ];
}

def GTLowerToLinalg : Pass<"gt-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "lowers gt compute ops to linalg/tensor/arith/math on tensors";
  let description = [{
    Elementwise ops (with broadcasting as indexing maps), reductions, matmul, one_hot, full
    and randn become `linalg.generic`/`linalg.fill`; transpose becomes `linalg.transpose` and
    reshape `tensor.reshape`. `gt.upload` and `gt.free` are left alone (they are data and
    lifetime, not compute).
    ```mlir
    %2 = gt.add %0, %1 : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    // =>
    %e = tensor.empty() : tensor<4x3xf32>
    %2 = linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d1), (d0, d1) -> (d0, d1)], ...}
           ins(%0, %1 : ...) outs(%e : ...) { arith.addf ... }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def GTMarkHotRegions : Pass<"gt-mark-hot-regions", "::mlir::ModuleOp"> {
  let summary = "groups runs of fusible ops into gt.region and marks repeated ones hot";
  let description = [{
    A run is a maximal sequence of fusible ops (elementwise, where, cast, full, broadcast_to,
    transpose, reshape, sum/mean/max, one_hot) on one worker, possibly interleaved with
    gt.free; matmul, upload, randn and anything else end it. A run of at least `min-ops`
    ops becomes a `gt.region`: values used only inside it stay inside (their gt.free moves
    to the end of the body), everything else is yielded; frees of its inputs move after it.
    The region's `key` hashes its structure (ops, attributes except fill values, wiring,
    dtypes, shapes, yielded values). A key seen `hot-after` times (counting this one; in the
    dispatcher the count spans every batch and session) is marked `hot`, as is every region
    whose ops all carry `gt.compile` (set from a `compile: true` signal).
    Before / after (hot-after=1):
    ```mlir
    %1 = gt.add %x, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %2 = gt.relu %1 : tensor<4x3xf32> -> tensor<4x3xf32>
    gt.free %1 : tensor<4x3xf32>
    // =>
    %2 = gt.region(%x, %b) {key = "...", hot} : (...) -> tensor<4x3xf32> {
    ^bb0(%a: tensor<4x3xf32>, %c: tensor<3xf32>):
      %1 = gt.add %a, %c ...
      %2 = gt.relu %1 ...
      gt.free %1 : tensor<4x3xf32>
      gt.yield %2 : tensor<4x3xf32>
    }
    ```
    Rationale: the eager path pays one kernel launch and one buffer per op; a hot region
    is compiled once (in the background, on the worker) into fused kernels and replayed.
  }];
  let options = [
    Option<"hotAfter", "hot-after", "int64_t", "2", "occurrences of a key before it is hot">,
    Option<"minOps", "min-ops", "int64_t", "2", "fewest compute ops worth a region">
  ];
}

#endif // GT_PASSES_TD
