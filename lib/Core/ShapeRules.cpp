// The shape rules of the op spec (see gt/Core/ShapeRules.h); ops/*.yaml names one per op.
#include "gt/Core/ShapeRules.h"

#include <algorithm>

namespace gt::shape {
namespace {

[[noreturn]] void dtypeError(const OpInfo &op, const std::string &why) {
  throw DTypeError(std::string(op.mnemonic) + ": " + why);
}

std::string typeList(std::span<const TensorType> ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i)
    s += (i ? ", " : "") + std::string(dtypeName(ts[i].dtype)) + shapeString(ts[i].shape);
  return s;
}

int64_t theAxis(const OpInfo &op, const OpAttrs &attrs, int64_t rank) {
  if (attrs.axes.size() != 1)
    throw ShapeError(std::string(op.mnemonic) + ": expects exactly one axis, got " + shapeString(attrs.axes));
  int64_t a = attrs.axes[0];
  if (a < 0 || a >= std::max<int64_t>(rank, 1) || rank == 0)
    throw ShapeError(std::string(op.mnemonic) + ": axis " + std::to_string(a) + " is out of range for rank " +
                     std::to_string(rank));
  return a;
}

void needIndices(const OpInfo &op, const TensorType &idx) {
  if (idx.dtype != DType::Int64 && idx.dtype != DType::Int32)
    dtypeError(op, std::string("indices must be int64 or int32, got ") + dtypeName(idx.dtype));
}

/// slice / slice_scatter: the window `window` taken from `base` at attrs.starts by attrs.steps.
void checkWindow(const OpInfo &op, const Shape &base, const Shape &window, const OpAttrs &attrs) {
  size_t rank = base.size();
  if (window.size() != rank || attrs.starts.size() != rank || attrs.steps.size() != rank)
    throw ShapeError(std::string(op.mnemonic) + ": a window of " + shapeString(window) + " with starts " +
                     shapeString(attrs.starts) + " and steps " + shapeString(attrs.steps) +
                     " does not fit the rank of " + shapeString(base));
  for (size_t d = 0; d < rank; ++d) {
    int64_t start = attrs.starts[d], step = attrs.steps[d], n = window[d], last = 0;
    // The last index read, start + (n - 1) * step, overflow-checked (a huge step must not wrap
    // around into range: the kernel would read outside the tensor).
    bool ok = step >= 1 && start >= 0 && n >= 0 &&
              (n == 0 ? start <= base[d]
                      : !__builtin_mul_overflow(n - 1, step, &last) && !__builtin_add_overflow(start, last, &last) &&
                            last < base[d]);
    if (!ok)
      throw ShapeError(std::string(op.mnemonic) + ": " + std::to_string(n) + " elements from " + std::to_string(start) +
                       " by " + std::to_string(step) + " do not fit axis " + std::to_string(d) + " of " +
                       shapeString(base));
  }
}

/// im2col / col2im: `image` (N, C, *spatial) and `cols` (N, *out, C, *kernel) agree, with one
/// padding (>= 0), stride (>= 1) and dilation (>= 1) per spatial axis (attrs.starts, steps,
/// axes), and every tap's input position o * stride - padding + k * dilation fits in 64 bits.
void checkWindows(const OpInfo &op, const Shape &image, const Shape &cols, const OpAttrs &attrs) {
  size_t n = image.size() >= 3 ? image.size() - 2 : 0;
  std::string what = std::string(op.mnemonic) + ": windows " + shapeString(cols) + " of " + shapeString(image) +
                     " with padding " + shapeString(attrs.starts) + ", stride " + shapeString(attrs.steps) +
                     " and dilation " + shapeString(attrs.axes);
  if (n == 0 || cols.size() != 2 * n + 2 || attrs.starts.size() != n || attrs.steps.size() != n ||
      attrs.axes.size() != n)
    throw ShapeError(what + ": expected an image (N, C, *spatial) with at least one spatial axis, windows (N, *out, "
                            "C, *kernel) and one padding, stride and dilation per spatial axis");
  if (cols[0] != image[0] || cols[1 + n] != image[1])
    throw ShapeError(what + ": the batch and channel sizes differ");
  for (size_t i = 0; i < n; ++i) {
    int64_t out = cols[1 + i], k = cols[2 + n + i], s = attrs.steps[i], p = attrs.starts[i], d = attrs.axes[i], last = 0,
            span = 0;
    bool ok = out >= 0 && k >= 1 && s >= 1 && d >= 1 && p >= 0 && image[2 + i] >= 0 &&
              !__builtin_mul_overflow(std::max<int64_t>(out - 1, 0), s, &last) &&
              !__builtin_mul_overflow(k - 1, d, &span) && !__builtin_add_overflow(last, span, &last) &&
              !__builtin_add_overflow(image[2 + i], p, &span) && last < (int64_t(1) << 62) && span < (int64_t(1) << 62);
    if (!ok)
      throw ShapeError(what + ": spatial axis " + std::to_string(i) +
                       " needs out >= 0, kernel >= 1, stride >= 1, dilation >= 1, padding >= 0 and positions that fit in "
                       "64 bits");
  }
}

} // namespace

