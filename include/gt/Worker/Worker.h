// gt-worker: connects to a dispatcher, registers, and executes the programs it is sent.
#pragma once

#include "gt/Transport/Connection.h"

#include <cstdint>
#include <string>

namespace gt::worker {

struct Options {
  std::string host = "127.0.0.1"; ///< the dispatcher's address
  int port = 0;                   ///< the dispatcher's port
  std::string device = "cpu";     ///< "cpu" or "cuda:N"
  std::string workerToken;        ///< GT_WORKER_TOKEN: the dispatcher's worker credential
  std::string workerTokenFile;    ///< read when workerToken is empty (the file a dispatcher on this
                                  ///< machine wrote: ~/.gt/worker-token-PORT)
  transport::TlsOptions tls;      ///< caFile set: TLS to the dispatcher, trusting only those certificates
                                  ///< (GT_TLS_CA); certFile + keyFile: the --listen socket's TLS
  uint64_t memoryBytes = 0;       ///< what tensors may take on the device (--memory); 0: 4/5 of what
                                  ///< it has free at start
  uint64_t sessionMemoryBytes = 0; ///< one session's quota (--session-memory N); 0: see the fraction
  double sessionMemoryFraction = 0.5; ///< one session's quota as a share of memoryBytes (--session-memory N%)
  std::string cacheDir;           ///< kernel disk cache; KernelCompiler::defaultCacheDir() if empty
  bool syncCompile = false;       ///< compile hot regions before their first run (GT_JIT_SYNC=1)
  bool verifyRegions = false;     ///< check every fused replay against eager execution (GT_JIT_VERIFY=1)
  std::string address;            ///< where other workers reach this one (collectives); "" = the
                                  ///< local address of the route to the dispatcher
  bool allowTF32 = false;         ///< CUDA: float32 GEMM may use TF32 tensor cores (--allow-tf32, GT_ALLOW_TF32=1)
  int threads = 0;                ///< CPU: BLAS threads (--threads); 0 = the BLAS default (all cores)
  bool clientCore = false;        ///< --client-core: leave a core to a client on this machine while
                                  ///< it issues its next step (SchedulerOptions::clientCore)
  /// --executor-cpu: the CPU the thread that runs programs is pinned to, and that the worker's
  /// RPC thread stays off (SchedulerOptions::executorCpu); -1: none (the kernel places them).
  int executorCpu = -1;
  /// --idle-spin-us: how long the executor polls for work before it sleeps (SchedulerOptions::idleSpinUs).
  int idleSpinUs = 0;
  /// --listen: where this worker accepts sessions' direct reads of their own tensors ("unix:PATH"
  /// or "host:port", port 0: a free one; "": nowhere, clients fetch through the dispatcher).
  /// TLS (GT_TLS_CERT and GT_TLS_KEY in `tls`) when both are set.
  std::string listen;
  int metricsPort = -1;           ///< --metrics-port: serve Prometheus metrics there (0: a free port; -1: off)
  std::string metricsHost = "127.0.0.1"; ///< --metrics-host: the address /metrics binds (unauthenticated)
};

/// Serves until the dispatcher goes away (then returns). Throws std::runtime_error if the
/// dispatcher cannot be reached or refuses the worker, or the device cannot be used
/// (unknown name, no CUDA driver or GPU: the message says which).
void serve(const Options &options);

} // namespace gt::worker
