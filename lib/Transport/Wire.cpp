// Conversions between gt::Instruction and its Cap'n Proto form.
#include "gt/Transport/Wire.h"

#include <stdexcept>

namespace gt::wire {

namespace {
/// Sets a list field only when it has elements: an absent list reads as empty, and skipping
/// it keeps the message small (most instructions have no axes, starts, steps, workers, ...).
template <typename T, typename Init> void putList(const std::vector<T> &v, Init init) {
  if (v.empty()) return;
  auto list = init(unsigned(v.size()));
  for (unsigned i = 0; i < v.size(); ++i) list.set(i, v[i]);
}
} // namespace

void toWire(const gt::Instruction &in, Instruction::Builder out) {
  out.setOp(uint16_t(in.op));
  out.setResult(in.result);
  putList(in.operands, [&](unsigned n) { return out.initOperands(n); });
  putList(in.attrs.shape, [&](unsigned n) { return out.initShape(n); });
  putList(in.attrs.axes, [&](unsigned n) { return out.initAxes(n); });
  putList(in.attrs.starts, [&](unsigned n) { return out.initStarts(n); });
  putList(in.attrs.steps, [&](unsigned n) { return out.initSteps(n); });
  out.setKeepdims(in.attrs.keepdims);
  out.setValue(in.attrs.value);
  out.setSeed(in.attrs.seed);
  out.setCount(in.attrs.count);
  out.setDtype(uint8_t(in.attrs.dtype));
  if (!in.data.empty())
    out.setData(kj::arrayPtr(reinterpret_cast<const kj::byte *>(in.data.data()), in.data.size()));
  if (!in.location.empty()) out.setLocation(in.location);
  if (!in.signal.empty()) out.setSignal(in.signal);
  out.setBackward(in.backward);
  putList(in.attrs.workers, [&](unsigned n) { return out.initWorkers(n); });
  putList(in.attrs.sources, [&](unsigned n) { return out.initSources(n); });
  out.setReduce(in.attrs.reduce);
  if (in.type) {
    auto type = out.initType();
    type.setDtype(uint8_t(in.type->dtype));
    putList(in.type->shape, [&](unsigned n) { return type.initShape(n); });
  }
}

namespace {
/// A list's elements into `out`, in one allocation.
template <typename T, typename List> void copyInto(std::vector<T> &out, List list) {
  out.resize(list.size());
  for (unsigned i = 0; i < out.size(); ++i) out[i] = list[i];
}
} // namespace

gt::Instruction fromWire(Instruction::Reader in) {
  gt::Instruction out;
  if (in.getOp() >= uint16_t(OpCode::NumOps))
    throw std::invalid_argument("unknown opcode " + std::to_string(in.getOp()));
  if (in.getDtype() >= kNumDTypes) throw std::invalid_argument("unknown dtype " + std::to_string(in.getDtype()));
  out.op = OpCode(in.getOp());
  out.result = in.getResult();
  // Absent lists and texts (never set by toWire when empty) read as empty: has*() first skips
  // the reader's pointer checks for them.
  if (in.hasOperands()) copyInto(out.operands, in.getOperands());
  if (in.hasShape()) copyInto(out.attrs.shape, in.getShape());
  if (in.hasAxes()) copyInto(out.attrs.axes, in.getAxes());
  if (in.hasStarts()) copyInto(out.attrs.starts, in.getStarts());
  if (in.hasSteps()) copyInto(out.attrs.steps, in.getSteps());
  out.attrs.keepdims = in.getKeepdims();
  out.attrs.value = in.getValue();
  out.attrs.seed = in.getSeed();
  out.attrs.count = in.getCount();
  out.attrs.dtype = DType(in.getDtype());
  if (in.hasData()) {
    auto data = in.getData();
    out.data.assign(reinterpret_cast<const char *>(data.begin()), data.size());
  }
  if (in.hasLocation()) out.location = in.getLocation().cStr(); // (up to a NUL, as ever)
  if (in.hasSignal()) out.signal = in.getSignal().cStr();
  out.backward = in.getBackward();
  if (in.hasWorkers()) copyInto(out.attrs.workers, in.getWorkers());
  if (in.hasSources()) copyInto(out.attrs.sources, in.getSources());
  if (in.getReduce() > 2) throw std::invalid_argument("unknown reduce kind " + std::to_string(in.getReduce()));
  out.attrs.reduce = in.getReduce();
  if (in.hasType()) {
    auto type = in.getType();
    if (type.getDtype() >= kNumDTypes)
      throw std::invalid_argument("result type of unknown dtype " + std::to_string(type.getDtype()));
    if (type.getShape().size() > kMaxCarriedRank)
      throw std::invalid_argument("result type of rank " + std::to_string(type.getShape().size()) + " (at most " +
                                  std::to_string(kMaxCarriedRank) + ")");
    gt::TensorType t{DType(type.getDtype()), {}};
    copyInto(t.shape, type.getShape());
    numBytes(t); // throws ShapeError (an invalid_argument) for a negative size or an overflow
    out.type = std::move(t);
  }
  return out;
}

uint64_t wireWords(const gt::Instruction &in) {
  constexpr uint64_t kStruct = Instruction::_capnpPrivate::dataWordSize + Instruction::_capnpPrivate::pointerCount;
  constexpr uint64_t kType = TensorType::_capnpPrivate::dataWordSize + TensorType::_capnpPrivate::pointerCount;
  auto bytes = [](size_t n) { return uint64_t(n + 7) / 8; }; // texts add a NUL: +1 in the caller
  const OpAttrs &a = in.attrs;
  uint64_t words = kStruct + in.operands.size() + a.shape.size() + a.axes.size() + a.starts.size() + a.steps.size() +
                   a.workers.size() + a.sources.size() + bytes(in.data.size()) + bytes(in.location.size() + 1) +
                   bytes(in.signal.size() + 1);
  if (in.type) words += kType + in.type->shape.size();
  return words;
}

capnp::MessageSize wireSize(const std::vector<gt::Instruction> &instructions) {
  uint64_t words = 64 + 1; // the request's own structs, and the list's tag
  for (const gt::Instruction &in : instructions) words += wireWords(in);
  return {words, 0};
}

} // namespace gt::wire
