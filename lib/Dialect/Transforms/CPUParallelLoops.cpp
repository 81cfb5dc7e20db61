// gt-cpu-parallel-loops: the scf.parallel loops a CPU kernel keeps for OpenMP (large top-level
// nests, over their outer dimensions); every other scf.parallel becomes scf.for loops.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <optional>

namespace mlir::gt {
#define GEN_PASS_DEF_GTCPUPARALLELLOOPS
#include "gt/Dialect/Passes.h.inc"

namespace {
/// Iterations of one dimension with static bounds, else nullopt.
std::optional<int64_t> tripCount(Value lb, Value ub, Value step) {
  auto l = getConstantIntValue(lb), u = getConstantIntValue(ub), s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0) return std::nullopt;
  return std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
}

/// Iterations of `op` if it is a loop (all dimensions), 1 if it is not, nullopt if dynamic.
std::optional<int64_t> iterations(Operation *op) {
  if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    int64_t n = 1;
    for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto t = tripCount(lb, ub, step);
      if (!t) return std::nullopt;
      n *= *t;
    }
    return n;
  }
  if (auto loop = dyn_cast<scf::ForOp>(op)) return tripCount(loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
  return 1;
}

/// Elements the nest under `top` reads or writes: the most elements any one load or store
/// moves over all its executions (the product of its enclosing loops' trip counts, times the
/// lanes of a vector load or store); nullopt if a bound is dynamic. Loads count too: a row
/// reduction in gt-cpu-reductions' form reads a row in its inner loop and stores once per row.
std::optional<int64_t> elementsTouched(scf::ParallelOp top) {
  std::optional<int64_t> most = 0;
  top.walk([&](Operation *access) {
    if (!most) return;
    int64_t n = 1;
    if (auto load = dyn_cast<vector::LoadOp>(access))
      n = load.getVectorType().getNumElements();
    else if (auto store = dyn_cast<vector::StoreOp>(access))
      n = store.getVectorType().getNumElements();
    else if (!isa<memref::LoadOp, memref::StoreOp>(access))
      return;
    for (Operation *op = access->getParentOp(); op; op = op->getParentOp()) {
      auto t = iterations(op);
      if (!t) {
        most = std::nullopt;
        return;
      }
      n *= *t;
      if (op == top.getOperation()) break;
    }
    most = std::max(*most, n);
  });
  return most;
}

/// Replaces dimensions [keep, n) of `loop` by scf.for loops inside it, or the whole loop by a
/// nest of scf.for loops when keep is 0.
void sequentialize(IRRewriter &rewriter, scf::ParallelOp loop, unsigned keep) {
  Location loc = loop.getLoc();
  auto lbs = loop.getLowerBound(), ubs = loop.getUpperBound(), steps = loop.getStep();
  unsigned n = loop.getNumLoops();
  rewriter.setInsertionPoint(loop);
  SmallVector<Value> ivs;
  if (keep > 0) {
    auto kept = rewriter.create<scf::ParallelOp>(loc, lbs.take_front(keep), ubs.take_front(keep), steps.take_front(keep));
    for (Value iv : kept.getInductionVars()) ivs.push_back(iv);
    rewriter.setInsertionPoint(kept.getBody()->getTerminator());
  }
  for (unsigned d = keep; d < n; ++d) {
    auto inner = rewriter.create<scf::ForOp>(loc, lbs[d], ubs[d], steps[d]);
    ivs.push_back(inner.getInductionVar());
    rewriter.setInsertionPoint(inner.getBody()->getTerminator());
  }
  Operation *before = &*rewriter.getInsertionPoint();
  rewriter.eraseOp(loop.getBody()->getTerminator()); // scf.reduce without operands
  rewriter.inlineBlockBefore(loop.getBody(), before, ivs);
  rewriter.eraseOp(loop);
}

struct GTCPUParallelLoopsPass : impl::GTCPUParallelLoopsBase<GTCPUParallelLoopsPass> {
  using GTCPUParallelLoopsBase::GTCPUParallelLoopsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal()) return;
    IRRewriter rewriter(&getContext());
    // Which top-level loops stay parallel, and over how many leading dimensions.
    SmallVector<std::pair<scf::ParallelOp, unsigned>> kept;
    llvm::SmallPtrSet<Operation *, 8> keptOps;
    for (Block &block : func.getBody())
      for (auto loop : block.getOps<scf::ParallelOp>()) {
        if (loop.getNumResults() != 0) continue; // a reduction loop: not what linalg makes
        auto work = elementsTouched(loop);
        if (!work || *work < minWork) continue;
        // Leading dimensions until there are minChunks iterations; the innermost one stays
        // sequential unless it is the only one.
        unsigned n = loop.getNumLoops(), most = n == 1 ? 1 : n - 1, keep = 0;
        int64_t chunks = 1;
        for (; keep < most && chunks < minChunks; ++keep)
          chunks *= *tripCount(loop.getLowerBound()[keep], loop.getUpperBound()[keep], loop.getStep()[keep]);
        if (chunks < 2) continue;
        kept.push_back({loop, keep});
        keptOps.insert(loop);
      }
    // Every other scf.parallel runs sequentially (innermost first, so nests unwind cleanly).
    SmallVector<scf::ParallelOp> others;
    func.walk<WalkOrder::PostOrder>([&](scf::ParallelOp loop) {
      if (!keptOps.contains(loop) && loop.getNumResults() == 0) others.push_back(loop);
    });
    for (scf::ParallelOp loop : others) sequentialize(rewriter, loop, 0);
    for (auto [loop, keep] : kept)
      if (keep < loop.getNumLoops()) sequentialize(rewriter, loop, keep);
  }
};
} // namespace
} // namespace mlir::gt
