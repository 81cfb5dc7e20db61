// The worker's fair scheduler and the executor's per-session accounting: sessions interleave,
// exchanges keep their arrival order, a departed session's tensors go, quotas hold, and eager
// kernels compile on their own thread.
#include "gt/Worker/Scheduler.h"

#include "Programs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>

using namespace gt;
using namespace gt::worker;
using namespace gt::test;

namespace {

/// Counts down to zero; wait() blocks until it gets there (or 60 s pass).
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  int left;
  explicit Latch(int n) : left(n) {}
  void done() {
    std::lock_guard lock(mu);
    if (--left == 0) cv.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return left == 0; });
  }
};

ProgramRun program(std::vector<Instruction> instructions) { return ProgramRun{std::move(instructions), {}}; }

/// A one-member group's collectives, recorded in the order they run.
struct RecordingCommunicator : Communicator {
  std::mutex mu;
  std::vector<size_t> allReduces; ///< element counts, in order
  void allReduce(void *, size_t count, DType, ReduceKind, const std::vector<int64_t> &) override {
    std::lock_guard lock(mu);
    allReduces.push_back(count);
  }
  void allGather(const void *, void *, const std::vector<size_t> &, const std::vector<int64_t> &) override {}
  void reduceScatter(void *, void *, const std::vector<size_t> &, DType, ReduceKind, const std::vector<int64_t> &) override {}
  void allToAll(const void *, const std::vector<size_t> &, void *, const std::vector<size_t> &,
                const std::vector<int64_t> &) override {}
  void send(const void *, size_t, int64_t) override {}
  void recv(void *, size_t, int64_t) override {}
  bool any(bool flag, const std::vector<int64_t> &) override { return flag; }
  std::vector<std::pair<std::string, double>> counters() const override { return {}; }
};

Instruction allReduce(uint64_t id, uint64_t operand, Shape shape) {
  OpAttrs a;
  a.shape = std::move(shape);
  a.workers = {0};
  return op(OpCode::AllReduce, id, {operand}, a);
}

} // namespace

TEST(Scheduler, ALightSessionDoesNotWaitForAHeavyOnesProgram) {
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  std::vector<float> big(256 * 256, 0.001f);
  std::vector<Instruction> heavy = {upload(1, big, {256, 256})};
  for (uint64_t i = 2; i < 200; ++i) heavy.push_back(op(OpCode::Matmul, i, {i - 1, 1}));
  std::mutex mu;
  std::vector<int> finished;
  Latch both(2);
  scheduler.submit(1, 1, program(heavy), [&] {
    std::lock_guard lock(mu);
    finished.push_back(1);
    both.done();
  });
  scheduler.submit(2, 1, program({upload(1001, {1, 2}, {2}), op(OpCode::Exp, 1002, {1001})}), [&] {
    std::lock_guard lock(mu);
    finished.push_back(2);
    both.done();
  });
  scheduler.start();
  ASSERT_TRUE(both.wait());
  EXPECT_EQ(finished, (std::vector<int>{2, 1})); // session 2 came second and finished first
  EXPECT_GT(scheduler.busyMs(1), scheduler.busyMs(2));
}

TEST(Scheduler, ExchangesRunInTheOrderTheyArrived) {
  Executor ex(ExecutorOptions{"", false});
  auto comm = std::make_shared<RecordingCommunicator>();
  ex.setCommunicator(comm, 0);
  Scheduler scheduler(ex);
  // Session 1's all_reduce arrives first, behind a long program; session 2's arrives second
  // with nothing before it. Session 2 may not overtake: every member must meet them in order.
  // (Tensor ids are the dispatcher's global ids: unique across sessions.)
  std::vector<Instruction> first = {upload(1, std::vector<float>(64 * 64, 0.01f), {64, 64})};
  for (uint64_t i = 2; i < 100; ++i) first.push_back(op(OpCode::Matmul, i, {i - 1, 1}));
  first.push_back(allReduce(100, 99, {64, 64}));
  Latch both(2);
  scheduler.submit(1, 1, program(first), [&] { both.done(); });
  scheduler.submit(2, 1, program({upload(1001, {1, 2, 3}, {3}), allReduce(1002, 1001, {3})}), [&] { both.done(); });
  scheduler.start();
  ASSERT_TRUE(both.wait());
  EXPECT_EQ(comm->allReduces, (std::vector<size_t>{64 * 64, 3}));
}

