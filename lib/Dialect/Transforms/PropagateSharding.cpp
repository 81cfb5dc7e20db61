// gt-propagate-sharding: per-op rules give each result a layout and say which operand layouts
// an op needs (see Passes.td for the rules).
#include "Sharding.h"

#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace mlir::gt {
#define GEN_PASS_DEF_GTPROPAGATESHARDING
#include "gt/Dialect/Passes.h.inc"

namespace {
namespace core = ::gt;
using core::OpCode;
using core::Sharding;

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
int64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getNumElements() * std::max<int64_t>(1, int64_t(t.getElementTypeBitWidth()) / 8);
}

/// What an op needs and makes: required operand layouts and the result layout (all on the
/// op's worker group).
struct Plan {
  std::vector<Sharding> operands;
  Sharding result;
};

class Propagator {
public:
  Propagator(int64_t defaultWorker) : defaultWorker_(defaultWorker) {}

  Sharding current(Value v) {
    if (auto it = known_.find(v); it != known_.end()) return it->second;
    if (auto s = recordedSharding(v)) return known_[v] = *s;
    return known_[v] = Sharding::replicated({recordedWorker(v).value_or(defaultWorker_)});
  }

  void visit(Operation *op) {
    const core::OpInfo *info = opInfoOf(op);
    if (!info || op->getNumResults() != 1) return; // free, send: nothing to lay out
    std::vector<Sharding> in;
    for (Value v : op->getOperands()) in.push_back(current(v));
    std::vector<int64_t> group = groupOf(op, in);
    splitEntering(op, in, group);
    // Operands from another group keep their kind here; insert-collectives moves them.
    for (Sharding &s : in) s.workers = group;
    Plan plan = rule(op, *info, in, group);
    Value result = op->getResult(0);
    known_[result] = plan.result;
    setSharding(op, plan.result);
    bool differs = false;
    for (size_t i = 0; i < plan.operands.size(); ++i)
      differs |= !(plan.operands[i] == current(op->getOperand(unsigned(i))));
    if (differs) {
      SmallVector<Attribute> attrs;
      for (const Sharding &s : plan.operands) attrs.push_back(ShardingAttr::fromCore(op->getContext(), s));
      op->setAttr(kOperandShardingsAttr, ArrayAttr::get(op->getContext(), attrs));
    }
  }

private:
  /// Under a `shard:` signal (gt.signal_axis), when no operand is split or partial: the first
  /// operand that comes from outside the op's workers and has at least one row per worker
  /// along the signal's axis is moved in split along it.
  void splitEntering(Operation *op, std::vector<Sharding> &in, const std::vector<int64_t> &group) {
    auto axisAttr = op->getAttrOfType<IntegerAttr>(kSignalAxisAttr);
    if (!axisAttr || group.size() < 2) return;
    for (const Sharding &s : in)
      if (!s.isReplicated()) return;
    for (size_t i = 0; i < in.size(); ++i) {
      bool inside = std::all_of(group.begin(), group.end(), [&](int64_t w) {
        return std::find(in[i].workers.begin(), in[i].workers.end(), w) != in[i].workers.end();
      });
      if (inside) continue;
      int64_t r = rankOf(op->getOperand(unsigned(i))), axis = axisAttr.getInt() < 0 ? axisAttr.getInt() + r : axisAttr.getInt();
      if (axis < 0 || axis >= r || shapeOf(op->getOperand(unsigned(i)))[axis] < int64_t(group.size())) continue;
      in[i] = Sharding::split(axis, in[i].workers);
      return;
    }
  }

