// The Cap'n Proto form of an instruction: what survives the round trip, and what a malformed
// message is refused for.
#include "gt/Transport/Wire.h"

#include <capnp/message.h>
#include <gtest/gtest.h>

using namespace gt;

namespace {
gt::Instruction roundTrip(const gt::Instruction &inst) {
  capnp::MallocMessageBuilder message;
  auto builder = message.initRoot<wire::Instruction>();
  wire::toWire(inst, builder);
  return wire::fromWire(builder.asReader());
}

std::string refusal(const gt::TensorType &type) {
  gt::Instruction inst;
  inst.op = OpCode::Exp;
  inst.type = type;
  try {
    roundTrip(inst);
  } catch (const std::invalid_argument &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST(Wire, TheCarriedResultTypeRoundTrips) {
  gt::Instruction inst;
  inst.op = OpCode::Sum;
  inst.result = 7;
  inst.operands = {3};
  inst.attrs.axes = {1};
  inst.type = TensorType{DType::BFloat16, {2, 0, 5}};
  gt::Instruction back = roundTrip(inst);
  ASSERT_TRUE(back.type.has_value());
  EXPECT_EQ(*back.type, *inst.type);
  inst.type.reset(); // a hand-built program carries none, and none arrives
  EXPECT_FALSE(roundTrip(inst).type.has_value());
}

TEST(Wire, AResultTypeNoTensorCanHaveIsRefused) {
  EXPECT_NE(refusal({DType::Float32, {4, -1}}).find("negative size"), std::string::npos);
  EXPECT_NE(refusal({DType::Float32, {1ll << 40, 1ll << 40}}).find("64 bits"), std::string::npos);
  EXPECT_NE(refusal({DType::Float32, Shape(wire::kMaxCarriedRank + 1, 1)}).find("rank 65"), std::string::npos);
  EXPECT_NE(refusal({DType(99), {2}}).find("unknown dtype 99"), std::string::npos);
  EXPECT_EQ(refusal({DType::Int64, {2, 3}}), "");
}
