// gt-worker: connects to a dispatcher, registers, and executes the programs it is sent.
#pragma once

#include <string>

namespace gt::worker {

struct Options {
  std::string host = "127.0.0.1"; ///< the dispatcher's address
  int port = 0;                   ///< the dispatcher's port
  std::string device = "cpu";     ///< "cpu" (the CUDA worker arrives with the JIT issue)
  std::string token;              ///< GT_TOKEN
  std::string cacheDir;           ///< kernel disk cache; KernelCompiler::defaultCacheDir() if empty
  bool syncCompile = false;       ///< compile hot regions before their first run (GT_JIT_SYNC=1)
  bool verifyRegions = false;     ///< check every fused replay against eager execution (GT_JIT_VERIFY=1)
};

/// Serves until the dispatcher goes away (then returns). Throws std::runtime_error if the
/// dispatcher cannot be reached or refuses the worker, or the device is unsupported.
void serve(const Options &options);

} // namespace gt::worker
