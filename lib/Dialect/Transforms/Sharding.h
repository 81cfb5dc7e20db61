// Shared by the sharding passes: where a value's layout is recorded and how to read it.
#pragma once

#include "gt/Dialect/GTOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::gt {

/// Result layout of an op / layout of a function argument (#gt.sharding).
inline constexpr const char *kShardingAttr = "gt.sharding";
/// On an op: the layouts its operands must have (an array of #gt.sharding), set by
/// gt-propagate-sharding where they differ from what the operands have; gt-insert-collectives
/// materializes them and removes the attribute.
inline constexpr const char *kOperandShardingsAttr = "gt.operand_shardings";
/// On an op: the workers its signal asks it to run on (array<i64>).
inline constexpr const char *kWorkersAttr = "gt.workers";
/// On a compute op under a `shard:` signal: the signal's axis (i64, may be negative). An
/// operand that enters the op's workers from outside takes it (see gt-propagate-sharding).
inline constexpr const char *kSignalAxisAttr = "gt.signal_axis";
inline constexpr const char *kSignalAttr = "gt.signal";
inline constexpr const char *kBackwardAttr = "gt.backward";
inline constexpr const char *kCompileAttr = "gt.compile";

/// The recorded layout of `v`, if any.
inline std::optional<::gt::Sharding> recordedSharding(Value v) {
  ShardingAttr attr;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), kShardingAttr);
  } else {
    attr = v.getDefiningOp()->getAttrOfType<ShardingAttr>(kShardingAttr);
  }
  if (!attr) return std::nullopt;
  return attr.toCore();
}

/// The worker an unsharded value lives on (`gt.worker` of its op or argument), if known.
inline std::optional<int64_t> recordedWorker(Value v) {
  IntegerAttr attr;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      attr = func.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), "gt.worker");
  } else {
    attr = v.getDefiningOp()->getAttrOfType<IntegerAttr>("gt.worker");
  }
  if (!attr) return std::nullopt;
  return attr.getInt();
}

inline void setSharding(Operation *op, const ::gt::Sharding &s) {
  op->setAttr(kShardingAttr, ShardingAttr::fromCore(op->getContext(), s));
}

} // namespace mlir::gt
