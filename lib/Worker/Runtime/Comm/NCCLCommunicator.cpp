// Collectives between CUDA workers: NCCL on device memory, queued on the device's compute
// stream (so they are ordered with the kernels around them and nothing is copied through the
// host). libnccl.so.2 is loaded at run time, like cuBLAS: a worker built here starts on
// machines without NCCL and falls back to Gloo over host memory there.
//
// Groups: one ncclComm_t per worker group (rank order = the group's order), made on its first
// collective: rank 0 draws an ncclUniqueId and publishes it in the dispatcher's key-value
// store, the others read it (ncclCommInitRank). A send/recv pair uses the two-member group of
// its workers (ranks in ascending worker order).
//
// NCCL has no allgatherv: blocks of unequal size (uneven splits) are gathered as one
// ncclBroadcast per member inside an ncclGroupStart/End, each into its place of the output;
// likewise a reduce_scatter of unequal blocks is one ncclReduce per member (rooted at the
// block's owner), and an all_to_all one ncclSend/ncclRecv pair per peer.
//
// A watchdog: each operation waits for the stream at most GT_COLLECTIVE_TIMEOUT seconds
// (default 300); past that the group's communicator is aborted (ncclCommAbort, which never
// waits for a dead peer), the operation fails, and the group's next operation makes a new
// communicator under rendezvous keys of a new generation, so only the failed operation and
// what reads it are lost (as with Gloo).
//
// Not run yet: the machines lent to this project have one GPU, and NCCL does not place two
// ranks of one communicator on the same GPU. See docs/sharding.md.
#include "gt/Worker/Communicator.h"
#include "gt/Worker/Device.h"

#include <nccl.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

namespace gt::worker {
namespace {

/// The NCCL functions GT uses, resolved from libnccl.so.2.
struct Nccl {
  decltype(&::ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&::ncclCommInitRank) commInitRank = nullptr;
  decltype(&::ncclCommAbort) commAbort = nullptr;
  decltype(&::ncclAllReduce) allReduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclReduce) reduce = nullptr;
  decltype(&::ncclReduceScatter) reduceScatter = nullptr;
  decltype(&::ncclSend) send = nullptr;
  decltype(&::ncclRecv) recv = nullptr;
  decltype(&::ncclGroupStart) groupStart = nullptr;
  decltype(&::ncclGroupEnd) groupEnd = nullptr;
  decltype(&::ncclGetErrorString) errorString = nullptr;
  std::string error; ///< why NCCL is unusable ("" = usable)

  Nccl() {
    void *lib = nullptr;
    for (const char *name : {"libnccl.so.2", "libnccl.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!lib) {
      error = std::string("NCCL is not installed (dlopen libnccl.so.2: ") + dlerror() + ")";
      return;
    }
    auto load = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && error.empty()) error = std::string("NCCL is too old: it lacks ") + name;
    };
    load(getUniqueId, "ncclGetUniqueId");
    load(commInitRank, "ncclCommInitRank");
    load(commAbort, "ncclCommAbort");
    load(allReduce, "ncclAllReduce");
    load(broadcast, "ncclBroadcast");
    load(reduce, "ncclReduce");
    load(reduceScatter, "ncclReduceScatter");
    load(send, "ncclSend");
    load(recv, "ncclRecv");
    load(groupStart, "ncclGroupStart");
    load(groupEnd, "ncclGroupEnd");
    load(errorString, "ncclGetErrorString");
  }

  void check(ncclResult_t r, const std::string &what) const {
    if (r != ncclSuccess) throw std::runtime_error(what + ": " + (errorString ? errorString(r) : "NCCL error " + std::to_string(int(r))));
  }

  static Nccl &get() {
    static Nccl nccl;
    return nccl;
  }
};

ncclDataType_t ncclType(DType dtype) {
  switch (dtype) {
  case DType::Float32: return ncclFloat32;
  case DType::Float64: return ncclFloat64;
  case DType::Int32: return ncclInt32;
  case DType::Int64: return ncclInt64;
  case DType::Bool: return ncclUint8;
  case DType::Float16: return ncclFloat16;
  case DType::BFloat16: return ncclBfloat16;
  case DType::Int8: return ncclInt8;
  case DType::UInt8: return ncclUint8;
  case DType::Int16: break; // NCCL has no 16-bit integer (moves go as bytes; no op reduces int16)
  }
  throw std::invalid_argument("NCCL: unsupported dtype");
}

ncclRedOp_t ncclOp(ReduceKind reduce) {
  switch (reduce) {
  case ReduceKind::Sum: return ncclSum;
  case ReduceKind::Max: return ncclMax;
  case ReduceKind::Min: return ncclMin;
  }
  return ncclSum;
}

/// GT_COLLECTIVE_TIMEOUT, seconds (default 300).
double collectiveTimeout() {
  const char *s = std::getenv("GT_COLLECTIVE_TIMEOUT");
  long seconds = s && *s ? std::strtol(s, nullptr, 10) : 300;
  return double(std::max(1L, seconds));
}

