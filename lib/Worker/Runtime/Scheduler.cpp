// The worker's fair scheduler: per-session queues, deficit round robin, exchanges in arrival
// order (see Scheduler.h).
#include "gt/Worker/Scheduler.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <iostream>
#include <optional>
#include <utility>

namespace gt::worker {
namespace {
/// A spin-wait hint to the CPU (x86 PAUSE, ARM YIELD).
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

/// Whether `program` has anything but frees left to run (frees touch no kernel thread).
bool computesMore(const ProgramRun &program) {
  return std::any_of(program.instructions.begin() + long(std::min(program.next, program.instructions.size())),
                     program.instructions.end(), [](const Instruction &inst) { return inst.op != OpCode::Free; });
}
} // namespace

struct Scheduler::Item {
  enum Kind { Program, Fence, End } kind = Program;
  ProgramRun program;
  std::vector<uint64_t> tickets; ///< the program's exchanges' places in the exchange order
  size_t nextTicket = 0;
  int64_t firstNs = -1, lastNs = 0; ///< when its first unit started and its last ended (traces)
  int64_t traceProgram = -1;        ///< its index in its session's Trace::programs
  uint64_t traceGeneration = 0;     ///< of that trace
  std::function<void()> done;
  /// whenFinal's functions waiting on this program: each runs once `program.next` reaches its
  /// index (the instruction after the one it waits for).
  std::vector<std::pair<size_t, std::function<void()>>> final;
};

struct Scheduler::Queue {
  std::deque<Item> items; // only the scheduler's thread pops; references survive push_back
  double weight = 1;
  double deficit = 0; ///< ms this session may still run in its turn
  bool ending = false;
  /// An answer (a fetch or sync) went out and the session has submitted nothing since: its
  /// client is issuing its next step (SchedulerOptions::clientCore).
  bool issuing = false;
};

Scheduler::Scheduler(Executor &executor, SchedulerOptions options) : executor_(executor), options_(options) {}

void Scheduler::start() {
  executor_.onCompiled([this] {
    { std::lock_guard lock(mu_); }
    cv_.notify_all();
  });
  thread_ = std::thread([this] {
    executor_.device().bindThread();
    if (options_.executorCpu >= 0) {
      try {
        executor_.device().pinExecutorThread(options_.executorCpu);
      } catch (const std::exception &e) { // checked at start-up (serve); the kernel may still refuse
        std::cerr << "gt-worker: " << e.what() << "; the executor runs unpinned" << std::endl;
      }
    }
    loop();
  });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  notifyAll();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::submit(uint32_t session, double weight, ProgramRun program, std::function<void()> done) {
  // A region never holds an exchange (the dispatcher's regions are fusible ops only); one that
  // claims to would run its exchange outside the exchange order, so it runs eagerly instead.
  std::vector<RegionCall> regions;
  for (RegionCall &r : program.regions) {
    bool ok = size_t(r.start) + r.count <= program.instructions.size();
    for (uint32_t i = r.start; ok && i < r.start + r.count; ++i) ok = !Executor::isExchange(program.instructions[i].op);
    if (ok) regions.push_back(std::move(r));
  }
  program.regions = std::move(regions);
  Item item;
  item.program = std::move(program);
  item.done = std::move(done);
  {
    std::lock_guard lock(mu_);
    for (const Instruction &inst : item.program.instructions)
      if (Executor::isExchange(inst.op)) {
        item.tickets.push_back(nextTicket_);
        exchangeOrder_.push_back(nextTicket_++);
      }
    Queue &q = queues_[session];
    q.weight = weight > 0 ? weight : 1;
    if (q.items.empty()) round_.push_back(session);
    q.items.push_back(std::move(item));
    q.issuing = false; // (it is about to wait, or runs ahead of this worker)
  }
  notifyWork();
}

void Scheduler::fence(uint32_t session, std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    Queue &q = queues_[session];
    if (q.items.empty()) round_.push_back(session);
    q.items.push_back(Item{Item::Fence, {}, {}, 0, -1, 0, -1, 0, std::move(fn)});
    waiting_++;
  }
  notifyWork();
}

void Scheduler::whenFinal(uint32_t session, uint64_t id, std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    auto q = queues_.find(session);
    if (q == queues_.end() || q->second.items.empty() || q->second.ending) {
      // Nothing queued (a fence runs next), or a case kept simple: behind everything.
    } else {
      std::deque<Item> &items = q->second.items;
      size_t budget = kMaxFinalScan;
      for (auto it = items.rbegin(); it != items.rend() && budget > 0; ++it) {
        if (it->kind != Item::Program) continue; // fences and fetches write nothing
        const std::vector<Instruction> &insts = it->program.instructions; // not changed while queued or running
        for (size_t i = insts.size(); i-- > 0 && budget > 0;) {
          const Instruction &inst = insts[i];
          bool free = inst.op == OpCode::Free;
          // Each id looked at counts (a free names up to kMaxFreeOperands): a fetch's work here,
          // under the lock the scheduler's thread needs between units, stays bounded.
          budget -= std::min(budget, 1 + (free ? inst.operands.size() : 0));
          bool writes = free ? std::find(inst.operands.begin(), inst.operands.end(), id) != inst.operands.end()
                             : inst.result == id;
          if (writes) {
            it->final.emplace_back(i + 1, std::move(fn));
            waiting_++;
            notifyWork();
            return;
          }
        }
      }
      if (budget > 0 && items.front().kind == Item::Program) { // none queued: final already
        items.front().final.emplace_back(0, std::move(fn));
        waiting_++;
        notifyWork();
        return;
      }
    }
  }
  fence(session, std::move(fn));
}

