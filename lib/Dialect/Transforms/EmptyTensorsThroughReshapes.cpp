// gt-empty-tensors-through-reshapes: a generic whose result is reshaped and then inserted into
// a larger tensor (a concat of reshaped parts: the q/k/v gradients transposed back, merged from
// heads and concatenated) or written to a kernel's output (a convolution's im2col columns, a
// transpose merged back from heads) writes into its place there, instead of into a temporary
// that the insert or the output copies. Upstream's empty-tensor elimination does this when
// nothing sits between the generic and the insert or output; MLIR 19's stops at a reshape.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
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

/// The generic behind `value` through one or more expand_shape / collapse_shape ops, each used
/// only by the next, if it writes a tensor.empty it does not read and has one result used only
/// there. `reshapes` gets the reshapes, outermost (nearest `value`) first.
linalg::GenericOp reshapedGeneric(Value value, SmallVectorImpl<Operation *> &reshapes) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def) || !def->hasOneUse()) return {};
    reshapes.push_back(def);
    value = def->getOperand(0);
    auto generic = value.getDefiningOp<linalg::GenericOp>();
    if (!generic) continue;
    if (!generic.hasPureTensorSemantics() || generic.getNumResults() != 1 || !generic.getResult(0).hasOneUse())
      return {};
    OpOperand *init = generic.getDpsInitOperand(0);
    if (!init->get().getDefiningOp<tensor::EmptyOp>() || generic.payloadUsesValueFromOperand(init)) return {};
    return generic;
  }
  return {};
}

/// `materialize_in_destination %reshaped in restrict writable %out` (a kernel's output
/// argument): the generic writes a view of %out, reshaped back to its shape, instead of a
/// temporary that the materialization copies. The `restrict` moves to the new to_tensor of
/// %out (as upstream's empty-tensor elimination does for a generic that writes %out directly),
/// and bufferization drops the copy of %out onto itself.
void writeInPlace(bufferization::MaterializeInDestinationOp mat) {
  auto dest = dyn_cast<BlockArgument>(mat.getDest());
  if (!dest || !isa<MemRefType>(dest.getType()) || !mat.getRestrict() || !mat.getWritable()) return;
  SmallVector<Operation *> reshapes;
  linalg::GenericOp generic = reshapedGeneric(mat.getSource(), reshapes);
  if (!generic || generic->getBlock() != mat->getBlock()) return; // (one to_tensor, not one per loop trip)
  OpBuilder b(generic);
  Location loc = mat.getLoc();
  Value place = b.create<bufferization::ToTensorOp>(loc, mat.getSource().getType(), dest, /*restrict=*/true,
                                                    /*writable=*/true);
  for (Operation *reshape : reshapes) { // each undone, from the destination's shape back to the generic's
    auto from = cast<RankedTensorType>(reshape->getOperand(0).getType());
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape))
      place = b.create<tensor::ExpandShapeOp>(loc, from, place, collapse.getReassociationIndices());
    else
      place = b.create<tensor::CollapseShapeOp>(loc, from, place,
                                                cast<tensor::ExpandShapeOp>(reshape).getReassociationIndices());
  }
  generic.getDpsInitOperand(0)->set(place);
  mat.setRestrict(false);
}

struct GTEmptyTensorsThroughReshapesPass : impl::GTEmptyTensorsThroughReshapesBase<GTEmptyTensorsThroughReshapesPass> {
  void runOnOperation() override {
    SmallVector<bufferization::MaterializeInDestinationOp> outputs;
    getOperation().walk([&](bufferization::MaterializeInDestinationOp mat) { outputs.push_back(mat); });
    for (bufferization::MaterializeInDestinationOp mat : outputs) writeInPlace(mat);
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
