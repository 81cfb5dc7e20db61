// gt-bubble-up-slices: each static slice of an elementwise generic's result is computed by its
// own generic over the slice, from slices of the generic's inputs, instead of the whole result
// being written and sliced. A bias added to a fused q/k/v projection and split three ways then
// fuses with each part's reshape and transpose (no [B, T, 3C] temporary, no copies).
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTBUBBLEUPSLICES
#include "gt/Dialect/Passes.h.inc"

namespace {

/// Whether each result of `map` is a loop dimension or the constant 0 (a size-1 axis).
bool dimsOrZeros(AffineMap map) {
  for (AffineExpr e : map.getResults()) {
    if (isa<AffineDimExpr>(e)) continue;
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0) return false;
  }
  return true;
}

/// Whether `generic`'s result can be computed slice by slice: all parallel, one result written
/// through the identity map, a body that reads neither its output nor the loop indices, and
/// input maps of dimensions and zeros.
bool isSliceable(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics() || generic.getNumResults() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  auto type = dyn_cast<RankedTensorType>(generic.getResult(0).getType());
  if (!type || !type.hasStaticShape() || type.getRank() == 0) return false;
  if (!generic.getMatchingIndexingMap(generic.getDpsInitOperand(0)).isIdentity()) return false;
  Block &body = generic.getRegion().front();
  if (!body.getArguments().back().use_empty()) return false;
  if (!body.getOps<linalg::IndexOp>().empty()) return false;
  for (OpOperand *input : generic.getDpsInputOperands())
    if (!dimsOrZeros(generic.getMatchingIndexingMap(input))) return false;
  return true;
}

/// A static, rank-keeping slice: its offsets, sizes and strides per axis.
bool isStaticSlice(tensor::ExtractSliceOp slice) {
  return slice.getSourceType().getRank() == slice.getResultType().getRank() &&
         !ShapedType::isDynamicShape(slice.getStaticOffsets()) && !ShapedType::isDynamicShape(slice.getStaticSizes()) &&
         !ShapedType::isDynamicShape(slice.getStaticStrides());
}

/// `slice` of `generic`'s result as a generic of its own over the slice.
Value sliceOf(OpBuilder &b, linalg::GenericOp generic, tensor::ExtractSliceOp slice) {
  Location loc = slice.getLoc();
  ArrayRef<int64_t> offsets = slice.getStaticOffsets(), sizes = slice.getStaticSizes(),
                    strides = slice.getStaticStrides();
  SmallVector<Value> inputs;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    Value v = input->get();
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() == 0) { // a scalar, or a 0-d tensor: read whole
      inputs.push_back(v);
      continue;
    }
    SmallVector<int64_t> o, s, st;
    for (AffineExpr e : generic.getMatchingIndexingMap(input).getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) {
        o.push_back(offsets[d.getPosition()]);
        s.push_back(sizes[d.getPosition()]);
        st.push_back(strides[d.getPosition()]);
      } else { // the constant 0 of a size-1 axis
        o.push_back(0);
        s.push_back(1);
        st.push_back(1);
      }
    }
    auto sliced = RankedTensorType::get(s, type.getElementType());
    inputs.push_back(b.create<tensor::ExtractSliceOp>(loc, sliced, v, ValueRange{}, ValueRange{}, ValueRange{},
                                                      b.getDenseI64ArrayAttr(o), b.getDenseI64ArrayAttr(s),
                                                      b.getDenseI64ArrayAttr(st)));
  }
  RankedTensorType resultType = slice.getResultType();
  Value init = b.create<tensor::EmptyOp>(loc, resultType.getShape(), resultType.getElementType());
  auto sliced = b.create<linalg::GenericOp>(loc, TypeRange{resultType}, inputs, ValueRange{init},
                                            generic.getIndexingMapsArray(), generic.getIteratorTypesArray());
  IRMapping mapping;
  generic.getRegion().cloneInto(&sliced.getRegion(), mapping);
  return sliced.getResult(0);
}

struct GTBubbleUpSlicesPass : impl::GTBubbleUpSlicesBase<GTBubbleUpSlicesPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp g) {
      if (g.getResult(0).use_empty() || !isSliceable(g)) return;
      // Every use a static slice, and the slices together no larger than the result (no
      // element computed more often than before, when they do not overlap).
      int64_t whole = cast<RankedTensorType>(g.getResult(0).getType()).getNumElements(), total = 0;
      for (Operation *user : g.getResult(0).getUsers()) {
        auto slice = dyn_cast<tensor::ExtractSliceOp>(user);
        if (!slice || !isStaticSlice(slice)) return;
        int64_t elements = slice.getResultType().getNumElements();
        if (elements > whole - total) return; // (compared so, the sum cannot overflow)
        total += elements;
      }
      candidates.push_back(g);
    });
    for (linalg::GenericOp generic : candidates) {
      for (Operation *user : llvm::make_early_inc_range(generic.getResult(0).getUsers())) {
        auto slice = cast<tensor::ExtractSliceOp>(user);
        OpBuilder b(slice);
        slice.getResult().replaceAllUsesWith(sliceOf(b, generic, slice));
        slice.erase();
      }
      generic.erase();
    }
  }
};

} // namespace
} // namespace mlir::gt
