// The worker's executor: runs instructions in order against its tensor table.
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Core/Trace.h"
#include "gt/Worker/Communicator.h"
#include "gt/Worker/Device.h"
#include "gt/Worker/KernelCompiler.h"

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <unordered_set>

namespace gt::worker {

/// Result of fetching a tensor: its bytes, or the error that poisoned it.
struct Fetched {
  TensorType type;
  std::string bytes;
  std::string error; ///< non-empty: the op that failed, the user's line and why
};

struct ExecutorStats {
  uint64_t instructions = 0;     ///< instructions received (frees included)
  uint64_t liveTensors = 0;
  uint64_t liveBytes = 0;
  uint64_t peakBytes = 0;
  uint64_t eagerOps = 0;         ///< compute instructions run one kernel (or BLAS call) each
  uint64_t fusedOps = 0;         ///< compute instructions run inside a fused region kernel
  uint64_t regionsSeen = 0;      ///< region occurrences received
  uint64_t regionsHot = 0;       ///< ... of which hot
  uint64_t regionReplays = 0;    ///< hot occurrences run through their fused kernel
  uint64_t regionsCompiled = 0;  ///< distinct hot regions whose kernel is ready
  uint64_t regionFallbacks = 0;  ///< distinct hot regions that failed to compile (they stay eager)
  uint64_t regionsCompiling = 0; ///< distinct hot regions queued or compiling in the background now
  double regionCompileMs = 0;     ///< compiling fused region kernels (background thread), ms
  double regionLoadMs = 0;        ///< loading fused region kernels from the disk cache, ms
  uint64_t regionDiskHits = 0;    ///< fused region kernels loaded from the disk cache
  uint64_t verifyFailures = 0;   ///< GT_JIT_VERIFY: replayed outputs that differed from eager
  uint64_t graphCaptures = 0;    ///< CUDA graphs captured from region replays (CUDA workers)
  uint64_t graphReplays = 0;     ///< region replays run as one CUDA graph launch
  uint64_t regionKernels = 0;    ///< GPU kernels the region replays launched (CUDA workers)
  uint64_t collectiveOps = 0;    ///< all_reduce, all_gather, reduce_scatter, all_to_all run
  uint64_t p2pOps = 0;           ///< send and recv run
  uint64_t typesInferred = 0;    ///< result types inferred here rather than taken from the program
                                 ///< (ops without a kernel, untyped programs; see Instruction::type)
  std::vector<std::string> notes; ///< why each failed region stays eager (first 16); GT_JIT_PROFILE timings
};

/// A region of a program, as gt-mark-hot-regions formed it: instructions [start, start+count)
/// compute `outputs`; every other value they define is freed inside the range.
struct RegionCall {
  uint64_t key = 0;  ///< structural hash: equal keys mean the same graph, shapes and dtypes
  bool hot = false;  ///< compile it (in the background) and replay the fused kernel once ready
  uint32_t start = 0, count = 0;
  std::vector<uint64_t> outputs;
};

/// A hot region's compiled kernel with the operand and result types it was built for.
struct RegionKernel {
  const Kernel *kernel = nullptr;
  std::vector<TensorType> inputTypes, outputTypes;
};

struct ExecutorOptions {
  std::string cacheDir;          ///< kernel disk cache ("" = none)
  bool backgroundCompile = true; ///< false: a hot region compiles before its first run (GT_JIT_SYNC=1)
  bool verifyRegions = false;    ///< rerun every replayed region eagerly and report differences (GT_JIT_VERIFY=1)
  std::shared_ptr<Device> device; ///< where tensors live and kernels run (null: the CPU)
  uint64_t memoryBytes = 0;        ///< what all tensors together may hold, bytes (0: no bound)
  uint64_t sessionMemoryBytes = 0; ///< what one session's tensors may hold, bytes (0: memoryBytes)
  /// Replay hot regions as CUDA graphs where the device has them (also GT_CUDA_GRAPHS=1;
  /// GT_CUDA_GRAPHS=0 turns them off). A region's replay with the same buffers as an earlier
  /// one is captured the second time and launched as one graph from then on. Off by default:
  /// in the MLP and GPT training loops on an H200 only 1-3 % of replays found their buffers
  /// again (the caching allocator does not give each step the same addresses), too few to pay
  /// for the captures and the memory graphs keep.
  bool cudaGraphs = false;
};

/// A program run one unit at a time (an instruction, or a whole region), so that a scheduler
/// can interleave the programs of several sessions.
struct ProgramRun {
  std::vector<Instruction> instructions;
  std::vector<RegionCall> regions; ///< sorted by start, disjoint; a malformed one runs eagerly
  size_t next = 0;                 ///< the next instruction to run
  size_t region = 0;               ///< the next region that may start at or after `next`
  /// Takes `instructions` when the run is destroyed (a worker's kept plan reuses them for its
  /// next run); empty: they are freed.
  std::function<void(std::vector<Instruction> &&)> recycle;
  bool done() const { return next >= instructions.size(); }

