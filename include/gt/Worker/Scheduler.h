// The worker's fair scheduler (DESIGN.md §7): a queue per session, interleaved one unit (an
// instruction or a fused region) at a time by deficit round robin over measured execution time
// (Shreedhar & Varghese, "Efficient Fair Queuing using Deficit Round Robin", SIGCOMM 1995), so
// no session waits behind another's whole batch.
//
// Exchanges (collectives, send, recv) are the exception to interleaving: every worker runs them
// in the order they arrived from the dispatcher, which sends all programs over one ordered
// connection per worker in one global order. So the members of any group meet each exchange in
// the same order, whichever sessions they belong to, and two sharded sessions sharing workers
// cannot deadlock each other (the gang order of Pathways, Barham et al., MLSys 2022). A
// session whose next unit is an exchange that is not yet due waits; the others run meanwhile.
#pragma once

#include "gt/Worker/Executor.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace gt::worker {

struct SchedulerOptions {
  double quantumMs = 2; ///< execution time a session of weight 1 gets per turn
  /// A client shares this machine's cores (auto-started workers; gt-worker --client-core). Units
  /// then run with Device::leaveCoreFree (one kernel thread fewer) from an answer to a fetch or
  /// sync of a session until its next submit, while no other fetch or sync waits and no other
  /// session has work here: its client is issuing its next step then (loss.item() was answered
  /// mid-program, see whenFinal), and a kernel thread beside it would take turns with it on
  /// one core. Everywhere else (the client waits, or runs ahead of this worker) every thread runs.
  /// An answer followed only by frees leaves nothing free: the threads would go to sleep and the
  /// next program's first GEMM wait for them to wake.
  bool clientCore = false;
  /// The CPU the scheduler's thread (the one that runs every unit) is pinned to
  /// (Device::pinExecutorThread), -1: none. An auto-started CPU worker gets its process's last
  /// CPU while its RPC thread and the dispatcher keep to the others, so that the wake-ups of
  /// the hops (a batch arriving, an answer leaving) never wait for the core a kernel holds, and
  /// the executor keeps its caches (benchmarks/RESULTS.md, session 46: MLP step 1.99-2.11 ->
  /// 1.74-1.83 ms on the 2-core development machine).
  int executorCpu = -1;
  /// Microseconds the scheduler's thread keeps polling for new work once the work runs out,
  /// before it sleeps on its condition variable (0: it sleeps at once). For an executor with a
  /// core of its own (executorCpu): a sleeping thread on an idle virtual CPU took 100-200 us to
  /// start the next batch after it arrived on the 2-core development VM, the polling one about
  /// 60 us less (char_gpt generation, a batch per token: 2.96-3.78 -> 2.48-2.74 ms per token,
  /// benchmarks/RESULTS.md, session 47). It costs that core's time while it polls.
  int idleSpinUs = 0;
};

class Scheduler {
public:
  /// The scheduler of `executor`; work queued before start() waits for it.
  explicit Scheduler(Executor &executor, SchedulerOptions options = {});
  /// Starts the scheduler's thread, the only one that touches the executor from now on.
  void start();
  /// Finishes the unit that is running; what is still queued is dropped without running.
  ~Scheduler();

