// gt-cpu-fuse-parallel-loops: consecutive top-level loop nests of a CPU kernel over the same
// outer range become one scf.parallel, when each outer iteration reads and writes only its own
// slab of every buffer the nests share. Softmax's five nests (mask, max, exp, sum, divide) then
// run row block by row block: a block's intermediates stay in the core's cache, and the threads
// fork and join once instead of five times.
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
#define GEN_PASS_DEF_GTCPUFUSEPARALLELLOOPS
#include "gt/Dialect/Passes.h.inc"

namespace {

/// A top-level loop nest: a one-dimensional scf.parallel (what gt-cpu-parallel-loops keeps) or
/// an scf.for (a nest it made sequential), with constant bounds.
struct Nest {
  Operation *op;
  Value iv;
  bool parallel;
  int64_t lb, ub, step;
  Block *body() const { return &op->getRegion(0).front(); }
};

std::optional<Nest> nestOf(Operation *op) {
  Value iv, lb, ub, step;
  bool parallel = false;
  if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
    if (loop.getNumLoops() != 1 || loop.getNumResults()) return std::nullopt;
    iv = loop.getInductionVars()[0];
    lb = loop.getLowerBound()[0], ub = loop.getUpperBound()[0], step = loop.getStep()[0];
    parallel = true;
  } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
    if (loop.getNumResults()) return std::nullopt;
    iv = loop.getInductionVar();
    lb = loop.getLowerBound(), ub = loop.getUpperBound(), step = loop.getStep();
  } else {
    return std::nullopt;
  }
  auto l = getConstantIntValue(lb), u = getConstantIntValue(ub), s = getConstantIntValue(step);
  if (!l || !u || !s) return std::nullopt;
  return Nest{op, iv, parallel, *l, *u, *s};
}

/// The buffer `v` views, and whether index i of `v`'s first dimension is index i of the
/// buffer's first dimension (the same slab): true through reshapes that keep the first
/// dimension, false through anything else that makes a view.
std::pair<Value, bool> rootOf(Value v) {
  bool sameSlabs = true;
  while (Operation *def = v.getDefiningOp()) {
    auto keepsFirst = [](Type fromType, Type toType) {
      auto from = dyn_cast<MemRefType>(fromType), to = dyn_cast<MemRefType>(toType);
      return from && to && from.getRank() > 0 && to.getRank() > 0 && from.getLayout().isIdentity() && to.getLayout().isIdentity() &&
             !from.isDynamicDim(0) && from.getDimSize(0) == to.getDimSize(0);
    };
    if (auto r = dyn_cast<memref::ReshapeOp>(def)) {
      sameSlabs &= keepsFirst(r.getSource().getType(), r.getResult().getType());
      v = r.getSource();
    } else if (auto c = dyn_cast<memref::CollapseShapeOp>(def)) {
      sameSlabs &= c.getReassociationIndices().front().size() == 1;
      v = c.getSrc();
    } else if (auto e = dyn_cast<memref::ExpandShapeOp>(def)) {
      sameSlabs &= e.getReassociationIndices().front().size() == 1;
      v = e.getSrc();
    } else if (isa<ViewLikeOpInterface>(def)) {
      sameSlabs = false;
      v = cast<ViewLikeOpInterface>(def).getViewSource();
    } else {
      break;
    }
  }
  return {v, sameSlabs};
}

/// How the nests of a group touch one buffer.
struct Use {
  bool written = false;
  bool everyAccessInSlab = true; ///< every access indexes the first dimension by the outer iv
  llvm::SmallPtrSet<Operation *, 4> nests;
};

/// Records every memref access under `nest` in `uses`; false if the nest holds an op that
/// touches memory in a way this pass does not follow (a call, a copy of a whole buffer).
bool collect(const Nest &nest, llvm::DenseMap<Value, Use> &uses) {
  bool known = true;
  nest.op->walk([&](Operation *op) {
    Value memref;
    ValueRange indices;
    bool write = false;
    if (auto a = dyn_cast<memref::LoadOp>(op)) memref = a.getMemref(), indices = a.getIndices();
    else if (auto a = dyn_cast<memref::StoreOp>(op)) memref = a.getMemref(), indices = a.getIndices(), write = true;
    else if (auto a = dyn_cast<vector::LoadOp>(op)) memref = a.getBase(), indices = a.getIndices();
    else if (auto a = dyn_cast<vector::StoreOp>(op)) memref = a.getBase(), indices = a.getIndices(), write = true;
    else {
      if (op == nest.op || isMemoryEffectFree(op) || isa<scf::ForOp, scf::ParallelOp>(op)) return;
      known = false;
      return;
    }
    auto [root, sameSlabs] = rootOf(memref);
    Use &use = uses[root];
    use.written |= write;
    use.nests.insert(nest.op);
    use.everyAccessInSlab &= sameSlabs && !indices.empty() && indices.front() == nest.iv;
  });
  return known;
}

