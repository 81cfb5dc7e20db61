// gt-gpu-reductions: a bufferized linalg reduction becomes block-parallel GPU kernels: one block
// of threads per output element (or several, then a second kernel), each thread a strided
// partial result, the block's partials combined by gpu.all_reduce (warp shuffles and shared
// memory once convert-gpu-to-nvvm lowers it).
//
// The scheme is the classic one of Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA,
// 2007): grid-stride partial sums per thread, then a tree inside the block; the split into
// several blocks per output with a second pass over their partials is "split-K" style.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

namespace mlir::gt {
#define GEN_PASS_DEF_GTGPUREDUCTIONS
#include "gt/Dialect/Passes.h.inc"

namespace {

/// A reduction the pass rewrites: the body's last op combines the element it computes with the
/// output (`%out`), and nothing else in the body reads `%out`.
struct Reduction {
  mutable linalg::GenericOp op; // (its accessors are not const)
  Operation *combiner;      ///< the body's op yielding `combine(element, %out)`
  unsigned outOperand;      ///< which of the combiner's two operands is `%out`
  gpu::AllReduceOperation kind;
  TypedAttr identity;       ///< combine(identity, x) == x
  SmallVector<int64_t> parallelDims, reductionDims, sizes;
  int64_t outputs = 1, reduced = 1;
};

/// The all_reduce kind and the identity of a combining op, if it is associative and commutative.
std::optional<std::pair<gpu::AllReduceOperation, TypedAttr>> kindOf(Operation *op, Type type) {
  using K = gpu::AllReduceOperation;
  Builder b(op->getContext());
  auto fl = [&](double v) -> TypedAttr { return b.getFloatAttr(type, v); };
  auto in = [&](const APInt &v) -> TypedAttr { return b.getIntegerAttr(type, v); };
  unsigned width = type.isIntOrFloat() ? type.getIntOrFloatBitWidth() : 0;
  double inf = std::numeric_limits<double>::infinity();
  return llvm::TypeSwitch<Operation *, std::optional<std::pair<K, TypedAttr>>>(op)
      .Case([&](arith::AddFOp) { return std::pair{K::ADD, fl(0.0)}; })
      .Case([&](arith::MulFOp) { return std::pair{K::MUL, fl(1.0)}; })
      .Case([&](arith::MaximumFOp) { return std::pair{K::MAXIMUMF, fl(-inf)}; })
      .Case([&](arith::MinimumFOp) { return std::pair{K::MINIMUMF, fl(inf)}; })
      .Case([&](arith::MaxNumFOp) { return std::pair{K::MAXNUMF, fl(-inf)}; })
      .Case([&](arith::MinNumFOp) { return std::pair{K::MINNUMF, fl(inf)}; })
      .Case([&](arith::AddIOp) { return std::pair{K::ADD, in(APInt(width, 0))}; })
      .Case([&](arith::MulIOp) { return std::pair{K::MUL, in(APInt(width, 1))}; })
      .Case([&](arith::MaxSIOp) { return std::pair{K::MAXSI, in(APInt::getSignedMinValue(width))}; })
      .Case([&](arith::MinSIOp) { return std::pair{K::MINSI, in(APInt::getSignedMaxValue(width))}; })
      .Case([&](arith::MaxUIOp) { return std::pair{K::MAXUI, in(APInt(width, 0))}; })
      .Case([&](arith::MinUIOp) { return std::pair{K::MINUI, in(APInt::getAllOnes(width))}; })
      .Case([&](arith::AndIOp) { return std::pair{K::AND, in(APInt::getAllOnes(width))}; })
      .Case([&](arith::OrIOp) { return std::pair{K::OR, in(APInt(width, 0))}; })
      .Case([&](arith::XOrIOp) { return std::pair{K::XOR, in(APInt(width, 0))}; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The reduction `op` computes, if the pass can run it block-parallel: one output (f32, f64,
/// i32 or i64: what warp shuffles move), static loop bounds, projected-permutation maps, and a
/// body ending in one associative combine of an element with `%out`.
std::optional<Reduction> match(linalg::GenericOp op, int64_t minReduced) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/false)) return std::nullopt;
  Reduction r{op, nullptr, 0, {}, {}, {}, {}, {}};
  for (int64_t size : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(size)) return std::nullopt;
  r.sizes = op.getStaticLoopRanges();
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (it == utils::IteratorType::reduction) r.reductionDims.push_back(d), r.reduced *= r.sizes[d];
    else r.parallelDims.push_back(d), r.outputs *= r.sizes[d];
  }
  if (r.reduced < minReduced || r.outputs == 0) return std::nullopt;
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArguments().back();
  Type type = out.getType();
  if (!(type.isF32() || type.isF64() || type.isInteger(32) || type.isInteger(64))) return std::nullopt;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *combiner = yield.getValues()[0].getDefiningOp();
  if (!combiner || combiner->getBlock() != &body || combiner->getNumOperands() != 2 ||
      combiner->getNumResults() != 1 || !out.hasOneUse() || out.getUses().begin()->getOwner() != combiner ||
      !combiner->getResult(0).hasOneUse())
    return std::nullopt;
  auto kind = kindOf(combiner, type);
  if (!kind) return std::nullopt;
  r.combiner = combiner;
  r.outOperand = combiner->getOperand(0) == out ? 0 : 1;
  r.kind = kind->first;
  r.identity = kind->second;
  return r;
}

struct Emitter {
  OpBuilder &b;
  Location loc;
  Value index(int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); }

