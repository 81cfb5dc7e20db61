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

def GTApplySignals : Pass<"gt-apply-signals", "::mlir::ModuleOp"> {
  let summary = "turns each op's signal into a layout (creation, gt.shard) or a worker set (compute)";
  let description = [{
    Looks each op's `gt.signal` up in the sharding config (YAML; see include/gt/Core/Config.h).
    A gradient op (`gt.backward`) uses the entry its signal's `backward:` names.
    1. Tensor creation (upload, full, randn, rand) and `gt.shard` get the entry's layout as
       `gt.sharding`: `shard: {axis, workers}` -> split(axis) over workers (all workers when
       omitted), `replicated` -> replicated.
    2. Other ops get the entry's workers as `gt.workers`: `gt-propagate-sharding` runs them
       there and moves their operands in; under `shard:` also its axis as `gt.signal_axis`.
    3. `compile: true` marks the op `gt.compile`.
    An unknown signal changes nothing. An axis outside the tensor's rank is an error naming the
    YAML line. With `auto-shard-bytes=N` (GT_AUTO_SHARD), a tensor created without a known
    signal is split along axis 0 over all workers if it has at least N bytes and axis 0 has a
    row per worker, and replicated over all workers otherwise. Before / after (config `data: {shard: {axis: 0}}`, two workers):
    ```mlir
    %0 = gt.upload {blob = 0 : i64, gt.signal = "data"} : tensor<8x4xf32>
    %0 = gt.upload {blob = 0 : i64, gt.sharding = #gt.sharding<split(0) over [0, 1]>, gt.signal = "data"} : tensor<8x4xf32>
    ```
  }];
  let options = [
    Option<"configPath", "config", "std::string", "\"\"", "the sharding config (YAML) to apply">,
    Option<"numWorkers", "num-workers", "int64_t", "1", "how many workers exist (workers omitted = all)">,
    Option<"autoShardBytes", "auto-shard-bytes", "int64_t", "0",
           "split axis 0 of unsignaled tensors of at least this many bytes over all workers (0: off)">
  ];
}

