// A worker's device: where tensors live, how bytes move, GEMM, and what kernels compile for.
//
// The Executor is written once against this interface; CPUDevice keeps tensors in host memory
// (BLAS for GEMM), CUDADevice in GPU memory (caching allocator, one compute stream, pinned
// staging for copies, cuBLAS for GEMM). Every method that queues work queues it in order:
// a later kernel sees an earlier upload, and download() waits for everything before it.
#pragma once

#include "gt/Core/DType.h"
#include "gt/Core/OpTable.h"
#include "gt/Worker/KernelCompiler.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gt::worker {

/// A tensor's bytes (row-major, dtypeSize(dtype) per element) in the device's memory. The
/// deleter hands the memory back to the device (for CUDA: to its caching allocator).
struct Buffer {
  std::shared_ptr<std::byte> data;
  size_t bytes = 0;
};

class Device {
public:
  virtual ~Device() = default;
  /// "cpu", or "cuda:0 (NVIDIA H100 80GB HBM3, sm_90)".
  virtual std::string describe() const = 0;
  /// Which physical device this is, the same in every process that uses it: "cpu", or
  /// "GPU-<uuid>" (the driver's UUID, whatever CUDA_VISIBLE_DEVICES calls the GPU).
  virtual std::string physicalId() const { return "cpu"; }
  /// What the kernel compiler builds for, and the runtime functions the kernels call.
  virtual CompilerTarget target() const = 0;
  /// `bytes` of device memory (at least 1). Throws std::runtime_error when out of memory.
  virtual Buffer allocate(size_t bytes) = 0;
  /// Queues a copy of `bytes` host bytes to device memory; `src` may be reused on return.
  virtual void upload(void *dst, const void *src, size_t bytes) = 0;
  /// Copies device bytes to the host after all queued work; throws the error of any queued
  /// work that failed (for CUDA: a kernel fault, with the driver's name for it).
  virtual void download(void *dst, const void *src, size_t bytes) = 0;
  /// Queues a copy of `bytes` device bytes from `src` to `dst` (device memory both).
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  /// The CUDA stream the device queues its work on (a CUstream), or nullptr for the CPU.
  virtual void *nativeStream() const { return nullptr; }
  /// Whether device memory is host memory (the CPU device): its pointers may be read directly.
  virtual bool hostMemory() const { return nativeStream() == nullptr; }
  /// Queues writing the 8 bytes `bits` (an f64 fill value or an i64 seed) at `dst`.
  virtual void setScalar(void *dst, uint64_t bits) = 0;
  /// Which matmul operands are stored transposed: the buffer of a transposed operand of type
  /// (..., r, c) holds its matrices with the last two axes swapped, row-major (..., c, r).
  struct Transposed {
    bool lhs = false, rhs = false;
  };
  /// C = A @ B with NumPy's matmul semantics (1-D promotion, broadcast batch dimensions);
  /// floating-point dtypes. `transposed` operands (rank >= 2) go to the GEMM as transposed
  /// (CblasTrans, CUBLAS_OP_T) rather than being copied. Throws std::invalid_argument for other
  /// dtypes.
  virtual void matmul(const TensorType &ta, const void *a, const TensorType &tb, const void *b,
                      const TensorType &tc, void *c, Transposed transposed) = 0;
  /// An op the device runs with a library rather than a compiled kernel: convolutions
  /// (gt.convolution, gt.convolution_backward_input, gt.convolution_backward_weight) and max
  /// pools (gt.max_pool, gt.max_pool_backward); `attrs` as the op spec stores them. Float32
  /// operands of `types` at `operands`, the result `c` of type `tc`, all contiguous row-major
  /// (NCHW-style). Queued in order like a kernel. Returns false, doing nothing, where the device
  /// has no library for `op` (the default): the executor then runs the op's compiled kernel
  /// (LowerToLinalg.cpp: lowerConvolution, lowerMaxPool), correct but far slower.
  virtual bool runLibraryOp(OpCode op, const OpAttrs &attrs, std::span<const TensorType> types,
                            std::span<const void *const> operands, const TensorType &tc, void *c) {
    return false;
  }
  /// Throws the first error a kernel launch recorded since the last call (none for the CPU).
  virtual void checkLaunches() {}
  /// The first run-time check (an index out of range, ...) that the kernels run since the last
  /// call failed, and clears it (mlir::gt::kRuntimeErrorFunction). CPU: what the kernels
  /// reported (worker::takeKernelError). CUDA: read from the error globals of the modules
  /// launched since (gt-gpu-runtime-errors), which waits for them to run.
  virtual std::optional<KernelError> takeKernelError() { return worker::takeKernelError(); }
  /// Waits until everything queued so far has run, at most `seconds`; false if it had not by
  /// then (a collective waiting for a peer that is gone). Throws the error of failed work.
  virtual bool waitIdle(double seconds) { return true; }
  /// Makes the calling thread able to use the device (CUDA: makes its context current). The
  /// thread that runs programs calls it once before its first.
  virtual void bindThread() {}
  /// Pins the calling thread (the one that runs programs) to CPU `cpu` (Linux's numbering, as
  /// taskset's). CPU: the kernels' and GEMMs' other threads are started first, so that they
  /// keep the cores the process had (they would otherwise inherit the one CPU). Throws
  /// std::runtime_error naming the CPU if the kernel refuses it (not one this process may use).
  virtual void pinExecutorThread(int cpu);
  /// Bytes tensors could take on this device now (host: the memory the kernel says is
  /// available, within the process's cgroup limit; CUDA: the GPU's free memory); 0: unknown.
  virtual uint64_t capacity() const { return 0; }
  /// CPU: whether the kernels and GEMMs run from now on leave one of the device's threads'
  /// cores to another process (a client issuing its next step on the same machine): they run
  /// on one thread fewer, and the thread left out sleeps rather than spins. Others ignore it.
  virtual void leaveCoreFree(bool free) {}
  /// Device counters for gt.debug.stats() (allocator bytes, cache hits, ...).
  virtual std::vector<std::pair<std::string, double>> counters() const { return {}; }

