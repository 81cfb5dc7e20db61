// gt-reshapes-as-views: a tensor.reshape that only splits or merges neighbouring axes becomes
// tensor.expand_shape / tensor.collapse_shape before bufferization.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Matchers.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTRESHAPESASVIEWS
#include "gt/Dialect/Passes.h.inc"

namespace {
struct GTReshapesAsViewsPass : impl::GTReshapesAsViewsBase<GTReshapesAsViewsPass> {
  void runOnOperation() override {
    SmallVector<tensor::ReshapeOp> reshapes;
    getOperation().walk([&](tensor::ReshapeOp r) { reshapes.push_back(r); });
    for (tensor::ReshapeOp reshape : reshapes) {
      auto from = cast<RankedTensorType>(reshape.getSource().getType());
      auto to = cast<RankedTensorType>(reshape.getResult().getType());
      if (!from.hasStaticShape() || !to.hasStaticShape() || from.getRank() == to.getRank()) continue;
      // A 0-d tensor expands into all-unit axes (and they collapse into it) with no groups.
      std::optional<SmallVector<ReassociationIndices>> groups;
      if (from.getRank() == 0 || to.getRank() == 0) {
        if (from.getNumElements() == 1 && to.getNumElements() == 1) groups.emplace();
      } else {
        groups = getReassociationIndicesForReshape(from, to);
      }
      if (!groups) continue;
      OpBuilder b(reshape);
      Value view;
      if (from.getRank() > to.getRank())
        view = b.create<tensor::CollapseShapeOp>(reshape.getLoc(), to, reshape.getSource(), *groups);
      else
        view = b.create<tensor::ExpandShapeOp>(reshape.getLoc(), to, reshape.getSource(), *groups);
      reshape.replaceAllUsesWith(view);
      reshape.erase();
    }
  }
};
} // namespace
} // namespace mlir::gt
