// gt-dispatcher: one Session per client (own tensor namespace), batches captured as MLIR,
// verified and placed by the pass pipeline, then streamed to workers as programs.
#include "gt/Dispatcher/Dispatcher.h"

#include "gt/Core/Config.h"
#include "gt/Dialect/GTOps.h"
#include "gt/Dialect/Passes.h"
#include "gt/Dispatcher/Capture.h"
#include "gt/Dispatcher/Record.h"
#include "gt/Transport/Wire.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/debug.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <set>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace gt::dispatcher {
namespace {

/// GT_INSTRUCTION_LOG: "<unix time, µs> session=<s> <event> <op> id=<id> [worker=<w>] [at=<file:line>]".
class InstructionLog {
public:
  explicit InstructionLog(const std::string &path) {
    if (!path.empty()) out_.open(path, std::ios::app);
  }
  bool enabled() const { return out_.is_open(); }
  void write(uint32_t session, const char *event, const Instruction &inst, int64_t worker = -1) {
    write(session, event, inst.op, inst.result, inst.location, worker);
  }
  void write(uint32_t session, const char *event, OpCode op, uint64_t id, const std::string &location,
             int64_t worker = -1) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
    out_ << us << " session=" << session << ' ' << event << ' ' << opInfo(op).mnemonic << " id=" << id;
    if (worker >= 0) out_ << " worker=" << worker;
    if (!location.empty()) out_ << " at=" << location;
    out_ << '\n';
  }
  void flush() { if (enabled()) out_.flush(); }

private:
  std::ofstream out_;
};

struct WorkerRef {
  wire::Worker::Client client;
  std::string device;
  uint64_t connection = 0;        ///< the Listener's id of its connection
  uint64_t memoryBytes = 0;       ///< what its device may hold (0: not said)
  uint64_t sessionMemoryBytes = 0; ///< each session's quota there (0: not said)
  bool alive = true;
  std::string deathReason;
  std::chrono::steady_clock::time_point lastPong = std::chrono::steady_clock::now();
};

/// The rendezvous store of worker groups (Gloo addresses, NCCL ids): bounded in keys, value
/// size and waiting gets; entries expire after kStoreTtl (a group's rendezvous takes seconds).
struct RendezvousStore {
  static constexpr auto kStoreTtl = std::chrono::minutes(10);
  struct Entry {
    std::string value;
    std::chrono::steady_clock::time_point set;
  };
  std::map<std::string, Entry> entries;
  std::multimap<std::string, kj::Own<kj::PromiseFulfiller<std::string>>> waiters;
  size_t bytes = 0;

  void expire() {
    auto now = std::chrono::steady_clock::now();
    for (auto it = entries.begin(); it != entries.end();)
      if (now - it->second.set > kStoreTtl) {
        bytes -= it->first.size() + it->second.value.size();
        it = entries.erase(it);
      } else {
        ++it;
      }
    for (auto it = waiters.begin(); it != waiters.end();) // gets whose caller went away
      it = it->second->isWaiting() ? std::next(it) : waiters.erase(it);
  }
};

struct State {
  Options options;
  mlir::MLIRContext ctx{mlir::MLIRContext::Threading::DISABLED};
  std::vector<WorkerRef> workers;
  uint64_t nextGlobalId = 1;
  uint32_t nextSession = 0;
  uint32_t liveSessions = 0;
  InstructionLog log;
  mlir::gt::HotRegionCounter regionCounts; ///< spans every batch of every session
  uint64_t regionsFormed = 0, regionsMarkedHot = 0, batches = 0;
  uint64_t uploadBytes = 0, fetchBytes = 0; ///< tensor bytes that passed through the dispatcher
  uint64_t instructions = 0;                ///< instructions received from clients
  double dispatchMs = 0;                    ///< time spent turning them into worker programs
  uint64_t planHits = 0, planMisses = 0;    ///< batches replayed from / added to a plan cache
  uint64_t refusedInstructions = 0;         ///< client instructions refused (see ClientBatch.h)
  uint64_t handshakeFailures = 0;           ///< wrong or missing credentials
  RendezvousStore store;
  kj::Timer *timer = nullptr;
  transport::Listener *listener = nullptr;
  explicit State(Options o) : options(std::move(o)), log(options.instructionLog) {
    mlir::DialectRegistry registry;
    mlir::gt::registerGTDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  /// Worker `worker` is lost (a failed call, no answer to pings): its tensors fail with `why`.
  void markDead(int64_t worker, const std::string &why) {
    WorkerRef &w = workers[size_t(worker)];
    if (w.alive) std::cerr << "gt-dispatcher: worker " << worker << " lost: " << why << std::endl;
    w.alive = false;
    if (w.deathReason.empty()) w.deathReason = why;
    if (listener) listener->close(w.connection); // pending calls on it fail now
  }
  /// The limits a session works under (the smallest quota of a live worker).
  void fillLimits(wire::Limits::Builder out) const {
    uint64_t quota = 0;
    uint32_t live = 0;
    for (const WorkerRef &w : workers) {
      if (!w.alive) continue;
      live++;
      if (w.sessionMemoryBytes && (!quota || w.sessionMemoryBytes < quota)) quota = w.sessionMemoryBytes;
    }
    out.setMaxBatchInstructions(uint32_t(options.batch.maxInstructions));
    out.setMaxMessageBytes(options.listener.maxMessageBytes);
    out.setSessionMemoryBytes(quota);
    out.setWorkers(live);
  }
};

void setError(wire::Fetched::Builder out, const std::string &message) { out.setError(message); }


/// A region of one worker's program, ready for the wire (ids are global).
using wireRegion = ProgramRegion;

/// The plan cache's key of a batch (sharded or not): its structure with session ids renamed
/// (externals, tensors of earlier batches, by first use; locals, made by this batch, by
/// definition), the home worker, the types and layouts of the externals, every attribute but
/// fill values and seeds (taken from each new batch), signals and source lines. Two batches
/// with the same text get the same programs and regions from the passes, up to ids, fill
/// values, seeds and upload bytes.
struct BatchKey {
  std::string text;
  std::vector<uint64_t> externals; ///< session ids, in first-use order
  std::vector<uint64_t> locals;    ///< session ids of the results, in batch order
  std::unordered_map<uint64_t, uint32_t> externalIndex, localIndex;
  bool cacheable = true; ///< false if an id is reused or unknown (the passes then decide)
};

/// A sharded batch after the passes, with ids symbolic: each worker's program as steps whose
/// operands and results are references, replayed for every batch with the same BatchKey.
struct ShardedPlan {
  struct Ref {
    enum Kind : uint8_t { External, Local, Temp } kind;
    uint32_t index;
  };
  struct Step {
    Instruction inst;               ///< op, attrs, location; ids are filled in per batch
    std::vector<Ref> operands;
    std::optional<Ref> result;
    int32_t source = -1;            ///< a copy of batch[source]: takes its fill value and seed
    int32_t upload = -1;            ///< an upload of batch[upload]'s bytes (its block if split)
    std::optional<Sharding> uploadLayout;
  };
  struct Made { ///< a tensor the batch makes: where its pieces live
    uint32_t local;        ///< its BatchKey::locals index
    TensorType type;
    Sharding layout;       ///< its gt.sharding, or replicated over the workers that hold it
    bool freedHere = false; ///< the batch frees it too (it is never recorded)
  };
  struct Region { ///< a gt.region of one worker's program: steps [start, start+count)
    uint64_t key;
    bool forced; ///< every op carries `gt.compile` (a `compile: true` signal): hot at once
    uint32_t start, count;
    std::vector<Ref> outputs;
  };
  std::map<int64_t, std::vector<Step>> programs;     ///< by worker
  std::map<int64_t, std::vector<Region>> regions;    ///< by worker, in program order
  uint32_t temps = 0;                                ///< values the passes added
  std::vector<Made> made;                        ///< in local index order
  std::vector<Ref> freed;                        ///< session tensors the batch frees (not temps)
  std::vector<std::pair<Ref, int64_t>> replicas; ///< client tensors copied whole to a worker, kept there
};

class SessionImpl final : public wire::Session::Server {
public:
  /// A session of client `name` ("" for GT_TOKEN's), with `weight` (its share of each worker).
  SessionImpl(State &state, std::string name, double weight)
      : state_(state), id_(state.nextSession++), client_(std::move(name)), weight_(weight) {
    state_.liveSessions++;
  }

