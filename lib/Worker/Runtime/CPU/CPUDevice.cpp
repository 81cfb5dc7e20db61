// The CPU device: host memory, cblas GEMM, kernels compiled for the host.
#include "gt/Worker/Device.h"

#include "../MatmulShape.h"

#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.hpp>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <stdexcept>
#include <string>
#include <vector>

// libomp's (LLVM's OpenMP runtime, linked by GTWorker): the threads of fused kernels' loops.
extern "C" int omp_get_max_threads();
extern "C" void omp_set_num_threads(int);
extern "C" int omp_get_thread_num();

namespace gt::worker {
namespace {

/// The largest m*n*k a batch element's GEMM may have for the batch to be split over the worker's
/// OpenMP threads, one whole GEMM per thread. At or below it OpenBLAS (0.3.x, interface/gemm.c:
/// SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD = 65536 * 4) runs a GEMM on the calling thread
/// alone, so a batch of small GEMMs (attention's per-head products) would otherwise use one core.
/// (MKL, called inside the parallel loop, runs each GEMM on the thread that calls it.)
constexpr int64_t kBatchPerThreadMaxMNK = 262144;
/// ... and the least work (multiply-adds, all elements) worth waking the threads for.
constexpr int64_t kBatchPerThreadMinWork = 1 << 17;

/// MKL's JIT GEMMs (oneMKL Developer Reference, "mkl_jit_create_?gemm"): machine code generated
/// for one GEMM shape and run on the calling thread. A batch of small GEMMs (attention's per-head
/// products, 64x64x32) runs each element through one: 35 % faster than cblas_sgemm per element
/// on the development VM, whose MKL runs in strict CNR mode (mklStrictReproducibility), which
/// slows small GEMMs by half (benchmarks/RESULTS.md, session 47). The kernel is fixed code on
/// one thread, so its result cannot depend on thread counts either. Kernels are kept for the
/// process's life (never destroyed: at exit MKL may be torn down first), at most kMaxShapes of
/// them; a shape past that (or without MKL, which the functions are looked up in at run time)
/// always takes cblas_?gemm, so every GEMM of one shape takes the same path.
class JitGemms {
public:
  using Kernel = void (*)(void *jitter, void *a, void *b, void *c);
  struct Jit {
    void *jitter = nullptr;
    Kernel kernel = nullptr;
  };
  /// C (m x n, row-major, leading dimension ldc) = op(A) op(B) with alpha 1 and beta 0.
  static const Jit *get(bool isDouble, bool transA, bool transB, int64_t m, int64_t n, int64_t k, int64_t lda,
                        int64_t ldb, int64_t ldc) {
    static JitGemms &gemms = *new JitGemms; // (see above: never destroyed)
    return gemms.lookup(isDouble, transA, transB, m, n, k, lda, ldb, ldc);
  }
  /// Batched matmuls that ran on JIT kernels (counters: matmuls_jit_gemm).
  static inline std::atomic<uint64_t> runs{0};

private:
  static constexpr size_t kMaxShapes = 512;
  using Create = int (*)(void **, int, int, int, int, int, int, double, int, int, double, int);
  using CreateS = int (*)(void **, int, int, int, int, int, int, float, int, int, float, int);
  using GetPtr = void *(*)(const void *);

  JitGemms() {
    createS_ = reinterpret_cast<CreateS>(dlsym(RTLD_DEFAULT, "mkl_cblas_jit_create_sgemm"));
    createD_ = reinterpret_cast<Create>(dlsym(RTLD_DEFAULT, "mkl_cblas_jit_create_dgemm"));
    getS_ = reinterpret_cast<GetPtr>(dlsym(RTLD_DEFAULT, "mkl_jit_get_sgemm_ptr"));
    getD_ = reinterpret_cast<GetPtr>(dlsym(RTLD_DEFAULT, "mkl_jit_get_dgemm_ptr"));
  }

