// The worker's fair scheduler: per-session queues, deficit round robin, exchanges in arrival
// order (see Scheduler.h).
#include "gt/Worker/Scheduler.h"

#include <chrono>

namespace gt::worker {

struct Scheduler::Item {
  enum Kind { Program, Fence, End } kind = Program;
  ProgramRun program;
  std::vector<uint64_t> tickets; ///< the program's exchanges' places in the exchange order
  size_t nextTicket = 0;
  std::function<void()> done;
};

struct Scheduler::Queue {
  std::deque<Item> items; // only the scheduler's thread pops; references survive push_back
  double weight = 1;
  double deficit = 0; ///< ms this session may still run in its turn
  bool ending = false;
};

Scheduler::Scheduler(Executor &executor, SchedulerOptions options) : executor_(executor), options_(options) {}

void Scheduler::start() {
  executor_.onCompiled([this] {
    { std::lock_guard lock(mu_); }
    cv_.notify_all();
  });
  thread_ = std::thread([this] {
    executor_.device().bindThread();
    loop();
  });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
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
  }
  cv_.notify_one();
}

void Scheduler::fence(uint32_t session, std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    Queue &q = queues_[session];
    if (q.items.empty()) round_.push_back(session);
    q.items.push_back(Item{Item::Fence, {}, {}, 0, std::move(fn)});
  }
  cv_.notify_one();
}

void Scheduler::endSession(uint32_t session, std::function<void()> done) {
  {
    std::lock_guard lock(mu_);
    Queue &q = queues_[session];
    q.ending = true;
    if (q.items.empty()) round_.push_back(session);
    q.items.push_back(Item{Item::End, {}, {}, 0, std::move(done)});
  }
  cv_.notify_one();
}

Scheduler::Counters Scheduler::counters() const {
  std::lock_guard lock(mu_);
  Counters c;
  c.units = units_;
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

double Scheduler::weight(uint32_t session) const {
  std::lock_guard lock(mu_);
  auto it = queues_.find(session);
  return it == queues_.end() ? 1 : it->second.weight;
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
    cv_.wait(lock, [&] { return stop_ || !round_.empty(); });
    if (stop_) return;
    uint32_t id = round_.front();
    round_.pop_front();
    Queue &q = queues_[id];
    q.deficit = std::min(q.deficit, 0.0) + options_.quantumMs * q.weight; // a new turn; no hoarding
    bool ran = false;
    while (!q.items.empty() && q.deficit > 0) {
      Item &item = q.items.front();
      if (item.kind != Item::Program || item.program.done()) {
        std::function<void()> fn = std::move(item.done);
        Item::Kind kind = item.kind;
        q.items.pop_front();
        lock.unlock();
        if (kind == Item::End) executor_.endSession(id);
        if (fn) fn();
        lock.lock();
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
      lock.unlock();
      auto t0 = Clock::now();
      executor_.setSession(id);
      executor_.runNext(item.program, dropped);
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      lock.lock();
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
      tick(false);
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
