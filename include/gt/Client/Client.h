// The client core under `import gt`: ids, shape/dtype inference, the instruction buffer, RPC.
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Core/Trace.h"

#include <algorithm>
#include <kj/async.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace gt::client {

/// The dispatcher cannot be reached, or the connection broke. Python: ConnectionError.
struct ConnectionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A tensor's computation failed on a worker (or its worker died). Python: RuntimeError.
struct RemoteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A tensor is larger than this session may hold on the dispatcher's workers (known before
/// anything is sent). Python: gt.OutOfMemoryError, a RuntimeError (as torch.OutOfMemoryError).
struct OutOfMemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What the dispatcher lets this session send and hold (gt.capnp's Limits).
struct Limits {
  size_t maxBatchInstructions = 0; ///< 0: not known yet
  uint64_t maxMessageBytes = 0;
  uint64_t sessionMemoryBytes = 0; ///< a session's quota on each worker (0: no worker yet)
  uint32_t workers = 0;
};

/// One recorded instruction of this session (gt.debug.get_tape()).
struct TapeEntry {
  OpCode op;
  uint64_t result;               ///< 0 for free
  std::vector<uint64_t> operands;
  TensorType type;               ///< the result's type (free: the freed tensor's)
  std::string location;          ///< the user's "file.py:line"
  double seconds;                ///< since the session opened
};

struct FetchedTensor {
  TensorType type;
  std::string bytes; ///< row-major, dtypeSize(type.dtype) bytes per element
};

/// Counters of the dispatcher and its workers (summed over workers), e.g. "fused_ops",
/// "regions_compiled", "compile_ms"; `notes` holds one line per region that fell back to eager.
struct Stats {
  std::map<std::string, double> values;
  std::vector<std::string> notes;
  std::map<uint32_t, std::map<std::string, double>> byWorker; ///< each live worker's own counters
};

/// One session with a dispatcher. Instructions are buffered and streamed without waiting;
/// `fetch`/`sync` are the only calls that wait. Not thread-safe except `release`, which may be
/// called from any thread (Python finalizers); everything else belongs to the creating thread.
class Client {
public:
  /// Connects to `host:port` and opens a session; throws ConnectionError within
  /// `timeoutSeconds` if that fails (or the token is refused). TLS when `tlsCaFile` names the
  /// certificates to trust (PEM; the dispatcher's must be among them or signed by them). While a call waits on the dispatcher, the client pings it every
  /// second; if no ping is answered for $GT_TIMEOUT seconds (default 30) the call raises
  /// ConnectionError instead of waiting forever on a stopped or wedged dispatcher.
  Client(const std::string &host, int port, const std::string &token, double timeoutSeconds = 5.0,
         const std::string &tlsCaFile = "");
  ~Client();

  /// Records `result = op(operands)` and returns the result's id and type, inferred by the op
  /// table. Throws ShapeError / DTypeError (nothing is recorded then), OutOfMemoryError for a
  /// result larger than the session's quota on all workers together, and std::invalid_argument
  /// for an id this client does not hold. An upload larger than kUploadChunk is sent in pieces
  /// and joined on the worker (the id returned is the joined tensor's).
  std::pair<uint64_t, TensorType> emit(OpCode op, const std::vector<uint64_t> &operands,
                                       OpAttrs attrs, std::string data, std::string location);
  /// The tensor is no longer referenced: a `free` is queued. Any thread.
  void release(uint64_t id);
  /// Sends the buffered instructions now (no waiting for them to run).
  void flush();
  /// Flushes, then waits for the tensor's bytes. Throws RemoteError naming the failed op and the
  /// user's line, or ConnectionError. Read straight from the worker that holds the tensor when
  /// the dispatcher names one (Session.directReads: one hop instead of two), else through the
  /// dispatcher, which also puts sharded tensors together.
  FetchedTensor fetch(uint64_t id);
  /// Flushes and waits until every worker has run everything sent so far (asking the worker
  /// directly when the session reads from one).
  void sync();
  /// Whether fetches go straight to a worker: "direct (worker N at ADDRESS)", "not yet asked",
  /// or "through the dispatcher: WHY" (GT_DIRECT_READS=0, no worker --listen, a sharding
  /// config, a link that broke).
  std::string readPath() const;
  /// Syncs, then collects the counters of the dispatcher and every worker (counts; `*_ms`
  /// in milliseconds). Throws ConnectionError if the dispatcher is gone.
  Stats stats();
  /// gt.profiler: what one process (the dispatcher or a worker) did for this session while traced.
  struct ProcessTrace {
    uint32_t pid = 0;
    std::string label;               ///< "gt-dispatcher", "gt-worker 0 (cpu)"
    int64_t offsetNs = 0, rttNs = 0; ///< its clock minus the dispatcher's, as the dispatcher measured it
    std::vector<TraceEvent> events;  ///< on this client's clock (monotonicNs)
  };
  /// Starts recording this session's work on the dispatcher and every worker (flushing first,
  /// unless only frees wait: see flushUnlessOnlyFrees).
  void startTrace();
  /// Syncs (the frees of tensors dropped at the end stay queued, as for startTrace), stops the
  /// recording, and returns every process's events, moved onto this client's clock by
  /// `dispatcherOffsetNs()`'s measurement. Throws ConnectionError.
  std::vector<ProcessTrace> stopTrace();
  /// The batches this client sent while traced ("flush": instructions, bytes), on its own clock;
  /// emptied by the next startTrace.
  const std::vector<TraceEvent> &flushes() const { return flushes_; }
  /// The dispatcher's clock minus this client's, in ns, and the round trip it was measured in:
  /// the best of five readings (Session.clock), the reply taken as read half way through.
  std::pair<int64_t, int64_t> dispatcherOffsetNs();
  /// Loads a sharding config into this session (flushing first): `yaml` is the file's text,
  /// `path` names it in errors. Throws std::invalid_argument with the dispatcher's message
  /// ("cfg.yaml:3: unknown key ...") if it is invalid; the session keeps its old config then.
  /// Returns the signal names the config defines; from then on fetches go through the dispatcher
  /// (which puts sharded tensors together). `autoShardBytes` > 0 (GT_AUTO_SHARD) also
  /// places tensors made outside the config's signals: split along axis 0 over all workers
  /// from that many bytes on, replicated over all workers below.
  std::vector<std::string> loadConfig(const std::string &yaml, const std::string &path, uint64_t autoShardBytes = 0);
  /// The signal attached to every instruction emitted from now on ("" = none); `backward`
  /// marks gradient ops of that signal (its config's `backward:` entry applies to them).
  void setSignal(std::string signal, bool backward) {
    signal_ = std::move(signal);
    backward_ = backward;
  }
  const std::string &signal() const { return signal_; }
  bool signalIsBackward() const { return backward_; }
  /// Live workers behind the dispatcher (and refreshes limits()).
  uint32_t numWorkers();
  const Limits &limits() const { return limits_; }
  /// Type of a tensor this client holds.
  const TensorType &typeOf(uint64_t id) const;
  /// The `meta` device (torch.device("meta")): while `setMeta(true)` holds, and for any op with
  /// a meta operand, emit() infers the result's type and records nothing: the tensor has a
  /// shape and a dtype and no values anywhere (no worker hears of it, no quota applies, its
  /// release queues no free). fetch() of one throws std::invalid_argument. Returns the
  /// previous setting.
  bool setMeta(bool on) {
    bool was = meta_;
    meta_ = on;
    return was;
  }
  /// Whether a tensor this client holds is a meta tensor (false for an id it does not hold).
  bool isMeta(uint64_t id) const {
    auto it = types_.find(id);
    return it != types_.end() && it->second.meta;
  }
  /// The id the next recorded op's result gets: every tensor recorded before this call has a
  /// smaller id, every one after a larger or equal one (ids only grow).
  uint64_t nextId() const { return nextId_; }
  /// The user's "file.py:line" whose op made a tensor this client holds ("" if unknown). The
  /// gradient ops of that op carry it (the autograd sets it as their location).
  const std::string &locationOf(uint64_t id) const;

  /// The last kTapeLength instructions of this session, oldest first.
  std::vector<TapeEntry> tape() const;
  /// "TENSOR[3] := add TENSOR[1] TENSOR[2] : float32[2, 3]  # file.py:12"
  static std::string describe(const TapeEntry &e);

  /// Instructions are sent once this many are buffered (or at a sync point); the
  /// environment variable GT_WORKER_BATCH_SIZE overrides it (1: every instruction at once).
  static constexpr size_t kFlushInstructions = 2048;
  static constexpr size_t kTapeLength = 10000;
  static constexpr size_t kFlushBytes = 32u << 20;
  static constexpr size_t kUploadChunk = 64u << 20;

private:
  /// Flushes unless the instructions waiting are frees alone (the tensors of a step just ended),
  /// which then go with the next op as they would have without the caller: a trace's start and
  /// end must not cut a step into other batches than an untraced one, or the dispatcher captures
  /// the traced step anew (a plan-cache miss) instead of replaying the plan the trace should show.
  void flushUnlessOnlyFrees();
  /// Waits until every worker has run everything sent so far (sync() without the flush).
  void waitSent();

  /// Waits for `promise`, pinging the dispatcher meanwhile; throws ConnectionError (`what`
  /// names the call) if the connection breaks or no ping is answered for the timeout.
  template <typename T> T waitAlive(kj::Promise<T> promise, const char *what);
  /// Pings every second; rejects when a ping goes unanswered for timeout_ seconds.
  kj::Promise<void> heartbeat();
  /// Waits for a call on the direct link as waitAlive does, pinging the worker too; nullopt
  /// when that link broke or its worker answered no ping for the timeout (the link is dropped:
  /// the caller asks the dispatcher, which knows what became of the worker).
  template <typename T> std::optional<T> waitDirect(kj::Promise<T> promise, const char *what);
  kj::Promise<void> readerHeartbeat();
  /// The direct link (opened on first use), or null when reads go through the dispatcher.
  struct Reader;
  Reader *reader();
  /// The tensor read over the direct link; nullopt when the worker does not hold it whole or
  /// the link broke (then ask the dispatcher).
  std::optional<FetchedTensor> fetchDirect(Reader &reader, uint64_t id);
  /// Sends an upload of more than kUploadChunk bytes as 1-D pieces joined and reshaped.
  std::pair<uint64_t, TensorType> emitLargeUpload(OpAttrs attrs, std::string data, std::string location);
  void setLimits(const Limits &limits);
  size_t flushBytes() const;
  size_t uploadChunk() const;
  /// Queues a `free` for every id released since the last call.
  void drainReleased();
  /// Sends the buffered instructions as one batch (flush() without draining released ids).
  void sendBuffered();
  /// The most ops a batch holds (a free counting once per tensor it names):
  /// kFlushInstructions (GT_WORKER_BATCH_SIZE), at most what the dispatcher takes, and at most
  /// GT_FIRST_BATCH_SIZE in the first batch after a wait.
  size_t batchLimit() const {
    size_t most = limits_.maxBatchInstructions ? std::min(flushInstructions_, limits_.maxBatchInstructions) : flushInstructions_;
    return afterWait_ && firstBatch_ ? std::min(most, firstBatch_) : most;
  }
  /// Appends to the tape (the dispatcher writes GT_INSTRUCTION_LOG).
  void record(OpCode op, uint64_t result, std::span<const uint64_t> operands, const std::string &location,
              const TensorType &type);
  /// The next instruction of the buffer to fill in (a slot an earlier batch used, or a new one).
  /// `ops`: what it counts against batchLimit() (a free: the tensors it names).
  Instruction &nextSlot(size_t ops = 1);

  struct Rpc;
  std::unique_ptr<Rpc> rpc_;
  std::unique_ptr<Reader> reader_; ///< the direct link to the session's worker, once open
  bool directOff_ = false;         ///< reads go through the dispatcher (directWhy_ says why)
  std::string directWhy_ = "not yet asked";
  std::string tlsCa_;
  uint64_t submits_ = 0;           ///< batches sent (Batch.sequence of the last one)
  std::vector<Instruction> buffer_; ///< [0, buffered_) waits to be sent; the rest are slots to reuse
  size_t buffered_ = 0;
  size_t bufferedOps_ = 0; ///< the ops those capture into (a free: one per tensor it names)
  size_t bufferedBytes_ = 0;
  std::vector<TensorType> scratchTypes_; ///< emit's operand types
  /// What the client knows of a tensor it holds: its type, and the user's line that made it
  /// (an index into locations_).
  struct Held {
    TensorType type;
    uint32_t location = 0;
    bool meta = false; ///< a meta tensor: known to this client only (setMeta)
  };
  std::unordered_map<uint64_t, Held> types_;
  /// The distinct "file.py:line" locations ops came from; [0] is "" (none).
  std::vector<std::string> locations_{std::string()};
  std::unordered_map<std::string, uint32_t> locationIds_;
  static constexpr size_t kMaxLocations = 1u << 16;
  uint32_t internLocation(const std::string &location);
  uint64_t nextId_ = 1;
  std::mutex releaseMutex_;
  std::vector<uint64_t> released_; ///< ids freed from other threads, queued at the next emit
  bool meta_ = false;                 ///< setMeta: every op makes a meta tensor
  bool tracing_ = false;              ///< startTrace .. stopTrace: flushes are recorded
  std::vector<TraceEvent> flushes_;
  std::string streamError_;
  std::string signal_;
  bool backward_ = false;
  size_t flushInstructions_ = kFlushInstructions;
  /// GT_FIRST_BATCH_SIZE (0: off): the first batch after each wait for results holds at most
  /// this many ops, so an idle worker starts on the step while the client issues the rest. On
  /// the 2-core development machine that overlap costs more than it gains (the worker's threads
  /// take the client's core: benchmarks/RESULTS.md, session 51); it is there for GPU workers,
  /// which idle while the client issues a whole step as one batch (docs/gpu.md).
  size_t firstBatch_ = 0;
  bool afterWait_ = true; ///< nothing sent since the client last waited for results
  std::vector<TapeEntry> tape_; ///< a ring of kTapeLength once full; tapeStart_ is its oldest
  size_t tapeStart_ = 0;
  std::chrono::steady_clock::time_point opened_ = std::chrono::steady_clock::now();
  Limits limits_;
  std::string where_;     ///< "host:port", for messages
  double timeout_ = 30;   ///< $GT_TIMEOUT: seconds without an answered ping before giving up
};

/// gt top's view of a dispatcher (Dispatcher.monitor), over a connection of its own: it opens
/// no session. Throws ConnectionError like Client.
class Monitor {
public:
  struct Worker {
    uint32_t index = 0;
    std::string device;
    bool alive = false, answered = false; ///< answered: within the dispatcher's one-second wait
    std::map<std::string, double> stats;  ///< as Stats::byWorker
    std::map<uint32_t, std::pair<double, uint64_t>> sessions; ///< session -> (busy ms, bytes held)
  };
  struct Session {
    uint32_t id = 0;
    std::string name, label; ///< clients-file name; user@host:pid
    double weight = 1, openSeconds = 0;
    uint64_t instructions = 0, uploadBytes = 0, fetchBytes = 0, errors = 0;
    std::string lastError;
  };
  struct Snapshot {
    std::map<std::string, double> dispatcher;
    std::vector<Worker> workers;
    std::vector<Session> sessions;
  };

  Monitor(const std::string &host, int port, const std::string &token, double timeoutSeconds,
          const std::string &tlsCaFile = "");
  ~Monitor();
  /// One reading; throws ConnectionError if the dispatcher is gone or the token is refused.
  Snapshot poll();

private:
  struct Rpc;
  std::unique_ptr<Rpc> rpc_;
  std::string where_, token_;
  double timeout_;
};

} // namespace gt::client
