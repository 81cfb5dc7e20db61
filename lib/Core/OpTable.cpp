// The op table: arity, dtype rule and shape rule of every GT op (see OpTable.h). The table
// itself (OpSpecs.inc) is generated from ops/*.yaml; the shape rules are the functions below.
#include "gt/Core/OpTable.h"
#include "gt/Core/Sharding.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace gt {

#include "gt/Core/OpSpecs.inc"
static_assert(std::size(kOps) == size_t(OpCode::NumOps), "OpSpecs.inc and OpCodes.inc disagree");

const OpInfo &opInfo(OpCode code) {
  if (size_t(code) >= std::size(kOps)) throw std::out_of_range("unknown op code " + std::to_string(int(code)));
  return kOps[size_t(code)];
}

const OpInfo *lookupOp(std::string_view mnemonic) {
  for (const OpInfo &info : kOps)
    if (mnemonic == info.mnemonic) return &info;
  return nullptr;
}

bool isFusible(OpCode code) { return opInfo(code).fusible; }

const AttrSpec *findAttr(OpCode code, std::string_view name) {
  for (const AttrSpec &a : opInfo(code).attrs)
    if (name == a.name) return &a;
  return nullptr;
}

namespace {

std::vector<int64_t> *listSlot(OpAttrs &a, AttrSlot slot) {
  switch (slot) {
  case AttrSlot::Shape: return &a.shape;
  case AttrSlot::Axes: return &a.axes;
  case AttrSlot::Starts: return &a.starts;
  case AttrSlot::Steps: return &a.steps;
  case AttrSlot::Workers: return &a.workers;
  case AttrSlot::Sources: return &a.sources;
  default: return nullptr;
  }
}

} // namespace

int64_t getInt(const OpAttrs &attrs, const AttrSpec &spec) {
  auto &a = const_cast<OpAttrs &>(attrs);
  if (std::vector<int64_t> *list = listSlot(a, spec.slot)) return list->at(size_t(std::max<int8_t>(spec.index, 0)));
  switch (spec.slot) {
  case AttrSlot::Keepdims: return attrs.keepdims;
  case AttrSlot::Seed: return attrs.seed;
  case AttrSlot::Count: return attrs.count;
  case AttrSlot::DType: return int64_t(attrs.dtype);
  case AttrSlot::Reduce: return attrs.reduce;
  default: throw std::logic_error(std::string("attribute ") + spec.name + " has no integer storage");
  }
}

std::vector<int64_t> getInts(const OpAttrs &attrs, const AttrSpec &spec) {
  std::vector<int64_t> *list = listSlot(const_cast<OpAttrs &>(attrs), spec.slot);
  if (!list || spec.index >= 0) throw std::logic_error(std::string("attribute ") + spec.name + " is not a list");
  return *list;
}

void setInt(OpAttrs &attrs, const AttrSpec &spec, int64_t value) {
  if (std::vector<int64_t> *list = listSlot(attrs, spec.slot)) {
    size_t i = size_t(std::max<int8_t>(spec.index, 0));
    if (list->size() <= i) list->resize(i + 1);
    (*list)[i] = value;
    return;
  }
  switch (spec.slot) {
  case AttrSlot::Keepdims: attrs.keepdims = value != 0; break;
  case AttrSlot::Seed: attrs.seed = value; break;
  case AttrSlot::Count: attrs.count = value; break;
  case AttrSlot::DType:
    if (value < 0 || value >= kNumDTypes) throw DTypeError("unknown dtype code " + std::to_string(value));
    attrs.dtype = DType(value);
    break;
  case AttrSlot::Reduce:
    if (value < 0 || value > 2) throw std::invalid_argument("unknown reduction kind " + std::to_string(value));
    attrs.reduce = uint8_t(value);
    break;
  default: throw std::logic_error(std::string("attribute ") + spec.name + " has no integer storage");
  }
}

void setInts(OpAttrs &attrs, const AttrSpec &spec, std::vector<int64_t> values) {
  std::vector<int64_t> *list = listSlot(attrs, spec.slot);
  if (!list || spec.index >= 0) throw std::logic_error(std::string("attribute ") + spec.name + " is not a list");
  *list = std::move(values);
}

std::string attrsKey(OpCode code, const OpAttrs &a) {
  std::string key;
  for (const AttrSpec &spec : opInfo(code).attrs) {
    if (spec.runtime || spec.place != AttrPlace::Attribute) continue;
    key += spec.name;
    key += '=';
    if (spec.type == AttrType::I64Array) key += shapeString(getInts(a, spec));
    else if (spec.type == AttrType::F64) key += std::to_string(a.value);
    else key += std::to_string(getInt(a, spec));
    key += ';';
  }
  return key;
}

