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
#include <pthread.h>
#include <sched.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <fstream>
#include <optional>
#include <iostream>
#include <sstream>

// gperftools' tcmalloc (linked into gt-worker, see CMakeLists.txt): keeps the pages of freed
// spans for later allocations instead of returning them to the system. Absent (a test binary,
// the fuzzing build), the weak symbol is null.
extern "C" void MallocExtension_ReleaseFreeMemory() __attribute__((weak));

namespace gt::worker {
namespace {

/// Returns the allocator's free pages to the system, once a session's buffers are gone: a
/// session that peaked at gigabytes must not leave the worker holding them for nobody.
void releaseFreeMemory() {
  if (MallocExtension_ReleaseFreeMemory) MallocExtension_ReleaseFreeMemory();
}

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

/// Programs kept (all sessions) and the runs that reused one, for gt.debug.stats (one worker per process).
std::atomic<uint64_t> keptPrograms{0}, keptProgramRuns{0};

/// A repeated step's program the dispatcher asked this worker to keep (Batch.plan): a later
/// run of it brings only its ids, values and upload bytes, which are written into a spare copy
/// of the program instead of decoding every instruction (issue: "a repeated step replays").
/// Used on the event loop's thread; a copy comes back from the executor's when its run ends.
struct KeptPlan {
  static constexpr size_t kSpares = 2; ///< copies kept for later runs (one runs while one waits)
  std::vector<Instruction> program;    ///< as first sent, upload bytes dropped
  size_t ids = 0;                      ///< Batch.ids it takes: a result slot and the operands per instruction
  std::vector<uint32_t> valued;        ///< instructions taking Batch.values/seeds (declaresValueOrSeed)
  std::vector<uint32_t> uploads;       ///< instructions taking Batch.uploads
  std::mutex mu;
  std::vector<std::vector<Instruction>> spare;

  ~KeptPlan() { keptPrograms--; }
  explicit KeptPlan(const std::vector<Instruction> &sent) : program(sent) {
    keptPrograms++;
    for (uint32_t i = 0; i < program.size(); ++i) {
      Instruction &inst = program[i];
      ids += 1 + inst.operands.size();
      if (declaresValueOrSeed(inst.op)) valued.push_back(i);
      if (inst.op == OpCode::Upload) {
        uploads.push_back(i);
        std::string().swap(inst.data);
      }
    }
  }

  /// This batch's program: a spare copy (or a new one) with `batch`'s ids, values and bytes.
  /// Throws if the batch does not fit the program (a dispatcher out of step with this worker).
  std::vector<Instruction> replay(wire::Batch::Reader batch) {
    auto idList = batch.getIds();
    auto values = batch.getValues();
    auto seeds = batch.getSeeds();
    auto data = batch.getUploads();
    if (idList.size() != ids || values.size() != valued.size() || seeds.size() != valued.size() ||
        data.size() != uploads.size())
      throw std::invalid_argument("a replay of plan " + std::to_string(batch.getPlan()) + " brings " +
                                  std::to_string(idList.size()) + " ids, " + std::to_string(values.size()) +
                                  " values and " + std::to_string(data.size()) + " uploads; its program takes " +
                                  std::to_string(ids) + ", " + std::to_string(valued.size()) + " and " +
                                  std::to_string(uploads.size()));
    std::vector<Instruction> run;
    {
      std::lock_guard lock(mu);
      if (!spare.empty()) {
        run = std::move(spare.back());
        spare.pop_back();
      }
    }
    if (run.empty()) run = program;
    unsigned k = 0;
    for (Instruction &inst : run) {
      inst.result = idList[k++];
      for (uint64_t &id : inst.operands) id = idList[k++];
    }
    for (unsigned v = 0; v < valued.size(); ++v) {
      run[valued[v]].attrs.value = values[v];
      run[valued[v]].attrs.seed = seeds[v];
    }
    for (unsigned u = 0; u < uploads.size(); ++u)
      run[uploads[u]].data.assign(reinterpret_cast<const char *>(data[u].begin()), data[u].size());
    return run;
  }

