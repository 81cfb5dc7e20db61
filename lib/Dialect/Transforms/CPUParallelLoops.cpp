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
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// The elements one execution of `access` moves: a vector load's or store's lanes, 1 for a
/// memref load or store, 0 for any other op.
int64_t lanesOf(Operation *access) {
  if (auto load = dyn_cast<vector::LoadOp>(access)) return load.getVectorType().getNumElements();
  if (auto store = dyn_cast<vector::StoreOp>(access)) return store.getVectorType().getNumElements();
  return isa<memref::LoadOp, memref::StoreOp>(access) ? 1 : 0;
}

/// Elements the nest under `top` reads or writes: the most elements any one load or store
/// moves over all its executions (the product of its enclosing loops' trip counts, times the
/// lanes of a vector load or store); nullopt if a bound is dynamic. Loads count too: a row
/// reduction in gt-cpu-reductions' form reads a row in its inner loop and stores once per row.
std::optional<int64_t> elementsTouched(Operation *top) {
  std::optional<int64_t> most = 0;
  top->walk([&](Operation *access) {
    if (!most) return;
    int64_t n = lanesOf(access);
    if (n == 0) return;
    for (Operation *op = access->getParentOp(); op; op = op->getParentOp()) {
      auto t = iterations(op);
      if (!t) {
        most = std::nullopt;
        return;
      }
      n *= *t;
      if (op == top) break;
    }
    most = std::max(*most, n);
  });
  return most;
}

/// Whether `v` is defined outside `top` (so it may be used before it).
bool definedAbove(Value v, Operation *top) {
  Operation *owner = v.getParentRegion()->getParentOp();
  return !top->isAncestor(owner);
}

/// The trip count of dimension (lb, ub, step) as an index value built at `b`'s insertion point
/// (before `top`), or null if a bound is defined inside `top`.
Value tripCountValue(OpBuilder &b, Location loc, Operation *top, Value lb, Value ub, Value step) {
  if (!definedAbove(lb, top) || !definedAbove(ub, top) || !definedAbove(step, top)) return nullptr;
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value span = b.create<arith::SubIOp>(loc, ub, lb);
  Value up = b.create<arith::AddIOp>(loc, span, b.create<arith::SubIOp>(loc, step, one));
  Value n = b.create<arith::DivSIOp>(loc, up, step);
  return b.create<arith::MaxSIOp>(loc, n, b.create<arith::ConstantIndexOp>(loc, 0));
}

/// elementsTouched for a nest with dynamic bounds: the same count as an index value computed
/// before `top`, or null when a bound is defined inside the nest.
Value elementsTouchedValue(OpBuilder &b, scf::ParallelOp top) {
  Location loc = top.getLoc();
  Value most;
  bool ok = true;
  top.walk([&](Operation *access) {
    if (!ok) return;
    int64_t lanes = lanesOf(access);
    if (lanes == 0) return;
    Value n = b.create<arith::ConstantIndexOp>(loc, lanes);
    for (Operation *op = access->getParentOp(); op; op = op->getParentOp()) {
      SmallVector<std::tuple<Value, Value, Value>> dims;
      if (auto loop = dyn_cast<scf::ParallelOp>(op))
        for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep()))
          dims.push_back({lb, ub, step});
      else if (auto loop = dyn_cast<scf::ForOp>(op))
        dims.push_back({loop.getLowerBound(), loop.getUpperBound(), loop.getStep()});
      for (auto [lb, ub, step] : dims) {
        Value t = tripCountValue(b, loc, top, lb, ub, step);
        if (!t) {
          ok = false;
          return;
        }
        n = b.create<arith::MulIOp>(loc, n, t);
      }
      if (op == top.getOperation()) break;
    }
    most = most ? b.create<arith::MaxSIOp>(loc, most, n).getResult() : n;
  });
  return ok ? most : nullptr;
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

/// A reduction over the outer dimensions of its input that keeps the inner ones (a bias
/// gradient's sum over the batch, LayerNorm's weight gradient), as
/// convert-linalg-to-parallel-loops makes it: `scf.for` loops over the reduced dimensions, each
/// holding only the next, around one `scf.parallel` over the kept ones.
struct ColumnReduction {
  SmallVector<scf::ForOp> reduced; ///< outermost first
  scf::ParallelOp kept;
};

