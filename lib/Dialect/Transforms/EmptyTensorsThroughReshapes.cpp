// gt-empty-tensors-through-reshapes: a generic whose result is reshaped and then inserted into
// a larger tensor (a concat of reshaped parts: the q/k/v gradients transposed back, merged from
// heads and concatenated) writes into its place in that tensor, instead of into a temporary
// that the insert copies. Upstream's empty-tensor elimination does this when nothing sits
// between the generic and the insert; MLIR 19's stops at a reshape.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTEMPTYTENSORSTHROUGHRESHAPES
#include "gt/Dialect/Passes.h.inc"

namespace {

/// The generic behind `insert`'s source through one expand_shape or collapse_shape, if it
/// writes a tensor.empty it does not read, has one result and is used only there.
linalg::GenericOp reshapedGeneric(tensor::InsertSliceOp insert, Operation *&reshape) {
  reshape = insert.getSource().getDefiningOp();
  if (!reshape || !isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(reshape) || !reshape->hasOneUse()) return {};
  auto generic = reshape->getOperand(0).getDefiningOp<linalg::GenericOp>();
  if (!generic || !generic.hasPureTensorSemantics() || generic.getNumResults() != 1 ||
      !generic.getResult(0).hasOneUse())
    return {};
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() || generic.payloadUsesValueFromOperand(init)) return {};
  return generic;
}

struct GTEmptyTensorsThroughReshapesPass : impl::GTEmptyTensorsThroughReshapesBase<GTEmptyTensorsThroughReshapesPass> {
  void runOnOperation() override {
    SmallVector<tensor::InsertSliceOp> inserts;
    getOperation().walk([&](tensor::InsertSliceOp insert) {
      if (insert.getSourceType().getRank() == insert.getDestType().getRank() && insert.getSourceType().hasStaticShape())
        inserts.push_back(insert);
    });
    for (tensor::InsertSliceOp insert : inserts) {
      Operation *reshape = nullptr;
      linalg::GenericOp generic = reshapedGeneric(insert, reshape);
      if (!generic) continue;
      // The generic now writes a view of its place in the destination: the slice, reshaped
      // back to the generic's shape. (The insert then writes the slice onto itself, which
      // bufferization recognizes and drops.)
      // Both move to just before the insert, where its destination is defined (the previous
      // part's insert); they are pure and used only there.
      generic->moveBefore(insert);
      reshape->moveBefore(insert);
      OpBuilder b(generic);
      Value place = b.create<tensor::ExtractSliceOp>(insert.getLoc(), insert.getSourceType(), insert.getDest(),
                                                    insert.getMixedOffsets(), insert.getMixedSizes(),
                                                    insert.getMixedStrides());
      auto genericType = cast<RankedTensorType>(generic.getResult(0).getType());
      if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape))
        place = b.create<tensor::ExpandShapeOp>(insert.getLoc(), genericType, place, collapse.getReassociationIndices());
      else
        place = b.create<tensor::CollapseShapeOp>(insert.getLoc(), genericType, place,
                                                  cast<tensor::ExpandShapeOp>(reshape).getReassociationIndices());
      generic.getDpsInitOperand(0)->set(place);
    }
  }
};

} // namespace
} // namespace mlir::gt
