// Builds without the CUDA toolkit's nccl.h: CUDA workers use Gloo over host memory instead.
#include "gt/Worker/Communicator.h"

#include <stdexcept>

namespace gt::worker {
std::unique_ptr<Communicator> createNCCLCommunicator(int64_t, std::shared_ptr<KeyValueStore>, Device &) {
  throw std::runtime_error("this gt-worker was built without NCCL (no nccl.h at build time)");
}
} // namespace gt::worker