  const Jit *lookup(bool isDouble, bool transA, bool transB, int64_t m, int64_t n, int64_t k, int64_t lda,
                    int64_t ldb, int64_t ldc) {
    if (!(isDouble ? createD_ && getD_ : createS_ && getS_)) return nullptr;
    constexpr int64_t kMaxInt = 1 << 30; // MKL_INT is int (LP64)
    if (std::max({m, n, k, lda, ldb, ldc}) >= kMaxInt) return nullptr;
    std::string key = std::to_string(isDouble) + std::to_string(transA) + std::to_string(transB) + "," +
                      std::to_string(m) + "," + std::to_string(n) + "," + std::to_string(k) + "," +
                      std::to_string(lda) + "," + std::to_string(ldb) + "," + std::to_string(ldc);
    std::lock_guard lock(mu_);
    if (auto it = jits_.find(key); it != jits_.end()) return it->second.kernel ? &it->second : nullptr;
    if (jits_.size() >= kMaxShapes) return nullptr;
    Jit jit;
    constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112, kJitError = 2; // mkl_types.h
    int ta = transA ? kTrans : kNoTrans, tb = transB ? kTrans : kNoTrans;
    int status = isDouble ? createD_(&jit.jitter, kRowMajor, ta, tb, int(m), int(n), int(k), 1.0, int(lda), int(ldb), 0.0, int(ldc))
                          : createS_(&jit.jitter, kRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, int(lda), int(ldb), 0.0f, int(ldc));
    if (status != kJitError && jit.jitter) // (MKL_NO_JIT: the jitter runs the standard GEMM)
      jit.kernel = reinterpret_cast<Kernel>((isDouble ? getD_ : getS_)(jit.jitter));
    Jit &kept = jits_[key] = jit; // a refused shape is remembered too: it takes cblas_?gemm every time
    return kept.kernel ? &kept : nullptr;
  }

  std::mutex mu_;
  std::unordered_map<std::string, Jit> jits_;
  CreateS createS_ = nullptr;
  Create createD_ = nullptr;
  GetPtr getS_ = nullptr, getD_ = nullptr;
};

/// NumPy matmul through cblas_{s,d}gemm: one call for a batch that folds into A's rows
/// (MatmulShape::foldBatchIntoRows), else one call per batch element; a transposed operand's
/// matrices are stored (k x m) / (n x k) and go to the GEMM as CblasTrans. A batch of small
/// GEMMs runs its elements on the OpenMP threads (each element's GEMM, hence its result, is the
/// same as on one thread); larger GEMMs run one after another on the BLAS's threads. Returns
/// whether the batch was split over the threads.
bool matmulBlas(const TensorType &ta, const void *a, const TensorType &tb, const void *b, const TensorType &tc,
                void *c, Device::Transposed transposed) {
  MatmulShape s(ta, tb);
  if (!transposed.lhs) s.foldBatchIntoRows();
  int64_t m = s.m, k = s.k, n = s.n;
  CBLAS_TRANSPOSE opA = transposed.lhs ? CblasTrans : CblasNoTrans, opB = transposed.rhs ? CblasTrans : CblasNoTrans;
  int64_t lda = transposed.lhs ? m : k, ldb = transposed.rhs ? k : n;
  auto gemm = [&](int64_t i) {
    int64_t offA = s.offsetA(i), offB = s.offsetB(i);
    if (tc.dtype == DType::Float32)
      cblas_sgemm(CblasRowMajor, opA, opB, m, n, k, 1.0f, static_cast<const float *>(a) + offA, lda,
                  static_cast<const float *>(b) + offB, ldb, 0.0f, static_cast<float *>(c) + i * m * n, n);
    else
      cblas_dgemm(CblasRowMajor, opA, opB, m, n, k, 1.0, static_cast<const double *>(a) + offA, lda,
                  static_cast<const double *>(b) + offB, ldb, 0.0, static_cast<double *>(c) + i * m * n, n);
  };
  int64_t batches = s.batches;
  bool small = batches > 1 && m * n * k <= kBatchPerThreadMaxMNK;
  bool split = small && batches * m * n * k >= kBatchPerThreadMinWork && omp_get_max_threads() > 1;
  // Which GEMM runs depends on the shape alone, never on how many threads there are now
  // (leaveCoreFree): a JIT kernel gives its own bits.
  if (const JitGemms::Jit *jit = small ? JitGemms::get(tc.dtype == DType::Float64, transposed.lhs, transposed.rhs,
                                                        m, n, k, lda, ldb, n) : nullptr) {
    size_t elem = dtypeSize(tc.dtype);
    auto at = [&](const void *p, int64_t offset) {
      return const_cast<char *>(static_cast<const char *>(p)) + size_t(offset) * elem;
    };
#pragma omp parallel for schedule(static) if (split)
    for (int64_t i = 0; i < batches; ++i)
      jit->kernel(jit->jitter, at(a, s.offsetA(i)), at(b, s.offsetB(i)), at(c, i * m * n));
    JitGemms::runs++;
    return split;
  }
  if (split) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batches; ++i) gemm(i);
    return true;
  }
  for (int64_t i = 0; i < batches; ++i) gemm(i);
  return false;
}

