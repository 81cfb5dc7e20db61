// gt-worker's RPC side. The event loop of the main thread answers the dispatcher (programs are
// queued, pings answered at once); the Scheduler's thread runs the programs, each session in
// its own queue, and hands fetches, syncs and stats back through cross-thread promises.
#include "gt/Worker/Worker.h"
#include "gt/Transport/Metrics.h"

#include "gt/Transport/Connection.h"
#include "gt/Transport/Wire.h"
#include "gt/Worker/Executor.h"
#include "gt/Worker/Scheduler.h"

#include <kj/async-io.h>
#include <kj/debug.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace gt::worker {
namespace {

/// The dispatcher's rendezvous store, called from the scheduler's thread (a collective's first
/// use of its group) through the event loop of the main thread, which owns the connection.
class DispatcherStore final : public KeyValueStore {
public:
  DispatcherStore(wire::Rendezvous::Client rendezvous, const kj::Executor &loop)
      : rendezvous_(std::make_unique<wire::Rendezvous::Client>(std::move(rendezvous))), loop_(loop) {}

  void set(const std::string &key, const std::string &value) override {
    call([&] {
      auto req = rendezvous_->setRequest();
      req.setKey(key);
      req.setValue(kj::arrayPtr(reinterpret_cast<const kj::byte *>(value.data()), value.size()));
      return req.send().ignoreResult();
    });
  }

  std::string get(const std::string &key) override {
    std::string value;
    call([&] {
      auto req = rendezvous_->getRequest();
      req.setKey(key);
      return req.send().then([&value](capnp::Response<wire::Rendezvous::GetResults> &&r) {
        auto data = r.getValue();
        value.assign(reinterpret_cast<const char *>(data.begin()), data.size());
      });
    });
    return value;
  }

private:
  template <typename F> void call(F f) {
    try {
      loop_.executeSync(f);
    } catch (const kj::Exception &e) {
      throw std::runtime_error(std::string("rendezvous through the dispatcher: ") + e.getDescription().cStr());
    }
  }

