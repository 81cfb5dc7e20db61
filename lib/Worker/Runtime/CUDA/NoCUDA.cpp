// Built without the CUDA toolkit's headers: no CUDA device (the CPU device works).
#include "gt/Worker/Device.h"

#include <stdexcept>

namespace gt::worker {
static const char *kWhy = "this gt-worker was built without the CUDA toolkit (install it and rebuild)";
std::unique_ptr<Device> createCUDADevice(const CUDAOptions &) { throw std::runtime_error(kWhy); }
bool cudaAvailable(std::string *why) {
  if (why) *why = kWhy;
  return false;
}
CompilerTarget cudaCompileOnlyTarget(const std::string &) { throw std::runtime_error(kWhy); }
} // namespace gt::worker
