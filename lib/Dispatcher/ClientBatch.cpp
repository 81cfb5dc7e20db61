// What the dispatcher accepts from a client (see ClientBatch.h).
#include "gt/Dispatcher/ClientBatch.h"

namespace gt::dispatcher {

bool isClientOp(OpCode op) { return opInfo(op).kind != OpKind::Distribution || op == OpCode::Shard; }

namespace {

/// Why `inst` is not acceptable, or "".
std::string checkInstruction(const Instruction &inst, const BatchLimits &limits) {
  const OpInfo &info = opInfo(inst.op);
  if (!isClientOp(inst.op))
    return std::string(info.mnemonic) + " is made by the dispatcher's passes; a client may not send it";
  size_t n = inst.operands.size();
  if (inst.op == OpCode::Free) {
    if (n == 0 || n > size_t(kMaxFreeOperands))
      return "names 1 to " + std::to_string(kMaxFreeOperands) + " tensors, got " + std::to_string(n);
  } else if (info.arity >= 0 && n != size_t(info.arity))
    return "takes " + std::to_string(info.arity) + " operand(s), got " + std::to_string(n);
  if (inst.op == OpCode::Concat && (n == 0 || n > size_t(kMaxConcatOperands)))
    return "joins 1 to " + std::to_string(kMaxConcatOperands) + " tensors, got " + std::to_string(n);
  if (info.arity < 0 && inst.op != OpCode::Concat && n > 1) return "takes at most one operand, got " + std::to_string(n);
  const OpAttrs &a = inst.attrs;
  for (const auto *list : {&a.shape, &a.axes, &a.starts, &a.steps})
    if (list->size() > limits.maxRank)
      return "a list of " + std::to_string(list->size()) + " entries (at most " + std::to_string(limits.maxRank) + ")";
  if (!a.workers.empty() || !a.sources.empty()) return "names workers, which only the dispatcher's passes do";
  if (inst.op != OpCode::Free && inst.result >= kMaxSessionTensorId)
    return "tensor id " + std::to_string(inst.result) + " is over a session's largest, " + std::to_string(kMaxSessionTensorId - 1);
  if (inst.location.size() > limits.maxText || inst.signal.size() > limits.maxText)
    return "a location or signal name over " + std::to_string(limits.maxText) + " bytes";
  if (int(a.dtype) >= kNumDTypes) return "unknown dtype code " + std::to_string(int(a.dtype));
  int64_t bytes = 0;
  try {
    bytes = numBytes(TensorType{a.dtype, a.shape});
  } catch (const ShapeError &e) {
    return e.what();
  }
  if (inst.type) { // carried; its agreement with the op table is checked when the batch is captured
    if (inst.type->shape.size() > limits.maxRank)
      return "a result type of rank " + std::to_string(inst.type->shape.size()) + " (at most " +
             std::to_string(limits.maxRank) + ")";
    if (inst.op == OpCode::Free) return "carries a result type, which free has none of";
  }
  if (inst.op == OpCode::Upload) {
    if (inst.data.size() != uint64_t(bytes))
      return "carries " + std::to_string(inst.data.size()) + " bytes, a " + dtypeName(a.dtype) + shapeString(a.shape) +
             " tensor needs " + std::to_string(bytes);
  } else if (!inst.data.empty()) {
    return "carries data, which only an upload does";
  }
  return "";
}

} // namespace

std::string checkBatchSize(size_t n, const BatchLimits &limits) {
  if (n <= limits.maxInstructions) return "";
  return "a batch of " + std::to_string(n) + " ops (the dispatcher takes at most " + std::to_string(limits.maxInstructions) +
         "; a free counts once per tensor it names)";
}

std::string checkClientInstruction(const Instruction &inst, const BatchLimits &limits) {
  std::string why = checkInstruction(inst, limits);
  if (why.empty()) return why;
  return std::string(opInfo(inst.op).mnemonic) + (inst.location.empty() ? "" : " at " + inst.location) + ": " + why;
}

} // namespace gt::dispatcher