/// The BLAS library's thread count, looked up at run time: OpenBLAS's own pool, or MKL's (which
/// runs on libomp's threads, shared with the fused kernels); nullptr for another BLAS.
using GetThreads = int (*)();
using SetThreads = void (*)(int);
template <typename F> F lookup(const char *openblas, const char *mkl) {
  void *f = dlsym(RTLD_DEFAULT, openblas);
  return reinterpret_cast<F>(f ? f : dlsym(RTLD_DEFAULT, mkl));
}
GetThreads blasGetThreads() { return lookup<GetThreads>("openblas_get_num_threads", "MKL_Get_Max_Threads"); }
SetThreads blasSetThreads() { return lookup<SetThreads>("openblas_set_num_threads", "MKL_Set_Num_Threads"); }
/// "mkl" or "openblas" (whichever the worker was linked with, CMakeLists.txt's GT_BLAS), else "blas".
const char *blasName() {
  if (dlsym(RTLD_DEFAULT, "openblas_get_num_threads")) return "openblas";
  return dlsym(RTLD_DEFAULT, "MKL_Get_Max_Threads") ? "mkl" : "blas";
}

/// The first number on the line of `path` that starts with `key` ("MemAvailable:"), or on its
/// first line when `key` is empty; 0 if there is none ("max" in a cgroup file).
uint64_t readNumber(const char *path, const std::string &key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!key.empty() && line.rfind(key, 0) != 0) continue;
    std::istringstream fields(line.substr(key.size()));
    uint64_t value = 0;
    fields >> value;
    return value;
  }
  return 0;
}

/// MemAvailable (the kernel's estimate of what can be allocated without swapping), within the
/// cgroup (v2) memory limit of this process, bytes.
uint64_t hostMemoryAvailable() {
  uint64_t available = readNumber("/proc/meminfo", "MemAvailable:") * 1024;
  uint64_t limit = readNumber("/sys/fs/cgroup/memory.max", ""), used = readNumber("/sys/fs/cgroup/memory.current", "");
  if (limit > 0 && limit > used) available = available ? std::min(available, limit - used) : limit - used;
  return available;
}

/// MKL's strict conditional numerical reproducibility (CNR) for its fastest code path on this
/// CPU, where it has one (AVX2, AVX-512): ?gemm then gives the same bits on any number of
/// threads, so a worker may change its GEMMs' thread count (leaveCoreFree) without changing
/// any result. Must come before MKL's first computation. False without MKL (OpenBLAS makes no
/// such promise) or on other CPUs.
/// Source: oneMKL Developer Guide, "Reproducibility Conditions" and "Strict CNR Mode".
bool mklStrictReproducibility() {
  auto autoBranch = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "MKL_CBWR_Get_Auto_Branch"));
  auto set = reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "MKL_CBWR_Set"));
  auto get = reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "MKL_CBWR_Get"));
  if (!autoBranch || !set || !get) return false;
  constexpr int kAVX2 = 10, kAVX512 = 12, kAVX512E1 = 14, kStrict = 0x10000, kSuccess = 0, kAll = ~0; // mkl_types.h
  int branch = autoBranch();
  if (branch != kAVX2 && branch != kAVX512 && branch != kAVX512E1) return false;
  int want = branch | kStrict;
  return set(want) == kSuccess || get(kAll) == want; // (a second device in one process: already set)
}

