// The op table's shape and dtype rules.
#include "gt/Core/OpTable.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace gt;

static TensorType f32(Shape s) { return {DType::Float32, std::move(s)}; }

TEST(OpTable, BroadcastingFollowsNumPy) {
  EXPECT_EQ(broadcastShapes({4, 3}, {3}), (Shape{4, 3}));
  EXPECT_EQ(broadcastShapes({4, 1}, {1, 5}), (Shape{4, 5}));
  EXPECT_EQ(broadcastShapes({}, {2, 2}), (Shape{2, 2}));
  EXPECT_THROW(broadcastShapes({4, 3}, {4}), ShapeError);
}

TEST(OpTable, BinaryPromotesAndBroadcasts) {
  TensorType a = f32({4, 3}), b{DType::Int64, {3}};
  TensorType r = inferType(OpCode::Add, std::vector{a, b}, {});
  EXPECT_EQ(r, f32({4, 3}));
  EXPECT_EQ(inferType(OpCode::Gt, std::vector{a, b}, {}).dtype, DType::Bool);
  TensorType i{DType::Int64, {3}};
  EXPECT_THROW(inferType(OpCode::Div, std::vector{i, i}, {}), DTypeError);
  EXPECT_THROW(inferType(OpCode::Exp, std::vector{i}, {}), DTypeError);
}

TEST(OpTable, MatmulRules) {
  EXPECT_EQ(inferType(OpCode::Matmul, std::vector{f32({2, 3}), f32({3, 4})}, {}), f32({2, 4}));
  EXPECT_EQ(inferType(OpCode::Matmul, std::vector{f32({5, 2, 3}), f32({3, 4})}, {}), f32({5, 2, 4}));
  EXPECT_EQ(inferType(OpCode::Matmul, std::vector{f32({3}), f32({3, 4})}, {}), f32({4}));
  EXPECT_EQ(inferType(OpCode::Matmul, std::vector{f32({3}), f32({3})}, {}), f32({}));
  EXPECT_THROW(inferType(OpCode::Matmul, std::vector{f32({2, 3}), f32({2, 3})}, {}), ShapeError);
}

TEST(OpTable, ReductionsAndLayout) {
  OpAttrs attrs;
  attrs.axes = normalizeAxes(std::vector<int64_t>{-1}, 2);
  EXPECT_EQ(attrs.axes, (std::vector<int64_t>{1}));
  EXPECT_EQ(inferType(OpCode::Sum, std::vector{f32({4, 3})}, attrs), f32({4}));
  attrs.keepdims = true;
  EXPECT_EQ(inferType(OpCode::Max, std::vector{f32({4, 3})}, attrs), f32({4, 1}));
  EXPECT_THROW(normalizeAxes(std::vector<int64_t>{2}, 2), ShapeError);
  EXPECT_THROW(normalizeAxes(std::vector<int64_t>{0, -2}, 2), ShapeError);

  OpAttrs perm;
  perm.axes = {1, 0};
  EXPECT_EQ(inferType(OpCode::Transpose, std::vector{f32({4, 3})}, perm), f32({3, 4}));
  perm.axes = {0, 0};
  EXPECT_THROW(inferType(OpCode::Transpose, std::vector{f32({4, 3})}, perm), ShapeError);

  OpAttrs reshape;
  reshape.shape = {2, 6};
  EXPECT_EQ(inferType(OpCode::Reshape, std::vector{f32({4, 3})}, reshape), f32({2, 6}));
  reshape.shape = {5};
  EXPECT_THROW(inferType(OpCode::Reshape, std::vector{f32({4, 3})}, reshape), ShapeError);
}

TEST(OpTable, ArityAndLookup) {
  EXPECT_THROW(inferType(OpCode::Add, std::vector{f32({1})}, {}), std::invalid_argument);
  ASSERT_NE(lookupOp("one_hot"), nullptr);
  EXPECT_EQ(lookupOp("one_hot")->code, OpCode::OneHot);
  EXPECT_EQ(lookupOp("no_such_op"), nullptr);
  EXPECT_EQ(parseDType("float32"), DType::Float32);
  EXPECT_EQ(parseDType("int64"), DType::Int64);
  EXPECT_FALSE(parseDType("float7").has_value());
}

TEST(OpTable, SizesAreOverflowChecked) {
  EXPECT_EQ(numElements({2, 0, 3}), 0);
  EXPECT_EQ(numBytes(TensorType{DType::Float64, {1 << 20, 1 << 20}}), int64_t(8) << 40);
  EXPECT_THROW(numElements({int64_t(1) << 32, int64_t(1) << 32}), ShapeError);
  // Empty, but its strides would still overflow (found by fuzzing the worker).
  EXPECT_THROW(numElements({0, int64_t(1) << 40, int64_t(1) << 40}), ShapeError);
  EXPECT_THROW(numBytes(TensorType{DType::Float32, {int64_t(1) << 62}}), ShapeError);
  OpAttrs huge;
  huge.shape = {int64_t(1) << 32, int64_t(1) << 32};
  EXPECT_THROW(inferType(OpCode::Full, {}, huge), ShapeError);
}

