// Capture: one batch of a session's instructions -> a `gt` dialect module -> per-worker programs.
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Core/Sharding.h"
#include "gt/Dialect/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <map>
#include <optional>

namespace gt::dispatcher {

/// What the session knows about a tensor made by an earlier batch.
struct External {
  TensorType type;
  int64_t worker = 0;                 ///< where an unsharded tensor lives
  std::optional<Sharding> sharding;   ///< set for tensors of a sharded session
};

/// Builds `func.func @batch(<tensors from earlier batches>)` with one gt op per instruction.
/// Each op carries `gt.inst` (its index in the batch) and a `file:line` location; arguments
/// carry `gt.id` and `gt.worker` (and `gt.sharding` when known). An instruction's signal
/// becomes `gt.signal` (and `gt.backward` for gradient ops). Throws std::invalid_argument naming the instruction's op and
/// location when an operand id is unknown or the op table rejects it.
mlir::OwningOpRef<mlir::ModuleOp>
captureBatch(mlir::MLIRContext &ctx, const std::vector<Instruction> &batch,
             const std::function<std::optional<External>(uint64_t)> &lookup);

/// Runs the dispatcher pipeline (mlir::gt::buildDispatcherPipeline) on a captured batch;
/// throws std::invalid_argument with the diagnostics if it fails.
/// Called with each pass's name and its start and end (monotonicNs) as the pipeline runs (gt.profiler).
using PassTimer = std::function<void(const std::string &pass, int64_t startNs, int64_t endNs)>;
void runDispatcherPipeline(mlir::ModuleOp module, const mlir::gt::DispatcherPipelineOptions &options,
                           const PassTimer &onPass = nullptr);

} // namespace gt::dispatcher