/// Convolutions, their gradients and max pools through oneDNN (the library PyTorch's CPU
/// convolutions and pools use). A convolution describes its operands in their plain row-major
/// layouts (ncw / nchw / ncdhw, weights oi(d)(h)w or, with groups, goi(d)(h)w: the same bytes)
/// and lets oneDNN choose the layouts its fastest implementation for this CPU wants
/// (format_tag::any), reordering the operands into them and the result back, as PyTorch does for
/// plain tensors; a pool runs on the plain layouts. Its backward runs the forward pass again for
/// the workspace (which tap of each window holds its maximum) that oneDNN's backward needs. A
/// primitive and its descriptor are kept per op, shapes and attributes (at most kMaxPrimitives,
/// then all dropped).
/// Source: oneDNN v2.6 developer guide, "Convolution", "Pooling" and "Memory Format Propagation".
class OneDNN {
public:
  /// Whether oneDNN runs `op`.
  static bool runs(OpCode op) {
    return op == OpCode::Convolution || op == OpCode::ConvolutionBackwardInput ||
           op == OpCode::ConvolutionBackwardWeight || op == OpCode::MaxPool || op == OpCode::MaxPoolBackward;
  }

  void run(OpCode op, const OpAttrs &attrs, std::span<const TensorType> types, std::span<const void *const> operands,
           const TensorType &tc, void *c) {
    if (numElements(tc.shape) == 0) return;
    for (const TensorType &t : types)
      if (numElements(t.shape) == 0) { // an empty batch: a weight gradient of zeros
        std::memset(c, 0, size_t(numElements(tc.shape)) * sizeof(float));
        return;
      }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!engine_) {
      engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
      stream_ = dnnl::stream(engine_);
    }
    std::string key = std::to_string(int(op)) + "|" + std::to_string(attrs.count);
    for (const auto *v : {&types[0].shape, &tc.shape, &attrs.starts, &attrs.steps, &attrs.axes}) {
      key += "|";
      for (int64_t x : *v) key += std::to_string(x) + ",";
    }
    if (types.size() > 1)
      for (int64_t x : types[1].shape) key += std::to_string(x) + ";";
    auto it = primitives_.find(key);
    if (it == primitives_.end()) {
      if (primitives_.size() >= kMaxPrimitives) primitives_.clear();
      bool pool = op == OpCode::MaxPool || op == OpCode::MaxPoolBackward;
      it = primitives_.emplace(key, pool ? makePool(op, attrs, types, tc) : makeConvolution(op, attrs, types, tc)).first;
    }
    Primitive &p = it->second;
    std::unordered_map<int, dnnl::memory> args;
    // An operand in its plain layout, reordered into the one the primitive chose if it differs.
    auto in = [&](int arg, const dnnl::memory::desc &plain, const void *data) {
      dnnl::memory user(plain, engine_, const_cast<void *>(data));
      dnnl::memory::desc want = p.pd.query_md(dnnl::query::exec_arg_md, arg);
      if (want == plain) {
        args[arg] = user;
        return;
      }
      dnnl::memory chosen(want, engine_);
      dnnl::reorder(user, chosen).execute(stream_, user, chosen);
      args[arg] = chosen;
    };
    auto scratch = [&](const dnnl::primitive_desc_base &pd, std::unordered_map<int, dnnl::memory> &to) {
      dnnl::memory::desc md = pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_SCRATCHPAD);
      if (md.get_size() > 0) to[DNNL_ARG_SCRATCHPAD] = dnnl::memory(md, engine_);
    };
    if (op == OpCode::MaxPoolBackward) { // the forward pass for its workspace, then the backward
      std::unordered_map<int, dnnl::memory> forward;
      forward[DNNL_ARG_SRC] = dnnl::memory(p.plainB, engine_, const_cast<void *>(operands[1]));
      forward[DNNL_ARG_DST] = dnnl::memory(p.forward.query_md(dnnl::query::exec_arg_md, DNNL_ARG_DST), engine_);
      dnnl::memory workspace(p.forward.query_md(dnnl::query::exec_arg_md, DNNL_ARG_WORKSPACE), engine_);
      forward[DNNL_ARG_WORKSPACE] = workspace;
      scratch(p.forward, forward);
      p.forwardPrimitive.execute(stream_, forward);
      args[DNNL_ARG_WORKSPACE] = workspace;
    }
    int argA = op == OpCode::Convolution || op == OpCode::MaxPool ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST;
    int argB = op == OpCode::ConvolutionBackwardWeight ? DNNL_ARG_SRC : DNNL_ARG_WEIGHTS;
    int argC = op == OpCode::Convolution || op == OpCode::MaxPool ? DNNL_ARG_DST
               : op == OpCode::ConvolutionBackwardWeight      ? DNNL_ARG_DIFF_WEIGHTS
                                                               : DNNL_ARG_DIFF_SRC;
    in(argA, p.plainA, operands[0]);
    if (op != OpCode::MaxPool && op != OpCode::MaxPoolBackward) in(argB, p.plainB, operands[1]);
    dnnl::memory result(p.plainC, engine_, c);
    dnnl::memory::desc want = p.pd.query_md(dnnl::query::exec_arg_md, argC);
    dnnl::memory chosen = want == p.plainC ? result : dnnl::memory(want, engine_);
    args[argC] = chosen;
    scratch(p.pd, args);
    p.primitive.execute(stream_, args);
    if (chosen != result) dnnl::reorder(chosen, result).execute(stream_, chosen, result);
    stream_.wait();
  }