  ~SessionImpl() noexcept(false) {
    // The client went away: every worker drops what the session still has queued and frees
    // what it holds.
    for (WorkerRef &w : state_.workers) {
      if (!w.alive) continue;
      auto req = w.client.endSessionRequest();
      req.setSession(id_);
      req.send().detach([](kj::Exception &&) {});
    }
    state_.liveSessions--;
  }

  kj::Promise<void> submit(SubmitContext context) override {
    // A batch over the size limit is refused whole; an instruction a client may not send (or
    // one that cannot be read) is refused alone: its result is poisoned with the reason, and
    // so is whatever reads it, while the rest of the batch runs.
    auto instructions = context.getParams().getBatch().getInstructions();
    std::vector<Instruction> batch;
    std::string wholeBatch = checkBatchSize(instructions.size(), state_.options.batch);
    if (wholeBatch.empty() && tensors_.size() >= state_.options.maxTensors)
      wholeBatch = "a batch: this session holds " + std::to_string(tensors_.size()) +
                   " tensors, the most a session may (GT_MAX_TENSORS); free some first";
    if (!wholeBatch.empty()) {
      // Refused whole, without an entry per result (a huge batch must not cost memory); its
      // frees still happen, so a session over its tensor bound can get back under it.
      state_.refusedInstructions += instructions.size();
      refusedBatch_ = "the dispatcher refused " + wholeBatch;
      for (auto inst : instructions)
        if (inst.getOp() == uint16_t(OpCode::Free) && inst.getOperands().size() == 1 &&
            tensors_.count(inst.getOperands()[0])) {
          Instruction free;
          free.operands = {inst.getOperands()[0]};
          batch.push_back(std::move(free));
        }
      if (!batch.empty()) dispatch(std::move(batch));
      return kj::READY_NOW;
    }
    batch.reserve(instructions.size());
    for (auto inst : instructions) {
      std::string why;
      Instruction in;
      try {
        in = wire::fromWire(inst);
        why = checkClientInstruction(in, state_.options.batch);
        if (why.empty()) clearUndeclared(in.op, in.attrs); // what an op ignores cannot reach a plan key
      } catch (const std::exception &e) { // an unknown op or dtype code
        why = std::string("instruction ") + std::to_string(batch.size()) + ": " + e.what();
      }
      if (why.empty()) {
        state_.uploadBytes += in.data.size();
        batch.push_back(std::move(in));
        continue;
      }
      state_.refusedInstructions++;
      if (inst.getOp() == uint16_t(OpCode::Free)) continue;
      freeEverywhere(inst.getResult()); // a reused id
      tensors_[inst.getResult()].error = "the dispatcher refused " + why;
    }
    if (state_.log.enabled())
      for (const Instruction &inst : batch) state_.log.write(id_, "recv", inst);
    if (!state_.options.record.empty())
      recordBatch(state_.options.record + "/client-s" + std::to_string(id_) + "-" + std::to_string(recorded_++) + ".bin",
                  batch, {}, [this](uint64_t id) -> std::optional<TensorType> {
                    auto it = tensors_.find(id);
                    if (it == tensors_.end() || !it->second.error.empty()) return std::nullopt;
                    return it->second.type;
                  });
    auto t0 = std::chrono::steady_clock::now();
    state_.instructions += batch.size();
    if (!batch.empty()) dispatch(std::move(batch));
    state_.dispatchMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    state_.log.flush();
    // Backpressure: while the session has too much queued on the workers, its next submit (and
    // every later call of this session) waits; the client's own flow control holds it there.
    if (backlog_->queued <= state_.options.maxQueued) return kj::READY_NOW;
    auto paf = kj::newPromiseAndFulfiller<void>();
    backlog_->room = kj::mv(paf.fulfiller);
    return kj::mv(paf.promise);
  }

  kj::Promise<void> fetch(FetchContext context) override {
    uint64_t id = context.getParams().getId();
    auto it = tensors_.find(id);
    if (it == tensors_.end()) {
      setError(context.getResults().initResult(), "tensor " + std::to_string(id) + " does not exist in this session" +
                                                      (refusedBatch_.empty() ? "" : " (" + refusedBatch_ + ")"));
      return kj::READY_NOW;
    }
    const Entry &t = it->second;
    if (!t.error.empty()) {
      setError(context.getResults().initResult(), t.error);
      return kj::READY_NOW;
    }
    if (t.layout.workers.size() > 1) return fetchSharded(context, t);
    int64_t worker = t.worker;
    if (!state_.workers[worker].alive) {
      setError(context.getResults().initResult(),
               "worker " + std::to_string(worker) + " died: " + state_.workers[worker].deathReason);
      return kj::READY_NOW;
    }
    return fetchFrom(worker, t.globalId, false).then([this, context](Piece &&piece) mutable {
      auto out = context.getResults().initResult();
      if (!piece.error.empty()) return setError(out, piece.error);
      state_.fetchBytes += piece.bytes.size();
      setPiece(out, piece.type, piece.bytes);
    });
  }

  kj::Promise<void> sync(SyncContext) override {
    // Each worker answers once it has run everything this session queued there.
    auto promises = kj::heapArrayBuilder<kj::Promise<void>>(state_.workers.size());
    for (size_t i = 0; i < state_.workers.size(); ++i) {
      if (!state_.workers[i].alive) continue;
      auto req = state_.workers[i].client.syncRequest();
      req.setSession(id_);
      promises.add(req.send().ignoreResult().catch_([](kj::Exception &&) {}));
    }
    return kj::joinPromises(promises.finish());
  }

  kj::Promise<void> info(InfoContext context) override {
    uint32_t alive = 0;
    for (auto &w : state_.workers) alive += w.alive;
    context.getResults().setWorkers(alive);
    context.getResults().setSessions(state_.liveSessions);
    state_.fillLimits(context.getResults().initLimits());
    return kj::READY_NOW;
  }

