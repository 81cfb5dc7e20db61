// gt-cpu-reductions: a bufferized linalg reduction over its innermost loop dimensions (a row sum,
// softmax's max and sum, LayerNorm's statistics, a full reduction) folds `lanes` interleaved
// partial results in a vector, so the element computation and the combine vectorize; then the
// lanes in order, then the tail. Element f of the reduced elements in loop order always goes to
// lane f mod `lanes`, whatever the layout of the inputs, so eager kernels (dynamic sizes, inputs
// as they were stored) and fused kernels (static, inputs broadcast or transposed inside) that
// both run this pass agree bit for bit.
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
#include "llvm/ADT/SmallBitVector.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTCPUREDUCTIONS
#include "gt/Dialect/Passes.h.inc"

namespace {

/// How an input is read along the reduced dimension.
enum class Read {
  Vector,    ///< contiguous along it: one vector load
  Lanes,     ///< one element per lane, loaded one at a time: bools (a vector<8xi1> is 8 bits in
             ///< memory but a memref's i1 is a byte each), or an input strided along it (a
             ///< transposed view)
  Broadcast, ///< does not depend on it: one load, splat
  Value      ///< a scalar operand, splat
};

struct Reduction {
  linalg::GenericOp op;
  Combiner combiner;
  SmallVector<Read> reads;     ///< one per input
  SmallVector<unsigned> lane;  ///< per input: which of its indices the innermost loop moves (Vector, Lanes)
  unsigned reduced = 1;        ///< the innermost loops that reduce (all that do)
  bool vectorize = true;       ///< false: the lanes kept one element at a time (see rewrite)
};

bool scalar(Type t) { return t.isIntOrFloat(); }

/// Each index of `map` is a loop index (none twice) or 0: a projected permutation with zeros,
/// also one with more indices than loops (a 1x1 operand of a reduction collapsed to one loop).
bool atLoopIndices(AffineMap map) {
  llvm::SmallBitVector seen(map.getNumDims());
  for (AffineExpr e : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) {
      if (seen.test(dim.getPosition())) return false;
      seen.set(dim.getPosition());
    } else if (auto c = dyn_cast<AffineConstantExpr>(e); !c || c.getValue() != 0) {
      return false;
    }
  }
  return map.getNumSymbols() == 0;
}

