// GT_RECORD=dir: the dispatcher writes every client batch and every worker program it handles
// as a Cap'n Proto message (a gt.capnp Batch) — the fuzzers' seeds (test/fuzz) are recorded so.
#pragma once

#include "gt/Core/Instruction.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gt::dispatcher {

/// A region of a worker program, as the wire carries it (gt.capnp's Region).
struct ProgramRegion {
  uint64_t key;
  bool hot;
  uint32_t start, count;
  std::vector<uint64_t> outputs;
};

/// Writes `batch` with `regions` to `path` as one message, after defining every tensor it reads
/// but does not make as a `full` of the type `typeOf(id)` gives (ids it has no type for stay
/// undefined), so that the file is a batch that stands on its own. Regions move with the
/// prefix. Errors are ignored: recording never costs the session anything.
void recordBatch(const std::string &path, const std::vector<Instruction> &batch, std::vector<ProgramRegion> regions,
                 const std::function<std::optional<TensorType>(uint64_t)> &typeOf);

} // namespace gt::dispatcher
