// Collectives of a CUDA worker that has both NCCL and Gloo: NCCL for a group whose members are
// on distinct GPUs, Gloo (staging device memory through the host) for a group in which two
// members share one GPU. NCCL refuses such a group: ncclCommInitRank fails with "Duplicate GPU
// detected" on one member (NCCL >= 2.5), and the others wait in NCCL's bootstrap for it (seen on
// an H100 with NCCL 2.28: about a minute of retries). Two workers on one GPU is how a one-GPU
// machine runs a sharded script, so that case must work, if not at NCCL's speed.
//
// Every worker publishes the physical device it computes on (Device::physicalId, with its host
// name) under "device/<worker>" in the rendezvous store when it starts (deviceEntry); a group's
// first operation reads its members' entries and picks the communicator for good.
#include "gt/Worker/Communicator.h"

#include <map>
#include <set>

#include <unistd.h>

namespace gt::worker {
namespace {

std::string deviceKey(int64_t worker) { return "device/" + std::to_string(worker); }

class RoutedCommunicator final : public Communicator {
public:
  RoutedCommunicator(int64_t self, std::shared_ptr<KeyValueStore> store, std::unique_ptr<Communicator> nccl,
                     std::unique_ptr<Communicator> gloo)
      : self_(self), store_(std::move(store)), nccl_(std::move(nccl)), gloo_(std::move(gloo)) {}

  void sendFlag(uint8_t flag, int64_t peer) override { forPair(peer).sendFlag(flag, peer); }
  uint8_t recvFlag(int64_t peer) override { return forPair(peer).recvFlag(peer); }
  void allReduce(void *data, size_t count, DType dtype, ReduceKind reduce, const std::vector<int64_t> &group) override {
    forGroup(group).allReduce(data, count, dtype, reduce, group);
  }
  void allGather(const void *in, void *out, const std::vector<size_t> &bytes,
                 const std::vector<int64_t> &group) override {
    forGroup(group).allGather(in, out, bytes, group);
  }
  void reduceScatter(void *data, void *out, const std::vector<size_t> &counts, DType dtype, ReduceKind reduce,
                     const std::vector<int64_t> &group) override {
    forGroup(group).reduceScatter(data, out, counts, dtype, reduce, group);
  }
  void allToAll(const void *in, const std::vector<size_t> &inBytes, void *out, const std::vector<size_t> &outBytes,
                const std::vector<int64_t> &group) override {
    forGroup(group).allToAll(in, inBytes, out, outBytes, group);
  }
  void send(const void *data, size_t bytes, int64_t peer) override { forPair(peer).send(data, bytes, peer); }
  void recv(void *data, size_t bytes, int64_t peer) override { forPair(peer).recv(data, bytes, peer); }
  bool any(bool flag, const std::vector<int64_t> &group) override { return forGroup(group).any(flag, group); }

  /// Both communicators' counters added up, and "groups_on_gloo": groups that share a GPU.
  std::vector<std::pair<std::string, double>> counters() const override {
    std::map<std::string, double> sum;
    for (const Communicator *c : {nccl_.get(), gloo_.get()})
      for (const auto &[name, value] : c->counters()) sum[name] += value;
    int onGloo = 0;
    for (const auto &[group, gloo] : routes_) onGloo += gloo;
    sum["groups_on_gloo"] = onGloo;
    return {sum.begin(), sum.end()};
  }

private:
  Communicator &forPair(int64_t peer) { return forGroup({std::min(self_, peer), std::max(self_, peer)}); }

  Communicator &forGroup(const std::vector<int64_t> &group) {
    auto it = routes_.find(group);
    if (it == routes_.end()) {
      std::set<std::string> devices;
      for (int64_t w : group) devices.insert(store_->get(deviceKey(w)));
      it = routes_.emplace(group, devices.size() < group.size()).first;
    }
    return it->second ? *gloo_ : *nccl_;
  }

  int64_t self_;
  std::shared_ptr<KeyValueStore> store_;
  std::unique_ptr<Communicator> nccl_, gloo_;
  std::map<std::vector<int64_t>, bool> routes_; ///< group -> whether it goes through Gloo
};

} // namespace

std::pair<std::string, std::string> deviceEntry(int64_t self, const std::string &physicalId) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return {deviceKey(self), std::string(host) + "/" + physicalId};
}

std::unique_ptr<Communicator> createRoutedCommunicator(int64_t self, std::shared_ptr<KeyValueStore> store,
                                                       std::unique_ptr<Communicator> nccl,
                                                       std::unique_ptr<Communicator> gloo) {
  return std::make_unique<RoutedCommunicator>(self, std::move(store), std::move(nccl), std::move(gloo));
}

} // namespace gt::worker
