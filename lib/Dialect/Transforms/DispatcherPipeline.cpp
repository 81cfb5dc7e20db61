// The dispatcher's pass pipeline, written once; gt-opt and the dispatcher both call it. Also
// registers every gt pass and pipeline for gt-opt.
#include "gt/Dialect/Passes.h"

#include "mlir/Pass/PassRegistry.h"

namespace mlir::gt {

void buildDispatcherPipeline(OpPassManager &pm, const DispatcherPipelineOptions &options) {
  // 1. Lifetimes: no use after free (op verifiers already ran on the built module).
  pm.addPass(createGTVerify());
  if (options.config) {
    // Sharded: signals -> layouts -> collectives (all_reduces bucketed) -> one function per worker.
    pm.addPass(createGTApplySignals(options.config, options.numWorkers));
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
    return;
  }
  // 2. Placement: each op gets the worker it runs on (sharding passes will come before this).
  pm.addPass(createGTPlace(GTPlaceOptions{options.defaultWorker}));
  // 3. Fusion: runs of fusible ops become gt.region, repeated ones hot (workers compile those).
  if (options.regions) {
    GTMarkHotRegionsOptions regions;
    regions.hotAfter = options.hotAfter;
    if (options.counter) pm.addPass(createGTMarkHotRegions(regions, options.counter));
    else pm.addPass(createGTMarkHotRegions(regions));
  }
}

void registerGTPassesAndPipelines() {
  registerGTPasses();
  PassPipelineRegistration<>("gt-dispatcher-pipeline",
                             "the dispatcher's pipeline: gt-verify, gt-place, gt-mark-hot-regions",
                             [](OpPassManager &pm) { buildDispatcherPipeline(pm, {}); });
  PassPipelineRegistration<>("gt-fuse-pipeline",
                             "gt -> linalg with elementwise fusion (what workers do to a hot region)",
                             [](OpPassManager &pm) { buildFusionPipeline(pm); });
}

} // namespace mlir::gt
