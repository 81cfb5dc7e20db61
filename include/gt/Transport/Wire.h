// Conversions between gt::Instruction and its Cap'n Proto form (lib/Transport/gt.capnp).
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Transport/gt.capnp.h"

namespace gt::wire {

/// The most axes a carried result type may have (as a client's attribute lists, ClientBatch.h).
constexpr size_t kMaxCarriedRank = 64;

void toWire(const gt::Instruction &in, Instruction::Builder out);
/// Throws std::invalid_argument for an unknown opcode or dtype, or a result type no tensor can
/// have (a malformed message).
gt::Instruction fromWire(Instruction::Reader in);

} // namespace gt::wire
