// The worker's kernel compiler: one gt op -> linalg -> LLVM -> machine code, cached in memory and
// on disk.
//
// A kernel is keyed by op, operand and result types and the attributes that shape the code
// (axes, keepdims, classes); fill values and seeds are passed at run time, so one compiled
// kernel serves every value. The disk cache holds object files under
// `<cacheDir>/kernels/<hash>.o`, where the hash covers the kernel's MLIR, GT's compiler version
// and the host target (triple, CPU, features): a second process finds them and compiles nothing.
#pragma once

#include "gt/Core/OpTable.h"

#include <memory>
#include <span>
#include <string>

namespace gt::worker {

/// A compiled kernel. `invoke` takes one pointer per operand and then one for the result; each
/// points at a ranked memref descriptor {allocated, aligned, offset, sizes[r], strides[r]}.
struct Kernel {
  void *entry = nullptr;
  int numArgs = 0;
  void invoke(void **descriptors) const;
};

struct CompilerStats {
  uint64_t compiled = 0;   ///< kernels built from MLIR in this process
  uint64_t memoryHits = 0; ///< lookups served by the in-memory table
  uint64_t diskHits = 0;   ///< kernels loaded from the disk cache instead of compiled
  double compileMs = 0;    ///< wall time spent compiling, milliseconds
};

class KernelCompiler {
public:
  /// `cacheDir` empty disables the disk cache. Throws std::runtime_error if the host target
  /// cannot be set up.
  explicit KernelCompiler(std::string cacheDir);
  ~KernelCompiler();

  /// The kernel for `op` on `operands` producing `result`. Full and randn take one 0-d operand
  /// (the f64 fill value or i64 seed). Throws std::runtime_error naming the op if lowering or
  /// code generation fails.
  const Kernel &get(OpCode op, std::span<const TensorType> operands, const OpAttrs &attrs,
                    const TensorType &result);

  CompilerStats stats() const;

  /// The default cache directory: $GT_CACHE_DIR, else ~/.cache/gt.
  static std::string defaultCacheDir();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace gt::worker
