// The Gloo data plane: several communicators in one process, one thread each, over loopback,
// with blocks of unequal size (empty ones too) as uneven splits give; then the executor's
// exchange ops over it, a failed input among them.
#include "gt/Worker/Communicator.h"
#include "gt/Worker/Device.h"
#include "gt/Worker/Executor.h"

#include "Programs.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

using namespace gt;
using namespace gt::worker;

namespace {
/// The rendezvous store in memory: get waits for the key, as the dispatcher's does.
struct WaitingStore : KeyValueStore {
  std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, std::string> values;
  void set(const std::string &key, const std::string &value) override {
    std::lock_guard lock(mu);
    values[key] = value;
    changed.notify_all();
  }
  std::string get(const std::string &key) override {
    std::unique_lock lock(mu);
    if (!changed.wait_for(lock, std::chrono::seconds(30), [&] { return values.count(key) > 0; }))
      throw std::runtime_error("no key " + key);
    return values[key];
  }
};

/// Device memory that is not host memory, as a GPU's: bytes are stored XOR 0x5A, so a
/// communicator that used its pointers in place, without download/upload, would move garbage.
/// Thread-safe: the ranks of a test group share one.
struct ScrambledMemory : Device {
  static constexpr std::byte kKey{0x5A};
  std::mutex mu;
  std::string describe() const override { return "scrambled"; }
  CompilerTarget target() const override { return {}; }
  bool hostMemory() const override { return false; }
  Buffer allocate(size_t bytes) override {
    return Buffer{std::shared_ptr<std::byte>(new std::byte[std::max<size_t>(bytes, 1)], std::default_delete<std::byte[]>()), bytes};
  }
  void upload(void *dst, const void *src, size_t bytes) override {
    std::lock_guard lock(mu);
    for (size_t i = 0; i < bytes; ++i) static_cast<std::byte *>(dst)[i] = static_cast<const std::byte *>(src)[i] ^ kKey;
  }
  void download(void *dst, const void *src, size_t bytes) override {
    std::lock_guard lock(mu);
    for (size_t i = 0; i < bytes; ++i) static_cast<std::byte *>(dst)[i] = static_cast<const std::byte *>(src)[i] ^ kKey;
  }
  void copy(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void setScalar(void *, uint64_t) override { throw std::logic_error("not used"); }
  void matmul(const TensorType &, const void *, const TensorType &, const void *, const TensorType &, void *, Transposed) override {
    throw std::logic_error("not used");
  }
};

/// Runs body(rank, communicator) for ranks 0..n-1 at once; the first error each rank raised.
/// The communicators' buffers are in `memory` (nullptr: host memory).
std::vector<std::string> runGroup(int n, const std::function<void(int, Communicator &)> &body,
                                  Device *memory = nullptr) {
  auto store = std::make_shared<WaitingStore>();
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r) {
    try {
      comms.push_back(createGlooCommunicator(r, "127.0.0.1", store, memory));
    } catch (const std::runtime_error &e) {
      return {std::string("SKIP ") + e.what()}; // a build without Gloo
    }
  }
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, *comms[size_t(r)]);
      } catch (const std::exception &e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (std::thread &t : threads) t.join();
  return errors;
}

#define RUN_GROUP(n, ...)                                                                                              \
  do {                                                                                                                 \
    std::vector<std::string> errors = runGroup(n, __VA_ARGS__);                                                        \
    if (errors.size() == 1 && errors[0].rfind("SKIP ", 0) == 0) GTEST_SKIP() << errors[0];                             \
    for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;                               \
  } while (0)
} // namespace

TEST(Gloo, ReduceScatterOfUnevenBlocks) {
  // Blocks of 3, 0, 2 and 1 elements; member r's element i is 100 * r + i.
  const std::vector<size_t> counts = {3, 0, 2, 1};
  const int n = 4;
  std::vector<std::vector<float>> got(n);
  RUN_GROUP(n, [&](int r, Communicator &comm) {
    std::vector<float> data(6);
    for (size_t i = 0; i < data.size(); ++i) data[i] = float(100 * r + int(i));
    got[size_t(r)].resize(counts[size_t(r)]);
    comm.reduceScatter(data.data(), got[size_t(r)].data(), counts, DType::Float32, ReduceKind::Sum, {0, 1, 2, 3});
  });
  // sum over r of (100 r + i) = 600 + 4 i, for the elements i of each member's own block
  EXPECT_EQ(got[0], (std::vector<float>{600, 604, 608}));
  EXPECT_TRUE(got[1].empty());
  EXPECT_EQ(got[2], (std::vector<float>{612, 616}));
  EXPECT_EQ(got[3], (std::vector<float>{620}));
}