bool Scheduler::runIfIdle(uint32_t session, const std::function<void()> &fn) {
  if (executor_.device().nativeStream()) return false;
  {
    std::lock_guard lock(mu_);
    if (!parked_ || !round_.empty() || traces_.count(session)) return false;
    runningIdle_ = true;
  }
  struct Unpark {
    Scheduler &s;
    ~Unpark() {
      std::lock_guard lock(s.mu_);
      s.runningIdle_ = false;
      if (!s.round_.empty()) s.notifyWork(); // never while parked: waking it for nothing costs a switch
    }
  } unpark{*this};
  fn();
  return true;
}

void Scheduler::endSession(uint32_t session, std::function<void()> done) {
  {
    std::lock_guard lock(mu_);
    Queue &q = queues_[session];
    q.ending = true;
    if (q.items.empty()) round_.push_back(session);
    q.items.push_back(Item{Item::End, {}, {}, 0, -1, 0, -1, 0, std::move(done)});
  }
  notifyWork();
}

Scheduler::Counters Scheduler::counters() const {
  std::lock_guard lock(mu_);
  Counters c;
  c.units = units_;
  c.unitsCoreLeft = unitsCoreLeft_;
  c.fetchesMidProgram = fetchesMidProgram_;
  c.busyMs = busyMs_;
  for (auto &[id, q] : queues_) {
    c.sessions += !q.items.empty();
    c.queued += q.items.size();
  }
  return c;
}

double Scheduler::busyMs(uint32_t session) const {
  std::lock_guard lock(mu_);
  auto it = busyBySession_.find(session);
  return it == busyBySession_.end() ? 0 : it->second;
}

std::map<uint32_t, double> Scheduler::busyBySession() const {
  std::lock_guard lock(mu_);
  return busyBySession_;
}

void Scheduler::onTick(std::function<void()> fn, double periodMs) {
  tick_ = std::move(fn);
  tickPeriodMs_ = periodMs;
}

void Scheduler::startTrace(uint32_t session) {
  std::lock_guard lock(mu_);
  Trace &t = traces_[session] = Trace{};
  t.generation = ++traceGeneration_;
  t.startNs = monotonicNs();
}

void *Scheduler::recordTimingEvent() {
  try {
    return executor_.device().recordTimingEvent();
  } catch (const std::exception &) {
    return nullptr; // the trace goes without this unit's device time; the run reports the error
  }
}

std::unique_ptr<Scheduler::DeviceTimer> Scheduler::startDeviceTimer() {
  // The reference event is recorded with nothing queued, so it happens as it is recorded: its
  // host time is then known to within the few microseconds the wait for it takes.
  Device &device = executor_.device();
  auto timer = std::make_unique<DeviceTimer>(&device);
  try {
    device.waitIdle(1.0);
    int64_t before = monotonicNs();
    void *reference = device.recordTimingEvent();
    timer->events.push_back(reference);
    device.elapsedNs(reference, reference); // waits for it
    timer->referenceNs = before + (monotonicNs() - before) / 2;
  } catch (const std::exception &) {
    return nullptr;
  }
  return timer;
}