  std::unique_ptr<wire::Rendezvous::Client> rendezvous_; // (its destructor may throw: not a plain member)
  const kj::Executor &loop_;
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

using Values = std::vector<std::pair<std::string, double>>;

/// The worker's counters, with `session`'s own (on the scheduler's thread: it reads the executor).
Values collect(Executor &executor, Scheduler &scheduler, uint32_t session) {
  ExecutorStats s = executor.stats();
  CompilerStats c = executor.compilerStats();
  Scheduler::Counters q = scheduler.counters();
  std::vector<std::pair<std::string, double>> values = {
      {"instructions", double(s.instructions)},
      {"live_tensors", double(s.liveTensors)},
      {"live_bytes", double(s.liveBytes)},
      {"peak_bytes", double(s.peakBytes)},
      {"session_bytes", double(executor.sessionBytes(session))},
      {"session_busy_ms", scheduler.busyMs(session)},
      {"session_weight", scheduler.weight(session)},
      {"scheduler_sessions", double(q.sessions)},
      {"scheduler_queued", double(q.queued)},
      {"scheduler_units", double(q.units)},
      {"scheduler_busy_ms", q.busyMs},
      {"eager_ops", double(s.eagerOps)},
      {"types_inferred", double(s.typesInferred)},
      {"fused_ops", double(s.fusedOps)},
      {"regions_seen", double(s.regionsSeen)},
      {"regions_hot", double(s.regionsHot)},
      {"regions_compiled", double(s.regionsCompiled)},
      {"regions_compiling", double(s.regionsCompiling)},
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
      {"collective_ops", double(s.collectiveOps)},
      {"p2p_ops", double(s.p2pOps)},
  };
  for (auto &c : executor.device().counters()) values.push_back(c);
  if (executor.communicator())
    for (auto &c : executor.communicator()->counters()) values.push_back(c);
  return values;
}

/// The worker's Prometheus metrics (--metrics-port; docs/observability.md) from its counters.
std::vector<metrics::Sample> metricSamples(const Values &values) {
  std::map<std::string, double> c(values.begin(), values.end());
  auto at = [&](const char *name) { return c.count(name) ? c.at(name) : 0.0; };
  using metrics::counter, metrics::gauge;

  const char *ops = "Compute ops run, by how: one kernel each (eager) or inside a fused region's kernel (fused).";
  return {
      counter("gt_worker_instructions_total", "Instructions received (frees included).", at("instructions")),
      counter("gt_worker_ops_total", ops, at("eager_ops"), {{"how", "eager"}}),
      counter("gt_worker_ops_total", ops, at("fused_ops"), {{"how", "fused"}}),
      counter("gt_worker_kernels_run_total", "Kernels launched: eager ops and fused-region replays.",
              at("eager_ops") + at("region_replays")),
      counter("gt_worker_kernels_compiled_total", "Kernels compiled (ops and fused regions), not loaded from a cache.",
              at("kernels_compiled")),
      counter("gt_worker_kernel_cache_hits_total", "Kernels found compiled, in memory or on disk.", at("cache_hits")),
      counter("gt_worker_compile_seconds_total", "Time spent compiling kernels (fused regions included).",
              at("compile_ms") / 1000),
      counter("gt_worker_busy_seconds_total", "Time spent running programs.", at("scheduler_busy_ms") / 1000),
      gauge("gt_worker_queued", "Programs, fetches and syncs queued in the scheduler.", at("scheduler_queued")),
      gauge("gt_worker_live_bytes", "Device memory held by tensors.", at("live_bytes")),
      gauge("gt_worker_peak_bytes", "The most device memory tensors have held.", at("peak_bytes")),
      gauge("gt_worker_live_tensors", "Tensors held.", at("live_tensors")),
      counter("gt_worker_collectives_total", "all_reduce, all_gather, reduce_scatter and all_to_all run.", at("collective_ops")),
      counter("gt_worker_collective_bytes_total", "Bytes put into collectives.", at("collective_bytes")),
      counter("gt_worker_p2p_sent_bytes_total", "Bytes sent point to point (send).", at("p2p_bytes_sent")),
      counter("gt_worker_p2p_received_bytes_total", "Bytes received point to point (recv).", at("p2p_bytes_received")),
  };
}

/// What gt top reads (Worker.monitor) without waiting for the scheduler: the counters as the
/// scheduler's thread last published them (Scheduler::onTick).
struct Published {
  std::mutex mu;
  Values values;
};

/// A promise on the main thread and the means to keep it from the scheduler's thread.
template <typename T> struct Handoff {
  kj::Promise<T> promise;
  std::shared_ptr<kj::Own<kj::CrossThreadPromiseFulfiller<T>>> fulfiller;
};
template <typename T> Handoff<T> handoff() {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<T>();
  return {kj::mv(paf.promise), std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<T>>>(kj::mv(paf.fulfiller))};
}

class WorkerImpl final : public wire::Worker::Server {
public:
  /// The largest fetch answered on the event loop itself (Scheduler::runIfIdle).
  static constexpr uint64_t kInlineFetchBytes = 1 << 20;

  WorkerImpl(Executor &executor, Scheduler &scheduler, std::shared_ptr<Published> published)
      : executor_(executor), scheduler_(scheduler), published_(std::move(published)) {}

  // Queued in the session's queue; the reply goes once the program has run.
  kj::Promise<void> run(RunContext context) override {
    auto batch = context.getParams().getProgram();
    ProgramRun program;
    program.instructions.reserve(batch.getInstructions().size());
    for (auto inst : batch.getInstructions()) program.instructions.push_back(wire::fromWire(inst));
    for (auto r : batch.getRegions()) {
      RegionCall call{r.getKey(), r.getHot(), r.getStart(), r.getCount(), {}};
      for (uint64_t id : r.getOutputs()) call.outputs.push_back(id);
      program.regions.push_back(std::move(call));
    }
    auto ran = handoff<void>();
    scheduler_.submit(batch.getSession(), batch.getWeight(), std::move(program),
                      [f = ran.fulfiller] { (*f)->fulfill(); });
    return kj::mv(ran.promise);
  }

