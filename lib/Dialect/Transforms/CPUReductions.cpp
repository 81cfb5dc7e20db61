// gt-cpu-reductions: a bufferized linalg reduction over its innermost loop dimension (a row sum,
// softmax's max and sum, LayerNorm's statistics, a full reduction) folds `lanes` interleaved
// partial results in a vector, so the element computation and the combine vectorize; then the
// lanes in order, then the tail. The order depends only on the reduced length, so eager kernels
// (dynamic sizes) and fused kernels (static) that both run this pass agree bit for bit.
#include "gt/Dialect/Passes.h"
#include "Reductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTCPUREDUCTIONS
#include "gt/Dialect/Passes.h.inc"

namespace {

/// How an input is read along the reduced dimension.
enum class Read {
  Vector,    ///< contiguous along it: one vector load
  Elements,  ///< contiguous bools: a vector<8xi1> is 8 bits in memory but a memref's i1 is a
             ///< byte each, so its lanes are loaded one at a time
  Broadcast, ///< does not depend on it: one load, splat
  Value      ///< a scalar operand, splat
};

struct Reduction {
  linalg::GenericOp op;
  Combiner combiner;
  SmallVector<Read> reads; ///< one per input
};

bool scalar(Type t) { return t.isIntOrFloat(); }

/// `op` reduces over its innermost loop dimension only, every input is contiguous along it (or
/// does not depend on it), and its body is arith/math on numbers: the pass can vectorize it.
std::optional<Reduction> match(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1) return std::nullopt;
  unsigned n = op.getNumLoops();
  if (op.getIteratorTypesArray().back() != utils::IteratorType::reduction) return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation(/*allowZeroInResults=*/true)) return std::nullopt;
  auto combiner = matchCombiner(op);
  if (!combiner) return std::nullopt;
  Type type = combiner->identity.getType();
  if (!(type.isF32() || type.isF64() || type.isInteger(32) || type.isInteger(64))) return std::nullopt;
  Reduction r{op, *combiner, {}};
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto memref = dyn_cast<MemRefType>(input->get().getType());
    if (!memref) {
      if (!scalar(input->get().getType())) return std::nullopt;
      r.reads.push_back(Read::Value);
      continue;
    }
    if (!scalar(memref.getElementType())) return std::nullopt;
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isFunctionOfDim(n - 1)) {
      r.reads.push_back(Read::Broadcast);
      continue;
    }
    // Along the reduced dimension: the memref's innermost dimension, unit stride.
    SmallVector<int64_t> strides;
    int64_t offset;
    auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
    if (!last || last.getPosition() != n - 1 ||
        failed(getStridesAndOffset(memref, strides, offset)) || strides.back() != 1)
      return std::nullopt;
    r.reads.push_back(memref.getElementType().getIntOrFloatBitWidth() % 8 ? Read::Elements : Read::Vector);
  }
  Block &body = op.getRegion().front();
  for (Operation &inner : body.without_terminator()) {
    if (&inner == combiner->op) continue;
    Dialect *dialect = inner.getDialect();
    if (!isa_and_nonnull<arith::ArithDialect, math::MathDialect>(dialect) || inner.getNumRegions() ||
        inner.getNumResults() != 1 || !scalar(inner.getResult(0).getType()) ||
        llvm::any_of(inner.getOperandTypes(), [](Type t) { return !scalar(t); }))
      return std::nullopt;
  }
  return r;
}

/// A reduction over its k > 1 innermost loop dimensions whose inputs read those dimensions as
/// their own contiguous innermost dimensions, in order (or do not read them), as a reduction
/// over one innermost dimension: those inputs collapsed by memref.collapse_shape. A full sum of
/// a 4-D tensor becomes a sum over one dimension of all its elements, which `match` takes.
/// Returns the new op, or null (and changes nothing) when `op` is not of that form.
/// A reduction whose innermost loop reduces but whose outer loops interleave reduced and kept
/// dimensions (batch norm's statistics: (N, C, H, W) reduced over N, H and W) gets its kept
/// dimensions' loops outermost, in order, and the reduced ones inside, in order. Each output
/// still combines its elements in the same order (eager kernels agree bit for bit), and the
/// kept loop is now the outer one, which gt-cpu-parallel-loops splits over the threads: before,
/// the outermost loop reduced and the whole nest ran on one thread. Left alone: a reduction
/// whose innermost loop is kept (a column sum: it reads rows contiguously), and one whose
/// innermost reduced loops (those after the last kept one) run fewer than 16 iterations in all,
/// or an unknown number (each kept index would then revisit the whole input a few elements at a
/// time; eager kernels, whose sizes are dynamic, run on one thread anyway).
void keptDimensionsFirst(linalg::GenericOp op) {
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  if (iters.empty() || iters.back() != utils::IteratorType::reduction) return;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ranges.size() != iters.size()) return;
  int64_t inner = 1; // iterations of the innermost reduced loops
  for (size_t i = iters.size(); i-- > 0 && iters[i] == utils::IteratorType::reduction;) {
    if (ShapedType::isDynamic(ranges[i])) return;
    inner *= ranges[i];
  }
  if (inner < 16) return;
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < iters.size(); ++i)
    if (iters[i] == utils::IteratorType::parallel) order.push_back(i);
  bool inPlace = true; // the kept loops already outermost
  for (unsigned i = 0; i < order.size(); ++i) inPlace &= order[i] == i;
  if (order.empty() || inPlace) return;
  for (unsigned i = 0; i < iters.size(); ++i)
    if (iters[i] == utils::IteratorType::reduction) order.push_back(i);
  IRRewriter rewriter(op);
  (void)linalg::interchangeGenericOp(rewriter, op, order);
}

