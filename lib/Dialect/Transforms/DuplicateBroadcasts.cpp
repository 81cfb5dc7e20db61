// gt-duplicate-broadcasts: a cheap elementwise generic that expands small inputs into a large
// result (a broadcast, a one-hot) gets one copy per consumer, so that elementwise fusion, which
// fuses single-use producers only, recomputes it inside each consumer instead of storing it.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTDUPLICATEBROADCASTS
#include "gt/Dialect/Passes.h.inc"

namespace {

int64_t elementsOf(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.hasStaticShape() ? t.getNumElements() : -1;
}

/// Whether `generic` is worth recomputing in each of its consumers: all parallel, one result of
/// static shape, a small body, and (unless `anySize`) inputs of at most half its result's
/// elements in all.
bool isCheapExpansion(linalg::GenericOp generic, int64_t maxBodyOps, bool anySize = false) {
  if (!generic.hasPureTensorSemantics() || generic.getNumResults() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops())
    return false;
  int64_t out = elementsOf(generic.getResult(0)), in = 0;
  if (out <= 0) return false;
  for (Value v : generic.getDpsInputs()) {
    if (!isa<RankedTensorType>(v.getType())) continue;
    int64_t n = elementsOf(v);
    if (n < 0) return false;
    in += n;
  }
  Block &body = generic.getRegion().front();
  int64_t ops = int64_t(body.getOperations().size()) - 1;
  return ops <= maxBodyOps && (anySize || 2 * in <= out);
}

/// Gives each fusable use of `producer`'s result its own copy; the original stays with the other
/// uses, or with the first use if all can be fused. Returns whether it cloned.
bool cloneForUses(linalg::GenericOp producer, size_t maxUses) {
  SmallVector<OpOperand *> fusable;
  bool othersRemain = false;
  for (OpOperand &use : producer.getResult(0).getUses()) {
    if (linalg::areElementwiseOpsFusable(&use))
      fusable.push_back(&use);
    else
      othersRemain = true;
  }
  ArrayRef<OpOperand *> cloned = othersRemain ? ArrayRef(fusable) : ArrayRef(fusable).drop_front();
  if (cloned.empty() || fusable.size() > maxUses) return false;
  OpBuilder b(producer);
  for (OpOperand *use : cloned) use->set(b.clone(*producer)->getResult(0));
  return true;
}

struct GTDuplicateBroadcastsPass : impl::GTDuplicateBroadcastsBase<GTDuplicateBroadcastsPass> {
  using GTDuplicateBroadcastsBase::GTDuplicateBroadcastsBase;

  void runOnOperation() override {
    if (recompute) {
      // Last to first: cloning a consumer gives its producers more uses, which are then cloned
      // too, so that each final consumer fuses the whole chain. Copies are not revisited.
      SmallVector<linalg::GenericOp> generics;
      getOperation().walk([&](linalg::GenericOp g) {
        if (isCheapExpansion(g, maxBodyOps, /*anySize=*/true)) generics.push_back(g);
      });
      for (linalg::GenericOp producer : llvm::reverse(generics))
        if (!producer.getResult(0).hasOneUse() && !producer.getResult(0).use_empty())
          cloneForUses(producer, size_t(maxUses));
      return;
    }
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp g) {
      if (isCheapExpansion(g, maxBodyOps) && !g.getResult(0).hasOneUse() && !g.getResult(0).use_empty())
        candidates.push_back(g);
    });
    // Each use fusion can take gets a copy; the original stays with the others (a reduction
    // whose loops the producer's small inputs cannot bound), or with the first use if none.
    for (linalg::GenericOp producer : candidates) cloneForUses(producer, SIZE_MAX);
  }
};

} // namespace
} // namespace mlir::gt
