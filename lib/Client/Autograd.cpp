// The derivative table's formulas, evaluated on a GradEmitter (see Autograd.h).
#include "gt/Client/Autograd.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace gt::client {
namespace {

using Kind = GradValue::Kind;

/// The derivative table's entries by op: kEntries[op] lists (operand, steps).
struct Index {
  std::array<std::vector<const Derivative *>, size_t(OpCode::NumOps)> byOp;
  Index() {
    for (const Derivative &d : derivatives()) byOp[size_t(d.op)].push_back(&d);
  }
};

const Index &index() {
  static const Index table;
  return table;
}

OpCode codeOf(const char *mnemonic) {
  const OpInfo *info = lookupOp(mnemonic);
  if (!info) throw std::logic_error(std::string("derivative table: unknown op ") + mnemonic);
  return info->code;
}

/// The helpers and op calls of one formula, on an emitter.
class Formula {
public:
  explicit Formula(GradEmitter &e) : e_(e) {}

  GradValue op(OpCode code, std::vector<GradValue> operands, const GradAttrs &attrs = {}) {
    return e_.op(code, operands, attrs);
  }

  /// x reshaped to `shape` (x itself when it has that shape).
  GradValue reshaped(const GradValue &x, const Shape &shape) {
    if (x.shape() == shape) return x;
    return op(OpCode::Reshape, {x}, {{"shape", GradValue::list(shape)}});
  }

  GradValue castTo(const GradValue &x, DType dtype) {
    if (x.type.dtype == dtype) return x;
    return op(OpCode::Cast, {x}, {{"dtype", GradValue::num(double(int(dtype)), false)}});
  }