TensorType im2col(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  checkWindows(op, in[0].shape, attrs.shape, attrs);
  return {in[0].dtype, attrs.shape};
}

TensorType col2im(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  if (in[0].dtype == DType::Bool) dtypeError(op, "sums windows, which bool tensors cannot");
  checkWindows(op, attrs.shape, in[0].shape, attrs);
  return {in[0].dtype, attrs.shape};
}

namespace {

/// A convolution of `input` (N, C, *spatial) by `weight` (O, C / groups, *kernel) into `output`
/// (N, O, *out), with one padding (>= 0, attrs.starts), stride (>= 1, steps) and dilation (>= 1,
/// axes) per spatial axis and attrs.count groups: every size agrees, and out = (spatial + padding
/// + padding_after - dilation (kernel - 1) - 1) / stride + 1 (rounded down) for some
/// padding_after >= 0, the windows starting inside the padded input. All operands float32.
void checkConvolution(const OpInfo &op, std::span<const TensorType> in, const Shape &input, const Shape &weight,
                      const Shape &output, const OpAttrs &attrs) {
  for (const TensorType &t : in)
    if (t.dtype != DType::Float32) dtypeError(op, std::string("supports float32 tensors, got ") + dtypeName(t.dtype));
  size_t n = input.size() >= 3 ? input.size() - 2 : 0;
  std::string what = std::string(op.mnemonic) + ": input " + shapeString(input) + ", weight " + shapeString(weight) +
                     ", output " + shapeString(output) + " with padding " + shapeString(attrs.starts) + ", stride " +
                     shapeString(attrs.steps) + ", dilation " + shapeString(attrs.axes) + " and " +
                     std::to_string(attrs.count) + " groups";
  if (n < 1 || n > 3 || weight.size() != n + 2 || output.size() != n + 2 || attrs.starts.size() != n ||
      attrs.steps.size() != n || attrs.axes.size() != n)
    throw ShapeError(what + ": expected 1 to 3 spatial axes, (N, C, *spatial), (O, C / groups, *kernel), (N, O, *out) "
                            "and one padding, stride and dilation per spatial axis");
  int64_t groups = attrs.count;
  if (groups < 1 || weight[0] < 1 || weight[1] < 1 || input[0] < 0 || weight[0] % groups || input[1] != weight[1] * groups || output[0] != input[0] ||
      output[1] != weight[0])
    throw ShapeError(what + ": the batch and channel sizes do not agree (C = C / groups * groups, O a multiple of "
                            "groups)");
  for (size_t i = 0; i < n; ++i) {
    int64_t size = input[2 + i], k = weight[2 + i], out = output[2 + i], s = attrs.steps[i], p = attrs.starts[i],
            d = attrs.axes[i], span = 0, last = 0, limit = int64_t(1) << 31; // so that the products below fit in 64 bits
    bool ok = size >= 1 && k >= 1 && out >= 1 && s >= 1 && d >= 1 && p >= 0 && size < limit && k < limit &&
              out < limit && s < limit && d < limit && p < limit;
    span = ok ? d * (k - 1) + 1 : 0;     // the taps a window covers
    last = ok ? (out - 1) * s : 0;       // where the last window starts, in the padded input
    // The padding after the input that `out` windows need: out = (size + p + after - span) / s + 1
    // (rounded down) for some after >= 0.
    int64_t after = last + span - size - p;
    if (!ok || after <= -s || last >= size + p)
      throw ShapeError(what + ": spatial axis " + std::to_string(i) + " needs sizes from 1 to 2^31 - 1, stride, "
                       "dilation >= 1, padding >= 0, and as many windows as (size + padding + padding_after - dilation * (kernel - "
                       "1) - 1) / stride + 1 for some padding_after >= 0");
  }
}

/// A max pool of `input` (N, C, *spatial) into `output` (N, C, *out): attrs.axes the kernel,
/// attrs.starts the padding (0 to kernel / 2), attrs.steps the stride (>= 1), one per spatial
/// axis; out = (spatial + padding + padding_after - kernel) / stride + 1 (rounded down) for
/// some padding_after >= 0, each window starting inside the input or the padding before it.
/// All operands float32.
void checkMaxPool(const OpInfo &op, std::span<const TensorType> in, const Shape &input, const Shape &output,
                  const OpAttrs &attrs) {
  for (const TensorType &t : in)
    if (t.dtype != DType::Float32) dtypeError(op, std::string("supports float32 tensors, got ") + dtypeName(t.dtype));
  size_t n = input.size() >= 3 ? input.size() - 2 : 0;
  std::string what = std::string(op.mnemonic) + ": input " + shapeString(input) + ", output " + shapeString(output) +
                     " with kernel " + shapeString(attrs.axes) + ", padding " + shapeString(attrs.starts) +
                     " and stride " + shapeString(attrs.steps);
  if (n < 1 || n > 3 || output.size() != n + 2 || attrs.axes.size() != n || attrs.starts.size() != n ||
      attrs.steps.size() != n)
    throw ShapeError(what + ": expected 1 to 3 spatial axes, (N, C, *spatial), (N, C, *out) and one kernel size, "
                            "padding and stride per spatial axis");
  if (input[0] < 0 || input[1] < 0 || output[0] != input[0] || output[1] != input[1])
    throw ShapeError(what + ": the batch and channel sizes differ");
  for (size_t i = 0; i < n; ++i) {
    int64_t size = input[2 + i], k = attrs.axes[i], out = output[2 + i], s = attrs.steps[i], p = attrs.starts[i],
            limit = int64_t(1) << 31; // so that the products below fit in 64 bits
    bool ok = size >= 1 && k >= 1 && out >= 1 && s >= 1 && p >= 0 && p <= k / 2 && size < limit && k < limit &&
              out < limit && s < limit;
    int64_t last = ok ? (out - 1) * s : 0, after = ok ? last + k - size - p : 0;
    if (!ok || after <= -s || last >= size + p)
      throw ShapeError(what + ": spatial axis " + std::to_string(i) + " needs sizes from 1 to 2^31 - 1, stride >= 1, padding from "
                       "0 to kernel / 2, and as many windows as (size + padding + padding_after - kernel) / stride + 1 "
                       "for some padding_after >= 0, each starting inside the input or the padding before it");
  }
}

} // namespace