TEST(Gloo, ReduceScatterMaxOverAGroupOfWorkerIds) {
  // Members are named by worker ids (5, 2, 7: rank order is the group's order, not the ids').
  const std::vector<int64_t> group = {5, 2, 7};
  const std::vector<size_t> counts = {1, 2, 1};
  std::map<int, std::vector<int64_t>> got;
  std::mutex mu;
  auto store = std::make_shared<WaitingStore>();
  std::vector<std::unique_ptr<Communicator>> comms;
  try {
    for (int64_t w : group) comms.push_back(createGlooCommunicator(w, "127.0.0.1", store));
  } catch (const std::runtime_error &e) {
    GTEST_SKIP() << e.what();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      std::vector<int64_t> data = {r, -r, 10 * r, r == 1 ? 99 : 0}, mine(counts[size_t(r)]);
      comms[size_t(r)]->reduceScatter(data.data(), mine.data(), counts, DType::Int64, ReduceKind::Max, group);
      std::lock_guard lock(mu);
      got[r] = mine;
    });
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(got[0], (std::vector<int64_t>{2}));
  EXPECT_EQ(got[1], (std::vector<int64_t>{0, 20}));
  EXPECT_EQ(got[2], (std::vector<int64_t>{99}));
}

TEST(Gloo, AllToAllOfUnevenBlocks) {
  // Member r gives member q (r + q) % 3 bytes, each the byte 16 r + q: empty blocks included.
  const int n = 3;
  auto size = [](int r, int q) { return size_t((r + q) % 3); };
  std::vector<std::string> got(n);
  RUN_GROUP(n, [&](int r, Communicator &comm) {
    std::vector<size_t> give, take;
    std::string in;
    for (int q = 0; q < n; ++q) {
      give.push_back(size(r, q));
      take.push_back(size(q, r));
      in += std::string(size(r, q), char(16 * r + q));
    }
    std::string out(size(0, r) + size(1, r) + size(2, r), '\0');
    comm.allToAll(in.data(), give, out.data(), take, {0, 1, 2});
    got[size_t(r)] = out;
  });
  for (int r = 0; r < n; ++r) {
    std::string want;
    for (int q = 0; q < n; ++q) want += std::string(size(q, r), char(16 * q + r));
    EXPECT_EQ(got[size_t(r)], want) << "member " << r;
  }
}

TEST(Gloo, OneMemberGroups) {
  RUN_GROUP(1, [](int, Communicator &comm) {
    std::vector<float> data = {1, 2, 3}, out(3);
    comm.reduceScatter(data.data(), out.data(), {3}, DType::Float32, ReduceKind::Sum, {0});
    EXPECT_EQ(out, (std::vector<float>{1, 2, 3}));
    std::string in = "abc", got(3, '\0');
    comm.allToAll(in.data(), {3}, got.data(), {3}, {0});
    EXPECT_EQ(got, "abc");
  });
}

// A GPU worker without NCCL hands Gloo device memory: each operation stages it through host
// copies (and the failure flags and `any`, which are host values, are not staged).
TEST(Gloo, StagesDeviceMemoryThatIsNotHostMemory) {
  const int n = 2;
  ScrambledMemory device;
  auto onDevice = [&](const std::vector<float> &values) {
    Buffer b = device.allocate(values.size() * sizeof(float));
    device.upload(b.data.get(), values.data(), b.bytes);
    return b;
  };
  auto onHost = [&](const Buffer &b) {
    std::vector<float> values(b.bytes / sizeof(float));
    device.download(values.data(), b.data.get(), b.bytes);
    return values;
  };
  std::vector<std::vector<float>> reduced(n), gathered(n), scattered(n), received(n);
  std::vector<int> sawFailure(n);
  RUN_GROUP(n, [&](int r, Communicator &comm) {
    Buffer data = onDevice({float(r + 1), 10.0f * float(r + 1)});
    comm.allReduce(data.data.get(), 2, DType::Float32, ReduceKind::Sum, {0, 1});
    reduced[size_t(r)] = onHost(data);
    Buffer mine = onDevice({float(r)}), all = device.allocate(2 * sizeof(float));
    comm.allGather(mine.data.get(), all.data.get(), {sizeof(float), sizeof(float)}, {0, 1});
    gathered[size_t(r)] = onHost(all);
    Buffer blocks = onDevice({1.0f + float(r), 2.0f + float(r)}), own = device.allocate(sizeof(float));
    comm.reduceScatter(blocks.data.get(), own.data.get(), {1, 1}, DType::Float32, ReduceKind::Max, {0, 1});
    scattered[size_t(r)] = onHost(own);
    Buffer p2p = r == 0 ? onDevice({42.0f}) : device.allocate(sizeof(float));
    if (r == 0) comm.send(p2p.data.get(), sizeof(float), 1);
    else comm.recv(p2p.data.get(), sizeof(float), 0);
    received[size_t(r)] = onHost(p2p);
    sawFailure[size_t(r)] = comm.any(r == 1, {0, 1});
  }, &device);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(reduced[size_t(r)], (std::vector<float>{3, 30})) << "rank " << r;
    EXPECT_EQ(gathered[size_t(r)], (std::vector<float>{0, 1})) << "rank " << r;
    EXPECT_EQ(scattered[size_t(r)], (std::vector<float>{float(r == 0 ? 2 : 3)})) << "rank " << r;
    EXPECT_EQ(sawFailure[size_t(r)], 1) << "rank " << r;
  }
  EXPECT_EQ(received[1], (std::vector<float>{42}));
}