private:
  static constexpr size_t kMaxPrimitives = 512;
  struct Primitive {
    dnnl::primitive primitive;
    dnnl::primitive_desc_base pd;
    dnnl::memory::desc plainA, plainB, plainC; ///< the operands' and the result's plain layouts
    dnnl::primitive forwardPrimitive;          ///< a max pool's backward: its forward pass
    dnnl::primitive_desc_base forward;
  };

  static dnnl::memory::format_tag activations(size_t n) {
    using tag = dnnl::memory::format_tag;
    return n == 1 ? tag::ncw : n == 2 ? tag::nchw : tag::ncdhw;
  }

  Primitive makeConvolution(OpCode op, const OpAttrs &attrs, std::span<const TensorType> types, const TensorType &tc) {
    using md = dnnl::memory::desc;
    using tag = dnnl::memory::format_tag;
    auto f32 = dnnl::memory::data_type::f32;
    const Shape &input = op == OpCode::ConvolutionBackwardInput ? tc.shape
                         : op == OpCode::Convolution            ? types[0].shape
                                                                : types[1].shape;
    const Shape &weight = op == OpCode::ConvolutionBackwardWeight ? tc.shape : types[1].shape;
    const Shape &output = op == OpCode::Convolution ? tc.shape : types[0].shape;
    size_t n = input.size() - 2;
    int64_t groups = attrs.count;
    dnnl::memory::dims src(input.begin(), input.end()), dst(output.begin(), output.end()), wei;
    if (groups > 1) { // (G, O / G, C / G, *kernel): the same bytes as (O, C / G, *kernel)
      wei = {groups, weight[0] / groups};
      wei.insert(wei.end(), weight.begin() + 1, weight.end());
    } else {
      wei.assign(weight.begin(), weight.end());
    }
    dnnl::memory::dims strides, dilates, padL, padR;
    for (size_t i = 0; i < n; ++i) {
      int64_t s = attrs.steps[i], d = attrs.axes[i], p = attrs.starts[i], k = weight[2 + i];
      strides.push_back(s);
      dilates.push_back(d - 1); // oneDNN counts the elements skipped between taps
      padL.push_back(p);
      // The padding after the input that gives `out` windows (the shape rule checked there is one).
      padR.push_back(std::max<int64_t>(0, (output[2 + i] - 1) * s + d * (k - 1) + 1 - input[2 + i] - p));
    }
    tag wtag = groups > 1 ? (n == 1 ? tag::goiw : n == 2 ? tag::goihw : tag::goidhw)
                          : (n == 1 ? tag::oiw : n == 2 ? tag::oihw : tag::oidhw);
    md srcPlain(src, f32, activations(n)), dstPlain(dst, f32, activations(n)), weiPlain(wei, f32, wtag);
    md srcAny(src, f32, tag::any), dstAny(dst, f32, tag::any), weiAny(wei, f32, tag::any);
    auto algo = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc forward(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, srcAny, weiAny, dstAny, strides,
                                        dilates, padL, padR),
        engine_);
    if (op == OpCode::Convolution)
      return {dnnl::convolution_forward(forward), forward, srcPlain, weiPlain, dstPlain, {}, {}};
    if (op == OpCode::ConvolutionBackwardInput) {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(algo, srcAny, weiAny, dstAny, strides, dilates, padL, padR), engine_,
          forward);
      return {dnnl::convolution_backward_data(pd), pd, dstPlain, weiPlain, srcPlain, {}, {}};
    }
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(algo, srcAny, weiAny, dstAny, strides, dilates, padL, padR), engine_,
        forward);
    return {dnnl::convolution_backward_weights(pd), pd, dstPlain, srcPlain, weiPlain, {}, {}};
  }

  Primitive makePool(OpCode op, const OpAttrs &attrs, std::span<const TensorType> types, const TensorType &tc) {
    using md = dnnl::memory::desc;
    auto f32 = dnnl::memory::data_type::f32;
    const Shape &input = op == OpCode::MaxPool ? types[0].shape : types[1].shape;
    const Shape &output = op == OpCode::MaxPool ? tc.shape : types[0].shape;
    size_t n = input.size() - 2;
    dnnl::memory::dims src(input.begin(), input.end()), dst(output.begin(), output.end()), strides, kernel, padL, padR;
    for (size_t i = 0; i < n; ++i) {
      int64_t s = attrs.steps[i], k = attrs.axes[i], p = attrs.starts[i];
      strides.push_back(s);
      kernel.push_back(k);
      padL.push_back(p);
      padR.push_back(std::max<int64_t>(0, (output[2 + i] - 1) * s + k - input[2 + i] - p));
    }
    md srcPlain(src, f32, activations(n)), dstPlain(dst, f32, activations(n));
    auto kind = op == OpCode::MaxPool ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
    dnnl::pooling_forward::primitive_desc forward(
        dnnl::pooling_forward::desc(kind, dnnl::algorithm::pooling_max, srcPlain, dstPlain, strides, kernel, padL, padR),
        engine_);
    if (op == OpCode::MaxPool) return {dnnl::pooling_forward(forward), forward, srcPlain, {}, dstPlain, {}, {}};
    dnnl::pooling_backward::primitive_desc pd(
        dnnl::pooling_backward::desc(dnnl::algorithm::pooling_max, srcPlain, dstPlain, strides, kernel, padL, padR),
        engine_, forward);
    return {dnnl::pooling_backward(pd), pd, dstPlain, srcPlain, srcPlain, dnnl::pooling_forward(forward), forward};
  }

  std::mutex mutex_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::unordered_map<std::string, Primitive> primitives_;
};

