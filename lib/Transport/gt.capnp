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

# The dispatcher's front door (the bootstrap capability).
interface Dispatcher {
  # A client's session: its own tensor namespace, freed when the client goes away.
  openSession @0 (token :Text) -> (session :Session);
  # A worker joins; the dispatcher drives it through `worker`.
  registerWorker @1 (token :Text, worker :Worker, device :Text) -> (index :UInt32);
  # Number of live workers (auto-start waits for them).
  info @2 () -> (workers :UInt32, sessions :UInt32);
  # Rendezvous of worker groups (Gloo): a key-value store; get waits until the key is set
  # (or fails after 60 s). Only workers call these.
  storeSet @3 (token :Text, key :Text, value :Data) -> ();
  storeGet @4 (token :Text, key :Text) -> (value :Data);
}

interface Session {
  # Streaming: no per-batch reply; errors surface at the next fetch.
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
}

interface Worker {
  run @0 (program :Batch) -> stream;
  # errorOnly: return the tensor's dtype, shape and error, not its bytes (a replicated
  # tensor's other copies are checked this way when one copy is fetched).
  fetch @1 (id :UInt64, errorOnly :Bool) -> (result :Fetched);
  stats @2 () -> (stats :List(Stat), notes :List(Text));
}
