// The op table: one definition of every GT op's arity, attributes, dtype rule and shape rule.
//
// The Python client (to raise errors at the user's line and to know `.shape` without a round
// trip), the `gt` dialect's verifiers and the worker all call `inferType`; nothing else decides
// what an op produces.
#pragma once

#include "gt/Core/DType.h"

#include <span>
#include <string_view>

namespace gt {

enum class OpCode : uint16_t {
#define GT_OP(name, mnemonic, kind, arity) name,
#include "gt/Core/Ops.def"
#undef GT_OP
  NumOps
};

enum class OpKind : uint8_t { Creation, Unary, Binary, Compare, Select, Matmul, Layout, Reduction, Index, Lifetime };

/// Attributes an instruction may carry. Which ones an op reads is documented per op below.
struct OpAttrs {
  Shape shape;               ///< upload/full/randn/reshape/broadcast_to: the result shape
  std::vector<int64_t> axes; ///< sum/mean/max: reduced axes (normalized, sorted); transpose: permutation
  bool keepdims = false;     ///< reductions: keep reduced axes as size 1
  double value = 0.0;        ///< full: the fill value
  int64_t seed = 0;          ///< randn: the random stream (same seed and shape -> same values)
  int64_t count = 0;         ///< one_hot: number of classes
  DType dtype = DType::Float32; ///< upload/full/randn/cast: the result dtype
};

struct OpInfo {
  OpCode code;
  const char *mnemonic; ///< "add"; the dialect op is "gt.add"
  OpKind kind;
  int arity;            ///< operand count, -1 when optional operands exist (full, randn)
};

const OpInfo &opInfo(OpCode code);
/// Whether `code` may sit in a fused region (gt.region): fills, elementwise, where, layout,
/// reductions and one_hot. Not upload/randn (data), matmul (BLAS/cuBLAS) or free.
bool isFusible(OpCode code);
/// Looks an op up by its mnemonic ("add"); nullptr if there is none.
const OpInfo *lookupOp(std::string_view mnemonic);

/// The result type of `code` applied to operands of types `operands` with `attrs`.
///
/// Shape rules: unary/cast keep the shape; binary/compare/where broadcast like NumPy; matmul
/// contracts the last axis of a with the second-to-last of b (1-D operands are promoted as in
/// NumPy, batch axes broadcast); transpose permutes by attrs.axes; reshape keeps the element
/// count; reductions drop (or keep as 1) attrs.axes; one_hot appends attrs.count classes.
/// Dtype rules: arithmetic promotes (bool < int32 < int64 < float32 < float64); exp/log/sqrt/
/// sigmoid/tanh/div need or give floats; comparisons give bool; where needs a bool condition.
///
/// Throws ShapeError (Python ValueError) or DTypeError (Python TypeError) naming the op and the
/// offending shapes or dtypes; std::invalid_argument for a wrong operand count.
TensorType inferType(OpCode code, std::span<const TensorType> operands, const OpAttrs &attrs);

/// Normalizes reduction axes for rank `rank`: negative axes count from the end, an empty list
/// means all axes, duplicates are an error. Returns them sorted.
std::vector<int64_t> normalizeAxes(std::span<const int64_t> axes, int64_t rank);

} // namespace gt
