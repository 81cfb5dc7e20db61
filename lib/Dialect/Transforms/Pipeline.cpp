// The dispatcher's pass pipeline, written once; gt-opt and the dispatcher both call it.
#include "gt/Dialect/GTDialect.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassRegistry.h"

namespace mlir::gt {

void buildDispatcherPipeline(OpPassManager &pm, const DispatcherPipelineOptions &options) {
  // 1. Lifetimes: no use after free (op verifiers already ran on the built module).
  pm.addPass(createGTVerify());
  // 2. Placement: each op gets the worker it runs on (sharding passes will come before this).
  pm.addPass(createGTPlace(GTPlaceOptions{options.defaultWorker}));
}

void registerGTPassesAndPipelines() {
  registerGTPasses();
  PassPipelineRegistration<>("gt-dispatcher-pipeline",
                             "the dispatcher's pipeline: gt-verify, gt-place",
                             [](OpPassManager &pm) { buildDispatcherPipeline(pm, {}); });
}

void registerGTDialects(DialectRegistry &registry) {
  registry.insert<GTDialect, func::FuncDialect, arith::ArithDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, math::MathDialect>();
}

} // namespace mlir::gt