TensorType maxPool(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  checkMaxPool(op, in, in[0].shape, attrs.shape, attrs);
  return {DType::Float32, attrs.shape};
}

TensorType maxPoolBackward(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  if (in[1].shape != attrs.shape)
    throw ShapeError(std::string(op.mnemonic) + ": the result " + shapeString(attrs.shape) + " must have the input's shape " +
                     shapeString(in[1].shape));
  checkMaxPool(op, in, in[1].shape, in[0].shape, attrs);
  return {DType::Float32, attrs.shape};
}

TensorType convolution(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  checkConvolution(op, in, in[0].shape, in[1].shape, attrs.shape, attrs);
  return {DType::Float32, attrs.shape};
}

TensorType convolutionBackwardInput(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  checkConvolution(op, in, attrs.shape, in[1].shape, in[0].shape, attrs);
  return {DType::Float32, attrs.shape};
}

TensorType convolutionBackwardWeight(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  checkConvolution(op, in, in[1].shape, attrs.shape, in[0].shape, attrs);
  return {DType::Float32, attrs.shape};
}

DType ruleDType(const OpInfo &op, DType x, const OpAttrs &attrs) {
  switch (op.dtypeRule) {
  case DTypeRule::Attr: return attrs.dtype;
  case DTypeRule::Any: case DTypeRule::None: return x;
  case DTypeRule::Numeric:
    if (x == DType::Bool)
      dtypeError(op, op.code == OpCode::Neg ? "negation of a bool tensor is not supported; use logical_not"
                                            : "is not supported for bool tensors");
    return x;
  case DTypeRule::Accumulate: return x == DType::Bool || x == DType::Int32 ? DType::Int64 : x;
  case DTypeRule::Index:
    if (x == DType::Bool) dtypeError(op, "is not supported for bool tensors");
    return DType::Int64;
  case DTypeRule::Integral:
    if (isFloating(x)) dtypeError(op, std::string("is only supported for integer and bool tensors, got ") + dtypeName(x));
    return x;
  default:
    if (!isFloating(x)) dtypeError(op, std::string("expects a floating-point tensor, got ") + dtypeName(x));
    return x;
  }
}

