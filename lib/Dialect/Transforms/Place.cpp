// gt-place: every op runs where its operands live, otherwise on the session's home worker.
#include "gt/Dialect/GTOps.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTPLACE
#include "gt/Dialect/Passes.h.inc"

namespace {
constexpr const char *kWorker = "gt.worker";

/// The worker a value lives on, if it is already known.
std::optional<int64_t> workerOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func) return std::nullopt;
    if (auto w = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), kWorker)) return w.getInt();
    return std::nullopt;
  }
  if (auto w = v.getDefiningOp()->getAttrOfType<IntegerAttr>(kWorker)) return w.getInt();
  return std::nullopt;
}

struct GTPlacePass : impl::GTPlaceBase<GTPlacePass> {
  using GTPlaceBase::GTPlaceBase;
  void runOnOperation() override {
    Builder b(&getContext());
    getOperation().walk([&](Operation *op) {
      if (!isa<GTDialect>(op->getDialect()) || op->hasAttr(kWorker)) return;
      int64_t worker = defaultWorker;
      for (Value v : op->getOperands())
        if (auto w = workerOf(v)) { worker = *w; break; }
      op->setAttr(kWorker, b.getI64IntegerAttr(worker));
    });
  }
};
} // namespace
} // namespace mlir::gt
