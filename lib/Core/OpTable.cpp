// The op table: arity, dtype rule and shape rule of every GT op (see OpTable.h). The table
// itself (OpSpecs.inc) is generated from ops/*.yaml; the shape rules are the functions below.
#include "gt/Core/OpTable.h"
#include "gt/Core/ShapeRules.h"
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

bool declaresValueOrSeed(OpCode code) {
  for (const AttrSpec &spec : opInfo(code).attrs)
    if (spec.slot == AttrSlot::Value || spec.slot == AttrSlot::Seed) return true;
  return false;
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
  if (auto twice = std::adjacent_find(out.begin(), out.end()); twice != out.end())
    throw ShapeError("axis " + std::to_string(*twice) + " is repeated in " + shapeString(std::vector<int64_t>(axes.begin(), axes.end())));
  return out;
}

bool swapsLastTwoAxes(std::span<const int64_t> perm) {
  size_t r = perm.size();
  if (r < 2 || perm[r - 2] != int64_t(r) - 1 || perm[r - 1] != int64_t(r) - 2) return false;
  for (size_t d = 0; d + 2 < r; ++d)
    if (perm[d] != int64_t(d)) return false;
  return true;
}

namespace {

/// Ops that only move or convert elements: the ones int8, int16 and uint8 tensors take (their
/// kernels never compute on those types; the Python API computes through int32).
bool movesOrCasts(OpCode code) {
  switch (code) {
  case OpCode::Upload: case OpCode::Cast: case OpCode::Transpose: case OpCode::Reshape: case OpCode::BroadcastTo:
  case OpCode::Slice: case OpCode::SliceScatter: case OpCode::Concat: case OpCode::Flip: case OpCode::Free:
  case OpCode::Shard: case OpCode::AllGather: case OpCode::AllToAll: case OpCode::AllSlice: case OpCode::Move:
  case OpCode::Send: case OpCode::Recv:
    return true;
  default: return false;
  }
}

TensorType inferUnchecked(OpCode code, std::span<const TensorType> in, const OpAttrs &attrs) {
  const OpInfo &op = opInfo(code);
  if (!movesOrCasts(code)) {
    bool small = op.kind == OpKind::Creation && isSmallInt(attrs.dtype);
    for (const TensorType &t : in) small = small || isSmallInt(t.dtype);
    if (small)
      throw DTypeError(std::string(op.mnemonic) + ": int8, int16 and uint8 tensors are only moved and cast by the "
                       "workers, got " + [&] {
                         std::string s;
                         for (const TensorType &t : in) s += (s.empty() ? "" : ", ") + std::string(dtypeName(t.dtype));
                         return s.empty() ? std::string(dtypeName(attrs.dtype)) : s;
                       }() + " (the Python API computes on them through int32)");
  }
  if (op.arity >= 0 && int(in.size()) != op.arity)
    throw std::invalid_argument(std::string(op.mnemonic) + ": expects " + std::to_string(op.arity) +
                                " operand(s), got " + std::to_string(in.size()));
  if (op.arity != 0 && in.empty() && op.kind != OpKind::Creation)
    throw std::invalid_argument(std::string(op.mnemonic) + ": expects at least one tensor");
  for (int64_t s : attrs.shape)
    if (s < 0) throw ShapeError(std::string(op.mnemonic) + ": negative size in shape " + shapeString(attrs.shape));
  if (op.minRank > 0 && int64_t(in[0].shape.size()) < op.minRank)
    throw ShapeError(std::string(op.mnemonic) + ": expects a tensor of at least " + std::to_string(op.minRank) +
                     " dimensions, got shape " + shapeString(in[0].shape));
  for (const AttrSpec &spec : op.attrs) { // axis and axis-list attributes name axes of the first operand
    if (!spec.namesAxes) continue;
    int64_t rank = int64_t(in[0].shape.size());
    std::vector<int64_t> axes = spec.type == AttrType::I64Array ? getInts(attrs, spec) : std::vector<int64_t>{getInt(attrs, spec)};
    for (int64_t a : axes)
      if (a < 0 || a >= std::max<int64_t>(rank, 1))
        throw ShapeError(std::string(op.mnemonic) + ": axis " + std::to_string(a) + " is out of range for shape " +
                         shapeString(in[0].shape) + " (attribute " + spec.name + ")");
  }
  return op.shape(op, in, attrs);
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

bool isElementwise(OpCode code) {
  OpKind kind = opInfo(code).kind;
  if (code == OpCode::Tril || code == OpCode::Triu || code == OpCode::Cumsum) return false;
  return kind == OpKind::Unary || kind == OpKind::Binary || kind == OpKind::Compare || code == OpCode::Where;
}

bool isValueReduction(OpCode code) {
  return code == OpCode::Sum || code == OpCode::Mean || code == OpCode::Max || code == OpCode::Min ||
         code == OpCode::Prod;
}

} // namespace gt
