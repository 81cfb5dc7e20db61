// gt-dispatcher: sessions, capture to MLIR, the pass pipeline, and forwarding to workers.
#pragma once

#include <string>

namespace gt::dispatcher {

struct Options {
  std::string host = "127.0.0.1"; ///< address to bind (loopback unless told otherwise)
  int port = 0;                   ///< 0: pick a free port
  std::string token;              ///< if set, clients and workers must present it (GT_TOKEN)
  std::string instructionLog;     ///< GT_INSTRUCTION_LOG: one timestamped line per instruction event
  std::string dumpIR;             ///< GT_DUMP_IR: directory for each batch's IR before/after the passes
  bool jit = true;                ///< GT_JIT=0: no gt.region, every op runs eagerly
  int64_t hotAfter = 2;           ///< GT_HOT_AFTER: sightings of a region before workers compile it
  bool planCache = true;          ///< GT_PLAN_CACHE=0: run the sharding passes on every batch
  int64_t bucketBytes = 64 << 20; ///< GT_BUCKET_BYTES: the most bytes one combined all_reduce carries (0: off)
};

/// Serves until the process is killed. Prints "gt-dispatcher listening on HOST:PORT" on stdout
/// once bound. Throws std::runtime_error if the address cannot be bound.
void serve(const Options &options);

} // namespace gt::dispatcher