TensorType creation(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  if (in.size() > 1) throw std::invalid_argument(std::string(op.mnemonic) + ": takes at most one scalar operand");
  if (op.dtypeRule == DTypeRule::FloatAttr && !isFloating(attrs.dtype))
    dtypeError(op, std::string("needs a floating-point dtype, got ") + dtypeName(attrs.dtype));
  return {attrs.dtype, attrs.shape};
}

TensorType unary(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  return {ruleDType(op, in[0].dtype, attrs), in[0].shape};
}

TensorType broadcast(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &) {
  Shape shape = broadcastShapes(in[0].shape, in[1].shape);
  if (op.dtypeRule == DTypeRule::Bool) return {DType::Bool, shape};
  DType dt = resultType(in[0], in[1]);
  if (op.dtypeRule == DTypeRule::PromoteFloat && !isFloating(dt))
    dtypeError(op, "expects floating-point operands, got " + typeList(in) + " (cast with .float() first)");
  if (op.dtypeRule == DTypeRule::Integral && isFloating(dt))
    dtypeError(op, "is only supported for integer and bool tensors, got " + typeList(in));
  if (dt == DType::Bool && op.dtypeRule != DTypeRule::PromoteOrBool && op.dtypeRule != DTypeRule::Integral)
    dtypeError(op, "arithmetic on bool tensors is not supported, got " + typeList(in));
  return {dt, shape};
}

TensorType select(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &) {
  if (in[0].dtype != DType::Bool)
    dtypeError(op, std::string("condition must be bool, got ") + dtypeName(in[0].dtype));
  Shape shape = broadcastShapes(broadcastShapes(in[0].shape, in[1].shape), in[2].shape);
  return {resultType(in[1], in[2]), shape};
}

TensorType matmul(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &) {
  const TensorType &a = in[0], &b = in[1];
  if (!isFloating(a.dtype) || !isFloating(b.dtype))
    dtypeError(op, "expects floating-point operands, got " + std::string(dtypeName(a.dtype)) + " and " +
                       dtypeName(b.dtype));
  if (a.dtype != b.dtype)
    dtypeError(op, "operands must have the same dtype, got " + std::string(dtypeName(a.dtype)) + " and " +
                       dtypeName(b.dtype));
  if (a.shape.empty() || b.shape.empty())
    throw ShapeError("matmul: both operands need at least 1 dimension, got " + shapeString(a.shape) + " @ " +
                     shapeString(b.shape));
  // NumPy: a 1-D `a` is a row vector, a 1-D `b` a column vector; those axes are dropped again.
  Shape sa = a.shape, sb = b.shape;
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA) sa.insert(sa.begin(), 1);
  if (vecB) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), k2 = sb[sb.size() - 2], n = sb.back();
  if (k != k2)
    throw ShapeError("matmul: contraction sizes differ: " + shapeString(a.shape) + " @ " + shapeString(b.shape) +
                     " (" + std::to_string(k) + " vs " + std::to_string(k2) + ")");
  Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  Shape out = broadcastShapes(batchA, batchB);
  if (!vecA) out.push_back(m);
  if (!vecB) out.push_back(n);
  return {a.dtype, out};
}