  /// About how many bytes running `op` on `group` moves in: each operand's bytes times the
  /// workers of `group` that lack it (all of them for a split or partial operand of another
  /// group: a rough count that charges it as if whole).
  static int64_t movedBytes(Operation *op, const std::vector<Sharding> &in, const std::vector<int64_t> &group) {
    int64_t cost = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      int64_t missing = 0;
      if (in[i].isReplicated())
        for (int64_t w : group) missing += !llvm::is_contained(in[i].workers, w);
      else if (in[i].workers != group)
        missing = int64_t(group.size());
      cost += missing * bytesOf(op->getOperand(unsigned(i)));
    }
    return cost;
  }

  std::vector<int64_t> groupOf(Operation *op, const std::vector<Sharding> &in) {
    if (auto w = op->getAttrOfType<DenseI64ArrayAttr>(kWorkersAttr))
      return std::vector<int64_t>(w.asArrayRef().begin(), w.asArrayRef().end());
    if (auto s = op->getAttrOfType<ShardingAttr>(kShardingAttr)) return s.toCore().workers; // from a signal
    // No signal: the largest worker group among the operands, scalars (0-d: a Python number)
    // aside unless every operand is one, so a scalar goes to the data and not the data to the
    // scalar. Between groups of one size, the one that needs the fewest bytes moved in; then
    // the earlier operand's.
    bool allScalars = llvm::all_of(op->getOperands(), [](Value v) { return rankOf(v) == 0; });
    const Sharding *best = nullptr;
    int64_t bestCost = 0;
    for (size_t j = 0; j < in.size(); ++j) {
      const Sharding &candidate = in[j];
      if (!allScalars && rankOf(op->getOperand(unsigned(j))) == 0) continue;
      if (best && candidate.workers.size() < best->workers.size()) continue;
      int64_t cost = movedBytes(op, in, candidate.workers);
      if (!best || candidate.workers.size() > best->workers.size() || cost < bestCost) {
        best = &candidate;
        bestCost = cost;
      }
    }
    if (best) return best->workers;
    if (auto w = op->getAttrOfType<IntegerAttr>("gt.worker")) return {w.getInt()};
    return {defaultWorker_};
  }

  Plan rule(Operation *op, const core::OpInfo &info, std::vector<Sharding> in, const std::vector<int64_t> &group) {
    Sharding repl = Sharding::replicated(group);
    auto split = [&](int64_t axis) { return Sharding::split(axis, group); };
    auto partial = [&](core::ReduceKind r) { return Sharding::partial(r, group); };
    auto replicatedPlan = [&] { return Plan{std::vector<Sharding>(in.size(), repl), repl}; };
    // Resolves partial operands (all_reduce) unless the rule keeps them.
    auto resolvePartials = [&] {
      for (Sharding &s : in)
        if (s.isPartial()) s = repl;
    };
    int64_t rank = rankOf(op->getResult(0));
    if (group.size() == 1) return replicatedPlan(); // one worker: every layout is "replicated"

    switch (info.sharding) {
    case core::ShardingRule::Replicated: return replicatedPlan();
    case core::ShardingRule::Creation:
      if (auto s = op->getAttrOfType<ShardingAttr>(kShardingAttr)) return {{}, s.toCore()};
      return replicatedPlan();
    case core::ShardingRule::Batch: case core::ShardingRule::OutsideAxes: {
      // One operand, the result of its shape: a split axis the op computes along (the last
      // two for Batch, the axes its axis attributes name for OutsideAxes) is gathered first.
      resolvePartials();
      const Sharding &x = in[0];
      if (!x.isSplit()) return replicatedPlan();
      bool along = info.sharding == core::ShardingRule::Batch && x.axis >= rank - 2;
      core::OpAttrs attrs = attrsOf(op);
      for (const core::AttrSpec &spec : info.attrs) {
        if (!spec.namesAxes || info.sharding != core::ShardingRule::OutsideAxes) continue;
        std::vector<int64_t> axes = spec.type == core::AttrType::I64Array ? core::getInts(attrs, spec)
                                                                          : std::vector<int64_t>{core::getInt(attrs, spec)};
        along |= llvm::is_contained(axes, x.axis);
      }
      if (along) return replicatedPlan();
      return {{x}, x};
    }
    case core::ShardingRule::FirstAxis: {
      // One operand whose first axis is the result's (the batch of im2col, col2im): split along
      // it, the op runs on each worker's rows; split along another axis, it is gathered first.
      resolvePartials();
      const Sharding &x = in[0];
      if (!x.isSplit() || x.axis != 0) return replicatedPlan();
      return {{x}, x};
    }
    case core::ShardingRule::Windows: {
      // convolution(input, weight), convolution_backward_input(output_grad, weight) and
      // max_pool(input): the first operand's batch split, a weight whole, the result split
      // along its batch. max_pool_backward(output_grad, input): both split along the batch, and
      // the result. convolution_backward_weight(output_grad, input): both split, each worker's
      // weight gradient a partial sum over its block of the batch.
      resolvePartials();
      bool weightGrad = info.code == OpCode::ConvolutionBackwardWeight;
      bool bothBatches = weightGrad || info.code == OpCode::MaxPoolBackward;
      auto batchSplit = [](const Sharding &s) { return s.isSplit() && s.axis == 0; };
      bool second = in.size() > 1 && bothBatches && batchSplit(in[1]);
      if (!batchSplit(in[0]) && !second) return replicatedPlan();
      const Sharding &s = batchSplit(in[0]) ? in[0] : in[1];
      if (in.size() == 1) return {{s}, s};
      if (weightGrad) return {{s, s}, partial(core::ReduceKind::Sum)};
      if (bothBatches) return {{s, s}, s};
      return {{s, repl}, s};
    }
    case core::ShardingRule::Distribution: {
      if (info.code == OpCode::Shard) {
        auto s = op->getAttrOfType<ShardingAttr>(kShardingAttr);
        Sharding target = s ? s.toCore() : in[0];
        return {{target}, target};
      }
      return {in, in.empty() ? repl : in[0]};
    }
    case core::ShardingRule::Elementwise: {
      bool allPartialSum = (info.code == OpCode::Add || info.code == OpCode::Sub) && in.size() == 2;
      for (const Sharding &s : in) allPartialSum &= s.isPartial() && s.reduce == core::ReduceKind::Sum;
      if (allPartialSum) return {in, partial(core::ReduceKind::Sum)};
      resolvePartials();
      // The first split operand (in result coordinates) decides the result's split axis.
      int64_t axis = -1;
      for (size_t i = 0; i < in.size() && axis < 0; ++i) {
        int64_t r = rankOf(op->getOperand(unsigned(i)));
        if (in[i].isSplit() && shapeOf(op->getOperand(unsigned(i)))[in[i].axis] != 1) axis = in[i].axis + rank - r;
      }
      if (axis < 0) return replicatedPlan();
      Plan p{{}, split(axis)};
      for (size_t i = 0; i < in.size(); ++i) {
        int64_t r = rankOf(op->getOperand(unsigned(i))), own = axis - (rank - r);
        bool along = own >= 0 && shapeOf(op->getOperand(unsigned(i)))[own] != 1;
        p.operands.push_back(along ? split(own) : repl);
      }
      return p;
    }
    case core::ShardingRule::Matmul: {
      resolvePartials();
      int64_t ra = rankOf(op->getOperand(0)), rb = rankOf(op->getOperand(1));
      if (ra < 2 || rb < 2) return replicatedPlan();
      const Sharding &a = in[0], &b = in[1];
      int64_t ak = ra - 1, bk = rb - 2, bn = rb - 1;
      ArrayRef<int64_t> shapeOut = shapeOf(op->getResult(0));
      // A split batch axis (batch dims broadcast from the right, as numpy.matmul): the other
      // operand is split on the same output axis, or whole where it broadcasts (size 1 / absent).
      auto batchPlan = [&](const Sharding &s, int64_t rs, Value other, int64_t ro, bool sIsA) -> std::optional<Plan> {
        int64_t out = s.axis + rank - rs;
        if (shapeOf(sIsA ? op->getOperand(0) : op->getOperand(1))[s.axis] != shapeOut[out]) return std::nullopt;
        int64_t o = out - (rank - ro);
        Sharding need = (o >= 0 && shapeOf(other)[o] != 1) ? split(o) : repl;
        if (sIsA) return Plan{{s, need}, split(out)};
        return Plan{{need, s}, split(out)};
      };
      if (a.isSplit() && a.axis < ra - 2)
        if (auto plan = batchPlan(a, ra, op->getOperand(1), rb, true)) return *plan;
      if (b.isSplit() && b.axis < rb - 2)
        if (auto plan = batchPlan(b, rb, op->getOperand(0), ra, false)) return *plan;
      if (a.isSplit() && a.axis == ra - 2) // rows of a: b must be whole
        return {{a, repl}, split(a.axis + rank - ra)};
      if (a.isSplit() && a.axis == ak) // contraction split: b's k rows locally, partial sums
        return {{a, split(bk)}, partial(core::ReduceKind::Sum)};
      if (b.isSplit() && b.axis == bn) return {{repl, b}, split(rank - 1)}; // column-parallel
      if (b.isSplit() && b.axis == bk) return {{split(ak), b}, partial(core::ReduceKind::Sum)}; // row-parallel
      return replicatedPlan();
    }
    case core::ShardingRule::Reduction: {
      resolvePartials();
      const Sharding &x = in[0];
      if (!x.isSplit()) return replicatedPlan();
      core::OpAttrs attrs = attrsOf(op);
      std::vector<int64_t> axes = core::normalizeAxes(attrs.axes, rankOf(op->getOperand(0)));
      bool reduced = std::find(axes.begin(), axes.end(), x.axis) != axes.end();
      if (!reduced) {
        int64_t before = attrs.keepdims ? 0 : std::count_if(axes.begin(), axes.end(), [&](int64_t a) { return a < x.axis; });
        return {{x}, split(x.axis - before)};
      }
      // A split reduced axis: each worker reduces its block, and the results are partial
      // (sum, mean: sums; max; min) unless the op has no such kind (argmax): gathered first.
      if (info.partial < 0) return replicatedPlan();
      return {{x}, partial(core::ReduceKind(info.partial))};
    }
    case core::ShardingRule::Layout: {
      Value x0 = op->getOperand(0);
      ArrayRef<int64_t> inShape = shapeOf(x0), outShape = shapeOf(op->getResult(0));
      bool linear = info.code == OpCode::Transpose || info.code == OpCode::Reshape ||
                    info.code == OpCode::Slice || info.code == OpCode::BroadcastTo;
      if (linear && in[0].isPartial() && in[0].reduce == core::ReduceKind::Sum &&
          info.code != OpCode::BroadcastTo)
        return {{in[0]}, in[0]}; // a linear map of a sum is the sum of the maps
      resolvePartials();
      const Sharding &x = in[0];
      core::OpAttrs attrs = attrsOf(op);
      switch (info.code) {
      case OpCode::Transpose:
        if (!x.isSplit()) return replicatedPlan();
        for (int64_t i = 0; i < rank; ++i)
          if (attrs.axes[size_t(i)] == x.axis) return {{x}, split(i)};
        return replicatedPlan();
      case OpCode::Reshape: {
        if (!x.isSplit()) return replicatedPlan();
        int64_t before = 1;
        for (int64_t i = 0; i < x.axis; ++i) before *= inShape[i];
        int64_t acc = 1;
        // The output dim starting where the split axis starts: the same dim, the split axis
        // merged with the dims after it ((B, T, V) -> (B*T, V)), or split into several
        // ((B*T, V) -> (B, T, V)). Merges and splits keep each worker's rows contiguous; they
        // keep the split only if every worker's block is the block it would hold of the new
        // dim (true when the group's size divides the split axis).
        int64_t j = 0;
        for (; j < rank && acc < before; ++j) acc *= outShape[j];
        if (acc != before || j >= rank) return replicatedPlan();
        int64_t inDim = inShape[x.axis], outDim = outShape[j];
        if (inDim == outDim) return {{x}, split(j)};
        auto count = int64_t(x.workers.size());
        auto aligned = [&](int64_t whole, int64_t part) { // blocks of `part` scale to blocks of `whole`
          if (part <= 0 || whole % part != 0) return false;
          for (int64_t r = 0; r < count; ++r) {
            auto [b0, e0] = core::splitRange(part, count, r);
            auto [b1, e1] = core::splitRange(whole, count, r);
            if (b0 * (whole / part) != b1 || e0 * (whole / part) != e1) return false;
          }
          return true;
        };
        if (outDim > inDim && aligned(outDim, inDim)) { // merged with the following dims
          int64_t merged = 1;
          for (int64_t i = x.axis; i < int64_t(inShape.size()) && merged < outDim; ++i) merged *= inShape[i];
          if (merged == outDim) return {{x}, split(j)};
        }
        if (outDim < inDim && aligned(inDim, outDim)) { // split into (outDim, ...)
          int64_t produced = 1;
          for (int64_t k = j; k < rank && produced < inDim; ++k) produced *= outShape[k];
          if (produced == inDim) return {{x}, split(j)};
        }
        return replicatedPlan();
      }
      case OpCode::BroadcastTo:
        if (x.isSplit() && inShape[x.axis] != 1) return {{x}, split(x.axis + rank - rankOf(x0))};
        return replicatedPlan();
      case OpCode::Slice:
        if (x.isSplit() && attrs.starts[size_t(x.axis)] == 0 && attrs.steps[size_t(x.axis)] == 1 &&
            outShape[x.axis] == inShape[x.axis])
          return {{x}, x};
        return replicatedPlan();
      case OpCode::SliceScatter: {
        ArrayRef<int64_t> srcShape = shapeOf(op->getOperand(1));
        if (x.isSplit() && attrs.starts[size_t(x.axis)] == 0 && attrs.steps[size_t(x.axis)] == 1 &&
            srcShape[x.axis] == inShape[x.axis])
          return {{x, x}, x};
        return replicatedPlan();
      }
      case OpCode::Concat: {
        int64_t cat = attrs.axes.at(0);
        for (const Sharding &s : in)
          if (s.isSplit() && s.axis != cat) return {std::vector<Sharding>(in.size(), split(s.axis)), split(s.axis)};
        return replicatedPlan();
      }
      default: return replicatedPlan();
      }
    }
    case core::ShardingRule::Index: {
      resolvePartials();
      core::OpAttrs attrs = attrsOf(op);
      int64_t c = attrs.axes.empty() ? 0 : attrs.axes[0];
      switch (info.code) {
      case OpCode::OneHot:
        if (in[0].isSplit()) return {{in[0]}, split(in[0].axis)};
        return replicatedPlan();
      case OpCode::IndexSelect: // (x, idx)
        if (in[0].isSplit() && in[0].axis != c) return {{in[0], repl}, split(in[0].axis)};
        if (in[1].isSplit()) return {{repl, in[1]}, split(c)}; // rows of a whole table
        return replicatedPlan();
      case OpCode::IndexAdd: // (idx, src): idx picks rows of src along c
        if (in[0].isSplit() && in[1].isSplit() && in[1].axis == c) return {{in[0], in[1]}, partial(core::ReduceKind::Sum)};
        if (in[1].isSplit() && in[1].axis != c) return {{repl, in[1]}, split(in[1].axis)};
        return replicatedPlan();
      case OpCode::Gather: // (x, idx), same rank
        if (in[1].isSplit() && in[1].axis != c) return {{split(in[1].axis), in[1]}, split(in[1].axis)};
        if (in[0].isSplit() && in[0].axis != c) return {{in[0], split(in[0].axis)}, split(in[0].axis)};
        return replicatedPlan();
      case OpCode::ScatterAdd: // (idx, src), same rank
        if (in[1].isSplit() && in[1].axis == c) return {{split(c), in[1]}, partial(core::ReduceKind::Sum)};
        if (in[1].isSplit()) return {{split(in[1].axis), in[1]}, split(in[1].axis)};
        return replicatedPlan();
      default: return replicatedPlan();
      }
    }
    }
    return replicatedPlan();
  }

  int64_t defaultWorker_;
  llvm::DenseMap<Value, Sharding> known_;
};

struct GTPropagateShardingPass : impl::GTPropagateShardingBase<GTPropagateShardingPass> {
  using GTPropagateShardingBase::GTPropagateShardingBase;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      Propagator p(defaultWorker);
      func.walk([&](Operation *op) { p.visit(op); });
    }
  }
};
} // namespace
} // namespace mlir::gt