TEST(OpTable, SliceConcatAndIndexRules) {
  OpAttrs window;
  window.shape = {2, 3};
  window.starts = {1, 0};
  window.steps = {2, 1};
  EXPECT_EQ(inferType(OpCode::Slice, std::vector{f32({5, 3})}, window), f32({2, 3}));
  window.starts = {2, 0}; // 2 + (2 - 1) * 2 = 4 < 5 still fits; 3 would not
  EXPECT_EQ(inferType(OpCode::Slice, std::vector{f32({5, 3})}, window), f32({2, 3}));
  window.starts = {3, 0};
  EXPECT_THROW(inferType(OpCode::Slice, std::vector{f32({5, 3})}, window), ShapeError);
  window.starts = {0, 0};
  window.steps = {0, 1};
  EXPECT_THROW(inferType(OpCode::Slice, std::vector{f32({5, 3})}, window), ShapeError);
  // A step so large that start + (n - 1) * step wraps around into range (found by fuzzing the
  // worker: the slice kernel then read far outside the tensor).
  OpAttrs wrap;
  wrap.shape = {32};
  wrap.starts = {0};
  wrap.steps = {7782220156096217089};
  EXPECT_THROW(inferType(OpCode::Slice, std::vector{f32({32})}, wrap), ShapeError);
  wrap.steps = {int64_t(1) << 62};
  wrap.shape = {5};
  EXPECT_THROW(inferType(OpCode::Slice, std::vector{f32({32})}, wrap), ShapeError);

  OpAttrs axis1;
  axis1.axes = {1};
  EXPECT_EQ(inferType(OpCode::Concat, std::vector{f32({2, 3}), f32({2, 4})}, axis1), f32({2, 7}));
  EXPECT_THROW(inferType(OpCode::Concat, std::vector{f32({2, 3}), f32({3, 3})}, axis1), ShapeError);
  EXPECT_THROW(inferType(OpCode::Concat, std::vector{f32({2, 3}), TensorType{DType::Int64, {2, 3}}}, axis1), DTypeError);
  int64_t huge = int64_t(1) << 62;
  EXPECT_THROW(inferType(OpCode::Concat, std::vector{TensorType{DType::Bool, {1, huge}}, TensorType{DType::Bool, {1, huge}}},
                         axis1),
               ShapeError); // the joined size does not fit in 64 bits

  TensorType idx{DType::Int64, {4, 1}};
  EXPECT_EQ(inferType(OpCode::Gather, std::vector{f32({4, 10}), idx}, axis1), f32({4, 1}));
  EXPECT_THROW(inferType(OpCode::Gather, std::vector{f32({3, 10}), idx}, axis1), ShapeError);
  EXPECT_THROW(inferType(OpCode::Gather, std::vector{f32({4, 10}), f32({4, 1})}, axis1), DTypeError);
  OpAttrs back = axis1;
  back.shape = {4, 10};
  EXPECT_EQ(inferType(OpCode::ScatterAdd, std::vector{idx, f32({4, 1})}, back), f32({4, 10}));

  OpAttrs axis0;
  axis0.axes = {0};
  TensorType tokens{DType::Int32, {6}};
  EXPECT_EQ(inferType(OpCode::IndexSelect, std::vector{f32({65, 8}), tokens}, axis0), f32({6, 8}));
  axis0.shape = {65, 8};
  EXPECT_EQ(inferType(OpCode::IndexAdd, std::vector{tokens, f32({6, 8})}, axis0), f32({65, 8}));
  EXPECT_THROW(inferType(OpCode::IndexAdd, std::vector{tokens, f32({5, 8})}, axis0), ShapeError);

  OpAttrs arg;
  arg.axes = {1};
  EXPECT_EQ(inferType(OpCode::Argmax, std::vector{f32({4, 3})}, arg), (TensorType{DType::Int64, {4}}));
  arg.axes = {0, 1};
  EXPECT_THROW(inferType(OpCode::Argmax, std::vector{f32({4, 3})}, arg), ShapeError);
  EXPECT_THROW(normalizeAxes(std::vector<int64_t>{3}, 2), AxisError);
}