/// `op` reduces over its innermost loop dimensions (one or more; every reduced loop inside every
/// kept one), its inputs are read at loop indices (projected permutations), and its body is
/// arith/math on numbers: the pass can rewrite it. One reduced loop, or a static innermost one
/// whose length is a multiple of `lanes`: vector code; otherwise the lanes one element at a time.
std::optional<Reduction> match(linalg::GenericOp op, int64_t lanes) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op.getNumReductionLoops() < 1) return std::nullopt;
  unsigned n = op.getNumLoops(), k = op.getNumReductionLoops();
  auto iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d < n; ++d)
    if ((iterators[d] == utils::IteratorType::reduction) != (d >= n - k)) return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!atLoopIndices(map)) return std::nullopt;
  auto combiner = matchCombiner(op);
  if (!combiner) return std::nullopt;
  Type type = combiner->identity.getType();
  if (!(type.isF32() || type.isF64() || type.isInteger(32) || type.isInteger(64))) return std::nullopt;
  Reduction r{op, *combiner, {}, {}, k, true};
  if (k > 1) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    r.vectorize = ranges.size() == n && !ShapedType::isDynamic(ranges.back()) && ranges.back() % lanes == 0;
  }
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto memref = dyn_cast<MemRefType>(input->get().getType());
    if (!memref) {
      if (!scalar(input->get().getType())) return std::nullopt;
      r.reads.push_back(Read::Value);
      r.lane.push_back(0);
      continue;
    }
    if (!scalar(memref.getElementType())) return std::nullopt;
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isFunctionOfDim(n - 1)) {
      r.reads.push_back(Read::Broadcast);
      r.lane.push_back(0);
      continue;
    }
    unsigned at = *map.getResultPosition(getAffineDimExpr(n - 1, op.getContext()));
    r.lane.push_back(at);
    // One vector load: the memref's innermost dimension, unit stride, whole bytes.
    SmallVector<int64_t> strides;
    int64_t offset;
    bool contiguous = at + 1 == map.getNumResults() && succeeded(getStridesAndOffset(memref, strides, offset)) &&
                      strides.back() == 1 && memref.getElementType().getIntOrFloatBitWidth() % 8 == 0;
    r.reads.push_back(contiguous ? Read::Vector : Read::Lanes);
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
    for (auto [input, read, at] : llvm::zip(op.getDpsInputOperands(), r.reads, r.lane)) {
      Value value = input->get();
      if (read != Read::Value) {
        SmallVector<Value> indices = indicesAt(b, loc, op.getMatchingIndexingMap(input), ivs);
        auto memref = cast<MemRefType>(value.getType());
        if (read == Read::Vector && lanes) {
          value = b.create<vector::LoadOp>(loc, VectorType::get({lanes}, memref.getElementType()), value, indices);
        } else if (read == Read::Lanes && lanes) {
          Value lanesV = b.create<arith::ConstantOp>(loc, b.getZeroAttr(VectorType::get({lanes}, memref.getElementType())));
          for (int64_t lane = 0; lane < lanes; ++lane) {
            SmallVector<Value> shifted = indices;
            shifted[at] = b.create<arith::AddIOp>(loc, shifted[at], b.create<arith::ConstantIndexOp>(loc, lane));
            lanesV = b.create<vector::InsertOp>(loc, b.create<memref::LoadOp>(loc, value, shifted), lanesV, lane);
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

  /// Elements of a block of a full reduction: a multiple of every `lanes`.
  static constexpr int64_t kBlock = 8192;

  /// Whether the full reduction `r` (no kept dimension) runs in blocks: at least two whole
  /// blocks, or sizes known only at run time (an eager kernel, which then has as many blocks as
  /// its sizes give, perhaps none).
  bool blocked(const Reduction &r) {
    int64_t count = 1;
    linalg::GenericOp op = r.op;
    for (int64_t size : op.getStaticLoopRanges()) {
      if (ShapedType::isDynamic(size)) return true;
      count *= size;
    }
    return (count - count % lanes) / kBlock >= 2;
  }

  /// A full reduction over its flat index f in blocks of kBlock elements: an scf.parallel over
  /// the whole blocks (gt-cpu-parallel-loops puts it on the worker's threads when it is large
  /// enough), each block's `lanes` partials from the identity, element f in lane f mod `lanes`
  /// as always; then, on one thread, the blocks' partials combined in block order, the
  /// elements after the last whole block folded in, the lanes in order, the tail. The order
  /// depends only on the sizes. With fewer than two whole blocks it is the order of
  /// reduceOne's loops, which static sizes then take (combining one block's partials with the
  /// identity changes no value), so eager and fused kernels agree bit for bit either way.
  /// With several reduced dimensions each element's loop indices come from f by division (a
  /// vector's, when the innermost length is a static multiple of `lanes`; else each element
  /// alone, the lanes one at a time).
  void reduceAllInBlocks(const Reduction &r, OpBuilder &b, ArrayRef<Value> sizes) {
    linalg::GenericOp op = r.op;
    Location loc = op.getLoc();
    unsigned k = r.reduced;
    bool vector = k == 1 || r.vectorize;
    Type type = r.combiner.identity.getType();
    auto vectorType = VectorType::get({lanes}, type);
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0), one = b.create<arith::ConstantIndexOp>(loc, 1);
    Value step = b.create<arith::ConstantIndexOp>(loc, lanes), block = b.create<arith::ConstantIndexOp>(loc, kBlock);
    auto identities = [&] {
      return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(vectorType, r.combiner.identity)).getResult();
    };
    // (Folded to constants for static sizes: gt-cpu-parallel-loops counts the blocks' work.)
    Value count = sizes[0];
    for (unsigned d = 1; d < k; ++d) count = b.createOrFold<arith::MulIOp>(loc, count, sizes[d]);
    Value main = b.createOrFold<arith::SubIOp>(loc, count, b.createOrFold<arith::RemUIOp>(loc, count, step));
    Value blocks = b.createOrFold<arith::DivUIOp>(loc, main, block);
    Value blocked = b.createOrFold<arith::MulIOp>(loc, blocks, block);

    auto indicesOf = [&](Value f) { // the loop indices of flat index f
      SmallVector<Value> ivs(k);
      for (unsigned i = k; i-- > 0;) {
        ivs[i] = i == 0 ? f : b.create<arith::RemUIOp>(loc, f, sizes[i]).getResult();
        if (i > 0) f = b.create<arith::DivUIOp>(loc, f, sizes[i]);
      }
      return ivs;
    };
    // Elements start .. start + length - 1 (start a multiple of lanes) folded into `init`.
    auto fold = [&](Value start, Value length, Value init) {
      auto loop = b.create<scf::ForOp>(loc, zero, length, vector ? step : one, ValueRange{init});
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i = loop.getInductionVar(), acc = loop.getRegionIterArgs()[0];
      SmallVector<Value> ivs = indicesOf(b.create<arith::AddIOp>(loc, start, i));
      Value next;
      if (vector) {
        next = r.combiner.build(b, Emitter{b, loc, r, lanes}.element(ivs), acc);
      } else {
        Value lane = b.create<arith::RemUIOp>(loc, i, step);
        Value old = b.create<vector::ExtractElementOp>(loc, acc, lane);
        Value folded = r.combiner.build(b, Emitter{b, loc, r, 0}.element(ivs), old);
        next = b.create<vector::InsertElementOp>(loc, folded, acc, lane);
      }
      b.create<scf::YieldOp>(loc, next);
      return loop.getResult(0);
    };

    auto partialsType = MemRefType::get({ShapedType::kDynamic}, vectorType);
    Value partials = b.create<memref::AllocOp>(loc, partialsType, ValueRange{blocks});
    b.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{blocks}, ValueRange{one},
                              [&](OpBuilder &nested, Location, ValueRange index) {
                                OpBuilder::InsertionGuard g(b);
                                b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
                                Value start = b.create<arith::MulIOp>(loc, index[0], block);
                                Value acc = fold(start, block, identities());
                                b.create<memref::StoreOp>(loc, acc, partials, index[0]);
                              });
    auto combine = b.create<scf::ForOp>(loc, zero, blocks, one, ValueRange{identities()});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(combine.getBody());
      Value p = b.create<memref::LoadOp>(loc, partials, combine.getInductionVar());
      b.create<scf::YieldOp>(loc, r.combiner.build(b, p, combine.getRegionIterArgs()[0]));
    }
    Value acc = fold(blocked, b.createOrFold<arith::SubIOp>(loc, main, blocked), combine.getResult(0));
    b.create<memref::DeallocOp>(loc, partials);
    Value total = b.create<arith::ConstantOp>(loc, r.combiner.identity);
    for (int64_t lane = 0; lane < lanes; ++lane)
      total = r.combiner.build(b, b.create<vector::ExtractOp>(loc, acc, lane), total);
    auto tail = b.create<scf::ForOp>(loc, main, count, one, ValueRange{total});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(tail.getBody());
      Value element = Emitter{b, loc, r, 0}.element(indicesOf(tail.getInductionVar()));
      b.create<scf::YieldOp>(loc, r.combiner.build(b, element, tail.getRegionIterArgs()[0]));
    }
    Value output = op.getDpsInitOperand(0)->get();
    SmallVector<Value> indices = indicesAt(b, loc, op.getMatchingIndexingMap(op.getDpsInitOperand(0)), {});
    Value old = b.create<memref::LoadOp>(loc, output, indices);
    b.create<memref::StoreOp>(loc, r.combiner.build(b, tail.getResult(0), old), output, indices);
  }

  /// `r` as loops: an scf.parallel over the kept dimensions (none: the code as it is) around,
  /// per output element, the reduced elements in their loop order (flat index f), element f
  /// folded into lane f mod `lanes` over the largest multiple of `lanes` elements, then the
  /// lanes in order 0, 1, ..., then the remaining elements one at a time, then the output.
  /// One reduced loop: a vector loop. Several: loops over the outer reduced dimensions around
  /// the innermost one, a vector loop when its length is a static multiple of `lanes` (each
  /// vector then holds flat indices f..f+lanes-1, and no element is left over); else scalar loops
  /// carrying the lanes and their lane index. Every form folds the same elements in the same
  /// order, so a fused kernel agrees bit for bit with an eager one whose input was collapsed to
  /// one row (a full sum of `x + b` against the sum of the tensor `x + b`).
  void rewrite(const Reduction &r) {
    linalg::GenericOp op = r.op;
    OpBuilder b(op);
    Location loc = op.getLoc();
    unsigned n = op.getNumLoops(), k = r.reduced;
    SmallVector<Value> sizes;
    for (Range range : cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc)) sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0), one = b.create<arith::ConstantIndexOp>(loc, 1);
    Type type = r.combiner.identity.getType();
    auto vectorType = VectorType::get({lanes}, type);

    auto lanesInOrder = [&](Value partials) {
      Value total = b.create<arith::ConstantOp>(loc, r.combiner.identity);
      for (int64_t lane = 0; lane < lanes; ++lane)
        total = r.combiner.build(b, b.create<vector::ExtractOp>(loc, partials, lane), total);
      return total;
    };
    auto ivsAt = [&](ValueRange outer, ValueRange inner) {
      SmallVector<Value> ivs(outer.begin(), outer.end());
      ivs.append(inner.begin(), inner.end());
      return ivs;
    };

    auto reduceOne = [&](OpBuilder &nested, Location, ValueRange outer) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
      Value step = b.create<arith::ConstantIndexOp>(loc, lanes);
      auto identities = [&] {
        return b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(vectorType, r.combiner.identity)).getResult();
      };
      Value total;
      if (k == 1 || r.vectorize) {
        // The outer reduced loops (if any) around a vector loop over the innermost one.
        Value reduced = sizes[n - 1];
        Value main = b.create<arith::SubIOp>(loc, reduced, b.create<arith::RemUIOp>(loc, reduced, step));
        Value init = identities();
        SmallVector<Value> lbs(k, zero), ubs(sizes.begin() + (n - k), sizes.end()), steps(k - 1, one);
        ubs.back() = main;
        steps.push_back(step);
        scf::LoopNest loops = scf::buildLoopNest(
            b, loc, lbs, ubs, steps, ValueRange{init}, [&](OpBuilder &inner, Location, ValueRange ivs, ValueRange acc) {
              Value element = Emitter{inner, loc, r, lanes}.element(ivsAt(outer, ivs));
              return scf::ValueVector{r.combiner.build(inner, element, acc[0])};
            });
        b.setInsertionPointAfter(loops.loops.front());
        total = lanesInOrder(loops.results[0]);
        if (k == 1) { // the tail (several loops: the innermost length is a multiple of lanes)
          auto tail = b.create<scf::ForOp>(loc, main, reduced, one, ValueRange{total});
          OpBuilder::InsertionGuard g(b);
          b.setInsertionPointToStart(tail.getBody());
          Value element = Emitter{b, loc, r, 0}.element(ivsAt(outer, {tail.getInductionVar()}));
          b.create<scf::YieldOp>(loc, r.combiner.build(b, element, tail.getRegionIterArgs()[0]));
          b.setInsertionPointAfter(tail);
          total = tail.getResult(0);
        }
      } else {
        // Scalar loops carrying the lanes, the current lane and the flat index.
        Value count = one;
        for (unsigned d = n - k; d < n; ++d) count = b.create<arith::MulIOp>(loc, count, sizes[d]);
        Value main = b.create<arith::SubIOp>(loc, count, b.create<arith::RemUIOp>(loc, count, step));
        Value init = identities();
        SmallVector<Value> lbs(k, zero), ubs(sizes.begin() + (n - k), sizes.end()), steps(k, one);
        scf::LoopNest loops = scf::buildLoopNest(
            b, loc, lbs, ubs, steps, ValueRange{init, zero, zero},
            [&](OpBuilder &inner, Location, ValueRange ivs, ValueRange args) {
              Value acc = args[0], lane = args[1], flat = args[2];
              Value element = Emitter{inner, loc, r, 0}.element(ivsAt(outer, ivs));
              Value old = inner.create<vector::ExtractElementOp>(loc, acc, lane);
              Value folded = inner.create<vector::InsertElementOp>(loc, r.combiner.build(inner, element, old), acc, lane);
              Value inMain = inner.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, flat, main);
              Value next = inner.create<arith::AddIOp>(loc, lane, one);
              Value wrap = inner.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, next, step);
              return scf::ValueVector{inner.create<arith::SelectOp>(loc, inMain, folded, acc),
                                      inner.create<arith::SelectOp>(loc, wrap, zero, next),
                                      inner.create<arith::AddIOp>(loc, flat, one)};
            });
        b.setInsertionPointAfter(loops.loops.front());
        total = lanesInOrder(loops.results[0]);
        // The tail: flat indices main..count-1 (fewer than lanes), each back to its loop indices.
        auto tail = b.create<scf::ForOp>(loc, main, count, one, ValueRange{total});
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(tail.getBody());
        SmallVector<Value> ivs(k);
        Value rest = tail.getInductionVar();
        for (unsigned i = k; i-- > 0;) {
          ivs[i] = b.create<arith::RemUIOp>(loc, rest, sizes[n - k + i]);
          rest = b.create<arith::DivUIOp>(loc, rest, sizes[n - k + i]);
        }
        Value element = Emitter{b, loc, r, 0}.element(ivsAt(outer, ivs));
        b.create<scf::YieldOp>(loc, r.combiner.build(b, element, tail.getRegionIterArgs()[0]));
        b.setInsertionPointAfter(tail);
        total = tail.getResult(0);
      }
      Value output = op.getDpsInitOperand(0)->get();
      SmallVector<Value> indices = indicesAt(b, loc, op.getMatchingIndexingMap(op.getDpsInitOperand(0)),
                                             SmallVector<Value>(outer.begin(), outer.end()));
      Value old = b.create<memref::LoadOp>(loc, output, indices);
      b.create<memref::StoreOp>(loc, r.combiner.build(b, total, old), output, indices);
    };

    if (n == k && blocked(r)) {
      reduceAllInBlocks(r, b, sizes);
    } else if (n == k) {
      reduceOne(b, loc, {});
    } else {
      SmallVector<Value> lbs(n - k, zero), steps(n - k, one), ubs(sizes.begin(), sizes.end() - k);
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
      if (auto r = match(op, lanes)) found.push_back(*r);
      else keptDimensionsFirst(op);
    }
    for (const Reduction &r : found) rewrite(r);
  }
};
} // namespace
} // namespace mlir::gt