  /// Row-major indices of `linear` over `sizes`.
  SmallVector<Value> delinearize(Value linear, ArrayRef<int64_t> sizes) {
    SmallVector<Value> result(sizes.size());
    for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
      if (i == 0) {
        result[i] = linear;
        break;
      }
      Value size = index(sizes[i]);
      result[i] = b.create<arith::RemUIOp>(loc, linear, size);
      linear = b.create<arith::DivUIOp>(loc, linear, size);
    }
    return result;
  }

  /// `combine(element, acc)` as the body wrote it (the combiner cloned, `%out` <- acc).
  Value combine(const Reduction &r, Value element, Value acc) {
    IRMapping map;
    map.map(r.combiner->getOperand(r.outOperand), acc);
    map.map(r.combiner->getOperand(1 - r.outOperand), element);
    return b.clone(*r.combiner, map)->getResult(0);
  }

  /// One element of the reduction at loop indices `ivs`: the inputs loaded, the body cloned
  /// up to its combiner.
  Value element(const Reduction &r, ArrayRef<Value> ivs) {
    Block &body = r.op.getRegion().front();
    IRMapping map;
    for (OpOperand *input : r.op.getDpsInputOperands()) {
      Value arg = body.getArgument(input->getOperandNumber()), value = input->get();
      if (isa<MemRefType>(value.getType())) {
        SmallVector<Value> indices;
        for (AffineExpr e : r.op.getMatchingIndexingMap(input).getResults())
          indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
        value = b.create<memref::LoadOp>(loc, value, indices);
      }
      map.map(arg, value);
    }
    for (Operation &op : body.without_terminator()) {
      if (&op == r.combiner) continue;
      if (auto idx = dyn_cast<linalg::IndexOp>(op)) map.map(idx.getResult(), ivs[idx.getDim()]);
      else b.clone(op, map);
    }
    return map.lookupOrDefault(r.combiner->getOperand(1 - r.outOperand));
  }

  /// The output's indices for output number `linear` (parallel loop dims, row-major).
  SmallVector<Value> outIndices(const Reduction &r, Value linear, SmallVector<Value> &ivs) {
    SmallVector<int64_t> sizes;
    for (int64_t d : r.parallelDims) sizes.push_back(r.sizes[d]);
    SmallVector<Value> p = r.parallelDims.empty() ? SmallVector<Value>{} : delinearize(linear, sizes);
    for (auto [d, v] : llvm::zip(r.parallelDims, p)) ivs[d] = v;
    SmallVector<Value> indices;
    for (AffineExpr e : r.op.getMatchingIndexingMap(r.op.getDpsInitOperand(0)).getResults())
      indices.push_back(ivs[cast<AffineDimExpr>(e).getPosition()]);
    return indices;
  }

  /// gpu.launch over `grid` blocks of `threads` threads (x only), body(block id, thread id).
  void launch(int64_t grid, int64_t threads, llvm::function_ref<void(Value, Value)> body) {
    Value one = index(1);
    auto launch = b.create<gpu::LaunchOp>(loc, index(grid), one, one, index(threads), one, one);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    body(launch.getBlockIds().x, launch.getThreadIds().x);
    b.create<gpu::TerminatorOp>(loc);
  }

  /// Thread `thread` of `threads` folds `from(i)` for i in [lo + thread, hi) step threads; then
  /// the block's all_reduce. Every thread gets the block's result.
  Value blockReduce(const Reduction &r, Value lo, Value hi, Value thread, int64_t threads,
                    llvm::function_ref<Value(Value)> from) {
    Value init = b.create<arith::ConstantOp>(loc, r.identity);
    Value start = b.create<arith::AddIOp>(loc, lo, thread);
    auto loop = b.create<scf::ForOp>(loc, start, hi, index(threads), ValueRange{init});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value acc = loop.getRegionIterArgs()[0];
      b.create<scf::YieldOp>(loc, combine(r, from(loop.getInductionVar()), acc));
    }
    return b.create<gpu::AllReduceOp>(loc, loop.getResult(0),
                                      gpu::AllReduceOperationAttr::get(b.getContext(), r.kind),
                                      /*uniform=*/true);
  }

  /// Thread 0 stores `combine(total, out[indices])` into the output.
  void storeResult(const Reduction &r, Value thread, Value total, ArrayRef<Value> indices) {
    Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, thread, index(0));
    auto guard = b.create<scf::IfOp>(loc, first, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(guard.thenBlock()->getTerminator());
    Value output = r.op.getDpsInitOperand(0)->get();
    Value init = b.create<memref::LoadOp>(loc, output, indices);
    b.create<memref::StoreOp>(loc, combine(r, total, init), output, indices);
  }
};

