// Moving tensor bytes between workers: the data plane of the distribution ops (all_reduce,
// all_gather, send/recv, ...). CPU workers use Gloo over TCP; the rendezvous of each worker
// group goes through a key-value store the dispatcher keeps (no tensor data passes through it).
#pragma once

#include "gt/Core/DType.h"
#include "gt/Core/Sharding.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gt::worker {

/// The rendezvous: `get` blocks until some worker has `set` the key (or throws after a timeout).
class KeyValueStore {
public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string &key, const std::string &value) = 0;
  virtual std::string get(const std::string &key) = 0;
};

class Device;

/// Collectives over a group of workers, named by their dispatcher indices in rank order.
/// Every member calls the same operations on the same group in the same order (the dispatcher
/// sends every worker its program in one global order), so no call needs a tag. A group's
/// connections are made on its first operation. Buffers are the worker's device memory (host
/// memory on a CPU worker); `sendFlag`, `recvFlag` and `any` take host values. Failures (a peer died, a timeout: GT_COLLECTIVE_TIMEOUT)
/// throw std::runtime_error, and the next operation of the group connects it anew (every
/// member that saw the failure does the same), so only the failed operation is lost.
class Communicator {
public:
  virtual ~Communicator() = default;
  /// One byte to / from `peer` (send/recv first say whether the sender's input failed).
  virtual void sendFlag(uint8_t flag, int64_t peer) { send(&flag, 1, peer); }
  virtual uint8_t recvFlag(int64_t peer) {
    uint8_t flag = 0;
    recv(&flag, 1, peer);
    return flag;
  }
  /// data[i] = reduce over the group of data[i], `count` elements of `dtype`.
  virtual void allReduce(void *data, size_t count, DType dtype, ReduceKind reduce,
                         const std::vector<int64_t> &group) = 0;
  /// out = the members' `in` buffers concatenated in rank order (rank r sent bytes[r] bytes).
  virtual void allGather(const void *in, void *out, const std::vector<size_t> &bytes,
                         const std::vector<int64_t> &group) = 0;
  /// Every member's `data` holds blocks of counts[r] elements of `dtype`, end to end in rank
  /// order; out (counts[rank] elements) = the reduction over the group of block `rank`. `data`
  /// is scratch (clobbered). Each member sends about (n-1)/n of `data`, not an all_reduce's
  /// 2(n-1)/n (the ring algorithm: Patarasuk & Yuan, "Bandwidth optimal all-reduce
  /// algorithms for clusters of workstations", JPDC 2009, its first half).
  virtual void reduceScatter(void *data, void *out, const std::vector<size_t> &counts, DType dtype,
                             ReduceKind reduce, const std::vector<int64_t> &group) = 0;
  /// Personalized exchange: block r of `in` (inBytes[r] bytes, end to end in rank order) goes to
  /// member r; `out` receives member r's block for this one (outBytes[r] bytes) at its place in
  /// rank order.
  virtual void allToAll(const void *in, const std::vector<size_t> &inBytes, void *out,
                        const std::vector<size_t> &outBytes, const std::vector<int64_t> &group) = 0;
  virtual void send(const void *data, size_t bytes, int64_t peer) = 0;
  virtual void recv(void *data, size_t bytes, int64_t peer) = 0;
  /// Whether any member passed true (a failed input anywhere in the group).
  virtual bool any(bool flag, const std::vector<int64_t> &group) = 0;
  /// "groups" (connected groups) and the bytes this worker put into collectives and p2p.
  virtual std::vector<std::pair<std::string, double>> counters() const = 0;
};

/// Gloo over TCP for worker `self`, listening on `address` (an IP or host name of this
/// machine that the other workers can reach), on buffers in `memory` (nullptr: host memory).
/// Gloo moves host memory, so device memory that is not (a CUDA device without NCCL) is staged
/// through host copies. Throws std::runtime_error if Gloo is missing from this build.
std::unique_ptr<Communicator> createGlooCommunicator(int64_t self, const std::string &address,
                                                     std::shared_ptr<KeyValueStore> store, Device *memory = nullptr);

/// NCCL on the device memory of CUDA device `device` (libnccl.so.2 loaded at run time;
/// collectives queued on the device's compute stream). Throws std::runtime_error if NCCL is
/// missing from this build or machine, or `device` is not a CUDA device.
std::unique_ptr<Communicator> createNCCLCommunicator(int64_t self, std::shared_ptr<KeyValueStore> store, Device &device);

/// The rendezvous-store entry (key, value) that says which physical device worker `self`
/// computes on (Device::physicalId, with the host name), for createRoutedCommunicator. Every
/// worker sets it when it starts.
std::pair<std::string, std::string> deviceEntry(int64_t self, const std::string &physicalId);

/// A CUDA worker's collectives: `nccl` for a group whose members are on distinct GPUs, `gloo`
/// (device memory staged through the host) for a group in which two members share a GPU, which
/// NCCL refuses. Decided per group on its first operation, from what the members published.
std::unique_ptr<Communicator> createRoutedCommunicator(int64_t self, std::shared_ptr<KeyValueStore> store,
                                                       std::unique_ptr<Communicator> nccl,
                                                       std::unique_ptr<Communicator> gloo);

} // namespace gt::worker
