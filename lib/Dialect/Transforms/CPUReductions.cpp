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
    getOperation().walk([&](linalg::GenericOp op) {
      if (auto r = match(op)) found.push_back(*r);
    });
    for (const Reduction &r : found) rewrite(r);
  }
};
} // namespace
} // namespace mlir::gt
