// Sharding layouts: names and the balanced split of an axis.
#include "gt/Core/Sharding.h"

#include <algorithm>
#include <cstring>
#include <tuple>
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

namespace {
/// (outer, rows, inner) of `shape` around `axis`: elements before, along and after it.
std::tuple<int64_t, int64_t, int64_t> around(const Shape &shape, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= shape[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  return {outer, shape[size_t(axis)], inner};
}
} // namespace

std::string takeBlock(std::string_view data, const Shape &shape, size_t elem, int64_t axis, int64_t begin, int64_t end) {
  auto [outer, size, inner] = around(shape, axis);
  size_t row = size_t(inner) * elem, rows = size_t(end - begin);
  std::string out;
  out.reserve(size_t(outer) * rows * row);
  for (int64_t o = 0; o < outer; ++o) out.append(data.substr(size_t(o * size + begin) * row, rows * row));
  return out;
}

std::string concatBlocks(const std::vector<std::string_view> &blocks, const Shape &shape, size_t elem, int64_t axis) {
  auto [outer, size, inner] = around(shape, axis);
  size_t row = size_t(inner) * elem;
  std::string out(size_t(outer * size) * row, '\0');
  for (size_t r = 0; r < blocks.size(); ++r) {
    auto [begin, end] = splitRange(size, int64_t(blocks.size()), int64_t(r));
    size_t rows = size_t(end - begin);
    if (blocks[r].size() != size_t(outer) * rows * row)
      throw std::invalid_argument("block " + std::to_string(r) + " has " + std::to_string(blocks[r].size()) +
                                  " bytes, expected " + std::to_string(size_t(outer) * rows * row));
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out.data() + size_t(o * size + begin) * row, blocks[r].data() + size_t(o) * rows * row, rows * row);
  }
  return out;
}

namespace {
template <typename T, typename Load, typename Store>
void combineAs(ReduceKind reduce, void *acc, const void *part, size_t count, Load load, Store store) {
  auto *a = static_cast<T *>(acc);
  auto *b = static_cast<const T *>(part);
  for (size_t i = 0; i < count; ++i) {
    auto x = load(a[i]), y = load(b[i]);
    a[i] = store(reduce == ReduceKind::Sum ? x + y : reduce == ReduceKind::Max ? (y > x ? y : x) : (y < x ? y : x));
  }
}
template <typename T> void combinePlain(ReduceKind reduce, void *acc, const void *part, size_t count) {
  combineAs<T>(reduce, acc, part, count, [](T v) { return v; }, [](T v) { return v; });
}
} // namespace

void combineParts(DType dtype, ReduceKind reduce, void *acc, const void *part, size_t count) {
  switch (dtype) {
  case DType::Float32: return combinePlain<float>(reduce, acc, part, count);
  case DType::Float64: return combinePlain<double>(reduce, acc, part, count);
  case DType::Int32: return combinePlain<int32_t>(reduce, acc, part, count);
  case DType::Int64: return combinePlain<int64_t>(reduce, acc, part, count);
  case DType::Int8: return combinePlain<int8_t>(reduce, acc, part, count);
  case DType::Int16: return combinePlain<int16_t>(reduce, acc, part, count);
  case DType::UInt8: return combinePlain<uint8_t>(reduce, acc, part, count);
  case DType::Bool: // sum of booleans = or; max = or; min = and
    return combineAs<uint8_t>(reduce == ReduceKind::Sum ? ReduceKind::Max : reduce, acc, part, count,
                              [](uint8_t v) { return v; }, [](uint8_t v) { return uint8_t(v != 0); });
  case DType::Float16:
    return combineAs<uint16_t>(reduce, acc, part, count, halfToFloat, floatToHalf);
  case DType::BFloat16:
    return combineAs<uint16_t>(reduce, acc, part, count, bfloat16ToFloat, floatToBFloat16);
  }
}

} // namespace gt