  ProgramRun() = default;
  ProgramRun(std::vector<Instruction> instructions, std::vector<RegionCall> regions)
      : instructions(std::move(instructions)), regions(std::move(regions)) {}
  ProgramRun(ProgramRun &&o) noexcept
      : instructions(std::move(o.instructions)), regions(std::move(o.regions)), next(o.next), region(o.region),
        recycle(std::exchange(o.recycle, nullptr)) {}
  ProgramRun &operator=(ProgramRun &&o) noexcept {
    if (this != &o) {
      if (recycle) recycle(std::move(instructions));
      instructions = std::move(o.instructions);
      regions = std::move(o.regions);
      next = o.next;
      region = o.region;
      recycle = std::exchange(o.recycle, nullptr);
    }
    return *this;
  }
  ~ProgramRun() {
    if (recycle) recycle(std::move(instructions));
  }
};

/// A session is over its memory quota, or the worker's memory is full. Names the sizes.
struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Executes instructions on a Device: GEMM through the device's BLAS, reshape as an alias,
/// everything else through kernels from the KernelCompiler (built for the device's target). A failing instruction never throws: it poisons
/// its result with an error naming the op and the user's line, and every instruction that
/// reads a poisoned tensor is poisoned with the same error.
class Executor {
public:
  explicit Executor(std::string cacheDir) : Executor(ExecutorOptions{std::move(cacheDir)}) {}
  explicit Executor(ExecutorOptions options);
  ~Executor();

  void run(const Instruction &inst);
  /// The session whose work runs from now on: what it allocates counts against its quota, and
  /// the tensors it makes are its own (endSession frees them).
  void setSession(uint32_t session) { session_ = session; }
  /// Whether `op` exchanges data with other workers (a collective, send or recv).
  static bool isExchange(OpCode op);
  /// Whether the next unit of `program` is an exchange op.
  static bool nextIsExchange(const ProgramRun &program);
  /// Whether the next unit of `program` can run without compiling an eager kernel. If not, the
  /// kernels it needs are queued for a compile thread (with backgroundCompile) and the caller
  /// runs something else meanwhile; onCompiled's function is called after each compile.
  bool prepareNext(const ProgramRun &program);
  void onCompiled(std::function<void()> notify);
  /// Which unit runNext runs next: region `index` of the program, or instruction `index`.
  struct UnitRef {
    bool region = false;
    uint32_t index = 0;
  };
  static UnitRef nextUnitRef(const ProgramRun &program);
  /// The trace event (gt.profiler) of a unit of `program`, its times left 0: an op (category
  /// "kernel", "collective", "p2p" or "free") with its result's dtype and shape, the user's line
  /// and a collective's bytes and workers, or a region ("region") with its ops.
  static TraceEvent describeUnit(const ProgramRun &program, UnitRef unit);
  /// The fused-region compiles (background thread) that started at or after `sinceNs`
  /// (monotonicNs), as trace events; the last 256 are kept. Thread-safe.
  std::vector<TraceEvent> compileEvents(int64_t sinceNs) const;
  /// Runs the next unit of `program`: one instruction, or one region (fused when hot and
  /// compiled). With `dropped` (the session is gone) only frees and exchanges run, the
  /// exchanges as failed, so that the other members of their group stay in step.
  void runNext(ProgramRun &program, bool dropped = false);
  /// Frees every tensor of `session` and forgets its memory account.
  void endSession(uint32_t session);
  /// Bytes `session` holds on this device.
  uint64_t sessionBytes(uint32_t session) const;
  /// Whether tensor `id` exists and belongs to `session`.
  bool ownedBy(uint64_t id, uint32_t session) const;
  /// Whether tensor `id` exists, belongs to `session` and has type `type` (a session's direct
  /// read: a block of a split tensor has another shape).
  bool holds(uint64_t id, uint32_t session, const TensorType &type) const;
  /// Whether fetching tensor `id` is a copy of at most `maxBytes` and nothing else (no deferred
  /// transpose to carry out first, which may compile a kernel). True for a missing tensor (its
  /// fetch is an error message).
  bool cheapToFetch(uint64_t id, uint64_t maxBytes) const;
  /// Runs `program` in order. A hot region whose fused kernel is ready runs as that kernel;
  /// the first time a hot region is seen its kernel is queued for compilation (on a background
  /// thread) while the region runs op by op. A region that fails to compile stays eager and its
  /// reason is logged once to stderr and kept in stats().notes.
  void runProgram(std::span<const Instruction> program, std::span<const RegionCall> regions);
  /// Blocks until every queued region compilation has finished (tests, benchmarks).
  void waitForCompiles();
  /// Where the distribution ops exchange data; `self` is this worker's dispatcher index.
  /// Without one they fail with an error naming the op.
  void setCommunicator(std::shared_ptr<Communicator> comm, int64_t self) {
    comm_ = std::move(comm);
    self_ = self;
  }
  Communicator *communicator() const { return comm_.get(); }
  /// The tensor `id`, or an error if it is poisoned or does not exist: its bytes
  /// [offset, offset + length) (length 0: to the end).
  /// On the executor's thread, or on another while that one is parked (Scheduler::runIfIdle):
  /// it may carry out a deferred transpose.
  Fetched fetch(uint64_t id, uint64_t offset = 0, uint64_t length = 0);