  kj::Promise<void> fetch(FetchContext context) override {
    auto params = context.getParams();
    uint32_t session = params.getSession();
    uint64_t id = params.getId(), offset = params.getOffset(), length = params.getLength();
    bool errorOnly = params.getErrorOnly();
    auto read = [this, session, id, offset, length, errorOnly] {
      Fetched result;
      if (!executor_.ownedBy(id, session)) result.error = "tensor " + std::to_string(id) + " does not exist on this worker";
      else result = executor_.fetch(id, offset, errorOnly ? 1 : length);
      if (errorOnly) result.bytes.clear();
      return result;
    };
    auto answer = [context](Fetched &&f) mutable {
      auto out = context.getResults().initResult();
      out.setDtype(uint8_t(f.type.dtype));
      auto shape = out.initShape(unsigned(f.type.shape.size()));
      for (unsigned i = 0; i < f.type.shape.size(); ++i) shape.set(i, f.type.shape[i]);
      if (!f.error.empty()) out.setError(f.error);
      else out.setData(kj::arrayPtr(reinterpret_cast<const kj::byte *>(f.bytes.data()), f.bytes.size()));
    };
    // Nothing queued: answered here, without a hand-off. Not a large or deferred tensor,
    // though: its copy (or a copy kernel's compiling) would hold up this event loop, and every
    // other session's calls with it.
    Fetched now;
    bool cheap = false;
    if (scheduler_.runIfIdle(session, [&] {
          if ((cheap = executor_.cheapToFetch(id, kInlineFetchBytes))) now = read();
        }) && cheap) {
      answer(std::move(now));
      return kj::READY_NOW;
    }
    auto got = handoff<Fetched>();
    scheduler_.fence(session, [read, f = got.fulfiller] { (*f)->fulfill(read()); });
    return got.promise.then(kj::mv(answer));
  }

  kj::Promise<void> sync(SyncContext context) override {
    uint32_t session = context.getParams().getSession();
    if (scheduler_.runIfIdle(session, [] {})) return kj::READY_NOW; // everything queued has run
    auto ran = handoff<void>();
    scheduler_.fence(session, [f = ran.fulfiller] { (*f)->fulfill(); });
    return kj::mv(ran.promise);
  }

  kj::Promise<void> ping(PingContext) override { return kj::READY_NOW; }

  kj::Promise<void> trace(TraceContext context) override {
    uint32_t session = context.getParams().getSession();
    context.getResults().setPid(uint32_t(getpid()));
    if (context.getParams().getOn()) {
      scheduler_.startTrace(session);
      return kj::READY_NOW;
    }
    auto [events, since] = scheduler_.stopTrace(session);
    for (TraceEvent &e : executor_.compileEvents(since)) events.push_back(std::move(e));
    auto list = context.getResults().initEvents(unsigned(events.size()));
    for (unsigned i = 0; i < events.size(); ++i) {
      list[i].setName(events[i].name);
      list[i].setCategory(events[i].category);
      list[i].setStartNs(events[i].startNs);
      list[i].setDurationNs(events[i].durationNs);
      list[i].setArgs(events[i].args);
    }
    return kj::READY_NOW;
  }

  kj::Promise<void> clock(ClockContext context) override {
    context.getResults().setNs(monotonicNs());
    return kj::READY_NOW;
  }

  // Answered at once, like ping: the counters last published, with the scheduler's own (which
  // it keeps under its lock) fresh.
  kj::Promise<void> monitor(MonitorContext context) override {
    Values values;
    {
      std::lock_guard lock(published_->mu);
      values = published_->values;
    }
    std::erase_if(values, [](const auto &v) { return v.first.rfind("session_", 0) == 0; }); // per session: below
    Scheduler::Counters q = scheduler_.counters();
    for (auto &[name, value] : values) {
      if (name == "scheduler_sessions") value = double(q.sessions);
      else if (name == "scheduler_queued") value = double(q.queued);
      else if (name == "scheduler_units") value = double(q.units);
      else if (name == "scheduler_busy_ms") value = q.busyMs;
    }
    auto results = context.getResults();
    auto list = results.initStats(unsigned(values.size()));
    for (unsigned i = 0; i < values.size(); ++i) {
      list[i].setName(values[i].first);
      list[i].setValue(values[i].second);
    }
    std::map<uint32_t, double> busy = scheduler_.busyBySession();
    auto sessions = results.initSessions(unsigned(busy.size()));
    unsigned i = 0;
    for (auto &[session, ms] : busy) {
      sessions[i].setSession(session);
      sessions[i].setBusyMs(ms);
      sessions[i].setBytes(executor_.sessionBytes(session)); // under the executor's accounts lock
      ++i;
    }
    return kj::READY_NOW;
  }

