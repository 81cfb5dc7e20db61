// gt-gpu-loops: every top-level loop nest becomes blocks x threads of a 2-level scf.parallel
// (serial code a one-thread loop), ready for gpu-map-parallel-loops.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTGPULOOPS
#include "gt/Dialect/Passes.h.inc"

namespace {
constexpr const char *kTiled = "gt.tiled"; ///< marks loops this pass already made (removed at the end)

/// Whether `op` (or anything nested in it) reads or writes memref contents. A call counts: the
/// one GPU kernels make is a failed run-time check's gt_runtime_error, which writes the module's
/// error global on the device (gt-gpu-runtime-errors), so a 0-d index's check (`scf.if` around
/// the call, using a loaded value) belongs in the serial kernel beside the load.
bool touchesMemory(Operation *op) {
  if (isa<scf::ParallelOp, gpu::LaunchOp, memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(op)) return false;
  bool touches = false;
  op->walk([&](Operation *inner) {
    if (isa<memref::LoadOp, memref::StoreOp, memref::CopyOp, func::CallOp>(inner)) touches = true;
  });
  return touches;
}

struct GTGPULoopsPass : impl::GTGPULoopsBase<GTGPULoopsPass> {
  using GTGPULoopsBase::GTGPULoopsBase;

  /// A scalar read at the top (a fill value: memref.load of a 0-d argument, then pure ops like
  /// arith.truncf) that only parallel loops (or gt-gpu-reductions' kernels) use is cloned into
  /// each of them, so the kernels read it on the device. Only loads from memrefs nothing in the
  /// function writes.
  void sinkScalarLoads(func::FuncOp func, Block &block) {
    llvm::SmallPtrSet<Value, 8> written;
    func.walk([&](Operation *op) {
      if (auto store = dyn_cast<memref::StoreOp>(op)) written.insert(store.getMemRef());
      else if (auto copy = dyn_cast<memref::CopyOp>(op)) written.insert(copy.getTarget());
      else if (auto linalg = dyn_cast<linalg::LinalgOp>(op))
        for (OpOperand &init : linalg.getDpsInitsMutable()) written.insert(init.get());
    });
    SmallVector<memref::LoadOp> loads(block.getOps<memref::LoadOp>());
    for (memref::LoadOp load : loads) {
      if (written.contains(load.getMemRef())) continue;
      // The load and the top-level pure ops computed from it, in order.
      SmallVector<Operation *> chain{load};
      llvm::SmallPtrSet<Operation *, 8> inChain{load};
      for (Operation *op = load->getNextNode(); op; op = op->getNextNode())
        if (isPure(op) && op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
            llvm::any_of(op->getOperands(), [&](Value v) { return v.getDefiningOp() && inChain.contains(v.getDefiningOp()); })) {
          chain.push_back(op);
          inChain.insert(op);
        }
      SetVector<Operation *> consumers;
      bool sinkable = true;
      for (Operation *op : chain)
        for (Operation *user : op->getUsers()) {
          if (inChain.contains(user)) continue;
          Operation *top = block.findAncestorOpInBlock(*user);
          if (isa_and_nonnull<scf::ParallelOp, gpu::LaunchOp>(top) && top != user) consumers.insert(top);
          else sinkable = false;
        }
      if (!sinkable || consumers.empty()) continue;
      for (Operation *loop : consumers) {
        Block *body = &loop->getRegion(0).front();
        OpBuilder b(body, body->begin());
        IRMapping map;
        for (Operation *op : chain) b.clone(*op, map);
        for (Operation *op : chain)
          for (auto [from, to] : llvm::zip(op->getResults(), map.lookup(op)->getResults()))
            from.replaceUsesWithIf(to, [&](OpOperand &use) { return loop->isProperAncestor(use.getOwner()); });
      }
      for (Operation *op : llvm::reverse(chain)) op->erase();
    }
  }

  /// Moves each maximal run of top-level memory-touching ops into a one-iteration scf.parallel.
  /// A static allocation inside a run (a 0-d fill's buffer between the fill value's load and its
  /// store) does not end it: it moves up, before the run.
  LogicalResult wrapSerial(Block &block) {
    SmallVector<SmallVector<Operation *>> runs, hoists; // hoists[i]: allocations inside runs[i]
    bool open = false;
    for (Operation &op : block) {
      if (op.hasTrait<OpTrait::IsTerminator>()) break;
      if (open && isa<memref::AllocOp, memref::AllocaOp>(op) && op.getNumOperands() == 0) {
        hoists[runs.size() - 1].push_back(&op);
        continue;
      }
      if (touchesMemory(&op)) {
        if (!open) {
          runs.emplace_back();
          hoists.emplace_back();
        }
        runs.back().push_back(&op);
        open = true;
      } else if (!open || !isPure(&op)) {
        open = false; // a pure op (a constant, index math) may sit inside a run
      } else {
        runs.back().push_back(&op);
      }
    }
    for (size_t i = 0; i < runs.size(); ++i)
      for (Operation *alloc : hoists[i]) alloc->moveBefore(runs[i].front()); // no operands to dominate
    for (auto &run : runs) {
      while (!run.empty() && !touchesMemory(run.back())) run.pop_back(); // trailing pure ops stay outside
      if (run.empty()) continue;
      llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
      for (Operation *op : run)
        for (Value result : op->getResults())
          for (Operation *user : result.getUsers())
            if (!inRun.contains(block.findAncestorOpInBlock(*user)))
              return op->emitOpError("computes a value used outside its serial region; cannot run it on the GPU");
      OpBuilder b(run.front());
      Location loc = run.front()->getLoc();
      Value zero = b.create<arith::ConstantIndexOp>(loc, 0), one = b.create<arith::ConstantIndexOp>(loc, 1);
      auto parallel = b.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{one}, ValueRange{one});
      Operation *yield = parallel.getBody()->getTerminator();
      for (Operation *op : run) op->moveBefore(yield);
    }
    return success();
  }

