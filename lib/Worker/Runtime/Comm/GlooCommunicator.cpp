// The Gloo data plane: one gloo::Context per worker group, made on first use with the
// rendezvous relayed by the dispatcher's key-value store. Gloo moves host memory: a CPU
// worker's buffers are used in place, a GPU worker's (one without NCCL) are staged through host
// copies here, so the executor writes each collective once, on device buffers.
#include "gt/Worker/Communicator.h"
#include "gt/Worker/Device.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace gt::worker {
namespace {

/// gloo's Store on top of the dispatcher's store, every key under `prefix`.
class PrefixedStore : public gloo::rendezvous::Store {
public:
  PrefixedStore(std::shared_ptr<KeyValueStore> store, std::string prefix)
      : store_(std::move(store)), prefix_(std::move(prefix)) {}
  void set(const std::string &key, const std::vector<char> &data) override {
    store_->set(prefix_ + key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string &key) override {
    std::string v = store_->get(prefix_ + key);
    return std::vector<char>(v.begin(), v.end());
  }
  void wait(const std::vector<std::string> &keys) override {
    for (const std::string &k : keys) store_->get(prefix_ + k);
  }

private:
  std::shared_ptr<KeyValueStore> store_;
  std::string prefix_;
};

std::string groupKey(const std::vector<int64_t> &group) {
  std::string key;
  for (int64_t w : group) key += (key.empty() ? "" : ",") + std::to_string(w);
  return key;
}

std::chrono::milliseconds collectiveTimeout() {
  const char *s = std::getenv("GT_COLLECTIVE_TIMEOUT");
  long seconds = s && *s ? std::strtol(s, nullptr, 10) : 300;
  return std::chrono::milliseconds(std::max(1L, seconds) * 1000);
}

class GlooCommunicator final : public Communicator {
public:
  GlooCommunicator(int64_t self, const std::string &address, std::shared_ptr<KeyValueStore> store, Device *memory)
      : self_(self), store_(std::move(store)), memory_(memory), timeout_(collectiveTimeout()) {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;
    device_ = gloo::transport::tcp::CreateDevice(attr);
  }

  // ---------------------------------------------------------------- on the worker's buffers
  // Each operation runs in place on host memory, or on host copies of device memory.

  void allReduce(void *data, size_t count, DType dtype, ReduceKind reduce, const std::vector<int64_t> &group) override {
    if (!staged()) return hostAllReduce(data, count, dtype, reduce, group);
    std::vector<char> host = download(data, count * dtypeSize(dtype));
    hostAllReduce(host.data(), count, dtype, reduce, group);
    upload(data, host);
  }
  void allGather(const void *in, void *out, const std::vector<size_t> &bytes, const std::vector<int64_t> &group) override {
    if (!staged()) return hostAllGather(in, out, bytes, group);
    std::vector<char> mine = download(in, bytes.at(rankIn(group))), all(total(bytes));
    hostAllGather(mine.data(), all.data(), bytes, group);
    upload(out, all);
  }
  void reduceScatter(void *data, void *out, const std::vector<size_t> &counts, DType dtype, ReduceKind reduce,
                     const std::vector<int64_t> &group) override {
    if (!staged()) return hostReduceScatter(data, out, counts, dtype, reduce, group);
    size_t elem = dtypeSize(dtype);
    std::vector<char> blocks = download(data, total(counts) * elem), mine(counts.at(rankIn(group)) * elem);
    hostReduceScatter(blocks.data(), mine.data(), counts, dtype, reduce, group);
    upload(out, mine);
  }
  void allToAll(const void *in, const std::vector<size_t> &inBytes, void *out, const std::vector<size_t> &outBytes,
                const std::vector<int64_t> &group) override {
    if (!staged()) return hostAllToAll(in, inBytes, out, outBytes, group);
    std::vector<char> given = download(in, total(inBytes)), taken(total(outBytes));
    hostAllToAll(given.data(), inBytes, taken.data(), outBytes, group);
    upload(out, taken);
  }
  void send(const void *data, size_t bytes, int64_t peer) override {
    if (!staged()) return hostSend(data, bytes, peer);
    std::vector<char> host = download(data, bytes);
    hostSend(host.data(), bytes, peer);
  }
  void recv(void *data, size_t bytes, int64_t peer) override {
    if (!staged()) return hostRecv(data, bytes, peer);
    std::vector<char> host(bytes);
    hostRecv(host.data(), bytes, peer);
    upload(data, host);
  }
  void sendFlag(uint8_t flag, int64_t peer) override { hostSend(&flag, 1, peer); }
  uint8_t recvFlag(int64_t peer) override {
    uint8_t flag = 0;
    hostRecv(&flag, 1, peer);
    return flag;
  }
  bool any(bool flag, const std::vector<int64_t> &group) override {
    int32_t v = flag ? 1 : 0;
    hostAllReduce(&v, 1, DType::Int32, ReduceKind::Max, group);
    bytes_ -= 4; // bookkeeping, not tensor bytes
    return v != 0;
  }
  std::vector<std::pair<std::string, double>> counters() const override {
    return {{"comm_groups", double(groups_.size())},
            {"collective_bytes", bytes_},
            {"p2p_bytes_sent", p2pSent_},
            {"p2p_bytes_received", p2pReceived_}};
  }

private:
  bool staged() const { return memory_ && !memory_->hostMemory(); }
  std::vector<char> download(const void *device, size_t bytes) {
    std::vector<char> host(bytes);
    if (bytes) memory_->download(host.data(), device, bytes);
    return host;
  }
  void upload(void *device, const std::vector<char> &host) {
    if (!host.empty()) memory_->upload(device, host.data(), host.size());
  }
  static size_t total(const std::vector<size_t> &sizes) {
    size_t sum = 0;
    for (size_t s : sizes) sum += s;
    return sum;
  }
  size_t rankIn(const std::vector<int64_t> &group) const {
    auto it = std::find(group.begin(), group.end(), self_);
    if (it == group.end()) throw std::runtime_error("worker " + std::to_string(self_) + " is not in the group");
    return size_t(it - group.begin());
  }

