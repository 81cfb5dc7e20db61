// How a logical tensor is laid out over workers, in the MLIR mesh dialect's vocabulary.
//
// A value is `replicated` (every worker of the group holds all of it), `split(axis)` (worker
// r of the group holds the r-th block of rows along `axis`) or `partial(sum|max|min)` (every
// worker holds a full-size tensor; the value is their elementwise reduction, resolved by
// `all_reduce`). Plain C++, no MLIR: the dispatcher, the worker and the client share it.
#pragma once

#include "gt/Core/DType.h"

#include <string>
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

} // namespace gt
