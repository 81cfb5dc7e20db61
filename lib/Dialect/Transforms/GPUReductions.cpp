// gt-gpu-reductions: a bufferized linalg reduction becomes block-parallel GPU kernels: one block
// of threads per output element (or several, then a second kernel), each thread a strided
// partial result, the block's partials combined by gpu.all_reduce (warp shuffles and shared
// memory once convert-gpu-to-nvvm lowers it).
//
// The scheme is the classic one of Harris, "Optimizing Parallel Reduction in CUDA" (NVIDIA,
// 2007): grid-stride partial sums per thread, then a tree inside the block; the split into
// several blocks per output with a second pass over their partials is "split-K" style.
#include "gt/Dialect/Passes.h"
#include "Reductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTGPUREDUCTIONS
#include "gt/Dialect/Passes.h.inc"

namespace {

/// A reduction the pass rewrites: the body's last op combines the element it computes with the
/// output (`%out`), and nothing else in the body reads `%out`.
struct Reduction {
  mutable linalg::GenericOp op; // (its accessors are not const)
  Combiner combiner;
  gpu::AllReduceOperation kind;
  SmallVector<int64_t> parallelDims, reductionDims, sizes;
  int64_t outputs = 1, reduced = 1;
  /// f16/bf16 output of a max or min: the threads compare in f32 (exact: every 16-bit float is
  /// an f32), the result is rounded back (exactly) when stored.
  Type half;
};

/// The all_reduce kind of a combining op.
std::optional<gpu::AllReduceOperation> kindOf(Operation *op) {
  using K = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case([](arith::AddFOp) { return K::ADD; })
      .Case([](arith::MulFOp) { return K::MUL; })
      .Case([](arith::MaximumFOp) { return K::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return K::MINIMUMF; })
      .Case([](arith::MaxNumFOp) { return K::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return K::MINNUMF; })
      .Case([](arith::AddIOp) { return K::ADD; })
      .Case([](arith::MulIOp) { return K::MUL; })
      .Case([](arith::MaxSIOp) { return K::MAXSI; })
      .Case([](arith::MinSIOp) { return K::MINSI; })
      .Case([](arith::MaxUIOp) { return K::MAXUI; })
      .Case([](arith::MinUIOp) { return K::MINUI; })
      .Case([](arith::AndIOp) { return K::AND; })
      .Case([](arith::OrIOp) { return K::OR; })
      .Case([](arith::XOrIOp) { return K::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

/// The reduction `op` computes, if the pass can run it block-parallel: one output (f32, f64,
/// i32 or i64: what warp shuffles move; f16/bf16 for max and min, in f32), static loop bounds,
/// projected-permutation maps, and a body ending in one associative combine of an element with
/// `%out`. (GT's lowering sums f16/bf16 into an f32 output already.)
std::optional<Reduction> match(linalg::GenericOp op, int64_t minReduced) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true)) return std::nullopt;
  Reduction r{op, {}, {}, {}, {}, {}};
  for (int64_t size : op.getStaticLoopRanges())
    if (ShapedType::isDynamic(size)) return std::nullopt;
  r.sizes = op.getStaticLoopRanges();
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (it == utils::IteratorType::reduction) r.reductionDims.push_back(d), r.reduced *= r.sizes[d];
    else r.parallelDims.push_back(d), r.outputs *= r.sizes[d];
  }
  if (r.reduced < minReduced || r.outputs == 0) return std::nullopt;
  Type type = op.getRegion().front().getArguments().back().getType();
  bool half = type.isF16() || type.isBF16();
  if (!(half || type.isF32() || type.isF64() || type.isInteger(32) || type.isInteger(64))) return std::nullopt;
  auto combiner = matchCombiner(op);
  if (!combiner) return std::nullopt;
  r.combiner = *combiner;
  r.kind = *kindOf(combiner->op);
  if (half) {
    using K = gpu::AllReduceOperation;
    if (!llvm::is_contained({K::MAXIMUMF, K::MINIMUMF, K::MAXNUMF, K::MINNUMF}, r.kind)) return std::nullopt;
    APFloat identity = cast<FloatAttr>(r.combiner.identity).getValue();
    bool lost = false;
    identity.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
    r.combiner.identity = FloatAttr::get(Float32Type::get(op.getContext()), identity);
    r.half = type;
  }
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