  // ---------------------------------------------------------------- on host memory

  void hostAllReduce(void *data, size_t count, DType dtype, ReduceKind reduce, const std::vector<int64_t> &group) {
    Group &g = connect(group);
    guard(g, [&] {
      gloo::AllreduceOptions opts(g.context);
      size_t elem = dtypeSize(dtype);
      // Typed by element size, so gloo's segments never cut an element; our own combine.
      switch (elem) {
      case 1: opts.setOutput(static_cast<uint8_t *>(data), count); break;
      case 2: opts.setOutput(static_cast<uint16_t *>(data), count); break;
      case 4: opts.setOutput(static_cast<uint32_t *>(data), count); break;
      default: opts.setOutput(static_cast<uint64_t *>(data), count); break;
      }
      opts.setReduceFunction([dtype, reduce, elem](void *out, const void *a, const void *b, size_t n) {
        if (out == b) return combineParts(dtype, reduce, out, a, n); // sum, max and min commute
        if (out != a) std::memmove(out, a, n * elem);
        combineParts(dtype, reduce, out, b, n);
      });
      opts.setTag(g.nextTag++);
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
      bytes_ += double(count * elem);
    });
  }

  void hostAllGather(const void *in, void *out, const std::vector<size_t> &bytes, const std::vector<int64_t> &group) {
    Group &g = connect(group);
    guard(g, [&] {
      gloo::AllgathervOptions opts(g.context);
      size_t mine = bytes.at(size_t(g.context->rank));
      opts.setInput(const_cast<uint8_t *>(static_cast<const uint8_t *>(in)), mine);
      opts.setOutput(static_cast<uint8_t *>(out), std::vector<size_t>(bytes));
      opts.setTag(g.nextTag++);
      opts.setTimeout(timeout_);
      gloo::allgatherv(opts);
      bytes_ += double(mine);
    });
  }

  // A ring: at step s member r sends its running block (r - s - 1) to member r + 1 and folds
  // block (r - s - 2), received from member r - 1, into its own; after n - 1 steps block r is
  // the reduction of every member's block r (Patarasuk & Yuan 2009).
  void hostReduceScatter(void *data, void *out, const std::vector<size_t> &counts, DType dtype, ReduceKind reduce,
                         const std::vector<int64_t> &group) {
    Group &g = connect(group);
    guard(g, [&] {
      size_t elem = dtypeSize(dtype), n = counts.size();
      if (n != group.size()) throw std::logic_error("reduce_scatter: one block per member");
      std::vector<size_t> offset(n + 1, 0);
      for (size_t r = 0; r < n; ++r) offset[r + 1] = offset[r] + counts[r] * elem;
      char *bytes = static_cast<char *>(data);
      size_t rank = size_t(g.context->rank), next = (rank + 1) % n, prev = (rank + n - 1) % n;
      std::vector<char> incoming(std::max<size_t>(1, *std::max_element(counts.begin(), counts.end()) * elem));
      auto inbox = g.context->createUnboundBuffer(incoming.data(), incoming.size());
      for (size_t step = 0; step + 1 < n; ++step) {
        // What this member gives at a step is what the next one takes: both skip empty blocks.
        size_t give = (rank + 2 * n - step - 1) % n, take = (rank + 2 * n - step - 2) % n;
        uint64_t slot = g.nextTag++;
        std::unique_ptr<gloo::transport::UnboundBuffer> outbox;
        if (counts[give]) {
          outbox = g.context->createUnboundBuffer(bytes + offset[give], counts[give] * elem);
          outbox->send(int(next), slot);
        }
        if (counts[take]) {
          inbox->recv(int(prev), slot, 0, counts[take] * elem);
          inbox->waitRecv(timeout_);
          combineParts(dtype, reduce, bytes + offset[take], incoming.data(), counts[take]);
        }
        if (outbox) outbox->waitSend(timeout_);
      }
      std::memcpy(out, bytes + offset[rank], counts[rank] * elem);
      bytes_ += double(offset[n]);
    });
  }