class NCCLCommunicator final : public Communicator {
public:
  NCCLCommunicator(int64_t self, std::shared_ptr<KeyValueStore> store, Device &device)
      : nccl_(Nccl::get()), self_(self), store_(std::move(store)), device_(device),
        stream_(static_cast<cudaStream_t>(device.nativeStream())) {
    if (!nccl_.error.empty()) throw std::runtime_error(nccl_.error);
    if (!stream_) throw std::runtime_error("NCCL needs a CUDA device (this worker runs on " + device.describe() + ")");
    flag_ = device_.allocate(sizeof(int32_t));
  }

  ~NCCLCommunicator() override {
    for (auto &[group, comm] : comms_) nccl_.commAbort(comm); // never blocks on a dead peer
  }


  void allReduce(void *data, size_t count, DType dtype, ReduceKind reduce, const std::vector<int64_t> &group) override {
    ncclComm_t comm = commFor(group);
    nccl_.check(nccl_.allReduce(data, data, count, ncclType(dtype), ncclOp(reduce), comm, stream_), "ncclAllReduce");
    finish(group, "ncclAllReduce");
    collectiveBytes_ += count * dtypeSize(dtype);
  }

  void allGather(const void *in, void *out, const std::vector<size_t> &bytes, const std::vector<int64_t> &group) override {
    ncclComm_t comm = commFor(group);
    int rank = rankIn(group);
    nccl_.check(nccl_.groupStart(), "ncclGroupStart");
    size_t offset = 0;
    for (size_t r = 0; r < bytes.size(); ++r) { // one broadcast per member: blocks may differ in size
      char *place = static_cast<char *>(out) + offset;
      nccl_.check(nccl_.broadcast(int(r) == rank ? in : place, place, bytes[r], ncclUint8, int(r), comm, stream_),
                  "ncclBroadcast");
      offset += bytes[r];
    }
    nccl_.check(nccl_.groupEnd(), "ncclGroupEnd");
    finish(group, "all_gather");
    collectiveBytes_ += bytes[size_t(rank)];
  }

  void reduceScatter(void *data, void *out, const std::vector<size_t> &counts, DType dtype, ReduceKind reduce,
                     const std::vector<int64_t> &group) override {
    ncclComm_t comm = commFor(group);
    int rank = rankIn(group);
    size_t elem = dtypeSize(dtype), total = 0;
    for (size_t c : counts) total += c;
    if (std::all_of(counts.begin(), counts.end(), [&](size_t c) { return c == counts[0]; })) {
      nccl_.check(nccl_.reduceScatter(data, out, counts[0], ncclType(dtype), ncclOp(reduce), comm, stream_),
                  "ncclReduceScatter");
    } else { // blocks of unequal size: one ncclReduce per member, rooted at the block's owner
      nccl_.check(nccl_.groupStart(), "ncclGroupStart");
      size_t offset = 0;
      for (size_t r = 0; r < counts.size(); ++r) {
        char *block = static_cast<char *>(data) + offset;
        nccl_.check(nccl_.reduce(block, int(r) == rank ? out : block, counts[r], ncclType(dtype), ncclOp(reduce),
                                 int(r), comm, stream_),
                    "ncclReduce");
        offset += counts[r] * elem;
      }
      nccl_.check(nccl_.groupEnd(), "ncclGroupEnd");
    }
    finish(group, "reduce_scatter");
    collectiveBytes_ += total * elem;
  }

  void allToAll(const void *in, const std::vector<size_t> &inBytes, void *out, const std::vector<size_t> &outBytes,
                const std::vector<int64_t> &group) override {
    ncclComm_t comm = commFor(group);
    int rank = rankIn(group);
    nccl_.check(nccl_.groupStart(), "ncclGroupStart");
    size_t inOffset = 0, outOffset = 0;
    for (size_t r = 0; r < inBytes.size(); ++r) {
      const char *give = static_cast<const char *>(in) + inOffset;
      char *take = static_cast<char *>(out) + outOffset;
      if (int(r) == rank) {
        if (inBytes[r]) device_.copy(take, give, inBytes[r]);
      } else {
        if (inBytes[r]) nccl_.check(nccl_.send(give, inBytes[r], ncclUint8, int(r), comm, stream_), "ncclSend");
        if (outBytes[r]) nccl_.check(nccl_.recv(take, outBytes[r], ncclUint8, int(r), comm, stream_), "ncclRecv");
      }
      inOffset += inBytes[r];
      outOffset += outBytes[r];
      collectiveBytes_ += inBytes[r];
    }
    nccl_.check(nccl_.groupEnd(), "ncclGroupEnd");
    finish(group, "all_to_all");
  }

