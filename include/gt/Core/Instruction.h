// One instruction of GT's stream, as the client emits it and a worker executes it.
#pragma once

#include "gt/Core/OpTable.h"

#include <string>

namespace gt {

/// `result = op(operands...)` with attributes. Ids name tensors: per session on the client
/// side, per worker on the worker side (the dispatcher maps one to the other).
struct Instruction {
  OpCode op = OpCode::Free;
  uint64_t result = 0;            ///< id of the produced tensor (unused for free)
  std::vector<uint64_t> operands; ///< ids of the operand tensors
  OpAttrs attrs;
  std::string data;               ///< upload: the raw bytes, row-major, attrs.dtype elements
  std::string location;           ///< the user's source line, "file.py:12"
  std::string signal;             ///< the active gt.signal ("" = none)
  bool backward = false;          ///< a gradient op of `signal` (its config's `backward:` entry applies)
};

} // namespace gt