class CPUDevice final : public Device {
public:
  /// `threads` > 0: the threads of each GEMM and of each fused kernel's parallel loops; 0: the
  /// libraries' default, one per core. With MKL both are libomp's one pool of threads; with
  /// OpenBLAS, GEMMs run on OpenBLAS's own. Several workers on one machine should split its
  /// cores: a waiting thread spins for a while, so more threads than cores slow every process
  /// down (gt.gpu_workers(n) gives each of its n workers cores / n).
  /// libomp's threads spin 2 ms after a loop or GEMM before they sleep (KMP_BLOCKTIME=2 unless
  /// set): the units of a step follow one another closely, and waking sleeping threads took
  /// 50-150 us on the 2-core development machine, so with KMP_BLOCKTIME=0 (sleep at once) the
  /// char_gpt step took 55 ms against 42-43 with 1-20 ms (MKL; benchmarks/RESULTS.md). 2 ms
  /// bounds what the spinning takes from the client issuing the next step beside the worker.
  explicit CPUDevice(int threads) {
    // Read when libomp starts (its first call, below). The environment, not omp_set_num_threads:
    // that sets the calling thread's count, and kernels run on the executor's thread.
    ::setenv("KMP_BLOCKTIME", "2", /*overwrite=*/0);
    if (threads > 0) ::setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), /*overwrite=*/1);
    threads_ = omp_get_max_threads();
    strictGemms_ = mklStrictReproducibility();
    // libomp's extensions and MKL's per-thread count, where present (leaveCoreFree).
    gompParallel_ = reinterpret_cast<GompParallel>(dlsym(RTLD_DEFAULT, "GOMP_parallel"));
    setBlocktime_ = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "kmp_set_blocktime"));
    if (auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "kmp_get_blocktime"))) blocktimeMs_ = get();
    mklSetLocal_ = reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "MKL_Set_Num_Threads_Local"));
    if (threads > 0)
      if (SetThreads set = blasSetThreads()) set(threads);
    if (GetThreads get = blasGetThreads()) blasThreads_ = get();
  }
  /// One thread fewer for libomp's loops (omp_set_num_threads: the calling thread's count, and
  /// kernels run on the executor's thread) and for MKL's GEMMs (MKL_Set_Num_Threads_Local),
  /// only where that changes no result: fused kernels compute each element as on one thread,
  /// and MKL's GEMMs are in strict CNR mode (mklStrictReproducibility); elsewhere (OpenBLAS,
  /// older CPUs) it does nothing. The thread left out may be spinning for KMP_BLOCKTIME after
  /// the last loop: a loop of every thread with blocktime 0 sends them all to sleep at its end
  /// (libomp reads a waiting thread's blocktime when its wait begins), and the next loop with
  /// every thread wakes it again (50-150 us on the 2-core development VM).
  void leaveCoreFree(bool free) override {
    if (free == free_ || threads_ < 2 || !strictGemms_ || !mklSetLocal_) return;
    free_ = free;
    int n = free ? threads_ - 1 : threads_;
    if (free && gompParallel_ && setBlocktime_) {
      setBlocktime_(0);
      gompParallel_([](void *set) { reinterpret_cast<void (*)(int)>(set)(0); }, reinterpret_cast<void *>(setBlocktime_),
                    unsigned(threads_), 0);
      setBlocktime_(blocktimeMs_);
    }
    omp_set_num_threads(n);
    mklSetLocal_(n);
  }
  /// libomp starts its pool on the first parallel region, each new thread with its creator's
  /// CPUs: started here, before the pin, the kernels' and GEMMs' threads keep the process's.
  void pinExecutorThread(int cpu) override {
    // (libomp also sets its first thread's CPUs to the process's when it starts.)
    std::atomic<int> started{0};
#pragma omp parallel num_threads(threads_)
    started += omp_get_thread_num() >= 0;
    Device::pinExecutorThread(cpu);
  }
  // The thread counts it was started with (leaveCoreFree lowers them for a while).
  std::string describe() const override {
    std::string kernels = ", " + std::to_string(threads_) + " kernel threads";
    std::string blas = std::string(", ") + blasName();
    return blasThreads_ ? "cpu" + blas + " with " + std::to_string(blasThreads_) + " threads" + kernels : "cpu" + blas + kernels;
  }
  std::vector<std::pair<std::string, double>> counters() const override {
    std::vector<std::pair<std::string, double>> out{{"kernel_threads", double(threads_)},
                                                    {"matmuls_threaded_by_batch", double(threadedBatches_.load())},
                                                    {"matmuls_jit_gemm", double(JitGemms::runs.load())}};
    if (blasThreads_) out.push_back({"blas_threads", double(blasThreads_)});
    return out;
  }
  CompilerTarget target() const override { return {}; }
  uint64_t capacity() const override { return hostMemoryAvailable(); }
  Buffer allocate(size_t bytes) override {
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, rounded);
    if (!p) throw std::runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
    return {std::shared_ptr<std::byte>(static_cast<std::byte *>(p), std::free), bytes};
  }
  void upload(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void setScalar(void *dst, uint64_t bits) override { std::memcpy(dst, &bits, 8); }
  void matmul(const TensorType &ta, const void *a, const TensorType &tb, const void *b, const TensorType &tc,
              void *c, Transposed transposed) override {
    if (!isFloating(tc.dtype))
      throw std::invalid_argument(std::string("matmul supports floating-point tensors, not ") + dtypeName(tc.dtype));
    if (numElements(tc.shape) == 0) return;
    if (numElements(ta.shape) == 0 || numElements(tb.shape) == 0) { // an empty sum (k = 0): zeros, as PyTorch's
      std::memset(c, 0, size_t(numElements(tc.shape)) * dtypeSize(tc.dtype));
      return;
    }
    if (tc.dtype == DType::Float32 || tc.dtype == DType::Float64) {
      threadedBatches_ += matmulBlas(ta, a, tb, b, tc, c, transposed);
      return;
    }
    // float16 / bfloat16: no BLAS has them, so widen to float32, sgemm, round once (the
    // products are summed in float32, as cuBLAS's CUBLAS_COMPUTE_32F does).
    bool half = tc.dtype == DType::Float16;
    auto widen = [&](const TensorType &t, const void *p) {
      std::vector<float> out(numElements(t.shape));
      auto bits = static_cast<const uint16_t *>(p);
      for (size_t i = 0; i < out.size(); ++i) out[i] = half ? halfToFloat(bits[i]) : bfloat16ToFloat(bits[i]);
      return out;
    };
    std::vector<float> a32 = widen(ta, a), b32 = widen(tb, b), c32(numElements(tc.shape));
    TensorType fa{DType::Float32, ta.shape}, fb{DType::Float32, tb.shape}, fc{DType::Float32, tc.shape};
    threadedBatches_ += matmulBlas(fa, a32.data(), fb, b32.data(), fc, c32.data(), transposed); // (widening keeps the layout)
    auto out = static_cast<uint16_t *>(c);
    for (size_t i = 0; i < c32.size(); ++i) out[i] = half ? floatToHalf(c32[i]) : floatToBFloat16(c32[i]);
  }

  /// oneDNN's convolutions and pools, always on all of the device's threads whatever
  /// leaveCoreFree set: how oneDNN splits a weight gradient's sums depends on the thread count,
  /// and a result must not depend on when the client was issuing.
  bool runLibraryOp(OpCode op, const OpAttrs &attrs, std::span<const TensorType> types,
                    std::span<const void *const> operands, const TensorType &tc, void *c) override {
    if (!OneDNN::runs(op)) return false;
    struct Restore { // leaveCoreFree's count again, however the op ends
      int threads;
      ~Restore() { if (threads) omp_set_num_threads(threads); }
    } restore{free_ ? threads_ - 1 : 0};
    if (free_) omp_set_num_threads(threads_);
    try {
      oneDNN_.run(op, attrs, types, operands, tc, c);
    } catch (const dnnl::error &e) {
      throw std::invalid_argument(std::string(opInfo(op).mnemonic) + ": oneDNN refused it: " + e.what());
    }
    return true;
  }

private:
  OneDNN oneDNN_;
  int threads_ = 1;   ///< libomp's threads (--threads, else one per core)
  int blasThreads_ = 0; ///< the BLAS library's (0: unknown)
  bool strictGemms_ = false; ///< GEMMs give the same bits on any number of threads (MKL's strict CNR)
  bool free_ = false; ///< leaveCoreFree(true) holds
  using GompParallel = void (*)(void (*)(void *), void *, unsigned, unsigned);
  GompParallel gompParallel_ = nullptr;   ///< libomp's GOMP_parallel(fn, data, threads, flags)
  void (*setBlocktime_)(int) = nullptr;   ///< kmp_set_blocktime(ms), the calling thread's
  int blocktimeMs_ = 2;                   ///< KMP_BLOCKTIME as libomp read it
  int (*mklSetLocal_)(int) = nullptr;     ///< MKL_Set_Num_Threads_Local(n), the calling thread's
  std::atomic<uint64_t> threadedBatches_{0}; ///< matmuls whose batch ran on the OpenMP threads
};

} // namespace