  /// CUDA graphs (stream capture; the GPU issue's item 4). beginCapture: the work queued from
  /// the calling thread from now on is recorded into a graph, not run; false where the device
  /// has no graphs (the CPU) or capture could not start. endCapture: the recorded work as a
  /// graph for launchGraph, which queues all of it again with one driver call (the same
  /// kernels, arguments and buffers each time), or null when capture failed, in which case
  /// nothing ran and the caller runs the work directly. Device memory the captured work
  /// allocated for itself (kernel temporaries) belongs to the graph until the returned handle
  /// goes. The caller must not launch a graph unless every buffer it was captured with is
  /// again the right one to read and write.
  virtual bool beginCapture() { return false; }
  virtual std::shared_ptr<void> endCapture() { return nullptr; }
  virtual void launchGraph(void *graph) {}
  /// GPU kernels launched so far (a graph's launch counts its kernels); 0 for the CPU.
  virtual uint64_t kernelLaunches() const { return 0; }
  /// Bytes of device memory a graph from endCapture keeps (its kernel temporaries).
  virtual size_t graphBytes(const void *graph) const { return 0; }

  /// Device time, for traces. A timing event recorded on the device's queue now (CUDA: a
  /// CUevent on the compute stream); nullptr where work runs on the calling thread as it is
  /// queued (the CPU), so that the host's clock already times it. Free it with
  /// destroyTimingEvent.
  virtual void *recordTimingEvent() { return nullptr; }
  /// Nanoseconds from timing event `from` to `to` on the device's clock, waiting until `to` has
  /// happened (resolution about 0.5 us on CUDA); both from recordTimingEvent. Any thread.
  virtual int64_t elapsedNs(void *from, void *to) { return 0; }
  virtual void destroyTimingEvent(void *event) {}
};

/// The host: aligned host memory, cblas GEMM, kernels JIT-compiled for the host CPU.
std::unique_ptr<Device> createCPUDevice(int threads = 0);

struct CUDAOptions {
  int ordinal = 0;         ///< which GPU (cuda:N)
  bool allowTF32 = false;  ///< float32 GEMM may use TF32 tensor cores (about 1e-3 relative error)
};

/// A CUDA GPU through the driver API, loaded at run time: a binary built with this works on
/// machines without a GPU, and this throws std::runtime_error saying why (no libcuda.so.1,
/// no device N, no libdevice for the kernel compiler, ...) when it cannot start.
std::unique_ptr<Device> createCUDADevice(const CUDAOptions &options);

/// Whether a CUDA driver and at least one GPU are present (tests skip on false), and if not, why.
bool cudaAvailable(std::string *why = nullptr);

/// The CUDA compiler target for `chip` with GT's mgpu* runtime functions, usable without a GPU:
/// kernels compile (tests check their PTX with ptxas); running them needs createCUDADevice.
CompilerTarget cudaCompileOnlyTarget(const std::string &chip = "sm_90");

/// A device from its name: "cpu" or "cuda:N" (also "cuda" = "cuda:0"). `cpuThreads` > 0 sets
/// how many threads the CPU device's BLAS (OpenBLAS) uses; 0 keeps the library's default (one
/// per core, or $OPENBLAS_NUM_THREADS). Throws std::invalid_argument for any other name.
std::unique_ptr<Device> createDevice(const std::string &name, bool allowTF32 = false, int cpuThreads = 0);

} // namespace gt::worker
