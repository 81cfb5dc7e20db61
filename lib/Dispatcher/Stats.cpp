// gt.debug.stats(): the dispatcher's counters and every live worker's, summed and by worker.
#include "Session.h"

namespace gt::dispatcher {

/// The dispatcher's own counters (gt.debug.stats, gt top).
static std::map<std::string, double> dispatcherCounters(const State &state_) {
  std::map<std::string, double> values;
  values["workers"] = double(std::count_if(state_.workers.begin(), state_.workers.end(), [](const WorkerRef &w) { return w.alive; }));
  values["batches"] = double(state_.batches);
  values["regions_formed"] = double(state_.regionsFormed);
  values["regions_marked_hot"] = double(state_.regionsMarkedHot);
  values["regions_left_cold_by_size_cap"] = double(state_.regionCounts.capped);
  values["dispatcher_upload_bytes"] = double(state_.uploadBytes);
  values["dispatcher_fetch_bytes"] = double(state_.fetchBytes);
  values["dispatcher_instructions"] = double(state_.instructions);
  values["dispatcher_dispatch_ms"] = state_.dispatchMs;
  values["dispatcher_plan_cache_hits"] = double(state_.planHits);
  values["dispatcher_plan_cache_misses"] = double(state_.planMisses);
  values["dispatcher_direct_batches"] = double(state_.directPlans);
  values["dispatcher_mlir_contexts"] = double(state_.contextsMade);
  values["dispatcher_refused_instructions"] = double(state_.refusedInstructions);
  values["dispatcher_handshake_failures"] = double(state_.handshakeFailures);
  values["dispatcher_sessions"] = double(state_.liveSessions);
  values["dispatcher_store_keys"] = double(state_.store.entries.size());
  values["dispatcher_store_bytes"] = double(state_.store.bytes);
  if (state_.listener) {
    transport::Listener::Counters c = state_.listener->counters();
    values["dispatcher_connections"] = double(c.open);
    values["dispatcher_connections_pending"] = double(c.pending);
    values["dispatcher_connections_refused"] = double(c.refused);
    values["dispatcher_connections_evicted"] = double(c.evicted);
    values["dispatcher_connections_timed_out"] = double(c.timedOut);
    values["dispatcher_accept_errors"] = double(c.acceptErrors);
  }
  return values;
}

kj::Promise<void> SessionImpl::stats(StatsContext context) {
  // Sum every live worker's counters; add the dispatcher's own.
  struct Totals {
    std::map<std::string, double> values;
    std::vector<std::string> notes;
    std::map<uint32_t, std::map<std::string, double>> byWorker;
  };
  auto totals = std::make_shared<Totals>();
  Totals &t = *totals;
  t.values = dispatcherCounters(state_);
  t.values["workers"] = 0; // counted below, as the workers' counters are added
  t.values["session_queued_instructions"] = double(backlog_->queued);
  auto promises = kj::heapArrayBuilder<kj::Promise<void>>(state_.workers.size());
  for (size_t i = 0; i < state_.workers.size(); ++i) {
    if (!state_.workers[i].alive) continue;
    t.values["workers"] += 1;
    auto req = state_.workers[i].client.statsRequest();
    req.setSession(id_);
    promises.add(req.send().then(
        [totals, i](capnp::Response<wire::Worker::StatsResults> &&r) {
          Totals &t = *totals;
          for (auto s : r.getStats()) {
            t.values[s.getName().cStr()] += s.getValue();
            t.byWorker[uint32_t(i)][s.getName().cStr()] = s.getValue();
          }
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
    auto byWorker = context.getResults().initByWorker(unsigned(t.byWorker.size()));
    unsigned k = 0;
    for (auto &[index, values] : t.byWorker) {
      byWorker[k].setIndex(index);
      auto stats = byWorker[k].initStats(unsigned(values.size()));
      unsigned j = 0;
      for (auto &[name, value] : values) {
        stats[j].setName(name);
        stats[j].setValue(value);
        ++j;
      }
      ++k;
    }
  });
}

kj::Promise<void> fillMonitor(State &state, wire::Dispatcher::MonitorResults::Builder out) {
  auto stats = dispatcherCounters(state);
  auto list = out.initDispatcher(unsigned(stats.size()));
  unsigned i = 0;
  for (auto &[name, value] : stats) {
    list[i].setName(name);
    list[i].setValue(value);
    ++i;
  }
  auto now = std::chrono::steady_clock::now();
  auto sessions = out.initSessions(unsigned(state.sessions.size()));
  i = 0;
  for (auto &[id, r] : state.sessions) {
    auto s = sessions[i++];
    s.setSession(id);
    s.setName(r.name);
    s.setLabel(r.label);
    s.setWeight(r.weight);
    s.setInstructions(r.instructions);
    s.setUploadBytes(r.uploadBytes);
    s.setFetchBytes(r.fetchBytes);
    s.setErrors(r.errors);
    s.setLastError(r.lastError.substr(0, 500));
    s.setOpenSeconds(std::chrono::duration<double>(now - r.opened).count());
  }
  // Every worker at once, each given a second: a wedged worker shows as not answering.
  auto workers = out.initWorkers(unsigned(state.workers.size()));
  auto promises = kj::heapArrayBuilder<kj::Promise<void>>(state.workers.size());
  for (size_t w = 0; w < state.workers.size(); ++w) {
    WorkerRef &ref = state.workers[w];
    auto entry = workers[unsigned(w)];
    entry.setIndex(uint32_t(w));
    entry.setDevice(ref.device);
    entry.setAlive(ref.alive);
    if (!ref.alive) continue;
    auto call = ref.client.monitorRequest().send().then([entry](capnp::Response<wire::Worker::MonitorResults> &&r) mutable {
      entry.setStats(r.getStats());
      entry.setSessions(r.getSessions());
      entry.setAnswered(true);
    });
    promises.add(state.timer->timeoutAfter(1 * kj::SECONDS, kj::mv(call)).catch_([](kj::Exception &&) {}));
  }
  // What sessions read from workers directly (Session.directReads) counts as fetched too.
  return kj::joinPromises(promises.finish()).then([sessions, workers]() mutable {
    std::map<uint32_t, unsigned> row;
    for (unsigned i = 0; i < sessions.size(); ++i) row[sessions[i].getSession()] = i;
    for (auto w : workers)
      for (auto u : w.getSessions()) {
        auto it = row.find(u.getSession());
        if (it == row.end() || (!u.getReadBytes() && !u.getReadErrors())) continue;
        auto s = sessions[it->second];
        s.setFetchBytes(s.getFetchBytes() + u.getReadBytes());
        s.setErrors(s.getErrors() + u.getReadErrors());
        if (u.getLastReadError().size()) s.setLastError(u.getLastReadError());
      }
  });
}

std::vector<metrics::Sample> metricSamples(const State &state) {
  std::map<std::string, double> c = dispatcherCounters(state);
  auto at = [&](const char *name) { return c.count(name) ? c.at(name) : 0.0; };
  using metrics::counter, metrics::gauge;

  std::vector<metrics::Sample> out = {
      counter("gt_instructions_total", "Instructions received from clients.", at("dispatcher_instructions")),
      counter("gt_batches_total", "Client batches received.", at("batches")),
      counter("gt_plan_cache_hits_total", "Batches replayed from a cached plan.", at("dispatcher_plan_cache_hits")),
      counter("gt_plan_cache_misses_total", "Batches that ran capture and the dispatcher's passes.",
              at("dispatcher_plan_cache_misses")),
      counter("gt_direct_batches_total", "Batches of a known program at new sizes, sent to the worker as they came (no passes).",
              at("dispatcher_direct_batches")),
      counter("gt_dispatch_seconds_total", "Time spent turning client instructions into worker programs.",
              at("dispatcher_dispatch_ms") / 1000),
      counter("gt_upload_bytes_total", "Tensor bytes clients uploaded through the dispatcher.", at("dispatcher_upload_bytes")),
      counter("gt_fetch_bytes_total", "Tensor bytes clients fetched through the dispatcher.", at("dispatcher_fetch_bytes")),
      counter("gt_regions_formed_total", "Fused regions (gt.region) the dispatcher formed.", at("regions_formed")),
      gauge("gt_sessions", "Live client sessions.", at("dispatcher_sessions")),
      gauge("gt_workers", "Live workers.", at("workers")),
      gauge("gt_connections", "Open connections (clients, workers, monitors).", at("dispatcher_connections")),
  };
  const char *errorHelp = "Errors, by kind: refused instructions, failed fetches, refused credentials, refused or "
                          "evicted connections.";
  for (auto [kind, value] : {std::pair{"refused_instruction", at("dispatcher_refused_instructions")},
                             std::pair{"fetch", double(state.fetchErrors)},
                             std::pair{"handshake", at("dispatcher_handshake_failures")},
                             std::pair{"connection_refused", at("dispatcher_connections_refused")},
                             std::pair{"connection_evicted", at("dispatcher_connections_evicted")},
                             std::pair{"connection_timed_out", at("dispatcher_connections_timed_out")}})
    out.push_back({"gt_errors_total", errorHelp, true, {{"kind", kind}}, value});
  for (auto &[id, r] : state.sessions) // bounded by the live sessions: an ended one disappears
    out.push_back({"gt_session_instructions_total", "Instructions received from each live session.", true,
                   {{"session", std::to_string(id)}, {"client", r.label}}, double(r.instructions)});
  return out;
}

} // namespace gt::dispatcher
