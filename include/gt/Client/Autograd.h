// The backward formulas of the derivative table (gt/Core/Derivatives.h), run by the client core.
//
// The autograd tape hands each recorded op's node here during a backward pass: the formulas
// of ops/*.yaml (`grad:`), compiled into steps by ops/generate.py, are evaluated step by step,
// every op step emitted through a GradEmitter. The Python module (python/src/module.cpp) has
// two emitters: one that records the ops straight into the session's instruction stream (a
// plain backward pass), and one that issues them through gt's Python `_op`, so that they are
// recorded on the tape themselves (create_graph, for higher derivatives) and seen by the
// profiler. The helpers a formula may call (unbroadcast, expand_reduced, ...; the list is
// ops/generate.py's HELPERS) are implemented here, on the emitter.
#pragma once

#include "gt/Core/Derivatives.h"
#include "gt/Core/OpTable.h"

#include <functional>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace gt::client {

/// A float32/float16/bfloat16 sum over at least this many elements per result accumulates in
/// float64 (a cast before, one back after): a float32 accumulator loses digits as its count grows
/// (4M values of 0.1 summed down a column came to a mean of 0.096). Used by the gradient of a
/// broadcast operand here and by gt.sum / gt.mean (gt._C.precise_sum_min).
inline constexpr int64_t kPreciseSumMin = 4096;

/// A value a formula computes with.
struct GradValue {
  enum class Kind : uint8_t {
    None,      ///< no gradient
    Tensor,    ///< `id`, `type`; `owner` keeps it alive
    Number,    ///< `number` (`isFloat`: a Python float, else an int or bool)
    Ints,      ///< `ints`: a shape, an axis list, a permutation
    Tensors,   ///< `tensors`: a list (split_as; the operands of a variadic op)
    SliceGrad, ///< slice_grad's lazy gradient: zeros of `type` but `tensors[0]` at the window
               ///< (`ints` = starts, `steps`); the Python autograd joins these (gt._derivatives)
  };
  Kind kind = Kind::None;
  uint64_t id = 0;
  TensorType type;
  /// The emitter's object for this tensor (a gt.Tensor or a handle): while any copy of the
  /// value holds it the tensor lives; the last copy dropped frees an intermediate.
  std::shared_ptr<void> owner;
  double number = 0.0;
  bool isFloat = false;
  std::vector<int64_t> ints;
  std::vector<int64_t> steps;
  std::vector<GradValue> tensors;

  static GradValue tensor(uint64_t id, TensorType type, std::shared_ptr<void> owner) {
    GradValue v;
    v.kind = Kind::Tensor;
    v.id = id;
    v.type = std::move(type);
    v.owner = std::move(owner);
    return v;
  }
  static GradValue num(double n, bool isFloat) {
    GradValue v;
    v.kind = Kind::Number;
    v.number = n;
    v.isFloat = isFloat;
    return v;
  }
  static GradValue list(std::vector<int64_t> ints) {
    GradValue v;
    v.kind = Kind::Ints;
    v.ints = std::move(ints);
    return v;
  }
  bool isTensor() const { return kind == Kind::Tensor; }
  const Shape &shape() const { return type.shape; }
  size_t rank() const { return type.shape.size(); }
};

/// One attribute of an op a formula emits: its spec name and value (a Number or Ints).
using GradAttrs = std::vector<std::pair<std::string_view, GradValue>>;

/// Where a formula's ops go.
class GradEmitter {
public:
  virtual ~GradEmitter() = default;
  /// Records op(operands) with `attrs` and returns its result. A Number operand becomes a 0-d
  /// tensor as gt's Python ops make one: of the first tensor operand's dtype (a float with an
  /// integer or bool tensor: float32; an int with a bool tensor: int64). Throws what the op
  /// table throws for bad shapes or dtypes.
  virtual GradValue op(OpCode op, const std::vector<GradValue> &operands, const GradAttrs &attrs) = 0;
  /// The tensor without its autograd history (Tensor.detach): the same tensor where nothing is
  /// recorded.
  virtual GradValue detach(const GradValue &v) { return v; }
};

/// Reads an attribute of the forward op by its spec (the value it ran with, or the default).
using GradAttrLookup = std::function<GradValue(const AttrSpec &)>;

/// Whether the derivative table has formulas for `op`.
bool hasDerivatives(OpCode op);

/// The gradients of the operands of op `op` (one per operand; None where `needs` is false or
/// the operand has no formula), given `g`, the gradient of its result `result`, its operands
/// `inputs` and its attributes. A variadic op (concat) gets one gradient per tensor of
/// `inputs`, whatever `needs` says. Emits the formulas' ops through `emit`; throws
/// std::invalid_argument for an op without formulas, and what `emit` throws.
std::vector<GradValue> runDerivatives(GradEmitter &emit, OpCode op, const GradValue &g, const GradValue &result,
                                      const std::vector<GradValue> &inputs, const GradAttrLookup &attr,
                                      const std::vector<bool> &needs);

} // namespace gt::client
