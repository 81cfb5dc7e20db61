// A caching allocator for device memory (the design PyTorch's CUDA allocator popularized):
// freed blocks go to a free list instead of back to the driver, and a later request of a
// similar size reuses one. With all work on one stream, reusing a block freed by earlier
// work is safe without synchronization: the stream runs the earlier work first.
//
// Sizes are rounded up to 512 bytes (below 1 MiB) or 2 MiB (above), so that blocks recur.
// A request takes the smallest cached block that fits and is at most twice its size. When
// the raw allocator fails, the cache is emptied and the request retried once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace gt::worker {

class CachingAllocator {
public:
  /// `rawAlloc(bytes)` returns memory or nullptr when out of memory; `rawFree` gives it back.
  using RawAlloc = std::function<void *(size_t)>;
  using RawFree = std::function<void(void *)>;

  struct Stats {
    size_t allocatedBytes = 0; ///< in blocks handed out (rounded sizes)
    size_t cachedBytes = 0;    ///< in blocks on the free list
    size_t peakBytes = 0;      ///< highest allocatedBytes + cachedBytes held from the driver
    uint64_t rawAllocs = 0;    ///< calls to rawAlloc
    uint64_t reuses = 0;       ///< requests served from the free list
  };

  CachingAllocator(RawAlloc rawAlloc, RawFree rawFree) : rawAlloc_(std::move(rawAlloc)), rawFree_(std::move(rawFree)) {}
  ~CachingAllocator() { emptyCache(); }
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;

  static size_t roundUp(size_t bytes) {
    constexpr size_t kSmall = 512, kLarge = size_t(2) << 20, kLargeFrom = size_t(1) << 20;
    if (bytes == 0) bytes = 1;
    size_t unit = bytes < kLargeFrom ? kSmall : kLarge;
    return (bytes + unit - 1) / unit * unit;
  }

  /// A block of at least `bytes`. Throws std::runtime_error naming the sizes when the device
  /// is out of memory even after emptying the cache.
  void *allocate(size_t bytes) {
    std::lock_guard lock(mu_);
    size_t size = roundUp(bytes);
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= 2 * size) {
      void *p = it->second;
      size_t got = it->first;
      free_.erase(it);
      stats_.cachedBytes -= got;
      stats_.allocatedBytes += got;
      stats_.reuses++;
      live_[p] = got;
      return p;
    }
    void *p = rawAlloc_(size);
    if (!p) {
      releaseCached();
      p = rawAlloc_(size);
    }
    if (!p)
      throw std::runtime_error("out of device memory allocating " + std::to_string(bytes) + " bytes (" +
                               std::to_string(stats_.allocatedBytes) + " bytes in use)");
    stats_.rawAllocs++;
    stats_.allocatedBytes += size;
    stats_.peakBytes = std::max(stats_.peakBytes, stats_.allocatedBytes + stats_.cachedBytes);
    live_[p] = size;
    return p;
  }

  /// Returns a block from allocate() to the cache. Throws std::invalid_argument for a pointer
  /// this allocator did not hand out (a double free).
  void release(void *p) {
    if (!p) return;
    std::lock_guard lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) throw std::invalid_argument("releasing memory the caching allocator does not own");
    free_.emplace(it->second, p);
    stats_.allocatedBytes -= it->second;
    stats_.cachedBytes += it->second;
    live_.erase(it);
  }

  /// Gives every cached block back to the driver.
  void emptyCache() {
    std::lock_guard lock(mu_);
    releaseCached();
  }

  Stats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

private:
  void releaseCached() {
    for (auto &[size, p] : free_) rawFree_(p);
    free_.clear();
    stats_.cachedBytes = 0;
  }

  RawAlloc rawAlloc_;
  RawFree rawFree_;
  mutable std::mutex mu_;
  std::multimap<size_t, void *> free_;      ///< cached blocks by size
  std::unordered_map<void *, size_t> live_; ///< handed-out blocks and their sizes
  Stats stats_;
};

} // namespace gt::worker