  kj::Promise<void> stats(StatsContext context) override {
    // Sum every live worker's counters; add the dispatcher's own.
    struct Totals {
      std::map<std::string, double> values;
      std::vector<std::string> notes;
      std::map<uint32_t, std::map<std::string, double>> byWorker;
    };
    auto totals = std::make_shared<Totals>();
    Totals &t = *totals;
    t.values["workers"] = 0;
    t.values["batches"] = double(state_.batches);
    t.values["regions_formed"] = double(state_.regionsFormed);
    t.values["regions_marked_hot"] = double(state_.regionsMarkedHot);
    t.values["dispatcher_upload_bytes"] = double(state_.uploadBytes);
    t.values["dispatcher_fetch_bytes"] = double(state_.fetchBytes);
    t.values["dispatcher_instructions"] = double(state_.instructions);
    t.values["dispatcher_dispatch_ms"] = state_.dispatchMs;
    t.values["dispatcher_plan_cache_hits"] = double(state_.planHits);
    t.values["dispatcher_plan_cache_misses"] = double(state_.planMisses);
    t.values["dispatcher_refused_instructions"] = double(state_.refusedInstructions);
    t.values["dispatcher_handshake_failures"] = double(state_.handshakeFailures);
    t.values["dispatcher_sessions"] = double(state_.liveSessions);
    t.values["dispatcher_store_keys"] = double(state_.store.entries.size());
    t.values["dispatcher_store_bytes"] = double(state_.store.bytes);
    if (state_.listener) {
      transport::Listener::Counters c = state_.listener->counters();
      t.values["dispatcher_connections"] = double(c.open);
      t.values["dispatcher_connections_pending"] = double(c.pending);
      t.values["dispatcher_connections_refused"] = double(c.refused);
      t.values["dispatcher_connections_evicted"] = double(c.evicted);
      t.values["dispatcher_connections_timed_out"] = double(c.timedOut);
      t.values["dispatcher_accept_errors"] = double(c.acceptErrors);
    }
    t.values["session_queued_instructions"] = double(backlog_->queued);
    auto promises = kj::heapArrayBuilder<kj::Promise<void>>(state_.workers.size());
    for (size_t i = 0; i < state_.workers.size(); ++i) {
      if (!state_.workers[i].alive) continue;
      t.values["workers"] += 1;
      auto req = state_.workers[i].client.statsRequest();
      req.setSession(id_);
      promises.add(req.send().then(
          [totals, i](capnp::Response<wire::Worker::StatsResults> &&r) {
            Totals &t = *totals;
            for (auto s : r.getStats()) {
              t.values[s.getName().cStr()] += s.getValue();
              t.byWorker[uint32_t(i)][s.getName().cStr()] = s.getValue();
            }
            for (auto n : r.getNotes()) t.notes.push_back("worker " + std::to_string(i) + ": " + n.cStr());
          },
          [](kj::Exception &&) {}));
    }
    return kj::joinPromises(promises.finish()).then([context, totals]() mutable {
      Totals &t = *totals;
      auto list = context.getResults().initStats(unsigned(t.values.size()));
      unsigned i = 0;
      for (auto &[name, value] : t.values) {
        list[i].setName(name);
        list[i].setValue(value);
        ++i;
      }
      auto notes = context.getResults().initNotes(unsigned(t.notes.size()));
      for (unsigned j = 0; j < t.notes.size(); ++j) notes.set(j, t.notes[j]);
      auto byWorker = context.getResults().initByWorker(unsigned(t.byWorker.size()));
      unsigned k = 0;
      for (auto &[index, values] : t.byWorker) {
        byWorker[k].setIndex(index);
        auto stats = byWorker[k].initStats(unsigned(values.size()));
        unsigned j = 0;
        for (auto &[name, value] : values) {
          stats[j].setName(name);
          stats[j].setValue(value);
          ++j;
        }
        ++k;
      }
    });
  }

  kj::Promise<void> loadConfig(LoadConfigContext context) override {
    auto params = context.getParams();
    context.getResults().setWorkers(uint32_t(state_.workers.size()));
    try {
      auto config = std::make_unique<ShardingConfig>(ShardingConfig::parse(params.getYaml(), params.getPath()));
      config->checkWorkers(int64_t(state_.workers.size()));
      config->autoShardBytes = int64_t(std::min<uint64_t>(params.getAutoShardBytes(), uint64_t(INT64_MAX)));
      auto names = context.getResults().initSignals(unsigned(config->signals.size()));
      unsigned i = 0;
      for (auto &[name, entry] : config->signals) names.set(i++, name);
      config_ = std::move(config);
      if (!state_.options.dumpIR.empty()) { // what a dump's replay command reads
        std::ofstream(configDumpPath()) << params.getYaml().cStr();
      }
      clearPlans(); // plans follow the config
    } catch (const std::exception &e) {
      context.getResults().setError(e.what());
    }
    return kj::READY_NOW;
  }

private:
  struct Entry {
    TensorType type;       ///< the global (client's) type
    int64_t worker = 0;    ///< the first worker holding it
    Sharding layout;       ///< where its pieces live (unsharded: replicated over {worker})
    uint64_t globalId = 0; ///< the same on every holder
    std::string error; ///< poisoned at the dispatcher (invalid stream, dead worker)
  };

  void markDead(int64_t worker, const std::string &why) { state_.markDead(worker, why); }

  int64_t homeWorker() {
    size_t n = state_.workers.size();
    for (size_t i = 0; i < n; ++i) {
      size_t w = (id_ + i) % n;
      if (state_.workers[w].alive) return int64_t(w);
    }
    return -1;
  }

  static size_t resultCount(const std::vector<Instruction> &batch) {
    return size_t(std::count_if(batch.begin(), batch.end(),
                                [](const Instruction &inst) { return inst.op != OpCode::Free; }));
  }

  /// A batch the passes reject (an invalid instruction, a config that does not fit a tensor) is
  /// dispatched again one instruction at a time: only the instruction at fault is poisoned,
  /// with the passes' error, and so is whatever reads it; the rest of the batch runs as it
  /// would have. Costs a pass run per instruction, on this error path only.
  void dispatchEach(std::vector<Instruction> batch) {
    for (Instruction &inst : batch) {
      std::vector<Instruction> one;
      one.push_back(std::move(inst));
      dispatch(std::move(one));
    }
  }

  // ---------------------------------------------------------------- dispatch

  /// Frees session tensor `id` on every worker holding it and forgets it.
  void freeEverywhere(uint64_t id) {
    auto it = tensors_.find(id);
    if (it == tensors_.end()) return;
    if (it->second.error.empty())
      for (int64_t w : it->second.layout.workers) {
        Instruction free;
        free.op = OpCode::Free;
        free.operands = {it->second.globalId};
        send(w, {free});
      }
    tensors_.erase(it);
  }

  /// Poisons every result of `batch` with `error` and runs only its frees. A batch is all or
  /// nothing: its collectives must run on every worker of their group or on none.
  void poison(const std::vector<Instruction> &batch, const std::string &error) {
    for (const Instruction &inst : batch) {
      if (inst.op == OpCode::Free) {
        freeEverywhere(inst.operands.at(0));
        continue;
      }
      freeEverywhere(inst.result);
      tensors_[inst.result].error = error;
    }
  }

  /// Whether an instruction of `batch` reads a tensor poisoned at the dispatcher.
  bool readsPoisoned(const std::vector<Instruction> &batch) const {
    for (const Instruction &inst : batch)
      for (uint64_t id : inst.operands)
        if (auto it = tensors_.find(id); it != tensors_.end() && !it->second.error.empty()) return true;
    return false;
  }

  /// Drops from `batch` every instruction that reads a poisoned tensor, directly or through
  /// this batch, and poisons its result with that tensor's error; the rest of the batch runs
  /// (an unrelated parameter update in the same step is not lost).
  void dropPoisonedReaders(std::vector<Instruction> &batch) {
    std::unordered_set<uint64_t> madeHere; // results of the instructions kept so far
    std::vector<Instruction> kept;
    kept.reserve(batch.size());
    for (Instruction &inst : batch) {
      const std::string *error = nullptr;
      for (uint64_t id : inst.operands)
        if (!madeHere.count(id))
          if (auto it = tensors_.find(id); it != tensors_.end() && !it->second.error.empty()) error = &it->second.error;
      if (inst.op == OpCode::Free) {
        if (error) tensors_.erase(inst.operands.at(0));
        else kept.push_back(std::move(inst));
        continue;
      }
      if (error) {
        std::string why = *error; // tensors_ may rehash below
        freeEverywhere(inst.result);
        madeHere.erase(inst.result);
        tensors_[inst.result].error = std::move(why);
        continue;
      }
      madeHere.insert(inst.result);
      kept.push_back(std::move(inst));
    }
    batch = std::move(kept);
  }

