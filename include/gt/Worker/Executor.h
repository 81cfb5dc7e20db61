// The worker's executor: runs instructions in order against its tensor table.
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Worker/KernelCompiler.h"

#include <memory>
#include <unordered_map>

namespace gt::worker {

/// A tensor's bytes (row-major, dtypeSize(dtype) per element) on the host.
struct HostBuffer {
  std::shared_ptr<std::byte> data;
  size_t bytes = 0;
};

/// Result of fetching a tensor: its bytes, or the error that poisoned it.
struct Fetched {
  TensorType type;
  std::string bytes;
  std::string error; ///< non-empty: the op that failed, the user's line and why
};

struct ExecutorStats {
  uint64_t instructions = 0; ///< instructions executed (frees included)
  uint64_t liveTensors = 0;
  uint64_t liveBytes = 0;
  uint64_t peakBytes = 0;
};

/// Executes instructions on the CPU: GEMM through BLAS, reshape as an alias, everything else
/// through kernels from the KernelCompiler. A failing instruction never throws: it poisons
/// its result with an error naming the op and the user's line, and every instruction that
/// reads a poisoned tensor is poisoned with the same error.
class Executor {
public:
  explicit Executor(std::string cacheDir);

  void run(const Instruction &inst);
  /// The tensor `id`, or an error if it is poisoned or does not exist.
  Fetched fetch(uint64_t id) const;

  ExecutorStats stats() const;
  KernelCompiler &compiler() { return compiler_; }

private:
  struct Tensor {
    TensorType type;
    HostBuffer buffer;
    std::string error;
  };
  void execute(const Instruction &inst, const std::vector<const Tensor *> &in, Tensor &out);
  HostBuffer allocate(size_t bytes);
  void release(const Tensor &t);

  KernelCompiler compiler_;
  std::unordered_map<uint64_t, Tensor> tensors_;
  ExecutorStats stats_;
};

} // namespace gt::worker
