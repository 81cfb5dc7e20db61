// The dispatcher's pass pipeline, written once; gt-opt and the dispatcher both call it.
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

void buildDispatcherPipeline(OpPassManager &pm, const DispatcherPipelineOptions &options) {
  // 1. Lifetimes: no use after free (op verifiers already ran on the built module).
  pm.addPass(createGTVerify());
  // 2. Placement: each op gets the worker it runs on (sharding passes will come before this).
  pm.addPass(createGTPlace(GTPlaceOptions{options.defaultWorker}));
  // 3. Fusion: runs of fusible ops become gt.region, repeated ones hot (workers compile those).
  if (options.regions) {
    GTMarkHotRegionsOptions regions;
    regions.hotAfter = options.hotAfter;
    if (options.counter) pm.addPass(createGTMarkHotRegions(regions, options.counter));
    else pm.addPass(createGTMarkHotRegions(regions));
  }
}

void buildFusionPipeline(OpPassManager &pm) {
  pm.addPass(createGTLowerToLinalg());
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createLinalgElementwiseOpFusionPass());
  // Drops producers that fusion left dead. No CSE: it merges identical tensor.empty ops, and
  // a tensor.empty shared by two results lets empty-tensor elimination write both into one
  // output buffer (found by GT_JIT_VERIFY on random programs).
  pm.addPass(createCanonicalizerPass());
}

void registerGTPassesAndPipelines() {
  registerGTPasses();
  PassPipelineRegistration<>("gt-dispatcher-pipeline",
                             "the dispatcher's pipeline: gt-verify, gt-place, gt-mark-hot-regions",
                             [](OpPassManager &pm) { buildDispatcherPipeline(pm, {}); });
  PassPipelineRegistration<>("gt-fuse-pipeline",
                             "gt -> linalg with elementwise fusion (what workers do to a hot region)",
                             [](OpPassManager &pm) { buildFusionPipeline(pm); });
}

void registerGTDialects(DialectRegistry &registry) {
  registry.insert<GTDialect, func::FuncDialect, arith::ArithDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, math::MathDialect>();
}

} // namespace mlir::gt
