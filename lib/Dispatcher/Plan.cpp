// The plan cache: a batch's key (its structure, without ids, fill values, seeds or bytes), its
// plan (the pipeline's per-worker programs with symbolic ids) and a plan's replay for a batch.
#include "Session.h"

#include "gt/Dialect/GTOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <functional>
#include <set>

namespace gt::dispatcher {

std::string SessionImpl::keyOf(const std::vector<Instruction> &batch, int64_t home, BatchKey &key) {
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

std::string SessionImpl::shapeStr(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

size_t SessionImpl::familyOf(const std::vector<Instruction> &batch, const BatchKey &key) {
  size_t h = 0;
  auto mix = [&](uint64_t v) { h ^= std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const Instruction &inst : batch) {
    mix(uint64_t(inst.op) | uint64_t(inst.backward) << 16);
    mix(std::hash<std::string>()(inst.signal));
    mix(std::hash<std::string>()(inst.location));
    for (uint64_t id : inst.operands) {
      if (auto it = key.localIndex.find(id); it != key.localIndex.end()) mix(uint64_t(it->second) << 2 | 1);
      else if (auto ext = key.externalIndex.find(id); ext != key.externalIndex.end()) mix(uint64_t(ext->second) << 2 | 2);
      else mix(3);
    }
  }
  return h;
}

std::shared_ptr<ShardedPlan> SessionImpl::directPlanOf(const std::vector<Instruction> &batch, const BatchKey &key,
                                                       int64_t home) {
  using Ref = ShardedPlan::Ref;
  if ((config_ && config_->placesTensors()) || !key.cacheable) return nullptr;
  for (uint64_t id : key.externals) { // every operand from earlier batches whole on home
    auto it = tensors_.find(id);
    if (it == tensors_.end() || !it->second.error.empty() || !it->second.layout.isReplicated()) return nullptr;
    const std::vector<int64_t> &holders = it->second.layout.workers;
    if (std::find(holders.begin(), holders.end(), home) == holders.end()) return nullptr;
  }
  auto plan = std::make_shared<ShardedPlan>();
  std::vector<ShardedPlan::Step> &steps = plan->programs[home];
  steps.reserve(batch.size());
  std::vector<TensorType> localTypes(key.locals.size());
  std::vector<char> live(key.locals.size(), 0), freedLocal(key.locals.size(), 0);
  std::vector<char> freedExternal(key.externals.size(), 0);
  std::vector<TensorType> operandTypes;
  // The operand `id` of instruction i, or nullopt when the passes must look at it (made later
  // in the batch, or freed already).
  auto refOf = [&](uint64_t id) -> std::optional<Ref> {
    if (auto it = key.localIndex.find(id); it != key.localIndex.end()) {
      if (!live[it->second]) return std::nullopt;
      return Ref{Ref::Local, it->second};
    }
    auto ext = key.externalIndex.find(id); // (keyOf marks a batch with an unknown id uncacheable)
    if (ext == key.externalIndex.end() || freedExternal[ext->second]) return std::nullopt;
    return Ref{Ref::External, ext->second};
  };
  auto typeOfRef = [&](const Ref &r) -> const TensorType & {
    return r.kind == Ref::Local ? localTypes[r.index] : tensors_.at(key.externals[r.index]).type;
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    const Instruction &inst = batch[i];
    const OpInfo &info = opInfo(inst.op);
    if (info.kind == OpKind::Distribution || inst.op == OpCode::Send || inst.op == OpCode::Recv) return nullptr;
    ShardedPlan::Step step;
    step.operands.reserve(inst.operands.size());
    for (uint64_t id : inst.operands) {
      std::optional<Ref> r = refOf(id);
      if (!r) return nullptr;
      step.operands.push_back(*r);
    }
    if (inst.op == OpCode::Free) {
      for (const Ref &r : step.operands) {
        if (r.kind == Ref::Local) live[r.index] = 0, freedLocal[r.index] = 1;
        else freedExternal[r.index] = 1;
        plan->freed.push_back(r);
      }
      step.inst.op = OpCode::Free;
      steps.push_back(std::move(step));
      continue;
    }
    // The type the op table gives (a hostile client's claim is not taken: a mismatch goes to
    // the passes, which say what is wrong).
    operandTypes.clear();
    for (const Ref &r : step.operands) operandTypes.push_back(typeOfRef(r));
    TensorType type;
    try {
      type = inferType(inst.op, operandTypes, inst.attrs);
    } catch (const std::exception &) {
      return nullptr;
    }
    if (!inst.type || inst.type->dtype != type.dtype || inst.type->shape != type.shape) return nullptr;
    auto made = key.localIndex.find(inst.result);
    if (made == key.localIndex.end()) return nullptr;
    uint32_t local = made->second;
    localTypes[local] = type;
    live[local] = 1;
    step.inst.op = inst.op;
    step.inst.attrs = inst.attrs;
    clearUndeclared(inst.op, step.inst.attrs);
    step.inst.location = inst.location;
    step.inst.type = type;
    step.result = Ref{Ref::Local, local};
    step.source = int32_t(i);
    if (inst.op == OpCode::Upload) step.upload = int32_t(i);
    steps.push_back(std::move(step));
  }
  for (const ShardedPlan::Step &step : steps) plan->words[home] += wire::wireWords(step.inst);
  for (uint32_t i = 0; i < key.locals.size(); ++i)
    plan->made.push_back({i, localTypes[i], Sharding::replicated({home}), freedLocal[i] != 0});
  return plan;
}

std::shared_ptr<ShardedPlan> SessionImpl::planOf(mlir::ModuleOp module, const std::vector<Instruction> &batch, const BatchKey &key, const std::unordered_map<uint64_t, TensorType> &globalTypes) {
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
    size_t mergeFrom = 0; // consecutive frees at or after this step become one (never across a region's edge)
    std::function<void(mlir::Operation &)> addStep = [&](mlir::Operation &op) {
      if (auto region = mlir::dyn_cast<mlir::gt::RegionOp>(op)) {
        mergeFrom = steps.size();
        // Its ops become consecutive steps; block arguments stand for the operands and the
        // region's results for the yielded values.
        mlir::Block &body = region.getBody().front();
        // (Copies: inserting may grow `refs` and move the Ref a reference would point at.)
        for (auto [arg, operand] : llvm::zip(body.getArguments(), region->getOperands())) {
          Ref input = refs.at(operand);
          refs.try_emplace(arg, input);
        }
        ShardedPlan::Region r{std::strtoull(region.getKey().str().c_str(), nullptr, 16), 0, true, uint32_t(steps.size()), 0, {}};
        if (auto family = region->getAttrOfType<mlir::StringAttr>(mlir::gt::kRegionFamilyAttr))
          r.family = std::strtoull(family.str().c_str(), nullptr, 16);
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
        mergeFrom = steps.size();
        plan->regions[w].push_back(std::move(r));
        return;
      }
      const OpInfo *info = mlir::gt::opInfoOf(&op);
      if (!info) return; // func.return
      ShardedPlan::Step step;
      step.inst.op = info->code;
      step.inst.attrs = mlir::gt::attrsOf(&op);
      step.inst.location = locationString(op.getLoc());
      if (op.getNumResults() == 1) step.inst.type = mlir::gt::fromTensorType(op.getResult(0).getType()); // carried on
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
        if (steps.size() > mergeFrom && steps.back().inst.op == OpCode::Free &&
            steps.back().operands.size() < size_t(kMaxFreeOperands)) {
          steps.back().operands.push_back(step.operands[0]); // one instruction frees them all
          return;
        }
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
  for (auto &[w, steps] : plan->programs)
    for (const ShardedPlan::Step &step : steps) plan->words[w] += wire::wireWords(step.inst);
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

void SessionImpl::runPlan(const ShardedPlan &plan, const std::vector<Instruction> &batch, const BatchKey &key,
                          CachedPlan *cached) {
  using Ref = ShardedPlan::Ref;
  for (auto &[w, steps] : plan.programs) {
    if (w < 0 || size_t(w) >= state_.workers.size() || !state_.workers[w].alive) {
      std::string why = w >= 0 && size_t(w) < state_.workers.size() ? state_.workers[w].deathReason : "";
      return poison(batch, "worker " + std::to_string(w) + " is needed by this step but died" +
                                      (why.empty() ? "" : ": " + why));
    }
  }
  // A session's tensor has the worker id sessionTensorId(session, id) everywhere; a value the
  // passes added gets a fresh one for this batch.
  std::vector<uint64_t> tempGlobal(plan.temps, 0);
  auto idOf = [&](const Ref &r) -> uint64_t {
    switch (r.kind) {
    case Ref::External: return tensors_.at(key.externals[r.index]).globalId;
    case Ref::Local: return sessionTensorId(id_, key.locals[r.index]);
    case Ref::Temp:
      return tempGlobal[r.index] ? tempGlobal[r.index] : (tempGlobal[r.index] = kPassValueIdBit | state_.nextPassValue++);
    }
    return 0;
  };
  std::map<int64_t, std::vector<wireRegion>> regions;
  for (auto &[w, planned] : plan.regions)
    for (const ShardedPlan::Region &r : planned) {
      // Hot once its key has been seen hotAfter times (any session, any worker) or forced, and
      // while its family has compiled at most HotRegionCounter::kMaxSizesPerFamily sizes.
      bool hot = state_.regionCounts.sighted(r.key, r.family, state_.options.hotAfter, r.forced);
      state_.regionsFormed++;
      state_.regionsMarkedHot += hot;
      wireRegion out{r.key, hot, r.start, r.count, {}};
      for (const Ref &o : r.outputs) out.outputs.push_back(idOf(o));
      regions[w].push_back(std::move(out));
    }
  // Each worker's request is written straight from the plan's steps (their op, attributes,
  // location and type) with this batch's ids, fill values, seeds and bytes: no Instruction is
  // built, unless GT_RECORD wants the programs.
  bool recording = !state_.options.record.empty();
  for (auto &[w, steps] : plan.programs)
    if (!steps.empty()) usedWorkers_.insert(w); // before any request is built (Batch.elsewhere)
  std::vector<std::pair<int64_t, RunRequest>> requests;
  for (auto &[w, steps] : plan.programs) {
    if (steps.empty()) continue;
    int64_t traceStart = tracing_ ? monotonicNs() : 0;
    uint64_t words = plan.words.count(w) ? plan.words.at(w) : 0;
    for (const ShardedPlan::Step &step : steps) {
      words += step.operands.size();
      if (step.upload >= 0) words += (batch[size_t(step.upload)].data.size() + 7) / 8;
    }
    if (cached && !recording && cached->keptOn.count(w)) { // the worker keeps this program: ids, values, bytes
      requests.emplace_back(w, replayRequest(w, steps, batch, idOf, regions[w], cached->id));
      traceEvent("send", "dispatcher", traceStart,
                 "{\"worker\": " + std::to_string(w) + ", \"instructions\": " + std::to_string(steps.size()) +
                     ", \"kept\": true}");
      continue;
    }
    RunRequest req = runRequest(w, words, regions[w]);
    if (cached && !recording) { // a plan's first hit: the worker keeps the program
      req.getProgram().setPlan(cached->id);
      cached->keptOn.insert(w);
    }
    auto list = req.getProgram().initInstructions(unsigned(steps.size()));
    std::vector<Instruction> program; // GT_RECORD's copy
    for (unsigned i = 0; i < steps.size(); ++i) {
      const ShardedPlan::Step &step = steps[i];
      auto out = list[i];
      wire::toWire(step.inst, out); // the template: no ids, value, seed or bytes
      out.setResult(step.result ? idOf(*step.result) : 0);
      if (!step.operands.empty()) {
        auto operands = out.initOperands(unsigned(step.operands.size()));
        for (unsigned j = 0; j < step.operands.size(); ++j) operands.set(j, idOf(step.operands[j]));
      }
      if (step.source >= 0) {
        out.setValue(batch[size_t(step.source)].attrs.value);
        out.setSeed(batch[size_t(step.source)].attrs.seed);
      }
      if (step.upload >= 0) {
        const Instruction &upload = batch[size_t(step.upload)];
        std::string block;
        const std::string *bytes = &upload.data;
        if (step.uploadLayout && step.uploadLayout->isSplit()) bytes = &(block = blockOf(upload, *step.uploadLayout, w));
        if (!bytes->empty()) out.setData(kj::arrayPtr(reinterpret_cast<const kj::byte *>(bytes->data()), bytes->size()));
      }
      if (state_.log.enabled()) { // session ids (0: a value the passes added)
        uint64_t sid = step.result && step.result->kind == Ref::Local ? key.locals[step.result->index] : 0;
        state_.log.write(id_, "dispatch", step.inst.op, sid, step.inst.location, w);
      }
      if (recording) program.push_back(wire::fromWire(out.asReader()));
    }
    if (recording) recordProgram(w, program, regions[w]);
    traceEvent("send", "dispatcher", traceStart,
               "{\"worker\": " + std::to_string(w) + ", \"instructions\": " + std::to_string(steps.size()) + "}");
    requests.emplace_back(w, kj::mv(req));
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
  for (auto &[w, req] : requests) sendRun(w, kj::mv(req), plan.programs.at(w).size());
}

SessionImpl::RunRequest SessionImpl::replayRequest(int64_t w, const std::vector<ShardedPlan::Step> &steps,
                                                   const std::vector<Instruction> &batch,
                                                   const std::function<uint64_t(const ShardedPlan::Ref &)> &idOf,
                                                   const std::vector<wireRegion> &regions, uint64_t planId) {
  size_t ids = 0, values = 0;
  uint64_t words = 0;
  std::vector<const ShardedPlan::Step *> uploads;
  for (const ShardedPlan::Step &step : steps) {
    ids += 1 + step.operands.size();
    values += declaresValueOrSeed(step.inst.op);
    if (step.upload >= 0) {
      uploads.push_back(&step);
      words += 1 + (batch[size_t(step.upload)].data.size() + 7) / 8;
    }
  }
  RunRequest req = runRequest(w, words + ids + 2 * values + 8, regions);
  auto program = req.getProgram();
  program.setPlan(planId);
  auto idList = program.initIds(unsigned(ids));
  auto valueList = program.initValues(unsigned(values));
  auto seedList = program.initSeeds(unsigned(values));
  unsigned i = 0, v = 0;
  for (const ShardedPlan::Step &step : steps) {
    idList.set(i++, step.result ? idOf(*step.result) : 0);
    for (const ShardedPlan::Ref &r : step.operands) idList.set(i++, idOf(r));
    if (declaresValueOrSeed(step.inst.op)) {
      const OpAttrs &a = step.source >= 0 ? batch[size_t(step.source)].attrs : step.inst.attrs;
      valueList.set(v, a.value);
      seedList.set(v++, a.seed);
    }
  }
  auto data = program.initUploads(unsigned(uploads.size()));
  for (unsigned u = 0; u < uploads.size(); ++u) {
    const Instruction &upload = batch[size_t(uploads[u]->upload)];
    std::string block;
    const std::string *bytes = &upload.data;
    if (uploads[u]->uploadLayout && uploads[u]->uploadLayout->isSplit())
      bytes = &(block = blockOf(upload, *uploads[u]->uploadLayout, w));
    data.set(u, kj::arrayPtr(reinterpret_cast<const kj::byte *>(bytes->data()), bytes->size()));
  }
  return req;
}

std::string SessionImpl::blockOf(const Instruction &upload, const Sharding &layout, int64_t w) {
  if (!layout.isSplit()) return upload.data;
  auto [begin, end] = splitRange(upload.attrs.shape[size_t(layout.axis)], int64_t(layout.workers.size()),
                                 layout.rankOf(w));
  return takeBlock(upload.data, upload.attrs.shape, dtypeSize(upload.attrs.dtype), layout.axis, begin, end);
}

std::string SessionImpl::locationString(mlir::Location loc) {
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return file.getFilename().str() + ":" + std::to_string(file.getLine());
  return "";
}

} // namespace gt::dispatcher