  void hostAllToAll(const void *in, const std::vector<size_t> &inBytes, void *out, const std::vector<size_t> &outBytes,
                    const std::vector<int64_t> &group) {
    Group &g = connect(group);
    guard(g, [&] {
      gloo::AlltoallvOptions opts(g.context);
      std::vector<int64_t> sent(inBytes.begin(), inBytes.end()), received(outBytes.begin(), outBytes.end());
      opts.setInput(const_cast<uint8_t *>(static_cast<const uint8_t *>(in)), sent);
      opts.setOutput(static_cast<uint8_t *>(out), received);
      opts.setTag(g.nextTag++);
      opts.setTimeout(timeout_);
      gloo::alltoallv(opts);
      for (size_t b : inBytes) bytes_ += double(b);
    });
  }

  void hostSend(const void *data, size_t bytes, int64_t peer) {
    Group &g = pair(peer);
    guard(g, [&] {
      auto buffer = g.context->createUnboundBuffer(const_cast<void *>(data), bytes);
      buffer->send(peerRank(peer), uint64_t(g.nextTag++));
      buffer->waitSend(timeout_);
      p2pSent_ += double(bytes);
    });
  }

  void hostRecv(void *data, size_t bytes, int64_t peer) {
    Group &g = pair(peer);
    guard(g, [&] {
      auto buffer = g.context->createUnboundBuffer(data, bytes);
      buffer->recv(peerRank(peer), uint64_t(g.nextTag++));
      buffer->waitRecv(timeout_);
      p2pReceived_ += double(bytes);
    });
  }

  struct Group {
    std::shared_ptr<gloo::rendezvous::Context> context;
    uint32_t nextTag = 0;
    std::string broken; ///< why the group cannot be used any more
  };

  Group &connect(const std::vector<int64_t> &group) {
    std::string key = groupKey(group);
    auto it = groups_.find(key);
    if (it != groups_.end()) {
      if (it->second.broken.empty()) return it->second;
      // A collective of this group failed (timed out, a peer went away): only that op and what
      // depends on it are lost. The members that saw it fail meet again in a new generation
      // of the group, under rendezvous keys of its own.
      groups_.erase(it);
      generations_[key]++;
    }
    auto rank = std::find(group.begin(), group.end(), self_);
    if (rank == group.end())
      throw std::runtime_error("worker " + std::to_string(self_) + " is not in the group [" + key + "]");
    Group g;
    g.context = std::make_shared<gloo::rendezvous::Context>(int(rank - group.begin()), int(group.size()));
    g.context->setTimeout(timeout_);
    try {
      PrefixedStore store(store_, "gloo/[" + key + "]/" + std::to_string(generations_[key]) + "/");
      g.context->connectFullMesh(store, device_);
    } catch (const std::exception &e) {
      throw std::runtime_error("connecting the workers [" + key + "] failed: " + e.what());
    }
    return groups_.emplace(key, std::move(g)).first->second;
  }

  Group &pair(int64_t peer) {
    if (peer == self_) throw std::runtime_error("send/recv to itself (worker " + std::to_string(peer) + ")");
    return connect({std::min(self_, peer), std::max(self_, peer)});
  }
  int peerRank(int64_t peer) const { return peer < self_ ? 0 : 1; }

  template <typename F> void guard(Group &g, F f) {
    try {
      f();
    } catch (const std::exception &e) {
      g.broken = std::string("the connection between workers broke (a worker died?): ") + e.what();
      throw std::runtime_error(g.broken);
    }
  }

  int64_t self_;
  std::shared_ptr<KeyValueStore> store_;
  Device *memory_; ///< where the buffers live (nullptr: host memory)
  std::shared_ptr<gloo::transport::Device> device_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, Group> groups_;
  std::map<std::string, int> generations_; ///< groups reconnected after a failure, and how often
  double bytes_ = 0, p2pSent_ = 0, p2pReceived_ = 0;
};

} // namespace

std::unique_ptr<Communicator> createGlooCommunicator(int64_t self, const std::string &address,
                                                     std::shared_ptr<KeyValueStore> store, Device *memory) {
  return std::make_unique<GlooCommunicator>(self, address, std::move(store), memory);
}

} // namespace gt::worker
