// GT's passes (Passes.td) and the dispatcher pipeline.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace gt {
class ShardingConfig;
enum class OpCode : uint16_t;
}

namespace mlir {
class DialectRegistry;
namespace gt {

#define GEN_PASS_DECL
#include "gt/Dialect/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gt/Dialect/Passes.h.inc"

/// gt.region's discardable attribute naming its family: the hex key of its structure without
/// sizes (gt-mark-hot-regions' structuralKey with sizes off).
inline constexpr const char *kRegionFamilyAttr = "gt.family";

/// How often each region key has been seen, and which regions are hot. The dispatcher keeps
/// one for its lifetime and counts each replay of a plan, so hotness spans batches and
/// sessions; gt-mark-hot-regions counts within its own run.
/// Hot: a region's key once seen `hotAfter` times, or every forced one, but
/// at most kMaxSizesPerFamily keys (sizes) per family. A family that keeps arriving at new
/// sizes (a reinforcement-learning episode's returns, one length per episode) would otherwise
/// compile a kernel set per size, each used a few times; beyond the cap its regions run op by
/// op, on eager kernels, which take any size.
struct HotRegionCounter {
  static constexpr size_t kMaxSizesPerFamily = 8;
  llvm::DenseMap<uint64_t, int64_t> seen;
  llvm::DenseMap<uint64_t, llvm::SmallVector<uint64_t, 2>> hotKeys; ///< by family
  uint64_t capped = 0; ///< regions left cold by the cap
  /// Counts one sighting of (key, family); whether that region is hot now.
  bool sighted(uint64_t key, uint64_t family, int64_t hotAfter, bool forced) {
    if (++seen[key] < hotAfter && !forced) return false;
    auto &keys = hotKeys[family];
    if (llvm::is_contained(keys, key)) return true;
    if (keys.size() >= kMaxSizesPerFamily && !forced) {
      capped++;
      return false;
    }
    keys.push_back(key);
    return true;
  }
};

/// gt-apply-signals with the dispatcher's parsed config (which must outlive the pass).
std::unique_ptr<Pass> createGTApplySignals(const ::gt::ShardingConfig *config, int64_t numWorkers);

struct DispatcherPipelineOptions {
  int64_t defaultWorker = 0;            ///< the session's home worker
  bool regions = true;                  ///< run gt-mark-hot-regions (GT_JIT=0 turns it off)
  int64_t hotAfter = 2;                 ///< see gt-mark-hot-regions
  /// The session's sharding config (null: an empty one, every op on `defaultWorker`). The
  /// pipeline is gt-verify, gt-apply-signals, gt-propagate-sharding, gt-insert-collectives,
  /// gt-bucket-all-reduces, gt-split-by-worker (one @workerN function per worker),
  /// gt-mark-hot-regions (within each function, counting for itself: the dispatcher decides
  /// which regions are hot each time it replays the plan).
  const ::gt::ShardingConfig *config = nullptr;
  int64_t numWorkers = 1;               ///< workers the config may name (0..numWorkers-1)
  int64_t bucketBytes = 64 << 20;       ///< gt-bucket-all-reduces' bucket size (0: off)
  /// Run the op verifiers after every pass (MLIR's verify-each), not only on the captured
  /// module before the first: a check of the passes themselves (tests, GT_VERIFY_PASSES=1). Off,
  /// a batch the cache has not seen costs about 35 % less (benchmarks/RESULTS.md).
  bool verifyEachPass = false;
};

/// The dispatcher's pass pipeline, in order. gt-opt exposes it as --gt-dispatcher-pipeline.
void buildDispatcherPipeline(OpPassManager &pm, const DispatcherPipelineOptions &options);

/// Whether gt-lower-to-linalg converts `code` (every compute op of the spec must), or leaves it
/// (upload, free and the distribution ops: data, lifetime and movement, run by the executor).
/// Otherwise the op has no lowering, and the pass fails on it with "failed to legalize".
enum class LinalgLowering { Converted, Stays, Missing };
LinalgLowering linalgLoweringOf(::gt::OpCode code);

/// Run-time checks of kernels (gt-lower-to-linalg's `checks` option): where an index is
/// out of range or an integer is divided by zero, the kernel calls
/// `gt_runtime_error(i64 op, i64 check, i64 value, i64 bound)` (op: the gt::OpCode being
/// lowered; check: a RuntimeCheck; value: the bad index or the dividend; bound: the size the
/// index must be below, 0 for a division) and goes on with a clamped index or a 0 quotient.
/// The CPU worker defines the function (KernelCompiler: takeKernelError) and poisons the
/// kernel's results with the error, as PyTorch's CPU kernels raise; GPU kernels write a
/// module global instead (kRuntimeErrorGlobal), which the CUDA worker reads.
inline constexpr const char *kRuntimeErrorFunction = "gt_runtime_error";
enum class RuntimeCheck : int64_t { IndexOutOfRange = 0, DivisionByZero = 1, ClassOutOfRange = 2 };
/// GPU kernels cannot call the host: gt-gpu-runtime-errors turns each call into writes to a
/// module global of kRuntimeErrorWords i64, `gt_error` = {1 once a check failed, op, check,
/// value, bound}, written by the first failing thread; the CUDA worker reads it after the
/// launches of a module that has one (CUDADevice: takeKernelError) and clears word 0.
inline constexpr const char *kRuntimeErrorGlobal = "gt_error";
inline constexpr int64_t kRuntimeErrorWords = 5;

/// gt ops -> linalg on tensors with elementwise producers fused into their consumers
/// (reductions included): gt-lower-to-linalg, canonicalize, gt-bubble-up-slices,
/// gt-duplicate-broadcasts, gt-fuse-elementwise, gt-fold-extracts,
/// gt-empty-tensors-through-reshapes, canonicalize. Workers run it on every fused region; gt-opt
/// exposes it as --gt-fuse-pipeline. `scatterLoops` and `checks`: gt-lower-to-linalg's options
/// of those names (CPU workers; checks on both); `recompute`: gt-duplicate-broadcasts' and
/// gt-fuse-elementwise's (CUDA workers).
void buildFusionPipeline(OpPassManager &pm, bool scatterLoops = false, bool checks = false, bool recompute = false);

/// What a CUDA worker compiles for.
struct GPUPipelineOptions {
  std::string chip = "sm_90";        ///< the device's compute capability (PTX target)
  std::string features = "+ptx80";  ///< PTX ISA version
  int64_t blockSize = 256;           ///< threads per block for elementwise loops
};

/// Bufferized kernels (memref arguments) -> GPU: gt-copy-to-linalg, parallel loops, gt-gpu-loops,
/// gt-approximate-math, tiling by `blockSize`, gpu.launch, outlining, gt-gpu-device-memory,
/// then MLIR's gpu-lower-to-nvvm-pipeline with PTX (format isa) kept in `gpu.binary`. Host
/// code calls the mgpu* runtime functions (the worker implements them). Lives in the
/// GTGPUPipeline library (it pulls in the NVPTX backend); needs registerGTGPUDialects.
void buildGPUPipeline(OpPassManager &pm, const GPUPipelineOptions &options);

/// Registers --gt-gpu-pipeline (one-shot bufferization, buffer deallocation, buildGPUPipeline).
void registerGTGPUPipeline();

/// The gpu and nvvm dialects, the NVVM target and their LLVM IR translations.
void registerGTGPUDialects(DialectRegistry &registry);

/// Registers the gt passes, gt-dispatcher-pipeline and gt-fuse-pipeline.
void registerGTPassesAndPipelines();

/// The dialects GT's IR uses (gt, func, and the targets of gt-lower-to-linalg).
void registerGTDialects(DialectRegistry &registry);

} // namespace gt
} // namespace mlir