  /// A copy back from a finished run, for the next one.
  void giveBack(std::vector<Instruction> &&run) {
    if (run.size() != program.size()) return; // (a moved-from run)
    for (uint32_t u : uploads) std::string().swap(run[u].data);
    std::lock_guard lock(mu);
    if (spare.size() < kSpares) spare.push_back(std::move(run));
  }
};

/// Sessions' direct reads of their own tensors (gt-worker --listen; Session.directReads), on the
/// event loop's thread: the token that admits each session, the last batch of each session the
/// dispatcher has sent here, and the reads waiting for a batch that has not come yet.
struct Readers {
  static constexpr size_t kMaxWaiting = 64; ///< a session's reads waiting for batches, at most
  static constexpr size_t kMaxReaders = 8;  ///< a session's open readers, at most (the socket's
                                            ///< connections are shared by every session)
  struct Waiter {
    uint64_t sequence;
    kj::Own<kj::PromiseFulfiller<void>> ready;
  };
  struct Session {
    uint64_t heard = 0;  ///< the last Batch.sequence run() received
    std::string token;   ///< "" until the dispatcher admits the session's reader
    size_t readers = 0;  ///< SessionReaders open
    bool elsewhere = false; ///< the session has had work on other workers (Batch.elsewhere)
    std::vector<Waiter> waiting;
    uint64_t readBytes = 0, readErrors = 0; ///< gt top (Worker.monitor)
    std::string lastError;
  };
  std::unordered_map<uint32_t, Session> sessions; ///< every session with work here
  std::atomic<uint64_t> reads{0}, readBytes{0}, misses{0}; ///< all sessions (gt.debug.stats)