/// The nests can run as one parallel loop: a buffer written by any of them is touched by one
/// scf.parallel only, or only in the outer iteration's own slab (by every nest that touches it).
bool fusible(ArrayRef<Nest> group) {
  llvm::DenseMap<Value, Use> uses;
  for (const Nest &nest : group)
    if (!collect(nest, uses)) return false;
  for (auto &[root, use] : uses) {
    if (!use.written || use.everyAccessInSlab) continue;
    if (use.nests.size() == 1) {
      Operation *only = *use.nests.begin();
      if (llvm::any_of(group, [&](const Nest &n) { return n.op == only && n.parallel; })) continue;
    }
    return false;
  }
  return true;
}

/// Ops that may sit between two nests of a group: they are hoisted above the group's first.
bool hoistable(Operation *op) {
  return op->getNumRegions() == 0 && (isMemoryEffectFree(op) || isa<memref::AllocOp, memref::AllocaOp>(op));
}

struct GTCPUFuseParallelLoopsPass : impl::GTCPUFuseParallelLoopsBase<GTCPUFuseParallelLoopsPass> {
  using GTCPUFuseParallelLoopsBase::GTCPUFuseParallelLoopsBase;

  void fuse(IRRewriter &rewriter, ArrayRef<Nest> group, ArrayRef<Operation *> between) {
    Operation *first = group.front().op;
    for (Operation *op : between) op->moveBefore(first);
    rewriter.setInsertionPoint(first);
    Location loc = first->getLoc();
    auto c = [&](int64_t v) { return rewriter.create<arith::ConstantIndexOp>(loc, v).getResult(); };
    auto fused = rewriter.create<scf::ParallelOp>(loc, ValueRange{c(group.front().lb)}, ValueRange{c(group.front().ub)},
                                                  ValueRange{c(group.front().step)});
    Operation *end = fused.getBody()->getTerminator();
    for (const Nest &nest : group) {
      Block *body = nest.body();
      rewriter.eraseOp(body->getTerminator());
      rewriter.inlineBlockBefore(body, end, fused.getInductionVars());
      rewriter.eraseOp(nest.op);
    }
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal()) return;
    IRRewriter rewriter(&getContext());
    for (Block &block : func.getBody()) {
      // Groups of consecutive nests over the same range, greedily, in program order.
      SmallVector<SmallVector<Nest>> groups;
      SmallVector<SmallVector<Operation *>> betweens;
      SmallVector<Nest> group;
      SmallVector<Operation *> between, pending;
      auto close = [&] {
        bool anyParallel = llvm::any_of(group, [](const Nest &n) { return n.parallel; });
        if (group.size() > 1 && anyParallel) {
          groups.push_back(group);
          betweens.push_back(between);
        }
        group.clear();
        between.clear();
        pending.clear();
      };
      for (Operation &op : block) {
        auto nest = nestOf(&op);
        if (!nest) {
          if (!group.empty() && hoistable(&op)) pending.push_back(&op);
          else close();
          continue;
        }
        if (!group.empty()) {
          const Nest &head = group.front();
          bool sameRange = nest->lb == head.lb && nest->ub == head.ub && nest->step == head.step;
          SmallVector<Nest> candidate(group);
          candidate.push_back(*nest);
          if (sameRange && fusible(candidate)) {
            group.push_back(*nest);
            between.append(pending);
            pending.clear();
            continue;
          }
          close();
        }
        SmallVector<Nest> alone{*nest};
        if (fusible(alone) || nest->parallel) group.push_back(*nest);
      }
      close();
      for (auto [g, b] : llvm::zip(groups, betweens)) fuse(rewriter, g, b);
    }
  }
};
} // namespace
} // namespace mlir::gt