  void send(const void *data, size_t bytes, int64_t peer) override {
    auto [comm, rank] = pairComm(peer);
    nccl_.check(nccl_.send(data, bytes, ncclUint8, 1 - rank, comm, stream_), "ncclSend");
    finish(pairOf(peer), "ncclSend");
    sent_ += bytes;
  }

  void recv(void *data, size_t bytes, int64_t peer) override {
    auto [comm, rank] = pairComm(peer);
    nccl_.check(nccl_.recv(data, bytes, ncclUint8, 1 - rank, comm, stream_), "ncclRecv");
    finish(pairOf(peer), "ncclRecv");
    received_ += bytes;
  }

  void sendFlag(uint8_t flag, int64_t peer) override {
    int32_t value = flag;
    device_.upload(flag_.data.get(), &value, sizeof value);
    send(flag_.data.get(), sizeof value, peer);
  }

  uint8_t recvFlag(int64_t peer) override {
    recv(flag_.data.get(), sizeof(int32_t), peer);
    int32_t value = 0;
    device_.download(&value, flag_.data.get(), sizeof value); // waits for the recv
    return uint8_t(value != 0);
  }

  bool any(bool flag, const std::vector<int64_t> &group) override {
    int32_t value = flag;
    device_.upload(flag_.data.get(), &value, sizeof value);
    nccl_.check(nccl_.allReduce(flag_.data.get(), flag_.data.get(), 1, ncclInt32, ncclMax, commFor(group), stream_),
                "ncclAllReduce (failure flag)");
    finish(group, "ncclAllReduce (failure flag)");
    device_.download(&value, flag_.data.get(), sizeof value);
    return value != 0;
  }

  std::vector<std::pair<std::string, double>> counters() const override {
    return {{"comm_groups", double(comms_.size())},
            {"collective_bytes", double(collectiveBytes_)},
            {"p2p_bytes_sent", double(sent_)},
            {"p2p_bytes_received", double(received_)}};
  }

private:
  /// Waits for `group`'s operation `what` to finish on the stream, at most the timeout; past it
  /// aborts the group's communicator (the next operation makes a new one) and throws.
  void finish(const std::vector<int64_t> &group, const char *what) {
    if (device_.waitIdle(timeout_)) return;
    if (auto it = comms_.find(group); it != comms_.end()) {
      nccl_.commAbort(it->second);
      comms_.erase(it);
    }
    generations_[group]++;
    throw std::runtime_error(std::string(what) + " did not finish within " + std::to_string(int(timeout_)) +
                             " s (GT_COLLECTIVE_TIMEOUT): a peer is gone or stalled");
  }

  std::vector<int64_t> pairOf(int64_t peer) const { return {std::min(self_, peer), std::max(self_, peer)}; }

  int rankIn(const std::vector<int64_t> &group) const {
    auto it = std::find(group.begin(), group.end(), self_);
    if (it == group.end()) throw std::runtime_error("NCCL: this worker is not in the collective's group");
    return int(it - group.begin());
  }

  ncclComm_t commFor(const std::vector<int64_t> &group) {
    if (auto it = comms_.find(group); it != comms_.end()) return it->second;
    int rank = rankIn(group);
    std::string key = "nccl/" + std::to_string(generations_[group]); // a new generation after an abort
    for (int64_t w : group) key += "/" + std::to_string(w);
    ncclUniqueId id;
    if (rank == 0) {
      nccl_.check(nccl_.getUniqueId(&id), "ncclGetUniqueId");
      store_->set(key, std::string(reinterpret_cast<const char *>(&id), sizeof id));
    } else {
      std::string value = store_->get(key);
      if (value.size() != sizeof id) throw std::runtime_error("NCCL: a malformed unique id in the rendezvous store");
      std::memcpy(&id, value.data(), sizeof id);
    }
    ncclComm_t comm = nullptr;
    nccl_.check(nccl_.commInitRank(&comm, int(group.size()), id, rank), "ncclCommInitRank");
    comms_.emplace(group, comm);
    return comm;
  }

  std::pair<ncclComm_t, int> pairComm(int64_t peer) { return {commFor(pairOf(peer)), self_ < peer ? 0 : 1}; }

  Nccl &nccl_;
  int64_t self_;
  std::shared_ptr<KeyValueStore> store_;
  Device &device_;
  cudaStream_t stream_;
  Buffer flag_; ///< 4 device bytes for failure flags
  std::map<std::vector<int64_t>, ncclComm_t> comms_;
  std::map<std::vector<int64_t>, int> generations_; ///< groups aborted by the watchdog, and how often
  double timeout_ = collectiveTimeout();
  size_t collectiveBytes_ = 0, sent_ = 0, received_ = 0;
};

} // namespace

std::unique_ptr<Communicator> createNCCLCommunicator(int64_t self, std::shared_ptr<KeyValueStore> store, Device &device) {
  return std::make_unique<NCCLCommunicator>(self, std::move(store), device);
}

} // namespace gt::worker