void appendAttrsKey(OpCode code, const OpAttrs &a, std::string &key) {
  auto put = [&](int64_t v) { key.append(reinterpret_cast<const char *>(&v), sizeof v); };
  for (const AttrSpec &spec : opInfo(code).attrs) {
    if (spec.runtime || spec.place == AttrPlace::MlirOnly) continue;
    if (spec.type == AttrType::I64Array || spec.type == AttrType::Shape) {
      const std::vector<int64_t> &v = *listSlot(const_cast<OpAttrs &>(a), spec.slot); // no copy: per instruction
      put(int64_t(v.size()));
      key.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(int64_t));
    } else if (spec.type == AttrType::F64) {
      int64_t bits;
      std::memcpy(&bits, &a.value, sizeof bits);
      put(bits);
    } else {
      // An element of a list slot that the list lacks (a malformed batch) keys as a marker the
      // capture then rejects; it must not throw here.
      std::vector<int64_t> *list = listSlot(const_cast<OpAttrs &>(a), spec.slot);
      if (list && size_t(std::max<int8_t>(spec.index, 0)) >= list->size()) put(INT64_MIN);
      else put(getInt(a, spec));
    }
  }
}

void clearUndeclared(OpCode code, OpAttrs &attrs) {
  bool keep[16] = {};
  size_t listLength[16] = {};
  for (const AttrSpec &spec : opInfo(code).attrs) {
    keep[size_t(spec.slot)] = true;
    if (spec.index >= 0) listLength[size_t(spec.slot)] = std::max(listLength[size_t(spec.slot)], size_t(spec.index) + 1);
    else listLength[size_t(spec.slot)] = SIZE_MAX;
  }
  OpAttrs clean;
  for (AttrSlot slot : {AttrSlot::Shape, AttrSlot::Axes, AttrSlot::Starts, AttrSlot::Steps, AttrSlot::Workers,
                        AttrSlot::Sources}) {
    if (!keep[size_t(slot)]) continue;
    std::vector<int64_t> &from = *listSlot(attrs, slot), &to = *listSlot(clean, slot);
    to = std::move(from);
    if (to.size() > listLength[size_t(slot)]) to.resize(listLength[size_t(slot)]); // axis: just {axis}
  }
  if (keep[size_t(AttrSlot::Keepdims)]) clean.keepdims = attrs.keepdims;
  if (keep[size_t(AttrSlot::Value)]) clean.value = attrs.value;
  if (keep[size_t(AttrSlot::Seed)]) clean.seed = attrs.seed;
  if (keep[size_t(AttrSlot::Count)]) clean.count = attrs.count;
  if (keep[size_t(AttrSlot::DType)]) clean.dtype = attrs.dtype;
  if (keep[size_t(AttrSlot::Reduce)]) clean.reduce = attrs.reduce;
  attrs = std::move(clean);
}

std::vector<int64_t> normalizeAxes(std::span<const int64_t> axes, int64_t rank) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalizeAxis(a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw ShapeError("an axis is repeated in the reduction axes");
  return out;
}

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

TensorType inferMatmul(const OpInfo &op, const TensorType &a, const TensorType &b) {
  if (!isFloating(a.dtype) || !isFloating(b.dtype))
    dtypeError(op, "expects floating-point operands, got " + std::string(dtypeName(a.dtype)) +
                       " and " + dtypeName(b.dtype));
  if (a.dtype != b.dtype)
    dtypeError(op, "operands must have the same dtype, got " + std::string(dtypeName(a.dtype)) +
                       " and " + dtypeName(b.dtype));
  if (a.shape.empty() || b.shape.empty())
    throw ShapeError("matmul: both operands need at least 1 dimension, got " +
                     shapeString(a.shape) + " @ " + shapeString(b.shape));
  // NumPy: a 1-D `a` is a row vector, a 1-D `b` a column vector; those axes are dropped again.
  Shape sa = a.shape, sb = b.shape;
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA) sa.insert(sa.begin(), 1);
  if (vecB) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), k2 = sb[sb.size() - 2], n = sb.back();
  if (k != k2)
    throw ShapeError("matmul: contraction sizes differ: " + shapeString(a.shape) + " @ " +
                     shapeString(b.shape) + " (" + std::to_string(k) + " vs " +
                     std::to_string(k2) + ")");
  Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  Shape out = broadcastShapes(batchA, batchB);
  if (!vecA) out.push_back(m);
  if (!vecB) out.push_back(n);
  return {a.dtype, out};
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