  /// The batch through the dispatcher's pipeline (gt-verify, gt-apply-signals with the
  /// session's config, empty until gt.load_config, gt-propagate-sharding, gt-insert-collectives,
  /// gt-bucket-all-reduces, gt-split-by-worker, gt-mark-hot-regions); each @workerN function
  /// becomes worker N's program. Every tensor the client names gets one global id, the same on each worker holding
  /// a piece of it; values the passes add (collective results, received blocks) are freed
  /// after their last use.
  /// The result of the passes is kept as a plan (see BatchKey): a batch with the same
  /// structure as an earlier one (a training step that repeats) skips capture and the passes.
  void dispatch(std::vector<Instruction> batch) {
    // Frees of tensors poisoned at the dispatcher (they live nowhere) are done here. A free of
    // a tensor this dispatcher does not know yet goes on: it is usually made earlier in this
    // very batch (a step's intermediates die within it); a free of an id that never existed
    // is dropped by capture.
    std::erase_if(batch, [&](const Instruction &inst) {
      if (inst.op != OpCode::Free) return false;
      auto it = tensors_.find(inst.operands.at(0));
      if (it == tensors_.end() || it->second.error.empty()) return false;
      tensors_.erase(it);
      return true;
    });
    if (readsPoisoned(batch)) dropPoisonedReaders(batch);
    if (batch.empty()) return;
    int64_t home = homeWorker();
    if (home < 0) return poison(batch, "no live worker is registered with the dispatcher");
    BatchKey key;
    if (std::string error = keyOf(batch, home, key); !error.empty()) { // an upload's bytes do not fit
      if (resultCount(batch) > 1) return dispatchEach(std::move(batch));
      return poison(batch, error);
    }

    std::shared_ptr<const ShardedPlan> plan;
    if (key.cacheable && state_.options.planCache)
      if (auto it = plans_.find(key.text); it != plans_.end()) plan = it->second;
    if (plan) {
      state_.planHits++;
    } else {
      static const ShardingConfig noConfig;
      mlir::OwningOpRef<mlir::ModuleOp> module;
      std::unordered_map<uint64_t, TensorType> globalTypes;
      try {
        module = captureBatch(state_.ctx, batch, [&](uint64_t id) -> std::optional<External> {
          auto it = tensors_.find(id);
          if (it == tensors_.end()) return std::nullopt;
          return External{it->second.type, it->second.worker, it->second.layout};
        });
        module->walk([&](mlir::Operation *op) {
          if (auto sid = op->getAttrOfType<mlir::IntegerAttr>("gt.id"); sid && op->getNumResults() == 1)
            globalTypes[uint64_t(sid.getInt())] = *mlir::gt::fromTensorType(op->getResult(0).getType());
        });
        mlir::gt::DispatcherPipelineOptions options;
        options.defaultWorker = home;
        options.regions = state_.options.jit;
        options.hotAfter = state_.options.hotAfter;
        options.config = config_ ? config_.get() : &noConfig;
        options.numWorkers = int64_t(state_.workers.size());
        options.bucketBytes = state_.options.bucketBytes;
        if (!state_.options.dumpIR.empty()) {
          std::string flags = "num-workers=" + std::to_string(options.numWorkers) +
                              " default-worker=" + std::to_string(home) + " hot-after=" + std::to_string(options.hotAfter) +
                              " bucket-bytes=" + std::to_string(options.bucketBytes) +
                              " regions=" + (options.regions ? "true" : "false") +
                              " auto-shard-bytes=" + std::to_string(options.config->autoShardBytes);
          dumpIR(*module, "captured", (config_ ? "config=" + configDumpPath() + " " : std::string()) + flags);
        }
        runDispatcherPipeline(*module, options);
        dumpIR(*module, "placed");
        plan = planOf(*module, batch, key, globalTypes);
      } catch (const std::exception &e) {
        if (resultCount(batch) > 1) return dispatchEach(std::move(batch));
        return poison(batch, e.what());
      }
      if (key.cacheable && state_.options.planCache) {
        state_.planMisses++;
        if (plans_.size() >= kMaxPlans || planInstructions_ >= kMaxPlanInstructions) clearPlans(); // batches that never repeat
        planInstructions_ += batch.size();
        plans_.emplace(std::move(key.text), plan);
      }
    }
    batchCount_++;
    state_.batches++;
    runPlan(*plan, batch, key);
  }

  /// A session's plan caches hold at most this many plans, or plans of this many instructions
  /// in all (a client whose batches never repeat cannot fill the dispatcher's memory).
  static constexpr size_t kMaxPlans = 256, kMaxPlanInstructions = size_t(1) << 18;

  void clearPlans() {
    plans_.clear();
    planInstructions_ = 0;
  }

  /// Fills `key` for `batch` (see BatchKey); returns an error for an upload whose bytes do not
  /// match its shape and dtype.
  std::string keyOf(const std::vector<Instruction> &batch, int64_t home, BatchKey &key) {
    std::string &k = key.text;
    k.reserve(batch.size() * 48);
    auto put = [&](int64_t v) { k.append(reinterpret_cast<const char *>(&v), sizeof v); };
    auto putList = [&](const std::vector<int64_t> &v) {
      put(int64_t(v.size()));
      for (int64_t x : v) put(x);
    };
    auto putText = [&](const std::string &t) {
      put(int64_t(t.size()));
      k += t;
    };
    auto putLayout = [&](const Sharding &l) {
      put(int64_t(l.kind));
      put(l.axis);
      put(int64_t(l.reduce));
      putList(l.workers);
    };
    put(home);
    put(int64_t(state_.workers.size()));
    for (const Instruction &inst : batch) {
      if (inst.op == OpCode::Upload &&
          inst.data.size() != size_t(numElements(inst.attrs.shape)) * dtypeSize(inst.attrs.dtype))
        return std::string("upload") + (inst.location.empty() ? "" : " at " + inst.location) + ": " +
               std::to_string(inst.data.size()) + " bytes do not hold a tensor of shape " + shapeStr(inst.attrs.shape) +
               " and dtype " + dtypeName(inst.attrs.dtype);
      put(int64_t(inst.op) | int64_t(inst.backward) << 16);
      appendAttrsKey(inst.op, inst.attrs, k); // every declared attribute but value and seed (each batch brings its own)
      putText(inst.signal);
      putText(inst.location);
      for (uint64_t id : inst.operands) {
        if (auto it = key.localIndex.find(id); it != key.localIndex.end()) {
          put(int64_t(it->second) << 2 | 1);
        } else if (auto ext = key.externalIndex.find(id); ext != key.externalIndex.end()) {
          put(int64_t(ext->second) << 2 | 2);
        } else {
          auto t = tensors_.find(id);
          if (t == tensors_.end()) { // capture names the op and the line
            key.cacheable = false;
            continue;
          }
          key.externalIndex[id] = uint32_t(key.externals.size());
          key.externals.push_back(id);
          put(3);
          put(int64_t(t->second.type.dtype));
          putList(t->second.type.shape);
          putLayout(t->second.layout);
        }
      }
      if (inst.op != OpCode::Free) {
        auto [it, fresh] = key.localIndex.try_emplace(inst.result, uint32_t(key.locals.size()));
        if (!fresh || tensors_.count(inst.result) || key.externalIndex.count(inst.result))
          key.cacheable = false; // a reused id: the passes see it, the plan cache does not
        it->second = uint32_t(key.locals.size());
        key.locals.push_back(inst.result);
      }
    }
    return "";
  }

  static std::string shapeStr(const Shape &shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
  }

