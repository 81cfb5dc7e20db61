// gt-worker's RPC side: programs from the dispatcher run in order on the Executor.
#include "gt/Worker/Worker.h"

#include "gt/Transport/Wire.h"
#include "gt/Worker/Executor.h"

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include <iostream>

namespace gt::worker {
namespace {

class WorkerImpl final : public wire::Worker::Server {
public:
  explicit WorkerImpl(Executor &executor) : executor_(executor) {}

  // Programs run synchronously, in arrival order; a fetch arriving after a program sees its
  // results because Cap'n Proto delivers calls on one capability in order.
  kj::Promise<void> run(RunContext context) override {
    for (auto inst : context.getParams().getProgram().getInstructions())
      executor_.run(wire::fromWire(inst));
    return kj::READY_NOW;
  }

  kj::Promise<void> fetch(FetchContext context) override {
    Fetched f = executor_.fetch(context.getParams().getId());
    auto out = context.getResults().initResult();
    out.setDtype(uint8_t(f.type.dtype));
    auto shape = out.initShape(unsigned(f.type.shape.size()));
    for (unsigned i = 0; i < f.type.shape.size(); ++i) shape.set(i, f.type.shape[i]);
    if (!f.error.empty()) out.setError(f.error);
    else out.setData(kj::arrayPtr(reinterpret_cast<const kj::byte *>(f.bytes.data()), f.bytes.size()));
    return kj::READY_NOW;
  }

  kj::Promise<void> stats(StatsContext context) override {
    ExecutorStats s = executor_.stats();
    CompilerStats c = executor_.compiler().stats();
    auto r = context.getResults();
    r.setInstructions(s.instructions);
    r.setLiveTensors(s.liveTensors);
    r.setLiveBytes(s.liveBytes);
    r.setKernelsCompiled(c.compiled);
    r.setKernelDiskHits(c.diskHits);
    r.setCompileMs(c.compileMs);
    return kj::READY_NOW;
  }

private:
  Executor &executor_;
};

} // namespace

void serve(const Options &options) {
  if (options.device != "cpu")
    throw std::runtime_error("device '" + options.device + "' is not supported by this build (only 'cpu')");
  Executor executor(options.cacheDir.empty() ? KernelCompiler::defaultCacheDir() : options.cacheDir);
  capnp::ReaderOptions reader;
  reader.traversalLimitInWords = uint64_t(1) << 33;
  capnp::EzRpcClient client(options.host.c_str(), options.port, reader);
  auto &waitScope = client.getWaitScope();
  auto dispatcher = client.getMain<wire::Dispatcher>();
  auto req = dispatcher.registerWorkerRequest();
  req.setToken(options.token);
  req.setDevice(options.device);
  req.setWorker(kj::heap<WorkerImpl>(executor));
  uint32_t index;
  try {
    index = req.send().wait(waitScope).getIndex();
  } catch (const kj::Exception &e) {
    throw std::runtime_error("cannot register with the dispatcher at " + options.host + ":" +
                             std::to_string(options.port) + ": " + e.getDescription().cStr());
  }
  std::cerr << "gt-worker: registered as worker " << index << " (" << options.device << ")" << std::endl;
  // Serve until the dispatcher goes away: a cheap call every second notices.
  auto &timer = client.getIoProvider().getTimer();
  while (true) {
    timer.afterDelay(1 * kj::SECONDS).wait(waitScope);
    try {
      dispatcher.infoRequest().send().wait(waitScope);
    } catch (const kj::Exception &) {
      std::cerr << "gt-worker: dispatcher went away, exiting" << std::endl;
      return;
    }
  }
}

} // namespace gt::worker
