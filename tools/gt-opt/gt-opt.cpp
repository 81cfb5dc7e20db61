// gt-opt: mlir-opt for GT's IR, with only the dialects and passes GT uses.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::gt::registerGTDialects(registry);
  mlir::gt::registerGTGPUDialects(registry);
  registry.insert<mlir::vector::VectorDialect>(); // gt-cpu-reductions' output, for CPU-pass tests
  mlir::gt::registerGTPassesAndPipelines();
  mlir::gt::registerGTGPUPipeline();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "GT optimizer driver\n", registry));
}