linalg::GenericOp collapseInnerReductions(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1) return nullptr;
  unsigned n = op.getNumLoops(), k = op.getNumReductionLoops();
  if (k < 2) return nullptr;
  auto iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < n; ++d)
    if ((iterators[d] == utils::IteratorType::reduction) != (d >= n - k)) return nullptr;
  if (!op.getRegion().front().getOps<linalg::IndexOp>().empty()) return nullptr;
  auto reduced = [&](AffineExpr e) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    return dim && dim.getPosition() >= n - k;
  };
  MLIRContext *ctx = op.getContext();
  unsigned m = n - k + 1; // loops after collapsing: the parallel ones and one reduction
  OpBuilder b(op);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  SmallVector<Operation *> created;
  auto fail = [&]() -> linalg::GenericOp {
    for (Operation *c : llvm::reverse(created)) c->erase();
    return nullptr;
  };
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    auto results = map.getResults();
    unsigned r = results.size(), uses = llvm::count_if(results, reduced);
    if (uses == 0) { // does not read the reduced dimensions: the same indices, fewer loops
      maps.push_back(AffineMap::get(m, 0, results, ctx));
      inputs.push_back(input->get());
      continue;
    }
    auto memref = dyn_cast<MemRefType>(input->get().getType());
    if (!memref || uses != k || r < k) return fail();
    for (unsigned i = 0; i < k; ++i)
      if (results[r - k + i] != getAffineDimExpr(n - k + i, ctx)) return fail();
    SmallVector<ReassociationIndices> groups;
    for (unsigned i = 0; i + k < r; ++i) groups.push_back({int64_t(i)});
    ReassociationIndices inner;
    for (unsigned i = r - k; i < r; ++i) inner.push_back(i);
    groups.push_back(inner);
    if (!memref::CollapseShapeOp::isGuaranteedCollapsible(memref, groups)) return fail();
    auto collapse = b.create<memref::CollapseShapeOp>(op.getLoc(), input->get(), groups);
    created.push_back(collapse);
    SmallVector<AffineExpr> kept(results.begin(), results.end() - k);
    kept.push_back(getAffineDimExpr(n - k, ctx));
    maps.push_back(AffineMap::get(m, 0, kept, ctx));
    inputs.push_back(collapse.getResult());
  }
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (llvm::any_of(outMap.getResults(), reduced)) return fail();
  maps.push_back(AffineMap::get(m, 0, outMap.getResults(), ctx));
  SmallVector<utils::IteratorType> types(n - k, utils::IteratorType::parallel);
  types.push_back(utils::IteratorType::reduction);
  auto collapsed = b.create<linalg::GenericOp>(op.getLoc(), TypeRange{}, inputs, ValueRange{op.getDpsInitOperand(0)->get()},
                                               maps, types);
  collapsed.getRegion().takeBody(op.getRegion());
  op.erase();
  return collapsed;
}

struct Emitter {
  OpBuilder &b;
  Location loc;
  const Reduction &r;
  int64_t lanes; ///< 0: scalar code

  Type typeOf(Type element) const { return lanes ? Type(VectorType::get({lanes}, element)) : element; }
  Value splat(Value v) {
    return lanes ? b.create<vector::BroadcastOp>(loc, VectorType::get({lanes}, v.getType()), v).getResult() : v;
  }

