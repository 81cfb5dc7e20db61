# GT's wire protocol: client <-> dispatcher and dispatcher <-> worker, Cap'n Proto RPC over TCP.
@0xc5e1a7d2b3f40911;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("gt::wire");

# One instruction; mirrors gt::Instruction (include/gt/Core/Instruction.h).
struct Instruction {
  op @0 :UInt16;                # gt::OpCode
  result @1 :UInt64;
  operands @2 :List(UInt64);
  shape @3 :List(Int64);        # result shape of creation, reshape, broadcast_to, slice, index_add, scatter_add
  axes @4 :List(Int64);         # reductions: axes; transpose: permutation; concat/index ops: the axis
  keepdims @5 :Bool;
  value @6 :Float64;            # full
  seed @7 :Int64;               # randn, rand
  count @8 :Int64;              # one_hot classes
  dtype @9 :UInt8;              # gt::DType of creation/cast results
  data @10 :Data;               # upload bytes
  location @11 :Text;           # the user's "file.py:line"
  starts @12 :List(Int64);      # slice/slice_scatter: first index per axis
  steps @13 :List(Int64);       # slice/slice_scatter: stride per axis
  signal @14 :Text;             # the active gt.signal ("" = none)
  backward @15 :Bool;           # a gradient op of `signal` (the config's `backward:` entry applies)
  workers @16 :List(Int64);     # collectives: the group in rank order; send/recv: {peer worker}
  sources @17 :List(Int64);     # move: the workers that hold the value
  reduce @18 :UInt8;            # all_reduce/reduce_scatter: gt::ReduceKind (sum, max, min)
  type @19 :TensorType;         # the result type, inferred once by the client and carried (absent: inferred on arrival)
}

# A tensor's dtype and shape; mirrors gt::TensorType (include/gt/Core/DType.h).
struct TensorType {
  dtype @0 :UInt8;              # gt::DType
  shape @1 :List(Int64);
}

# A fused region of a worker's program (see gt.region): instructions [start, start+count).
struct Region {
  key @0 :UInt64;               # structural hash from gt-mark-hot-regions
  hot @1 :Bool;                 # compile it and replay the fused kernel once ready
  start @2 :UInt32;
  count @3 :UInt32;
  outputs @4 :List(UInt64);     # ids that outlive the region; its other results are freed inside
}

struct Batch {
  instructions @0 :List(Instruction);
  regions @1 :List(Region);     # dispatcher -> worker only; sorted by start, disjoint
  session @2 :UInt32;           # dispatcher -> worker: whose program (queues, quotas, fairness)
  weight @3 :Float64;           # dispatcher -> worker: the session's share of the worker (0 = 1)
  sequence @4 :UInt64;          # dispatcher -> worker: the client batch (the session's submit, from 1) it comes from
  elsewhere @5 :Bool;           # dispatcher -> a session's reader worker: the session has had work on other
                                # workers too (SessionReader.sync cannot speak for them)
  # dispatcher -> worker: a repeated step's program, kept on the worker (see Worker.run).
  # `plan` names one of the session's cached plans (nonzero). With instructions: run them and
  # keep them as that plan's template. Without: run the kept template with this batch's
  # `ids` (each instruction's result if it has one, then its operands, in order), `values` and
  # `seeds` (one each per instruction whose op declares a value or seed attribute) and
  # `uploads` (each upload's bytes, in order).
  plan @6 :UInt64;
  ids @7 :List(UInt64);
  values @8 :List(Float64);
  seeds @9 :List(Int64);
  uploads @10 :List(Data);
  forget @11 :List(UInt64);     # dispatcher -> worker: plans of this session whose templates may go
}

# What a session may send and hold; the client checks it to raise at the user's line.
struct Limits {
  maxBatchInstructions @0 :UInt32;  # instructions in one submit
  maxMessageBytes @1 :UInt64;       # one message to the dispatcher (uploads are sent in pieces)
  sessionMemoryBytes @2 :UInt64;    # the smallest per-session quota of a live worker (0: no worker yet)
  workers @3 :UInt32;               # live workers
}

# A named counter (gt.debug.stats()).
struct Stat {
  name @0 :Text;
  value @1 :Float64;
}

# One worker's counters (gt.debug.stats(per_worker=True)).
struct WorkerStats {
  index @0 :UInt32;
  stats @1 :List(Stat);
}

struct Fetched {
  dtype @0 :UInt8;
  shape @1 :List(Int64);
  data @2 :Data;
  error @3 :Text;               # non-empty: the tensor is poisoned; names the op and user line
}

