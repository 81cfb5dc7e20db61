// Included first in every file of the fuzz build (clang, C++20, address sanitizer).
#pragma once

// Cap'n Proto 0.9's kj leaves out `const char* == StringPtr` in C++20, where GCC finds the
// comparison through the member operator with the operands reversed and clang does not.
#if defined(__clang__) && __cpp_impl_three_way_comparison
#include <kj/string.h>
namespace kj {
inline bool operator==(const char *a, const StringPtr &b) { return b == StringPtr(a); }
inline bool operator==(const char *a, const String &b) { return b == StringPtr(a); }
} // namespace kj
#endif

// Debian's LLVM and MLIR libraries are not instrumented: their allocators never unpoison what
// LLVM's inline allocator code, compiled into our instrumented files, poisons (a false
// "use-after-poison" at the first MLIRContext). So LLVM's manual poisoning is turned off; the
// sanitizer still checks every heap and stack access of GT's own code.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define __asan_poison_memory_region(addr, size) ((void)(addr), (void)(size))
#define __asan_unpoison_memory_region(addr, size) ((void)(addr), (void)(size))
#endif
#endif