  /// The element (a vector of `lanes` consecutive elements) at loop indices `ivs`: the inputs
  /// loaded, the body cloned up to its combine.
  Value element(ArrayRef<Value> ivs) {
    linalg::GenericOp op = r.op;
    Block &body = op.getRegion().front();
    IRMapping map;
    for (auto [input, read] : llvm::zip(op.getDpsInputOperands(), r.reads)) {
      Value value = input->get();
      if (read != Read::Value) {
        SmallVector<Value> indices = indicesAt(b, loc, op.getMatchingIndexingMap(input), ivs);
        auto memref = cast<MemRefType>(value.getType());
        if (read == Read::Vector && lanes) {
          value = b.create<vector::LoadOp>(loc, VectorType::get({lanes}, memref.getElementType()), value, indices);
        } else if (read == Read::Elements && lanes) {
          Value lanesV = b.create<arith::ConstantOp>(loc, b.getZeroAttr(VectorType::get({lanes}, memref.getElementType())));
          for (int64_t lane = 0; lane < lanes; ++lane) {
            SmallVector<Value> at = indices;
            at.back() = b.create<arith::AddIOp>(loc, at.back(), b.create<arith::ConstantIndexOp>(loc, lane));
            lanesV = b.create<vector::InsertOp>(loc, b.create<memref::LoadOp>(loc, value, at), lanesV, lane);
          }
          value = lanesV;
        } else
          value = splat(b.create<memref::LoadOp>(loc, value, indices));
      } else {
        value = splat(value);
      }
      map.map(body.getArgument(input->getOperandNumber()), value);
    }
    auto lookup = [&](Value v) { // a value from outside the body: the same in every lane
      if (!map.contains(v)) map.map(v, splat(v));
      return map.lookup(v);
    };
    for (Operation &inner : body.without_terminator()) {
      if (&inner == r.combiner.op) continue;
      if (inner.getNumOperands() == 0) { // a constant: made once, then splat
        map.map(inner.getResult(0), splat(b.clone(inner)->getResult(0)));
        continue;
      }
      for (Value operand : inner.getOperands())
        if (operand.getParentBlock() != &body) lookup(operand);
      Operation *copy = b.clone(inner, map);
      copy->getResult(0).setType(typeOf(inner.getResult(0).getType()));
    }
    return lookup(r.combiner.element());
  }
};

struct GTCPUReductionsPass : impl::GTCPUReductionsBase<GTCPUReductionsPass> {
  using GTCPUReductionsBase::GTCPUReductionsBase;

  void rewrite(const Reduction &r) {
    linalg::GenericOp op = r.op;
    OpBuilder b(op);
    Location loc = op.getLoc();
    unsigned n = op.getNumLoops();
    SmallVector<Value> sizes;
    for (Range range : cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc)) sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0), one = b.create<arith::ConstantIndexOp>(loc, 1);

    auto reduceOne = [&](OpBuilder &nested, Location, ValueRange outer) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
      Type type = r.combiner.identity.getType();
      Value reduced = sizes[n - 1];
      Value step = b.create<arith::ConstantIndexOp>(loc, lanes);
      Value main = b.create<arith::SubIOp>(loc, reduced, b.create<arith::RemUIOp>(loc, reduced, step));
      // lanes partials, each element i folded into lane i mod lanes.
      auto vectorType = VectorType::get({lanes}, type);
      Value init = b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(vectorType, r.combiner.identity));
      auto loop = b.create<scf::ForOp>(loc, zero, main, step, ValueRange{init});
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(loop.getBody());
        SmallVector<Value> ivs(outer.begin(), outer.end());
        ivs.push_back(loop.getInductionVar());
        Value element = Emitter{b, loc, r, lanes}.element(ivs);
        b.create<scf::YieldOp>(loc, r.combiner.build(b, element, loop.getRegionIterArgs()[0]));
      }
      // The lanes in order, then the tail one element at a time.
      Value total = b.create<arith::ConstantOp>(loc, r.combiner.identity);
      for (int64_t lane = 0; lane < lanes; ++lane)
        total = r.combiner.build(b, b.create<vector::ExtractOp>(loc, loop.getResult(0), lane), total);
      auto tail = b.create<scf::ForOp>(loc, main, reduced, one, ValueRange{total});
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(tail.getBody());
        SmallVector<Value> ivs(outer.begin(), outer.end());
        ivs.push_back(tail.getInductionVar());
        Value element = Emitter{b, loc, r, 0}.element(ivs);
        b.create<scf::YieldOp>(loc, r.combiner.build(b, element, tail.getRegionIterArgs()[0]));
      }
      Value output = op.getDpsInitOperand(0)->get();
      SmallVector<Value> indices = indicesAt(b, loc, op.getMatchingIndexingMap(op.getDpsInitOperand(0)),
                                                   SmallVector<Value>(outer.begin(), outer.end()));
      Value old = b.create<memref::LoadOp>(loc, output, indices);
      b.create<memref::StoreOp>(loc, r.combiner.build(b, tail.getResult(0), old), output, indices);
    };

    if (n == 1) {
      reduceOne(b, loc, {});
    } else {
      SmallVector<Value> lbs(n - 1, zero), steps(n - 1, one), ubs(sizes.begin(), sizes.end() - 1);
      b.create<scf::ParallelOp>(loc, lbs, ubs, steps, reduceOne);
    }
    op.erase();
  }

  void runOnOperation() override {
    SmallVector<Reduction> found;
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    for (linalg::GenericOp op : generics) {
      if (linalg::GenericOp collapsed = collapseInnerReductions(op)) op = collapsed;
      if (auto r = match(op)) found.push_back(*r);
      else keptDimensionsFirst(op);
    }
    for (const Reduction &r : found) rewrite(r);
  }
};
} // namespace
} // namespace mlir::gt