  ExecutorStats stats() const;
  KernelCompiler &compiler() { return compiler_; }
  Device &device() { return *device_; }
  /// Compiler statistics of the eager kernels plus the region kernels.
  CompilerStats compilerStats() const;

private:
  struct Tensor {
    TensorType type;
    Buffer buffer;
    std::string error;
    uint32_t session = 0; ///< whose it is
    /// A transpose of the last two axes not carried out yet. `buffer` holds the
    /// tensor with those axes swapped, row-major (an alias of the transpose's operand); a matmul
    /// reads it as a transposed GEMM operand, a second such transpose undoes it, and every
    /// other reader gets it materialized first (materialize).
    bool swapped = false;
  };
  /// Bytes held per session and in all; shared with every buffer's deleter, which gives its
  /// bytes back when the last alias of the buffer goes.
  struct Accounts;
  void execute(const Instruction &inst, const std::vector<const Tensor *> &in, Tensor &out);
  /// Carries out a deferred transpose (Tensor::swapped): `t` gets a row-major buffer of its own,
  /// charged to its session. Throws OutOfMemory.
  void materialize(Tensor &t);
  /// slice, slice_scatter, transpose, broadcast_to and concat as copies between strided views
  /// (KernelCompiler::getStridedCopy): `out` has its type and buffer; `inst` has been checked.
  void copyByViews(const Instruction &inst, const std::vector<const Tensor *> &in, Tensor &out);
  /// Whether `op` on operands of these types runs through copyByViews (CPU workers, rank >= 1).
  bool runsByViews(OpCode op, std::span<const TensorType> operands) const;
  /// CPU target: element moves run as strided copies (copyByViews) and elementwise kernels take
  /// their sizes at run time (sizesAtRunTime), so new shapes and offsets compile nothing.
  bool sizeGenericKernels_ = false;
  /// The distribution ops that talk to other workers (all_reduce, all_gather, reduce_scatter,
  /// all_to_all, send, recv). They run even when their input failed, so the group stays in
  /// step: the failure travels as a flag and the other members' results are poisoned too.
  void exchange(const Instruction &inst, const Tensor *in, const std::string &inputError, Tensor &out);
  std::string hostBytes(const Tensor &t);
  Buffer deviceBytes(const std::string &bytes);
  /// `bytes` of device memory for the current session; throws OutOfMemory when that would
  /// take the session over its quota or the worker over its memory.
  Buffer allocate(size_t bytes);
  Buffer scalar(uint64_t bits); ///< an 8-byte device buffer holding `bits` (fill values, seeds)
  /// Stores `t` as tensor `id` of the current session (replacing an older one).
  void store(uint64_t id, Tensor t);
  /// A unit of a dropped session's program (see runNext).
  void runDropped(const Instruction &inst);

  void runRegion(std::span<const Instruction> insts, const RegionCall &region);
  void verifyReplay(std::span<const Instruction> insts, const RegionCall &region);
  bool replay(std::span<const Instruction> insts, const RegionCall &region, const RegionKernel &compiled);

  ExecutorOptions options_;
  uint32_t session_ = 0;
  std::shared_ptr<Accounts> accounts_;
  std::shared_ptr<Communicator> comm_;
  int64_t self_ = -1;
  std::shared_ptr<Device> device_;
  KernelCompiler compiler_;
  std::unordered_map<uint64_t, Tensor> tensors_;
  ExecutorStats stats_;
  struct RegionJit;
  std::unique_ptr<RegionJit> jit_;
  struct RegionGraphs;
  std::unique_ptr<RegionGraphs> graphs_; ///< CUDA graphs of region replays (null: none)
  struct EagerCompiles;
  std::unique_ptr<EagerCompiles> eager_; ///< null without backgroundCompile
  /// The instructions of the next unit of `p` that run op by op (none for a compiled hot region).
  std::span<const Instruction> nextUnit(const ProgramRun &p) const;
  std::unordered_set<uint64_t> replayFailuresLogged_; ///< region keys whose failed replay was logged
  bool profile_ = false; ///< GT_JIT_PROFILE: time every replay per region (reported as notes)
  std::map<uint64_t, std::pair<double, uint64_t>> profileByKey_;
  std::map<uint64_t, std::string> profileNames_;
};

} // namespace gt::worker
