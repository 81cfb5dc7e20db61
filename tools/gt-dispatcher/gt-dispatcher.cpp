// gt-dispatcher: the daemon that multiplexes GT clients onto workers.
#include "gt/Dispatcher/Dispatcher.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? v : "";
}

/// $name as a number >= minimum, if set; exits with a message naming it otherwise. `unit`
/// says what it counts ("bytes", "seconds", ...).
template <typename T> void envNumber(const char *name, T &out, double minimum, const char *unit) {
  std::string text = env(name);
  if (text.empty()) return;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end || v < minimum) {
    std::cerr << "gt-dispatcher: " << name << " must be a number of " << unit << " >= " << minimum << ", got '" << text
              << "'" << std::endl;
    std::exit(1);
  }
  out = T(v);
}

} // namespace

int main(int argc, char **argv) {
  gt::dispatcher::Options options;
  options.listener.tls = gt::transport::tlsFromEnv();
  CLI::App app{"GT dispatcher: sessions, MLIR capture and passes, scheduling onto workers"};
  app.add_option("-p,--port", options.port, "TCP port (0 = pick a free one and print it)");
  app.add_option("-H,--host", options.host, "address to bind")->capture_default_str();
  app.add_option("--unix", options.listener.unixPath,
                 "also accept on this Unix-domain socket; local clients and workers connect with host unix:PATH "
                 "(port ignored), skipping the TCP stack");
  app.add_option("--metrics-port", options.metricsPort,
                 "serve Prometheus metrics at http://METRICS_HOST:PORT/metrics (0: a free port, printed; default off)");
  app.add_option("--metrics-host", options.metricsHost, "the address --metrics-port binds (unauthenticated)")
      ->capture_default_str();
  app.add_option("--max-connections", options.listener.maxConnections, "open connections; more are closed at once")
      ->capture_default_str();
  app.add_option("--tls-cert", options.listener.tls.certFile, "PEM certificate chain: speak TLS only (GT_TLS_CERT)");
  app.add_option("--tls-key", options.listener.tls.keyFile, "PEM private key of --tls-cert (GT_TLS_KEY)");
  std::string clientsFile;
  app.add_option("--clients", clientsFile,
                 "YAML file of named clients, each with a token and a weight (docs/security.md)");
  app.add_option("--worker-token-file", options.workerTokenFile,
                 "where to write the generated worker token when GT_WORKER_TOKEN is unset "
                 "(default ~/.gt/worker-token-PORT)");
  CLI11_PARSE(app, argc, argv);
  options.token = env("GT_TOKEN");
  if (!clientsFile.empty()) {
    std::ifstream in(clientsFile);
    std::stringstream text;
    text << in.rdbuf();
    try {
      if (!in) throw std::runtime_error("cannot read the clients file '" + clientsFile + "'");
      options.clients = gt::parseClients(text.str(), clientsFile);
    } catch (const std::exception &e) {
      std::cerr << "gt-dispatcher: " << e.what() << std::endl;
      return 1;
    }
  }
  options.workerToken = env("GT_WORKER_TOKEN");
  options.instructionLog = env("GT_INSTRUCTION_LOG");
  options.dumpIR = env("GT_DUMP_IR");
  options.record = env("GT_RECORD");
  options.jit = env("GT_JIT") != "0";
  options.planCache = env("GT_PLAN_CACHE") != "0";
  options.verifyPasses = env("GT_VERIFY_PASSES") == "1";
  if (std::string n = env("GT_HOT_AFTER"); !n.empty()) options.hotAfter = std::max(1L, std::atol(n.c_str()));
  envNumber("GT_BUCKET_BYTES", options.bucketBytes, 0, "bytes");
  envNumber("GT_MAX_BATCH", options.batch.maxInstructions, 1, "ops (a free counts once per tensor it names)");
  envNumber("GT_MAX_MESSAGE_BYTES", options.listener.maxMessageBytes, 1 << 20, "bytes");
  envNumber("GT_MAX_QUEUED", options.maxQueued, 1, "instructions");
  envNumber("GT_MAX_TENSORS", options.maxTensors, 1, "tensors");
  envNumber("GT_WORKER_TIMEOUT", options.workerTimeoutSeconds, 1, "seconds");
  envNumber("GT_HANDSHAKE_TIMEOUT", options.listener.handshakeSeconds, 0.1, "seconds");
  bool sameAsWorkers = !options.token.empty() && options.token == options.workerToken;
  for (const gt::ClientEntry &c : options.clients) sameAsWorkers |= c.token == options.workerToken;
  if (sameAsWorkers) {
    std::cerr << "gt-dispatcher: a client token equals GT_WORKER_TOKEN (a client could register as a worker)"
              << std::endl;
    return 1;
  }
  try {
    gt::dispatcher::serve(options);
  } catch (const std::exception &e) {
    std::cerr << "gt-dispatcher: " << e.what() << std::endl;
    return 1;
  }
}