// torch.result_type: a 0-d tensor widens a dimensioned one only from a higher category; the
// small integers promote as PyTorch's (uint8 with int8 gives int16).
TEST(DType, ZeroDimensionalTensorsAndSmallIntegersPromoteAsPyTorch) {
  auto t = [](DType d, Shape s) { return TensorType{d, std::move(s)}; };
  EXPECT_EQ(resultType(t(DType::Int32, {3}), t(DType::Int64, {})), DType::Int32);
  EXPECT_EQ(resultType(t(DType::Float16, {3}), t(DType::Float32, {})), DType::Float16);
  EXPECT_EQ(resultType(t(DType::Float32, {}), t(DType::Float64, {2, 2})), DType::Float64);
  EXPECT_EQ(resultType(t(DType::Int64, {3}), t(DType::Float32, {})), DType::Float32);
  EXPECT_EQ(resultType(t(DType::Bool, {3}), t(DType::Int32, {})), DType::Int32);
  EXPECT_EQ(resultType(t(DType::Int32, {}), t(DType::Int64, {})), DType::Int64);
  EXPECT_EQ(resultType(t(DType::Int32, {1}), t(DType::Int64, {1})), DType::Int64);
  EXPECT_EQ(inferType(OpCode::Add, std::vector{t(DType::BFloat16, {4}), t(DType::Float32, {})}, {}).dtype,
            DType::BFloat16);
  EXPECT_EQ(promoteTypes(DType::UInt8, DType::Int8), DType::Int16);
  EXPECT_EQ(promoteTypes(DType::UInt8, DType::Int32), DType::Int32);
  EXPECT_EQ(promoteTypes(DType::Int16, DType::Float16), DType::Float16);
  EXPECT_EQ(parseDType("uint8"), DType::UInt8);
  EXPECT_EQ(dtypeSize(DType::Int16), 2u);
  EXPECT_THROW(inferType(OpCode::Add, std::vector{t(DType::UInt8, {2}), t(DType::UInt8, {2})}, {}), DTypeError);
  OpAttrs toF32;
  toF32.dtype = DType::Float32;
  EXPECT_EQ(inferType(OpCode::Cast, std::vector{t(DType::UInt8, {2})}, toF32).dtype, DType::Float32);
}

TEST(DType, HalfPrecisionPromotionAndNames) {
  EXPECT_EQ(promoteTypes(DType::Float16, DType::BFloat16), DType::Float32); // as PyTorch
  EXPECT_EQ(promoteTypes(DType::Int64, DType::Float16), DType::Float16);
  EXPECT_EQ(promoteTypes(DType::BFloat16, DType::Float32), DType::Float32);
  EXPECT_EQ(promoteTypes(DType::Float16, DType::Float16), DType::Float16);
  EXPECT_EQ(parseDType("half"), DType::Float16);
  EXPECT_EQ(parseDType("bf16"), DType::BFloat16);
  EXPECT_EQ(dtypeSize(DType::BFloat16), 2u);
  EXPECT_TRUE(isFloating(DType::Float16) && isFloating(DType::BFloat16));
  std::vector<TensorType> bad = {{DType::Float16, {2}}, {DType::Float16, {3}}};
  EXPECT_THROW(inferType(OpCode::Add, bad, {}), ShapeError);
  std::vector<TensorType> mm = {{DType::BFloat16, {2, 3}}, {DType::BFloat16, {3, 4}}};
  EXPECT_EQ(inferType(OpCode::Matmul, mm, {}).dtype, DType::BFloat16);
}

TEST(DType, HalfConversionsRoundToNearestEven) {
  // Every float16 value survives float32 and back; float32 -> float16 rounds to nearest even.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    ASSERT_EQ(floatToHalf(f), h) << h;
  }
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);      // tie: to the even 1.0
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie: to the even 1 + 2^-9
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);             // the largest finite half
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);             // rounds to infinity
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);             // half the smallest subnormal: to even 0
  EXPECT_EQ(floatToHalf(0x1.8p-25f), 0x0001);
  EXPECT_EQ(floatToHalf(-0x1p-14f), 0x8400);            // the smallest normal
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bfloat16ToFloat(uint16_t(b));
    if (!std::isnan(f)) ASSERT_EQ(floatToBFloat16(f), b) << b;
  }
  EXPECT_EQ(floatToBFloat16(1.0f + 0x1p-8f), 0x3f80);  // tie: to even
  EXPECT_EQ(floatToBFloat16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBFloat16(std::nanf("")))));
}

TEST(OpTable, SwapsLastTwoAxes) {
  using V = std::vector<int64_t>;
  EXPECT_TRUE(swapsLastTwoAxes(V{1, 0}));
  EXPECT_TRUE(swapsLastTwoAxes(V{0, 1, 3, 2}));
  EXPECT_FALSE(swapsLastTwoAxes(V{0, 1}));       // the identity
  EXPECT_FALSE(swapsLastTwoAxes(V{1, 0, 2}));    // swaps the first two
  EXPECT_FALSE(swapsLastTwoAxes(V{2, 1, 0}));    // moves a batch axis too
  EXPECT_FALSE(swapsLastTwoAxes(V{0}));
  EXPECT_FALSE(swapsLastTwoAxes(V{}));
}
