// Conversions between gt::Instruction and its Cap'n Proto form.
#include "gt/Transport/Wire.h"

#include <stdexcept>

namespace gt::wire {

void toWire(const gt::Instruction &in, Instruction::Builder out) {
  out.setOp(uint16_t(in.op));
  out.setResult(in.result);
  auto ops = out.initOperands(unsigned(in.operands.size()));
  for (unsigned i = 0; i < in.operands.size(); ++i) ops.set(i, in.operands[i]);
  auto shape = out.initShape(unsigned(in.attrs.shape.size()));
  for (unsigned i = 0; i < in.attrs.shape.size(); ++i) shape.set(i, in.attrs.shape[i]);
  auto axes = out.initAxes(unsigned(in.attrs.axes.size()));
  for (unsigned i = 0; i < in.attrs.axes.size(); ++i) axes.set(i, in.attrs.axes[i]);
  auto starts = out.initStarts(unsigned(in.attrs.starts.size()));
  for (unsigned i = 0; i < in.attrs.starts.size(); ++i) starts.set(i, in.attrs.starts[i]);
  auto steps = out.initSteps(unsigned(in.attrs.steps.size()));
  for (unsigned i = 0; i < in.attrs.steps.size(); ++i) steps.set(i, in.attrs.steps[i]);
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
  auto workers = out.initWorkers(unsigned(in.attrs.workers.size()));
  for (unsigned i = 0; i < in.attrs.workers.size(); ++i) workers.set(i, in.attrs.workers[i]);
  auto sources = out.initSources(unsigned(in.attrs.sources.size()));
  for (unsigned i = 0; i < in.attrs.sources.size(); ++i) sources.set(i, in.attrs.sources[i]);
  out.setReduce(in.attrs.reduce);
  if (in.type) {
    auto type = out.initType();
    type.setDtype(uint8_t(in.type->dtype));
    auto shape = type.initShape(unsigned(in.type->shape.size()));
    for (unsigned i = 0; i < in.type->shape.size(); ++i) shape.set(i, in.type->shape[i]);
  }
}

gt::Instruction fromWire(Instruction::Reader in) {
  gt::Instruction out;
  if (in.getOp() >= uint16_t(OpCode::NumOps))
    throw std::invalid_argument("unknown opcode " + std::to_string(in.getOp()));
  if (in.getDtype() >= kNumDTypes) throw std::invalid_argument("unknown dtype " + std::to_string(in.getDtype()));
  out.op = OpCode(in.getOp());
  out.result = in.getResult();
  for (uint64_t id : in.getOperands()) out.operands.push_back(id);
  for (int64_t s : in.getShape()) out.attrs.shape.push_back(s);
  for (int64_t a : in.getAxes()) out.attrs.axes.push_back(a);
  for (int64_t a : in.getStarts()) out.attrs.starts.push_back(a);
  for (int64_t a : in.getSteps()) out.attrs.steps.push_back(a);
  out.attrs.keepdims = in.getKeepdims();
  out.attrs.value = in.getValue();
  out.attrs.seed = in.getSeed();
  out.attrs.count = in.getCount();
  out.attrs.dtype = DType(in.getDtype());
  auto data = in.getData();
  out.data.assign(reinterpret_cast<const char *>(data.begin()), data.size());
  out.location = in.getLocation().cStr();
  out.signal = in.getSignal().cStr();
  out.backward = in.getBackward();
  for (int64_t w : in.getWorkers()) out.attrs.workers.push_back(w);
  for (int64_t w : in.getSources()) out.attrs.sources.push_back(w);
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
    for (int64_t s : type.getShape()) t.shape.push_back(s);
    numBytes(t); // throws ShapeError (an invalid_argument) for a negative size or an overflow
    out.type = std::move(t);
  }
  return out;
}

} // namespace gt::wire