int64_t threadsFor(int64_t n, int64_t blockSize) {
  return std::clamp<int64_t>(int64_t(llvm::PowerOf2Ceil(uint64_t(n))), 32, blockSize);
}

struct GTGPUReductionsPass : impl::GTGPUReductionsBase<GTGPUReductionsPass> {
  using GTGPUReductionsBase::GTGPUReductionsBase;

  void rewrite(Reduction &r) {
    OpBuilder b(r.op);
    Emitter e{b, r.op.getLoc()};
    SmallVector<int64_t> reducedSizes;
    for (int64_t d : r.reductionDims) reducedSizes.push_back(r.sizes[d]);
    int64_t threads = threadsFor(r.reduced, blockSize);
    // Few outputs over a long axis: split each output's range over `splits` blocks (about
    // `targetBlocks` blocks in all, each thread at least 4 elements), then a second kernel.
    int64_t splits = 1;
    if (r.outputs < targetBlocks) {
      int64_t most = llvm::divideCeil(r.reduced, threads * 4);
      splits = std::max<int64_t>(1, std::min<int64_t>(llvm::divideCeil(targetBlocks, r.outputs), most));
    }
    int64_t chunk = llvm::divideCeil(r.reduced, splits);
    splits = llvm::divideCeil(r.reduced, chunk); // no empty split
    Type type = r.identity.getType();
    Value partials;
    if (splits > 1)
      partials = b.create<memref::AllocOp>(e.loc, MemRefType::get({r.outputs * splits}, type));

    e.launch(r.outputs * splits, threads, [&](Value block, Value thread) {
      Value output = block, lo = e.index(0), hi = e.index(r.reduced);
      if (splits > 1) {
        output = b.create<arith::DivUIOp>(e.loc, block, e.index(splits));
        Value split = b.create<arith::RemUIOp>(e.loc, block, e.index(splits));
        lo = b.create<arith::MulIOp>(e.loc, split, e.index(chunk));
        hi = b.create<arith::MinUIOp>(e.loc, b.create<arith::AddIOp>(e.loc, lo, e.index(chunk)), hi);
      }
      SmallVector<Value> ivs(r.sizes.size());
      SmallVector<Value> indices = e.outIndices(r, output, ivs);
      Value total = e.blockReduce(r, lo, hi, thread, threads, [&](Value i) {
        SmallVector<Value> loopIvs = ivs;
        SmallVector<Value> red = e.delinearize(i, reducedSizes);
        for (auto [d, v] : llvm::zip(r.reductionDims, red)) loopIvs[d] = v;
        return e.element(r, loopIvs);
      });
      if (splits == 1) return e.storeResult(r, thread, total, indices);
      Value first = b.create<arith::CmpIOp>(e.loc, arith::CmpIPredicate::eq, thread, e.index(0));
      auto guard = b.create<scf::IfOp>(e.loc, first, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPoint(guard.thenBlock()->getTerminator());
      b.create<memref::StoreOp>(e.loc, total, partials, block);
    });
    if (splits > 1) {
      int64_t threads2 = threadsFor(splits, blockSize);
      e.launch(r.outputs, threads2, [&](Value block, Value thread) {
        SmallVector<Value> ivs(r.sizes.size());
        SmallVector<Value> indices = e.outIndices(r, block, ivs);
        Value base = b.create<arith::MulIOp>(e.loc, block, e.index(splits));
        Value total = e.blockReduce(r, e.index(0), e.index(splits), thread, threads2, [&](Value i) {
          return b.create<memref::LoadOp>(e.loc, partials, ValueRange{b.create<arith::AddIOp>(e.loc, base, i)});
        });
        e.storeResult(r, thread, total, indices);
      });
      b.create<memref::DeallocOp>(e.loc, partials);
    }
    r.op.erase();
  }

  void runOnOperation() override {
    SmallVector<Reduction> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<gpu::LaunchOp>()) return;
      if (auto r = match(op, minReduced)) found.push_back(*r);
    });
    for (Reduction &r : found) rewrite(r);
  }
};
} // namespace
} // namespace mlir::gt
