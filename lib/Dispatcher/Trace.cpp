// gt.profiler's timeline, the dispatcher's part (Session.trace): its own events for a traced
// session, and every worker's, put on the dispatcher's clock with an offset measured per worker.
#include "Session.h"

#include <climits>
#include <unistd.h>

namespace gt::dispatcher {

namespace {

/// A worker's clock minus the dispatcher's, from the reading with the shortest round trip
/// (the reply is taken as read half way through it, as NTP's offset estimate).
struct Offset {
  int64_t offsetNs = 0, rttNs = INT64_MAX;
};

kj::Promise<Offset> measure(wire::Worker::Client worker, int readings, Offset best = {}) {
  if (readings == 0) return best;
  int64_t t0 = monotonicNs();
  return worker.clockRequest().send().then([worker, readings, best, t0](auto &&r) mutable {
    int64_t t1 = monotonicNs();
    if (t1 - t0 < best.rttNs) best = {r.getNs() - (t0 + t1) / 2, t1 - t0};
    return measure(worker, readings - 1, best);
  });
}

struct Process {
  bool answered = false;
  uint32_t pid = 0;
  std::string label;
  Offset offset;
  std::vector<TraceEvent> events; ///< on the dispatcher's clock
};

void setEvents(capnp::List<wire::TraceEvent>::Builder out, const std::vector<TraceEvent> &events) {
  for (unsigned i = 0; i < events.size(); ++i) {
    out[i].setName(events[i].name);
    out[i].setCategory(events[i].category);
    out[i].setStartNs(events[i].startNs);
    out[i].setDurationNs(events[i].durationNs);
    out[i].setArgs(events[i].args);
  }
}

} // namespace

kj::Promise<void> SessionImpl::clock(ClockContext context) {
  context.getResults().setNs(monotonicNs());
  return kj::READY_NOW;
}

kj::Promise<void> SessionImpl::trace(TraceContext context) {
  bool on = context.getParams().getOn();
  std::shared_ptr<Tracing> mine(on ? nullptr : tracing_.release());
  if (on) tracing_ = std::make_unique<Tracing>();
  auto processes = std::make_shared<std::vector<Process>>(state_.workers.size());
  auto promises = kj::heapArrayBuilder<kj::Promise<void>>(state_.workers.size());
  uint32_t session = id_;
  for (size_t w = 0; w < state_.workers.size(); ++w) {
    WorkerRef &ref = state_.workers[w];
    if (!ref.alive) continue;
    (*processes)[w].label = "gt-worker " + std::to_string(w) + " (" + ref.device + ")";
    wire::Worker::Client worker = ref.client;
    if (on) {
      auto req = worker.traceRequest();
      req.setSession(session);
      req.setOn(true);
      promises.add(req.send().ignoreResult().catch_([](kj::Exception &&) {}));
      continue;
    }
    auto collect = measure(worker, 5).then([worker, session, processes, w](Offset offset) mutable {
      (*processes)[w].offset = offset;
      auto req = worker.traceRequest();
      req.setSession(session);
      req.setOn(false);
      return req.send();
    }).then([processes, w](capnp::Response<wire::Worker::TraceResults> &&r) {
      Process &p = (*processes)[w];
      p.answered = true;
      p.pid = r.getPid();
      for (auto e : r.getEvents())
        p.events.push_back({e.getName(), e.getCategory(), e.getStartNs() - p.offset.offsetNs, e.getDurationNs(), e.getArgs()});
    });
    promises.add(state_.timer->timeoutAfter(10 * kj::SECONDS, kj::mv(collect)).catch_([](kj::Exception &&) {}));
  }
  return kj::joinPromises(promises.finish()).then([context, processes, mine, on]() mutable {
    if (on) return;
    std::vector<TraceEvent> own = mine ? std::move(mine->events) : std::vector<TraceEvent>{};
    if (mine && mine->dropped)
      own.push_back({"dropped events", "trace", monotonicNs(), 0, "{\"dropped\": " + std::to_string(mine->dropped) + "}"});
    size_t answered = 0;
    for (const Process &p : *processes) answered += p.answered;
    auto out = context.getResults().initProcesses(unsigned(1 + answered));
    out[0].setPid(uint32_t(getpid()));
    out[0].setLabel("gt-dispatcher");
    setEvents(out[0].initEvents(unsigned(own.size())), own);
    unsigned i = 1;
    for (const Process &p : *processes) {
      if (!p.answered) continue;
      out[i].setPid(p.pid);
      out[i].setLabel(p.label);
      out[i].setOffsetNs(p.offset.offsetNs);
      out[i].setRttNs(p.offset.rttNs);
      setEvents(out[i].initEvents(unsigned(p.events.size())), p.events);
      ++i;
    }
  });
}

} // namespace gt::dispatcher