  /// The plan of a module after gt-split-by-worker (one func per worker, see dispatch).
  std::shared_ptr<ShardedPlan> planOf(mlir::ModuleOp module, const std::vector<Instruction> &batch,
                                      const BatchKey &key, const std::unordered_map<uint64_t, TensorType> &globalTypes) {
    using Ref = ShardedPlan::Ref;
    auto plan = std::make_shared<ShardedPlan>();
    std::map<uint32_t, ShardedPlan::Made> made;          // by local index
    std::map<uint32_t, std::vector<int64_t>> holders;    // the workers whose program makes it
    auto sessionRef = [&](uint64_t sid) -> Ref {
      if (auto it = key.localIndex.find(sid); it != key.localIndex.end()) return {Ref::Local, it->second};
      return {Ref::External, key.externalIndex.at(sid)};
    };
    for (auto func : module.getOps<mlir::func::FuncOp>()) {
      auto workerAttr = func->getAttrOfType<mlir::IntegerAttr>("gt.worker");
      if (!workerAttr) continue;
      int64_t w = workerAttr.getInt();
      llvm::DenseMap<mlir::Value, Ref> refs;
      for (mlir::BlockArgument arg : func.getArguments())
        refs.try_emplace(arg, sessionRef(uint64_t(func.getArgAttrOfType<mlir::IntegerAttr>(arg.getArgNumber(), "gt.id").getInt())));
      std::vector<ShardedPlan::Step> &steps = plan->programs[w];
      std::function<void(mlir::Operation &)> addStep = [&](mlir::Operation &op) {
        if (auto region = mlir::dyn_cast<mlir::gt::RegionOp>(op)) {
          // Its ops become consecutive steps; block arguments stand for the operands and the
          // region's results for the yielded values.
          mlir::Block &body = region.getBody().front();
          // (Copies: inserting may grow `refs` and move the Ref a reference would point at.)
          for (auto [arg, operand] : llvm::zip(body.getArguments(), region->getOperands())) {
            Ref input = refs.at(operand);
            refs.try_emplace(arg, input);
          }
          ShardedPlan::Region r{std::strtoull(region.getKey().str().c_str(), nullptr, 16), true, uint32_t(steps.size()), 0, {}};
          for (mlir::Operation &inner : body) {
            if (auto yield = mlir::dyn_cast<mlir::gt::YieldOp>(inner)) {
              for (auto [result, yielded] : llvm::zip(region->getResults(), yield->getOperands())) {
                Ref output = refs.at(yielded);
                refs.try_emplace(result, output);
                r.outputs.push_back(output);
              }
              continue;
            }
            if (!mlir::isa<mlir::gt::FreeOp>(inner) && !inner.hasAttr("gt.compile")) r.forced = false;
            addStep(inner);
          }
          r.count = uint32_t(steps.size()) - r.start;
          plan->regions[w].push_back(std::move(r));
          return;
        }
        const OpInfo *info = mlir::gt::opInfoOf(&op);
        if (!info) return; // func.return
        ShardedPlan::Step step;
        step.inst.op = info->code;
        step.inst.attrs = mlir::gt::attrsOf(&op);
        step.inst.location = locationString(op.getLoc());
        for (mlir::Value v : op.getOperands()) step.operands.push_back(refs.at(v));
        if (step.inst.op == OpCode::Send) { // the receiver's block: what a failed sender still sends
          TensorType t = *mlir::gt::fromTensorType(op.getOperand(0).getType());
          step.inst.attrs.shape = t.shape;
          step.inst.attrs.dtype = t.dtype;
        }
        if (auto src = op.getAttrOfType<mlir::IntegerAttr>("gt.inst");
            src && size_t(src.getInt()) < batch.size() && batch[size_t(src.getInt())].op == step.inst.op)
          step.source = int32_t(src.getInt());
        if (step.inst.op == OpCode::Free) {
          if (step.operands[0].kind != Ref::Temp) plan->freed.push_back(step.operands[0]);
        } else if (auto of = op.getAttrOfType<mlir::IntegerAttr>("gt.replica_of")) {
          // A copy of a client's tensor that `w` keeps: it takes that tensor's global id.
          Ref result = sessionRef(uint64_t(of.getInt()));
          plan->replicas.push_back({result, w});
          step.result = result;
          refs[op.getResult(0)] = result;
        } else if (op.getNumResults() == 1) {
          Ref result{Ref::Temp, 0};
          if (auto sid = op.getAttrOfType<mlir::IntegerAttr>("gt.id")) {
            result = sessionRef(uint64_t(sid.getInt())); // always a local: the batch made it
            auto [it, fresh] = made.try_emplace(result.index);
            if (fresh) it->second.type = globalTypes.at(uint64_t(sid.getInt()));
            holders[result.index].push_back(w);
            if (auto layout = op.getAttrOfType<mlir::gt::ShardingAttr>("gt.sharding")) it->second.layout = layout.toCore();
          } else {
            result.index = plan->temps++;
          }
          step.result = result;
          refs[op.getResult(0)] = result;
        }
        if (step.inst.op == OpCode::Upload) {
          step.upload = int32_t(op.getAttrOfType<mlir::IntegerAttr>("blob").getInt());
          if (auto layout = op.getAttrOfType<mlir::gt::ShardingAttr>("gt.sharding")) step.uploadLayout = layout.toCore();
        }
        steps.push_back(std::move(step));
      };
      // Values the passes added (Temp) are freed in the program: gt-split-by-worker frees each
      // after its last use.
      for (mlir::Operation &op : func.getBody().front()) addStep(op);
    }
    // What runPlan records per made tensor, worked out once per plan.
    std::set<uint32_t> freedLocals;
    for (const Ref &r : plan->freed)
      if (r.kind == Ref::Local) freedLocals.insert(r.index);
    for (auto &[index, m] : made) {
      m.local = index;
      if (m.layout.workers.empty()) {
        std::vector<int64_t> &held = holders[index];
        std::sort(held.begin(), held.end());
        m.layout = Sharding::replicated(held);
      }
      m.freedHere = freedLocals.count(index) > 0;
      plan->made.push_back(std::move(m));
    }
    return plan;
  }

