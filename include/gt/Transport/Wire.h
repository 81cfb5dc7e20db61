// Conversions between gt::Instruction and its Cap'n Proto form (lib/Transport/gt.capnp).
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Transport/gt.capnp.h"

namespace gt::wire {

/// The most axes a carried result type may have (as a client's attribute lists, ClientBatch.h).
constexpr size_t kMaxCarriedRank = 64;
/// A client's direct read (SessionReader.fetch) moves at most this many bytes of a tensor per
/// call; a worker's reader socket takes messages of up to this plus kReadSlackBytes (Cap'n
/// Proto 0.9 applies a connection's message limit to what it sends as well).
constexpr uint64_t kReadChunkBytes = uint64_t(64) << 20;
constexpr uint64_t kReadSlackBytes = uint64_t(1) << 20;

void toWire(const gt::Instruction &in, Instruction::Builder out);
/// Throws std::invalid_argument for an unknown opcode or dtype, or a result type no tensor can
/// have (a malformed message).
gt::Instruction fromWire(Instruction::Reader in);
/// The words `instructions` take as a Cap'n Proto list (plus room for the message around
/// them): the size hint of a request that carries them, so that it is built as one segment
/// and its reader resolves no pointers between segments (the dispatcher's and the workers'
/// fromWire are a fifth faster for it; benchmarks/RESULTS.md).
capnp::MessageSize wireSize(const std::vector<gt::Instruction> &instructions);
/// The words one instruction takes in such a list (wireSize sums them).
uint64_t wireWords(const gt::Instruction &in);

} // namespace gt::wire