  /// The dispatcher sent `session`'s batch `sequence`: reads waiting for it go on.
  void heard(uint32_t session, uint64_t sequence, bool elsewhere) {
    Session &s = sessions[session];
    s.heard = std::max(s.heard, sequence);
    s.elsewhere = s.elsewhere || elsewhere;
    std::erase_if(s.waiting, [&](Waiter &w) {
      if (!w.ready->isWaiting()) return true; // its caller went away
      if (w.sequence > s.heard) return false;
      w.ready->fulfill();
      return true;
    });
  }
  /// Resolves once `session`'s batch `sequence` has come; fails if the session is not (or no
  /// longer) admitted, or has kMaxWaiting reads waiting already.
  kj::Promise<void> whenHeard(uint32_t session, uint64_t sequence) {
    auto it = sessions.find(session);
    if (it == sessions.end() || it->second.token.empty()) return KJ_EXCEPTION(FAILED, "the session has ended");
    Session &s = it->second;
    if (s.heard >= sequence) return kj::READY_NOW;
    std::erase_if(s.waiting, [](Waiter &w) { return !w.ready->isWaiting(); }); // callers gone
    if (s.waiting.size() >= kMaxWaiting)
      return KJ_EXCEPTION(FAILED, "too many reads of this session wait for batches the dispatcher has not sent");
    auto paf = kj::newPromiseAndFulfiller<void>();
    s.waiting.push_back({sequence, kj::mv(paf.fulfiller)});
    return kj::mv(paf.promise);
  }
  /// The session is over: its token stops working and its waiting reads fail.
  void end(uint32_t session) {
    auto it = sessions.find(session);
    if (it == sessions.end()) return;
    for (Waiter &w : it->second.waiting) w.ready->reject(KJ_EXCEPTION(FAILED, "the session has ended"));
    sessions.erase(it);
  }
  /// The session `token` admits, if any (compared in constant time).
  std::optional<uint32_t> admitted(const std::string &token) const {
    std::optional<uint32_t> found;
    for (auto &[session, s] : sessions)
      if (!s.token.empty() && transport::sameSecret(s.token, token)) found = session;
    return found;
  }
};

/// The worker's counters, with `session`'s own (on the scheduler's thread: it reads the executor).
Values collect(Executor &executor, Scheduler &scheduler, const Readers &readers, uint32_t session) {
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
      {"scheduler_client_core_units", double(q.unitsCoreLeft)},
      {"scheduler_fetches_mid_program", double(q.fetchesMidProgram)},
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
      {"cuda_graph_captures", double(s.graphCaptures)},
      {"cuda_graph_replays", double(s.graphReplays)},
      {"region_kernel_launches", double(s.regionKernels)},
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
      {"direct_reads", double(readers.reads)},
      {"direct_read_bytes", double(readers.readBytes)},
      {"direct_read_misses", double(readers.misses)},
      {"kept_programs", double(keptPrograms.load())},
      {"kept_program_runs", double(keptProgramRuns.load())},
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
      counter("gt_worker_client_core_units_total",
              "Units run on one kernel thread fewer, leaving a core to a client on this machine (--client-core).",
              at("scheduler_client_core_units")),
      counter("gt_worker_fetches_mid_program_total",
              "Fetches answered as soon as their tensor was made, before the rest of its program ran.",
              at("scheduler_fetches_mid_program")),
      gauge("gt_worker_live_bytes", "Device memory held by tensors.", at("live_bytes")),
      gauge("gt_worker_peak_bytes", "The most device memory tensors have held.", at("peak_bytes")),
      gauge("gt_worker_live_tensors", "Tensors held.", at("live_tensors")),
      counter("gt_worker_collectives_total", "all_reduce, all_gather, reduce_scatter and all_to_all run.", at("collective_ops")),
      counter("gt_worker_collective_bytes_total", "Bytes put into collectives.", at("collective_bytes")),
      counter("gt_worker_p2p_sent_bytes_total", "Bytes sent point to point (send).", at("p2p_bytes_sent")),
      counter("gt_worker_p2p_received_bytes_total", "Bytes received point to point (recv).", at("p2p_bytes_received")),
      counter("gt_worker_direct_reads_total", "Fetches clients made straight from this worker (--listen).",
              at("direct_reads")),
      counter("gt_worker_direct_read_bytes_total", "Tensor bytes clients read straight from this worker.",
              at("direct_read_bytes")),
      gauge("gt_worker_kept_programs", "Repeated steps' programs kept here (sent once, then replayed).",
            at("kept_programs")),
      counter("gt_worker_kept_program_runs_total", "Programs run from a kept one with a batch's ids, values and bytes.",
              at("kept_program_runs")),
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

/// `read()` for `session` once everything it queued before has run, or with `tensor` only
/// what it queued that makes or frees that tensor (a fetch: Scheduler::whenFinal): on the
/// event loop at once when the scheduler's thread is parked with nothing queued and `cheap()`
/// says the read is small (a large copy there would hold up every other session's calls),
/// else on the scheduler's thread.
template <typename T>
kj::Promise<T> afterQueued(Scheduler &scheduler, uint32_t session, std::function<bool()> cheap, std::function<T()> read,
                           std::optional<uint64_t> tensor = std::nullopt) {
  T now;
  bool inline_ = false;
  if (scheduler.runIfIdle(session, [&] {
        if ((inline_ = cheap())) now = read();
      }) && inline_)
    return kj::mv(now);
  auto got = handoff<T>();
  auto fn = [read = kj::mv(read), f = got.fulfiller] { (*f)->fulfill(read()); };
  if (tensor) scheduler.whenFinal(session, *tensor, kj::mv(fn));
  else scheduler.fence(session, kj::mv(fn));
  return kj::mv(got.promise);
}

/// A Fetched into its wire form.
void setFetched(wire::Fetched::Builder out, const Fetched &f) {
  out.setDtype(uint8_t(f.type.dtype));
  auto shape = out.initShape(unsigned(f.type.shape.size()));
  for (unsigned i = 0; i < f.type.shape.size(); ++i) shape.set(i, f.type.shape[i]);
  if (!f.error.empty()) out.setError(f.error);
  else out.setData(kj::arrayPtr(reinterpret_cast<const kj::byte *>(f.bytes.data()), f.bytes.size()));
}

/// The largest fetch answered on the event loop itself (Scheduler::runIfIdle).
constexpr uint64_t kInlineFetchBytes = 1 << 20;

/// One session's reads of its own tensors over the worker's --listen socket: ids are the
/// session's, made worker ids here (sessionTensorId), so a session can name no other's tensor.
class SessionReaderImpl final : public wire::SessionReader::Server {
public:
  SessionReaderImpl(uint32_t session, Executor &executor, Scheduler &scheduler, Readers &readers)
      : session_(session), executor_(executor), scheduler_(scheduler), readers_(readers) {
    readers_.sessions[session_].readers++;
  }
  ~SessionReaderImpl() {
    if (auto it = readers_.sessions.find(session_); it != readers_.sessions.end() && it->second.readers > 0)
      it->second.readers--;
  }

  kj::Promise<void> fetch(FetchContext context) override {
    auto params = context.getParams();
    uint64_t sid = params.getId();
    if (sid >= kMaxSessionTensorId) return KJ_EXCEPTION(FAILED, "no tensor has id", sid);
    uint64_t id = sessionTensorId(session_, sid), offset = params.getOffset(), length = params.getLength();
    auto t = params.getType();
    if (t.getDtype() >= kNumDTypes || t.getShape().size() > wire::kMaxCarriedRank)
      return KJ_EXCEPTION(FAILED, "not a tensor type");
    TensorType type{DType(t.getDtype()), {}};
    for (int64_t d : t.getShape()) type.shape.push_back(d);
    struct Read {
      bool here = false; ///< false: not held here whole (the client asks the dispatcher)
      Fetched fetched;
    };
    uint32_t session = session_;
    Executor &executor = executor_;
    Scheduler &scheduler = scheduler_;
    Readers &readers = readers_;
    return readers_.whenHeard(session, params.getSequence()).then([=, &executor, &scheduler]() {
      return afterQueued<Read>(
          scheduler, session, [&executor, id] { return executor.cheapToFetch(id, kInlineFetchBytes); },
          [&executor, session, id, type, offset, length] {
            Read r;
            if ((r.here = executor.holds(id, session, type))) r.fetched = executor.fetch(id, offset, length);
            return r;
          },
          id);
    }).then([context, session, &readers](Read &&r) mutable {
      auto results = context.getResults();
      results.setHere(r.here);
      readers.reads++;
      if (!r.here) {
        readers.misses++;
        return;
      }
      setFetched(results.initResult(), r.fetched);
      readers.readBytes += r.fetched.bytes.size();
      auto it = readers.sessions.find(session);
      if (it == readers.sessions.end()) return;
      it->second.readBytes += r.fetched.bytes.size();
      if (!r.fetched.error.empty()) {
        it->second.readErrors++;
        it->second.lastError = r.fetched.error;
      }
    });
  }

  kj::Promise<void> sync(SyncContext context) override {
    uint32_t session = session_;
    Scheduler &scheduler = scheduler_;
    Readers &readers = readers_;
    return readers_.whenHeard(session, context.getParams().getSequence()).then([session, &scheduler] {
      return afterQueued<bool>(scheduler, session, [] { return true; }, [] { return true; }).ignoreResult();
    }).then([context, session, &readers]() mutable {
      auto it = readers.sessions.find(session);
      context.getResults().setWhole(it != readers.sessions.end() && !it->second.elsewhere);
    });
  }

  kj::Promise<void> ping(PingContext) override { return kj::READY_NOW; }

private:
  uint32_t session_;
  Executor &executor_;
  Scheduler &scheduler_;
  Readers &readers_;
};

/// The front door of the --listen socket: a session's token opens its reader; a wrong one
/// closes the connection (as the dispatcher's front door does).
class WorkerDoorImpl final : public wire::WorkerDoor::Server {
public:
  WorkerDoorImpl(uint64_t connection, transport::Listener &listener, kj::Timer &timer, Executor &executor,
                 Scheduler &scheduler, Readers &readers)
      : connection_(connection), listener_(listener), timer_(timer), executor_(executor), scheduler_(scheduler),
        readers_(readers) {}

  kj::Promise<void> open(OpenContext context) override {
    std::optional<uint32_t> session = readers_.admitted(context.getParams().getToken().cStr());
    if (session && readers_.sessions[*session].readers >= Readers::kMaxReaders) {
      listener_.authenticated(connection_); // a known client: its connection stays, it gets no reader
      return KJ_EXCEPTION(FAILED, "this session has the most readers open on this worker already", Readers::kMaxReaders);
    }
    if (!session) {
      uint64_t id = connection_;
      transport::Listener *listener = &listener_;
      timer_.afterDelay(100 * kj::MILLISECONDS).then([listener, id] { listener->close(id); }).detach([](kj::Exception &&) {});
      return KJ_EXCEPTION(FAILED, "wrong reader token: a session reads here with the token its dispatcher gave it");
    }
    listener_.authenticated(connection_);
    context.getResults().setReader(kj::heap<SessionReaderImpl>(*session, executor_, scheduler_, readers_));
    return kj::READY_NOW;
  }

private:
  uint64_t connection_;
  transport::Listener &listener_;
  kj::Timer &timer_;
  Executor &executor_;
  Scheduler &scheduler_;
  Readers &readers_;
};

class WorkerImpl final : public wire::Worker::Server {
public:
  WorkerImpl(Executor &executor, Scheduler &scheduler, std::shared_ptr<Published> published, Readers &readers)
      : executor_(executor), scheduler_(scheduler), published_(std::move(published)), readers_(readers) {}

  // Queued in the session's queue; the reply goes once the program has run. An empty program
  // only says which of the session's batches the dispatcher has sent (Batch.sequence).
  kj::Promise<void> run(RunContext context) override {
    auto batch = context.getParams().getProgram();
    uint32_t session = batch.getSession();
    KJ_DEFER(readers_.heard(session, batch.getSequence(), batch.getElsewhere())); // after the program is queued
    for (uint64_t plan : batch.getForget()) kept_.erase({session, plan});
    ProgramRun program;
    if (batch.getPlan() != 0 && batch.getInstructions().size() == 0) { // a kept program, run again
      auto it = kept_.find({session, batch.getPlan()});
      KJ_REQUIRE(it != kept_.end(), "a replay of a plan this worker does not keep", session, batch.getPlan());
      try {
        program.instructions = it->second->replay(batch);
      } catch (const std::exception &e) {
        throw KJ_EXCEPTION(FAILED, e.what());
      }
      keptProgramRuns++;
      program.recycle = [kept = it->second](std::vector<Instruction> &&run) { kept->giveBack(std::move(run)); };
    } else {
      if (batch.getInstructions().size() == 0) return kj::READY_NOW;
      program.instructions.reserve(batch.getInstructions().size());
      for (auto inst : batch.getInstructions()) program.instructions.push_back(wire::fromWire(inst));
      if (batch.getPlan() != 0) kept_[{session, batch.getPlan()}] = std::make_shared<KeptPlan>(program.instructions);
    }
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
    return afterQueued<Fetched>(scheduler_, session, [this, id] { return executor_.cheapToFetch(id, kInlineFetchBytes); },
                                kj::mv(read), id)
        .then([context](Fetched &&f) mutable { setFetched(context.getResults().initResult(), f); });
  }

  kj::Promise<void> sync(SyncContext context) override {
    return afterQueued<bool>(scheduler_, context.getParams().getSession(), [] { return true; }, [] { return true; })
        .ignoreResult();
  }

  kj::Promise<void> admitReader(AdmitReaderContext context) override {
    readers_.sessions[context.getParams().getSession()].token = context.getParams().getToken().cStr();
    return kj::READY_NOW;
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
      else if (name == "scheduler_client_core_units") value = double(q.unitsCoreLeft);
      else if (name == "scheduler_fetches_mid_program") value = double(q.fetchesMidProgram);
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
      if (auto r = readers_.sessions.find(session); r != readers_.sessions.end()) {
        sessions[i].setReadBytes(r->second.readBytes);
        sessions[i].setReadErrors(r->second.readErrors);
        sessions[i].setLastReadError(r->second.lastError.substr(0, 500));
      }
      ++i;
    }
    return kj::READY_NOW;
  }

  kj::Promise<void> endSession(EndSessionContext context) override {
    readers_.end(context.getParams().getSession());
    std::erase_if(kept_, [&](const auto &k) { return k.first.first == context.getParams().getSession(); });
    auto ended = handoff<void>();
    scheduler_.endSession(context.getParams().getSession(), [f = ended.fulfiller] {
      releaseFreeMemory(); // (the scheduler freed the session's buffers just before)
      (*f)->fulfill();
    });
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
      Result r{collect(executor_, scheduler_, readers_, session), executor_.stats().notes};
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
  Readers &readers_;
  std::map<std::pair<uint32_t, uint64_t>, std::shared_ptr<KeptPlan>> kept_; ///< by session, Batch.plan
};

/// The CPUs this process may use (sched_getaffinity), in Linux's numbering.
std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

/// Keeps the calling thread off `cpu` (the executor's, --executor-cpu) when it has others.
void keepOffCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int other : allowedCpus())
    if (other != cpu) CPU_SET(other, &set);
  if (CPU_COUNT(&set) > 0) pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

std::string readToken(const std::string &path) {
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  return token;
}

} // namespace

void serve(const Options &options) {
  if (options.executorCpu >= 0) {
    std::vector<int> cpus = allowedCpus();
    if (std::find(cpus.begin(), cpus.end(), options.executorCpu) == cpus.end()) {
      std::string list;
      for (int cpu : cpus) list += (list.empty() ? "" : ",") + std::to_string(cpu);
      throw std::runtime_error("--executor-cpu " + std::to_string(options.executorCpu) +
                               ": not one of the CPUs this process may use (" + list + ")");
    }
  }
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
  SchedulerOptions schedulerOptions;
  schedulerOptions.clientCore = options.clientCore;
  schedulerOptions.executorCpu = options.executorCpu;
  schedulerOptions.idleSpinUs = options.idleSpinUs;
  Scheduler scheduler(executor, schedulerOptions);
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
  // Sessions' direct reads (--listen): a listener on this thread's event loop, bounded as the
  // dispatcher's; the address is what the dispatcher hands out to clients.
  auto readers = std::make_shared<Readers>();
  std::unique_ptr<transport::Listener> readerListener;
  if (!options.listen.empty()) {
    transport::ListenerOptions lo;
    bool isUnix = options.listen.rfind("unix:", 0) == 0;
    if (isUnix) {
      lo.host = options.listen;
    } else {
      auto colon = options.listen.rfind(':');
      char *end = nullptr;
      long port = colon == std::string::npos ? -1 : std::strtol(options.listen.c_str() + colon + 1, &end, 10);
      if (colon == std::string::npos || colon == 0 || !end || *end || port < 0 || port > 65535)
        throw std::runtime_error("--listen must be unix:PATH or HOST:PORT, got '" + options.listen + "'");
      lo.host = options.listen.substr(0, colon);
      lo.port = int(port);
    }
    lo.maxConnections = 256;
    lo.maxPending = 16;
    lo.maxMessageBytes = wire::kReadChunkBytes + wire::kReadSlackBytes; // the answers carry up to a chunk
    lo.tls.certFile = options.tls.certFile;
    lo.tls.keyFile = options.tls.keyFile;
    transport::Connection *loop = connection.get();
    readerListener = std::make_unique<transport::Listener>(
        loop->io(), lo, [&readerListener, loop, &executor, &scheduler, readers](uint64_t id) -> capnp::Capability::Client {
          return kj::heap<WorkerDoorImpl>(id, *readerListener, loop->timer(), executor, scheduler, *readers);
        });
    std::string host = lo.host == "0.0.0.0" || lo.host == "::" ? localAddressTowards(options.host, options.port) : lo.host;
    req.setReaderAddress(isUnix ? options.listen : host + ":" + std::to_string(readerListener->port()));
  }
  auto published = std::make_shared<Published>();
  auto publish = [&executor, &scheduler, published, metricsServer, readers] {
    Values values = collect(executor, scheduler, *readers, 0);
    if (metricsServer) metricsServer->publish(metricSamples(values));
    std::lock_guard lock(published->mu);
    published->values = std::move(values);
  };
  publish(); // before the scheduler's thread starts, the only other reader of the executor
  scheduler.onTick(publish, 250);
  req.setWorker(kj::heap<WorkerImpl>(executor, scheduler, published, *readers));
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
  if (options.executorCpu >= 0) keepOffCpu(options.executorCpu); // this thread answers while kernels run
  std::string pinned = options.executorCpu >= 0 ? ", executor on CPU " + std::to_string(options.executorCpu) : "";
  std::cerr << "gt-worker: registered as worker " << index << " (" << device->describe() << pinned << "), collectives: " << plane
            << ", memory " << memory / (1 << 20) << " MiB, " << sessionMemory / (1 << 20) << " MiB per session"
            << std::endl;
  // Serve until the dispatcher goes away.
  connection->onDisconnect().wait(waitScope);
  std::cerr << "gt-worker: dispatcher went away, exiting" << std::endl;
  std::_Exit(0); // the scheduler may be inside a collective with a peer that is gone too
}

} // namespace gt::worker
