// gt-apply-signals: each op's `gt.signal`, looked up in the sharding config, becomes a layout
// (`gt.sharding`) for the tensors the op creates and a worker set (`gt.workers`) for compute.
#include "Sharding.h"

#include "gt/Core/Config.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTAPPLYSIGNALS
#include "gt/Dialect/Passes.h.inc"

namespace {
namespace core = ::gt;

/// Ops whose result layout a signal sets directly: tensor creation and gt.shard
/// (gt.signal.tensor). Other ops get a worker set; their layout is propagated.
bool takesLayout(core::OpCode code) {
  return code == core::OpCode::Upload || code == core::OpCode::Full || code == core::OpCode::Randn ||
         code == core::OpCode::Rand || code == core::OpCode::Shard;
}

struct GTApplySignalsPass : impl::GTApplySignalsBase<GTApplySignalsPass> {
  using GTApplySignalsBase::GTApplySignalsBase;
  GTApplySignalsPass(const core::ShardingConfig *config, int64_t workers) : external(config) {
    numWorkers = workers;
  }

  const core::ShardingConfig *external = nullptr; ///< the dispatcher's (outlives the pass)
  core::ShardingConfig loaded;                    ///< from the `config` option (gt-opt)

  LogicalResult initialize(MLIRContext *) override {
    if (external || configPath.empty()) return success();
    try {
      loaded = core::ShardingConfig::load(configPath);
      loaded.checkWorkers(numWorkers);
    } catch (const core::ConfigError &e) {
      llvm::errs() << e.what() << "\n";
      return failure();
    }
    return success();
  }

  /// GT_AUTO_SHARD's layout for a tensor created without a known signal.
  static core::Sharding autoLayout(RankedTensorType type, int64_t minBytes, const std::vector<int64_t> &all) {
    int64_t bytes = (int64_t(type.getElementTypeBitWidth()) + 7) / 8;
    for (int64_t d : type.getShape()) bytes *= d;
    if (type.getRank() > 0 && bytes >= minBytes && type.getDimSize(0) >= int64_t(all.size()))
      return core::Sharding::split(0, all);
    return core::Sharding::replicated(all);
  }

  void runOnOperation() override {
    const core::ShardingConfig &config = external ? *external : loaded;
    int64_t autoBytes = external ? external->autoShardBytes : autoShardBytes;
    if (config.empty() && autoBytes <= 0) return;
    Builder b(&getContext());
    std::vector<int64_t> all;
    for (int64_t w = 0; w < numWorkers; ++w) all.push_back(w);
    WalkResult result = getOperation().walk([&](Operation *op) -> WalkResult {
      auto signal = op->getAttrOfType<StringAttr>(kSignalAttr);
      const core::OpInfo *info = opInfoOf(op);
      if (!info || info->code == core::OpCode::Free) return WalkResult::advance();
      const core::SignalConfig *entry = signal ? config.find(signal.getValue()) : nullptr;
      if (entry && op->hasAttr(kBackwardAttr) && !entry->backward.empty()) entry = config.find(entry->backward);
      if (!entry) { // an unknown signal changes nothing, unless GT_AUTO_SHARD places the tensors made
        if (autoBytes > 0 && takesLayout(info->code) && info->code != core::OpCode::Shard)
          setSharding(op, autoLayout(cast<RankedTensorType>(op->getResult(0).getType()), autoBytes, all));
        return WalkResult::advance();
      }
      if (entry->compile) op->setAttr(kCompileAttr, b.getUnitAttr());
      if (!entry->shard && !entry->replicated) return WalkResult::advance();
      std::vector<int64_t> workers = entry->workers.empty() ? all : entry->workers;
      if (!takesLayout(info->code)) {
        op->setAttr(kWorkersAttr, b.getDenseI64ArrayAttr(workers));
        if (entry->shard && workers.size() > 1) op->setAttr(kSignalAxisAttr, b.getI64IntegerAttr(entry->axis));
        return WalkResult::advance();
      }
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      if (entry->replicated || type.getRank() == 0) { // a scalar has no axis to split: every worker gets it
        setSharding(op, core::Sharding::replicated(workers));
        return WalkResult::advance();
      }
      int64_t rank = type.getRank(), axis = entry->axis < 0 ? entry->axis + rank : entry->axis;
      if (axis < 0 || axis >= rank) {
        op->emitError() << config.where(entry->axisLine) << ": signal '" << entry->name << "' splits axis "
                        << entry->axis << ", but the tensor has rank " << rank << " (shape "
                        << core::shapeString(core::Shape(type.getShape().begin(), type.getShape().end())) << ")";
        return WalkResult::interrupt();
      }
      setSharding(op, core::Sharding::split(axis, workers));
      return WalkResult::advance();
    });
    if (result.wasInterrupted()) signalPassFailure();
  }
};
} // namespace

std::unique_ptr<Pass> createGTApplySignals(const ::gt::ShardingConfig *config, int64_t numWorkers) {
  return std::make_unique<GTApplySignalsPass>(config, numWorkers);
}

} // namespace mlir::gt
