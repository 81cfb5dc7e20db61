// gt-verify: lifetime checks across ops (use after gt.free, double free).
#include "gt/Dialect/GTOps.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTVERIFY
#include "gt/Dialect/Passes.h.inc"

namespace {
struct GTVerifyPass : impl::GTVerifyBase<GTVerifyPass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](func::FuncOp func) {
      llvm::DenseSet<Value> freed;
      func.walk([&](Operation *op) {
        for (Value v : op->getOperands())
          if (freed.contains(v)) {
            op->emitOpError(isa<FreeOp>(op) ? "frees a value that was already freed"
                                            : "uses a value after its gt.free");
            failed = true;
          }
        if (auto free = dyn_cast<FreeOp>(op)) freed.insert(free.getInput());
      });
    });
    if (failed) signalPassFailure();
  }
};
} // namespace
} // namespace mlir::gt
