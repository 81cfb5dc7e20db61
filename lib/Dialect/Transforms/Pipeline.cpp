// The fusion pipeline workers run on hot regions, and the dialects GT's IR uses. (The
// dispatcher's pipeline and the pass registration live in DispatcherPipeline.cpp, so that
// workers do not link the sharding passes and their YAML dependency.)
#include "gt/Dialect/GTDialect.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::gt {

void buildFusionPipeline(OpPassManager &pm, bool scatterLoops, bool checks, bool recompute) {
  GTLowerToLinalgOptions lowering;
  lowering.scatterLoops = scatterLoops;
  lowering.checks = checks;
  pm.addPass(createGTLowerToLinalg(lowering));
  pm.addPass(createCanonicalizerPass());
  // Slices of an elementwise result computed as such (q, k and v of one projection).
  pm.addNestedPass<func::FuncOp>(createGTBubbleUpSlices());
  // Broadcasts and one-hots (GPU: any small elementwise chain) recomputed in each consumer
  // rather than stored and read back.
  GTDuplicateBroadcastsOptions duplicate;
  duplicate.recompute = recompute;
  pm.addNestedPass<func::FuncOp>(createGTDuplicateBroadcasts(duplicate));
  // Elementwise fusion; on a CPU, a costly producer read broadcast (a row's log) is stored, not
  // recomputed per consumer element.
  GTFuseElementwiseOptions fuse;
  fuse.recompute = recompute;
  pm.addNestedPass<func::FuncOp>(createGTFuseElementwise(fuse));
  // A gather of a few elements (cross-entropy's target log-probabilities) computes those
  // elements, not the whole fused tensor it reads.
  pm.addNestedPass<func::FuncOp>(createGTFoldExtracts());
  // Parts of a concat written in place, through the reshapes that merge heads.
  pm.addNestedPass<func::FuncOp>(createGTEmptyTensorsThroughReshapes());
  // Drops producers that fusion left dead. No CSE: it merges identical tensor.empty ops, and
  // a tensor.empty shared by two results lets empty-tensor elimination write both into one
  // output buffer (found by GT_JIT_VERIFY on random programs).
  pm.addPass(createCanonicalizerPass());
}

void registerGTDialects(DialectRegistry &registry) {
  registry.insert<GTDialect, func::FuncDialect, arith::ArithDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, math::MathDialect>();
}

} // namespace mlir::gt