TensorType reshape(const OpInfo &, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &x = in[0];
  if (numElements(attrs.shape) != numElements(x.shape))
    throw ShapeError("reshape: cannot reshape " + shapeString(x.shape) + " (" + std::to_string(numElements(x.shape)) +
                     " elements) into " + shapeString(attrs.shape));
  return {x.dtype, attrs.shape};
}

TensorType broadcastTo(const OpInfo &, std::span<const TensorType> in, const OpAttrs &attrs) {
  if (broadcastShapes(in[0].shape, attrs.shape) != attrs.shape)
    throw ShapeError("broadcast_to: cannot broadcast " + shapeString(in[0].shape) + " to " + shapeString(attrs.shape));
  return {in[0].dtype, attrs.shape};
}

TensorType slice(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  checkWindow(op, in[0].shape, attrs.shape, attrs);
  return {in[0].dtype, attrs.shape};
}

TensorType sliceScatter(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  if (in[1].dtype != in[0].dtype)
    dtypeError(op, "the source must have the dtype of the tensor it is written into, got " + typeList(in));
  checkWindow(op, in[0].shape, in[1].shape, attrs);
  return in[0];
}

TensorType concat(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  if (in.empty()) throw std::invalid_argument("concat: expects at least one tensor");
  if (in.size() > size_t(kMaxConcatOperands))
    throw ShapeError("concat: joins at most " + std::to_string(kMaxConcatOperands) + " tensors at once, got " +
                     std::to_string(in.size()) + " (gt.cat joins longer lists in steps)");
  const TensorType &x = in[0];
  int64_t axis = theAxis(op, attrs, int64_t(x.shape.size()));
  Shape out = x.shape;
  out[axis] = 0;
  for (const TensorType &t : in) {
    if (t.dtype != x.dtype) dtypeError(op, "all tensors must have the same dtype, got " + typeList(in));
    bool ok = t.shape.size() == x.shape.size();
    for (size_t d = 0; ok && d < x.shape.size(); ++d) ok = int64_t(d) == axis || t.shape[d] == x.shape[d];
    if (!ok) throw ShapeError("concat: sizes must match except along axis " + std::to_string(axis) + ", got " + typeList(in));
    if (__builtin_add_overflow(out[axis], t.shape[axis], &out[axis]))
      throw ShapeError("concat: the joined size along axis " + std::to_string(axis) + " does not fit in 64 bits");
  }
  return {x.dtype, out};
}

TensorType transpose(const OpInfo &, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &x = in[0];
  const auto &perm = attrs.axes; // a permutation of 0..rank-1
  Shape sorted(perm.begin(), perm.end());
  std::sort(sorted.begin(), sorted.end());
  bool ok = perm.size() == x.shape.size();
  for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == int64_t(i);
  if (!ok)
    throw ShapeError("transpose: " + shapeString(perm) + " is not a permutation of the " +
                     std::to_string(x.shape.size()) + " axes of " + shapeString(x.shape));
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape[p]);
  return {x.dtype, out};
}

TensorType reduction(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &x = in[0];
  int64_t rank = int64_t(x.shape.size());
  for (int64_t a : attrs.axes)
    if (a < 0 || a >= std::max<int64_t>(rank, 1))
      throw ShapeError(std::string(op.mnemonic) + ": axis " + std::to_string(a) + " is out of range for shape " +
                       shapeString(x.shape));
  DType dt = ruleDType(op, x.dtype, attrs);
  // max, min, argmax and argmin have no identity: they cannot reduce an empty axis
  bool extremum = op.code == OpCode::Max || op.code == OpCode::Min || op.dtypeRule == DTypeRule::Index;
  if (op.dtypeRule == DTypeRule::Index) theAxis(op, attrs, rank);
  if (extremum && rank > 0)
    for (int64_t a : attrs.axes)
      if (x.shape[a] == 0)
        throw ShapeError(std::string(op.mnemonic) + ": cannot reduce over an empty axis of " + shapeString(x.shape));
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    bool reduced = std::find(attrs.axes.begin(), attrs.axes.end(), i) != attrs.axes.end();
    if (!reduced) out.push_back(x.shape[i]);
    else if (attrs.keepdims) out.push_back(1);
  }
  return {dt, out};
}