TEST(Scheduler, AFetchBehindAProgramAnswersBeforeTheProgramsOwnReply) {
  // The client waits on the fetch; the program's reply only tells the dispatcher that the
  // work left its backlog. Both wait behind the program, and the fetch (which reads what the
  // program made) goes first, then the reply, then work queued after the fetch.
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  std::mutex mu;
  std::vector<std::string> order;
  float fetched = 0;
  Latch all(3);
  auto note = [&](const char *what) {
    std::lock_guard lock(mu);
    order.push_back(what);
    all.done();
  };
  scheduler.submit(1, 1, program({upload(1, {0.5f}, {1}), op(OpCode::Exp, 2, {1})}), [&] { note("program"); });
  scheduler.fence(1, [&] {
    Fetched f = ex.fetch(2, 0, 4);
    if (f.bytes.size() == 4) std::memcpy(&fetched, f.bytes.data(), 4);
    note("fetch");
  });
  scheduler.submit(1, 1, program({op(OpCode::Exp, 3, {2})}), [&] { note("next"); });
  scheduler.start();
  ASSERT_TRUE(all.wait());
  EXPECT_EQ(order, (std::vector<std::string>{"fetch", "program", "next"}));
  EXPECT_FLOAT_EQ(fetched, std::exp(0.5f)); // read after the program ran
}

TEST(Scheduler, AnEndedSessionsTensorsAreFreed) {
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  scheduler.start();
  Latch ended(1);
  scheduler.submit(7, 1, program({upload(1, {1, 2, 3}, {3}), op(OpCode::Exp, 2, {1})}), [] {});
  scheduler.submit(8, 1, program({upload(3, {4}, {1})}), [] {});
  scheduler.endSession(7, [&] { ended.done(); });
  ASSERT_TRUE(ended.wait());
  Latch fenced(1);
  uint64_t live = 0, bytes7 = 1;
  scheduler.fence(8, [&] {
    live = ex.stats().liveTensors;
    bytes7 = ex.sessionBytes(7);
    fenced.done();
  });
  ASSERT_TRUE(fenced.wait());
  EXPECT_EQ(live, 1u); // session 8's tensor only
  EXPECT_EQ(bytes7, 0u);
}

TEST(Executor, SessionQuotasAndTheWorkersMemoryHold) {
  ExecutorOptions o{"", false};
  o.memoryBytes = 1 << 20;
  o.sessionMemoryBytes = 512 << 10;
  Executor ex(o);
  std::vector<float> chunk(75 * 1024, 1.0f); // 300 KiB
  ex.setSession(1);
  ex.run(upload(1, chunk, {75 * 1024}));
  ex.run(upload(2, chunk, {75 * 1024}));
  EXPECT_TRUE(ex.fetch(1).error.empty());
  EXPECT_NE(ex.fetch(2).error.find("over its quota"), std::string::npos) << ex.fetch(2).error;
  ex.setSession(2);
  ex.run(upload(3, chunk, {75 * 1024}));
  EXPECT_TRUE(ex.fetch(3).error.empty()); // session 1 cost session 2 nothing
  ex.setSession(3);
  ex.run(upload(4, chunk, {75 * 1024}));
  ex.setSession(4); // 1200 KiB in all would not fit the worker's 1 MiB
  ex.run(upload(5, chunk, {75 * 1024}));
  EXPECT_NE(ex.fetch(5).error.find("the worker's 1.0 MiB are in use"), std::string::npos) << ex.fetch(5).error;
  ex.endSession(1);
  EXPECT_EQ(ex.sessionBytes(1), 0u);
  ex.run(upload(5, chunk, {75 * 1024})); // room again
  EXPECT_TRUE(ex.fetch(5).error.empty());
}

TEST(Executor, EagerKernelsCompileOnTheirOwnThread) {
  Executor ex(ExecutorOptions{"", true}); // background compiles, no disk cache
  std::mutex mu;
  std::condition_variable cv;
  int compiles = 0;
  ex.onCompiled([&] {
    std::lock_guard lock(mu);
    compiles++;
    cv.notify_all();
  });
  ex.run(upload(1, {1, 2, 3}, {3}));
  ProgramRun p = program({op(OpCode::Tanh, 2, {1}), op(OpCode::Sin, 3, {2})});
  EXPECT_FALSE(ex.prepareNext(p)); // tanh on float32[3] is not compiled yet: it is queued
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return compiles >= 1; }));
  }
  ASSERT_TRUE(ex.prepareNext(p));
  uint64_t before = ex.compilerStats().compiled;
  ex.runNext(p); // tanh runs without compiling anything on this thread
  EXPECT_EQ(ex.compilerStats().compiled, before);
  EXPECT_NEAR(floats(ex.fetch(2))[2], std::tanh(3.0f), 1e-6);
  EXPECT_FALSE(ex.prepareNext(p)); // then sin, whose operand type is known now
}