  kj::Promise<void> endSession(EndSessionContext context) override {
    auto ended = handoff<void>();
    scheduler_.endSession(context.getParams().getSession(), [f = ended.fulfiller] { (*f)->fulfill(); });
    return kj::mv(ended.promise);
  }

  kj::Promise<void> stats(StatsContext context) override {
    using Values = std::vector<std::pair<std::string, double>>;
    struct Result {
      Values values;
      std::vector<std::string> notes;
    };
    auto got = handoff<Result>();
    uint32_t session = context.getParams().getSession();
    scheduler_.fence(session, [this, f = got.fulfiller, session] {
      Result r{collect(executor_, scheduler_, session), executor_.stats().notes};
      (*f)->fulfill(std::move(r));
    });
    return got.promise.then([context](Result &&r) mutable {
      auto results = context.getResults();
      auto list = results.initStats(unsigned(r.values.size()));
      for (unsigned i = 0; i < r.values.size(); ++i) {
        list[i].setName(r.values[i].first);
        list[i].setValue(r.values[i].second);
      }
      auto notes = results.initNotes(unsigned(r.notes.size()));
      for (unsigned i = 0; i < r.notes.size(); ++i) notes.set(i, r.notes[i]);
    });
  }

private:
  Executor &executor_;
  Scheduler &scheduler_;
  std::shared_ptr<Published> published_;
};

std::string readToken(const std::string &path) {
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  return token;
}

} // namespace

void serve(const Options &options) {
  std::shared_ptr<Device> device;
  try {
    device = createDevice(options.device, options.allowTF32, options.threads);
  } catch (const std::exception &e) {
    throw std::runtime_error("cannot use device '" + options.device + "': " + e.what());
  }
  std::string workerToken = options.workerToken;
  if (workerToken.empty() && !options.workerTokenFile.empty()) workerToken = readToken(options.workerTokenFile);
  // Memory: what the device has now (less a fifth for the compiler, the runtime and other
  // processes), unless told; a session gets `sessionMemory` of it.
  uint64_t memory = options.memoryBytes ? options.memoryBytes : device->capacity() / 5 * 4;
  uint64_t sessionMemory = options.sessionMemoryFraction > 0 ? uint64_t(double(memory) * options.sessionMemoryFraction) : 0;
  if (options.sessionMemoryBytes) sessionMemory = options.sessionMemoryBytes;
  Executor executor(ExecutorOptions{options.cacheDir.empty() ? KernelCompiler::defaultCacheDir() : options.cacheDir,
                                    !options.syncCompile, options.verifyRegions, device, memory, sessionMemory});
  std::unique_ptr<transport::Connection> connection;
  try {
    connection = std::make_unique<transport::Connection>(options.host, options.port, options.tls, 30.0);
  } catch (const std::exception &e) {
    throw std::runtime_error("cannot reach the dispatcher at " + transport::addressString(options.host, options.port) +
                             ": " + e.what());
  }
  auto &waitScope = connection->waitScope();
  auto dispatcher = connection->main<wire::Dispatcher>();
  Scheduler scheduler(executor);
  auto req = dispatcher.registerWorkerRequest();
  req.setToken(workerToken);
  req.setDevice(options.device);
  req.setMemoryBytes(memory);
  req.setSessionMemoryBytes(sessionMemory ? sessionMemory : memory);
  std::shared_ptr<metrics::Server> metricsServer;
  if (options.metricsPort >= 0) {
    metricsServer = std::make_shared<metrics::Server>(options.metricsHost, options.metricsPort);
    std::cerr << "gt-worker: metrics on http://" << options.metricsHost << ":" << metricsServer->port() << "/metrics"
              << std::endl;
  }
  auto published = std::make_shared<Published>();
  auto publish = [&executor, &scheduler, published, metricsServer] {
    Values values = collect(executor, scheduler, 0);
    if (metricsServer) metricsServer->publish(metricSamples(values));
    std::lock_guard lock(published->mu);
    published->values = std::move(values);
  };
  publish(); // before the scheduler's thread starts, the only other reader of the executor
  scheduler.onTick(publish, 250);
  req.setWorker(kj::heap<WorkerImpl>(executor, scheduler, published));
  uint32_t index;
  wire::Rendezvous::Client rendezvous = nullptr;
  try {
    auto response = req.send().wait(waitScope);
    index = response.getIndex();
    rendezvous = response.getRendezvous();
  } catch (const kj::Exception &e) {
    std::string why = e.getDescription().cStr();
    if (workerToken.empty() && why.find("GT_WORKER_TOKEN") != std::string::npos)
      why += " (no token: set GT_WORKER_TOKEN, or run on the dispatcher's machine, where it wrote " +
             options.workerTokenFile + ")";
    throw std::runtime_error("cannot register with the dispatcher at " + transport::addressString(options.host, options.port) +
                             ": " + why);
  }
  std::string address = options.address.empty() ? localAddressTowards(options.host, options.port) : options.address;
  // CUDA workers exchange device memory over NCCL; CPU workers (and CUDA workers without
  // NCCL) host memory over Gloo. Groups connect on first use, from the scheduler's thread.
  // A CUDA worker with both uses NCCL, and Gloo for groups whose members share a GPU (which
  // NCCL refuses); each worker publishes its device so that groups can tell.
  auto store = std::make_shared<DispatcherStore>(rendezvous, kj::getCurrentThreadExecutor());
  try {
    auto [key, value] = deviceEntry(index, device->physicalId());
    auto req = rendezvous.setRequest();
    req.setKey(key);
    req.setValue(kj::arrayPtr(reinterpret_cast<const kj::byte *>(value.data()), value.size()));
    req.send().wait(waitScope);
  } catch (const kj::Exception &e) { // (a full store): this worker's groups that need it fail, not the worker
    std::cerr << "gt-worker: could not publish this worker's device: " << e.getDescription().cStr() << std::endl;
  }
  std::unique_ptr<Communicator> nccl, gloo;
  std::string plane = "none";
  if (device->nativeStream()) {
    try {
      nccl = createNCCLCommunicator(index, store, *device);
    } catch (const std::exception &e) {
      std::cerr << "gt-worker: no NCCL (" << e.what() << "), collectives go through host memory and Gloo" << std::endl;
    }
  }
  try {
    gloo = createGlooCommunicator(index, address, store, device.get());
  } catch (const std::exception &e) {
    std::cerr << "gt-worker: no Gloo: " << e.what() << std::endl;
  }
  if (nccl && gloo) {
    executor.setCommunicator(createRoutedCommunicator(index, store, std::move(nccl), std::move(gloo)), index);
    plane = "NCCL (Gloo on " + address + " for groups that share a GPU)";
  } else if (nccl) {
    executor.setCommunicator(std::move(nccl), index);
    plane = "NCCL (no Gloo: a group of workers that share a GPU fails)";
  } else if (gloo) {
    executor.setCommunicator(std::move(gloo), index);
    plane = "Gloo on " + address;
  } else {
    std::cerr << "gt-worker: no collectives on this worker" << std::endl;
  }
  scheduler.start();
  std::cerr << "gt-worker: registered as worker " << index << " (" << device->describe() << "), collectives: " << plane
            << ", memory " << memory / (1 << 20) << " MiB, " << sessionMemory / (1 << 20) << " MiB per session"
            << std::endl;
  // Serve until the dispatcher goes away.
  connection->onDisconnect().wait(waitScope);
  std::cerr << "gt-worker: dispatcher went away, exiting" << std::endl;
  std::_Exit(0); // the scheduler may be inside a collective with a peer that is gone too
}

} // namespace gt::worker
