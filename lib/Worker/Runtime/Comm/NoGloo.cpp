// Builds without Gloo (the static device bundle): distribution ops report that they need it.
#include "gt/Worker/Communicator.h"

#include <stdexcept>

namespace gt::worker {
std::unique_ptr<Communicator> createGlooCommunicator(int64_t, const std::string &, std::shared_ptr<KeyValueStore>, Device *) {
  throw std::runtime_error("this gt-worker was built without Gloo: collectives between CPU workers are unavailable");
}
} // namespace gt::worker
