// gt-dispatcher: the daemon that multiplexes GT clients onto workers.
#include "gt/Dispatcher/Dispatcher.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>

int main(int argc, char **argv) {
  gt::dispatcher::Options options;
  CLI::App app{"GT dispatcher: sessions, MLIR capture and passes, scheduling onto workers"};
  app.add_option("-p,--port", options.port, "TCP port (0 = pick a free one and print it)");
  app.add_option("-H,--host", options.host, "address to bind")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  auto env = [](const char *name) { const char *v = std::getenv(name); return std::string(v ? v : ""); };
  options.token = env("GT_TOKEN");
  options.instructionLog = env("GT_INSTRUCTION_LOG");
  options.dumpIR = env("GT_DUMP_IR");
  options.jit = env("GT_JIT") != "0";
  options.planCache = env("GT_PLAN_CACHE") != "0";
  if (std::string n = env("GT_HOT_AFTER"); !n.empty()) options.hotAfter = std::max(1L, std::atol(n.c_str()));
  if (std::string n = env("GT_BUCKET_BYTES"); !n.empty()) {
    char *end = nullptr;
    long long bytes = std::strtoll(n.c_str(), &end, 10);
    if (*end || bytes < 0) {
      std::cerr << "gt-dispatcher: GT_BUCKET_BYTES must be a number of bytes >= 0, got '" << n << "'" << std::endl;
      return 1;
    }
    options.bucketBytes = bytes;
  }
  try {
    gt::dispatcher::serve(options);
  } catch (const std::exception &e) {
    std::cerr << "gt-dispatcher: " << e.what() << std::endl;
    return 1;
  }
}