TensorType inferIndex(OpCode code, const OpInfo &op, std::span<const TensorType> in, const OpAttrs &attrs) {
  switch (code) {
  case OpCode::OneHot: {
    const TensorType &x = in[0];
    if (x.dtype != DType::Int64 && x.dtype != DType::Int32)
      dtypeError(op, std::string("class indices must be integers, got ") + dtypeName(x.dtype));
    if (attrs.count <= 0)
      throw ShapeError("one_hot: number of classes must be positive, got " + std::to_string(attrs.count));
    Shape out = x.shape;
    out.push_back(attrs.count);
    return {attrs.dtype, out};
  }
  case OpCode::IndexSelect: {
    const TensorType &x = in[0], &idx = in[1];
    needIndices(op, idx);
    if (idx.shape.size() != 1)
      throw ShapeError("index_select: the index must be 1-D, got " + shapeString(idx.shape));
    int64_t axis = theAxis(op, attrs, int64_t(x.shape.size()));
    Shape out = x.shape;
    out[axis] = idx.shape[0];
    return {x.dtype, out};
  }
  case OpCode::IndexAdd: {
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
  case OpCode::Gather: {
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
  case OpCode::ScatterAdd: {
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
  default: throw std::logic_error("inferIndex: not an index op");
  }
}

TensorType inferUnchecked(OpCode code, std::span<const TensorType> in, const OpAttrs &attrs) {
  const OpInfo &op = opInfo(code);
  if (op.arity >= 0 && int(in.size()) != op.arity)
    throw std::invalid_argument(std::string(op.mnemonic) + ": expects " +
                                std::to_string(op.arity) + " operand(s), got " +
                                std::to_string(in.size()));
  for (int64_t s : attrs.shape)
    if (s < 0) throw ShapeError(std::string(op.mnemonic) + ": negative size in shape " + shapeString(attrs.shape));

  switch (op.kind) {
  case OpKind::Creation:
    if (in.size() > 1)
      throw std::invalid_argument(std::string(op.mnemonic) + ": takes at most one scalar operand");
    if (op.dtypeRule == DTypeRule::FloatAttr && !isFloating(attrs.dtype))
      dtypeError(op, std::string("needs a floating-point dtype, got ") + dtypeName(attrs.dtype));
    return {attrs.dtype, attrs.shape};

  case OpKind::Unary: {
    const TensorType &x = in[0];
    switch (op.dtypeRule) {
    case DTypeRule::Attr: return {attrs.dtype, x.shape};
    case DTypeRule::Any: return x;
    case DTypeRule::Numeric:
      if (x.dtype == DType::Bool)
        dtypeError(op, code == OpCode::Neg ? "negation of a bool tensor is not supported; use logical_not"
                                           : "is not supported for bool tensors");
      return x;
    default:
      if (!isFloating(x.dtype))
        dtypeError(op, std::string("expects a floating-point tensor, got ") + dtypeName(x.dtype));
      return x;
    }
  }

  case OpKind::Binary: case OpKind::Compare: {
    Shape shape = broadcastShapes(in[0].shape, in[1].shape);
    if (op.dtypeRule == DTypeRule::Bool) return {DType::Bool, shape};
    DType dt = promoteTypes(in[0].dtype, in[1].dtype);
    if (op.dtypeRule == DTypeRule::PromoteFloat && !isFloating(dt))
      dtypeError(op, "expects floating-point operands, got " + typeList(in) +
                         " (cast with .float() first)");
    if (dt == DType::Bool && op.dtypeRule != DTypeRule::PromoteOrBool)
      dtypeError(op, "arithmetic on bool tensors is not supported, got " + typeList(in));
    return {dt, shape};
  }

  case OpKind::Select: {
    if (in[0].dtype != DType::Bool)
      dtypeError(op, std::string("condition must be bool, got ") + dtypeName(in[0].dtype));
    Shape shape = broadcastShapes(broadcastShapes(in[0].shape, in[1].shape), in[2].shape);
    return {promoteTypes(in[1].dtype, in[2].dtype), shape};
  }

  case OpKind::Matmul:
    return inferMatmul(op, in[0], in[1]);

  case OpKind::Layout: {
    if (in.empty()) throw std::invalid_argument(std::string(op.mnemonic) + ": expects at least one tensor");
    const TensorType &x = in[0];
    if (code == OpCode::Reshape) {
      if (numElements(attrs.shape) != numElements(x.shape))
        throw ShapeError("reshape: cannot reshape " + shapeString(x.shape) + " (" +
                         std::to_string(numElements(x.shape)) + " elements) into " +
                         shapeString(attrs.shape));
      return {x.dtype, attrs.shape};
    }
    if (code == OpCode::BroadcastTo) {
      Shape b = broadcastShapes(x.shape, attrs.shape);
      if (b != attrs.shape)
        throw ShapeError("broadcast_to: cannot broadcast " + shapeString(x.shape) + " to " +
                         shapeString(attrs.shape));
      return {x.dtype, attrs.shape};
    }
    if (code == OpCode::Slice) {
      checkWindow(op, x.shape, attrs.shape, attrs);
      return {x.dtype, attrs.shape};
    }
    if (code == OpCode::SliceScatter) {
      if (in[1].dtype != x.dtype)
        dtypeError(op, "the source must have the dtype of the tensor it is written into, got " + typeList(in));
      checkWindow(op, x.shape, in[1].shape, attrs);
      return x;
    }
    if (code == OpCode::Concat) {
      if (in.size() > size_t(kMaxConcatOperands))
        throw ShapeError("concat: joins at most " + std::to_string(kMaxConcatOperands) + " tensors at once, got " +
                         std::to_string(in.size()) + " (gt.cat joins longer lists in steps)");
      int64_t axis = theAxis(op, attrs, int64_t(x.shape.size()));
      Shape out = x.shape;
      out[axis] = 0;
      for (const TensorType &t : in) {
        if (t.dtype != x.dtype) dtypeError(op, "all tensors must have the same dtype, got " + typeList(in));
        bool ok = t.shape.size() == x.shape.size();
        for (size_t d = 0; ok && d < x.shape.size(); ++d) ok = int64_t(d) == axis || t.shape[d] == x.shape[d];
        if (!ok)
          throw ShapeError("concat: sizes must match except along axis " + std::to_string(axis) + ", got " + typeList(in));
        if (__builtin_add_overflow(out[axis], t.shape[axis], &out[axis]))
          throw ShapeError("concat: the joined size along axis " + std::to_string(axis) + " does not fit in 64 bits");
      }
      return {x.dtype, out};
    }
    // transpose: attrs.axes is a permutation of 0..rank-1
    const auto &perm = attrs.axes;
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

  case OpKind::Reduction: {
    const TensorType &x = in[0];
    int64_t rank = int64_t(x.shape.size());
    for (int64_t a : attrs.axes)
      if (a < 0 || a >= std::max<int64_t>(rank, 1))
        throw ShapeError(std::string(op.mnemonic) + ": axis " + std::to_string(a) +
                         " is out of range for shape " + shapeString(x.shape));
    if (code == OpCode::Mean && !isFloating(x.dtype))
      dtypeError(op, std::string("expects a floating-point tensor, got ") + dtypeName(x.dtype));
    bool extremum = code == OpCode::Max || code == OpCode::Min || code == OpCode::Argmax || code == OpCode::Argmin;
    if (code == OpCode::Argmax || code == OpCode::Argmin) {
      theAxis(op, attrs, rank);
      if (x.dtype == DType::Bool) dtypeError(op, "is not supported for bool tensors");
    }
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
    DType dt = x.dtype;
    if (code == OpCode::Sum && (dt == DType::Bool || dt == DType::Int32)) dt = DType::Int64;
    if (code == OpCode::Argmax || code == OpCode::Argmin) dt = DType::Int64;
    return {dt, out};
  }

  case OpKind::Index:
    return inferIndex(code, op, in, attrs);

  case OpKind::Lifetime:
    return in[0];

  case OpKind::Distribution: {
    if (code == OpCode::Recv) return {attrs.dtype, attrs.shape};
    if (code == OpCode::Send) return in[0];
    const TensorType &x = in[0];
    if (attrs.shape.size() != x.shape.size())
      throw ShapeError(std::string(op.mnemonic) + ": result rank " + std::to_string(attrs.shape.size()) +
                       " differs from the operand's " + shapeString(x.shape));
    if (attrs.reduce > 2) throw std::invalid_argument(std::string(op.mnemonic) + ": unknown reduction kind");
    return {x.dtype, attrs.shape};
  }
  }
  throw std::logic_error("inferType: unhandled op");
}

} // namespace

TensorType inferType(OpCode code, std::span<const TensorType> in, const OpAttrs &attrs) {
  if (size_t(code) >= size_t(OpCode::NumOps)) throw std::invalid_argument("unknown op code " + std::to_string(int(code)));
  if (int(attrs.dtype) >= kNumDTypes) throw DTypeError("unknown dtype code " + std::to_string(int(attrs.dtype)));
  TensorType result = inferUnchecked(code, in, attrs);
  try {
    numBytes(result); // every size that reaches an allocator fits in 64 bits
  } catch (const ShapeError &e) {
    throw ShapeError(std::string(opInfo(code).mnemonic) + ": " + e.what());
  }
  return result;
}

} // namespace gt
