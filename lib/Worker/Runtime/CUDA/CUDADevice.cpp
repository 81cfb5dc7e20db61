// The CUDA device: the driver API loaded at run time (dlopen libcuda.so.1, so a worker built
// here starts on machines without a GPU), a caching allocator, one compute stream, pinned
// staging buffers for host<->device copies, cuBLAS (also loaded at run time) for GEMM, and the
// mgpu* functions that compiled kernels' host code calls (MLIR's gpu-to-llvm ABI, which
// MLIR's own libmlir_cuda_runtime implements; Debian does not ship it, and GT routes
// allocation and streams to this device anyway).
#include "gt/Worker/CachingAllocator.h"
#include "gt/Dialect/Passes.h" // kRuntimeErrorGlobal
#include "gt/Worker/Device.h"

#include "../MatmulShape.h"

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace gt::worker {
namespace {

#define GT_STR2(x) #x
#define GT_STR(x) GT_STR2(x) // the versioned name cuda.h maps a function to (cuMemAlloc -> cuMemAlloc_v2)

/// The driver functions GT uses, resolved from libcuda.so.1.
#define GT_CUDA_FUNCTIONS(X)                                                                         \
  X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)              \
  X(cuDeviceGetUuid) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuStreamCreate) \
  X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)               \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) X(cuMemsetD8Async) X(cuModuleLoadDataEx) \
  X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuLaunchKernel) X(cuEventCreate) X(cuEventRecord) X(cuEventQuery)         \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuGetErrorName) X(cuGetErrorString) X(cuMemGetInfo) \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)      \
  X(cuGraphExecDestroy) X(cuGraphDestroy)

struct Driver {
#define GT_MEMBER(fn) decltype(&::fn) fn = nullptr;
  GT_CUDA_FUNCTIONS(GT_MEMBER)
#undef GT_MEMBER
  std::string error; ///< why the driver is unusable ("" = usable)

  Driver() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
      error = std::string("the CUDA driver is not installed (dlopen libcuda.so.1: ") + dlerror() + ")";
      return;
    }
#define GT_LOAD(fn)                                                                                   \
  fn = reinterpret_cast<decltype(fn)>(dlsym(lib, GT_STR(fn)));                                        \
  if (!fn) {                                                                                          \
    error = "the CUDA driver is too old: it lacks " GT_STR(fn);                                       \
    return;                                                                                           \
  }
    GT_CUDA_FUNCTIONS(GT_LOAD)
#undef GT_LOAD
    if (CUresult r = cuInit(0); r != CUDA_SUCCESS) error = "cuInit failed: " + describe(r);
  }

  std::string describe(CUresult r) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName) cuGetErrorName(r, &name);
    if (cuGetErrorString) cuGetErrorString(r, &text);
    return std::string(name ? name : "CUDA error " + std::to_string(int(r))) + (text ? std::string(" (") + text + ")" : "");
  }

  void check(CUresult r, const char *what) const {
    if (r != CUDA_SUCCESS) throw std::runtime_error(std::string(what) + ": " + describe(r));
  }

  static Driver &get() {
    static Driver driver;
    return driver;
  }
};

/// cuBLAS, loaded at run time from the machine's CUDA libraries (libcublas.so.13, .12 or .11).
struct Cublas {
  using Handle = void *;
  // Enum arguments are ints with cublas_api.h's values.
  int (*create)(Handle *) = nullptr;
  int (*setStream)(Handle, CUstream) = nullptr;
  int (*setMathMode)(Handle, int) = nullptr;
  int (*gemmStridedBatchedEx)(Handle, int, int, int, int, int, const void *, const void *, int, int, long long,
                              const void *, int, int, long long, const void *, void *, int, int, long long, int,
                              int, int) = nullptr;
  const char *(*statusString)(int) = nullptr;
  std::string error;