/// `top` as a ColumnReduction whose kept iterations can run outermost: every bound static and
/// defined above `top`; the kept loop's body writes memory only by `memref.store`s into buffers
/// defined above `top`, at indices that are the kept loop's induction variables or values
/// defined above `top` (never a reduced one), and reads a buffer it writes only at the indices
/// it writes it at (the accumulator). Then each kept iteration touches only its own elements,
/// whatever the reduced iteration, so running each kept iteration's reduced loops on their
/// own keeps every element's order of accumulation.
std::optional<ColumnReduction> matchColumnReduction(scf::ForOp top) {
  ColumnReduction r;
  Operation *op = top;
  while (auto loop = dyn_cast<scf::ForOp>(op)) {
    if (loop.getNumRegionIterArgs() != 0 || !iterations(loop)) return std::nullopt;
    if (!definedAbove(loop.getLowerBound(), top) || !definedAbove(loop.getUpperBound(), top) ||
        !definedAbove(loop.getStep(), top))
      return std::nullopt;
    r.reduced.push_back(loop);
    Block *body = loop.getBody();
    if (!llvm::hasSingleElement(body->without_terminator())) return std::nullopt;
    op = &body->front();
  }
  r.kept = dyn_cast<scf::ParallelOp>(op);
  if (!r.kept || r.kept.getNumResults() != 0 || !iterations(r.kept)) return std::nullopt;
  for (ValueRange bounds : {r.kept.getLowerBound(), r.kept.getUpperBound(), r.kept.getStep()})
    for (Value v : bounds)
      if (!definedAbove(v, top)) return std::nullopt;
  llvm::SmallPtrSet<Value, 4> ivs;
  for (Value iv : r.kept.getInductionVars()) ivs.insert(iv);
  auto fixedIndex = [&](Value v) { return ivs.contains(v) || definedAbove(v, top); };
  DenseMap<Value, ValueRange> written; // buffer -> the indices every store uses
  SmallVector<memref::LoadOp> loads;
  bool ok = true;
  r.kept.getBody()->walk([&](Operation *o) {
    if (auto store = dyn_cast<memref::StoreOp>(o)) {
      Value buffer = store.getMemRef();
      ValueRange indices = store.getIndices();
      if (!definedAbove(buffer, top) || !llvm::all_of(indices, fixedIndex)) ok = false;
      auto [it, fresh] = written.try_emplace(buffer, indices);
      if (!fresh && !llvm::equal(it->second, indices)) ok = false;
      return;
    }
    if (auto load = dyn_cast<memref::LoadOp>(o)) {
      loads.push_back(load);
      return;
    }
    if (o->hasTrait<OpTrait::HasRecursiveMemoryEffects>()) return; // its ops are walked too
    auto effects = dyn_cast<MemoryEffectOpInterface>(o);
    if (!effects || !effects.hasNoEffect()) ok = false; // a call, a vector store, an allocation
  });
  for (memref::LoadOp load : loads) {
    auto it = written.find(load.getMemRef());
    if (it != written.end() && !llvm::equal(it->second, load.getIndices())) ok = false;
  }
  if (!ok || written.empty()) return std::nullopt;
  return r;
}

