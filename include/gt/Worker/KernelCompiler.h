// The worker's kernel compiler: one gt op, or a fused region of them, -> linalg -> LLVM ->
// machine code, cached in memory and on disk.
//
// A kernel is keyed by op, operand and result types and the attributes that shape the code
// (axes, keepdims, classes); fill values and seeds are passed at run time, so one compiled
// kernel serves every value. The disk cache holds object files under
// `<cacheDir>/kernels/<hash>.o`, where the hash covers the kernel's MLIR, GT's compiler version
// and the host target (triple, CPU, features): a second process finds them and compiles nothing.
#pragma once

#include <optional>

#include "gt/Core/OpTable.h"

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gt::worker {

/// A compiled kernel. `invoke` takes one pointer per argument (operands, then results); each
/// points at a ranked memref descriptor {allocated, aligned, offset, sizes[r], strides[r]}.
struct Kernel {
  /// The most arguments a kernel takes (gt-mark-hot-regions' max-args cuts regions to fit).
  static constexpr int kMaxArgs = 64;
  void *entry = nullptr;
  int numArgs = 0;
  /// CUDA target, compiled in this process: the PTX of each GPU kernel it launches (empty when
  /// loaded from the disk cache, where the PTX sits inside the object file).
  std::vector<std::string> ptx;
  void invoke(void **descriptors) const;
};

/// A fused region: ops over numbered values. Values 0..inputs.size()-1 are the inputs, value
/// inputs.size()+i is ops[i]'s result. The kernel's arguments are the inputs, then one 0-d f64
/// fill value per Full op (in op order), then one buffer per output.
struct RegionSpec {
  struct Op {
    OpCode code;
    OpAttrs attrs;
    std::vector<int> operands; ///< value numbers
    TensorType type;           ///< result type
  };
  std::vector<TensorType> inputs;
  std::vector<Op> ops;
  std::vector<int> outputs;    ///< value numbers of the results, in output order
  int numFills() const;
  int numArgs() const { return int(inputs.size()) + numFills() + int(outputs.size()); }
};

struct CompilerStats {
  uint64_t compiled = 0;   ///< kernels built from MLIR in this process
  uint64_t memoryHits = 0; ///< lookups served by the in-memory table
  uint64_t diskHits = 0;   ///< kernels loaded from the disk cache instead of compiled
  double compileMs = 0;    ///< wall time spent compiling, milliseconds
  double diskLoadMs = 0;   ///< wall time spent loading kernels from the disk cache, milliseconds
};

/// What kernels are compiled for. CPU: the whole kernel is host code. CUDA: host code that
/// allocates through, and launches GPU kernels (PTX for `chip`) with, the mgpu* functions in
/// `symbols` (the mgpu* runtime in lib/Worker/Runtime/CUDA/CUDADevice.cpp); the entry's memref arguments hold
/// device pointers.
struct CompilerTarget {
  enum class Kind { CPU, CUDA } kind = Kind::CPU;
  std::string chip = "sm_90";                            ///< CUDA compute capability
  std::vector<std::pair<std::string, void *>> symbols;  ///< extra symbols the JIT resolves
};

/// A run-time check a kernel failed (an index out of range, an integer division by zero):
/// see mlir::gt::kRuntimeErrorFunction (GPU kernels: kRuntimeErrorGlobal, Device::takeKernelError). The kernel goes on (clamped index, 0 quotient) and
/// the first failure since the last takeKernelError() is kept.
struct KernelError {
  OpCode op;          ///< the op whose check failed (of a fused region: one of its ops)
  int64_t check = 0;  ///< a mlir::gt::RuntimeCheck
  int64_t value = 0;  ///< the bad index or class, or the dividend
  int64_t bound = 0;  ///< what an index must stay below
  /// PyTorch's wording: "index 12 is out of bounds for dimension with size 10",
  /// "ZeroDivisionError", "Class values must be smaller than num_classes (got 12, 10 classes)".
  std::string message() const;
};

/// The first check a kernel of this process failed since the last call (and clears it); what
/// runs kernels calls it after each. Thread-safe (kernels' loops run on several threads).
std::optional<KernelError> takeKernelError();

class KernelCompiler {
public:
  /// `cacheDir` empty disables the disk cache. Throws std::runtime_error if the host target
  /// cannot be set up.
  explicit KernelCompiler(std::string cacheDir, CompilerTarget target = {});
  ~KernelCompiler();

  /// The kernel for `op` on `operands` producing `result`. Full and randn take one 0-d operand
  /// (the f64 fill value or i64 seed). Throws std::runtime_error naming the op if lowering or
  /// code generation fails.
  const Kernel &get(OpCode op, std::span<const TensorType> operands, const OpAttrs &attrs,
                    const TensorType &result);
  /// Whether get() with these arguments would return (or throw) without compiling: the kernel
  /// is in memory, or failed before. Thread-safe; never waits for a compile in progress, so the
  /// thread that runs programs can ask a compile thread for what is missing (Executor).
  bool ready(OpCode op, std::span<const TensorType> operands, const OpAttrs &attrs, const TensorType &result);

  /// One kernel for a whole region: gt ops -> linalg -> elementwise fusion (producers fused
  /// into their consumers, reductions included) -> LLVM. Throws std::runtime_error saying why
  /// when lowering or code generation fails, or the region needs more than Kernel::kMaxArgs
  /// arguments.
  const Kernel &getRegion(const RegionSpec &region);

  /// A copy between two strided views of `rank`-d tensors of `dtype`: both arguments are
  /// memref<?x...x?xT, strided<[?, ...], offset: ?>>, so sizes, strides and offsets (in
  /// elements) come from the descriptors at run time, and one kernel per dtype and rank serves
  /// every slice, transpose, broadcast and concat whatever its shapes and offsets (PyTorch's
  /// as_strided + copy_). CPU target only: throws std::logic_error for CUDA (those ops compile
  /// per shape there, with get()). rank >= 1.
  const Kernel &getStridedCopy(DType dtype, int rank);

  CompilerStats stats() const;

  /// The default cache directory: $GT_CACHE_DIR, else ~/.cache/gt.
  static std::string defaultCacheDir();

private:
  const Kernel &compileRegion(const std::string &key, const RegionSpec &region);
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace gt::worker