  Cublas() {
    void *lib = nullptr;
    for (const char *name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!lib) {
      error = std::string("cuBLAS is not installed (dlopen libcublas.so.13/12/11: ") + dlerror() + ")";
      return;
    }
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    setStream = reinterpret_cast<decltype(setStream)>(dlsym(lib, "cublasSetStream_v2"));
    setMathMode = reinterpret_cast<decltype(setMathMode)>(dlsym(lib, "cublasSetMathMode"));
    gemmStridedBatchedEx = reinterpret_cast<decltype(gemmStridedBatchedEx)>(dlsym(lib, "cublasGemmStridedBatchedEx"));
    statusString = reinterpret_cast<decltype(statusString)>(dlsym(lib, "cublasGetStatusString"));
    if (!create || !setStream || !setMathMode || !gemmStridedBatchedEx) error = "cuBLAS lacks cublasGemmStridedBatchedEx";
  }
  void check(int status, const char *what) const {
    if (status != 0)
      throw std::runtime_error(std::string(what) + ": " + (statusString ? statusString(status) : "cuBLAS status " + std::to_string(status)));
  }
};

// cublas_api.h / library_types.h values.
constexpr int kOpN = 0, kOpT = 1, kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14, kCompute32F = 68, kCompute32FFastTF32 = 77, kCompute64F = 70,
              kGemmDefault = -1, kTF32TensorOpMath = 3, kDefaultMath = 0;

/// The libdevice.10.bc the NVVM serializer links into every kernel: from CUDA_ROOT /
/// CUDA_HOME / CUDA_PATH or /usr/local/cuda (MLIR's search), else shipped next to the worker
/// (scripts/device-bundle.sh puts it in <bundle>/cuda); then CUDA_ROOT is set to find it.
std::string findLibdevice() {
  const char *rel = "nvvm/libdevice/libdevice.10.bc";
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"})
    if (const char *dir = std::getenv(var); dir && *dir)
      return fs::exists(fs::path(dir) / rel) ? "" : std::string(var) + "=" + dir + " has no " + rel;
  if (fs::exists(fs::path("/usr/local/cuda") / rel)) return "";
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path dir : {exe.parent_path() / "cuda", exe.parent_path().parent_path() / "cuda"})
    if (!ec && fs::exists(dir / rel)) {
      ::setenv("CUDA_ROOT", dir.c_str(), 1);
      return "";
    }
  return std::string("no CUDA toolkit libdevice found (") + rel +
         " under $CUDA_ROOT, /usr/local/cuda or <worker dir>/cuda); the GPU kernel compiler needs it";
}

class CUDADevice;
CUDADevice *gDevice = nullptr; ///< the process's CUDA device (the mgpu* functions use it)

