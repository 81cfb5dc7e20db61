# GT's wire protocol: client <-> dispatcher and dispatcher <-> worker, Cap'n Proto RPC over TCP.
@0xc5e1a7d2b3f40911;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("gt::wire");

# One instruction; mirrors gt::Instruction (include/gt/Core/Instruction.h).
struct Instruction {
  op @0 :UInt16;                # gt::OpCode
  result @1 :UInt64;
  operands @2 :List(UInt64);
  shape @3 :List(Int64);        # upload/full/randn/reshape/broadcast_to result shape
  axes @4 :List(Int64);         # reductions: axes; transpose: permutation
  keepdims @5 :Bool;
  value @6 :Float64;            # full
  seed @7 :Int64;               # randn
  count @8 :Int64;              # one_hot classes
  dtype @9 :UInt8;              # gt::DType of creation/cast results
  data @10 :Data;               # upload bytes
  location @11 :Text;           # the user's "file.py:line"
}

struct Batch {
  instructions @0 :List(Instruction);
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
}

interface Session {
  # Streaming: no per-batch reply; errors surface at the next fetch.
  submit @0 (batch :Batch) -> stream;
  fetch @1 (id :UInt64) -> (result :Fetched);
  # Waits until everything submitted so far has run (gt.synchronize).
  sync @2 () -> ();
}

interface Worker {
  run @0 (program :Batch) -> stream;
  fetch @1 (id :UInt64) -> (result :Fetched);
  stats @2 () -> (instructions :UInt64, liveTensors :UInt64, liveBytes :UInt64,
                  kernelsCompiled :UInt64, kernelDiskHits :UInt64, compileMs :Float64);
}
