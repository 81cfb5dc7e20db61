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

enum class OpKind : uint8_t { Creation, Unary, Binary, Compare, Select, Matmul, Layout, Reduction, Index, Lifetime, Distribution };

/// Attributes an instruction may carry. Which ones an op reads is documented per op below.
struct OpAttrs {
  Shape shape;               ///< upload/full/rand(n)/reshape/broadcast_to/slice/index_add/scatter_add: the result shape
  std::vector<int64_t> axes; ///< reductions: reduced axes (normalized, sorted; argmax/argmin: exactly one);
                             ///< transpose: permutation; concat/index_select/index_add/gather/scatter_add: {axis}
  std::vector<int64_t> starts; ///< slice/slice_scatter: first index along every axis (>= 0)
  std::vector<int64_t> steps;  ///< slice/slice_scatter: stride along every axis (>= 1)
  bool keepdims = false;     ///< reductions: keep reduced axes as size 1
  double value = 0.0;        ///< full: the fill value
  int64_t seed = 0;          ///< randn/rand: the random stream (same seed and shape -> same values)
  int64_t count = 0;         ///< one_hot: number of classes
  DType dtype = DType::Float32; ///< upload/full/randn/cast/recv: the result dtype
  std::vector<int64_t> workers; ///< collectives: the group in rank order; move: the destinations;
                                ///< send/recv: {peer worker}
  std::vector<int64_t> sources; ///< move: the workers that hold the value
  uint8_t reduce = 0;           ///< all_reduce/reduce_scatter: a gt::ReduceKind (sum, max, min)
};

struct OpInfo {
  OpCode code;
  const char *mnemonic; ///< "add"; the dialect op is "gt.add"
  OpKind kind;
  int arity;            ///< operand count, -1 when optional operands exist (full, randn)
};

/// The most tensors one concat op joins (its kernel takes each as an argument; gt.cat joins
/// longer lists in steps).
inline constexpr int kMaxConcatOperands = 32;

/// Throws std::out_of_range for a code that is not an op.
const OpInfo &opInfo(OpCode code);
/// Whether `code` may sit in a fused region (gt.region): fills, elementwise, where, layout,
/// reductions and one_hot. Not upload/randn (data), matmul (BLAS/cuBLAS) or free.
bool isFusible(OpCode code);
/// A text form of the attributes that shape an op's code (axes, keepdims, count, starts,
/// steps; not fill values or seeds, which kernels take at run time): part of kernel keys.
std::string attrsKey(const OpAttrs &attrs);
/// Looks an op up by its mnemonic ("add"); nullptr if there is none.
const OpInfo *lookupOp(std::string_view mnemonic);

/// The result type of `code` applied to operands of types `operands` with `attrs`.
///
/// Shape rules: unary/cast keep the shape; binary/compare/where broadcast like NumPy; matmul
/// contracts the last axis of a with the second-to-last of b (1-D operands are promoted as in
/// NumPy, batch axes broadcast); transpose permutes by attrs.axes; reshape keeps the element
/// count; reductions drop (or keep as 1) attrs.axes; one_hot appends attrs.count classes;
/// slice takes attrs.shape elements from attrs.starts by attrs.steps (slice_scatter writes its
/// second operand there into a copy of the first); concat joins along attrs.axes[0];
/// index_select(x, idx) picks idx (1-D) along the axis, index_add(idx, src) is its adjoint into
/// attrs.shape; gather(x, idx) picks idx[...] along the axis (torch.gather; idx has x's sizes on
/// the other axes), scatter_add(idx, src) is its adjoint into attrs.shape. Distribution ops
/// (shard, all_reduce, all_gather, reduce_scatter, all_to_all, all_slice, move) keep the dtype
/// and rank and give attrs.shape (the dispatcher's global view keeps the shape; a worker's
/// local view changes the split axis); recv gives attrs.dtype/attrs.shape; send gives nothing.
/// Dtype rules: arithmetic promotes (bool < int32 < int64 < float32 < float64); exp/log/sqrt/
/// sigmoid/tanh/div and the other transcendental functions need floats; comparisons give bool;
/// where needs a bool condition; argmax/argmin give int64; indices must be int32 or int64.
///
/// Throws ShapeError (Python ValueError) or DTypeError (Python TypeError) naming the op and the
/// offending shapes or dtypes; ShapeError also when the result's size in bytes does not fit in
/// 64 bits; std::invalid_argument for a wrong operand count or an unknown op code.
TensorType inferType(OpCode code, std::span<const TensorType> operands, const OpAttrs &attrs);

/// Normalizes reduction axes for rank `rank`: negative axes count from the end, an empty list
/// means all axes, duplicates are an error. Returns them sorted.
std::vector<int64_t> normalizeAxes(std::span<const int64_t> axes, int64_t rank);

} // namespace gt