def GTPropagateSharding : Pass<"gt-propagate-sharding", "::mlir::ModuleOp"> {
  let summary = "gives every op's result a layout and says which operand layouts it needs";
  let description = [{
    Walks ops in order. An op runs on its `gt.workers` (from a signal), else on the largest
    worker group among its non-scalar operands (all operands when every one is 0-d), so a
    scalar moves to a tensor and not the tensor to the scalar; between groups of one size on
    the one that needs the fewest bytes moved in (each operand's bytes times the group's
    workers that lack it), then the earlier operand's; with no operands on `default-worker`.
    An op under a `shard:` signal (`gt.signal_axis`) none of whose operands is split or
    partial splits the first operand that enters its workers from outside (an activation from
    another pipeline stage, a batch made outside the signal) along the signal's axis, so the
    signal shards the compute and not only the tensors made under it. Each op's spec names its
    rule (`sharding:` in ops/*.yaml; MLIR mesh vocabulary; anything not listed falls back to
    replicated operands, always correct):
    - elementwise: a split operand keeps its axis; operands that broadcast along it must be
      replicated; two partial(sum) operands of add/sub stay partial; other partials are resolved;
    - batch (tril, triu) and outside_axes (cumsum, flip): a split axis the op does not compute
      along (not one of the last two; not one its axis attributes name) is kept, others gathered;
    - matmul: split rows/batch x replicated -> split rows (data parallel); replicated x split
      columns -> split columns (column-parallel); split k x split k -> partial(sum)
      (row-parallel); a replicated operand opposite a split k is sliced locally (all_slice);
    - reductions: over a split axis -> the spec's `partial:` (sum for sum/mean, max, min; ops
      without one, such as argmax, gather first); over other axes the split axis is renumbered;
    - transpose, reshape (when the split axis survives), broadcast_to, slice and concat (off
      the split axis) carry the split; transpose, reshape and slice of a partial stay partial;
    - one_hot, index_select (rows of a replicated table picked by split indices),
      index_add / scatter_add of split rows (-> partial(sum)), gather of matching splits.
    Writes `gt.sharding` on results and, where an operand's layout must change,
    `gt.operand_shardings` on the op (gt-insert-collectives acts on it).
  }];
  let options = [
    Option<"defaultWorker", "default-worker", "int64_t", "0", "worker for ops with no placed operand">
  ];
}

def GTInsertCollectives : Pass<"gt-insert-collectives", "::mlir::ModuleOp"> {
  let summary = "materializes layout changes as all_reduce / all_gather / reduce_scatter / all_to_all / all_slice / move";
  let description = [{
    For each operand whose layout differs from the one its op needs (`gt.operand_shardings`):
    partial -> replicated: `gt.all_reduce`; partial -> split: `gt.reduce_scatter`; split ->
    replicated: `gt.all_gather`; split(a) -> split(b): `gt.all_to_all`; replicated -> split:
    `gt.all_slice` (local, no data moves). A change of worker group first resolves partial
    values (and splits over a different number of workers), then `gt.move`s the value. Each
    inserted op carries the `gt.signal` that caused it (the consumer's, else the producer's),
    and a value converted twice the same way is converted once.
    ```mlir
    %2 = gt.matmul %0, %1 {gt.operand_shardings = [...]} ...
    // =>
    %g = gt.all_gather %1 {axis = 1 : i64, workers = array<i64: 0, 1>, gt.signal = "layer1"} ...
    %2 = gt.matmul %0, %g ...
    ```
  }];
}

def GTBucketAllReduces : Pass<"gt-bucket-all-reduces", "::mlir::ModuleOp"> {
  let summary = "combines the all_reduces of one step (a data-parallel step's gradients) into buckets";
  let description = [{
    A data-parallel step all-reduces every parameter's gradient: one collective (and one
    round trip) per parameter. This pass combines all_reduces over the same workers, with the
    same reduction, element type and `gt.signal`, into one all_reduce of their operands
    flattened and concatenated (`gt.reshape`, `gt.concat`), followed by a `gt.slice` and
    `gt.reshape` per original result: gradient bucketing as in PyTorch DDP (Li et al.,
    "PyTorch Distributed: Experiences on Accelerating Data Parallel Training", VLDB 2020) and
    XLA's all-reduce combiner.

    Walking each block in order, an all_reduce joins the open bucket of its kind when its
    operand is defined before the bucket's first all_reduce (the bucket runs there) and the
    bucket stays within `bucket-bytes`; otherwise it starts a new bucket. A bucket of one is
    left as it was. Every worker's program keeps one global order of collectives, so
    moving an all_reduce earlier cannot make the workers wait on each other.
    ```mlir
    %a = gt.all_reduce %ga {workers = array<i64: 0, 1>, ...} : tensor<4x3xf32> -> tensor<4x3xf32>
    ...
    %b = gt.all_reduce %gb {workers = array<i64: 0, 1>, ...} : tensor<3xf32> -> tensor<3xf32>
    // =>
    %fa = gt.reshape %ga {shape = array<i64: 12>} ...
    %c = gt.concat %fa, %gb {axis = 0 : i64} : ... -> tensor<15xf32>
    %r = gt.all_reduce %c ... : tensor<15xf32> -> tensor<15xf32>
    %sa = gt.slice %r {starts = array<i64: 0>, ...} : tensor<15xf32> -> tensor<12xf32>
    %a = gt.reshape %sa {shape = array<i64: 4, 3>} ...
    %b = gt.slice %r {starts = array<i64: 12>, ...} : tensor<15xf32> -> tensor<3xf32>
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "64 << 20",
           "the most bytes one combined all_reduce carries (0: combine nothing)">
  ];
}

def GTSplitByWorker : Pass<"gt-split-by-worker", "::mlir::ModuleOp"> {
  let summary = "the global view -> one function per worker (@workerN) with local shapes";
  let description = [{
    Every op runs on each worker of its result's group, with the block of the shape that
    worker holds (balanced splits: 13 rows over 4 workers are 4, 3, 3, 3). Arguments go to
    the workers that hold them. Special cases:
    - randn/rand split over workers: each worker draws the whole tensor and keeps its block
      (`gt.all_slice`), so the values are those of the unsharded tensor;
    - mean over a split axis: each worker's mean times its share of the rows (then summed
      by the all_reduce of the partial value);
    - gt.move: rank r of `to` receives rank r (mod |from|) of `from` by `gt.send`/`gt.recv`
      (nothing when source and destination are the same worker);
    - gt.free runs on every worker holding the value;
    - a whole client tensor (one with a `gt.id`: an argument or an op's result) received by
      a worker is kept there as another replica (`gt.replica_of` = its id) and freed with the
      tensor: a later move of it in the batch reuses the copy, and the dispatcher records the
      new holder, so later batches do not move it again (tensors never change);
    - other values the passes added (no `gt.id`: collective results, received blocks) are
      freed right after their last use on each worker.
    Ops keep `gt.id` and their global `gt.sharding`, so the dispatcher maps results back to
    the client's tensors.
    ```mlir
    %1 = gt.exp %0 {gt.sharding = #gt.sharding<split(0) over [0, 1]>} : tensor<13x4xf32> -> tensor<13x4xf32>
    // =>
    func.func @worker0(%arg0: tensor<7x4xf32>) { %0 = gt.exp %arg0 ... : tensor<7x4xf32> -> tensor<7x4xf32> }
    func.func @worker1(%arg0: tensor<6x4xf32>) { %0 = gt.exp %arg0 ... : tensor<6x4xf32> -> tensor<6x4xf32> }
    ```
  }];
  let options = [
    Option<"defaultWorker", "default-worker", "int64_t", "0", "worker of values with no layout or gt.worker">
  ];
}

def GTLowerToLinalg : Pass<"gt-lower-to-linalg", "::mlir::ModuleOp"> {
  let summary = "lowers gt compute ops to linalg/tensor/arith/math on tensors";
  let description = [{
    A dialect conversion: one pattern per op under a ConversionTarget where the gt dialect is
    illegal except for upload, free and the distribution ops, so a compute op without a
    lowering fails with "failed to legalize operation 'gt.<op>'".
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
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
  let options = [
    Option<"scatterLoops", "scatter-loops", "bool", "false",
           "sequential scf.for loops where they do less work (for the CPU): index_add/scatter_add "
           "over the source, result[clamp(idx)] += src (source size adds, not result size x indices), "
           "and cumsum as a running sum (n adds along the axis, not n^2 / 2); without it, dense "
           "linalg.generic forms with independent output elements (for the GPU)">,
    Option<"checks", "checks", "bool", "false",
           "call gt_runtime_error (declared in the module) where an index is out of range "
           "(index_select, gather, index_add, scatter_add, one_hot) or an integer floor_divide or "
           "remainder divides by zero; kernels still clamp the index and give 0 (the CPU worker "
           "defines the function and poisons the results; on the GPU gt-gpu-runtime-errors "
           "turns the calls into writes to a module global; see kRuntimeErrorFunction)">
  ];
}

def GTMarkHotRegions : Pass<"gt-mark-hot-regions", "::mlir::ModuleOp"> {
  let summary = "groups runs of fusible ops into gt.region and marks repeated ones hot";
  let description = [{
    A run is a maximal sequence of fusible ops (elementwise, where, cast, full, broadcast_to,
    transpose, reshape, sum/mean/max, one_hot) on one worker, possibly interleaved with
    gt.free; matmul, upload, randn and anything else end it. Each connected part of a run is
    cut, in order, into pieces whose kernels take at most `max-args` arguments (the workers'
    limit), and a piece of at least `min-ops` ops becomes a `gt.region`: values used only
    inside it stay inside (their gt.free moves
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
    Option<"minOps", "min-ops", "int64_t", "2", "fewest compute ops worth a region">,
    Option<"maxArgs", "max-args", "int64_t", "64",
           "most kernel arguments (inputs, fill values, outputs) of a region, as workers compile them">
  ];
}

def GTApproximateMath : Pass<"gt-approximate-math"> {
  let summary = "replaces f32 tanh/exp/log/erf/... by polynomial approximations";
  let description = [{
    Runs MLIR's `populateMathPolynomialApproximationPatterns`, with f32 tanh first written as
    1 - 2 / (e^(2|x|) + 1), or an odd polynomial near 0, within 1.4 ulp (MLIR's own tanh
    saturates to 1 from |x| = 7.9): the result is plain arith, so
    CPU loops vectorize instead of calling libm per element, and GPU kernels need no
    libdevice call for them. Eager and fused kernels both run it, so they agree bit for bit.
    ```mlir
    %1 = math.tanh %0 : f32
    // => a clamp, a rational polynomial and selects in arith
    ```
  }];
  let options = [
    Option<"fmaToLLVM", "fma-to-llvm", "bool", "false",
           "also lower math.fma to llvm.intr.fma (GPU kernels: convert-gpu-to-nvvm leaves math.fma alone)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect", "::mlir::x86vector::X86VectorDialect"];
}

def GTBubbleUpSlices : Pass<"gt-bubble-up-slices", "::mlir::func::FuncOp"> {
  let summary = "computes each static slice of an elementwise generic's result by a generic over the slice";
  let description = [{
    Runs in the fusion pipeline before elementwise fusion. When every use of an all-parallel
    `linalg.generic` (one result through the identity map, input maps of loop dimensions and
    zeros, a body that reads neither its output nor `linalg.index`) is a static `tensor.extract_slice`
    that keeps the rank, and the slices together hold no more elements than the result, each
    slice becomes a generic of its own over the slice's elements, reading slices of the
    inputs; the whole result is no longer computed. Each part can then fuse with what
    consumes it, through reshapes (reshape by expansion) and transposes: a bias added to a
    fused q/k/v projection and split three ways into heads is one loop nest per part, reading
    the projection once, instead of a [B, T, 3C] temporary, three copies and three transposes.
    ```mlir
    %y = linalg.generic {indexing_maps = [#id, #last, #id], ...}
        ins(%x, %bias : tensor<4x6xf32>, tensor<6xf32>) outs(%e : tensor<4x6xf32>) { addf }
    %a = tensor.extract_slice %y[0, 0] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
    // becomes
    %xa = tensor.extract_slice %x[0, 0] [4, 3] [1, 1] : tensor<4x6xf32> to tensor<4x3xf32>
    %ba = tensor.extract_slice %bias[0] [3] [1] : tensor<6xf32> to tensor<3xf32>
    %a = linalg.generic {indexing_maps = [#id, #last, #id], ...}
        ins(%xa, %ba : tensor<4x3xf32>, tensor<3xf32>) outs(%ea : tensor<4x3xf32>) { addf }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def GTReshapesAsViews : Pass<"gt-reshapes-as-views", "::mlir::func::FuncOp"> {
  let summary = "tensor.reshape that splits or merges neighbouring axes -> expand_shape / collapse_shape, before bufferization";
  let description = [{
    Workers run it after fusion, right before one-shot bufferization. A `tensor.reshape` of
    static shapes that only inserts or removes unit axes, or splits or merges neighbouring
    axes (a reduction's keepdims result, above all), becomes `tensor.expand_shape` or
    `tensor.collapse_shape`, which bufferize to a view. MLIR 19's bufferization of
    `tensor.reshape` counts its shape operand as an alias of the result, so a reduction
    written in place into a buffer that goes on to a reshape conflicts with the read-only
    shape constant, and bufferization copies the reduction's initial value into a second
    buffer first (an extra allocation and loop, a kernel launch on a GPU, per keepdims
    reduction; fixed upstream in llvm/llvm-project#128590). After fusion, so that elementwise
    fusion's reshape propagation does not see the new ops: the kernels' loops stay as they
    were.
    ```mlir
    %r = tensor.reshape %sum(%shape) : (tensor<64xf32>, tensor<2xi64>) -> tensor<64x1xf32>
    // =>
    %r = tensor.expand_shape %sum [[0, 1]] output_shape [64, 1] : tensor<64xf32> into tensor<64x1xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def GTEmptyTensorsThroughReshapes : Pass<"gt-empty-tensors-through-reshapes", "::mlir::func::FuncOp"> {
  let summary = "lets a generic whose reshaped result is inserted into a larger tensor, or written to an output, write into its place there";
  let description = [{
    Runs at the end of the fusion pipeline. A `linalg.generic` that writes a `tensor.empty`
    (and does not read it), whose one result goes through one `tensor.collapse_shape` or
    `tensor.expand_shape` into a static, rank-keeping `tensor.insert_slice`, writes instead
    into that slice of the destination, reshaped back to the generic's shape. Bufferization
    then writes the part in place and drops the insert's copy (a slice written onto itself).
    Upstream's `eliminate-empty-tensors` does this when nothing sits between the generic and
    the insert; MLIR 19's stops at a reshape. A concat of parts merged from heads (the q, k
    and v gradients transposed back to [B, T, C] and concatenated) is then one write per
    element instead of a write to a temporary and a copy.
    ```mlir
    %t = linalg.generic ... outs(%empty : tensor<2x4x2x2xf32>)
    %c = tensor.collapse_shape %t [[0], [1], [2, 3]] : tensor<2x4x2x2xf32> into tensor<2x4x4xf32>
    %r = tensor.insert_slice %c into %d[0, 0, 4] [2, 4, 4] [1, 1, 1] : tensor<2x4x4xf32> into tensor<2x4x12xf32>
    // becomes
    %s = tensor.extract_slice %d[0, 0, 4] [2, 4, 4] [1, 1, 1] : tensor<2x4x12xf32> to tensor<2x4x4xf32>
    %e = tensor.expand_shape %s [[0], [1], [2, 3]] ... into tensor<2x4x2x2xf32>
    %t = linalg.generic ... outs(%e : tensor<2x4x2x2xf32>)
    %c = tensor.collapse_shape %t ...
    %r = tensor.insert_slice %c into %d[0, 0, 4] [2, 4, 4] [1, 1, 1] ...
    ```
    The same holds for a result reshaped (through any number of reshapes) into a kernel's
    output, `bufferization.materialize_in_destination %c in restrict writable %out` with %out
    a memref argument: the generic writes `tensor.expand_shape` of `bufferization.to_tensor
    %out restrict writable` (the `restrict` moves there, as upstream's elimination moves it),
    so bufferization writes %out in place and drops the copy. A convolution's im2col columns
    (the patches reshaped to [N*OH*OW, C*KH*KW]) were a 42 MB temporary and a copy in the
    MNIST example's second layer.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def GTDuplicateBroadcasts : Pass<"gt-duplicate-broadcasts", "::mlir::func::FuncOp"> {
  let summary = "gives each consumer of a cheap expanding elementwise generic its own copy, so fusion recomputes it instead of storing it";
  let description = [{
    Runs in the fusion pipeline before elementwise fusion, which fuses a producer only into
    its single consumer. An all-parallel `linalg.generic` with one result, a body of at most
    `max-body-ops` operations, and inputs that together hold at most half the elements of its
    result (a broadcast, a one-hot built from [N, 1] indices) is cloned for each use that
    elementwise fusion can take (the original stays with the other uses, or with the first
    use when all can be fused). Each such consumer then
    recomputes it in its own loop (a compare and a select per element for the one-hot)
    instead of the kernel writing the expanded tensor and reading it back: cross-entropy's
    gradient no longer stores an [N, C] one-hot tensor.

    With `recompute` (GPU kernels, memory-bound), every such small all-parallel generic is
    cloned for its fusable uses, whatever its inputs' size, from the last to the first (so a
    chain is copied whole): softmax's `exp(x - max)` feeds its row sum and its division, and
    the masked, scaled scores feed the row maximum and the subtraction; each reduction and the
    final elementwise kernel then read the scores themselves instead of full-size
    intermediates written and read back (attention's softmax over (8, 12, 1024, 1024): two
    400 MB tensors fewer written and read). At most `max-uses` copies of one generic.
  }];
  let options = [
    Option<"maxBodyOps", "max-body-ops", "int64_t", "8", "the largest body (operations, yield excluded) worth recomputing">,
    Option<"recompute", "recompute", "bool", "false",
           "also clone small elementwise generics that do not expand (GPU: recompute rather than store)">,
    Option<"maxUses", "max-uses", "int64_t", "4", "with `recompute`: the most fusable uses a generic is cloned for">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def GTFoldExtracts : Pass<"gt-fold-extracts", "::mlir::func::FuncOp"> {
  let summary = "computes the elements read by tensor.extract from an elementwise linalg.generic instead of its whole result";
  let description = [{
    Runs in the fusion pipeline after elementwise fusion. A `tensor.extract` from the result
    of an all-parallel `linalg.generic` (identity output map, projected-permutation or
    constant-0 input maps, a body that does not read its output) is replaced by the body
    computed at the extracted position, from extracts of the generic's inputs. When every
    use of the result is such an extract the generic is left dead and disappears, so a
    gather of a few elements no longer computes and writes the whole tensor: cross-entropy's
    `gather(x - logsumexp(x), target)` reads N elements of x instead of writing N x C
    log-probabilities.
    ```mlir
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
      ^bb0(%in: f32, %out: f32):
        %n = arith.negf %in : f32
        linalg.yield %n : f32
    } -> tensor<8xf32>
    %v = tensor.extract %y[%i] : tensor<8xf32>
    // =>
    %xi = tensor.extract %x[%i] : tensor<8xf32>
    %v = arith.negf %xi : f32
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect"];
}

def GTCopyToLinalg : Pass<"gt-copy-to-linalg", "::mlir::func::FuncOp"> {
  let summary = "turns bufferized copies into linalg.copy loops (no runtime library call)";
  let description = [{
    Runs after bufferization on both targets. A `memref.copy` of a strided view (a slice)
    would lower to a call into MLIR's C runner library, which kernels do not link; on the GPU
    it would also run on the host and read device memory. As `linalg.copy` it becomes a loop
    nest (CPU) or a parallel loop and then a kernel (GPU). Copies of a buffer onto itself
    (left by in-place bufferization) are dropped.
    ```mlir
    memref.copy %a, %b : memref<4xf32> to memref<4xf32>
    // =>
    linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def GTGPUReductions : Pass<"gt-gpu-reductions", "::mlir::func::FuncOp"> {
  let summary = "turns bufferized linalg reductions into block-parallel GPU kernels";
  let description = [{
    Runs on a CUDA kernel after bufferization, before convert-linalg-to-parallel-loops (which
    would give each output element one thread looping over the whole reduced axis, and a
    full reduction one thread in all). A `linalg.generic` with reduction iterators, one
    f32/f64/i32/i64 output, static bounds, projected-permutation maps and a body ending in one
    associative combine of an element with `%out` (addf, mulf, maximumf, minimumf, maxnumf,
    minnumf, addi, muli, max/min si/ui, andi, ori, xori) becomes a `gpu.launch`:
    - one block per output element, `threads` = the reduced size rounded up to a power of two,
      between 32 and `block-size`; thread t folds elements t, t + threads, ... (its partial,
      starting from the combine's identity), then `gpu.all_reduce` combines the block's
      partials (warp shuffles and shared memory once convert-gpu-to-nvvm lowers it) and
      thread 0 stores `combine(total, out[i])`;
    - when there are fewer than `target-blocks` outputs, each output's range is split over
      several blocks (each thread at least 4 elements) that write partials to a temporary
      buffer, and a second kernel reduces the partials into the output.
    Reductions over fewer than `min-reduced` elements, and those it does not match (argmax's
    two outputs, bf16/f16, a non-associative body), keep the one-thread-per-output loops.
    Reassociating changes float results in the last bits, as any parallel reduction does.
    (Harris, "Optimizing Parallel Reduction in CUDA", NVIDIA, 2007.)
    ```mlir
    linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<64x1000xf32>) outs(%out : memref<64xf32>) {
      ^bb0(%in: f32, %acc: f32): %s = arith.addf %in, %acc : f32  linalg.yield %s : f32 }
    // =>
    gpu.launch blocks(%b, ...) in (64, 1, 1) threads(%t, ...) in (256, 1, 1) {
      %p = scf.for %j = %t to %c1000 step %c256 iter_args(%a = 0.0) -> f32 { ... addf ... }
      %total = gpu.all_reduce add %p uniform {} : (f32) -> f32
      scf.if %t == 0 { store (total + out[%b]) into out[%b] }
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256", "most threads per block">,
    Option<"minReduced", "min-reduced", "int64_t", "32", "fewest reduced elements per output to use a block">,
    Option<"targetBlocks", "target-blocks", "int64_t", "512",
           "below this many outputs, an output's range is split over several blocks">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GTGPULoops : Pass<"gt-gpu-loops", "::mlir::func::FuncOp"> {
  let summary = "turns every top-level loop nest into blocks x threads, ready to map onto the GPU";
  let description = [{
    Runs after convert-linalg-to-parallel-loops.
    1. Serial code: a full reduction (no parallel dimension) and the initialization of a 0-d
       result become `scf.for` loops and stores at the top of the function, which would run
       on the host and touch device memory. Each maximal run of such top-level ops moves into
       a one-iteration `scf.parallel`, a one-thread kernel. Fails if a value made in such a
       run is used after it.
    2. Each top-level `scf.parallel` over N points (all dimensions collapsed into one by
       `collapseParallelLoops`; bounds must be static) becomes an outer loop over
       ceil(N / block-size) blocks and an inner loop over min(N, block-size) threads, with an
       `scf.if` guard when the last block is partial. gpu-map-parallel-loops then maps them
       to block_x and thread_x.
    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c300) step (%c1, %c1) { body(%i, %j) }
    // => (block-size=256: 1200 points, 5 blocks)
    scf.parallel (%b) = (%c0) to (%c5) step (%c1) {
      scf.parallel (%t) = (%c0) to (%c256) step (%c1) {
        %n = %b * 256 + %t
        scf.if %n < 1200 { body(%n / 300, %n mod 300) }
      }
    }
    ```
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256", "threads per block">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def GTCPUReductions : Pass<"gt-cpu-reductions", "::mlir::func::FuncOp"> {
  let summary = "vectorizes bufferized reductions over their innermost dimensions (CPU)";
  let description = [{
    Runs on every CPU kernel, eager and fused, after bufferization. Folded one element at a
    time, a reduction is a chain of dependent adds that LLVM may not reorder, so neither the
    combine nor the element computation before it (softmax's exp, LayerNorm's squares)
    vectorizes. A `linalg.generic` whose reduced loops are its innermost ones, reading its
    inputs at loop indices (or zeros), with a body of arith/math ops on numbers, one
    f32/f64/i32/i64 output and an associative combine (as gt-gpu-reductions) becomes, for each
    output element (an `scf.parallel` over the kept dimensions), with the reduced elements
    numbered in loop order (the flat index f):
    - `lanes` partials in a vector: element f is folded into lane f mod `lanes`, over the
      largest multiple of `lanes` elements;
    - the lanes combined in order 0, 1, ..., then the remaining elements one at a time;
    - `out = combine(total, out)`.
    The order depends only on the reduced sizes, so eager kernels (dynamic sizes) and fused
    ones (static) agree bit for bit; results differ from a one-at-a-time sum in the last bits.
    How the elements are read depends on the layout:
    - one reduced dimension: a vector loop (inputs contiguous along it: vector loads; strided,
      as a transposed view, or bools, whose vector is bits but whose memref holds bytes: one
      element per lane; not depending on it: one load, splat), then the tail;
    - several, whose inputs hold them contiguous, innermost and in order (a full sum): first
      rewritten over one dimension (the inputs through `memref.collapse_shape`);
    - several otherwise (a full sum of `x + b` with `b` broadcast over the rows), the
      innermost of static length a multiple of `lanes`: loops over the outer reduced
      dimensions carry the partials into a vector loop over the innermost (each vector holds
      flat indices f..f+lanes-1, and nothing is left over);
    - several otherwise: scalar loops carrying the partials, the current lane and f.
    A full reduction (no kept dimension) of at least two blocks of 8192 elements, or of sizes
    known only at run time (an eager kernel), runs in blocks: an `scf.parallel` over the whole
    blocks (on the worker's threads, by gt-cpu-parallel-loops, when large enough), each block's
    partials from the identity into a buffer; then on one thread the blocks' partials combined
    in block order, the elements after the last whole block, the lanes, the tail. Each element's
    loop indices come from f by division. The order still depends only on the sizes (with fewer
    than two blocks it is the order above), so eager and fused kernels agree bit for bit, and a
    full sum no longer runs on one thread.
    ```mlir
    linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x?xf32>) outs(%out : memref<?xf32>) { addf }
    // =>
    scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
      %v = scf.for %j = %c0 to %main step %c8 iter_args(%acc = dense<0.0> : vector<8xf32>) {
        %x = vector.load %x[%i, %j] : memref<?x?xf32>, vector<8xf32>  ... arith.addf %x, %acc
      }
      %t = lane 0 + (lane 1 + ...) ; scf.for %j = %main to %cols ... ; store out[i] + %t
    }
    ```
  }];
  let options = [Option<"lanes", "lanes", "int64_t", "8", "partials per output (the vector width: 8 float32 on AVX2)">];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect", "::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GTCPUParallelLoops : Pass<"gt-cpu-parallel-loops", "::mlir::func::FuncOp"> {
  let summary = "keeps one scf.parallel per large top-level loop nest, over its outer dimensions, for OpenMP";
  let description = [{
    Runs on a CPU kernel after convert-linalg-to-parallel-loops and before convert-scf-to-openmp,
    which turns every `scf.parallel` left into an OpenMP worksharing loop (the iterations are
    split statically over the worker's threads: `gt-worker --threads`, or one per core).
    1. A top-level `scf.parallel` whose nest reads or writes at least `min-work` elements in
       one load or store (over all its executions, vector lanes counted; all bounds static) keeps its leading dimensions, as few as give at least `min-chunks` iterations;
       its other dimensions become `scf.for` loops inside, so the innermost loop stays
       sequential and LLVM vectorizes it.
    2. With `dynamic-sizes` (eager kernels, which take their sizes at run time), a top-level
       `scf.parallel` with dynamic bounds is checked when the kernel runs:
       `scf.if (elements >= min-work)` runs it parallel over all its dimensions but the innermost
       (or its only one), else sequentially.
    3. A reduction over outer dimensions that keeps inner ones (a bias gradient's sum over the
       batch), as convert-linalg-to-parallel-loops makes it, `scf.for` loops over the reduced
       dimensions around one `scf.parallel` over the kept ones, with static bounds and at least
       `min-work` elements: when the kept loop's body only accumulates into elements indexed by
       its own induction variables (its stores, and its loads of what it stores, never use a
       reduced one), the kept dimensions move outermost and stay parallel, the innermost split
       into blocks of at least 64 iterations (a multiple of 16) so that it still vectorizes, as
       many as give `min-chunks` iterations with the outer kept ones. Each element still
       accumulates its rows in order: the same bits as on one thread.
       ```mlir
       scf.for %i = 0 to 2048 { scf.parallel (%j) = (0) to (512) step (1) { body } }
       // =>
       scf.parallel (%b) = (0) to (512) step (64) {
         scf.for %i = 0 to 2048 { scf.for %j = %b to min(%b + 64, 512) { body } }
       }
       ```
    4. Every other `scf.parallel` (small, dynamic, or nested in another loop) becomes a nest
       of `scf.for` loops: it runs on the calling thread.
    ```mlir
    scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c32, %c64, %c512) step (%c1, %c1, %c1) { body }
    // =>
    scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
      scf.for %j = %c0 to %c64 step %c1 { scf.for %k = %c0 to %c512 step %c1 { body } }
    }
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "32768",
           "fewest elements one load or store of a loop nest moves for it to run on several threads">,
    Option<"minChunks", "min-chunks", "int64_t", "16", "fewest iterations of the parallel dimensions kept">,
    Option<"dynamicSizes", "dynamic-sizes", "bool", "false",
           "a nest with dynamic bounds runs on several threads when it is large enough once its sizes are known">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def GTFuseElementwise : Pass<"gt-fuse-elementwise", "::mlir::func::FuncOp"> {
  let summary = "fuses elementwise linalg generics into their consumers (linalg-fuse-elementwise-ops), without multiplying costly math by a broadcast";
  let description = [{
    MLIR's `linalg-fuse-elementwise-ops` patterns (a generic on tensors fused into the generic
    that consumes its result, when the result has no other use; reshapes folded by expansion;
    the same canonicalizations) with one rule more, unless `recompute`: a producer whose body
    holds a math-dialect op (exp, log, erf, tanh, sqrt, ...) or a float division is not fused
    into a consumer that reads its result broadcast (the operand's indexing map is no
    permutation), since the fused body would evaluate it once per consumer iteration instead of
    once per element. Cross-entropy's `log(sum(exp(x - max))) + max` per row over C classes:
    fused, the log ran C times per row inside the gradient's loop; now the row's value is
    stored (N floats) and read. Cheap producers (adds, selects, casts) still fuse. CUDA
    workers set `recompute` (the upstream rule: a GPU has compute to spare and each unfused
    producer is a kernel launch).
  }];
  let options = [Option<"recompute", "recompute", "bool", "false",
                        "fuse costly producers into broadcasting consumers too (MLIR's rule)">];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::affine::AffineDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GTCPUByteBools : Pass<"gt-cpu-byte-bools", "::mlir::ModuleOp"> {
  let summary = "a CPU kernel's bool loads and stores as byte loads and stores, so LLVM vectorizes them";
  let description = [{
    Runs on a CPU kernel after its conversion to the LLVM dialect. A bool tensor holds one byte
    per element, 0 or 1 (NumPy's layout, and what an LLVM `store i1` writes), and each
    `memref.load` of one becomes `llvm.load ... -> i1`. LLVM's vectorizers leave such loads
    one at a time (an `i1` is 1 bit in a vector and 1 byte in memory, so `<8 x i1>` is not
    8 of them side by side): a broadcast attention mask read by a fused softmax cost as much as
    the softmax itself. Each `i1` load becomes a byte load and `!= 0`, each `i1` store a zero
    extension and a byte store, with the same attributes (alignment, alias scopes); LLVM then
    vectorizes them like any other byte. The results do not change.
    ```mlir
    %b = llvm.load %p : !llvm.ptr -> i1
    // =>
    %w = llvm.load %p : !llvm.ptr -> i8
    %b = llvm.icmp "ne" %w, %c0_i8 : i8
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def GTCPUFuseParallelLoops : Pass<"gt-cpu-fuse-parallel-loops", "::mlir::func::FuncOp"> {
  let summary = "fuses consecutive top-level loop nests over the same outer range into one scf.parallel (CPU)";
  let description = [{
    Runs on a fused CPU kernel after gt-cpu-parallel-loops, before convert-scf-to-openmp. A
    fused region's ops become one loop nest each wherever a reduction separates them (softmax:
    mask, max, exp, sum, divide), and each `scf.parallel` forks and joins the worker's threads,
    with every intermediate written whole to memory and read back. Consecutive top-level
    nests, a one-dimensional `scf.parallel` or an `scf.for` with the same constant bounds, at
    least one of them parallel, become one `scf.parallel` whose body runs the nests' bodies in
    order, when each outer iteration touches only its own slab of every buffer they write:
    every load and store of such a buffer (through reshapes that keep the first dimension)
    indexes its first dimension with the outer loop's induction variable. A buffer written by
    one `scf.parallel` of the group and touched by no other nest needs no such check. Ops
    without side effects and allocations between the nests move above the first. Nothing
    changes in what each element computes, so results stay bit for bit the same.
    ```mlir
    scf.parallel (%i) = (%c0) to (%c32) step (%c1) { ... memref.store %y, %t[%i, %j] }
    scf.for %i = %c0 to %c32 step %c1 { ... memref.store %z, %m[%i] }
    scf.parallel (%i) = (%c0) to (%c32) step (%c1) { ... memref.load %t[%i, %j] ... memref.load %m[%i] }
    // =>
    scf.parallel (%i) = (%c0) to (%c32) step (%c1) { ...t[%i, %j]...; ...m[%i]...; ...both read... }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def GTGPUDeviceMemory : Pass<"gt-gpu-device-memory", "::mlir::ModuleOp"> {
  let summary = "host-side buffers become device buffers; checks no host code touches memory";
  let description = [{
    Runs after gpu-kernel-outlining. In host functions `memref.alloc` becomes `gpu.alloc`
    and `memref.dealloc` becomes `gpu.dealloc` (on a GT worker both go to its caching
    allocator, ordered on the compute stream). Any `memref.load`, `memref.store` or
    `memref.copy` left in a host function is an error naming it: it would dereference a
    device pointer on the host.
    ```mlir
    %0 = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
    // =>
    %0 = gpu.alloc () : memref<4xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GTGPURuntimeErrors : Pass<"gt-gpu-runtime-errors", "::mlir::gpu::GPUModuleOp"> {
  let summary = "GPU kernels report failed run-time checks in a module global";
  let description = [{
    Runs after gpu-kernel-outlining, on kernels lowered with gt-lower-to-linalg's `checks`
    option. A kernel cannot call the host's `gt_runtime_error`, so each call becomes writes to
    `memref.global @gt_error : memref<5xi64>` (zero-initialized, public: the CUDA worker finds
    it with cuModuleGetGlobal): an atomic exchange of 1 into word 0, and, by the thread that
    found 0 there, the call's four arguments (op, check, value, bound) into words 1-4. The
    worker reads the global after the module's launches, raises the error as a CPU worker
    does (mlir::gt::kRuntimeErrorFunction) and clears word 0. Modules without a call are left
    as they are (outlining's copy of the declaration is removed).
    ```mlir
    func.call @gt_runtime_error(%op, %check, %value, %bound) : (i64, i64, i64, i64) -> ()
    // =>
    %g = memref.get_global @gt_error : memref<5xi64>
    %old = memref.atomic_rmw assign %c1_i64, %g[%c0] : (i64, memref<5xi64>) -> i64
    scf.if (%old == 0) { memref.store %op, %g[%c1] ... memref.store %bound, %g[%c4] }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // GT_PASSES_TD