/// Rewrites a large ColumnReduction so that its kept dimensions run outermost and in parallel,
/// the innermost one split into blocks of at least kMinBlock iterations (a multiple of 16, a
/// 512-bit vector of f32) so that its loop stays long enough to vectorize:
/// ```
/// scf.for %i = 0 to 2048 { scf.parallel (%j) = (0) to (512) step (1) { body } }
/// // =>
/// scf.parallel (%b) = (0) to (512) step (64) {
///   scf.for %i = 0 to 2048 { scf.for %j = %b to min(%b + 64, 512) step 1 { body } }
/// }
/// ```
/// The outer kept dimensions and the blocks together give at least `minChunks` iterations
/// where the innermost dimension is long enough. Returns the new loop, or null when there are
/// fewer than two kept iterations to share.
scf::ParallelOp keptDimensionsOutermost(IRRewriter &rewriter, ColumnReduction &r, int64_t minChunks) {
  constexpr int64_t kMinBlock = 64, kLanes = 16;
  scf::ParallelOp kept = r.kept;
  unsigned n = kept.getNumLoops();
  int64_t outer = 1;
  for (unsigned d = 0; d + 1 < n; ++d)
    outer *= *tripCount(kept.getLowerBound()[d], kept.getUpperBound()[d], kept.getStep()[d]);
  Value lb = kept.getLowerBound()[n - 1], ub = kept.getUpperBound()[n - 1], step = kept.getStep()[n - 1];
  int64_t inner = *tripCount(lb, ub, step);
  int64_t blocks = std::max<int64_t>(1, std::min((minChunks + outer - 1) / outer, inner / kMinBlock));
  int64_t block = (inner + blocks - 1) / blocks;
  block = (block + kLanes - 1) / kLanes * kLanes;
  blocks = (inner + block - 1) / block;
  if (outer * blocks < 2) return nullptr;

  scf::ForOp top = r.reduced.front();
  Location loc = kept.getLoc();
  rewriter.setInsertionPoint(top);
  SmallVector<Value> lbs(kept.getLowerBound()), ubs(kept.getUpperBound()), steps(kept.getStep());
  Value blockStep = rewriter.create<arith::ConstantIndexOp>(loc, *getConstantIntValue(step) * block);
  steps.back() = blockStep;
  auto parallel = rewriter.create<scf::ParallelOp>(loc, lbs, ubs, steps);
  rewriter.setInsertionPoint(parallel.getBody()->getTerminator());
  Value first = parallel.getInductionVars().back();
  Value end = rewriter.create<arith::MinSIOp>(loc, rewriter.create<arith::AddIOp>(loc, first, blockStep), ub);
  SmallVector<Value> ivs;
  for (scf::ForOp loop : r.reduced) {
    auto copy = rewriter.create<scf::ForOp>(loc, loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    rewriter.replaceAllUsesWith(loop.getInductionVar(), copy.getInductionVar());
    rewriter.setInsertionPoint(copy.getBody()->getTerminator());
  }
  auto columns = rewriter.create<scf::ForOp>(loc, first, end, step);
  for (Value iv : ValueRange(parallel.getInductionVars()).drop_back()) ivs.push_back(iv);
  ivs.push_back(columns.getInductionVar());
  Operation *before = columns.getBody()->getTerminator();
  rewriter.eraseOp(kept.getBody()->getTerminator()); // scf.reduce without operands
  rewriter.inlineBlockBefore(kept.getBody(), before, ivs);
  rewriter.eraseOp(top); // the old nest, now holding only an empty scf.parallel
  return parallel;
}

/// Whether a nest reports run-time errors (a call to gt_runtime_error under an scf.if): it stays
/// on one thread, since convert-scf-to-openmp would wrap its body in a memref.alloca_scope that
/// the canonicalizer cannot inline around a call, and whose region must stay one block.
bool reportsErrors(scf::ParallelOp loop) {
  return loop.walk([](func::CallOp) { return WalkResult::interrupt(); }).wasInterrupted();
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
    SmallVector<scf::ParallelOp> dynamic; // large or not: known only when the kernel runs
    for (Block &block : func.getBody())
      for (auto loop : block.getOps<scf::ParallelOp>()) {
        if (loop.getNumResults() != 0) continue; // a reduction loop: not what linalg makes
        if (reportsErrors(loop)) continue;        // (one_hot's check of 65536 labels)
        auto work = elementsTouched(loop);
        if (!work) {
          if (dynamicSizes) dynamic.push_back(loop);
          continue;
        }
        if (*work < minWork) continue;
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
    // A large column reduction (scf.for loops around one scf.parallel) runs its kept
    // dimensions outermost, on the worker's threads.
    SmallVector<ColumnReduction> columns;
    for (Block &block : func.getBody())
      for (auto loop : block.getOps<scf::ForOp>())
        if (auto r = matchColumnReduction(loop)) {
          auto work = elementsTouched(loop);
          if (work && *work >= minWork) columns.push_back(*r);
        }
    for (ColumnReduction &r : columns)
      if (scf::ParallelOp parallel = keptDimensionsOutermost(rewriter, r, minChunks)) {
        kept.push_back({parallel, parallel.getNumLoops()});
        keptOps.insert(parallel);
      }
    // A nest with dynamic bounds (an eager kernel's, which takes its sizes at run time) becomes
    // `scf.if (elements touched >= min-work) { the nest, parallel over all its dimensions but
    // the innermost (or its only one) } else { the nest, sequential }`.
    for (scf::ParallelOp loop : dynamic) {
      if (reportsErrors(loop)) continue;
      rewriter.setInsertionPoint(loop);
      Value work = elementsTouchedValue(rewriter, loop);
      if (!work) continue;
      Location loc = loop.getLoc();
      Value large = rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, work,
                                                   rewriter.create<arith::ConstantIndexOp>(loc, minWork));
      auto branch = rewriter.create<scf::IfOp>(loc, large, /*withElseRegion=*/true);
      rewriter.setInsertionPoint(branch.thenBlock()->getTerminator());
      auto parallel = cast<scf::ParallelOp>(rewriter.clone(*loop));
      rewriter.moveOpBefore(loop, branch.elseBlock()->getTerminator());
      unsigned n = parallel.getNumLoops();
      kept.push_back({parallel, n == 1 ? 1u : n - 1});
      keptOps.insert(parallel);
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