  /// Sends each worker its program of `plan` for `batch`: fresh global ids for the tensors the
  /// batch makes and the values the passes added, the batch's fill values, seeds and upload
  /// bytes; then records where the new tensors live and forgets the freed ones.
  void runPlan(const ShardedPlan &plan, const std::vector<Instruction> &batch, const BatchKey &key) {
    using Ref = ShardedPlan::Ref;
    for (auto &[w, steps] : plan.programs) {
      if (w < 0 || size_t(w) >= state_.workers.size() || !state_.workers[w].alive) {
        std::string why = w >= 0 && size_t(w) < state_.workers.size() ? state_.workers[w].deathReason : "";
        return poison(batch, "worker " + std::to_string(w) + " is needed by this step but died" +
                                        (why.empty() ? "" : ": " + why));
      }
    }
    std::vector<uint64_t> localGlobal(key.locals.size(), 0), tempGlobal(plan.temps, 0);
    auto idOf = [&](const Ref &r) -> uint64_t {
      switch (r.kind) {
      case Ref::External: return tensors_.at(key.externals[r.index]).globalId;
      case Ref::Local: return localGlobal[r.index] ? localGlobal[r.index] : (localGlobal[r.index] = state_.nextGlobalId++);
      case Ref::Temp: return tempGlobal[r.index] ? tempGlobal[r.index] : (tempGlobal[r.index] = state_.nextGlobalId++);
      }
      return 0;
    };
    std::map<int64_t, std::vector<Instruction>> programs;
    std::map<int64_t, std::vector<wireRegion>> regions;
    for (auto &[w, planned] : plan.regions)
      for (const ShardedPlan::Region &r : planned) {
        // Hot once its key has been seen hotAfter times (any session, any worker) or forced.
        bool hot = ++state_.regionCounts.seen[r.key] >= state_.options.hotAfter || r.forced;
        state_.regionsFormed++;
        state_.regionsMarkedHot += hot;
        wireRegion out{r.key, hot, r.start, r.count, {}};
        for (const Ref &o : r.outputs) out.outputs.push_back(idOf(o));
        regions[w].push_back(std::move(out));
      }
    for (auto &[w, steps] : plan.programs) {
      std::vector<Instruction> &program = programs[w];
      program.reserve(steps.size());
      for (const ShardedPlan::Step &step : steps) {
        Instruction inst;
        inst.op = step.inst.op;
        inst.attrs = step.inst.attrs;
        inst.location = step.inst.location;
        inst.operands.reserve(step.operands.size());
        for (const Ref &r : step.operands) inst.operands.push_back(idOf(r));
        if (step.result) inst.result = idOf(*step.result);
        if (step.source >= 0) {
          inst.attrs.value = batch[size_t(step.source)].attrs.value;
          inst.attrs.seed = batch[size_t(step.source)].attrs.seed;
        }
        if (step.upload >= 0) {
          const Instruction &upload = batch[size_t(step.upload)];
          inst.data = step.uploadLayout ? blockOf(upload, *step.uploadLayout, w) : upload.data;
        }
        if (state_.log.enabled()) { // session ids, as the unsharded path logs them (0: a value the passes added)
          uint64_t sid = step.result && step.result->kind == Ref::Local ? key.locals[step.result->index] : 0;
          state_.log.write(id_, "dispatch", inst.op, sid, inst.location, w);
        }
        program.push_back(std::move(inst));
      }
    }
    for (const Ref &r : plan.freed) tensors_.erase(r.kind == Ref::Local ? key.locals[r.index] : key.externals[r.index]);
    for (const ShardedPlan::Made &m : plan.made) {
      if (m.freedHere) continue;
      uint64_t sid = key.locals[m.local];
      if (tensors_.count(sid)) freeEverywhere(sid); // a reused id
      Entry &e = tensors_[sid];
      e.type = m.type;
      e.layout = m.layout;
      e.worker = m.layout.workers.front();
      e.globalId = idOf({Ref::Local, m.local});
    }
    for (auto &[r, w] : plan.replicas) { // w now holds a copy too: later batches need not move it
      auto it = tensors_.find(r.kind == Ref::Local ? key.locals[r.index] : key.externals[r.index]);
      if (it == tensors_.end() || !it->second.layout.isReplicated()) continue; // freed by this batch
      std::vector<int64_t> &holders = it->second.layout.workers;
      if (std::find(holders.begin(), holders.end(), w) != holders.end()) continue;
      holders.insert(std::upper_bound(holders.begin(), holders.end(), w), w);
      it->second.worker = holders.front();
    }
    for (auto &[w, program] : programs) send(w, program, regions[w]);
  }

  /// Worker `w`'s block of an upload laid out as `layout` (the whole tensor unless split).
  static std::string blockOf(const Instruction &upload, const Sharding &layout, int64_t w) {
    if (!layout.isSplit()) return upload.data;
    auto [begin, end] = splitRange(upload.attrs.shape[size_t(layout.axis)], int64_t(layout.workers.size()),
                                   layout.rankOf(w));
    return takeBlock(upload.data, upload.attrs.shape, dtypeSize(upload.attrs.dtype), layout.axis, begin, end);
  }

  static std::string locationString(mlir::Location loc) {
    if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
      return file.getFilename().str() + ":" + std::to_string(file.getLine());
    return "";
  }

  /// Fetches a tensor held by several workers: one copy of a replicated tensor (the others
  /// are checked for errors), every block of a split one concatenated along its axis, every
  /// part of a partial one combined (sum, max or min). The bytes pass through the dispatcher
  /// only because the client asked for them.
  kj::Promise<void> fetchSharded(FetchContext context, const Entry &t) {
    size_t n = t.layout.workers.size();
    auto parts = std::make_shared<std::vector<Piece>>(n);
    auto promises = kj::heapArrayBuilder<kj::Promise<void>>(n);
    for (size_t r = 0; r < n; ++r) {
      int64_t w = t.layout.workers[r];
      WorkerRef &ref = state_.workers[size_t(w)];
      if (!ref.alive) {
        (*parts)[r].error = "worker " + std::to_string(w) + " died: " + ref.deathReason;
        continue;
      }
      bool errorOnly = t.layout.isReplicated() && r > 0;
      promises.add(fetchFrom(w, t.globalId, errorOnly).then([parts, r](Piece &&piece) { (*parts)[r] = std::move(piece); }));
    }
    TensorType type = t.type;
    Sharding layout = t.layout;
    return kj::joinPromises(promises.finish()).then([this, context, parts, type, layout]() mutable {
      auto out = context.getResults().initResult();
      // The first error that is not another worker's echo names the failing op.
      std::string error;
      for (const Piece &p : *parts)
        if (!p.error.empty() && (error.empty() || error.find(kPeerFailed) != std::string::npos)) error = p.error;
      if (!error.empty()) return setError(out, error);
      std::string bytes;
      try {
        std::vector<std::string> pieces;
        for (Piece &p : *parts) pieces.push_back(std::move(p.bytes));
        bytes = assemble(type, layout, pieces);
      } catch (const std::exception &e) {
        return setError(out, e.what());
      }
      setPiece(out, type, bytes);
      state_.fetchBytes += bytes.size();
    });
  }

  /// A tensor (or a worker's piece of one) as fetched from a worker.
  struct Piece {
    TensorType type;
    std::string bytes;
    std::string error;
  };

  /// Bytes travel from a worker in pieces of this size, so that no message nears the
  /// dispatcher's message limit.
  static constexpr uint64_t kFetchChunk = uint64_t(64) << 20;

  static void setPiece(wire::Fetched::Builder out, const TensorType &type, const std::string &bytes) {
    out.setDtype(uint8_t(type.dtype));
    auto shape = out.initShape(unsigned(type.shape.size()));
    for (unsigned i = 0; i < type.shape.size(); ++i) shape.set(i, type.shape[i]);
    out.setData(kj::arrayPtr(reinterpret_cast<const kj::byte *>(bytes.data()), bytes.size()));
  }

  /// Tensor `globalId` from worker `w`, whole (chunk after chunk), or only its type and error.
  /// A failed call marks the worker dead and comes back as the piece's error.
  kj::Promise<Piece> fetchFrom(int64_t w, uint64_t globalId, bool errorOnly) {
    auto piece = std::make_shared<Piece>();
    return fetchChunk(w, globalId, errorOnly, piece).then([piece]() { return std::move(*piece); },
                                                         [this, w, piece](kj::Exception &&e) {
                                                           markDead(w, e.getDescription().cStr());
                                                           piece->error = "worker " + std::to_string(w) + " died: " +
                                                                          state_.workers[size_t(w)].deathReason;
                                                           return std::move(*piece);
                                                         });
  }

  kj::Promise<void> fetchChunk(int64_t w, uint64_t globalId, bool errorOnly, std::shared_ptr<Piece> piece) {
    auto req = state_.workers[size_t(w)].client.fetchRequest();
    req.setSession(id_);
    req.setId(globalId);
    req.setErrorOnly(errorOnly);
    req.setOffset(piece->bytes.size());
    req.setLength(kFetchChunk);
    return req.send().then([this, w, globalId, errorOnly, piece](capnp::Response<wire::Worker::FetchResults> &&r)
                               -> kj::Promise<void> {
      auto result = r.getResult();
      piece->error = result.getError().cStr();
      piece->type.dtype = DType(result.getDtype() < kNumDTypes ? result.getDtype() : 0);
      piece->type.shape.clear();
      for (int64_t d : result.getShape()) piece->type.shape.push_back(d);
      if (!piece->error.empty() || errorOnly) return kj::READY_NOW;
      auto data = result.getData();
      piece->bytes.append(reinterpret_cast<const char *>(data.begin()), data.size());
      uint64_t total = 0;
      try {
        total = uint64_t(numBytes(piece->type));
      } catch (const std::exception &e) {
        piece->error = e.what();
        return kj::READY_NOW;
      }
      if (piece->bytes.size() < total && data.size() > 0) return fetchChunk(w, globalId, false, piece);
      return kj::READY_NOW;
    });
  }