std::pair<std::vector<TraceEvent>, int64_t> Scheduler::stopTrace(uint32_t session) {
  Trace t;
  {
    std::lock_guard lock(mu_);
    auto it = traces_.find(session);
    if (it == traces_.end()) return {{}, monotonicNs()};
    t = std::move(it->second);
    traces_.erase(it);
  }
  // Described now, outside the lock (the programs are the trace's own).
  std::vector<TraceEvent> out = std::move(t.events);
  uint64_t lastBytes = UINT64_MAX;
  for (const Trace::Unit &u : t.units) {
    if (u.liveBytes != lastBytes) // allocations and frees, as a counter track
      out.push_back({"live bytes", "memory", u.startNs + u.durationNs, 0, "{\"bytes\": " + std::to_string(u.liveBytes) + "}"});
    lastBytes = u.liveBytes;
    if (u.program >= t.programs.size() || !t.programs[u.program]) continue; // still running at the stop
    TraceEvent e = Executor::describeUnit(*t.programs[u.program], u.ref);
    if (e.category == "free") continue;
    e.startNs = u.startNs;
    e.durationNs = u.durationNs;
    if (u.deviceEvents >= 0 && t.timer && size_t(u.deviceEvents) + 1 < t.timer->events.size()) {
      // When the unit's work ran on the device (category "gpu"): kernels run after the host
      // queues them, so the host's span above is only the queueing.
      DeviceTimer &timer = *t.timer;
      try {
        void *start = timer.events[size_t(u.deviceEvents)], *end = timer.events[size_t(u.deviceEvents) + 1];
        TraceEvent onDevice = e;
        onDevice.category = "gpu";
        onDevice.startNs = timer.referenceNs + timer.device->elapsedNs(timer.events[0], start);
        onDevice.durationNs = timer.device->elapsedNs(start, end);
        out.push_back(std::move(onDevice));
      } catch (const std::exception &) {
        t.timer.reset(); // a failed kernel: the rest of the trace has host times only
      }
    }
    out.push_back(std::move(e));
  }
  if (t.dropped)
    out.push_back({"dropped events", "trace", monotonicNs(), 0, "{\"dropped\": " + std::to_string(t.dropped) + "}"});
  return {std::move(out), t.startNs};
}

double Scheduler::weight(uint32_t session) const {
  std::lock_guard lock(mu_);
  auto it = queues_.find(session);
  return it == queues_.end() ? 1 : it->second.weight;
}

bool Scheduler::runFinal(uint32_t session, Queue &q, Item &item, std::unique_lock<std::mutex> &lock) {
  std::vector<std::function<void()>> ready;
  auto keep = std::stable_partition(item.final.begin(), item.final.end(),
                             [&](const auto &f) { return f.first > item.program.next; });
  for (auto it = keep; it != item.final.end(); ++it) ready.push_back(std::move(it->second));
  item.final.erase(keep, item.final.end());
  waiting_ -= ready.size();
  if (ready.empty()) return false;
  q.issuing = true;
  if (options_.clientCore && waiting_ == 0 && round_.empty() && (computesMore(item.program) || q.items.size() > 1)) {
    // The rest of the program leaves the client its core (see loop); not for a rest of frees
    // alone: the thread left out would go to sleep, and the next program's first parallel
    // kernel or GEMM would wait 50-150 us for it to wake (a token's first GEMM in generation,
    // whose answer is followed by the frees of its intermediates). Done before the answer
    // releases the client: the thread left out is still spinning from the unit that made the
    // tensor and goes to sleep at once, while once the client runs it would have to wait for
    // a core to get there (up to a millisecond on 2 cores).
    lock.unlock();
    executor_.device().leaveCoreFree(true);
    lock.lock();
  }
  if (!item.program.done()) fetchesMidProgram_ += ready.size();
  for (const std::function<void()> &fn : ready) runFetch(session, fn, lock);
  return true;
}

void Scheduler::runFetch(uint32_t session, const std::function<void()> &fn, std::unique_lock<std::mutex> &lock) {
  int64_t t0 = monotonicNs();
  std::optional<std::pair<uint64_t, size_t>> event; // (trace generation, index in events)
  auto trace = traces_.find(session);
  if (trace != traces_.end() && !trace->second.full()) {
    event.emplace(trace->second.generation, trace->second.events.size());
    trace->second.add({"fetch/sync", "fetch", t0, 0, ""});
  }
  lock.unlock();
  if (fn) fn();
  lock.lock();
  if (event && (trace = traces_.find(session)) != traces_.end() && trace->second.generation == event->first &&
      event->second < trace->second.events.size())
    trace->second.events[event->second].durationNs = monotonicNs() - t0;
}

