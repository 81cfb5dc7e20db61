// A session's batches: checked, captured as MLIR, run through the dispatcher's pipeline (or
// replayed from the plan cache) and sent to the workers as programs; poisoned tensors, frees,
// backpressure, GT_RECORD and GT_DUMP_IR.
#include "Session.h"

#include "gt/Dialect/GTOps.h"
#include "gt/Dispatcher/ClientBatch.h"
#include "gt/Transport/Connection.h"

#include "mlir/IR/OpImplementation.h"

#include <kj/debug.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <unordered_set>

namespace gt::dispatcher {

SessionImpl::~SessionImpl() noexcept(false) {
  // The client went away: every worker drops what the session still has queued and frees
  // what it holds.
  for (WorkerRef &w : state_.workers) {
    if (!w.alive) continue;
    auto req = w.client.endSessionRequest();
    req.setSession(id_);
    req.send().detach([](kj::Exception &&) {});
  }
  state_.liveSessions--;
  state_.sessions.erase(id_);
}

kj::Promise<void> SessionImpl::submit(SubmitContext context) {
  // A batch over the size limit is refused whole; an instruction a client may not send (or
  // one that cannot be read) is refused alone: its result is poisoned with the reason, and
  // so is whatever reads it, while the rest of the batch runs.
  auto instructions = context.getParams().getBatch().getInstructions();
  sequence_++;
  KJ_DEFER(announceBatch());
  std::vector<Instruction> batch;
  size_t ops = 0; // what the batch captures into: a free names up to kMaxFreeOperands tensors
  for (auto inst : instructions)
    ops += inst.getOp() == uint16_t(OpCode::Free) ? std::max<size_t>(1, inst.getOperands().size()) : 1;
  std::string wholeBatch = checkBatchSize(ops, state_.options.batch);
  if (wholeBatch.empty() && tensors_.size() >= state_.options.maxTensors)
    wholeBatch = "a batch: this session holds " + std::to_string(tensors_.size()) +
                 " tensors, the most a session may (GT_MAX_TENSORS); free some first";
  if (!wholeBatch.empty()) {
    // Refused whole, without an entry per result (a huge batch must not cost memory); its
    // frees still happen, so a session over its tensor bound can get back under it.
    state_.refusedInstructions += instructions.size();
    refusedBatch_ = "the dispatcher refused " + wholeBatch;
    for (auto inst : instructions)
      if (inst.getOp() == uint16_t(OpCode::Free) && inst.getOperands().size() <= size_t(kMaxFreeOperands)) {
        Instruction free;
        for (uint64_t id : inst.getOperands())
          if (tensors_.count(id)) free.operands.push_back(id);
        if (!free.operands.empty()) batch.push_back(std::move(free));
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
      if (SessionRecord *r = record()) r->uploadBytes += in.data.size();
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
  if (SessionRecord *r = record()) r->instructions += instructions.size();
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

kj::Promise<void> SessionImpl::sync(SyncContext) {
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

kj::Promise<void> SessionImpl::info(InfoContext context) {
  uint32_t alive = 0;
  for (auto &w : state_.workers) alive += w.alive;
  context.getResults().setWorkers(alive);
  context.getResults().setSessions(state_.liveSessions);
  state_.fillLimits(context.getResults().initLimits());
  return kj::READY_NOW;
}

kj::Promise<void> SessionImpl::loadConfig(LoadConfigContext context) {
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

int64_t SessionImpl::homeWorker() {
  size_t n = state_.workers.size();
  for (size_t i = 0; i < n; ++i) {
    size_t w = (id_ + i) % n;
    if (state_.workers[w].alive) return int64_t(w);
  }
  return -1;
}

void SessionImpl::dispatchEach(std::vector<Instruction> batch) {
  for (Instruction &inst : batch) {
    std::vector<Instruction> one;
    one.push_back(std::move(inst));
    dispatch(std::move(one));
  }
}

void SessionImpl::freeEverywhere(uint64_t id) {
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

void SessionImpl::poison(const std::vector<Instruction> &batch, const std::string &error) {
  for (const Instruction &inst : batch) {
    if (inst.op == OpCode::Free) {
      for (uint64_t id : inst.operands) freeEverywhere(id);
      continue;
    }
    freeEverywhere(inst.result);
    tensors_[inst.result].error = error;
  }
}

bool SessionImpl::readsPoisoned(const std::vector<Instruction> &batch) const {
  for (const Instruction &inst : batch)
    for (uint64_t id : inst.operands)
      if (auto it = tensors_.find(id); it != tensors_.end() && !it->second.error.empty()) return true;
  return false;
}

void SessionImpl::dropPoisonedReaders(std::vector<Instruction> &batch) {
  std::unordered_set<uint64_t> madeHere; // results of the instructions kept so far
  std::vector<Instruction> kept;
  kept.reserve(batch.size());
  for (Instruction &inst : batch) {
    if (inst.op == OpCode::Free) { // a tensor poisoned by this batch lives nowhere: forgotten here
      std::erase_if(inst.operands, [&](uint64_t id) {
        if (madeHere.count(id)) return false;
        auto it = tensors_.find(id);
        if (it == tensors_.end() || it->second.error.empty()) return false;
        tensors_.erase(it);
        return true;
      });
      if (!inst.operands.empty()) kept.push_back(std::move(inst));
      continue;
    }
    const std::string *error = nullptr;
    for (uint64_t id : inst.operands)
      if (!madeHere.count(id))
        if (auto it = tensors_.find(id); it != tensors_.end() && !it->second.error.empty()) error = &it->second.error;
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

void SessionImpl::dispatch(std::vector<Instruction> batch) {
  // Frees of tensors poisoned at the dispatcher (they live nowhere) are done here. A free of
  // a tensor this dispatcher does not know yet goes on: it is usually made earlier in this
  // very batch (a step's intermediates die within it); a free of an id that never existed
  // is dropped by capture.
  std::erase_if(batch, [&](Instruction &inst) {
    if (inst.op != OpCode::Free) return false;
    std::erase_if(inst.operands, [&](uint64_t id) {
      auto it = tensors_.find(id);
      if (it == tensors_.end() || it->second.error.empty()) return false;
      tensors_.erase(it);
      return true;
    });
    return inst.operands.empty();
  });
  if (readsPoisoned(batch)) dropPoisonedReaders(batch);
  if (batch.empty()) return;
  int64_t traceStart = tracing_ ? monotonicNs() : 0;
  int64_t home = homeWorker();
  if (home < 0) return poison(batch, "no live worker is registered with the dispatcher");
  BatchKey key;
  if (std::string error = keyOf(batch, home, key); !error.empty()) { // an upload's bytes do not fit
    if (resultCount(batch) > 1) return dispatchEach(std::move(batch));
    return poison(batch, error);
  }

  std::shared_ptr<const ShardedPlan> plan;
  CachedPlan *cached = nullptr;
  bool caching = key.cacheable && state_.options.planCache, promote = false;
  if (caching)
    if (auto it = plans_.find(key.text); it != plans_.end()) {
      if (it->second.direct && ++it->second.directHits >= kPromoteAfter) {
        // A direct plan reused this often is a step that repeats: it goes through the passes
        // below (fused regions, sharding) and is cached again in its place.
        forgetKept(it->second);
        planInstructions_ -= it->second.instructions;
        plans_.erase(it);
        promote = true;
      } else {
        plan = it->second.plan;
        it->second.used = true;
        cached = &it->second;
      }
    }
  bool planHit = plan != nullptr, direct = false;
  size_t family = caching && !plan ? familyOf(batch, key) : 0;
  if (plan) {
    state_.planHits++;
  } else if (caching && !promote && families_.count(family) && (plan = directPlanOf(batch, key, home))) {
    // A program this session ran through the passes before, at new sizes or offsets (a
    // generated sequence one token longer, the last smaller batch of an epoch): sent as it
    // came, so a new size never waits for capture and the passes; cached as it is.
    state_.directPlans++;
    direct = true;
  } else {
    int64_t captureStart = tracing_ ? monotonicNs() : 0;
    static const ShardingConfig noConfig;
    mlir::OwningOpRef<mlir::ModuleOp> module;
    std::unordered_map<uint64_t, TensorType> globalTypes;
    try {
      module = captureBatch(state_.captureContext(opCount(batch)), batch, [&](uint64_t id) -> std::optional<External> {
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
      options.verifyEachPass = state_.options.verifyPasses;
      if (!state_.options.dumpIR.empty()) {
        std::string flags = "num-workers=" + std::to_string(options.numWorkers) +
                            " default-worker=" + std::to_string(home) + " hot-after=" + std::to_string(options.hotAfter) +
                            " bucket-bytes=" + std::to_string(options.bucketBytes) +
                            " regions=" + (options.regions ? "true" : "false") +
                            " auto-shard-bytes=" + std::to_string(options.config->autoShardBytes);
        dumpIR(*module, "captured", (config_ ? "config=" + configDumpPath() + " " : std::string()) + flags);
      }
      traceEvent("capture", "dispatcher", captureStart, "{\"instructions\": " + std::to_string(batch.size()) + "}");
      int64_t passesStart = tracing_ ? monotonicNs() : 0;
      PassTimer onPass;
      if (tracing_)
        onPass = [this](const std::string &pass, int64_t start, int64_t end) { traceEvent(pass, "pass", start, "", end); };
      runDispatcherPipeline(*module, options, onPass);
      traceEvent("passes", "dispatcher", passesStart);
      dumpIR(*module, "placed");
      plan = planOf(*module, batch, key, globalTypes);
    } catch (const std::exception &e) {
      module = nullptr; // its context may be replaced by the captures dispatchEach makes
      if (resultCount(batch) > 1) return dispatchEach(std::move(batch));
      return poison(batch, e.what());
    }
    if (caching) {
      state_.planMisses++;
      if (families_.size() >= kMaxFamilies) families_.clear();
      families_.insert(family);
    }
  }
  if (caching && !planHit) {
    if (plans_.size() >= kMaxPlans || planInstructions_ >= kMaxPlanInstructions) evictPlans();
    size_t ops = opCount(batch);
    planInstructions_ += ops;
    plans_.emplace(std::move(key.text), CachedPlan{plan, ops, false, nextPlanId_++, {}, direct});
  }
  batchCount_++;
  state_.batches++;
  runPlan(*plan, batch, key, cached);
  traceEvent("dispatch", "dispatcher", traceStart,
             "{\"instructions\": " + std::to_string(batch.size()) + ", \"plan\": " +
                 (planHit ? "\"hit\"" : direct ? "\"direct\"" : "\"miss\"") + "}");
}

void SessionImpl::recordProgram(int64_t worker, const std::vector<Instruction> &program, const std::vector<wireRegion> &regions) {
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

SessionImpl::RunRequest SessionImpl::runRequest(int64_t worker, uint64_t words, const std::vector<wireRegion> &regions) {
  words += 64 + 1; // the request's own structs, and the list's tag (wire::wireSize)
  words += regions.size() * 8;
  for (const wireRegion &r : regions) words += r.outputs.size();
  auto req = state_.workers[worker].client.runRequest(capnp::MessageSize{words, 0});
  auto rlist = req.initProgram().initRegions(unsigned(regions.size()));
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
  if (auto f = forget_.find(worker); f != forget_.end()) {
    auto list = req.getProgram().initForget(unsigned(f->second.size()));
    for (unsigned i = 0; i < f->second.size(); ++i) list.set(i, f->second[i]);
    forget_.erase(f);
  }
  req.getProgram().setSequence(sequence_);
  if (worker == readerWorker_) {
    readerHeard_ = sequence_;
    // (usedWorkers_ already holds every worker of this batch: see runPlan and send)
    bool elsewhere = usedWorkers_.size() > 1 || (usedWorkers_.size() == 1 && !usedWorkers_.count(worker));
    req.getProgram().setElsewhere(elsewhere);
  }
  return req;
}

void SessionImpl::announceBatch() {
  if (readerWorker_ < 0 || readerHeard_ >= sequence_ || !state_.workers[readerWorker_].alive) return;
  sendRun(readerWorker_, runRequest(readerWorker_, 0, {}), 0);
}

kj::Promise<void> SessionImpl::directReads(DirectReadsContext context) {
  // The worker an unsharded session's tensors live on; a session with a sharding config has
  // tensors in pieces, which only the dispatcher puts together (a config of `compile:` entries
  // only, as gt.compile loads, places nothing).
  int64_t w = readerWorker_ >= 0 ? readerWorker_ : homeWorker();
  if ((config_ && config_->placesTensors()) || w < 0 || !state_.workers[w].alive || state_.workers[w].readerAddress.empty()) return kj::READY_NOW;
  auto results = context.getResults();
  results.setWorker(uint32_t(w));
  results.setAddress(state_.workers[w].readerAddress);
  if (readerWorker_ >= 0) {
    results.setToken(readerToken_);
    return kj::READY_NOW;
  }
  readerWorker_ = w;
  readerToken_ = transport::randomToken();
  results.setToken(readerToken_);
  auto req = state_.workers[w].client.admitReaderRequest();
  req.setSession(id_);
  req.setToken(readerToken_);
  auto admitted = req.send().ignoreResult().catch_([context](kj::Exception &&) mutable {
    context.getResults().setAddress(""); // the worker is lost (the next call to it marks it dead)
  });
  readerHeard_ = 0;
  announceBatch(); // after admitReader: the worker has heard of every batch so far
  return admitted;
}

void SessionImpl::send(int64_t worker, const std::vector<Instruction> &program, const std::vector<wireRegion> &regions) {
  if (program.empty() || worker < 0 || size_t(worker) >= state_.workers.size()) return;
  if (!state_.workers[worker].alive) return;
  if (!state_.options.record.empty()) recordProgram(worker, program, regions);
  int64_t traceStart = tracing_ ? monotonicNs() : 0;
  usedWorkers_.insert(worker);
  auto req = runRequest(worker, wire::wireSize(program).wordCount - 65, regions);
  auto list = req.getProgram().initInstructions(unsigned(program.size()));
  for (unsigned i = 0; i < program.size(); ++i) wire::toWire(program[i], list[i]);
  traceEvent("send", "dispatcher", traceStart,
             "{\"worker\": " + std::to_string(worker) + ", \"instructions\": " + std::to_string(program.size()) + "}");
  sendRun(worker, kj::mv(req), program.size());
}

void SessionImpl::sendRun(int64_t worker, RunRequest &&req, size_t n) {
  // The session's backlog counts the program until the worker has run it (or is lost).
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

void SessionImpl::dumpIR(mlir::ModuleOp module, const char *stage, const std::string &pipelineFlags) {
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

} // namespace gt::dispatcher
