// gt-dispatcher: one Session per client (own tensor namespace), batches captured as MLIR,
// verified and placed by the pass pipeline, then streamed to workers as programs.
#include "gt/Dispatcher/Dispatcher.h"

#include "gt/Dialect/Passes.h"
#include "gt/Dispatcher/Capture.h"
#include "gt/Transport/Wire.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <capnp/ez-rpc.h>
#include <kj/debug.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <unordered_map>

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
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
    out_ << us << " session=" << session << ' ' << event << ' ' << opInfo(inst.op).mnemonic << " id=" << inst.result;
    if (worker >= 0) out_ << " worker=" << worker;
    if (!inst.location.empty()) out_ << " at=" << inst.location;
    out_ << '\n';
  }
  void flush() { if (enabled()) out_.flush(); }

private:
  std::ofstream out_;
};

struct WorkerRef {
  wire::Worker::Client client;
  std::string device;
  bool alive = true;
  std::string deathReason;
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
  explicit State(Options o) : options(std::move(o)), log(options.instructionLog) {
    mlir::DialectRegistry registry;
    mlir::gt::registerGTDialects(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  void checkToken(capnp::Text::Reader token) {
    KJ_REQUIRE(options.token.empty() || token == options.token.c_str(), "wrong or missing GT_TOKEN");
  }
};

void setError(wire::Fetched::Builder out, const std::string &message) { out.setError(message); }

/// A region of one worker's program, ready for the wire (ids are global).
struct wireRegion {
  uint64_t key;
  bool hot;
  uint32_t start, count;
  std::vector<uint64_t> outputs;
};

class SessionImpl final : public wire::Session::Server {
public:
  SessionImpl(State &state) : state_(state), id_(state.nextSession++) { state_.liveSessions++; }

  ~SessionImpl() noexcept(false) {
    // The client went away: free everything it still holds, worker by worker.
    std::unordered_map<int64_t, std::vector<uint64_t>> byWorker;
    for (auto &[id, t] : tensors_)
      if (t.error.empty()) byWorker[t.worker].push_back(t.globalId);
    for (auto &[worker, ids] : byWorker) {
      std::vector<Instruction> program;
      for (uint64_t g : ids) {
        Instruction free;
        free.op = OpCode::Free;
        free.operands = {g};
        program.push_back(std::move(free));
      }
      send(worker, program);
    }
    state_.liveSessions--;
  }

  kj::Promise<void> submit(SubmitContext context) override {
    std::vector<Instruction> batch;
    for (auto inst : context.getParams().getBatch().getInstructions()) batch.push_back(wire::fromWire(inst));
    if (state_.log.enabled())
      for (const Instruction &inst : batch) state_.log.write(id_, "recv", inst);
    dispatch(batch);
    state_.log.flush();
    return kj::READY_NOW;
  }

  kj::Promise<void> fetch(FetchContext context) override {
    uint64_t id = context.getParams().getId();
    auto it = tensors_.find(id);
    if (it == tensors_.end()) {
      setError(context.getResults().initResult(), "tensor " + std::to_string(id) + " does not exist in this session");
      return kj::READY_NOW;
    }
    const Entry &t = it->second;
    if (!t.error.empty()) {
      setError(context.getResults().initResult(), t.error);
      return kj::READY_NOW;
    }
    WorkerRef &w = state_.workers[t.worker];
    if (!w.alive) {
      setError(context.getResults().initResult(), "worker " + std::to_string(t.worker) + " died: " + w.deathReason);
      return kj::READY_NOW;
    }
    auto req = w.client.fetchRequest();
    req.setId(t.globalId);
    int64_t worker = t.worker;
    return req.send().then(
        [context](capnp::Response<wire::Worker::FetchResults> &&r) mutable {
          context.getResults().setResult(r.getResult());
        },
        [this, context, worker](kj::Exception &&e) mutable {
          markDead(worker, e.getDescription().cStr());
          setError(context.getResults().initResult(),
                   "worker " + std::to_string(worker) + " died: " + state_.workers[worker].deathReason);
        });
  }

  kj::Promise<void> sync(SyncContext) override {
    // A plain call after the streamed programs returns once the worker has run them.
    auto promises = kj::heapArrayBuilder<kj::Promise<void>>(state_.workers.size());
    for (size_t i = 0; i < state_.workers.size(); ++i) {
      if (!state_.workers[i].alive) continue;
      promises.add(state_.workers[i].client.statsRequest().send().ignoreResult().catch_([](kj::Exception &&) {}));
    }
    return kj::joinPromises(promises.finish());
  }

  kj::Promise<void> stats(StatsContext context) override {
    // Sum every live worker's counters; add the dispatcher's own.
    struct Totals {
      std::map<std::string, double> values;
      std::vector<std::string> notes;
    };
    auto totals = std::make_shared<Totals>();
    Totals &t = *totals;
    t.values["workers"] = 0;
    t.values["batches"] = double(state_.batches);
    t.values["regions_formed"] = double(state_.regionsFormed);
    t.values["regions_marked_hot"] = double(state_.regionsMarkedHot);
    auto promises = kj::heapArrayBuilder<kj::Promise<void>>(state_.workers.size());
    for (size_t i = 0; i < state_.workers.size(); ++i) {
      if (!state_.workers[i].alive) continue;
      t.values["workers"] += 1;
      promises.add(state_.workers[i].client.statsRequest().send().then(
          [totals, i](capnp::Response<wire::Worker::StatsResults> &&r) {
            Totals &t = *totals;
            for (auto s : r.getStats()) t.values[s.getName().cStr()] += s.getValue();
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
    });
  }

private:
  struct Entry {
    TensorType type;
    int64_t worker = 0;
    uint64_t globalId = 0;
    std::string error; ///< poisoned at the dispatcher (invalid stream, dead worker)
  };

  void markDead(int64_t worker, const std::string &why) {
    WorkerRef &w = state_.workers[worker];
    if (w.alive) std::cerr << "gt-dispatcher: worker " << worker << " lost: " << why << std::endl;
    w.alive = false;
    if (w.deathReason.empty()) w.deathReason = why;
  }

  int64_t homeWorker() {
    size_t n = state_.workers.size();
    for (size_t i = 0; i < n; ++i) {
      size_t w = (id_ + i) % n;
      if (state_.workers[w].alive) return int64_t(w);
    }
    return -1;
  }

  void poison(const std::vector<Instruction> &batch, const std::string &error) {
    for (const Instruction &inst : batch) {
      if (inst.op == OpCode::Free) continue;
      Entry &e = tensors_[inst.result];
      e.error = error;
    }
  }

  void dispatch(const std::vector<Instruction> &batch) {
    int64_t home = homeWorker();
    if (home < 0) return poison(batch, "no live worker is registered with the dispatcher");
    mlir::OwningOpRef<mlir::ModuleOp> module;
    try {
      module = captureBatch(state_.ctx, batch, [&](uint64_t id) -> std::optional<External> {
        auto it = tensors_.find(id);
        if (it == tensors_.end() || !it->second.error.empty()) {
          if (it != tensors_.end()) return External{it->second.type, home}; // poisoned: still typed
          return std::nullopt;
        }
        return External{it->second.type, it->second.worker};
      });
      dumpIR(*module, "captured");
      runDispatcherPipeline(*module, {home, state_.options.jit, state_.options.hotAfter, &state_.regionCounts});
      dumpIR(*module, "placed");
    } catch (const std::exception &e) {
      return poison(batch, e.what());
    }
    batchCount_++;

    // Map session ids to worker (global) ids and group the program per worker.
    std::unordered_map<int64_t, std::vector<Instruction>> programs;
    std::unordered_map<int64_t, std::vector<wireRegion>> regions;
    PlacedBatch placed = placedInstructions(*module);
    state_.batches++;
    for (const PlacedRegion &r : placed.regions) {
      state_.regionsFormed++;
      state_.regionsMarkedHot += r.hot;
    }
    int open = -1;              // the region whose members are being appended
    size_t openStart = 0, openMembers = 0;
    bool openIntact = true;     // false if a member was dropped or a free slipped in
    int64_t openWorker = -1;
    auto closeRegion = [&] {
      if (open < 0) return;
      std::vector<Instruction> &program = programs[openWorker];
      const PlacedRegion &r = placed.regions[size_t(open)];
      if (openIntact && program.size() - openStart == openMembers) {
        wireRegion w{r.key, r.hot, uint32_t(openStart), uint32_t(openMembers), {}};
        bool known = true;
        for (uint64_t sessionId : r.outputs) {
          auto it = tensors_.find(sessionId);
          if (it == tensors_.end()) known = false; // never expected; the span then runs eagerly
          else w.outputs.push_back(it->second.globalId);
        }
        if (known) regions[openWorker].push_back(std::move(w));
      }
      open = -1;
    };
    for (const Placed &p : placed.instructions) {
      if (p.region != open) {
        closeRegion();
        if (p.region >= 0) {
          open = p.region;
          openWorker = p.worker;
          openStart = programs[p.worker].size();
          openMembers = 0;
          openIntact = true;
        }
      }
      if (open >= 0) openMembers++;
      Instruction inst = batch[p.index];
      bool poisoned = false;
      std::string error;
      for (uint64_t &operand : inst.operands) {
        Entry &e = tensors_.at(operand);
        if (!e.error.empty()) { poisoned = true; error = e.error; }
        operand = e.globalId;
      }
      if (poisoned) openIntact = false;
      if (inst.op == OpCode::Free) {
        uint64_t sessionId = batch[p.index].operands.at(0);
        if (!poisoned) programs[tensors_.at(sessionId).worker].push_back(std::move(inst));
        tensors_.erase(sessionId);
        continue;
      }
      Entry entry;
      entry.type = p.type;
      entry.worker = p.worker;
      entry.globalId = state_.nextGlobalId++;
      if (poisoned) entry.error = error;
      if (auto old = tensors_.find(inst.result); old != tensors_.end() && old->second.error.empty()) {
        Instruction free; // the client reused an id: drop the old tensor
        free.op = OpCode::Free;
        free.operands = {old->second.globalId};
        programs[old->second.worker].push_back(std::move(free));
        openIntact = false;
      }
      uint64_t sessionId = inst.result;
      inst.result = entry.globalId;
      if (state_.log.enabled()) state_.log.write(id_, "dispatch", batch[p.index], p.worker);
      if (!poisoned) programs[p.worker].push_back(std::move(inst));
      tensors_[sessionId] = std::move(entry);
    }
    closeRegion();
    for (auto &[worker, program] : programs) send(worker, program, regions[worker]);
  }

  void send(int64_t worker, const std::vector<Instruction> &program, const std::vector<wireRegion> &regions = {}) {
    if (program.empty() || worker < 0 || size_t(worker) >= state_.workers.size()) return;
    WorkerRef &w = state_.workers[worker];
    if (!w.alive) return;
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
    State *state = &state_;
    req.send().detach([state, worker](kj::Exception &&e) {
      WorkerRef &w = state->workers[worker];
      if (w.alive) std::cerr << "gt-dispatcher: worker " << worker << " lost: " << e.getDescription().cStr() << std::endl;
      w.alive = false;
      if (w.deathReason.empty()) w.deathReason = e.getDescription().cStr();
    });
  }

  void dumpIR(mlir::ModuleOp module, const char *stage) {
    if (state_.options.dumpIR.empty()) return;
    std::string path = state_.options.dumpIR + "/session" + std::to_string(id_) + "-batch" +
                       std::to_string(batchCount_) + "-" + stage + ".mlir";
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (!ec) module.print(os, mlir::OpPrintingFlags().enableDebugInfo(true, /*prettyForm=*/false)); // replayable with gt-opt
  }

  State &state_;
  uint32_t id_;
  uint64_t batchCount_ = 0;
  std::unordered_map<uint64_t, Entry> tensors_;
};

class DispatcherImpl final : public wire::Dispatcher::Server {
public:
  explicit DispatcherImpl(State &state) : state_(state) {}

  kj::Promise<void> openSession(OpenSessionContext context) override {
    state_.checkToken(context.getParams().getToken());
    context.getResults().setSession(kj::heap<SessionImpl>(state_));
    return kj::READY_NOW;
  }

  kj::Promise<void> registerWorker(RegisterWorkerContext context) override {
    auto params = context.getParams();
    state_.checkToken(params.getToken());
    state_.workers.push_back({params.getWorker(), params.getDevice().cStr()});
    uint32_t index = uint32_t(state_.workers.size() - 1);
    std::cerr << "gt-dispatcher: worker " << index << " registered (" << params.getDevice().cStr() << ")" << std::endl;
    context.getResults().setIndex(index);
    return kj::READY_NOW;
  }

  kj::Promise<void> info(InfoContext context) override {
    uint32_t alive = 0;
    for (auto &w : state_.workers) alive += w.alive;
    context.getResults().setWorkers(alive);
    context.getResults().setSessions(state_.liveSessions);
    return kj::READY_NOW;
  }

private:
  State &state_;
};

} // namespace

void serve(const Options &options) {
  State state(options);
  capnp::ReaderOptions reader;
  reader.traversalLimitInWords = uint64_t(1) << 33; // uploads can be large
  reader.nestingLimit = 64;
  capnp::EzRpcServer server(kj::heap<DispatcherImpl>(state), options.host.c_str(), options.port, reader);
  auto &waitScope = server.getWaitScope();
  unsigned port = server.getPort().wait(waitScope);
  std::printf("gt-dispatcher listening on %s:%u\n", options.host.c_str(), port);
  std::fflush(stdout);
  kj::NEVER_DONE.wait(waitScope);
}

} // namespace gt::dispatcher