  GradValue transposed(const GradValue &x, const std::vector<int64_t> &perm) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int64_t(i)) return op(OpCode::Transpose, {x}, {{"perm", GradValue::list(perm)}});
    return x;
  }

  // ---- the helpers (ops/generate.py HELPERS; the Python autograd's former gt._derivatives)

  /// g summed over the axes broadcasting added or stretched, to x's shape (x a tensor or a shape).
  GradValue unbroadcast(const GradValue &g, const GradValue &x) {
    const Shape &shape = x.kind == Kind::Ints ? x.ints : x.shape();
    if (g.shape() == shape) return g;
    size_t lead = g.rank() - shape.size();
    std::vector<int64_t> axes;
    for (size_t i = 0; i < lead; ++i) axes.push_back(int64_t(i));
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == 1 && g.shape()[lead + i] != 1) axes.push_back(int64_t(lead + i));
    int64_t count = 1; // elements summed into each result
    for (int64_t a : axes) count *= g.shape()[size_t(a)];
    DType dtype = g.type.dtype;
    // A long float sum accumulates in float64 (kPreciseSumMin; a convolution bias's gradient
    // sums N x H x W elements).
    bool wide = count >= kPreciseSumMin && (dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16);
    GradValue s = op(OpCode::Sum, {wide ? castTo(g, DType::Float64) : g},
                     {{"axes", GradValue::list(axes)}, {"keepdims", GradValue::num(1, false)}});
    return reshaped(wide ? castTo(s, dtype) : s, shape);
  }

  GradValue castLike(const GradValue &a, const GradValue &b) { return castTo(a, b.type.dtype); }

  /// -1, 0 or 1 by the sign of x, in x's dtype.
  GradValue sign(const GradValue &x) {
    GradValue zero = GradValue::num(0, false);
    GradValue pos = castTo(op(OpCode::Gt, {x, zero}), x.type.dtype);
    GradValue neg = castTo(op(OpCode::Lt, {x, zero}), x.type.dtype);
    return op(OpCode::Sub, {pos, neg});
  }

  GradValue zerosLike(const GradValue &x) {
    return op(OpCode::Full, {}, {{"shape", GradValue::list(x.shape())}, {"value", GradValue::num(0.0, true)},
                                 {"dtype", GradValue::num(double(int(x.type.dtype)), false)}});
  }

  /// x with its last two axes swapped.
  GradValue mT(const GradValue &x) {
    if (x.rank() < 2) throw ShapeError("mT: a tensor of " + std::to_string(x.rank()) + " axes has no last two axes to swap");
    std::vector<int64_t> perm(x.rank());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
    std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
    return transposed(x, perm);
  }

  /// matmul's rhs gradient: mT(lhs) @ g summed to rhs's shape. When rhs is one (k, n) matrix
  /// that every batch element of a (..., m, k) lhs multiplied, it is one (k, N) @ (N, n)
  /// product over all N rows of lhs (as PyTorch's matmul backward folds them) instead of a
  /// batch of products summed afterwards.
  GradValue matmulRhsGrad(const GradValue &lhs, const GradValue &g, const GradValue &rhs) {
    if (rhs.rank() == 2 && lhs.rank() > 2) {
      int64_t rows = 1;
      for (size_t i = 0; i + 1 < lhs.rank(); ++i) rows *= lhs.shape()[i];
      GradValue rowsLhs = reshaped(lhs, {rows, lhs.shape().back()});
      GradValue rowsG = reshaped(g, {rows, g.shape().back()});
      return op(OpCode::Matmul, {mT(rowsLhs), rowsG});
    }
    return unbroadcast(op(OpCode::Matmul, {mT(lhs), g}), rhs);
  }

  static GradValue inversePerm(const GradValue &perm) {
    std::vector<int64_t> inverse(perm.ints.size());
    for (size_t i = 0; i < perm.ints.size(); ++i) inverse.at(size_t(perm.ints[i])) = int64_t(i);
    return GradValue::list(inverse);
  }

  /// A reduction's gradient g (over `axes` of x, keepdims or not) broadcast back to x's shape.
  GradValue expandReduced(GradValue g, const GradValue &x, const GradValue &axes, const GradValue &keepdims) {
    if (!truth(keepdims)) g = reshaped(g, keptShape(x, axes));
    if (g.type.dtype != x.type.dtype && isFloat(x.type.dtype)) g = castTo(g, x.type.dtype);
    if (g.shape() == x.shape()) return g;
    return op(OpCode::BroadcastTo, {g}, {{"shape", GradValue::list(x.shape())}});
  }

  static GradValue reducedCount(const GradValue &x, const GradValue &axes) {
    double count = 1;
    for (int64_t a : axes.ints) count *= double(x.shape().at(size_t(a)));
    return GradValue::num(count, true);
  }

  /// amax/amin: the gradient goes to the elements equal to the result, shared evenly between
  /// ties (as PyTorch).
  GradValue extremumGrad(const GradValue &g, const GradValue &result, const GradValue &x, const GradValue &axes,
                         const GradValue &keepdims) {
    GradValue m = truth(keepdims) ? result : reshaped(result, keptShape(x, axes));
    GradValue mask = castTo(op(OpCode::Eq, {x, e_.detach(m)}), x.type.dtype);
    GradValue count = op(OpCode::Sum, {mask}, {{"axes", axes}, {"keepdims", GradValue::num(1, false)}});
    mask = op(OpCode::Div, {mask, count});
    return op(OpCode::Mul, {expandReduced(g, x, axes, keepdims), mask});
  }

  /// g cut along `axis` into pieces the sizes of `tensors` along it.
  GradValue splitAs(const GradValue &g, const GradValue &tensors, const GradValue &axisValue) {
    size_t axis = size_t(axisValue.number);
    GradValue out;
    out.kind = Kind::Tensors;
    int64_t start = 0;
    for (const GradValue &t : tensors.tensors) {
      std::vector<int64_t> starts(g.rank(), 0), steps(g.rank(), 1);
      Shape shape = g.shape();
      starts.at(axis) = start;
      shape.at(axis) = t.shape().at(axis);
      out.tensors.push_back(op(OpCode::Slice, {g}, {{"shape", GradValue::list(shape)}, {"starts", GradValue::list(starts)},
                                                   {"steps", GradValue::list(steps)}}));
      start += t.shape()[axis];
    }
    return out;
  }

  /// gt.slice's gradient, kept lazy (GradValue::Kind::SliceGrad).
  static GradValue sliceGrad(const GradValue &g, const GradValue &x, const GradValue &starts, const GradValue &steps) {
    GradValue v;
    v.kind = Kind::SliceGrad;
    v.type = x.type;
    v.ints = starts.ints;
    v.steps = steps.ints;
    v.tensors = {g};
    return v;
  }

  GradValue helper(const DerivativeStep &s, const std::vector<GradValue> &vals) {
    auto arg = [&](int i) -> const GradValue & { return vals.at(size_t(s.args[i])); };
    std::string_view name = s.name;
    if (name == "unbroadcast") return unbroadcast(arg(0), arg(1));
    if (name == "cast_like") return castLike(arg(0), arg(1));
    if (name == "sign") return sign(arg(0));
    if (name == "zeros_like") return zerosLike(arg(0));
    if (name == "mT") return mT(arg(0));
    if (name == "matmul_rhs_grad") return matmulRhsGrad(arg(0), arg(1), arg(2));
    if (name == "inverse_perm") return inversePerm(arg(0));
    if (name == "expand_reduced") return expandReduced(arg(0), arg(1), arg(2), arg(3));
    if (name == "reduced_count") return reducedCount(arg(0), arg(1));
    if (name == "extremum_grad") return extremumGrad(arg(0), arg(1), arg(2), arg(3), arg(4));
    if (name == "split_as") return splitAs(arg(0), arg(1), arg(2));
    if (name == "slice_grad") return sliceGrad(arg(0), arg(1), arg(2), arg(3));
    throw std::logic_error("derivative table: no helper " + std::string(name));
  }