void Device::pinExecutorThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0 || cpu >= CPU_SETSIZE)
    throw std::runtime_error("cannot pin the executor thread to CPU " + std::to_string(cpu) + ": no such CPU");
  CPU_SET(cpu, &set);
  if (int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set))
    throw std::runtime_error("cannot pin the executor thread to CPU " + std::to_string(cpu) + ": " + std::strerror(err));
}

std::unique_ptr<Device> createCPUDevice(int threads) { return std::make_unique<CPUDevice>(threads); }

std::unique_ptr<Device> createDevice(const std::string &name, bool allowTF32, int cpuThreads) {
  if (name == "cpu") return createCPUDevice(cpuThreads);
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    CUDAOptions options;
    options.allowTF32 = allowTF32;
    if (name.size() > 5) {
      try {
        size_t used = 0;
        options.ordinal = std::stoi(name.substr(5), &used);
        if (used != name.size() - 5 || options.ordinal < 0) throw std::invalid_argument("");
      } catch (const std::exception &) {
        throw std::invalid_argument("bad device '" + name + "': expected cuda:N with N a GPU index");
      }
    }
    return createCUDADevice(options);
  }
  throw std::invalid_argument("unknown device '" + name + "': expected 'cpu' or 'cuda:N'");
}

} // namespace gt::worker