  /// Queues `program` for `session`; `weight` (> 0, 1 by default) is its share relative to the
  /// other sessions with work queued. `done` runs on the scheduler's thread once it has run.
  void submit(uint32_t session, double weight, ProgramRun program, std::function<void()> done);
  /// Runs `fn` on the scheduler's thread once everything `session` queued before it has run
  /// (fetches, syncs, stats: they see the session's results).
  void fence(uint32_t session, std::function<void()> fn);
  /// Runs `fn` on the scheduler's thread once the last instruction `session` queued before it
  /// that writes or frees tensor `id` has run, or at the next unit if none is queued: what a
  /// fetch of `id` needs, so that `loss.item()` after `optimizer.step()` is answered as soon as
  /// the forward pass has made the loss, while the backward pass and the step still run (as a
  /// data dependency would order it, not the stream order of CUDA). A tensor is only ever
  /// written by the instruction that makes it (Instruction::result), so its value is final
  /// from then on. Falls back to fence() for an ending session and when finding it would mean
  /// looking at more than kMaxFinalScan ids (an instruction's result counts one, a free each
  /// tensor it names): a hostile session's fetches cost the worker a bounded search each.
  void whenFinal(uint32_t session, uint64_t id, std::function<void()> fn);
  static constexpr size_t kMaxFinalScan = 8192; // (a few training steps; a fetch looks at most at this many ids)
  /// Runs `fn` on the calling thread at once, and returns true, when the scheduler's thread is
  /// parked with nothing queued for any session and `session` is not traced: then everything
  /// `session` queued has run and nothing touches the executor meanwhile, so `fn` sees what a
  /// fence would show it, without the two thread hand-offs of a fence (about a third of a
  /// fetch's round trip on a loaded 2-core machine). Otherwise it runs nothing and returns
  /// false. Only the thread that queues work (the worker's event loop) may call it, and only
  /// on a device without its own stream (the CPU): the CUDA context is bound to the
  /// scheduler's thread.
  bool runIfIdle(uint32_t session, const std::function<void()> &fn);
  /// `session` is gone: what it still has queued runs dropped (see Executor::runNext), then its
  /// tensors are freed and `done` runs.
  void endSession(uint32_t session, std::function<void()> done);

  struct Counters {
    uint64_t sessions = 0;  ///< sessions with work queued now
    uint64_t queued = 0;    ///< programs, fences and session ends queued now
    uint64_t units = 0;     ///< units run (instructions and regions)
    uint64_t unitsCoreLeft = 0;     ///< ... of which with a core left to the client (clientCore)
    uint64_t fetchesMidProgram = 0; ///< whenFinal answers given before their program had finished
    double busyMs = 0;      ///< time spent running them
  };
  Counters counters() const;
  /// Execution time used by `session` so far, milliseconds (0 for a session it never saw).
  double busyMs(uint32_t session) const;
  /// Execution time used so far by every session it has seen and not ended, milliseconds.
  std::map<uint32_t, double> busyBySession() const;
  /// Runs `fn` on the scheduler's thread (where the executor may be read) at most every
  /// `periodMs` while work runs, and once each time the work runs out: gt top's counters
  /// (Worker.monitor) come from what it publishes. Call before start().
  void onTick(std::function<void()> fn, double periodMs);

  /// gt.profiler: records what runs for `session` from now on, on monotonicNs(): each unit
  /// (an op, a fused region, an exchange; frees are left out), each program's span from its
  /// first unit to its last, each fetch or sync, and the session's memory on this worker after
  /// each unit (category "memory", name "live bytes", args {"bytes": N}: a counter track; never
  /// another session's).
  void startTrace(uint32_t session);
  /// Stops recording for `session` and returns its events (at most kMaxTraceEvents) and when the
  /// recording started (monotonicNs); an untraced session gives none. On a GPU each unit's
  /// events come twice: as the host ran it, and (category "gpu") as its work ran on the device.
  std::pair<std::vector<TraceEvent>, int64_t> stopTrace(uint32_t session);
  /// The weight `session` last submitted with (1 for a session it never saw).
  double weight(uint32_t session) const;

private:
  /// Wakes the scheduler's thread, sleeping or polling (call after changing what it waits for).
  void notifyWork() {
    work_.store(true, std::memory_order_release);
    cv_.notify_one();
  }
  void notifyAll() {
    work_.store(true, std::memory_order_release);
    cv_.notify_all();
  }
  struct Item;
  struct Queue;
  void loop();
  /// Runs (outside the lock, which `lock` holds) the whenFinal functions of `item` whose
  /// instruction has run, recording each as a fetch in `session`'s trace. Returns whether any ran.
  bool runFinal(uint32_t session, Queue &q, Item &item, std::unique_lock<std::mutex> &lock);
  /// Runs `fn`, a fence's or whenFinal's function, outside the lock (held by `lock`), recording
  /// it as a fetch in `session`'s trace.
  void runFetch(uint32_t session, const std::function<void()> &fn, std::unique_lock<std::mutex> &lock);