  Value combine(const Reduction &r, Value element, Value acc) { return r.combiner.build(b, element, acc); }
  /// An element or output value in the type the threads combine in (f32 for f16/bf16).
  Value widen(const Reduction &r, Value v) { return r.half ? b.create<arith::ExtFOp>(loc, b.getF32Type(), v) : v; }

  /// One element of the reduction at loop indices `ivs`: the inputs loaded, the body cloned
  /// up to its combiner.
  Value element(const Reduction &r, ArrayRef<Value> ivs) {
    Block &body = r.op.getRegion().front();
    IRMapping map;
    for (OpOperand *input : r.op.getDpsInputOperands()) {
      Value arg = body.getArgument(input->getOperandNumber()), value = input->get();
      if (isa<MemRefType>(value.getType())) {
        value = b.create<memref::LoadOp>(loc, value, indicesAt(b, loc, r.op.getMatchingIndexingMap(input), ivs));
      }
      map.map(arg, value);
    }
    for (Operation &op : body.without_terminator()) {
      if (&op == r.combiner.op) continue;
      if (auto idx = dyn_cast<linalg::IndexOp>(op)) map.map(idx.getResult(), ivs[idx.getDim()]);
      else b.clone(op, map);
    }
    return map.lookupOrDefault(r.combiner.element());
  }

  /// The output's indices for output number `linear` (parallel loop dims, row-major).
  SmallVector<Value> outIndices(const Reduction &r, Value linear, SmallVector<Value> &ivs) {
    SmallVector<int64_t> sizes;
    for (int64_t d : r.parallelDims) sizes.push_back(r.sizes[d]);
    SmallVector<Value> p = r.parallelDims.empty() ? SmallVector<Value>{} : delinearize(linear, sizes);
    for (auto [d, v] : llvm::zip(r.parallelDims, p)) ivs[d] = v;
    return indicesAt(b, loc, r.op.getMatchingIndexingMap(r.op.getDpsInitOperand(0)), ivs);
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
    Value init = b.create<arith::ConstantOp>(loc, r.combiner.identity);
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
    Value init = widen(r, b.create<memref::LoadOp>(loc, output, indices));
    Value result = combine(r, total, init);
    if (r.half) result = b.create<arith::TruncFOp>(loc, r.half, result);
    b.create<memref::StoreOp>(loc, result, output, indices);
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
    Type type = r.combiner.identity.getType();
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
        return e.widen(r, e.element(r, loopIvs));
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

  /// A reduction left as it is (a short reduced axis, argmax's two outputs, ...) runs one
  /// thread per output, looping over the reduced elements, once its loops are parallel loops
  /// outside and reduction loops inside. Loops in the op's order would make a reduction over
  /// an outer axis (a bias gradient summed over the batch axis: `x.sum(0)` of (8, 1024, 768))
  /// a loop around the whole nest, which gt-gpu-loops runs in one thread (400 ms on an H200
  /// where a thread per output takes microseconds). Each output's elements are visited in the
  /// same order as before.
  void parallelOutside(linalg::GenericOp op) {
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    SmallVector<unsigned> order;
    for (auto [d, it] : llvm::enumerate(iters))
      if (it == utils::IteratorType::parallel) order.push_back(unsigned(d));
    for (auto [d, it] : llvm::enumerate(iters))
      if (it == utils::IteratorType::reduction) order.push_back(unsigned(d));
    bool changed = false;
    for (auto [i, d] : llvm::enumerate(order)) changed |= unsigned(i) != d;
    if (!changed) return;
    IRRewriter rewriter(op.getContext());
    rewriter.setInsertionPoint(op);
    (void)linalg::interchangeGenericOp(rewriter, op, order);
  }

  void runOnOperation() override {
    SmallVector<Reduction, 4> found;
    SmallVector<linalg::GenericOp> kept;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<gpu::LaunchOp>()) return;
      if (auto r = match(op, minReduced)) found.push_back(*r);
      else if (op.getNumReductionLoops() > 0) kept.push_back(op);
    });
    for (Reduction &r : found) rewrite(r);
    for (linalg::GenericOp op : kept) parallelOutside(op);
  }
};
} // namespace
} // namespace mlir::gt