# The dispatcher's front door (the bootstrap capability of every connection). Nothing else
# is answered before one of these succeeds; a wrong credential, or none within a few seconds,
# closes the connection. Clients and workers hold different tokens (GT_TOKEN, GT_WORKER_TOKEN).
interface Dispatcher {
  # A client's session: its own tensor namespace, freed when the client goes away. `alive`
  # answers pings even while the session's submits wait for room (the client's heartbeat).
  # `label`: who the client is, as it says ("user@host:pid"; shown by gt top).
  openSession @0 (token :Text, label :Text) -> (session :Session, alive :Liveness, limits :Limits);
  # A worker joins; the dispatcher drives it through `worker`. `memoryBytes`: what its device
  # may hold; `sessionMemoryBytes`: each session's quota there. `rendezvous`: the key-value
  # store of worker groups (Gloo, NCCL ids), for workers only.
  # `readerAddress`: where the worker accepts sessions' direct reads (gt-worker --listen; ""
  # for none), as a client would connect to it ("unix:PATH" or "host:port").
  registerWorker @1 (token :Text, worker :Worker, device :Text, memoryBytes :UInt64, sessionMemoryBytes :UInt64,
                     readerAddress :Text)
      -> (index :UInt32, rendezvous :Rendezvous, alive :Liveness);
  # What gt top shows: the dispatcher's counters, every worker's (a worker that does not answer
  # within a second is shown as such) and every live session's. Takes a client token.
  monitor @2 (token :Text) -> (dispatcher :List(Stat), workers :List(WorkerMonitor), sessions :List(SessionMonitor));
}

# One slice of a gt.profiler timeline (gt::TraceEvent).
struct TraceEvent {
  name @0 :Text;
  category @1 :Text;
  startNs @2 :Int64;
  durationNs @3 :Int64;
  args @4 :Text;                # a JSON object, or ""
}

# What one process recorded for a traced session (Session.trace).
struct ProcessTrace {
  pid @0 :UInt32;
  label @1 :Text;               # "gt-dispatcher", "gt-worker 0 (cuda:0)"
  offsetNs @2 :Int64;           # its clock minus the dispatcher's (measured; 0 for the dispatcher)
  rttNs @3 :Int64;              # the round trip of the best measurement
  events @4 :List(TraceEvent);  # on the dispatcher's clock
}

# A session's use of one worker (Worker.monitor).
struct SessionUsage {
  session @0 :UInt32;
  busyMs @1 :Float64;           # execution time of its programs so far
  bytes @2 :UInt64;             # memory it holds there
  readBytes @3 :UInt64;         # tensor bytes it read here directly (SessionReader.fetch)
  readErrors @4 :UInt64;        # ... reads answered with an error, and the last one's
  lastReadError @5 :Text;
}

struct WorkerMonitor {
  index @0 :UInt32;
  device @1 :Text;
  alive @2 :Bool;
  answered @3 :Bool;            # false: alive, but no answer within the monitor's deadline
  stats @4 :List(Stat);         # as Session.stats' byWorker (gt.debug.stats)
  sessions @5 :List(SessionUsage);
}

struct SessionMonitor {
  session @0 :UInt32;
  name @1 :Text;                # from the clients file ("" for GT_TOKEN's clients)
  label @2 :Text;               # as the client says: user@host:pid
  weight @3 :Float64;
  instructions @4 :UInt64;      # received from the client
  uploadBytes @5 :UInt64;       # tensor bytes it uploaded / fetched through the dispatcher
  fetchBytes @6 :UInt64;
  errors @7 :UInt64;            # fetches that returned an error
  lastError @8 :Text;
  openSeconds @9 :Float64;      # since the session opened
}

interface Liveness {
  ping @0 () -> ();
}

# Rendezvous of worker groups: get waits until the key is set (or fails after 60 s). Bounded in
# keys, bytes and waiting gets; entries expire after 10 minutes.
interface Rendezvous {
  set @0 (key :Text, value :Data) -> ();
  get @1 (key :Text) -> (value :Data);
}