private:
  static bool truth(const GradValue &v) { return v.kind == Kind::Number && v.number != 0; }
  static bool isFloat(DType d) { return isFloating(d); }
  /// x's shape with the reduced axes kept as 1.
  static Shape keptShape(const GradValue &x, const GradValue &axes) {
    Shape shape = x.shape();
    for (int64_t a : axes.ints) shape.at(size_t(a)) = 1;
    return shape;
  }

  GradEmitter &e_;
};

GradValue constant(const char *text) {
  bool isFloat = std::strpbrk(text, ".eEn") != nullptr; // "1.0", "1e-3", "inf", "nan"
  return GradValue::num(std::strtod(text, nullptr), isFloat);
}

/// Arithmetic on numbers alone (a formula's `-0.5` or `2.0 * 0.5`) is a number, as Python
/// computes it; nullopt when an operand is a tensor.
std::optional<GradValue> fold(OpCode code, const std::vector<GradValue> &args) {
  for (const GradValue &a : args)
    if (a.kind != Kind::Number) return std::nullopt;
  bool isFloat = false;
  for (const GradValue &a : args) isFloat |= a.isFloat;
  switch (code) {
  case OpCode::Neg: return GradValue::num(-args[0].number, isFloat);
  case OpCode::Add: return GradValue::num(args[0].number + args[1].number, isFloat);
  case OpCode::Sub: return GradValue::num(args[0].number - args[1].number, isFloat);
  case OpCode::Mul: return GradValue::num(args[0].number * args[1].number, isFloat);
  case OpCode::Div: return GradValue::num(args[0].number / args[1].number, true);
  default: throw std::logic_error(std::string("derivative table: ") + opInfo(code).mnemonic + " of numbers alone");
  }
}

