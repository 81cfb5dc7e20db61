// Sharding layouts: names and the balanced split of an axis.
#include "gt/Core/Sharding.h"

#include <algorithm>
#include <stdexcept>

namespace gt {

int64_t Sharding::rankOf(int64_t worker) const {
  auto it = std::find(workers.begin(), workers.end(), worker);
  return it == workers.end() ? -1 : int64_t(it - workers.begin());
}

const char *reduceName(ReduceKind r) {
  switch (r) {
  case ReduceKind::Sum: return "sum";
  case ReduceKind::Max: return "max";
  case ReduceKind::Min: return "min";
  }
  return "?";
}

static std::string listString(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string Sharding::str() const {
  switch (kind) {
  case ShardKind::Replicated: return "replicated over " + listString(workers);
  case ShardKind::Split: return "split(" + std::to_string(axis) + ") over " + listString(workers);
  case ShardKind::Partial: return std::string("partial(") + reduceName(reduce) + ") over " + listString(workers);
  }
  return "?";
}

std::pair<int64_t, int64_t> splitRange(int64_t size, int64_t count, int64_t rank) {
  if (count <= 0 || rank < 0 || rank >= count) throw std::invalid_argument("splitRange: rank out of range");
  int64_t base = size / count, extra = size % count;
  int64_t begin = rank * base + std::min(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

Shape localShape(const Shape &shape, const Sharding &sharding, int64_t worker) {
  int64_t rank = sharding.rankOf(worker);
  if (rank < 0) throw std::invalid_argument("worker " + std::to_string(worker) + " holds no part of a tensor " + sharding.str());
  if (!sharding.isSplit()) return shape;
  if (sharding.axis < 0 || sharding.axis >= int64_t(shape.size()))
    throw AxisError("split axis " + std::to_string(sharding.axis) + " is out of range for shape " + shapeString(shape));
  Shape local = shape;
  auto [b, e] = splitRange(shape[size_t(sharding.axis)], int64_t(sharding.workers.size()), rank);
  local[size_t(sharding.axis)] = e - b;
  return local;
}

} // namespace gt