  /// The global tensor from its pieces (see fetchSharded). Throws if a piece has the wrong size.
  static std::string assemble(const TensorType &type, const Sharding &layout, const std::vector<std::string> &pieces) {
    size_t elem = dtypeSize(type.dtype), total = size_t(numElements(type.shape)) * elem;
    if (layout.isReplicated()) {
      if (pieces[0].size() != total) throw std::runtime_error("a fetched copy has the wrong size");
      return pieces[0];
    }
    if (layout.isSplit())
      return concatBlocks(std::vector<std::string_view>(pieces.begin(), pieces.end()), type.shape, elem, layout.axis);
    for (const std::string &p : pieces)
      if (p.size() != total) throw std::runtime_error("a fetched part has the wrong size");
    std::string out = pieces[0];
    for (size_t r = 1; r < pieces.size(); ++r) combineParts(type.dtype, layout.reduce, out.data(), pieces[r].data(), total / elem);
    return out;
  }

  /// GT_RECORD: worker `worker`'s `program`, its inputs from earlier programs defined first
  /// with their types on that worker (a split tensor's block).
  void recordProgram(int64_t worker, const std::vector<Instruction> &program, const std::vector<wireRegion> &regions) {
    std::string path = state_.options.record + "/worker" + std::to_string(worker) + "-s" + std::to_string(id_) + "-" +
                       std::to_string(recorded_++) + ".bin";
    recordBatch(path, program, regions, [&](uint64_t globalId) -> std::optional<TensorType> {
      for (auto &[sid, e] : tensors_) {
        if (e.globalId != globalId || !e.error.empty()) continue;
        TensorType local = e.type;
        if (e.layout.isSplit()) {
          auto [begin, end] = splitRange(e.type.shape[size_t(e.layout.axis)], int64_t(e.layout.workers.size()),
                                         e.layout.rankOf(worker));
          local.shape[size_t(e.layout.axis)] = end - begin;
        }
        return local;
      }
      return std::nullopt;
    });
  }

  void send(int64_t worker, const std::vector<Instruction> &program, const std::vector<wireRegion> &regions = {}) {
    if (program.empty() || worker < 0 || size_t(worker) >= state_.workers.size()) return;
    WorkerRef &w = state_.workers[worker];
    if (!w.alive) return;
    if (!state_.options.record.empty()) recordProgram(worker, program, regions);
    auto req = w.client.runRequest();
    auto list = req.initProgram().initInstructions(unsigned(program.size()));
    for (unsigned i = 0; i < program.size(); ++i) wire::toWire(program[i], list[i]);
    auto rlist = req.getProgram().initRegions(unsigned(regions.size()));
    for (unsigned i = 0; i < regions.size(); ++i) {
      rlist[i].setKey(regions[i].key);
      rlist[i].setHot(regions[i].hot);
      rlist[i].setStart(regions[i].start);
      rlist[i].setCount(regions[i].count);
      auto outs = rlist[i].initOutputs(unsigned(regions[i].outputs.size()));
      for (unsigned j = 0; j < regions[i].outputs.size(); ++j) outs.set(j, regions[i].outputs[j]);
    }
    req.getProgram().setSession(id_);
    req.getProgram().setWeight(weight_);
    // The session's backlog counts the program until the worker has run it (or is lost).
    size_t n = program.size();
    backlog_->queued += n;
    State *state = &state_;
    std::shared_ptr<Backlog> backlog = backlog_;
    size_t limit = state_.options.maxQueued;
    auto ran = [backlog, n, limit] {
      backlog->queued -= n;
      if (backlog->queued <= limit)
        KJ_IF_MAYBE(room, backlog->room) {
          (*room)->fulfill();
          backlog->room = nullptr;
        }
    };
    req.send().then([ran](auto &&) { ran(); }, [state, worker, ran](kj::Exception &&e) {
      ran();
      state->markDead(worker, e.getDescription().cStr());
    }).detach([](kj::Exception &&) {});
  }

  /// GT_DUMP_IR: writes the batch's IR at `stage`; a "captured" dump starts with the gt-opt
  /// command that runs this session's pipeline on it (`pipelineFlags`), so that
  /// `sh -c "$(sed -n 's|^// replay: ||p' FILE)"` prints the "placed" dump again, hot marks
  /// included (they are the pipeline's; which regions workers compile the dispatcher decides at
  /// each replay of the plan, counting every batch).
  void dumpIR(mlir::ModuleOp module, const char *stage, const std::string &pipelineFlags = "") {
    if (state_.options.dumpIR.empty()) return;
    std::string path = state_.options.dumpIR + "/session" + std::to_string(id_) + "-batch" +
                       std::to_string(batchCount_) + "-" + stage + ".mlir";
    std::error_code ec;
    {
      llvm::raw_fd_ostream os(path + ".part", ec);
      if (ec) return;
      if (!pipelineFlags.empty())
        os << "// replay: gt-opt " << path << " --gt-dispatcher-pipeline=\"" << pipelineFlags << "\"\n";
      module.print(os, mlir::OpPrintingFlags().enableDebugInfo(true, /*prettyForm=*/false)); // replayable with gt-opt
    }
    // Whole or not at all: a dispatcher stopped mid-write (its client exited) leaves a .part file.
    std::rename((path + ".part").c_str(), path.c_str());
  }

  /// The session's config as loaded, for dumps (GT_DUMP_IR): its path there.
  std::string configDumpPath() const {
    return state_.options.dumpIR + "/session" + std::to_string(id_) + "-config.yaml";
  }

  /// A session's instructions sent to workers and not yet run, and its waiting submit.
  struct Backlog {
    size_t queued = 0;
    kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> room;
  };

  State &state_;
  uint32_t id_;
  std::string client_; ///< the clients file's name for it ("": GT_TOKEN or an open dispatcher)
  double weight_ = 1;
  std::shared_ptr<Backlog> backlog_ = std::make_shared<Backlog>();
  uint64_t batchCount_ = 0;
  uint64_t recorded_ = 0; ///< GT_RECORD: programs written
  size_t planInstructions_ = 0; ///< instructions of the batches behind plans_
  std::string refusedBatch_;    ///< why the session's last batch refused whole was (fetch names it)
  std::unique_ptr<ShardingConfig> config_; ///< gt.load_config; null: none loaded (an empty one)
  std::unordered_map<uint64_t, Entry> tensors_;
  std::unordered_map<std::string, std::shared_ptr<const ShardedPlan>> plans_; ///< by BatchKey::text
};

class LivenessImpl final : public wire::Liveness::Server {
public:
  kj::Promise<void> ping(PingContext) override { return kj::READY_NOW; }
};

/// The rendezvous store as registered workers see it (see RendezvousStore).
class RendezvousImpl final : public wire::Rendezvous::Server {
public:
  explicit RendezvousImpl(State &state) : state_(state) {}