void Scheduler::loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  size_t idleTurns = 0; // turns in a row in which no session could run (all wait for exchanges)
  auto lastTick = Clock::now();
  bool ranSinceTick = false;
  auto tick = [&](bool due) { // onTick's callback, outside the lock
    if (!tick_ || !(due || std::chrono::duration<double, std::milli>(Clock::now() - lastTick).count() >= tickPeriodMs_))
      return;
    lock.unlock();
    tick_();
    lock.lock();
    lastTick = Clock::now();
    ranSinceTick = false;
  };
  while (true) {
    if (round_.empty() && ranSinceTick) tick(true); // the work ran out: publish where it ended
    parked_ = round_.empty();
    if (parked_ && options_.idleSpinUs > 0) {
      work_.store(false, std::memory_order_relaxed);
      lock.unlock();
      auto until = Clock::now() + std::chrono::microseconds(options_.idleSpinUs);
      while (!work_.load(std::memory_order_acquire) && Clock::now() < until) cpuRelax();
      lock.lock();
    }
    cv_.wait(lock, [&] { return stop_ || (!round_.empty() && !runningIdle_); });
    parked_ = false;
    if (stop_) return;
    uint32_t id = round_.front();
    round_.pop_front();
    Queue &q = queues_[id];
    q.deficit = std::min(q.deficit, 0.0) + options_.quantumMs * q.weight; // a new turn; no hoarding
    bool ran = false;
    std::function<void()> replyAfterFence; // a finished program's reply, sent after the fence behind it
    while (!q.items.empty() && q.deficit > 0) {
      Item &item = q.items.front();
      if (!item.final.empty() && runFinal(id, q, item, lock)) { // fetches whose tensor is made
        ran = true;
        continue;
      }
      if (item.kind != Item::Program || item.program.done()) {
        std::function<void()> fn = std::move(item.done);
        Item::Kind kind = item.kind;
        auto trace = traces_.empty() ? traces_.end() : traces_.find(id);
        if (trace != traces_.end() && kind == Item::Program && item.traceProgram >= 0 &&
            item.traceGeneration == trace->second.generation) {
          Trace &t = trace->second;
          t.add({"program", "program", item.firstNs, item.lastNs - item.firstNs,
                 "{\"instructions\": " + std::to_string(item.program.instructions.size()) + "}"});
          t.instructions += item.program.instructions.size();
          for (Instruction &inst : item.program.instructions) std::string().swap(inst.data); // upload bytes: not described
          t.programs[size_t(item.traceProgram)] = std::make_unique<ProgramRun>(std::move(item.program));
        }
        q.items.pop_front();
        // A fetch or sync answered: in the trace before the answer goes out (the client may stop
        // the trace as soon as it has it), its duration filled in after.
        int64_t t0 = monotonicNs();
        std::optional<std::pair<uint64_t, size_t>> fetchEvent; // (trace generation, index in events)
        if (kind == Item::Fence && trace != traces_.end() && !trace->second.full()) {
          fetchEvent.emplace(trace->second.generation, trace->second.events.size());
          trace->second.add({"fetch/sync", "fetch", t0, 0, ""});
        }
        if (kind == Item::End) traces_.erase(id); // a traced session that ends without stopping leaves nothing behind
        if (kind == Item::Fence) {
          waiting_--;
          q.issuing = true;
        }
        if (kind == Item::Program && !q.items.empty() && q.items.front().kind == Item::Fence) {
          // A fetch or sync waiting on this program answers before the program's own reply
          // to the dispatcher (which only counts what is queued): the client waits on the
          // answer, and the reply would wake the dispatcher on the core the client needs.
          replyAfterFence = std::move(fn);
          ran = true;
          continue;
        }
        lock.unlock();
        if (kind == Item::End) executor_.endSession(id);
        if (fn) fn();
        if (replyAfterFence) std::exchange(replyAfterFence, nullptr)();
        lock.lock();
        if (fetchEvent && (trace = traces_.find(id)) != traces_.end() && trace->second.generation == fetchEvent->first &&
            fetchEvent->second < trace->second.events.size())
          trace->second.events[fetchEvent->second].durationNs = monotonicNs() - t0;
        if (kind == Item::End) busyBySession_.erase(id);
        ran = true;
        continue;
      }
      bool exchange = Executor::nextIsExchange(item.program);
      if (exchange && (exchangeOrder_.empty() || item.nextTicket >= item.tickets.size() ||
                       exchangeOrder_.front() != item.tickets[item.nextTicket]))
        break; // not yet its turn in the exchange order: the others run first
      bool dropped = q.ending;
      if (!dropped && !executor_.prepareNext(item.program))
        break; // its kernels compile on the compile thread; the others run meanwhile
      // Tracing: which unit this is (described when the trace stops), and when it ran.
      std::optional<Executor::UnitRef> traced;
      bool deviceTimed = false, needTimer = false; // on a GPU: its kernels' device time too
      if (!traces_.empty())
        if (auto trace = traces_.find(id); trace != traces_.end()) {
          Trace &t = trace->second;
          if (t.full()) {
            t.dropped++;
          } else {
            if (item.traceProgram < 0 || item.traceGeneration != t.generation) {
              item.traceProgram = int64_t(t.programs.size());
              item.traceGeneration = t.generation;
              t.programs.emplace_back();
            }
            traced = Executor::nextUnitRef(item.program);
            deviceTimed = !dropped && executor_.device().nativeStream() && t.units.size() < Trace::kMaxDeviceTimedUnits;
            needTimer = deviceTimed && !t.timer;
          }
        }
      // The client's core: free from an answer to its next submit (it is issuing its next
      // step; what it queued before, such as a batch of frees, changes nothing) while nobody
      // else waits or has work here; this worker's own otherwise.
      bool leaveCore = options_.clientCore && q.issuing && waiting_ == 0 && round_.empty();
      // (A free uses no kernel thread: it changes nothing, so that a trailing batch of frees
      // does not send the threads to sleep for nothing.)
      bool onlyFrees = item.program.next < item.program.instructions.size() &&
                       item.program.instructions[item.program.next].op == OpCode::Free;
      unitsCoreLeft_ += leaveCore && !onlyFrees;
      lock.unlock();
      if (options_.clientCore && !onlyFrees) executor_.device().leaveCoreFree(leaveCore);
      std::unique_ptr<DeviceTimer> newTimer = needTimer ? startDeviceTimer() : nullptr;
      void *deviceStart = deviceTimed ? recordTimingEvent() : nullptr;
      auto t0 = Clock::now();
      int64_t startNs = traced ? monotonicNs() : 0;
      executor_.setSession(id);
      executor_.runNext(item.program, dropped);
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      void *deviceEnd = deviceStart ? recordTimingEvent() : nullptr;
      lock.lock();
      if (traced) {
        int64_t endNs = monotonicNs();
        if (item.firstNs < 0) item.firstNs = startNs;
        item.lastNs = endNs;
        auto trace = traces_.find(id);
        if (trace != traces_.end() && item.traceGeneration == trace->second.generation) {
          Trace &t = trace->second;
          if (newTimer && !t.timer) t.timer = std::move(newTimer);
          int64_t deviceEvents = -1;
          if (deviceStart && deviceEnd && t.timer) {
            deviceEvents = int64_t(t.timer->events.size());
            t.timer->events.push_back(std::exchange(deviceStart, nullptr));
            t.timer->events.push_back(std::exchange(deviceEnd, nullptr));
          }
          t.units.push_back({uint32_t(item.traceProgram), *traced, startNs, endNs - startNs, executor_.sessionBytes(id), deviceEvents});
        }
      }
      for (void *event : {deviceStart, deviceEnd}) // the trace stopped meanwhile (or the timer failed)
        if (event) executor_.device().destroyTimingEvent(event);
      if (exchange) {
        exchangeOrder_.pop_front();
        item.nextTicket++;
      }
      q.deficit -= ms;
      busyMs_ += ms;
      busyBySession_[id] += ms;
      units_++;
      ran = true;
      ranSinceTick = true;
      if (!item.final.empty()) runFinal(id, q, item, lock); // at once, even when the turn ends here
      tick(false);
    }
    if (replyAfterFence) { // (the fence always follows at once; never left unsent)
      lock.unlock();
      std::exchange(replyAfterFence, nullptr)();
      lock.lock();
    }
    if (!q.items.empty()) {
      round_.push_back(id);
    } else {
      q.deficit = 0;
      if (q.ending) queues_.erase(id);
    }
    idleTurns = ran ? 0 : idleTurns + 1;
    if (idleTurns > round_.size()) { // nobody can run: wait for more work rather than spin
      cv_.wait_for(lock, std::chrono::milliseconds(1));
      idleTurns = 0;
    }
  }
}

} // namespace gt::worker