// gt.profiler on a worker: a traced session's units come back described, inside their
// program's span, another session's do not, and a session that ends while traced leaves no
// recording behind (a client cannot grow a worker by tracing and leaving).
TEST(Scheduler, TracesASessionsUnitsInsideItsProgramsSpans) {
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  scheduler.start();
  scheduler.startTrace(7);
  Instruction exp = op(OpCode::Exp, 2, {1});
  exp.type = TensorType{DType::Float32, {3}};
  Latch ran(2);
  scheduler.submit(7, 1, program({upload(1, {1, 2, 3}, {3}), exp, op(OpCode::Free, 0, {1})}), [&] { ran.done(); });
  scheduler.submit(8, 1, program({upload(5, {4}, {1})}), [&] { ran.done(); });
  ASSERT_TRUE(ran.wait());
  Latch fenced(1);
  scheduler.fence(7, [&] { fenced.done(); });
  ASSERT_TRUE(fenced.wait());
  auto [events, since] = scheduler.stopTrace(7);
  std::vector<std::string> names, memory;
  const TraceEvent *span = nullptr;
  for (const TraceEvent &e : events) {
    if (e.category == "memory") memory.push_back(e.args);
    else names.push_back(e.category + ":" + e.name);
    if (e.category == "program") span = &e;
    EXPECT_GE(e.startNs, since);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"program:program", "fetch:fetch/sync", "kernel:upload", "kernel:exp"}));
  ASSERT_NE(span, nullptr);
  for (const TraceEvent &e : events)
    if (e.category == "kernel") {
      EXPECT_GE(e.startNs, span->startNs);
      EXPECT_LE(e.startNs + e.durationNs, span->startNs + span->durationNs);
    }
  auto kernel = std::find_if(events.begin(), events.end(), [](const TraceEvent &e) { return e.name == "exp"; });
  ASSERT_NE(kernel, events.end());
  EXPECT_EQ(kernel->args, "{\"dtype\": \"float32\", \"shape\": [3], \"line\": \"test.py:1\"}");
  // The session's memory track: 12 bytes after the upload, 24 after exp, 12 again after the
  // free (session 8's 4 bytes are not in it).
  EXPECT_EQ(memory, (std::vector<std::string>{"{\"bytes\": 12}", "{\"bytes\": 24}", "{\"bytes\": 12}"}));
  EXPECT_TRUE(scheduler.stopTrace(7).first.empty()); // stopped: nothing more

  scheduler.startTrace(9);
  Latch ended(1);
  scheduler.submit(9, 1, program({upload(6, {1}, {1})}), [] {});
  scheduler.endSession(9, [&] { ended.done(); });
  ASSERT_TRUE(ended.wait());
  EXPECT_TRUE(scheduler.stopTrace(9).first.empty()); // forgotten with the session
}