class CUDADevice final : public Device {
public:
  explicit CUDADevice(const CUDAOptions &options) : d_(Driver::get()), allowTF32_(options.allowTF32) {
    if (!d_.error.empty()) throw std::runtime_error(d_.error);
    int count = 0;
    d_.check(d_.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (options.ordinal >= count)
      throw std::runtime_error("no GPU cuda:" + std::to_string(options.ordinal) + " (this machine has " +
                               std::to_string(count) + ")");
    d_.check(d_.cuDeviceGet(&device_, options.ordinal), "cuDeviceGet");
    char name[256] = {};
    d_.cuDeviceGetName(name, sizeof name, device_);
    int major = 0, minor = 0;
    d_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
    d_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
    chip_ = "sm_" + std::to_string(major) + std::to_string(minor);
    description_ = "cuda:" + std::to_string(options.ordinal) + " (" + name + ", " + chip_ + ")";
    CUuuid uuid{};
    d_.check(d_.cuDeviceGetUuid(&uuid, device_), "cuDeviceGetUuid");
    physicalId_ = "GPU-";
    for (unsigned char byte : uuid.bytes) {
      const char *hex = "0123456789abcdef";
      physicalId_ += hex[byte >> 4];
      physicalId_ += hex[byte & 15];
    }
    if (std::string why = findLibdevice(); !why.empty()) throw std::runtime_error(why);
    d_.check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
    d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    d_.check(d_.cuStreamCreate(&compute_, CU_STREAM_NON_BLOCKING), "cuStreamCreate (compute)");
    d_.check(d_.cuStreamCreate(&comm_, CU_STREAM_NON_BLOCKING), "cuStreamCreate (communication)");
    allocator_ = std::make_unique<CachingAllocator>(
        [this](size_t bytes) -> void * {
          CUdeviceptr p = 0;
          return d_.cuMemAlloc(&p, bytes) == CUDA_SUCCESS ? reinterpret_cast<void *>(p) : nullptr;
        },
        [this](void *p) { d_.cuMemFree(reinterpret_cast<CUdeviceptr>(p)); });
    gDevice = this;
  }

  ~CUDADevice() override {
    if (gDevice == this) gDevice = nullptr;
    d_.cuStreamSynchronize(compute_);
  }

  std::string describe() const override { return description_; }
  std::string physicalId() const override { return physicalId_; }

  void bindThread() override { d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

  bool waitIdle(double seconds) override {
    if (!idle_) d_.check(d_.cuEventCreate(&idle_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    d_.check(d_.cuEventRecord(idle_, compute_), "cuEventRecord");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (int polls = 0;; ++polls) {
      CUresult r = d_.cuEventQuery(idle_);
      if (r == CUDA_SUCCESS) return true;
      if (r != CUDA_ERROR_NOT_READY) d_.check(r, "waiting for queued work");
      if (std::chrono::steady_clock::now() > deadline) return false;
      if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(200)); // spin briefly, then nap
    }
  }

  void *recordTimingEvent() override {
    CUevent event = nullptr;
    d_.check(d_.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
    d_.check(d_.cuEventRecord(event, compute_), "cuEventRecord");
    return event;
  }

  int64_t elapsedNs(void *from, void *to) override {
    d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    d_.check(d_.cuEventSynchronize(static_cast<CUevent>(to)), "cuEventSynchronize");
    float ms = 0;
    d_.check(d_.cuEventElapsedTime(&ms, static_cast<CUevent>(from), static_cast<CUevent>(to)), "cuEventElapsedTime");
    return int64_t(double(ms) * 1e6);
  }

  void destroyTimingEvent(void *event) override {
    if (event && d_.cuCtxSetCurrent(context_) == CUDA_SUCCESS) d_.cuEventDestroy(static_cast<CUevent>(event));
  }

  uint64_t capacity() const override {
    size_t free = 0, total = 0;
    if (d_.cuCtxSetCurrent(context_) != CUDA_SUCCESS || d_.cuMemGetInfo(&free, &total) != CUDA_SUCCESS) return 0;
    return free;
  }

  CompilerTarget target() const override;

  Buffer allocate(size_t bytes) override {
    void *p = allocator_->allocate(bytes);
    return {std::shared_ptr<std::byte>(static_cast<std::byte *>(p), [this](std::byte *q) { allocator_->release(q); }),
            bytes};
  }

  void upload(void *dst, const void *src, size_t bytes) override {
    if (bytes == 0) return;
    Staging &s = staging(bytes);
    std::memcpy(s.host, src, bytes);
    d_.check(d_.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), s.host, bytes, compute_), "upload");
    d_.check(d_.cuEventRecord(s.done, compute_), "cuEventRecord");
  }

  void download(void *dst, const void *src, size_t bytes) override {
    checkLaunches();
    if (bytes == 0) {
      d_.check(d_.cuStreamSynchronize(compute_), "running queued kernels");
      return;
    }
    Staging &s = staging(bytes);
    d_.check(d_.cuMemcpyDtoHAsync(s.host, reinterpret_cast<CUdeviceptr>(src), bytes, compute_), "download");
    d_.check(d_.cuStreamSynchronize(compute_), "running queued kernels");
    std::memcpy(dst, s.host, bytes);
  }

  void copy(void *dst, const void *src, size_t bytes) override {
    if (bytes == 0) return;
    d_.check(d_.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes, compute_),
             "device copy");
  }

  void *nativeStream() const override { return compute_; }

  void setScalar(void *dst, uint64_t bits) override {
    // Two 32-bit memsets on the stream: ordered, and no host memory to keep alive.
    auto p = reinterpret_cast<CUdeviceptr>(dst);
    d_.check(d_.cuMemsetD32Async(p, uint32_t(bits), 1, compute_), "setting a scalar");
    d_.check(d_.cuMemsetD32Async(p + 4, uint32_t(bits >> 32), 1, compute_), "setting a scalar");
  }

  void matmul(const TensorType &ta, const void *a, const TensorType &tb, const void *b, const TensorType &tc,
              void *c, Transposed transposed) override;

  void checkLaunches() override {
    std::string e;
    {
      std::lock_guard lock(mu_);
      if (launchError_.empty()) return;
      e = std::move(launchError_);
      launchError_.clear();
    }
    // The failed unit's error globals are read and cleared now (its caller skips
    // takeKernelError), so that the next unit, maybe another session's, is not poisoned with them.
    try {
      (void)takeKernelError();
    } catch (const std::exception &) {
    }
    throw std::runtime_error(e);
  }

  /// Reads the error globals (mlir::gt::kRuntimeErrorGlobal) of the modules launched since the
  /// last call, waiting for the stream to run them, and clears those that are set: the first
  /// failed check of those launches. Nothing to read (no launched module has run-time checks)
  /// costs nothing; otherwise one stream synchronization.
  std::optional<KernelError> takeKernelError() override {
    std::optional<KernelError> first = worker::takeKernelError(); // checks left in host code, if any
    if (pendingChecks_.empty()) return first;
    std::vector<CUdeviceptr> words = std::move(pendingChecks_);
    pendingChecks_.clear();
    constexpr size_t kWordBytes = mlir::gt::kRuntimeErrorWords * sizeof(int64_t);
    constexpr size_t kHostBytes = 4096, kPerRead = kHostBytes / kWordBytes;
    if (!errorHost_) d_.check(d_.cuMemHostAlloc(&errorHost_, kHostBytes, 0), "allocating pinned host memory");
    auto *host = static_cast<int64_t *>(errorHost_);
    for (size_t i = 0; i < words.size(); i += kPerRead) {
      size_t n = std::min(kPerRead, words.size() - i);
      for (size_t j = 0; j < n; ++j)
        d_.check(d_.cuMemcpyDtoHAsync(host + j * mlir::gt::kRuntimeErrorWords, words[i + j], kWordBytes, compute_),
                 "reading a kernel's run-time checks");
      d_.check(d_.cuStreamSynchronize(compute_), "running queued kernels");
      for (size_t j = 0; j < n; ++j) {
        const int64_t *w = host + j * mlir::gt::kRuntimeErrorWords;
        if (w[0] == 0) continue;
        if (!first && w[1] >= 0 && w[1] < int64_t(OpCode::NumOps)) first = KernelError{OpCode(w[1]), w[2], w[3], w[4]};
        d_.check(d_.cuMemsetD32Async(words[i + j], 0, kWordBytes / 4, compute_), "clearing a kernel's run-time checks");
      }
    }
    return first;
  }

  std::vector<std::pair<std::string, double>> counters() const override {
    CachingAllocator::Stats s = allocator_->stats();
    std::lock_guard lock(mu_);
    return {{"device_allocated_bytes", double(s.allocatedBytes)}, {"device_cached_bytes", double(s.cachedBytes)},
            {"device_peak_bytes", double(s.peakBytes)},           {"device_raw_allocs", double(s.rawAllocs)},
            {"device_alloc_reuses", double(s.reuses)},            {"gpu_modules_loaded", double(modules_.size())},
            {"gpu_kernel_launches", double(launches_)}, {"gpu_graph_launches", double(graphLaunches_)}};
  }

  // ---- CUDA graphs ---------------------------------------------------------------------------
  /// A captured graph: its executable form, the kernel temporaries it reads and writes (owned
  /// until it is destroyed), and how many kernels one launch runs.
  struct Graph {
    CUgraphExec exec = nullptr;
    std::vector<void *> owned;
    size_t ownedBytes = 0;
    uint64_t kernels = 0;
    std::vector<CUdeviceptr> checks; ///< error globals of its kernels' modules (takeKernelError)
  };

  bool beginCapture() override {
    {
      std::lock_guard lock(mu_);
      if (capturing_) return false;
      capturing_ = true;
      captured_.clear();
      capturedBytes_ = 0;
      capturedKernels_ = 0;
      capturedChecks_.clear();
    }
    // Relaxed: the caching allocator may call cuMemAlloc while a region's host code runs.
    if (d_.cuStreamBeginCapture(compute_, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS) return true;
    std::lock_guard lock(mu_);
    capturing_ = false;
    return false;
  }

  std::shared_ptr<void> endCapture() override {
    CUgraph graph = nullptr;
    CUresult ended = d_.cuStreamEndCapture(compute_, &graph);
    auto g = std::make_unique<Graph>();
    bool launchFailed;
    {
      std::lock_guard lock(mu_);
      capturing_ = false;
      g->owned = std::move(captured_);
      g->ownedBytes = capturedBytes_;
      captured_.clear();
      g->kernels = capturedKernels_;
      g->checks = std::move(capturedChecks_);
      capturedChecks_.clear();
      // A launch that failed while capturing is not an error of the work: the caller runs it
      // directly, which reports the error if there is one.
      launchFailed = !launchError_.empty();
      launchError_.clear();
    }
    bool ok = ended == CUDA_SUCCESS && graph && !launchFailed &&
              d_.cuGraphInstantiateWithFlags(&g->exec, graph, 0) == CUDA_SUCCESS;
    if (graph) d_.cuGraphDestroy(graph);
    if (!ok) {
      for (void *p : g->owned) allocator_->release(p);
      return nullptr;
    }
    // The handle's end destroys the graph and hands its temporaries back to the cache: later
    // work on the one stream reuses them only after the graph's last launch has run.
    return std::shared_ptr<void>(g.release(), [this](void *p) {
      auto *graph = static_cast<Graph *>(p);
      if (d_.cuCtxSetCurrent(context_) == CUDA_SUCCESS) d_.cuGraphExecDestroy(graph->exec);
      for (void *q : graph->owned) allocator_->release(q);
      delete graph;
    });
  }

  uint64_t kernelLaunches() const override { return launches_; }
  size_t graphBytes(const void *graph) const override { return static_cast<const Graph *>(graph)->ownedBytes; }

  void launchGraph(void *graph) override {
    auto *g = static_cast<Graph *>(graph);
    d_.check(d_.cuGraphLaunch(g->exec, compute_), "cuGraphLaunch");
    for (CUdeviceptr word : g->checks) addCheck(word);
    std::lock_guard lock(mu_);
    graphLaunches_++;
    launches_ += g->kernels;
  }

  // ---- the mgpu* runtime (called from compiled host code on the executor thread) ----------
  // They cannot throw through JIT-compiled frames: errors are recorded and thrown by
  // checkLaunches() right after the kernel returns.
  void fail(const std::string &what) {
    std::lock_guard lock(mu_);
    if (launchError_.empty()) launchError_ = what;
  }
  CUstream stream() const { return compute_; }
  void *loadModule(const void *image) {
    std::lock_guard lock(mu_);
    if (auto it = modules_.find(image); it != modules_.end()) return it->second;
    char log[8192] = {};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof log))};
    CUmodule module = nullptr;
    if (CUresult r = d_.cuModuleLoadDataEx(&module, image, 2, opts, values); r != CUDA_SUCCESS) {
      if (launchError_.empty()) launchError_ = "loading a GPU kernel (PTX JIT) failed: " + d_.describe(r) + " " + log;
      return nullptr;
    }
    CUdeviceptr word = 0;
    size_t bytes = 0;
    if (d_.cuModuleGetGlobal(&word, &bytes, module, mlir::gt::kRuntimeErrorGlobal) != CUDA_SUCCESS ||
        bytes < mlir::gt::kRuntimeErrorWords * sizeof(int64_t))
      word = 0; // no run-time checks in this module
    errorWords_[module] = word;
    return modules_[image] = module;
  }
  void *function(void *module, const char *name) {
    if (!module) return nullptr;
    std::lock_guard lock(mu_);
    auto key = std::make_pair(module, std::string(name));
    if (auto it = functions_.find(key); it != functions_.end()) return it->second.get();
    CUfunction f = nullptr;
    if (CUresult r = d_.cuModuleGetFunction(&f, static_cast<CUmodule>(module), name); r != CUDA_SUCCESS) {
      if (launchError_.empty()) launchError_ = std::string("GPU kernel ") + name + " not found: " + d_.describe(r);
      return nullptr;
    }
    auto function = std::make_unique<Function>(Function{f, errorWords_[static_cast<CUmodule>(module)]});
    return (functions_[key] = std::move(function)).get();
  }
  void launch(void *f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
              void **params) {
    if (!f) return; // loading failed; the error is recorded
    const Function &fn = *static_cast<const Function *>(f);
    launches_++;
    if (capturing_) {
      capturedKernels_++;
      if (fn.checks) capturedChecks_.push_back(fn.checks);
    } else if (fn.checks) {
      addCheck(fn.checks);
    }
    if (CUresult r = d_.cuLaunchKernel(fn.f, unsigned(gx), unsigned(gy), unsigned(gz), unsigned(bx),
                                       unsigned(by), unsigned(bz), unsigned(smem), compute_, params, nullptr);
        r != CUDA_SUCCESS)
      fail("launching a GPU kernel failed: " + d_.describe(r));
  }
  void *alloc(uint64_t bytes) {
    try {
      void *p = allocator_->allocate(bytes);
      if (capturing_) { // a temporary of captured work: the graph keeps it
        std::lock_guard lock(mu_);
        captured_.push_back(p);
        capturedBytes_ += CachingAllocator::roundUp(bytes);
      }
      return p;
    } catch (const std::exception &e) {
      fail(e.what());
      return nullptr;
    }
  }
  void free(void *p) {
    if (capturing_) { // a temporary of the captured work stays the graph's, freed with it
      std::lock_guard lock(mu_);
      if (std::find(captured_.begin(), captured_.end(), p) != captured_.end()) return;
    }
    try {
      allocator_->release(p);
    } catch (const std::exception &e) {
      fail(e.what());
    }
  }

