// gt-worker: executes GT programs on one device; registers with a dispatcher.
#include "gt/Worker/Worker.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

int main(int argc, char **argv) {
  gt::worker::Options options;
  CLI::App app{"GT worker: compiles and runs GT programs on one device"};
  app.add_option("--host", options.host, "dispatcher address")->capture_default_str();
  app.add_option("-p,--port", options.port, "dispatcher port")->required();
  app.add_option("--device", options.device, "cpu, or cuda:N for GPU N")->capture_default_str();
  app.add_option("--address", options.address,
                 "address other workers use to reach this one for collectives (default: the local "
                 "address of the route to the dispatcher)");
  app.add_option("--threads", options.threads,
                 "cpu: BLAS threads (default: the BLAS library's, one per core); workers sharing a "
                 "machine should split its cores")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--allow-tf32", options.allowTF32, "CUDA: float32 matmul may use TF32 tensor cores");
  app.add_flag("--sync-compile", options.syncCompile,
               "compile a hot region before its first run instead of in the background");
  CLI11_PARSE(app, argc, argv);
  if (const char *token = std::getenv("GT_TOKEN")) options.token = token;
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