// The executor's exchange ops over Gloo: a member whose input failed still takes part, every
// member's result is poisoned (its own error on that member, "an input of this collective
// failed on another worker" on the others), and the group keeps working afterwards.
TEST(Exchange, AFailedInputPoisonsEveryMembersResult) {
  const int n = 3;
  std::vector<std::map<uint64_t, Fetched>> got(n);
  std::mutex made; // one executor at a time: LLVM's target registration is not thread-safe
  RUN_GROUP(n, [&](int r, Communicator &comm) {
    std::unique_ptr<Executor> owner;
    {
      std::lock_guard lock(made);
      owner = std::make_unique<Executor>("");
    }
    Executor &ex = *owner;
    ex.setCommunicator(std::shared_ptr<Communicator>(&comm, [](Communicator *) {}), r);
    std::vector<float> mine(6);
    for (int i = 0; i < 6; ++i) mine[size_t(i)] = float(10 * r + i);
    // Each member holds 2 of the 6 rows of a (6, 3) tensor. Member 1's first input is 3 floats
    // for its 6 elements: poisoned on that worker only.
    ex.run(r == 1 ? test::upload(1, {1, 2, 3}, {2, 3}) : test::upload(1, mine, {2, 3}));
    ex.run(test::upload(2, mine, {2, 3}));
    auto group = [](Shape shape, std::vector<int64_t> axes = {}) {
      OpAttrs a;
      a.workers = {0, 1, 2};
      a.shape = std::move(shape);
      a.axes = std::move(axes);
      a.reduce = uint8_t(ReduceKind::Sum);
      return a;
    };
    auto p2p = [](int64_t peer) {
      OpAttrs a;
      a.workers = {peer};
      a.shape = {2, 3};
      a.dtype = DType::Float32;
      return a;
    };
    for (uint64_t input : {1, 2}) { // the failed input, then a sound one on the same group
      uint64_t base = 10 * input;
      ex.run(test::op(OpCode::AllReduce, base, {input}, group({2, 3})));
      ex.run(test::op(OpCode::AllGather, base + 1, {input}, group({6, 3}, {0})));
      ex.run(test::op(OpCode::ReduceScatter, base + 2, {input}, group({2, 1}, {1}))); // column r
      ex.run(test::op(OpCode::AllToAll, base + 3, {input}, group({6, 1}, {1, 0})));   // rows -> columns
      if (r == 1) ex.run(test::op(OpCode::Send, base + 4, {input}, p2p(0)));
      if (r == 0) ex.run(test::op(OpCode::Recv, base + 4, {}, p2p(1)));
      for (uint64_t id = base; id <= base + 4; ++id) got[size_t(r)][id] = ex.fetch(id);
    }
  });
  std::string peerFailed = std::string(": ") + kPeerFailed;
  for (int r = 0; r < n; ++r) {
    const auto &f = got[size_t(r)];
    for (uint64_t id = 10; id <= 13; ++id) {
      const std::string &error = f.at(id).error;
      if (r == 1) EXPECT_NE(error.find("upload"), std::string::npos) << id << ": " << error;
      else EXPECT_NE(error.find(peerFailed), std::string::npos) << "member " << r << ", " << id << ": " << error;
    }
    if (r == 0) EXPECT_EQ(f.at(14).error, "recv from worker 1" + peerFailed);
    // The sound input: element i sums to 30 + 3i; member r's column of that sum; everyone's
    // rows; column r of every row (row 2q + k of the whole is 10q + 3k + column); a copy.
    for (uint64_t id = 20; id <= 23; ++id) EXPECT_EQ(f.at(id).error, "") << "member " << r << ", " << id;
    std::vector<float> sum, gathered, scattered, exchanged;
    for (int i = 0; i < 6; ++i) sum.push_back(float(30 + 3 * i));
    for (int q = 0; q < n; ++q)
      for (int i = 0; i < 6; ++i) gathered.push_back(float(10 * q + i));
    scattered = {sum[size_t(r)], sum[size_t(3 + r)]};
    for (int q = 0; q < n; ++q)
      for (int k = 0; k < 2; ++k) exchanged.push_back(float(10 * q + 3 * k + r));
    EXPECT_EQ(test::floats(f.at(20)), sum) << "member " << r;
    EXPECT_EQ(test::floats(f.at(21)), gathered) << "member " << r;
    EXPECT_EQ(test::floats(f.at(22)), scattered) << "member " << r;
    EXPECT_EQ(test::floats(f.at(23)), exchanged) << "member " << r;
    if (r == 0) EXPECT_EQ(test::floats(f.at(24)), (std::vector<float>{10, 11, 12, 13, 14, 15}));
  }
}

