// Element types, shapes and NumPy broadcasting: the vocabulary shared by client, dialect and worker.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gt {

/// Element type of a tensor. Bool is stored as one byte per element (0 or 1), like NumPy.
/// Float16 is IEEE 754 binary16; BFloat16 is the top half of a float32 (8-bit exponent, 7-bit
/// mantissa). Kernels compute on both in float32 and round the result (as PyTorch's CUDA
/// kernels do); the codes are part of the wire format, so new types get new numbers.
/// Int8, Int16 and UInt8 are storage types: workers move and cast them (isSmallInt) and compute
/// on them through int32, which the Python API casts to and back (PyTorch's results, wrapping
/// included: an 8- or 16-bit sum computed in 32 bits and truncated is the same).
enum class DType : uint8_t {
  Float32 = 0, Float64 = 1, Int32 = 2, Int64 = 3, Bool = 4, Float16 = 5, BFloat16 = 6, Int8 = 7, Int16 = 8, UInt8 = 9
};
inline constexpr int kNumDTypes = 10;

using Shape = std::vector<int64_t>;

/// A tensor's static type: element type and shape (all sizes known).
struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  bool operator==(const TensorType &) const = default;
};

/// A shape rule was violated (mismatched sizes, bad reshape). Python: gt.ShapeError, a
/// RuntimeError (what PyTorch raises) and a ValueError (what NumPy raises).
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// An axis is out of range for a tensor's rank. Python: gt.AxisError, an IndexError (as
/// PyTorch's "Dimension out of range") and a gt.ShapeError.
struct AxisError : ShapeError {
  using ShapeError::ShapeError;
};
/// An element type is unknown or not accepted by an op. Python: gt.DTypeError, a RuntimeError
/// (as PyTorch) and a TypeError.
struct DTypeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// "float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "int8", "int16", "uint8".
const char *dtypeName(DType dtype);
/// Parses a dtype name ("float32", "f32", "float", "half", "bf16", "int64", "long", "bool", ...);
/// nullopt if unknown.
std::optional<DType> parseDType(std::string_view name);
/// Bytes per element.
size_t dtypeSize(DType dtype);
bool isFloating(DType dtype);
/// int8, int16 or uint8: the storage-only integer types (see DType).
inline bool isSmallInt(DType dtype) { return dtype == DType::Int8 || dtype == DType::Int16 || dtype == DType::UInt8; }
/// Result type of an arithmetic op on two dtypes, PyTorch's lattice: bool < uint8, int8 < int16 <
/// int32 < int64 < float16, bfloat16 < float32 < float64, where uint8 with int8 gives int16 and
/// float16 with bfloat16 gives float32.
DType promoteTypes(DType a, DType b);
/// PyTorch's result type of an op on tensors of types a and b (torch.result_type, its
/// combine_categories): a tensor with dimensions outranks a 0-d one unless the 0-d one is of a
/// higher category (bool < integer < floating point), when the two promote. So int32 (3,) +
/// int64 0-d is int32, float16 (3,) * float32 0-d float16, int64 (3,) * float32 0-d float32.
/// Two tensors both 0-d, or both with dimensions, promote (promoteTypes).
DType resultType(const TensorType &a, const TensorType &b);

/// IEEE binary16 <-> float32, round to nearest even (NaN stays NaN, overflow gives infinity).
float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
/// bfloat16 <-> float32, round to nearest even (NaN stays a quiet NaN).
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBFloat16(float value);

/// Number of elements of a shape (1 for a 0-d tensor). Throws ShapeError for a negative size
/// or a count that does not fit in int64 (a shape such as [2**32, 2**32]; [0, 2**32, 2**32]
/// too: strides are computed from the sizes even when a 0 leaves the tensor empty).
int64_t numElements(const Shape &shape);
/// Bytes of a tensor of type `type`: numElements * dtypeSize. Throws ShapeError when that does
/// not fit in int64, so every size that reaches an allocator has been checked for overflow.
int64_t numBytes(const TensorType &type);
/// "[2, 3]"
std::string shapeString(const Shape &shape);
/// NumPy broadcasting of two shapes; throws ShapeError naming both shapes when they do not broadcast.
Shape broadcastShapes(const Shape &a, const Shape &b);
/// Normalizes `axis` (negative counts from the end) for a tensor of rank `rank`; throws AxisError.
int64_t normalizeAxis(int64_t axis, int64_t rank);

} // namespace gt
