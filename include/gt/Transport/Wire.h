// Conversions between gt::Instruction and its Cap'n Proto form (lib/Transport/gt.capnp).
#pragma once

#include "gt/Core/Instruction.h"
#include "gt/Transport/gt.capnp.h"

namespace gt::wire {

void toWire(const gt::Instruction &in, Instruction::Builder out);
/// Throws std::invalid_argument for an unknown opcode or dtype (a malformed message).
gt::Instruction fromWire(Instruction::Reader in);

} // namespace gt::wire