namespace {
/// Records which collectives and point-to-point operations reach it, by group.
struct RecordingCommunicator : Communicator {
  std::vector<std::vector<int64_t>> groups;
  void allReduce(void *, size_t, DType, ReduceKind, const std::vector<int64_t> &group) override { groups.push_back(group); }
  void allGather(const void *, void *, const std::vector<size_t> &, const std::vector<int64_t> &group) override {
    groups.push_back(group);
  }
  void reduceScatter(void *, void *, const std::vector<size_t> &, DType, ReduceKind,
                     const std::vector<int64_t> &group) override {
    groups.push_back(group);
  }
  void allToAll(const void *, const std::vector<size_t> &, void *, const std::vector<size_t> &,
                const std::vector<int64_t> &group) override {
    groups.push_back(group);
  }
  void send(const void *, size_t, int64_t peer) override { groups.push_back({peer}); }
  void recv(void *, size_t, int64_t peer) override { groups.push_back({peer}); }
  bool any(bool, const std::vector<int64_t> &group) override {
    groups.push_back(group);
    return false;
  }
  std::vector<std::pair<std::string, double>> counters() const override { return {{"comm_groups", 1}}; }
};
} // namespace

// Workers 0 and 1 share a GPU (NCCL refuses them as one group), worker 2 has its own: groups
// with both 0 and 1 go through Gloo, the rest through NCCL; point-to-point likewise by pair.
TEST(Routed, GroupsThatShareAGPUGoThroughGloo) {
  auto store = std::make_shared<WaitingStore>();
  for (auto [worker, gpu] : {std::pair{0, "GPU-aaaa"}, {1, "GPU-aaaa"}, {2, "GPU-bbbb"}}) {
    auto [key, value] = deviceEntry(worker, gpu);
    store->set(key, value);
  }
  auto ncclOwned = std::make_unique<RecordingCommunicator>(), glooOwned = std::make_unique<RecordingCommunicator>();
  RecordingCommunicator &nccl = *ncclOwned, &gloo = *glooOwned;
  auto comm = createRoutedCommunicator(0, store, std::move(ncclOwned), std::move(glooOwned));
  float x = 0;
  comm->allReduce(&x, 1, DType::Float32, ReduceKind::Sum, {0, 1, 2});
  comm->allReduce(&x, 1, DType::Float32, ReduceKind::Sum, {0, 2});
  comm->allGather(&x, &x, {4, 4}, {0, 1});
  comm->send(&x, 4, 2);
  comm->recv(&x, 4, 1);
  EXPECT_EQ(comm->any(true, {2, 0}), false);
  EXPECT_EQ(gloo.groups, (std::vector<std::vector<int64_t>>{{0, 1, 2}, {0, 1}, {1}}));
  EXPECT_EQ(nccl.groups, (std::vector<std::vector<int64_t>>{{0, 2}, {2}, {2, 0}}));
  std::map<std::string, double> counters;
  for (auto &[name, value] : comm->counters()) counters[name] = value;
  EXPECT_EQ(counters["comm_groups"], 2);    // summed over both
  EXPECT_EQ(counters["groups_on_gloo"], 2); // {0, 1, 2} and {0, 1}
}