private:
  /// What mgpuModuleGetFunction hands compiled host code: the kernel, and the error global of
  /// its module (0: none; gt-gpu-runtime-errors).
  struct Function {
    CUfunction f = nullptr;
    CUdeviceptr checks = 0;
  };
  /// A launch of a module with run-time checks: takeKernelError reads its error global.
  void addCheck(CUdeviceptr word) {
    if (std::find(pendingChecks_.begin(), pendingChecks_.end(), word) == pendingChecks_.end())
      pendingChecks_.push_back(word);
  }

  /// A pinned host buffer; `done` is recorded after the copy that last used it.
  struct Staging {
    void *host = nullptr;
    size_t bytes = 0;
    CUevent done = nullptr;
  };
  /// A pinned buffer of at least `bytes` whose last copy has finished (a new one if none is).
  Staging &staging(size_t bytes) {
    for (Staging &s : staging_)
      if (s.bytes >= bytes && d_.cuEventQuery(s.done) == CUDA_SUCCESS) return s;
    Staging s;
    s.bytes = std::max<size_t>(CachingAllocator::roundUp(bytes), size_t(1) << 20);
    d_.check(d_.cuMemHostAlloc(&s.host, s.bytes, 0), "allocating pinned host memory");
    d_.check(d_.cuEventCreate(&s.done, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    staging_.push_back(s);
    return staging_.back();
  }

  Driver &d_;
  bool allowTF32_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream compute_ = nullptr, comm_ = nullptr; ///< kernels and copies; collectives (issue 5)
  CUevent idle_ = nullptr;                      ///< waitIdle's marker on the compute stream
  std::string chip_, description_, physicalId_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::deque<Staging> staging_;
  Cublas *cublas_ = nullptr;
  void *cublasHandle_ = nullptr;
  mutable std::mutex mu_;
  std::string launchError_;
  std::map<const void *, CUmodule> modules_;
  std::map<std::pair<void *, std::string>, std::unique_ptr<Function>> functions_;
  std::map<CUmodule, CUdeviceptr> errorWords_; ///< each loaded module's error global, 0 if none
  /// Error globals of the modules launched since takeKernelError last ran (the executor's thread
  /// only, as launch()), and those of the launches being captured.
  std::vector<CUdeviceptr> pendingChecks_, capturedChecks_;
  void *errorHost_ = nullptr; ///< pinned: where takeKernelError reads error globals
  std::atomic<uint64_t> launches_ = 0;
  uint64_t graphLaunches_ = 0;
  /// Capture in progress (beginCapture..endCapture, on the executor's thread, which is also the
  /// one that calls alloc, free and launch): temporaries allocated and kernels launched so far.
  std::atomic<bool> capturing_ = false;
  std::vector<void *> captured_;
  size_t capturedBytes_ = 0;
  uint64_t capturedKernels_ = 0;
};

void CUDADevice::matmul(const TensorType &ta, const void *a, const TensorType &tb, const void *b,
                        const TensorType &tc, void *c, Transposed transposed) {
  if (!isFloating(tc.dtype))
    throw std::invalid_argument(std::string("matmul supports floating-point tensors, not ") + dtypeName(tc.dtype));
  if (numElements(tc.shape) == 0) return;
  if (numElements(ta.shape) == 0 || numElements(tb.shape) == 0) { // an empty sum: zeros (cuBLAS writes nothing)
    d_.check(d_.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(c), 0, size_t(numElements(tc.shape)) * dtypeSize(tc.dtype),
                                compute_), "zeroing an empty product");
    return;
  }
  if (!cublas_) {
    static Cublas loaded;
    if (!loaded.error.empty()) throw std::runtime_error(loaded.error);
    cublas_ = &loaded;
    cublas_->check(cublas_->create(&cublasHandle_), "cublasCreate");
    cublas_->check(cublas_->setStream(cublasHandle_, compute_), "cublasSetStream");
    cublas_->check(cublas_->setMathMode(cublasHandle_, allowTF32_ ? kTF32TensorOpMath : kDefaultMath), "cublasSetMathMode");
  }
  MatmulShape s(ta, tb);
  if (!transposed.lhs) s.foldBatchIntoRows(); // (batch, m) x k @ k x n as one GEMM
  bool f64 = tc.dtype == DType::Float64;
  // float16/bfloat16 operands and result with float32 accumulation and float32 alpha/beta.
  int type = f64 ? kR64F : tc.dtype == DType::Float16 ? kR16F : tc.dtype == DType::BFloat16 ? kR16BF : kR32F;
  int compute = f64 ? kCompute64F : allowTF32_ && tc.dtype == DType::Float32 ? kCompute32FFastTF32 : kCompute32F;
  float alpha32 = 1, beta32 = 0;
  double alpha64 = 1, beta64 = 0;
  const void *alpha = f64 ? static_cast<const void *>(&alpha64) : &alpha32;
  const void *beta = f64 ? static_cast<const void *>(&beta64) : &beta32;
  size_t elem = dtypeSize(tc.dtype);
  auto at = [&](const void *base, int64_t offset) { return static_cast<const char *>(base) + offset * elem; };
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands. A row-major B (k x n)
  // is a column-major n x k (ld n); a transposed one is stored (n x k), a column-major k x n
  // (ld k) that goes in as CUBLAS_OP_T. Likewise A: k x m (ld k), or stored (k x m), a
  // column-major m x k (ld m) with CUBLAS_OP_T.
  int opB = transposed.rhs ? kOpT : kOpN, opA = transposed.lhs ? kOpT : kOpN;
  int ldb = int(transposed.rhs ? s.k : s.n), lda = int(transposed.lhs ? s.m : s.k);
  auto gemm = [&](const void *A, long long strideA, const void *B, long long strideB, void *C, int count) {
    cublas_->check(cublas_->gemmStridedBatchedEx(cublasHandle_, opB, opA, int(s.n), int(s.m), int(s.k), alpha, B, type,
                                                 ldb, strideB, A, type, lda, strideA, beta, C, type, int(s.n),
                                                 (long long)(s.m * s.n), count, compute, kGemmDefault),
                   "cublasGemmStridedBatchedEx");
  };
  // One strided call when each operand is either fully batched or one matrix for all.
  bool fullA = s.batchA == s.outBatch || numElements(s.batchA) == 1;
  bool fullB = s.batchB == s.outBatch || numElements(s.batchB) == 1;
  if (fullA && fullB) {
    gemm(a, numElements(s.batchA) == 1 && s.batches > 1 ? 0 : s.m * s.k, b,
         numElements(s.batchB) == 1 && s.batches > 1 ? 0 : s.k * s.n, c, int(s.batches));
    return;
  }
  for (int64_t i = 0; i < s.batches; ++i) // general broadcasting: one GEMM per batch element
    gemm(at(a, s.offsetA(i)), 0, at(b, s.offsetB(i)), 0, static_cast<char *>(c) + i * s.m * s.n * elem, 1);
}