TensorType oneHot(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &x = in[0];
  if (x.dtype != DType::Int64 && x.dtype != DType::Int32)
    dtypeError(op, std::string("class indices must be integers, got ") + dtypeName(x.dtype));
  if (attrs.count <= 0) throw ShapeError("one_hot: number of classes must be positive, got " + std::to_string(attrs.count));
  Shape out = x.shape;
  out.push_back(attrs.count);
  return {attrs.dtype, out};
}

TensorType indexSelect(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &x = in[0], &idx = in[1];
  needIndices(op, idx);
  if (idx.shape.size() != 1) throw ShapeError("index_select: the index must be 1-D, got " + shapeString(idx.shape));
  int64_t axis = theAxis(op, attrs, int64_t(x.shape.size()));
  Shape out = x.shape;
  out[axis] = idx.shape[0];
  return {x.dtype, out};
}

TensorType indexAdd(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &idx = in[0], &src = in[1];
  needIndices(op, idx);
  int64_t axis = theAxis(op, attrs, int64_t(src.shape.size()));
  bool ok = idx.shape.size() == 1 && attrs.shape.size() == src.shape.size() && src.shape[axis] == idx.shape[0];
  for (size_t d = 0; ok && d < src.shape.size(); ++d) ok = int64_t(d) == axis || attrs.shape[d] == src.shape[d];
  if (!ok)
    throw ShapeError("index_add: cannot add " + shapeString(src.shape) + " at indices " + shapeString(idx.shape) +
                     " along axis " + std::to_string(axis) + " into " + shapeString(attrs.shape));
  return {src.dtype, attrs.shape};
}

TensorType gather(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &x = in[0], &idx = in[1];
  needIndices(op, idx);
  int64_t axis = theAxis(op, attrs, int64_t(x.shape.size()));
  bool ok = idx.shape.size() == x.shape.size();
  for (size_t d = 0; ok && d < x.shape.size(); ++d) ok = int64_t(d) == axis || idx.shape[d] == x.shape[d];
  if (!ok)
    throw ShapeError("gather: the index " + shapeString(idx.shape) + " must have the shape of the input " +
                     shapeString(x.shape) + " except along axis " + std::to_string(axis));
  return {x.dtype, idx.shape};
}

TensorType scatterAdd(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &idx = in[0], &src = in[1];
  needIndices(op, idx);
  int64_t axis = theAxis(op, attrs, int64_t(src.shape.size()));
  bool ok = idx.shape == src.shape && attrs.shape.size() == src.shape.size();
  for (size_t d = 0; ok && d < src.shape.size(); ++d) ok = int64_t(d) == axis || attrs.shape[d] == src.shape[d];
  if (!ok)
    throw ShapeError("scatter_add: cannot add " + shapeString(src.shape) + " at indices " + shapeString(idx.shape) +
                     " along axis " + std::to_string(axis) + " into " + shapeString(attrs.shape));
  return {src.dtype, attrs.shape};
}

TensorType same(const OpInfo &, std::span<const TensorType> in, const OpAttrs &) { return in[0]; }

TensorType redistribute(const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  const TensorType &x = in[0];
  if (attrs.shape.size() != x.shape.size())
    throw ShapeError(std::string(op.mnemonic) + ": result rank " + std::to_string(attrs.shape.size()) +
                     " differs from the operand's " + shapeString(x.shape));
  if (attrs.reduce > 2) throw std::invalid_argument(std::string(op.mnemonic) + ": unknown reduction kind");
  return {x.dtype, attrs.shape};
}

TensorType send(const OpInfo &, std::span<const TensorType> in, const OpAttrs &) { return in[0]; }

TensorType recv(const OpInfo &, std::span<const TensorType>, const OpAttrs &attrs) { return {attrs.dtype, attrs.shape}; }

} // namespace gt::shape