  /// scf.parallel over N points -> scf.parallel (blocks) { scf.parallel (threads) { if (i < N) body } }.
  LogicalResult tile(scf::ParallelOp loop) {
    int64_t points = 1;
    for (auto [lb, ub, step] : llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto l = getConstantIntValue(lb), u = getConstantIntValue(ub), s = getConstantIntValue(step);
      if (!l || !u || !s || *s <= 0) return loop.emitOpError("has a dynamic loop bound; GPU kernels need static shapes");
      points *= std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
    }
    IRRewriter rewriter(&getContext());
    if (loop.getNumLoops() > 1) {
      // One dimension (normalized: from 0, step 1; bounds become computed values).
      std::vector<unsigned> all;
      for (unsigned i = 0; i < loop.getNumLoops(); ++i) all.push_back(i);
      Operation *after = loop->getNextNode();
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all}); // replaces `loop`
      loop = cast<scf::ParallelOp>(after->getPrevNode());
      rewriter.setInsertionPoint(loop);
      Value zero = rewriter.create<arith::ConstantIndexOp>(loop.getLoc(), 0);
      Value one = rewriter.create<arith::ConstantIndexOp>(loop.getLoc(), 1);
      return tileOneDim(rewriter, loop, points, zero, one);
    }
    return tileOneDim(rewriter, loop, points, loop.getLowerBound()[0], loop.getStep()[0]);
  }

  LogicalResult tileOneDim(IRRewriter &rewriter, scf::ParallelOp loop, int64_t points, Value lb, Value step) {
    Location loc = loop.getLoc();
    int64_t threads = std::max<int64_t>(1, std::min<int64_t>(blockSize, points));
    int64_t blocks = (points + threads - 1) / threads;
    rewriter.setInsertionPoint(loop);
    auto cst = [&](int64_t v) { return rewriter.create<arith::ConstantIndexOp>(loc, v).getResult(); };
    Value zero = cst(0), one = cst(1), threadsV = cst(threads), pointsV = cst(points);
    auto outer = rewriter.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{cst(blocks)}, ValueRange{one});
    outer->setAttr(kTiled, rewriter.getUnitAttr());
    rewriter.setInsertionPoint(outer.getBody()->getTerminator());
    auto inner = rewriter.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{threadsV}, ValueRange{one});
    rewriter.setInsertionPoint(inner.getBody()->getTerminator());
    Value linear = rewriter.create<arith::AddIOp>(
        loc, rewriter.create<arith::MulIOp>(loc, outer.getInductionVars()[0], threadsV), inner.getInductionVars()[0]);
    Operation *before = inner.getBody()->getTerminator();
    if (points % threads != 0) { // the last block has idle threads
      Value inRange = rewriter.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, linear, pointsV);
      auto guard = rewriter.create<scf::IfOp>(loc, inRange, /*withElseRegion=*/false);
      before = guard.thenBlock()->getTerminator();
      rewriter.setInsertionPoint(before);
    }
    Value iv = rewriter.create<arith::AddIOp>(loc, lb, rewriter.create<arith::MulIOp>(loc, linear, step));
    Operation *oldTerminator = loop.getBody()->getTerminator();
    rewriter.eraseOp(oldTerminator);
    rewriter.inlineBlockBefore(loop.getBody(), before, ValueRange{iv});
    rewriter.eraseOp(loop);
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal()) return;
    for (Block &block : func.getBody()) {
      sinkScalarLoads(func, block);
      if (failed(wrapSerial(block))) return signalPassFailure();
      // Collapse, then tile, each top-level loop nest (collapsing replaces the loop).
      while (true) {
        scf::ParallelOp next;
        for (auto loop : block.getOps<scf::ParallelOp>())
          if (!loop->hasAttr(kTiled)) { next = loop; break; }
        if (!next) break;
        if (failed(tile(next))) return signalPassFailure();
      }
      for (auto loop : block.getOps<scf::ParallelOp>()) loop->removeAttr(kTiled);
    }
  }
};
} // namespace
} // namespace mlir::gt