CUDADevice &current() { return *gDevice; }

} // namespace
} // namespace gt::worker

// ---- MLIR's GPU runtime ABI (gpu-to-llvm, SelectObjectAttr), routed to the CUDA device -----
using gt::worker::current;
extern "C" {
static void *mgpuStreamCreate() { return current().stream(); } // every stream is the compute stream
static void mgpuStreamDestroy(void *) {}
static void mgpuStreamSynchronize(void *) {} // stream order suffices; download() synchronizes
static void mgpuStreamWaitEvent(void *, void *) {}
static void *mgpuEventCreate() { return reinterpret_cast<void *>(uintptr_t(1)); } // one stream: events are no-ops
static void mgpuEventDestroy(void *) {}
static void mgpuEventSynchronize(void *) {}
static void mgpuEventRecord(void *, void *) {}
static void *mgpuModuleLoad(void *data, size_t) { return current().loadModule(data); }
static void *mgpuModuleLoadJIT(void *data, int) { return current().loadModule(data); }
static void mgpuModuleUnload(void *) {} // modules stay loaded for the process (cached by image)
static void *mgpuModuleGetFunction(void *module, const char *name) { return current().function(module, name); }
static void mgpuLaunchKernel(void *f, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                             int32_t smem, void *, void **params, void **, size_t) {
  current().launch(f, gx, gy, gz, bx, by, bz, smem, params);
}
static void *mgpuMemAlloc(uint64_t bytes, void *, bool) { return current().alloc(bytes); }
static void mgpuMemFree(void *p, void *) { current().free(p); }
}