/// The value of one formula (the last step of `steps`).
GradValue evaluate(Formula &f, GradEmitter &e, OpCode op, std::span<const DerivativeStep> steps, const GradValue &g,
                   const GradValue &result, const std::vector<GradValue> &inputs, bool variadic,
                   const GradAttrLookup &attr) {
  std::vector<GradValue> vals;
  vals.reserve(steps.size());
  for (const DerivativeStep &s : steps) {
    auto arg = [&](int i) -> const GradValue & { return vals.at(size_t(s.args[i])); };
    switch (s.kind) {
    case StepKind::Input:
      if (variadic) {
        GradValue all;
        all.kind = Kind::Tensors;
        all.tensors = inputs;
        vals.push_back(std::move(all));
      } else {
        vals.push_back(inputs.at(size_t(s.args[0])));
      }
      break;
    case StepKind::Grad: vals.push_back(g); break;
    case StepKind::Result: vals.push_back(result); break;
    case StepKind::Attr: {
      const AttrSpec *spec = findAttr(op, s.name);
      if (!spec) throw std::logic_error(std::string("derivative table: ") + opInfo(op).mnemonic + " has no attribute " + s.name);
      vals.push_back(attr(*spec));
      break;
    }
    case StepKind::Const: vals.push_back(constant(s.name)); break;
    case StepKind::Shape: vals.push_back(GradValue::list(arg(0).shape())); break;
    case StepKind::List: {
      std::vector<int64_t> ints;
      for (int i = 0; i < s.numArgs; ++i) {
        const GradValue &v = arg(i);
        if (v.kind == Kind::Ints) ints.insert(ints.end(), v.ints.begin(), v.ints.end());
        else ints.push_back(int64_t(v.number));
      }
      vals.push_back(GradValue::list(std::move(ints)));
      break;
    }
    case StepKind::Op: {
      std::vector<GradValue> args;
      args.reserve(size_t(s.numArgs));
      for (int i = 0; i < s.numArgs; ++i) args.push_back(arg(i));
      OpCode code = codeOf(s.name);
      if (std::optional<GradValue> folded = fold(code, args)) { // `-0.5`: a number, as in Python
        vals.push_back(*folded);
        break;
      }
      GradAttrs attrs;
      for (int k = 0; k < s.numKeywords; ++k) attrs.emplace_back(s.keywords[k].name, vals.at(size_t(s.keywords[k].step)));
      vals.push_back(e.op(code, args, attrs));
      break;
    }
    case StepKind::Helper: vals.push_back(f.helper(s, vals)); break;
    }
  }
  return vals.back();
}

} // namespace

bool hasDerivatives(OpCode op) { return size_t(op) < size_t(OpCode::NumOps) && !index().byOp[size_t(op)].empty(); }

std::vector<GradValue> runDerivatives(GradEmitter &emit, OpCode op, const GradValue &g, const GradValue &result,
                                      const std::vector<GradValue> &inputs, const GradAttrLookup &attr,
                                      const std::vector<bool> &needs) {
  if (!hasDerivatives(op)) throw std::invalid_argument(std::string(opInfo(op).mnemonic) + " has no derivative formulas");
  const auto &entries = index().byOp[size_t(op)];
  bool variadic = opInfo(op).arity == -1;
  Formula f(emit);
  if (variadic) { // one formula giving a list, one gradient per tensor
    GradValue all = evaluate(f, emit, op, entries.front()->steps, g, result, inputs, true, attr);
    if (all.kind != Kind::Tensors || all.tensors.size() != inputs.size())
      throw std::logic_error(std::string("derivative table: ") + opInfo(op).mnemonic + "'s formula gave no gradient per operand");
    return std::move(all.tensors);
  }
  std::vector<GradValue> grads(inputs.size());
  for (const Derivative *d : entries) {
    size_t i = size_t(d->operand);
    if (i >= inputs.size() || (i < needs.size() && !needs[i])) continue;
    grads[i] = evaluate(f, emit, op, d->steps, g, result, inputs, false, attr);
  }
  return grads;
}

} // namespace gt::client
