// gt-worker's RPC side: programs from the dispatcher run in order on the Executor.
#include "gt/Worker/Worker.h"

#include "gt/Transport/Wire.h"
#include "gt/Worker/Executor.h"

#include <capnp/ez-rpc.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <exception>
#include <iostream>
#include <thread>

namespace gt::worker {
namespace {

/// The dispatcher's rendezvous store, reached over a connection of its own on a short-lived
/// thread (the worker's event loop is busy running the collective that asked).
class DispatcherStore final : public KeyValueStore {
public:
  DispatcherStore(std::string host, int port, std::string token)
      : host_(std::move(host)), port_(port), token_(std::move(token)) {}

  void set(const std::string &key, const std::string &value) override {
    call([&](wire::Dispatcher::Client &d, kj::WaitScope &ws) {
      auto req = d.storeSetRequest();
      req.setToken(token_);
      req.setKey(key);
      req.setValue(kj::arrayPtr(reinterpret_cast<const kj::byte *>(value.data()), value.size()));
      req.send().wait(ws);
    });
  }

  std::string get(const std::string &key) override {
    std::string value;
    call([&](wire::Dispatcher::Client &d, kj::WaitScope &ws) {
      auto req = d.storeGetRequest();
      req.setToken(token_);
      req.setKey(key);
      auto data = req.send().wait(ws).getValue();
      value.assign(reinterpret_cast<const char *>(data.begin()), data.size());
    });
    return value;
  }

private:
  template <typename F> void call(F f) {
    std::exception_ptr error;
    std::thread thread([&] {
      try {
        capnp::EzRpcClient client(host_.c_str(), port_);
        auto dispatcher = client.getMain<wire::Dispatcher>();
        f(dispatcher, client.getWaitScope());
      } catch (const kj::Exception &e) {
        error = std::make_exception_ptr(std::runtime_error(std::string("rendezvous through the dispatcher: ") +
                                                           e.getDescription().cStr()));
      } catch (...) {
        error = std::current_exception();
      }
    });
    thread.join();
    if (error) std::rethrow_exception(error);
  }

  std::string host_;
  int port_;
  std::string token_;
};

/// The local address of the route to `host` (what other machines see this worker as).
std::string localAddressTowards(const std::string &host, int port) {
  addrinfo hints{}, *info = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &info) != 0 || !info) return "127.0.0.1";
  std::string out = "127.0.0.1";
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, info->ai_addr, info->ai_addrlen) == 0) { // UDP: no packet is sent
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char text[INET_ADDRSTRLEN];
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof text))
      out = text;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(info);
  return out;
}

class WorkerImpl final : public wire::Worker::Server {
public:
  explicit WorkerImpl(Executor &executor) : executor_(executor) {}

  // Programs run synchronously, in arrival order; a fetch arriving after a program sees its
  // results because Cap'n Proto delivers calls on one capability in order.
  kj::Promise<void> run(RunContext context) override {
    auto batch = context.getParams().getProgram();
    std::vector<Instruction> program;
    program.reserve(batch.getInstructions().size());
    for (auto inst : batch.getInstructions()) program.push_back(wire::fromWire(inst));
    std::vector<RegionCall> regions;
    for (auto r : batch.getRegions()) {
      RegionCall call{r.getKey(), r.getHot(), r.getStart(), r.getCount(), {}};
      for (uint64_t id : r.getOutputs()) call.outputs.push_back(id);
      regions.push_back(std::move(call));
    }
    executor_.runProgram(program, regions);
    return kj::READY_NOW;
  }

  kj::Promise<void> fetch(FetchContext context) override {
    Fetched f = executor_.fetch(context.getParams().getId());
    if (context.getParams().getErrorOnly()) f.bytes.clear();
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
    CompilerStats c = executor_.compilerStats();
    std::vector<std::pair<const char *, double>> values = {
        {"instructions", double(s.instructions)},
        {"live_tensors", double(s.liveTensors)},
        {"live_bytes", double(s.liveBytes)},
        {"peak_bytes", double(s.peakBytes)},
        {"eager_ops", double(s.eagerOps)},
        {"fused_ops", double(s.fusedOps)},
        {"regions_seen", double(s.regionsSeen)},
        {"regions_hot", double(s.regionsHot)},
        {"regions_compiled", double(s.regionsCompiled)},
        {"region_replays", double(s.regionReplays)},
        {"region_fallbacks", double(s.regionFallbacks)},
        {"region_verify_failures", double(s.verifyFailures)},
        {"kernels_compiled", double(c.compiled)},
        {"kernel_disk_hits", double(c.diskHits)},
        {"cache_hits", double(c.diskHits + c.memoryHits)},
        {"cache_misses", double(c.compiled)},
        {"compile_ms", c.compileMs},
        {"disk_load_ms", c.diskLoadMs},
        {"region_compile_ms", s.regionCompileMs},
        {"region_load_ms", s.regionLoadMs},
        {"region_disk_hits", double(s.regionDiskHits)},
    };
    values.emplace_back("collective_ops", double(s.collectiveOps));
    values.emplace_back("p2p_ops", double(s.p2pOps));
    std::vector<std::pair<std::string, double>> device = executor_.device().counters();
    if (executor_.communicator())
      for (auto &c : executor_.communicator()->counters()) device.push_back(c);
    for (auto &[name, value] : device) values.emplace_back(name.c_str(), value);
    auto r = context.getResults();
    auto list = r.initStats(unsigned(values.size()));
    for (unsigned i = 0; i < values.size(); ++i) {
      list[i].setName(values[i].first);
      list[i].setValue(values[i].second);
    }
    auto notes = r.initNotes(unsigned(s.notes.size()));
    for (unsigned i = 0; i < s.notes.size(); ++i) notes.set(i, s.notes[i]);
    return kj::READY_NOW;
  }

private:
  Executor &executor_;
};

} // namespace

void serve(const Options &options) {
  std::shared_ptr<Device> device;
  try {
    device = createDevice(options.device, options.allowTF32, options.threads);
  } catch (const std::exception &e) {
    throw std::runtime_error("cannot use device '" + options.device + "': " + e.what());
  }
  Executor executor(ExecutorOptions{options.cacheDir.empty() ? KernelCompiler::defaultCacheDir() : options.cacheDir,
                                    !options.syncCompile, options.verifyRegions, device});
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
  std::string address = options.address.empty() ? localAddressTowards(options.host, options.port) : options.address;
  // CUDA workers exchange device memory over NCCL; CPU workers (and CUDA workers without
  // NCCL) host memory over Gloo.
  auto store = std::make_shared<DispatcherStore>(options.host, options.port, options.token);
  std::string plane = "Gloo on " + address;
  if (device->nativeStream()) {
    try {
      executor.setCommunicator(createNCCLCommunicator(index, store, *device), index);
      plane = "NCCL";
    } catch (const std::exception &e) {
      std::cerr << "gt-worker: no NCCL (" << e.what() << "), collectives go through host memory and Gloo" << std::endl;
    }
  }
  if (!executor.communicator()) {
    try {
      executor.setCommunicator(createGlooCommunicator(index, address, store), index);
    } catch (const std::exception &e) {
      std::cerr << "gt-worker: no collectives on this worker: " << e.what() << std::endl;
      plane = "none";
    }
  }
  std::cerr << "gt-worker: registered as worker " << index << " (" << device->describe() << "), collectives: " << plane
            << std::endl;
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
