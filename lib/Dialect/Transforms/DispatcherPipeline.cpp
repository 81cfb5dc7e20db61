// The dispatcher's pass pipeline, written once; gt-opt and the dispatcher both call it. Also
// registers every gt pass and pipeline for gt-opt.
#include "gt/Dialect/Passes.h"

#include "gt/Core/Config.h"

#include "mlir/Pass/PassRegistry.h"

namespace mlir::gt {
namespace {

/// The sharded pipeline after gt-verify: signals (`applySignals`, with the dispatcher's parsed
/// config or gt-opt's file) -> layouts -> collectives (all_reduces bucketed) -> one function per
/// worker -> fused regions inside each.
void addShardedPasses(OpPassManager &pm, std::unique_ptr<Pass> applySignals, const DispatcherPipelineOptions &options) {
    pm.addPass(std::move(applySignals));
    pm.addPass(createGTPropagateSharding(GTPropagateShardingOptions{options.defaultWorker}));
    pm.addPass(createGTInsertCollectives());
    pm.addPass(createGTBucketAllReduces(GTBucketAllReducesOptions{options.bucketBytes}));
    pm.addPass(createGTSplitByWorker(GTSplitByWorkerOptions{options.defaultWorker}));
    // Fusion inside each @workerN function. The dispatcher replays the result as a plan and
    // decides per run which regions are hot, so this pass counts for itself only.
    if (options.regions) {
      GTMarkHotRegionsOptions regions;
      regions.hotAfter = options.hotAfter;
      pm.addPass(createGTMarkHotRegions(regions));
    }
}

/// gt-opt's --gt-dispatcher-pipeline options: those of a dispatcher session.
struct DispatcherPipelineFlags : PassPipelineOptions<DispatcherPipelineFlags> {
  Option<std::string> config{*this, "config",
                             llvm::cl::desc("a sharding config (YAML): the sharded pipeline, as for a session that loaded it")};
  Option<int64_t> numWorkers{*this, "num-workers", llvm::cl::desc("workers the config may name"), llvm::cl::init(1)};
  Option<int64_t> defaultWorker{*this, "default-worker", llvm::cl::desc("the session's home worker"), llvm::cl::init(0)};
  Option<int64_t> hotAfter{*this, "hot-after", llvm::cl::desc("see gt-mark-hot-regions"), llvm::cl::init(2)};
  Option<int64_t> bucketBytes{*this, "bucket-bytes", llvm::cl::desc("gt-bucket-all-reduces' bucket size (0: off)"),
                              llvm::cl::init(64 << 20)};
  Option<int64_t> autoShardBytes{*this, "auto-shard-bytes", llvm::cl::desc("GT_AUTO_SHARD (sharded pipeline)"),
                                 llvm::cl::init(0)};
  Option<bool> regions{*this, "regions", llvm::cl::desc("run gt-mark-hot-regions (GT_JIT=0: false)"), llvm::cl::init(true)};
};

} // namespace

void buildDispatcherPipeline(OpPassManager &pm, const DispatcherPipelineOptions &options) {
  static const ::gt::ShardingConfig none; // a session before gt.load_config: every op on its home worker
  pm.addPass(createGTVerify()); // lifetimes: no use after free (op verifiers ran on the built module)
  addShardedPasses(pm, createGTApplySignals(options.config ? options.config : &none, options.numWorkers), options);
}

void registerGTPassesAndPipelines() {
  registerGTPasses();
  // One flag for both of the dispatcher's pipelines, so that a GT_DUMP_IR dump replays with the
  // command written at its top.
  PassPipelineRegistration<DispatcherPipelineFlags>(
      "gt-dispatcher-pipeline",
      "the dispatcher's pipeline: gt-verify, gt-apply-signals (config=FILE: a session's sharding config; none: "
      "every op on the default worker), gt-propagate-sharding, gt-insert-collectives, gt-bucket-all-reduces, "
      "gt-split-by-worker, gt-mark-hot-regions",
      [](OpPassManager &pm, const DispatcherPipelineFlags &flags) {
        DispatcherPipelineOptions options;
        options.defaultWorker = flags.defaultWorker;
        options.regions = flags.regions;
        options.hotAfter = flags.hotAfter;
        options.numWorkers = flags.numWorkers;
        options.bucketBytes = flags.bucketBytes;
        GTApplySignalsOptions signals;
        signals.configPath = flags.config;
        signals.numWorkers = flags.numWorkers;
        signals.autoShardBytes = flags.autoShardBytes;
        pm.addPass(createGTVerify());
        addShardedPasses(pm, createGTApplySignals(signals), options);
      });
  PassPipelineRegistration<>("gt-fuse-pipeline",
                             "gt -> linalg with elementwise fusion (what workers do to a hot region)",
                             [](OpPassManager &pm) { buildFusionPipeline(pm); });
  PassPipelineRegistration<>("gt-gpu-fuse-pipeline",
                             "gt -> linalg as a CUDA worker fuses a hot region (run-time checks, small "
                             "elementwise chains recomputed in each consumer); then --gt-gpu-pipeline",
                             [](OpPassManager &pm) {
                               buildFusionPipeline(pm, /*scatterLoops=*/false, /*checks=*/true, /*recompute=*/true);
                             });
}

} // namespace mlir::gt
