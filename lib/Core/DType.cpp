// Element types, shapes and NumPy broadcasting.
#include "gt/Core/DType.h"

#include <algorithm>
#include <bit>

namespace gt {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::Float32: return "float32";
  case DType::Float64: return "float64";
  case DType::Float16: return "float16";
  case DType::BFloat16: return "bfloat16";
  case DType::Int32: return "int32";
  case DType::Int64: return "int64";
  case DType::Bool: return "bool";
  case DType::Int8: return "int8";
  case DType::Int16: return "int16";
  case DType::UInt8: return "uint8";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  if (name.starts_with("gt.")) name.remove_prefix(3);
  if (name == "float32" || name == "f32" || name == "float") return DType::Float32;
  if (name == "float64" || name == "f64" || name == "double") return DType::Float64;
  if (name == "float16" || name == "f16" || name == "half") return DType::Float16;
  if (name == "bfloat16" || name == "bf16") return DType::BFloat16;
  if (name == "int32" || name == "i32" || name == "int") return DType::Int32;
  if (name == "int64" || name == "i64" || name == "long") return DType::Int64;
  if (name == "bool" || name == "i1") return DType::Bool;
  if (name == "int8" || name == "i8") return DType::Int8;
  if (name == "int16" || name == "i16" || name == "short") return DType::Int16;
  if (name == "uint8" || name == "u8" || name == "byte") return DType::UInt8;
  return std::nullopt;
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::Float32: case DType::Int32: return 4;
  case DType::Float64: case DType::Int64: return 8;
  case DType::Float16: case DType::BFloat16: return 2;
  case DType::Bool: case DType::Int8: case DType::UInt8: return 1;
  case DType::Int16: return 2;
  }
  return 0;
}

bool isFloating(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 || dtype == DType::BFloat16;
}

static int promotionRank(DType d) {
  switch (d) {
  case DType::Bool: return 0;
  case DType::UInt8: case DType::Int8: return 1;
  case DType::Int16: return 2;
  case DType::Int32: return 3;
  case DType::Int64: return 4;
  case DType::Float16: case DType::BFloat16: return 5;
  case DType::Float32: return 6;
  case DType::Float64: return 7;
  }
  return 0;
}

DType promoteTypes(DType a, DType b) {
  if (a != b && promotionRank(a) == 5 && promotionRank(b) == 5) return DType::Float32; // half with bfloat16
  if (a != b && promotionRank(a) == 1 && promotionRank(b) == 1) return DType::Int16;   // uint8 with int8
  return promotionRank(a) >= promotionRank(b) ? a : b;
}

static int category(DType d) { return d == DType::Bool ? 0 : isFloating(d) ? 2 : 1; }

DType resultType(const TensorType &a, const TensorType &b) {
  bool zeroA = a.shape.empty(), zeroB = b.shape.empty();
  if (zeroA == zeroB) return promoteTypes(a.dtype, b.dtype);
  DType dims = zeroA ? b.dtype : a.dtype, zero = zeroA ? a.dtype : b.dtype;
  return category(zero) > category(dims) ? promoteTypes(dims, zero) : dims;
}

// float16: the compiler's _Float16 (F16C instructions or libgcc) does the IEEE conversion.
float halfToFloat(uint16_t bits) { return float(std::bit_cast<_Float16>(bits)); }
uint16_t floatToHalf(float value) { return std::bit_cast<uint16_t>(_Float16(value)); }

// bfloat16: no compiler type before GCC 13; it is the top half of a float32.
float bfloat16ToFloat(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

uint16_t floatToBFloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffff) > 0x7f800000) return uint16_t((bits >> 16) | 0x40); // quiet NaN
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even at bit 16
  return uint16_t(bits >> 16);
}

int64_t numElements(const Shape &shape) {
  // The product of the sizes that are not 0 must fit too: kernels compute strides and offsets
  // from them even when a 0 leaves nothing to visit (found by fuzzing the worker).
  int64_t n = 1;
  bool empty = false;
  for (int64_t s : shape) {
    if (s < 0) throw ShapeError("negative size in shape " + shapeString(shape));
    if (s == 0) empty = true;
    else if (__builtin_mul_overflow(n, s, &n))
      throw ShapeError("shape " + shapeString(shape) + " has more elements than fit in 64 bits");
  }
  return empty ? 0 : n;
}

int64_t numBytes(const TensorType &type) {
  int64_t bytes;
  if (__builtin_mul_overflow(numElements(type.shape), int64_t(dtypeSize(type.dtype)), &bytes))
    throw ShapeError("a " + std::string(dtypeName(type.dtype)) + " tensor of shape " + shapeString(type.shape) +
                     " has more bytes than fit in 64 bits");
  return bytes;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Shape broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right, as NumPy does.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError("shapes " + shapeString(a) + " and " + shapeString(b) +
                       " cannot be broadcast together (axis " + std::to_string(i) + ": " +
                       std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  int64_t n = axis < 0 ? axis + rank : axis;
  if (n < 0 || n >= std::max<int64_t>(rank, 1) || (rank == 0 && n != 0))
    throw AxisError("dimension out of range: axis " + std::to_string(axis) + " for a tensor of rank " +
                     std::to_string(rank));
  return n;
}

} // namespace gt
