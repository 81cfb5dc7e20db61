// GT's passes (Passes.td) and the dispatcher pipeline.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
class DialectRegistry;
namespace gt {

#define GEN_PASS_DECL
#include "gt/Dialect/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gt/Dialect/Passes.h.inc"

struct DispatcherPipelineOptions {
  int64_t defaultWorker = 0; ///< the session's home worker
};

/// The dispatcher's pass pipeline, in order. gt-opt exposes it as --gt-dispatcher-pipeline.
void buildDispatcherPipeline(OpPassManager &pm, const DispatcherPipelineOptions &options);

/// Registers the gt passes and the gt-dispatcher-pipeline.
void registerGTPassesAndPipelines();

/// The dialects GT's IR uses (gt, func, and the targets of gt-lower-to-linalg).
void registerGTDialects(DialectRegistry &registry);

} // namespace gt
} // namespace mlir
