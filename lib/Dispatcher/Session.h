// The dispatcher's insides, shared by its files. `State` is what every session sees (the
// workers, the MLIR context, counters, the rendezvous store); a `SessionImpl` is one client's
// session: its tensor namespace and plan cache. A session's methods are split by idea:
// Session.cpp (a batch in, worker programs out), Plan.cpp (the plan cache: a batch's key, its
// plan, a plan's replay), Fetch.cpp (fetching a tensor, pieces assembled) and Stats.cpp
// (gt.debug.stats()); Dispatcher.cpp has the front door, the rendezvous and `serve`.
#pragma once

#include "gt/Core/Config.h"
#include "gt/Core/Trace.h"
#include "gt/Dialect/Passes.h"
#include "gt/Dispatcher/Capture.h"
#include "gt/Dispatcher/Dispatcher.h"
#include "gt/Dispatcher/Record.h"
#include "gt/Transport/Metrics.h"
#include "gt/Transport/Wire.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <kj/async-io.h>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gt::dispatcher {

/// GT_INSTRUCTION_LOG: "<unix time, µs> session=<s> <event> <op> id=<id> [worker=<w>] [at=<file:line>]".
class InstructionLog {
public:
  explicit InstructionLog(const std::string &path) {
    if (path.empty()) return;
    std::error_code ec;
    bool fresh = !std::filesystem::exists(path, ec) || std::filesystem::file_size(path, ec) == 0;
    out_.open(path, std::ios::app);
    if (fresh && out_)
      out_ << "# GT_INSTRUCTION_LOG columns: unix time in microseconds, session=<session id>, event (recv: from the "
              "client; dispatch: to a worker), op, id=<the session's tensor id; 0: a value the passes added>, "
              "[worker=<worker index>], [at=<the user's file:line>]\n";
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
  std::string readerAddress;      ///< where clients read their tensors from it directly ("": nowhere)
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

/// What gt top shows of a live session (Dispatcher.monitor).
struct SessionRecord {
  std::string name;  ///< from the clients file ("" for GT_TOKEN's clients)
  std::string label; ///< as the client says: user@host:pid
  double weight = 1;
  uint64_t instructions = 0, uploadBytes = 0, fetchBytes = 0, errors = 0;
  std::string lastError; ///< of the last fetch that failed
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
};

struct State {
  Options options;
  /// Where batches are captured and the passes run (plans keep no MLIR objects). A context
  /// keeps every attribute it ever made, and each capture makes new ones (the tensor ids), so
  /// after kInstructionsPerContext captured instructions the next capture starts a new
  /// context: the dispatcher's memory stays bounded however many distinct batches arrive
  /// (an RL script's episodes, each a batch of its own length).
  static constexpr uint64_t kInstructionsPerContext = uint64_t(1) << 16;
  std::unique_ptr<mlir::MLIRContext> ctx;
  uint64_t capturedInContext = 0;
  uint64_t contextsMade = 0;
  std::vector<WorkerRef> workers;
  uint64_t nextPassValue = 1; ///< worker ids of values the passes add: kPassValueIdBit | n
  uint32_t nextSession = 0;
  uint32_t liveSessions = 0;
  std::map<uint32_t, SessionRecord> sessions; ///< the live ones, by id
  InstructionLog log;
  mlir::gt::HotRegionCounter regionCounts; ///< spans every batch of every session
  uint64_t regionsFormed = 0, regionsMarkedHot = 0, batches = 0;
  uint64_t uploadBytes = 0, fetchBytes = 0; ///< tensor bytes that passed through the dispatcher
  uint64_t instructions = 0;                ///< instructions received from clients
  double dispatchMs = 0;                    ///< time spent turning them into worker programs
  uint64_t planHits = 0, planMisses = 0;    ///< batches replayed from / added to a plan cache
  uint64_t directPlans = 0;                 ///< batches of a known program at new sizes, sent as they came (directPlanOf)
  uint64_t refusedInstructions = 0;         ///< client instructions refused (see ClientBatch.h)
  uint64_t handshakeFailures = 0;           ///< wrong or missing credentials
  uint64_t fetchErrors = 0;                 ///< fetches answered with an error (all sessions)
  RendezvousStore store;
  kj::Timer *timer = nullptr;
  transport::Listener *listener = nullptr;
  explicit State(Options o) : options(std::move(o)), log(options.instructionLog) {}
  /// The context to capture a batch of `instructions` in: the current one, or a new one once
  /// the current one has captured kInstructionsPerContext. Call it only while no module of the
  /// current context is alive (the old context is destroyed).
  mlir::MLIRContext &captureContext(size_t instructions) {
    if (!ctx || capturedInContext >= kInstructionsPerContext) {
      ctx.reset(); // before the new one: at most one context's memory at a time
      ctx = std::make_unique<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
      mlir::DialectRegistry registry;
      mlir::gt::registerGTDialects(registry);
      ctx->appendDialectRegistry(registry);
      ctx->loadAllAvailableDialects();
      capturedInContext = 0;
      contextsMade++;
    }
    capturedInContext += instructions;
    return *ctx;
  }
  /// Worker `worker` is lost (a failed call, no answer to pings): its tensors fail with `why`.
  void markDead(int64_t worker, const std::string &why) {
    WorkerRef &w = workers[size_t(worker)];
    if (w.alive) std::cerr << "gt-dispatcher: worker " << worker << " lost: " << why << std::endl;
    w.alive = false;
    if (w.deathReason.empty()) w.deathReason = why;
    if (listener) listener->close(w.connection); // pending calls on it fail now
  }
  /// A number for a new session: below kMaxSessions (its tensors' worker ids hold it, see
  /// sessionTensorId) and not a live session's.
  uint32_t newSessionNumber() {
    for (;;) {
      uint32_t n = nextSession++ % kMaxSessions;
      if (!sessions.count(n)) return n;
    }
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

inline void setError(wire::Fetched::Builder out, const std::string &message) { out.setError(message); }


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
    uint64_t family; ///< its key without sizes (HotRegionCounter)
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
  std::map<int64_t, uint64_t> words;             ///< by worker: its program's wire words, but ids and bytes
};

/// One client's session: its tensors (session id -> type, layout, global id), its sharding
/// config and its plan cache. Every method runs on the dispatcher's one thread.
class SessionImpl final : public wire::Session::Server {
public:
  /// A session of client `name` ("" for GT_TOKEN's), with `weight` (its share of each worker);
  /// `label` is who the client says it is (user@host:pid).
  SessionImpl(State &state, std::string name, double weight, std::string label)
      : state_(state), id_(state.newSessionNumber()), client_(std::move(name)), weight_(weight) {
    state_.liveSessions++;
    state_.sessions[id_] = SessionRecord{client_, std::move(label), weight};
  }
  /// The client went away: every worker drops what the session still has queued and frees
  /// what it holds.
  ~SessionImpl() noexcept(false);

  // The Session interface of gt.capnp: submit, sync, info and loadConfig are in Session.cpp,
  // fetch in Fetch.cpp, stats in Stats.cpp.
  kj::Promise<void> submit(SubmitContext context) override;
  kj::Promise<void> sync(SyncContext) override;
  kj::Promise<void> info(InfoContext context) override;
  kj::Promise<void> trace(TraceContext context) override; // Trace.cpp
  kj::Promise<void> clock(ClockContext context) override;
  kj::Promise<void> loadConfig(LoadConfigContext context) override;
  kj::Promise<void> fetch(FetchContext context) override;
  kj::Promise<void> stats(StatsContext context) override;
  kj::Promise<void> directReads(DirectReadsContext context) override;

private:
  struct Entry {
    TensorType type;       ///< the global (client's) type
    int64_t worker = 0;    ///< the first worker holding it
    Sharding layout;       ///< where its pieces live (replicated over {worker} unless sharded)
    uint64_t globalId = 0; ///< the same on every holder
    std::string error;     ///< poisoned at the dispatcher (invalid stream, dead worker)
  };

  /// A tensor (or a worker's piece of one) as fetched from a worker.
  struct Piece {
    TensorType type;
    std::string bytes;
    std::string error;
  };

  /// A session's instructions sent to workers and not yet run, and its waiting submit.
  struct Backlog {
    size_t queued = 0;
    kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> room;
  };

  // ---------------------------------------------------------------- Session.cpp

  void markDead(int64_t worker, const std::string &why) { state_.markDead(worker, why); }

  /// This session's entry in gt top (Dispatcher.monitor); null once the session has ended.
  SessionRecord *record() {
    auto it = state_.sessions.find(id_);
    return it == state_.sessions.end() ? nullptr : &it->second;
  }

  /// The session's first live worker, counting from its id (-1: none is alive).
  int64_t homeWorker();

  /// The gt ops `batch` captures into: one per instruction, and one per tensor a free names.
  /// What the capture context and the plan cache count (their memory grows with it).
  static size_t opCount(const std::vector<Instruction> &batch) {
    size_t n = 0;
    for (const Instruction &inst : batch) n += inst.op == OpCode::Free ? inst.operands.size() : 1;
    return n;
  }

  static size_t resultCount(const std::vector<Instruction> &batch) {
    return size_t(std::count_if(batch.begin(), batch.end(),
                                [](const Instruction &inst) { return inst.op != OpCode::Free; }));
  }

  /// The batch through the dispatcher's pipeline (gt-verify, gt-apply-signals with the
  /// session's config, empty until gt.load_config, gt-propagate-sharding, gt-insert-collectives,
  /// gt-bucket-all-reduces, gt-split-by-worker, gt-mark-hot-regions); each @workerN function
  /// becomes worker N's program. Every tensor the client names gets one global id, the same on
  /// each worker holding a piece of it; values the passes add (collective results, received
  /// blocks) are freed after their last use. The result of the passes is kept as a plan (see
  /// BatchKey): a batch with the same structure as an earlier one (a training step that
  /// repeats) skips capture and the passes.
  void dispatch(std::vector<Instruction> batch);

  /// A batch the passes reject (an invalid instruction, a config that does not fit a tensor) is
  /// dispatched again one instruction at a time: only the instruction at fault is poisoned,
  /// with the passes' error, and so is whatever reads it; the rest of the batch runs as it
  /// would have. Costs a pass run per instruction, on this error path only.
  void dispatchEach(std::vector<Instruction> batch);

  /// Frees session tensor `id` on every worker holding it and forgets it.
  void freeEverywhere(uint64_t id);

  /// Poisons every result of `batch` with `error` and runs only its frees. A batch is all or
  /// nothing: its collectives must run on every worker of their group or on none.
  void poison(const std::vector<Instruction> &batch, const std::string &error);

  /// Whether an instruction of `batch` reads a tensor poisoned at the dispatcher.
  bool readsPoisoned(const std::vector<Instruction> &batch) const;

  /// Drops from `batch` every instruction that reads a poisoned tensor, directly or through
  /// this batch, and poisons its result with that tensor's error; the rest of the batch runs
  /// (an unrelated parameter update in the same step is not lost).
  void dropPoisonedReaders(std::vector<Instruction> &batch);

  /// Sends worker `worker` a program (its regions as spans of it); the session's backlog counts
  /// it until the worker has run it. A failed call marks the worker dead.
  void send(int64_t worker, const std::vector<Instruction> &program, const std::vector<wireRegion> &regions = {});
  using RunRequest = capnp::Request<wire::Worker::RunParams, wire::Worker::RunResults>;
  /// A worker's program request, sized for `words` (wire::wireSize), with its regions in it.
  RunRequest runRequest(int64_t worker, uint64_t words, const std::vector<wireRegion> &regions);
  /// Sends a request of runRequest holding `n` instructions (as send).
  void sendRun(int64_t worker, RunRequest &&req, size_t n);
  /// The worker this session reads from directly (Session.directReads) hears of every batch:
  /// if none of this batch's programs went there, an empty one tells it the batch's number.
  void announceBatch();

  /// GT_RECORD: worker `worker`'s `program`, its inputs from earlier programs defined first
  /// with their types on that worker (a split tensor's block).
  void recordProgram(int64_t worker, const std::vector<Instruction> &program, const std::vector<wireRegion> &regions);

  /// GT_DUMP_IR: writes the batch's IR at `stage`; a "captured" dump starts with the gt-opt
  /// command that runs this session's pipeline on it (`pipelineFlags`), so that
  /// `sh -c "$(sed -n 's|^// replay: ||p' FILE)"` prints the "placed" dump again, hot marks
  /// included (they are the pipeline's; which regions workers compile the dispatcher decides at
  /// each replay of the plan, counting every batch).
  void dumpIR(mlir::ModuleOp module, const char *stage, const std::string &pipelineFlags = "");

  /// The session's config as loaded, for dumps (GT_DUMP_IR): its path there.
  std::string configDumpPath() const {
    return state_.options.dumpIR + "/session" + std::to_string(id_) + "-config.yaml";
  }

  // ---------------------------------------------------------------- Plan.cpp

  /// A session's plan cache holds at most this many plans, or plans of this many instructions
  /// in all (a client whose batches never repeat cannot fill the dispatcher's memory).
  static constexpr size_t kMaxPlans = 256, kMaxPlanInstructions = size_t(1) << 18;

  struct CachedPlan;
  void clearPlans() {
    for (auto &[text, cached] : plans_) forgetKept(cached);
    plans_.clear();
    planInstructions_ = 0;
  }
  /// A plan leaves the cache: the workers keeping its template are told, with their next program.
  void forgetKept(const CachedPlan &cached) {
    for (int64_t w : cached.keptOn) forget_[w].push_back(cached.id);
  }
  /// Makes room when the cache is full: the plans no batch reused since the last time go (a
  /// training step's plans, reused every step, stay; batches that never repeat do not pile
  /// up), and the rest are marked unused; if every plan was used, all go.
  void evictPlans() {
    for (auto it = plans_.begin(); it != plans_.end();) {
      if (it->second.used) {
        it->second.used = false;
        ++it;
      } else {
        planInstructions_ -= it->second.instructions;
        forgetKept(it->second);
        it = plans_.erase(it);
      }
    }
    if (plans_.size() >= kMaxPlans || planInstructions_ >= kMaxPlanInstructions) clearPlans();
  }

  /// Fills `key` for `batch` (see BatchKey); returns an error for an upload whose bytes do not
  /// match its shape and dtype.
  std::string keyOf(const std::vector<Instruction> &batch, int64_t home, BatchKey &key);

  /// A hash of the batch's program without sizes, offsets or any attribute: its ops, lines,
  /// signals and dataflow. Two batches of one family are one program at different sizes (a
  /// generated sequence one token longer, a slice at another offset).
  static size_t familyOf(const std::vector<Instruction> &batch, const BatchKey &key);
  /// The plan of a batch sent to the home worker as it came, without capture or passes (no
  /// fused regions), when nothing in it needs the passes (no sharding config that places
  /// tensors, which is what gives named signals a meaning, though gt.compile's `compile:`-only
  /// config is fine: fused regions come with the promotion; no collectives; every operand
  /// whole on `home`) and it checks out (known operands, not
  /// used after their free, the types the op table gives); nullptr otherwise: the passes
  /// decide, and name what is wrong. dispatch uses it for a batch of a family that went through
  /// the passes before, at sizes it has not seen: generation at a growing length costs the
  /// dispatcher microseconds per token instead of the pipeline's milliseconds. The plan is
  /// cached like the passes'; its kPromoteAfter-th reuse runs the passes in its place.
  std::shared_ptr<ShardedPlan> directPlanOf(const std::vector<Instruction> &batch, const BatchKey &key, int64_t home);

  /// The plan of a module after gt-split-by-worker (one func per worker, see dispatch).
  std::shared_ptr<ShardedPlan> planOf(mlir::ModuleOp module, const std::vector<Instruction> &batch,
                                      const BatchKey &key, const std::unordered_map<uint64_t, TensorType> &globalTypes);

  /// Sends each worker its program of `plan` for `batch`: fresh global ids for the tensors the
  /// batch makes and the values the passes added, the batch's fill values, seeds and upload
  /// bytes; then records where the new tensors live and forgets the freed ones.
  /// `cached`: the plan's cache entry on a hit (its workers may keep or replay its programs), else null.
  void runPlan(const ShardedPlan &plan, const std::vector<Instruction> &batch, const BatchKey &key,
               CachedPlan *cached = nullptr);

  /// A kept plan's program for worker `w` (Batch.plan): this batch's ids (each step's result,
  /// 0 if none, then its operands), the values and seeds of the steps whose ops declare them,
  /// and the uploads' bytes; the worker patches them into its copy of the program.
  RunRequest replayRequest(int64_t w, const std::vector<ShardedPlan::Step> &steps, const std::vector<Instruction> &batch,
                           const std::function<uint64_t(const ShardedPlan::Ref &)> &idOf,
                           const std::vector<wireRegion> &regions, uint64_t planId);
  /// Worker `w`'s block of an upload laid out as `layout` (the whole tensor unless split).
  static std::string blockOf(const Instruction &upload, const Sharding &layout, int64_t w);

  /// "file.py:12" of an op's location ("" if it has none).
  static std::string locationString(mlir::Location loc);

  static std::string shapeStr(const Shape &shape);

  // ---------------------------------------------------------------- Fetch.cpp

  /// Bytes travel from a worker in pieces of this size, so that no message nears the
  /// dispatcher's message limit.
  static constexpr uint64_t kFetchChunk = uint64_t(64) << 20;

  /// Fetches a tensor held by several workers: one copy of a replicated tensor (the others
  /// are checked for errors), every block of a split one concatenated along its axis, every
  /// part of a partial one combined (sum, max or min). The bytes pass through the dispatcher
  /// only because the client asked for them.
  kj::Promise<void> fetchSharded(FetchContext context, const Entry &t);

  /// Tensor `globalId` from worker `w`, whole (chunk after chunk), or only its type and error.
  /// A failed call marks the worker dead and comes back as the piece's error.
  kj::Promise<Piece> fetchFrom(int64_t w, uint64_t globalId, bool errorOnly);

  kj::Promise<void> fetchChunk(int64_t w, uint64_t globalId, bool errorOnly, std::shared_ptr<Piece> piece);

  /// The global tensor from its pieces (see fetchSharded). Throws if a piece has the wrong size.
  static std::string assemble(const TensorType &type, const Sharding &layout, const std::vector<std::string> &pieces);

  static void setPiece(wire::Fetched::Builder out, const TensorType &type, const std::string &bytes);
  /// A fetch fails with `message` (counted in gt top's errors, with the last message).
  void fetchFailed(wire::Fetched::Builder out, const std::string &message);
  /// A fetch returned `bytes` tensor bytes (counted for the dispatcher and the session).
  void fetched(size_t bytes);

  // ---------------------------------------------------------------- the session's state

  State &state_;
  uint32_t id_;
  std::string client_; ///< the clients file's name for it ("": GT_TOKEN or an open dispatcher)
  double weight_ = 1;
  std::shared_ptr<Backlog> backlog_ = std::make_shared<Backlog>();
  uint64_t batchCount_ = 0;
  uint64_t sequence_ = 0;      ///< submits received (Batch.sequence of their programs)
  int64_t readerWorker_ = -1;  ///< the worker this session reads from directly (-1: none yet)
  std::string readerToken_;
  uint64_t readerHeard_ = 0;   ///< the last sequence sent to readerWorker_
  std::set<int64_t> usedWorkers_; ///< every worker this session has sent a program to (Batch.elsewhere)
  /// gt.profiler: while tracing, what the dispatcher did for this session (Trace.cpp).
  struct Tracing {
    std::vector<TraceEvent> events;
    size_t dropped = 0;
  };
  std::unique_ptr<Tracing> tracing_;
  /// Records `name` from `startNs` until `endNs` (0: now), if the session is traced.
  void traceEvent(std::string name, const char *category, int64_t startNs, std::string args = "", int64_t endNs = 0) {
    if (!tracing_) return;
    if (tracing_->events.size() >= kMaxTraceEvents) {
      tracing_->dropped++;
      return;
    }
    tracing_->events.push_back({std::move(name), category, startNs, (endNs ? endNs : monotonicNs()) - startNs, std::move(args)});
  }
  uint64_t recorded_ = 0;                  ///< GT_RECORD: programs written
  std::string refusedBatch_;               ///< why the session's last batch refused whole was (fetch names it)
  std::unique_ptr<ShardingConfig> config_; ///< gt.load_config; null: none loaded (an empty one)
  std::unordered_map<uint64_t, Entry> tensors_;
  /// A cached plan, the ops of its batch, and whether a batch reused it since the cache last
  /// made room (see evictPlans). A plan hit for the first time is sent whole and kept by its
  /// workers (Batch.plan); later hits send only their ids, values and bytes.
  struct CachedPlan {
    std::shared_ptr<const ShardedPlan> plan;
    size_t instructions = 0;
    bool used = false;
    uint64_t id = 0;              ///< Batch.plan: unique in the session, never 0
    std::set<int64_t> keptOn;     ///< the workers keeping its programs
    bool direct = false;          ///< made by directPlanOf (no passes, no fused regions)
    uint32_t directHits = 0;      ///< times a direct plan was reused (kPromoteAfter)
  };
  std::unordered_map<std::string, CachedPlan> plans_; ///< by BatchKey::text
  std::unordered_set<size_t> families_;    ///< familyOf the batches that went through the passes
  static constexpr size_t kMaxFamilies = 1u << 12;
  /// A cached direct plan's kPromoteAfter-th reuse runs the passes instead: a step that keeps
  /// repeating gets its fused regions. Generation gains nothing from them (char_gpt: 2.7-3.0 ms
  /// per token on direct plans, 2.9 on the passes' plans) and its promotion costs one slow
  /// pass over the lengths (7 ms per token), so it waits for many reuses.
  static constexpr uint32_t kPromoteAfter = 16;
  size_t planInstructions_ = 0;            ///< instructions of the batches behind plans_
  uint64_t nextPlanId_ = 1;
  std::map<int64_t, std::vector<uint64_t>> forget_; ///< by worker: kept plans to drop (Batch.forget)
};

/// Dispatcher.monitor (gt top): the dispatcher's counters, every live session's record and
/// every worker's counters (Worker.monitor, a second's wait at most); in Stats.cpp.
kj::Promise<void> fillMonitor(State &state, wire::Dispatcher::MonitorResults::Builder out);

/// The dispatcher's Prometheus metrics (--metrics-port; docs/observability.md); in Stats.cpp.
std::vector<metrics::Sample> metricSamples(const State &state);

} // namespace gt::dispatcher