  Executor &executor_;
  SchedulerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint32_t, Queue> queues_;
  std::deque<uint32_t> round_;         ///< sessions with work, in round-robin order
  std::deque<uint64_t> exchangeOrder_; ///< tickets of queued exchanges, in arrival order
  uint64_t nextTicket_ = 0;
  uint64_t units_ = 0;
  double busyMs_ = 0;
  std::map<uint32_t, double> busyBySession_;
  /// Timing events on a device that queues its work (CUDA), owned: destroyed with the trace.
  struct DeviceTimer {
    Device *device = nullptr;
    std::vector<void *> events; ///< events[0]: the reference; then a (start, end) pair per unit
    int64_t referenceNs = 0;    ///< monotonicNs() when events[0] happened on the device
    explicit DeviceTimer(Device *d) : device(d) {}
    DeviceTimer(const DeviceTimer &) = delete;
    DeviceTimer &operator=(const DeviceTimer &) = delete;
    ~DeviceTimer() {
      for (void *e : events) device->destroyTimingEvent(e);
    }
  };
  /// A traced session's recording. Units are kept as references into the programs they ran
  /// in (kept whole, up to kMaxTracedInstructions) and described when the trace stops: running a
  /// unit costs two clock reads and 32 bytes while tracing. On a device that queues its work
  /// (CUDA) each unit also records two timing events (up to kMaxDeviceTimedUnits), read when the
  /// trace stops: when the unit's kernels ran on the device, which is not when the host queued them.
  struct Trace {
    static constexpr size_t kMaxTracedInstructions = 1 << 16; // tens of MB at most, per traced session
    static constexpr size_t kMaxDeviceTimedUnits = 50000;     // 100,000 CUDA events at most
    struct Unit {
      uint32_t program;
      Executor::UnitRef ref;
      int64_t startNs, durationNs;
      uint64_t liveBytes; ///< the session's memory on this worker when it ended (allocations and frees)
      int64_t deviceEvents = -1; ///< index of its start event in timer->events (end: the next), or -1
    };
    uint64_t generation = 0;
    int64_t startNs = 0;
    std::unique_ptr<DeviceTimer> timer; ///< null on the CPU and until the first unit runs
    std::vector<Unit> units;
    std::vector<std::unique_ptr<ProgramRun>> programs; ///< null until the program has run whole
    size_t instructions = 0;                           ///< in `programs`
    std::vector<TraceEvent> events;                    ///< program spans, fetches and syncs
    size_t dropped = 0;
    bool full() const { return units.size() + events.size() >= kMaxTraceEvents || instructions >= kMaxTracedInstructions; }
    void add(TraceEvent e) {
      if (!full()) events.push_back(std::move(e));
      else dropped++;
    }
  };
  void *recordTimingEvent();                       ///< the device's, or nullptr if it failed
  std::unique_ptr<DeviceTimer> startDeviceTimer(); ///< a trace's reference event; null if it failed
  uint64_t traceGeneration_ = 0;
  std::unordered_map<uint32_t, Trace> traces_; ///< the traced sessions
  std::function<void()> tick_;
  double tickPeriodMs_ = 0;
  bool stop_ = false;
  size_t waiting_ = 0; ///< fences and whenFinal functions not yet run: someone waits on them
  uint64_t unitsCoreLeft_ = 0, fetchesMidProgram_ = 0;
  bool parked_ = false;   ///< the scheduler's thread waits for work with none queued
  std::atomic<bool> work_{false}; ///< set with every wake-up of cv_: ends an idle poll (idleSpinUs)
  bool runningIdle_ = false; ///< runIfIdle's `fn` runs on another thread: stay parked
  std::thread thread_;
};

} // namespace gt::worker
