// The CPU executor and the kernel cache: values, poisoning, and a second compiler that loads
// every kernel from disk instead of compiling.
#include "gt/Worker/Executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

using namespace gt;
using namespace gt::worker;

namespace {
Instruction upload(uint64_t id, const std::vector<float> &v, Shape shape) {
  Instruction i;
  i.op = OpCode::Upload;
  i.result = id;
  i.attrs.shape = std::move(shape);
  i.data.assign(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
  return i;
}
Instruction op(OpCode code, uint64_t id, std::vector<uint64_t> operands, OpAttrs attrs = {}) {
  Instruction i;
  i.op = code;
  i.result = id;
  i.operands = std::move(operands);
  i.attrs = std::move(attrs);
  i.location = "test.py:1";
  return i;
}
std::vector<float> floats(const Fetched &f) {
  std::vector<float> v(f.bytes.size() / sizeof(float));
  std::memcpy(v.data(), f.bytes.data(), f.bytes.size());
  return v;
}
std::string tempCacheDir() {
  auto dir = std::filesystem::temp_directory_path() / ("gt-cache-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}
} // namespace

TEST(Executor, ElementwiseReductionMatmul) {
  Executor ex("");
  ex.run(upload(1, {1, 2, 3, 4, 5, 6}, {2, 3}));
  ex.run(upload(2, {10, 20, 30}, {3}));
  ex.run(op(OpCode::Add, 3, {1, 2}));
  EXPECT_EQ(floats(ex.fetch(3)), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  OpAttrs sum;
  sum.axes = {1};
  sum.keepdims = true;
  ex.run(op(OpCode::Sum, 4, {1}, sum));
  Fetched s = ex.fetch(4);
  EXPECT_EQ(s.type.shape, (Shape{2, 1}));
  EXPECT_EQ(floats(s), (std::vector<float>{6, 15}));
  OpAttrs perm;
  perm.axes = {1, 0};
  ex.run(op(OpCode::Transpose, 5, {1}, perm));
  ex.run(op(OpCode::Matmul, 6, {1, 5}));
  EXPECT_EQ(floats(ex.fetch(6)), (std::vector<float>{14, 32, 32, 77}));
  ex.run(op(OpCode::Tanh, 7, {2}));
  EXPECT_NEAR(floats(ex.fetch(7))[0], std::tanh(10.0f), 1e-6);
}

TEST(Executor, RandnIsSeededAndNormal) {
  Executor ex("");
  OpAttrs attrs;
  attrs.shape = {10000};
  attrs.seed = 42;
  ex.run(op(OpCode::Randn, 1, {}, attrs));
  ex.run(op(OpCode::Randn, 2, {}, attrs));
  attrs.seed = 43;
  ex.run(op(OpCode::Randn, 3, {}, attrs));
  auto a = floats(ex.fetch(1)), b = floats(ex.fetch(2)), c = floats(ex.fetch(3));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double mean = 0, var = 0;
  for (float x : a) mean += x;
  mean /= a.size();
  for (float x : a) var += (x - mean) * (x - mean);
  var /= a.size();
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.05);
  EXPECT_EQ(ex.compiler().stats().compiled, 1u); // the seed is a run-time operand
}

TEST(Executor, FailuresPoisonDependents) {
  Executor ex("");
  Instruction bad = upload(1, {1, 2, 3}, {4}); // 3 floats for a 4-element tensor
  bad.location = "train.py:7";
  ex.run(bad);
  ex.run(op(OpCode::Exp, 2, {1}));
  Fetched f = ex.fetch(2);
  EXPECT_NE(f.error.find("upload at train.py:7"), std::string::npos) << f.error;
  EXPECT_FALSE(ex.fetch(99).error.empty());
}

TEST(KernelCache, SecondCompilerLoadsFromDisk) {
  std::string dir = tempCacheDir();
  std::vector<float> expected;
  {
    Executor ex(dir);
    ex.run(upload(1, {1, -2, 3}, {3}));
    ex.run(op(OpCode::Relu, 2, {1}));
    ex.run(op(OpCode::Sigmoid, 3, {2}));
    expected = floats(ex.fetch(3));
    EXPECT_EQ(ex.compiler().stats().compiled, 2u);
    EXPECT_EQ(ex.compiler().stats().diskHits, 0u);
  }
  Executor again(dir);
  again.run(upload(1, {1, -2, 3}, {3}));
  again.run(op(OpCode::Relu, 2, {1}));
  again.run(op(OpCode::Sigmoid, 3, {2}));
  EXPECT_EQ(floats(again.fetch(3)), expected);
  EXPECT_EQ(again.compiler().stats().compiled, 0u);
  EXPECT_EQ(again.compiler().stats().diskHits, 2u);
  // Same kernel again in the same process: served from memory.
  again.run(op(OpCode::Relu, 4, {1}));
  EXPECT_EQ(again.compiler().stats().memoryHits, 1u);
  std::filesystem::remove_all(dir);
}
