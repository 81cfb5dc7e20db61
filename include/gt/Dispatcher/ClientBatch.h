// What the dispatcher accepts from a client: a batch of client ops within its limits. Anything
// else is refused before it reaches the passes or a worker.
#pragma once

#include "gt/Core/Instruction.h"

#include <string>
#include <vector>

namespace gt::dispatcher {

struct BatchLimits {
  size_t maxInstructions = 8192; ///< ops in one submit, a free counting once per tensor it names (GT_MAX_BATCH)
  size_t maxRank = 64;           ///< axes of a shape, entries of axes/starts/steps
  size_t maxText = 4096;         ///< bytes of a source location or signal name
};

/// Whether `op` may come from a client: every op but the distribution ops, which only the
/// dispatcher's passes make (shard, from gt.signal.tensor, is a client op).
bool isClientOp(OpCode op);

/// Why a batch of `n` instructions is refused whole ("" if it is not): more than the limit.
std::string checkBatchSize(size_t n, const BatchLimits &limits);

/// Why `inst` is refused ("" if it is acceptable), naming the op and the user's line ("all_reduce
/// at train.py:12: ..."): an op clients may not send, a wrong operand count, a negative or
/// overflowing shape, an upload whose bytes do not fit its shape and dtype, a result id of
/// kMaxSessionTensorId or more, or an oversized list or text. Shape rules that need the operands' types are left to the passes.
std::string checkClientInstruction(const Instruction &inst, const BatchLimits &limits);

} // namespace gt::dispatcher