TEST(Scheduler, RunIfIdleRunsOnTheCallersThreadOnlyWhileTheSchedulerIsParked) {
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  bool ran = false;
  EXPECT_FALSE(scheduler.runIfIdle(1, [&] { ran = true; })); // its thread has not started
  EXPECT_FALSE(ran);
  scheduler.start();
  auto whenParked = [&](uint32_t session, const std::function<void()> &fn) { // the thread parks shortly after start
    for (int i = 0; i < 6000; ++i) {
      if (scheduler.runIfIdle(session, fn)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  std::thread::id where;
  ASSERT_TRUE(whenParked(1, [&] { where = std::this_thread::get_id(); }));
  EXPECT_EQ(where, std::this_thread::get_id());

  // While the scheduler's thread runs anything (here a fence held open), nothing runs inline.
  Latch entered(1), release(1), fenced(1);
  scheduler.fence(2, [&] {
    entered.done();
    release.wait();
    fenced.done();
  });
  ASSERT_TRUE(entered.wait());
  EXPECT_FALSE(scheduler.runIfIdle(1, [&] { ran = true; }));
  EXPECT_FALSE(scheduler.runIfIdle(2, [&] { ran = true; }));
  EXPECT_FALSE(ran);
  release.done();
  ASSERT_TRUE(fenced.wait());

  // Parked again: a session's finished program is visible inline, and work queued after an
  // inline run still runs.
  Latch done(1);
  scheduler.submit(3, 1, program({upload(1, {1, 2, 3}, {3}), op(OpCode::Exp, 2, {1})}), [&] { done.done(); });
  ASSERT_TRUE(done.wait());
  uint64_t live = 0;
  ASSERT_TRUE(whenParked(3, [&] { live = ex.stats().liveTensors; }));
  EXPECT_EQ(live, 2u);
  Latch after(1);
  scheduler.submit(3, 1, program({op(OpCode::Exp, 3, {2})}), [&] { after.done(); });
  ASSERT_TRUE(after.wait());

  // A traced session's fetches go through the queue (the trace records them); others need not.
  scheduler.startTrace(4);
  ASSERT_TRUE(whenParked(5, [] {}));
  EXPECT_FALSE(scheduler.runIfIdle(4, [&] { ran = true; }));
  EXPECT_FALSE(ran);
  scheduler.stopTrace(4);
}

namespace {
/// A chain of `n` 128x128 matmuls after `first` (its id first + 1 .. first + n): work that runs
/// after whatever comes before it in a program, one unit per matmul.
std::vector<Instruction> matmulChain(uint64_t first, int n) {
  std::vector<Instruction> out = {upload(first, std::vector<float>(128 * 128, 0.01f), {128, 128})};
  for (uint64_t i = first + 1; i <= first + uint64_t(n); ++i) out.push_back(op(OpCode::Matmul, i, {i - 1, first}));
  return out;
}
float firstFloat(const Fetched &f) {
  float v = 0;
  if (f.bytes.size() >= 4) std::memcpy(&v, f.bytes.data(), 4);
  return v;
}
} // namespace

TEST(Scheduler, AFetchAnswersOnceItsTensorIsMadeNotAfterTheWholeProgram) {
  // loss.item() after optimizer.step(): the loss is made first, the step's work follows in the
  // same program. The fetch reads the loss as soon as it exists, before the rest runs.
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  std::vector<Instruction> step = {upload(1, {0.5f}, {1}), op(OpCode::Exp, 2, {1})};
  for (Instruction &i : matmulChain(100, 40)) step.push_back(std::move(i));
  Latch all(2);
  scheduler.submit(1, 1, program(step), [&] { all.done(); });
  float fetched = 0;
  bool chainDone = true;
  scheduler.whenFinal(1, 2, [&] {
    fetched = firstFloat(ex.fetch(2));
    chainDone = ex.ownedBy(140, 1);
    all.done();
  });
  scheduler.start();
  ASSERT_TRUE(all.wait());
  EXPECT_FLOAT_EQ(fetched, std::exp(0.5f));
  EXPECT_FALSE(chainDone); // answered before the matmuls ran
  EXPECT_EQ(scheduler.counters().fetchesMidProgram, 1u);
}

TEST(Scheduler, AFetchWaitsForTheLastInstructionThatWritesOrFreesItsTensor) {
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  // Tensor 2 is made, then made again from another input two programs later; tensor 3 is made
  // and then freed. The fetches see the last write and the free, as a fence would.
  scheduler.submit(1, 1, program({upload(1, {0.5f}, {1}), op(OpCode::Exp, 2, {1}), upload(3, {7}, {1})}), [] {});
  scheduler.submit(1, 1, program(matmulChain(100, 5)), [] {});
  scheduler.submit(1, 1, program({upload(4, {1.5f}, {1}), op(OpCode::Exp, 2, {4}), op(OpCode::Free, 0, {3})}), [] {});
  scheduler.submit(1, 1, program(matmulChain(200, 20)), [] {});
  Latch all(2);
  float two = 0;
  std::string threeError;
  bool laterDone = true;
  scheduler.whenFinal(1, 2, [&] {
    two = firstFloat(ex.fetch(2));
    all.done();
  });
  scheduler.whenFinal(1, 3, [&] {
    threeError = ex.ownedBy(3, 1) ? "" : "gone";
    laterDone = ex.ownedBy(220, 1);
    all.done();
  });
  scheduler.start();
  ASSERT_TRUE(all.wait());
  EXPECT_FLOAT_EQ(two, std::exp(1.5f)); // the second write
  EXPECT_EQ(threeError, "gone");
  EXPECT_FALSE(laterDone);
}

TEST(Scheduler, AFetchOfATensorNothingQueuedWritesAnswersAtTheNextUnit) {
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  scheduler.start();
  Latch made(1);
  scheduler.submit(1, 1, program({upload(1, {2.5f}, {1})}), [&] { made.done(); });
  ASSERT_TRUE(made.wait());
  Latch all(2);
  scheduler.submit(1, 1, program(matmulChain(100, 200)), [&] { all.done(); });
  float one = 0;
  bool chainDone = true;
  scheduler.whenFinal(1, 1, [&] {
    one = firstFloat(ex.fetch(1));
    chainDone = ex.ownedBy(300, 1);
    all.done();
  });
  ASSERT_TRUE(all.wait());
  EXPECT_FLOAT_EQ(one, 2.5f);
  EXPECT_FALSE(chainDone);
}

TEST(Scheduler, WithAClientCoreUnitsLeaveACoreFreeFromAnAnswerToTheNextSubmit) {
  Executor ex(ExecutorOptions{"", false});
  SchedulerOptions options;
  options.clientCore = true;
  Scheduler scheduler(ex, options);
  // The fetch of tensor 2 is answered after the second unit: the client issues its next step
  // while the last two units run, and they leave it its core.
  Latch ran(2);
  scheduler.submit(1, 1,
                   program({upload(1, {1}, {1}), op(OpCode::Exp, 2, {1}), op(OpCode::Exp, 3, {2}), op(OpCode::Exp, 4, {3})}),
                   [&] { ran.done(); });
  scheduler.whenFinal(1, 2, [&] { ran.done(); });
  scheduler.start();
  ASSERT_TRUE(ran.wait());
  EXPECT_EQ(scheduler.counters().units, 4u);
  EXPECT_EQ(scheduler.counters().unitsCoreLeft, 2u);
  // The next submit ends it: with no answer since, every unit runs on every core.
  Latch again(1);
  scheduler.submit(1, 1, program({op(OpCode::Exp, 5, {4}), op(OpCode::Exp, 6, {5})}), [&] { again.done(); });
  ASSERT_TRUE(again.wait());
  EXPECT_EQ(scheduler.counters().units, 6u);
  EXPECT_EQ(scheduler.counters().unitsCoreLeft, 2u);

  // An answer followed by frees alone (a generated token's probabilities, then the frees of
  // its intermediates): the frees leave nothing free, so the kernel threads stay awake for the
  // next program.
  Latch entered(1), hold(1), trailing(2);
  scheduler.fence(2, [&] { // holds the scheduler's thread while the program and its fetch are queued
    entered.done();
    hold.wait();
  });
  ASSERT_TRUE(entered.wait());
  scheduler.submit(1, 1,
                   program({op(OpCode::Exp, 7, {6}), op(OpCode::Exp, 8, {7}), op(OpCode::Free, 0, {7}),
                            op(OpCode::Free, 0, {5})}),
                   [&] { trailing.done(); });
  scheduler.whenFinal(1, 8, [&] { trailing.done(); });
  hold.done();
  ASSERT_TRUE(trailing.wait());
  EXPECT_EQ(scheduler.counters().units, 10u);
  EXPECT_EQ(scheduler.counters().unitsCoreLeft, 2u);

  Executor plain(ExecutorOptions{"", false}); // without the option, never
  Scheduler without(plain);
  Latch done(2);
  without.submit(1, 1, program({upload(1, {1}, {1}), op(OpCode::Exp, 2, {1}), op(OpCode::Exp, 3, {2})}),
                 [&] { done.done(); });
  without.whenFinal(1, 1, [&] { done.done(); });
  without.start();
  ASSERT_TRUE(done.wait());
  EXPECT_EQ(without.counters().unitsCoreLeft, 0u);
}

TEST(Scheduler, AFetchBehindMoreThanTheScanLimitWaitsForEverything) {
  // A fetch searches at most kMaxFinalScan queued instructions for its tensor's writer (each
  // fetch's cost on the worker's event loop stays bounded); beyond that it is a fence.
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  std::vector<Instruction> long_ = {upload(1, {0.5f}, {1}), op(OpCode::Exp, 2, {1})};
  for (uint64_t i = 3; i < 3 + Scheduler::kMaxFinalScan; ++i) long_.push_back(op(OpCode::Neg, i, {i - 1}));
  uint64_t last = 2 + Scheduler::kMaxFinalScan;
  scheduler.submit(1, 1, program(long_), [] {});
  Latch fetched(1);
  bool lastMade = false;
  scheduler.whenFinal(1, 2, [&] {
    lastMade = ex.ownedBy(last, 1);
    fetched.done();
  });
  scheduler.start();
  ASSERT_TRUE(fetched.wait());
  EXPECT_TRUE(lastMade);
  EXPECT_EQ(scheduler.counters().fetchesMidProgram, 0u);
}

TEST(Scheduler, TheScanLimitCountsEveryTensorAFreeNames) {
  // Nine frees of 1,024 (absent) tensors each after the writer: few instructions, but 9,216 ids
  // to look at, over kMaxFinalScan. The fetch waits for everything rather than search them all.
  Executor ex(ExecutorOptions{"", false});
  Scheduler scheduler(ex);
  std::vector<Instruction> program_ = {upload(1, {0.5f}, {1}), op(OpCode::Exp, 2, {1})};
  for (uint64_t f = 0; f < 9; ++f) {
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < 1024; ++i) ids.push_back(100000 + f * 1024 + i);
    program_.push_back(op(OpCode::Free, 0, ids));
  }
  program_.push_back(op(OpCode::Exp, 3, {2}));
  scheduler.submit(1, 1, program(program_), [] {});
  Latch fetched(1);
  bool lastMade = false;
  scheduler.whenFinal(1, 2, [&] {
    lastMade = ex.ownedBy(3, 1);
    fetched.done();
  });
  scheduler.start();
  ASSERT_TRUE(fetched.wait());
  EXPECT_TRUE(lastMade);
  EXPECT_EQ(scheduler.counters().fetchesMidProgram, 0u);
}

TEST(CPUDevice, LeavingACoreFreeChangesNoGEMMsBits) {
  // A weight gradient's GEMM (k = 2048) on every thread and on one thread fewer: MKL splits k
  // differently by thread count unless in strict CNR mode, which the CPU device turns on.
  std::unique_ptr<Device> device = createCPUDevice(2);
  int64_t m = 128, n = 128, k = 2048;
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), wide(size_t(m * n)), narrow(size_t(m * n));
  uint32_t state = 1;
  auto next = [&] { return float((state = state * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f; };
  for (float &x : a) x = next();
  for (float &x : b) x = next();
  TensorType ta{DType::Float32, {m, k}}, tb{DType::Float32, {k, n}}, tc{DType::Float32, {m, n}};
  device->matmul(ta, a.data(), tb, b.data(), tc, wide.data(), {});
  device->leaveCoreFree(true);
  device->matmul(ta, a.data(), tb, b.data(), tc, narrow.data(), {});
  device->leaveCoreFree(false);
  EXPECT_EQ(std::memcmp(wide.data(), narrow.data(), wide.size() * sizeof(float)), 0);
}

TEST(Scheduler, AnExecutorThatPollsForWorkStillRunsWhatArrivesWhilePollingAfterAndInline) {
  // idleSpinUs: once its work runs out the scheduler's thread polls for 50 ms before it sleeps.
  // Programs that arrive while it polls, after it went to sleep, and back to back all run, and
  // runIfIdle still runs inline while it polls (it touches nothing then).
  Executor ex(ExecutorOptions{"", false});
  SchedulerOptions options;
  options.idleSpinUs = 50000;
  Scheduler scheduler(ex, options);
  scheduler.start();
  uint64_t id = 1;
  for (int delayMs : {0, 0, 2, 10, 80, 0, 120, 1}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    Latch done(1);
    scheduler.submit(1, 1, program({upload(id, {1, 2}, {2}), op(OpCode::Exp, id + 1, {id})}), [&] { done.done(); });
    ASSERT_TRUE(done.wait()) << "a program submitted " << delayMs << " ms after the last one never ran";
    id += 2;
  }
  bool inline_ = false;
  for (int i = 0; i < 6000 && !inline_; ++i) { // polling (50 ms) or asleep, it counts as parked
    inline_ = scheduler.runIfIdle(1, [] {});
    if (!inline_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(inline_);
  Latch last(1);
  scheduler.submit(1, 1, program({op(OpCode::Exp, id, {id - 1})}), [&] { last.done(); });
  ASSERT_TRUE(last.wait());
  EXPECT_EQ(ex.stats().liveTensors, id);
}