namespace gt::worker {
namespace {
CompilerTarget CUDADevice::target() const { return cudaCompileOnlyTarget(chip_); }
} // namespace

std::unique_ptr<Device> createCUDADevice(const CUDAOptions &options) {
  if (gDevice) throw std::runtime_error("one CUDA device per process: run one gt-worker per GPU");
  return std::make_unique<CUDADevice>(options);
}

bool cudaAvailable(std::string *why) {
  Driver &d = Driver::get();
  std::string reason = d.error;
  if (reason.empty()) {
    int count = 0;
    if (CUresult r = d.cuDeviceGetCount(&count); r != CUDA_SUCCESS) reason = "cuDeviceGetCount: " + d.describe(r);
    else if (count == 0) reason = "the CUDA driver sees no GPU";
  }
  if (why) *why = reason;
  return reason.empty();
}

/// The CUDA target's runtime symbols without a device (tests compile CUDA kernels on machines
/// without a GPU; calling the kernels needs a device).
CompilerTarget cudaCompileOnlyTarget(const std::string &chip) {
  CompilerTarget t;
  t.kind = CompilerTarget::Kind::CUDA;
  t.chip = chip;
#define GT_SYMBOL(fn) {#fn, reinterpret_cast<void *>(&fn)}
  t.symbols = {GT_SYMBOL(mgpuStreamCreate),   GT_SYMBOL(mgpuStreamDestroy),     GT_SYMBOL(mgpuStreamSynchronize),
               GT_SYMBOL(mgpuStreamWaitEvent), GT_SYMBOL(mgpuEventCreate),      GT_SYMBOL(mgpuEventDestroy),
               GT_SYMBOL(mgpuEventSynchronize), GT_SYMBOL(mgpuEventRecord),     GT_SYMBOL(mgpuModuleLoad),
               GT_SYMBOL(mgpuModuleLoadJIT),  GT_SYMBOL(mgpuModuleUnload),      GT_SYMBOL(mgpuModuleGetFunction),
               GT_SYMBOL(mgpuLaunchKernel),   GT_SYMBOL(mgpuMemAlloc),          GT_SYMBOL(mgpuMemFree)};
#undef GT_SYMBOL
  return t;
}

} // namespace gt::worker
