// gt.debug.stats(): the dispatcher's counters and every live worker's, summed and by worker.
#include "Session.h"

namespace gt::dispatcher {

kj::Promise<void> SessionImpl::stats(StatsContext context) {
  // Sum every live worker's counters; add the dispatcher's own.
  struct Totals {
    std::map<std::string, double> values;
    std::vector<std::string> notes;
    std::map<uint32_t, std::map<std::string, double>> byWorker;
  };
  auto totals = std::make_shared<Totals>();
  Totals &t = *totals;
  t.values["workers"] = 0;
  t.values["batches"] = double(state_.batches);
  t.values["regions_formed"] = double(state_.regionsFormed);
  t.values["regions_marked_hot"] = double(state_.regionsMarkedHot);
  t.values["dispatcher_upload_bytes"] = double(state_.uploadBytes);
  t.values["dispatcher_fetch_bytes"] = double(state_.fetchBytes);
  t.values["dispatcher_instructions"] = double(state_.instructions);
  t.values["dispatcher_dispatch_ms"] = state_.dispatchMs;
  t.values["dispatcher_plan_cache_hits"] = double(state_.planHits);
  t.values["dispatcher_plan_cache_misses"] = double(state_.planMisses);
  t.values["dispatcher_refused_instructions"] = double(state_.refusedInstructions);
  t.values["dispatcher_handshake_failures"] = double(state_.handshakeFailures);
  t.values["dispatcher_sessions"] = double(state_.liveSessions);
  t.values["dispatcher_store_keys"] = double(state_.store.entries.size());
  t.values["dispatcher_store_bytes"] = double(state_.store.bytes);
  if (state_.listener) {
    transport::Listener::Counters c = state_.listener->counters();
    t.values["dispatcher_connections"] = double(c.open);
    t.values["dispatcher_connections_pending"] = double(c.pending);
    t.values["dispatcher_connections_refused"] = double(c.refused);
    t.values["dispatcher_connections_evicted"] = double(c.evicted);
    t.values["dispatcher_connections_timed_out"] = double(c.timedOut);
    t.values["dispatcher_accept_errors"] = double(c.acceptErrors);
  }
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

} // namespace gt::dispatcher
