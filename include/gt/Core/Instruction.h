// One instruction of GT's stream, as the client emits it and a worker executes it.
#pragma once

#include "gt/Core/OpTable.h"

#include <optional>
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
  /// The result type, inferred once by the client and carried from there: the dispatcher
  /// verifies it once per plan (gt's op verifier), a worker once per kernel it compiles, and
  /// per run only for the ops that use it without a kernel (aliases, copies, BLAS,
  /// collectives). Absent (hand-built programs, tests): inferred on arrival.
  std::optional<TensorType> type;
};

/// Worker-side tensor ids. A session's tensor `id` is `sessionTensorId(session, id)` on every
/// worker holding it, so that a worker can name it from the session's id alone (a client's
/// direct read, Session.directReads); values the dispatcher's passes add have the top bit set.
/// Session ids are below kMaxSessionTensorId (the dispatcher refuses others) and sessions are
/// numbered below kMaxSessions.
constexpr unsigned kSessionTensorIdBits = 44;
constexpr uint64_t kMaxSessionTensorId = uint64_t(1) << kSessionTensorIdBits;
constexpr uint32_t kMaxSessions = uint32_t(1) << (63 - kSessionTensorIdBits);
constexpr uint64_t kPassValueIdBit = uint64_t(1) << 63;
inline uint64_t sessionTensorId(uint32_t session, uint64_t id) {
  return uint64_t(session % kMaxSessions) << kSessionTensorIdBits | (id % kMaxSessionTensorId);
}

} // namespace gt
