// gt-fold-extracts: a tensor.extract from an elementwise linalg.generic computes that one
// element from the generic's inputs, so the generic need not produce its whole result.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTFOLDEXTRACTS
#include "gt/Dialect/Passes.h.inc"

namespace {

/// Whether every result of `map` is a loop dim or a constant (what positionIn handles).
bool dimsAndConstants(AffineMap map) {
  return llvm::all_of(map.getResults(), [](AffineExpr e) { return isa<AffineDimExpr, AffineConstantExpr>(e); });
}

/// The position in an operand that `map` (loop dims -> operand dims; dimsAndConstants) reads
/// at the loop position `at`.
SmallVector<Value> positionIn(OpBuilder &b, Location loc, AffineMap map, ValueRange at) {
  SmallVector<Value> out;
  for (AffineExpr e : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(e))
      out.push_back(at[dim.getPosition()]);
    else
      out.push_back(b.create<arith::ConstantIndexOp>(loc, cast<AffineConstantExpr>(e).getValue()));
  }
  return out;
}

/// tensor.extract %r[%i...] where %r is a result of an elementwise linalg.generic whose uses are
/// all extracts => the generic's body at %i..., reading its inputs with tensor.extract.
struct ExtractOfElementwise : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract, PatternRewriter &rewriter) const override {
    auto result = dyn_cast<OpResult>(extract.getTensor());
    auto generic = result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
    if (!generic || !generic.hasPureTensorSemantics() || generic.getNumLoops() != generic.getNumParallelLoops())
      return failure();
    // Only when the whole result goes away: recomputing elements that are also stored would
    // add work instead of removing it.
    for (OpOperand &use : result.getUses())
      if (!isa<tensor::ExtractOp>(use.getOwner())) return failure();
    unsigned resultNumber = result.getResultNumber();
    if (generic.getNumResults() != 1 || !generic.getIndexingMapMatchingResult(result).isIdentity()) return failure();
    Block &body = generic.getRegion().front();
    for (BlockArgument out : body.getArguments().drop_front(generic.getNumDpsInputs()))
      if (!out.use_empty()) return failure();
    for (Operation &op : body.without_terminator())
      if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op)) return failure();
    for (OpOperand *in : generic.getDpsInputOperands())
      if (isa<RankedTensorType>(in->get().getType()) && !dimsAndConstants(generic.getMatchingIndexingMap(in)))
        return failure();
    // Nothing is created before this point: a pattern that fails leaves the IR as it was.

    Location loc = extract.getLoc();
    ValueRange at = extract.getIndices();
    IRMapping map;
    for (OpOperand *in : generic.getDpsInputOperands()) {
      Value v = in->get();
      BlockArgument arg = body.getArgument(in->getOperandNumber());
      if (!isa<RankedTensorType>(v.getType())) {
        map.map(arg, v);
        continue;
      }
      SmallVector<Value> pos = positionIn(rewriter, loc, generic.getMatchingIndexingMap(in), at);
      map.map(arg, rewriter.create<tensor::ExtractOp>(loc, v, pos).getResult());
    }
    for (Operation &op : body.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(op)) {
        map.map(index.getResult(), at[index.getDim()]);
        continue;
      }
      rewriter.clone(op, map);
    }
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    rewriter.replaceOp(extract, map.lookupOrDefault(yield.getOperand(resultNumber)));
    return success();
  }
};

struct GTFoldExtractsPass : impl::GTFoldExtractsBase<GTFoldExtractsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExtractOfElementwise>(&getContext());
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

} // namespace
} // namespace mlir::gt
