// gt-dispatcher: sessions, capture to MLIR, the pass pipeline, and forwarding to workers.
#pragma once

#include "gt/Core/Clients.h"
#include "gt/Dispatcher/ClientBatch.h"
#include "gt/Transport/Connection.h"

#include <string>

namespace gt::dispatcher {

struct Options {
  std::string host = "127.0.0.1"; ///< address to bind (loopback unless told otherwise)
  int port = 0;                   ///< 0: pick a free port
  std::string token;              ///< GT_TOKEN: clients may present it (weight 1); empty and no `clients`:
                                  ///< any client may connect
  std::vector<ClientEntry> clients; ///< --clients FILE: named clients, a token and a weight each
  std::string workerToken;        ///< GT_WORKER_TOKEN: workers must present it; empty: a random one,
                                  ///< written to workerTokenFile
  std::string workerTokenFile;    ///< where a generated worker token goes ("": transport::defaultWorkerTokenFile(port))
  std::string instructionLog;     ///< GT_INSTRUCTION_LOG: one timestamped line per instruction event
  std::string dumpIR;             ///< GT_DUMP_IR: directory for each batch's IR before/after the passes
  std::string record;             ///< GT_RECORD: directory for every client batch and worker program
                                  ///< as a Cap'n Proto message (see Record.h; the fuzzers' seeds)
  bool jit = true;                ///< GT_JIT=0: no gt.region, every op runs eagerly
  int64_t hotAfter = 2;           ///< GT_HOT_AFTER: sightings of a region before workers compile it
  bool planCache = true;          ///< GT_PLAN_CACHE=0: run the sharding passes on every batch
  bool verifyPasses = false;      ///< GT_VERIFY_PASSES=1: verify the IR after every pass (a check
                                  ///< of the passes; the client's batch is verified either way)
  int64_t bucketBytes = 64 << 20; ///< GT_BUCKET_BYTES: the most bytes one combined all_reduce carries (0: off)
  transport::ListenerOptions listener; ///< connection bounds, message size, TLS (host/port are copied in)
  BatchLimits batch;              ///< what one client batch may hold
  size_t maxQueued = 1 << 16;     ///< a session's instructions sent to workers and not yet run; its
                                  ///< next submit waits below this (GT_MAX_QUEUED)
  size_t maxTensors = 1 << 20;    ///< tensors one session may hold; beyond, its batches are refused
                                  ///< but for their frees (GT_MAX_TENSORS)
  int metricsPort = -1;           ///< --metrics-port: serve Prometheus metrics there (0: a free port; -1: off)
  std::string metricsHost = "127.0.0.1"; ///< --metrics-host: the address /metrics binds (unauthenticated)
  double heartbeatSeconds = 2;    ///< how often workers are pinged
  double workerTimeoutSeconds = 30; ///< a worker that answers no ping for this long is lost (GT_WORKER_TIMEOUT)
  size_t storeMaxKeys = 4096;     ///< rendezvous store: keys, bytes of one value, waiting gets
  size_t storeMaxValueBytes = 1 << 20;
  size_t storeMaxWaiters = 1024;
};

/// Serves until the process is killed. Prints "gt-dispatcher listening on HOST:PORT" on stdout
/// once bound. Throws std::runtime_error if the address cannot be bound, the TLS files cannot be
/// read, or the worker token file cannot be written.
void serve(const Options &options);

} // namespace gt::dispatcher