interface Session {
  # Streaming: no per-batch reply; errors surface at the next fetch. Returns (and so lets the
  # client send more) once the session's work queued on the workers is below a bound.
  submit @0 (batch :Batch) -> stream;
  fetch @1 (id :UInt64) -> (result :Fetched);
  # Waits until everything submitted so far has run (gt.synchronize).
  sync @2 () -> ();
  # Counters of the dispatcher and all workers (summed), and notes such as region fallbacks.
  stats @3 () -> (stats :List(Stat), notes :List(Text), byWorker :List(WorkerStats));
  # Loads a sharding config (the YAML text; `path` names it in errors). Returns "" or the
  # error naming the line; the session keeps its previous config on error. `signals`: the
  # names the config defines (the client resolves nested signals against them).
  # autoShardBytes > 0 (GT_AUTO_SHARD): tensors made outside the config's signals are split
  # along axis 0 over all workers from that size on, replicated over all workers below it.
  loadConfig @4 (yaml :Text, path :Text, autoShardBytes :UInt64)
      -> (error :Text, workers :UInt32, signals :List(Text));
  # Live workers and sessions, and this session's limits (auto-start waits for the workers).
  info @5 () -> (workers :UInt32, sessions :UInt32, limits :Limits);
  # gt.profiler: on, the dispatcher and every live worker start recording this session's work
  # (returns nothing); off, they stop, and every process's events come back on the dispatcher's
  # clock, with each worker's measured offset.
  trace @6 (on :Bool) -> (processes :List(ProcessTrace));
  # The dispatcher's monotonic clock, ns: the client measures its offset to its own.
  clock @7 () -> (ns :Int64);
  # Where this session may read its tensors straight from the worker that holds them (one
  # hop instead of two; see WorkerDoor): that worker's index and reader address, and a token
  # for this session alone, good until the session ends. `address` is "" when there is none
  # (the worker has no --listen, or the session has a sharding config): fetch through the
  # dispatcher then. From this call on, that worker hears of every batch the session submits
  # (Batch.sequence), so a direct read can wait for the batch it needs.
  directReads @8 () -> (worker :UInt32, address :Text, token :Text);
}

interface Worker {
  # Queues `program` in its session's queue; returns once it has run (the dispatcher counts a
  # session's queued work by it). A repeated step comes as its plan's kept template and this
  # batch's ids, values and bytes (Batch.plan), without decoding an instruction.
  run @0 (program :Batch) -> ();
  # errorOnly: return the tensor's dtype, shape and error, not its bytes (a replicated
  # tensor's other copies are checked this way when one copy is fetched). Bytes [offset,
  # offset + length) of the tensor (length 0: to the end): large tensors come in pieces.
  fetch @1 (session :UInt32, id :UInt64, errorOnly :Bool, offset :UInt64, length :UInt64) -> (result :Fetched);
  # Counters; runs after everything `session` queued before it.
  stats @2 (session :UInt32) -> (stats :List(Stat), notes :List(Text));
  # Returns once everything `session` queued before it has run.
  sync @3 (session :UInt32) -> ();
  # Answered at once, whatever the worker is running (liveness).
  ping @4 () -> ();
  # Answered at once, whatever the worker is running: its counters as last published (at most
  # a quarter second old while it works) and each session's use of it (gt top).
  monitor @6 () -> (stats :List(Stat), sessions :List(SessionUsage));
  # gt.profiler: on, start recording what runs for `session`; off, stop and return it (events on
  # this worker's clock, which `clock` reads). Answered at once.
  trace @7 (session :UInt32, on :Bool) -> (pid :UInt32, events :List(TraceEvent));
  # This process's monotonic clock, ns (aligning traces). Answered at once.
  clock @8 () -> (ns :Int64);
  # The session is gone: its queued work is dropped (exchanges still run, failed, so groups
  # stay in step) and its tensors freed; its reader token stops working.
  endSession @5 (session :UInt32) -> ();
  # Session `session` may read its tensors here directly with `token` (Session.directReads),
  # until endSession.
  admitReader @9 (session :UInt32, token :Text) -> ();
}

# The front door of a worker's reader socket (gt-worker --listen). Nothing but `open` is
# answered; a wrong token, or none within a few seconds, closes the connection.
interface WorkerDoor {
  open @0 (token :Text) -> (reader :SessionReader);
}

# One session's tensors on one worker, read without passing through the dispatcher. Ids are
# the session's own. `sequence` is the session's last submitted batch: a call waits until the
# worker has heard of that batch from the dispatcher, then runs after everything the session
# queued before it, as the dispatcher's fetch and sync do.
interface SessionReader {
  # `type`: what the client knows the tensor to be. `here` false: this worker does not hold
  # that tensor whole (a sharded or moved tensor, or one the dispatcher refused): fetch it
  # through the dispatcher. Bytes [offset, offset + length) (length 0: to the end).
  fetch @0 (id :UInt64, sequence :UInt64, type :TensorType, offset :UInt64, length :UInt64)
      -> (here :Bool, result :Fetched);
  # Returns once everything the session queued here up to batch `sequence` has run. `whole`
  # false: the session has had work on other workers as well; sync through the dispatcher.
  sync @1 (sequence :UInt64) -> (whole :Bool);
  # Answered at once (the client's heartbeat while it waits).
  ping @2 () -> ();
}
