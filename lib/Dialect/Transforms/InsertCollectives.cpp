// gt-insert-collectives: an operand whose layout differs from the one its op needs
// (`gt.operand_shardings`) is converted by collectives and moves (see Passes.td).
#include "Sharding.h"

#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>

namespace mlir::gt {
#define GEN_PASS_DEF_GTINSERTCOLLECTIVES
#include "gt/Dialect/Passes.h.inc"

namespace {
namespace core = ::gt;
using core::OpCode;
using core::Sharding;

class Inserter {
public:
  explicit Inserter(MLIRContext *ctx) : b_(ctx) {}

  void visit(Operation *op) {
    auto wanted = op->getAttrOfType<ArrayAttr>(kOperandShardingsAttr);
    if (!wanted) return;
    op->removeAttr(kOperandShardingsAttr);
    StringAttr signal = op->getAttrOfType<StringAttr>(kSignalAttr);
    for (unsigned i = 0; i < op->getNumOperands() && i < wanted.size(); ++i) {
      Value v = op->getOperand(i);
      Sharding from = layout(v), to = cast<ShardingAttr>(wanted[i]).toCore();
      if (from == to) continue;
      StringAttr cause = signal;
      if (!cause)
        if (Operation *def = v.getDefiningOp()) cause = def->getAttrOfType<StringAttr>(kSignalAttr);
      op->setOperand(i, convert(op, v, from, to, cause));
    }
  }

private:
  Sharding layout(Value v) {
    if (auto s = recordedSharding(v)) return *s;
    return Sharding::replicated({recordedWorker(v).value_or(0)});
  }

  /// One distribution op `code` on `v` producing layout `result` (same global type).
  Value emit(Operation *before, OpCode code, Value v, const core::OpAttrs &attrs, const Sharding &result, StringAttr cause) {
    b_.setInsertionPoint(before);
    Operation *op = createOp(b_, before->getLoc(), code, v, attrs, v.getType());
    setSharding(op, result);
    if (cause) op->setAttr(kSignalAttr, cause);
    return op->getResult(0);
  }

  Value convert(Operation *user, Value v, Sharding from, const Sharding &to, StringAttr cause) {
    auto key = std::make_pair(v.getAsOpaquePointer(), to.str());
    if (auto it = cache_.find(key); it != cache_.end() && it->second.getParentBlock() == user->getBlock() &&
        it->second.getDefiningOp()->isBeforeInBlock(user))
      return it->second;
    Value out = v;
    core::OpAttrs attrs;
    if (from.workers != to.workers) {
      // Resolve what cannot travel as it is, then move to the other group.
      if (from.isPartial()) {
        attrs.workers = from.workers;
        attrs.reduce = uint8_t(from.reduce);
        from = Sharding::replicated(from.workers);
        out = emit(user, OpCode::AllReduce, out, attrs, from, cause);
      } else if (from.isSplit() && (from.workers.size() != to.workers.size() || !to.isSplit() || to.axis != from.axis)) {
        attrs = {};
        attrs.workers = from.workers;
        attrs.axes = {from.axis};
        from = Sharding::replicated(from.workers);
        out = emit(user, OpCode::AllGather, out, attrs, from, cause);
      }
      attrs = {};
      attrs.sources = from.workers;
      attrs.workers = to.workers;
      if (!from.isSplit() && to.isSplit()) { // a scatter: each worker of `to` gets only its block
        out = emit(user, OpCode::Move, out, attrs, to, cause);
        cache_[key] = out;
        return out;
      }
      from.workers = to.workers;
      out = emit(user, OpCode::Move, out, attrs, from, cause);
    }
    attrs = {};
    attrs.workers = to.workers;
    if (from == to) {
      // moved as is
    } else if (from.isPartial()) {
      attrs.reduce = uint8_t(from.reduce);
      if (to.isSplit()) {
        attrs.axes = {to.axis};
        out = emit(user, OpCode::ReduceScatter, out, attrs, to, cause);
      } else { // to replicated (no rule asks for one partial kind from another)
        out = emit(user, OpCode::AllReduce, out, attrs, Sharding::replicated(to.workers), cause);
      }
    } else if (from.isSplit()) {
      if (to.isSplit()) {
        attrs.axes = {to.axis, from.axis}; // the mesh dialect's split_axis, concat_axis
        out = emit(user, OpCode::AllToAll, out, attrs, to, cause);
      } else {
        attrs.axes = {from.axis};
        out = emit(user, OpCode::AllGather, out, attrs, Sharding::replicated(to.workers), cause);
      }
    } else if (to.isSplit()) { // replicated -> split: each worker keeps its block
      attrs.axes = {to.axis};
      out = emit(user, OpCode::AllSlice, out, attrs, to, cause);
    }
    cache_[key] = out;
    return out;
  }

  OpBuilder b_;
  std::map<std::pair<void *, std::string>, Value> cache_;
};

struct GTInsertCollectivesPass : impl::GTInsertCollectivesBase<GTInsertCollectivesPass> {
  void runOnOperation() override {
    Inserter inserter(&getContext());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (op->hasAttr(kOperandShardingsAttr)) ops.push_back(op);
    });
    for (Operation *op : ops) inserter.visit(op);
  }
};
} // namespace
} // namespace mlir::gt