  kj::Promise<void> set(SetContext context) override {
    RendezvousStore &store = state_.store;
    auto params = context.getParams();
    std::string key = params.getKey().cStr();
    auto data = params.getValue();
    KJ_REQUIRE(key.size() + data.size() <= state_.options.storeMaxValueBytes, "rendezvous value too large");
    store.expire();
    auto it = store.entries.find(key);
    if (it == store.entries.end())
      KJ_REQUIRE(store.entries.size() < state_.options.storeMaxKeys, "the rendezvous store is full");
    else
      store.bytes -= it->first.size() + it->second.value.size();
    std::string value(reinterpret_cast<const char *>(data.begin()), data.size());
    store.bytes += key.size() + value.size();
    store.entries[key] = {value, std::chrono::steady_clock::now()};
    auto [begin, end] = store.waiters.equal_range(key);
    for (auto w = begin; w != end; ++w) w->second->fulfill(std::string(value));
    store.waiters.erase(begin, end);
    return kj::READY_NOW;
  }

  kj::Promise<void> get(GetContext context) override {
    RendezvousStore &store = state_.store;
    std::string key = context.getParams().getKey().cStr();
    auto put = [context](std::string value) mutable {
      context.getResults().setValue(kj::arrayPtr(reinterpret_cast<const kj::byte *>(value.data()), value.size()));
    };
    if (auto it = store.entries.find(key); it != store.entries.end()) {
      put(it->second.value);
      return kj::READY_NOW;
    }
    store.expire();
    KJ_REQUIRE(store.waiters.size() < state_.options.storeMaxWaiters, "too many rendezvous gets are waiting");
    auto paf = kj::newPromiseAndFulfiller<std::string>();
    store.waiters.emplace(key, kj::mv(paf.fulfiller));
    return state_.timer->timeoutAfter(60 * kj::SECONDS, kj::mv(paf.promise)).then(kj::mv(put));
  }

private:
  State &state_;
};

/// The front door of one connection: the handshake, and nothing else. A client presents
/// GT_TOKEN, a worker GT_WORKER_TOKEN; a wrong one closes the connection.
class FrontDoorImpl final : public wire::Dispatcher::Server {
public:
  FrontDoorImpl(State &state, uint64_t connection) : state_(state), connection_(connection) {}

  kj::Promise<void> openSession(OpenSessionContext context) override {
    // GT_TOKEN (weight 1), or a token of the clients file (its name and weight); a dispatcher
    // with neither admits anyone.
    std::string given = context.getParams().getToken().cStr(), name;
    double weight = 1;
    const Options &o = state_.options;
    bool known = (o.token.empty() && o.clients.empty()) || (!o.token.empty() && transport::sameSecret(o.token, given));
    for (const ClientEntry &c : o.clients)
      if (transport::sameSecret(c.token, given)) {
        known = true;
        name = c.name;
        weight = c.weight;
      }
    if (!known) {
      refuse();
      return KJ_EXCEPTION(FAILED, "wrong or missing GT_TOKEN: this dispatcher admits only clients that present its token");
    }
    state_.listener->authenticated(connection_);
    context.getResults().setSession(kj::heap<SessionImpl>(state_, name, weight));
    context.getResults().setAlive(kj::heap<LivenessImpl>());
    state_.fillLimits(context.getResults().initLimits());
    return kj::READY_NOW;
  }

  kj::Promise<void> registerWorker(RegisterWorkerContext context) override {
    auto params = context.getParams();
    if (!admit(state_.options.workerToken, params.getToken()))
      return KJ_EXCEPTION(FAILED, "wrong or missing GT_WORKER_TOKEN: only workers holding the dispatcher's worker token may register");
    WorkerRef ref{params.getWorker(), params.getDevice().cStr()};
    ref.connection = connection_;
    ref.memoryBytes = params.getMemoryBytes();
    ref.sessionMemoryBytes = params.getSessionMemoryBytes();
    state_.workers.push_back(std::move(ref));
    uint32_t index = uint32_t(state_.workers.size() - 1);
    std::cerr << "gt-dispatcher: worker " << index << " registered (" << params.getDevice().cStr() << ")" << std::endl;
    context.getResults().setIndex(index);
    context.getResults().setRendezvous(kj::heap<RendezvousImpl>(state_));
    return kj::READY_NOW;
  }

private:
  /// Whether `given` matches `secret` (an empty secret admits anyone); marks the connection
  /// authenticated, or has it closed.
  bool admit(const std::string &secret, capnp::Text::Reader given) {
    if (secret.empty() || transport::sameSecret(secret, given.cStr())) {
      state_.listener->authenticated(connection_);
      return true;
    }
    refuse();
    return false;
  }

  /// A wrong credential: the connection is closed once the error has gone out.
  void refuse() {
    state_.handshakeFailures++;
    // Closed once the error has gone out (a later turn of the event loop).
    uint64_t id = connection_;
    transport::Listener *listener = state_.listener;
    state_.timer->afterDelay(100 * kj::MILLISECONDS).then([listener, id] { listener->close(id); }).detach([](kj::Exception &&) {});
  }

  State &state_;
  uint64_t connection_;
};

/// Pings every live worker each heartbeat; one that has answered none for
/// workerTimeoutSeconds is lost (a stopped or wedged process keeps its connection open).
kj::Promise<void> watchWorkers(State &state) {
  double every = std::min(state.options.heartbeatSeconds, state.options.workerTimeoutSeconds / 4);
  return state.timer->afterDelay(int64_t(every * 1000) * kj::MILLISECONDS).then([&state] {
    auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < state.workers.size(); ++i) {
      WorkerRef &w = state.workers[i];
      if (!w.alive) continue;
      double silent = std::chrono::duration<double>(now - w.lastPong).count();
      if (silent > state.options.workerTimeoutSeconds) {
        state.markDead(int64_t(i), "it answered no ping for " + std::to_string(int(silent)) + " s");
        continue;
      }
      State *s = &state;
      w.client.pingRequest().send().then([s, i](auto &&) { s->workers[i].lastPong = std::chrono::steady_clock::now(); },
                                         [s, i](kj::Exception &&e) { s->markDead(int64_t(i), e.getDescription().cStr()); })
          .detach([](kj::Exception &&) {});
    }
    return watchWorkers(state);
  });
}

/// Lets the process hold as many sockets as the hard limit allows (the connection bound, not
/// the file descriptor limit, should be what refuses clients).
void raiseFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

/// Writes `token` to `path` readable by this user only (its folder made 0700 if missing).
void writeSecret(const std::string &path, const std::string &token) {
  auto dir = path.substr(0, path.rfind('/'));
  if (!dir.empty()) mkdir(dir.c_str(), 0700);
  std::string tmp = path + ".tmp";
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write the worker token to " + path + ": " + std::strerror(errno));
  chmod(tmp.c_str(), 0600);
  std::fputs(token.c_str(), f);
  std::fclose(f);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write the worker token to " + path + ": " + std::strerror(errno));
}

} // namespace

void serve(const Options &given) {
  Options options = given;
  options.listener.host = options.host;
  options.listener.port = options.port;
  raiseFileLimit();
  auto io = kj::setupAsyncIo();
  State state(options);
  state.timer = &io.provider->getTimer();
  transport::Listener listener(io, options.listener, [&state](uint64_t id) -> capnp::Capability::Client {
    return kj::heap<FrontDoorImpl>(state, id);
  });
  state.listener = &listener;
  unsigned port = listener.port();
  if (state.options.workerToken.empty()) {
    std::string path = options.workerTokenFile.empty() ? transport::defaultWorkerTokenFile(int(port)) : options.workerTokenFile;
    state.options.workerToken = transport::randomToken();
    writeSecret(path, state.options.workerToken);
    std::cerr << "gt-dispatcher: workers join with the token in " << path << " (or set GT_WORKER_TOKEN)" << std::endl;
  }
  std::printf("gt-dispatcher listening on %s:%u\n", options.host.c_str(), port);
  std::fflush(stdout);
  watchWorkers(state).wait(io.waitScope);
}

} // namespace gt::dispatcher
