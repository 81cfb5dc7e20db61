// The Gloo data plane: one gloo::Context per worker group, made on first use with the
// rendezvous relayed by the dispatcher's key-value store.
#include "gt/Worker/Communicator.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
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
  GlooCommunicator(int64_t self, const std::string &address, std::shared_ptr<KeyValueStore> store)
      : self_(self), store_(std::move(store)), timeout_(collectiveTimeout()) {
    gloo::transport::tcp::attr attr;
    attr.hostname = address;
    device_ = gloo::transport::tcp::CreateDevice(attr);
  }

  void allReduce(void *data, size_t count, DType dtype, ReduceKind reduce, const std::vector<int64_t> &group) override {
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

  void allGather(const void *in, void *out, const std::vector<size_t> &bytes, const std::vector<int64_t> &group) override {
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

  void send(const void *data, size_t bytes, int64_t peer) override {
    Group &g = pair(peer);
    guard(g, [&] {
      auto buffer = g.context->createUnboundBuffer(const_cast<void *>(data), bytes);
      buffer->send(peerRank(peer), uint64_t(g.nextTag++));
      buffer->waitSend(timeout_);
      p2pSent_ += double(bytes);
    });
  }

  void recv(void *data, size_t bytes, int64_t peer) override {
    Group &g = pair(peer);
    guard(g, [&] {
      auto buffer = g.context->createUnboundBuffer(data, bytes);
      buffer->recv(peerRank(peer), uint64_t(g.nextTag++));
      buffer->waitRecv(timeout_);
      p2pReceived_ += double(bytes);
    });
  }

  bool any(bool flag, const std::vector<int64_t> &group) override {
    int32_t v = flag ? 1 : 0;
    allReduce(&v, 1, DType::Int32, ReduceKind::Max, group);
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
  struct Group {
    std::shared_ptr<gloo::rendezvous::Context> context;
    uint32_t nextTag = 0;
    std::string broken; ///< why the group cannot be used any more
  };

  Group &connect(const std::vector<int64_t> &group) {
    std::string key = groupKey(group);
    auto it = groups_.find(key);
    if (it != groups_.end()) {
      if (!it->second.broken.empty()) throw std::runtime_error(it->second.broken);
      return it->second;
    }
    auto rank = std::find(group.begin(), group.end(), self_);
    if (rank == group.end())
      throw std::runtime_error("worker " + std::to_string(self_) + " is not in the group [" + key + "]");
    Group g;
    g.context = std::make_shared<gloo::rendezvous::Context>(int(rank - group.begin()), int(group.size()));
    g.context->setTimeout(timeout_);
    try {
      PrefixedStore store(store_, "gloo/[" + key + "]/");
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
  std::shared_ptr<gloo::transport::Device> device_;
  std::chrono::milliseconds timeout_;
  std::map<std::string, Group> groups_;
  double bytes_ = 0, p2pSent_ = 0, p2pReceived_ = 0;
};

} // namespace

std::unique_ptr<Communicator> createGlooCommunicator(int64_t self, const std::string &address,
                                                     std::shared_ptr<KeyValueStore> store) {
  return std::make_unique<GlooCommunicator>(self, address, std::move(store));
}

} // namespace gt::worker
