// How a logical tensor is laid out over workers, in the MLIR mesh dialect's vocabulary.
//
// A value is `replicated` (every worker of the group holds all of it), `split(axis)` (worker
// r of the group holds the r-th block of rows along `axis`) or `partial(sum|max|min)` (every
// worker holds a full-size tensor; the value is their elementwise reduction, resolved by
// `all_reduce`). Plain C++, no MLIR: the dispatcher, the worker and the client share it.
#pragma once

#include "gt/Core/DType.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gt {

enum class ShardKind : uint8_t { Replicated = 0, Split = 1, Partial = 2 };
/// How the per-worker tensors of a `partial` value combine (and what an all_reduce computes).
enum class ReduceKind : uint8_t { Sum = 0, Max = 1, Min = 2 };

struct Sharding {
  ShardKind kind = ShardKind::Replicated;
  int64_t axis = 0;              ///< Split: the split axis
  ReduceKind reduce = ReduceKind::Sum; ///< Partial: how the parts combine
  std::vector<int64_t> workers;  ///< the group, in rank order (rank r is workers[r])

  static Sharding replicated(std::vector<int64_t> workers) { return {ShardKind::Replicated, 0, ReduceKind::Sum, std::move(workers)}; }
  static Sharding split(int64_t axis, std::vector<int64_t> workers) { return {ShardKind::Split, axis, ReduceKind::Sum, std::move(workers)}; }
  static Sharding partial(ReduceKind r, std::vector<int64_t> workers) { return {ShardKind::Partial, 0, r, std::move(workers)}; }

  bool isReplicated() const { return kind == ShardKind::Replicated; }
  bool isSplit() const { return kind == ShardKind::Split; }
  bool isPartial() const { return kind == ShardKind::Partial; }
  /// The rank of `worker` in the group, or -1.
  int64_t rankOf(int64_t worker) const;
  bool operator==(const Sharding &o) const {
    return kind == o.kind && workers == o.workers && (kind != ShardKind::Split || axis == o.axis) &&
           (kind != ShardKind::Partial || reduce == o.reduce);
  }
  /// "split(0) over [0, 1, 2, 3]", "replicated over [0]", "partial(sum) over [0, 1]"
  std::string str() const;
};

const char *reduceName(ReduceKind r);

/// The block [begin, end) of a size-`size` axis that rank `rank` of `count` holds:
/// balanced like numpy.array_split (the first size % count ranks get one more), so 13 rows
/// over 4 workers are 4, 3, 3, 3.
std::pair<int64_t, int64_t> splitRange(int64_t size, int64_t count, int64_t rank);

/// The shape worker `worker` holds of a tensor of global shape `shape` laid out as `sharding`
/// (the global shape unless split). Throws std::invalid_argument if the worker is not in the
/// group, AxisError if the split axis is outside the shape.
Shape localShape(const Shape &shape, const Sharding &sharding, int64_t worker);

/// acc[i] = reduce(acc[i], part[i]) for `count` elements of `dtype` (float16/bfloat16 combine
/// in float32 and round once; bool: sum = or). Combines the parts of a `partial` value: the
/// dispatcher when a client fetches one, workers inside all_reduce.
void combineParts(DType dtype, ReduceKind reduce, void *acc, const void *part, size_t count);

/// Rows [begin, end) along `axis` of a row-major tensor of `shape` with `elem`-byte elements.
std::string takeBlock(std::string_view data, const Shape &shape, size_t elem, int64_t axis, int64_t begin, int64_t end);
/// The row-major tensor of `shape` whose blocks along `axis` are `blocks` (block r holds rows
/// splitRange(shape[axis], blocks.size(), r)). Throws std::invalid_argument if a block's
/// size does not match.
std::string concatBlocks(const std::vector<std::string_view> &blocks, const Shape &shape, size_t elem, int64_t axis);

/// Marks the error of a collective whose input failed on another worker of its group (that
/// worker's error names the op that failed; the dispatcher prefers it when reporting).
inline constexpr const char *kPeerFailed = "an input of this collective failed on another worker";

} // namespace gt
