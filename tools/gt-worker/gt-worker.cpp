// gt-worker: executes GT programs on one device; registers with a dispatcher.
#include "gt/Worker/Worker.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

namespace {

/// "8589934592", "8GiB", "512M", "2G" (powers of 1024) -> bytes; 0 for anything else.
uint64_t parseBytes(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  std::string unit = end;
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  double scale = unit.empty() ? 1 : unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0 : 0;
  return v > 0 && scale > 0 ? uint64_t(v * scale) : 0;
}

} // namespace

int main(int argc, char **argv) {
  gt::worker::Options options;
  std::string memory, sessionMemory;
  CLI::App app{"GT worker: compiles and runs GT programs on one device"};
  app.add_option("--host", options.host, "dispatcher address (unix:PATH: the socket of its --unix)")->capture_default_str();
  app.add_option("-p,--port", options.port, "dispatcher port")->required();
  app.add_option("--device", options.device, "cpu, or cuda:N for GPU N")->capture_default_str();
  app.add_option("--address", options.address,
                 "address other workers use to reach this one for collectives (default: the local "
                 "address of the route to the dispatcher)");
  app.add_option("--listen", options.listen,
                 "accept clients' direct reads of their own tensors here: unix:PATH, or HOST:PORT (port 0: a "
                 "free one); each client proves its session with a token the dispatcher gives it (TLS with "
                 "GT_TLS_CERT and GT_TLS_KEY). A fetch then takes one hop instead of two");
  app.add_option("--threads", options.threads,
                 "cpu: the threads of each GEMM (MKL or OpenBLAS) and of each large fused kernel's loops and "
                 "each batch of small GEMMs (OpenMP; with MKL one pool for both); "
                 "default: the libraries', one per core. Eager kernels run on the worker's one executor "
                 "thread. Workers sharing a machine should split "
                 "its cores. Idle OpenMP threads spin KMP_BLOCKTIME ms (default 2) before they sleep; with "
                 "OpenBLAS, set OPENBLAS_THREAD_TIMEOUT=4 beside clients on the same cores so that "
                 "idle BLAS threads sleep instead of spinning (auto-started workers get it)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--client-core", options.clientCore,
               "cpu: a client runs on this machine's cores (auto-started workers get it): from the answer to a "
               "session's fetch until its next submit, while nothing else waits or runs here, run kernels and "
               "GEMMs on one thread fewer, so that the client issuing its next step has a core of its own "
               "(only where that changes no result: MKL in strict CNR mode)");
  app.add_option("--executor-cpu", options.executorCpu,
                 "cpu: pin the thread that runs kernels to this CPU (Linux's numbering, as taskset's) and keep the "
                 "worker's RPC thread off it; the kernels' other threads keep every CPU. Auto-started workers beside "
                 "their client get the last CPU, the dispatcher the others (GT_PIN_EXECUTOR=0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--idle-spin-us", options.idleSpinUs,
                 "microseconds the thread that runs kernels keeps polling for the next batch once its work runs out, "
                 "before it sleeps (default 0: it sleeps at once; auto-started workers with --executor-cpu get 2000, "
                 "GT_IDLE_SPIN_US). Polling takes that CPU's time, and wakes a batch 50-100 us sooner on a VM")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--memory", memory,
                 "what tensors may take on the device, e.g. 8GiB (default: 4/5 of what it has free at start)");
  app.add_option("--session-memory", sessionMemory,
                 "one session's quota: bytes (e.g. 2GiB) or a share of --memory (e.g. 50%, the default)");
  app.add_option("--worker-token-file", options.workerTokenFile,
                 "read the worker token here when GT_WORKER_TOKEN is unset (default: the file a dispatcher on "
                 "this machine writes, ~/.gt/worker-token-PORT)");
  app.add_option("--metrics-port", options.metricsPort,
                 "serve Prometheus metrics at http://METRICS_HOST:PORT/metrics (0: a free port, printed; default off)");
  app.add_option("--metrics-host", options.metricsHost, "the address --metrics-port binds (unauthenticated)")
      ->capture_default_str();
  app.add_flag("--allow-tf32", options.allowTF32, "CUDA: float32 matmul may use TF32 tensor cores");
  app.add_flag("--sync-compile", options.syncCompile,
               "compile a hot region before its first run instead of in the background");
  CLI11_PARSE(app, argc, argv);
  if (!memory.empty() && !(options.memoryBytes = parseBytes(memory))) {
    std::cerr << "gt-worker: --memory must be a size such as 8GiB or 512MiB, got '" << memory << "'" << std::endl;
    return 1;
  }
  if (!sessionMemory.empty()) {
    if (sessionMemory.back() == '%') {
      double percent = std::strtod(sessionMemory.c_str(), nullptr);
      if (percent <= 0 || percent > 100) {
        std::cerr << "gt-worker: --session-memory must be a share in (0%, 100%], got '" << sessionMemory << "'" << std::endl;
        return 1;
      }
      options.sessionMemoryFraction = percent / 100;
    } else if (!(options.sessionMemoryBytes = parseBytes(sessionMemory))) {
      std::cerr << "gt-worker: --session-memory must be a size (2GiB) or a share (50%), got '" << sessionMemory << "'"
                << std::endl;
      return 1;
    }
  }
  if (options.workerTokenFile.empty()) options.workerTokenFile = gt::transport::defaultWorkerTokenFile(options.port);
  if (const char *token = std::getenv("GT_WORKER_TOKEN")) options.workerToken = token;
  options.tls = gt::transport::tlsFromEnv();
  if (const char *sync = std::getenv("GT_JIT_SYNC"); sync && std::string(sync) == "1") options.syncCompile = true;
  if (const char *check = std::getenv("GT_JIT_VERIFY"); check && std::string(check) == "1") options.verifyRegions = true;
  if (const char *tf32 = std::getenv("GT_ALLOW_TF32"); tf32 && std::string(tf32) == "1") options.allowTF32 = true;
  try {
    gt::worker::serve(options);
  } catch (const std::exception &e) {
    std::cerr << "gt-worker: " << e.what() << std::endl;
    return 1;
  }
}
