// The CPU executor and the kernel cache: values, poisoning, and a second compiler that loads
// every kernel from disk instead of compiling.
#include "gt/Worker/Executor.h"

#include "Programs.h"
#include "../../lib/Worker/Runtime/MatmulShape.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace gt;
using namespace gt::worker;
using namespace gt::test;

namespace {
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

TEST(Executor, TransposesOfTheLastTwoAxesAreDeferredIntoMatmul) {
  Executor ex("");
  ex.run(upload(1, {1, 2, 3, 4, 5, 6}, {2, 3}));       // x
  ex.run(upload(2, {1, 0, 2, -1, 3, 1}, {2, 3}));      // y
  OpAttrs swap;
  swap.axes = {1, 0};
  ex.run(op(OpCode::Transpose, 3, {1}, swap));         // x^T, deferred: no copy kernel yet
  ex.run(op(OpCode::Matmul, 4, {3, 2}));               // x^T y (3x3): CblasTrans on the lhs
  ex.run(op(OpCode::Matmul, 5, {2, 3}));               // y x^T (2x2): CblasTrans on the rhs
  ex.run(op(OpCode::Transpose, 6, {3}, swap));         // (x^T)^T: x again, an alias
  ex.run(op(OpCode::Matmul, 7, {3, 6}));               // x^T x with both operands read through x's buffer
  EXPECT_EQ(ex.compiler().stats().compiled, 0u);
  EXPECT_EQ(floats(ex.fetch(4)), (std::vector<float>{-3, 12, 6, -3, 15, 9, -3, 18, 12}));
  EXPECT_EQ(floats(ex.fetch(5)), (std::vector<float>{7, 16, 8, 17}));
  EXPECT_EQ(floats(ex.fetch(6)), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(floats(ex.fetch(7)), (std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45}));
  EXPECT_EQ(ex.compiler().stats().compiled, 0u);
  Instruction freeX;
  freeX.op = OpCode::Free;
  freeX.operands = {1};
  ex.run(freeX);                                       // the deferred transpose keeps x's bytes alive
  Fetched t = ex.fetch(3);                             // a read carries it out (one copy kernel)
  EXPECT_EQ(t.type.shape, (Shape{3, 2}));
  EXPECT_EQ(floats(t), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(ex.compiler().stats().compiled, 1u);
  ex.run(op(OpCode::Transpose, 8, {2}, swap));
  ex.run(op(OpCode::Add, 9, {8, 8}));                  // any other op reads it materialized
  EXPECT_EQ(floats(ex.fetch(9)), (std::vector<float>{2, -2, 0, 6, 4, 2}));
  // Batched: (2, 2, 3) with its last two axes swapped, times (2, 2, 1).
  ex.run(upload(10, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3}));
  ex.run(upload(11, {1, 1, 2, -1}, {2, 2, 1}));
  OpAttrs batchedSwap;
  batchedSwap.axes = {0, 2, 1};
  ex.run(op(OpCode::Transpose, 12, {10}, batchedSwap));
  ex.run(op(OpCode::Matmul, 13, {12, 11}));
  Fetched b = ex.fetch(13);
  EXPECT_EQ(b.type.shape, (Shape{2, 3, 1}));
  EXPECT_EQ(floats(b), (std::vector<float>{5, 7, 9, 4, 5, 6}));
}

TEST(Executor, ABatchTimesOneMatrixFoldsIntoOneGEMM) {
  // (2, 2, 3) @ (3, 2): B is one matrix for the whole batch, so the batch folds into A's rows
  // ((4, 3) @ (3, 2), one GEMM); B stored transposed (2, 3) folds too; a transposed A does not.
  EXPECT_TRUE(MatmulShape({DType::Float32, {2, 2, 3}}, {DType::Float32, {3, 2}}).foldBatchIntoRows());
  EXPECT_TRUE(MatmulShape({DType::Float32, {2, 2, 2, 3}}, {DType::Float32, {1, 3, 2}}).foldBatchIntoRows());
  EXPECT_FALSE(MatmulShape({DType::Float32, {2, 2, 3}}, {DType::Float32, {2, 3, 2}}).foldBatchIntoRows());
  EXPECT_FALSE(MatmulShape({DType::Float32, {1, 2, 3}}, {DType::Float32, {2, 3, 2}}).foldBatchIntoRows());
  EXPECT_FALSE(MatmulShape({DType::Float32, {2, 3}}, {DType::Float32, {3, 2}}).foldBatchIntoRows());
  MatmulShape folded({DType::Float32, {4, 5, 2, 3}}, {DType::Float32, {3, 7}});
  ASSERT_TRUE(folded.foldBatchIntoRows());
  EXPECT_EQ(folded.m, 40);
  EXPECT_EQ(folded.batches, 1);

  Executor ex("");
  ex.run(upload(1, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3})); // a
  ex.run(upload(2, {1, 0, 0, 1, 1, -1}, {3, 2}));                         // b
  ex.run(op(OpCode::Matmul, 3, {1, 2}));
  Fetched c = ex.fetch(3);
  EXPECT_EQ(c.type.shape, (Shape{2, 2, 2}));
  EXPECT_EQ(floats(c), (std::vector<float>{4, -1, 10, -1, 16, -1, 22, -1}));
  ex.run(upload(4, {1, 0, 1, 0, 1, -1}, {2, 3}));                         // b^T stored
  OpAttrs swap;
  swap.axes = {1, 0};
  ex.run(op(OpCode::Transpose, 5, {4}, swap));                            // deferred: CblasTrans on the rhs
  ex.run(op(OpCode::Matmul, 6, {1, 5}));
  EXPECT_EQ(floats(ex.fetch(6)), (std::vector<float>{4, -1, 10, -1, 16, -1, 22, -1}));
  OpAttrs batchedSwap;
  batchedSwap.axes = {0, 2, 1};
  ex.run(op(OpCode::Transpose, 7, {1}, batchedSwap));                     // a^T: (2, 3, 2), not folded
  ex.run(upload(8, {1, 0, 0, 1}, {2, 2}));
  ex.run(op(OpCode::Matmul, 9, {7, 8}));
  EXPECT_EQ(floats(ex.fetch(9)), (std::vector<float>{1, 4, 2, 5, 3, 6, 7, 10, 8, 11, 9, 12}));
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

// Result types are carried from the client (Instruction::type). A kernel op runs with the
// carried type, checked by its kernel's verifier once per kernel; an op without a kernel checks
// it against its operands every run. A wrong one fails that op with a reason, never more.
TEST(Executor, CarriedResultTypesAreCheckedNotTrusted) {
  Executor ex("");
  ex.run(upload(1, {1, 2, 3}, {3}));
  Instruction good = op(OpCode::Exp, 2, {1});
  good.type = TensorType{DType::Float32, {3}};
  ex.run(good);
  EXPECT_NEAR(floats(ex.fetch(2))[2], std::exp(3.0f), 1e-5);

  // A kernel op whose kernel would write past its input's size: a size-generic CPU kernel (exp)
  // never sees the sizes, so the executor checks the type; a kernel built for the shape (cumsum)
  // checks it in its verifier.
  Instruction longer = op(OpCode::Exp, 3, {1});
  longer.type = TensorType{DType::Float32, {1000}};
  ex.run(longer);
  Fetched f = ex.fetch(3);
  EXPECT_NE(f.error.find("exp at test.py:1"), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("malformed program"), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("[1000]"), std::string::npos) << f.error;
  OpAttrs axis0;
  axis0.axes = {0};
  Instruction scan = op(OpCode::Cumsum, 6, {1}, axis0);
  scan.type = TensorType{DType::Float32, {1000}};
  ex.run(scan);
  f = ex.fetch(6);
  EXPECT_NE(f.error.find("cumsum at test.py:1"), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("does not verify"), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("tensor<1000xf32>"), std::string::npos) << f.error;

  OpAttrs to4;
  to4.shape = {3, 1};
  Instruction alias = op(OpCode::Reshape, 4, {1}, to4); // no kernel: the buffer is reused as is
  alias.type = TensorType{DType::Float32, {300, 1}};
  ex.run(alias);
  f = ex.fetch(4);
  EXPECT_NE(f.error.find("malformed program"), std::string::npos) << f.error;
  EXPECT_NE(f.error.find("float32[3, 1]"), std::string::npos) << f.error;

  ex.run(op(OpCode::Neg, 5, {2})); // untyped (a hand-built program): inferred
  EXPECT_NEAR(floats(ex.fetch(5))[0], -std::exp(1.0f), 1e-5);
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

namespace {
/// One training-step-like program: y = sum(relu(x + b) * 2), keeping relu(x + b) as well.
/// Ids are offset by `base` so the same program can run again with fresh tensors.
std::vector<Instruction> stepProgram(uint64_t base, double scale) {
  OpAttrs all;
  all.axes = {0, 1};
  OpAttrs fill;
  fill.value = scale;
  fill.dtype = DType::Float32;
  return {op(OpCode::Add, base + 3, {1, 2}),
          op(OpCode::Relu, base + 4, {base + 3}),
          op(OpCode::Full, base + 5, {}, fill),
          op(OpCode::Mul, base + 6, {base + 4, base + 5}),
          op(OpCode::Sum, base + 7, {base + 6}, all),
          op(OpCode::Free, 0, {base + 3}),
          op(OpCode::Free, 0, {base + 5}),
          op(OpCode::Free, 0, {base + 6})};
}
// The region gt-mark-hot-regions would form: the five compute ops and the three frees.
RegionCall stepRegion(uint64_t base, bool hot) {
  return RegionCall{0x1234, hot, 0, 8, {base + 4, base + 7}};
}
void uploadInputs(Executor &ex) {
  ex.run(upload(1, {1, -2, 3, -4, 5, -6}, {2, 3}));
  ex.run(upload(2, {0.5f, 0.25f, -10}, {3}));
}
} // namespace

TEST(Regions, FusedReplayMatchesEager) {
  Executor eager(""), fused(ExecutorOptions{"", /*backgroundCompile=*/false});
  uploadInputs(eager);
  uploadInputs(fused);
  for (uint64_t step = 0; step < 3; ++step) {
    uint64_t base = 100 * (step + 1);
    double scale = 2.0 + double(step); // a fill value that changes every step: same kernel
    auto program = stepProgram(base, scale);
    RegionCall region = stepRegion(base, /*hot=*/true);
    eager.runProgram(program, {});
    fused.runProgram(program, std::span(&region, 1));
    EXPECT_EQ(floats(fused.fetch(base + 4)), floats(eager.fetch(base + 4)));
    EXPECT_EQ(floats(fused.fetch(base + 7)), floats(eager.fetch(base + 7)));
    EXPECT_FALSE(fused.fetch(base + 3).error.empty()) << "an intermediate freed inside the region";
  }
  // relu(x+b) = [1.5, 0, 0, 0, 5.25, 0]; step 2 scales by 4.
  EXPECT_EQ(floats(fused.fetch(307)), (std::vector<float>{(1.5f + 5.25f) * 4}));
  ExecutorStats s = fused.stats();
  EXPECT_EQ(s.regionsHot, 3u);
  EXPECT_EQ(s.regionReplays, 3u) << "compiled synchronously: every occurrence replays";
  EXPECT_EQ(s.regionsCompiled, 1u) << "one kernel for every fill value";
  EXPECT_EQ(s.fusedOps, 15u);
  EXPECT_EQ(s.eagerOps, 2u) << "only the two uploads ran op by op";
  EXPECT_EQ(eager.stats().fusedOps, 0u);
}

TEST(Regions, LargeRegionsSplitTheirLoopsOverThreadsAndMatchEager) {
  // relu(x + b) and its row sums over 256 x 512 elements: with GT_JIT_PARALLEL_MIN below that
  // (the default, 2^20 elements, is larger), the fused kernel forks OpenMP threads (its object
  // calls __kmpc_fork_call); every element is computed as the eager kernels do, so the results
  // agree bit for bit.
  std::string dir = tempCacheDir();
  ::setenv("GT_JIT_PARALLEL_MIN", "32768", 1);
  Executor eager(""), fused(ExecutorOptions{dir, /*backgroundCompile=*/false});
  ::unsetenv("GT_JIT_PARALLEL_MIN");
  std::vector<float> x(256 * 512), b(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 97) - 48) / 7.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 13) - 6) / 3.0f;
  for (Executor *ex : {&eager, &fused}) {
    ex->run(upload(1, x, {256, 512}));
    ex->run(upload(2, b, {512}));
  }
  OpAttrs rows;
  rows.axes = {1};
  std::vector<Instruction> program = {op(OpCode::Add, 3, {1, 2}), op(OpCode::Relu, 4, {3}),
                                      op(OpCode::Sum, 5, {4}, rows), op(OpCode::Free, 0, {3})};
  RegionCall region{0x5678, true, 0, 4, {4, 5}};
  eager.runProgram(program, {});
  fused.runProgram(program, std::span(&region, 1));
  ASSERT_EQ(fused.stats().regionReplays, 1u) << "the region compiled and replayed";
  EXPECT_EQ(floats(fused.fetch(4)), floats(eager.fetch(4)));
  EXPECT_EQ(floats(fused.fetch(5)), floats(eager.fetch(5)));
  bool forks = false;
  for (const auto &entry : std::filesystem::directory_iterator(std::filesystem::path(dir) / "kernels")) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string object((std::istreambuf_iterator<char>(in)), {});
    forks = forks || object.find("__kmpc_fork_call") != std::string::npos;
  }
  EXPECT_TRUE(forks) << "no kernel in " << dir << " runs an OpenMP parallel loop";
  std::filesystem::remove_all(dir);
}

TEST(Regions, VectorWidthChangesTheCodeNotTheResults) {
  // gelu(x + b) and its row sums, compiled with 512-bit vectors (the default on an AVX-512
  // host) and with GT_JIT_VECTOR_WIDTH=256: LLVM's IR (GT_DUMP_KERNELS) holds 16-float vectors
  // only in the first, and the results agree bit for bit (each lane computes its element alike;
  // gt-cpu-reductions fixes its own lane count).
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string info((std::istreambuf_iterator<char>(cpuinfo)), {});
  if (info.find(" avx512f") == std::string::npos) GTEST_SKIP() << "the host has no AVX-512";
  std::vector<float> x(64 * 512), b(512);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 97) - 48) / 17.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 13) - 6) / 5.0f;
  OpAttrs rows;
  rows.axes = {1};
  std::vector<Instruction> program = {op(OpCode::Add, 3, {1, 2}), op(OpCode::Gelu, 4, {3}),
                                      op(OpCode::Sum, 5, {4}, rows), op(OpCode::Free, 0, {3})};
  RegionCall region{0x9abc, true, 0, 4, {4, 5}};
  std::vector<std::vector<float>> outs;
  std::vector<std::string> ir;
  for (const char *width : {"512", "256"}) {
    std::string dir = tempCacheDir(), dump = tempCacheDir();
    std::filesystem::create_directories(dump);
    ::setenv("GT_JIT_VECTOR_WIDTH", width, 1);
    ::setenv("GT_DUMP_KERNELS", dump.c_str(), 1);
    {
      Executor fused(ExecutorOptions{dir, /*backgroundCompile=*/false});
      fused.run(upload(1, x, {64, 512}));
      fused.run(upload(2, b, {512}));
      fused.runProgram(program, std::span(&region, 1));
      ASSERT_EQ(fused.stats().regionReplays, 1u) << "the region compiled and replayed";
      std::vector<float> out = floats(fused.fetch(4)), sums = floats(fused.fetch(5));
      out.insert(out.end(), sums.begin(), sums.end());
      outs.push_back(out);
    }
    ::unsetenv("GT_JIT_VECTOR_WIDTH");
    ::unsetenv("GT_DUMP_KERNELS");
    std::string text;
    for (const auto &entry : std::filesystem::directory_iterator(dump))
      if (entry.path().extension() == ".ll") {
        std::ifstream in(entry.path());
        text += std::string((std::istreambuf_iterator<char>(in)), {});
      }
    ir.push_back(text);
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(dump);
  }
  ASSERT_FALSE(ir[0].empty()) << "GT_DUMP_KERNELS wrote no LLVM IR for the region";
  EXPECT_NE(ir[0].find("<16 x float>"), std::string::npos) << "512-bit vectors expected by default";
  EXPECT_EQ(ir[1].find("<16 x float>"), std::string::npos) << "GT_JIT_VECTOR_WIDTH=256 still made 512-bit vectors";
  EXPECT_EQ(outs[0], outs[1]);
}

TEST(Regions, BackgroundCompileSwapsIn) {
  Executor ex(ExecutorOptions{"", /*backgroundCompile=*/true});
  uploadInputs(ex);
  auto first = stepProgram(100, 2.0);
  RegionCall r1 = stepRegion(100, true);
  ex.runProgram(first, std::span(&r1, 1));
  EXPECT_EQ(floats(ex.fetch(107)), (std::vector<float>{13.5f}));
  ex.waitForCompiles();
  auto second = stepProgram(200, 2.0);
  RegionCall r2 = stepRegion(200, true);
  ex.runProgram(second, std::span(&r2, 1));
  EXPECT_EQ(floats(ex.fetch(207)), (std::vector<float>{13.5f}));
  ExecutorStats s = ex.stats();
  EXPECT_EQ(s.regionReplays, 1u) << "the first occurrence ran eagerly while the kernel compiled";
  EXPECT_EQ(s.regionsCompiled, 1u);
}

TEST(Regions, ColdRegionsRunEagerly) {
  Executor ex(ExecutorOptions{"", false});
  uploadInputs(ex);
  auto program = stepProgram(100, 2.0);
  RegionCall region = stepRegion(100, /*hot=*/false);
  ex.runProgram(program, std::span(&region, 1));
  EXPECT_EQ(floats(ex.fetch(107)), (std::vector<float>{13.5f}));
  EXPECT_EQ(ex.stats().regionReplays, 0u);
  EXPECT_EQ(ex.stats().regionsSeen, 1u);
  EXPECT_EQ(ex.compilerStats().compiled, 4u) << "add, relu, mul, sum: the eager kernels only (full is a host fill)";
}

TEST(Regions, UncompilableRegionFallsBackOnceWithReason) {
  Executor ex(ExecutorOptions{"", false});
  uploadInputs(ex);
  OpAttrs perm;
  perm.axes = {1, 0};
  for (uint64_t base : {100, 200}) {
    // A matmul is never fusible: compiling this region must fail, and the ops still run.
    std::vector<Instruction> program = {op(OpCode::Transpose, base + 1, {1}, perm),
                                        op(OpCode::Matmul, base + 2, {1, base + 1})};
    RegionCall region{0x77, true, 0, 2, {base + 2}};
    ex.runProgram(program, std::span(&region, 1));
    EXPECT_TRUE(ex.fetch(base + 2).error.empty());
  }
  ExecutorStats s = ex.stats();
  EXPECT_EQ(s.regionFallbacks, 1u);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("matmul cannot be fused"), std::string::npos) << s.notes[0];
  EXPECT_EQ(s.regionReplays, 0u);
}

TEST(Regions, PoisonedInputRunsEagerlyAndPropagates) {
  Executor ex(ExecutorOptions{"", false});
  uploadInputs(ex);
  auto program = stepProgram(100, 2.0);
  RegionCall region = stepRegion(100, true);
  ex.runProgram(program, std::span(&region, 1)); // compiles
  ex.run(upload(1, {1, 2}, {2, 3}));             // wrong byte count: poisons tensor 1
  auto again = stepProgram(200, 2.0);
  RegionCall r2 = stepRegion(200, true);
  ex.runProgram(again, std::span(&r2, 1));
  EXPECT_NE(ex.fetch(207).error.find("upload"), std::string::npos) << ex.fetch(207).error;
}

// int8, int16 and uint8 are moved and cast on workers, never computed on (the Python API
// computes through int32): uint8 widens without a sign, a float narrows through int32 (200.0
// keeps its bits), moves keep the bytes, and arithmetic is refused by the shape rules.
TEST(Executor, SmallIntegersAreMovedAndCast) {
  Executor ex("");
  Instruction up;
  up.op = OpCode::Upload;
  up.result = 1;
  up.attrs.shape = {2, 2};
  up.attrs.dtype = DType::UInt8;
  up.data = std::string("\xfa\x03\x80\x00", 4); // 250, 3, 128, 0
  ex.run(up);
  OpAttrs toF32, toU8, toI8, swap;
  toF32.dtype = DType::Float32;
  toU8.dtype = DType::UInt8;
  toI8.dtype = DType::Int8;
  swap.axes = {1, 0};
  ex.run(op(OpCode::Cast, 2, {1}, toF32));
  EXPECT_EQ(floats(ex.fetch(2)), (std::vector<float>{250, 3, 128, 0}));
  ex.run(op(OpCode::Transpose, 3, {1}, swap));
  Fetched t = ex.fetch(3);
  EXPECT_EQ(t.type.dtype, DType::UInt8);
  EXPECT_EQ(t.bytes, std::string("\xfa\x80\x03\x00", 4));
  ex.run(upload(4, {200.0f, -3.0f, 1.7f, 300.0f}, {4}));
  ex.run(op(OpCode::Cast, 5, {4}, toU8));
  EXPECT_EQ(ex.fetch(5).bytes, std::string("\xc8\xfd\x01\x2c", 4)); // 200, 253, 1, 44 (300 mod 256)
  ex.run(op(OpCode::Cast, 6, {1}, toI8));                           // 250 -> -6: the same bits
  EXPECT_EQ(ex.fetch(6).bytes, std::string("\xfa\x03\x80\x00", 4));
  ex.run(op(OpCode::Add, 7, {1, 1}));
  Fetched refused = ex.fetch(7);
  EXPECT_NE(refused.error.find("only moved and cast"), std::string::npos) << refused.error;
}

namespace {
/// The CPU device without its library (oneDNN): convolutions and pools take their compiled kernels.
class NoConvolutionLibrary final : public Device {
public:
  std::string describe() const override { return "cpu without oneDNN"; }
  CompilerTarget target() const override { return cpu_->target(); }
  Buffer allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  void upload(void *dst, const void *src, size_t bytes) override { cpu_->upload(dst, src, bytes); }
  void download(void *dst, const void *src, size_t bytes) override { cpu_->download(dst, src, bytes); }
  void copy(void *dst, const void *src, size_t bytes) override { cpu_->copy(dst, src, bytes); }
  void setScalar(void *dst, uint64_t bits) override { cpu_->setScalar(dst, bits); }
  void matmul(const TensorType &ta, const void *a, const TensorType &tb, const void *b, const TensorType &tc, void *c,
              Transposed transposed) override {
    cpu_->matmul(ta, a, tb, b, tc, c, transposed);
  }

private:
  std::unique_ptr<Device> cpu_ = createCPUDevice();
};

std::vector<float> ramp(size_t count, float scale) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = scale * float(int(i % 13) - 6);
  return v;
}
} // namespace

TEST(Executor, ConvolutionKernelsMatchTheConvolutionLibrary) {
  // gt.convolution and its gradients, strided, dilated, padded and grouped, in 1-D and 2-D: the
  // compiled kernels (a device without a convolution library) against oneDNN (the CPU device).
  struct Case {
    Shape x, w;
    std::vector<int64_t> padding, stride, dilation;
    int64_t groups;
  };
  for (const Case &c : {Case{{2, 4, 9, 7}, {6, 2, 3, 3}, {1, 0}, {2, 1}, {1, 2}, 2},
                        Case{{3, 3, 11}, {5, 3, 4}, {2}, {3}, {1}, 1}}) {
    size_t n = c.x.size() - 2;
    Shape out = {c.x[0], c.w[0]};
    for (size_t i = 0; i < n; ++i)
      out.push_back((c.x[2 + i] + 2 * c.padding[i] - c.dilation[i] * (c.w[2 + i] - 1) - 1) / c.stride[i] + 1);
    OpAttrs attrs;
    attrs.starts = c.padding;
    attrs.steps = c.stride;
    attrs.axes = c.dilation;
    attrs.count = c.groups;
    std::vector<std::vector<float>> results[2];
    for (int library = 0; library < 2; ++library) {
      ExecutorOptions options;
      if (!library) options.device = std::make_shared<NoConvolutionLibrary>();
      Executor ex(options);
      ex.run(upload(1, ramp(size_t(numElements(c.x)), 0.25f), c.x));
      ex.run(upload(2, ramp(size_t(numElements(c.w)), 0.5f), c.w));
      ex.run(upload(3, ramp(size_t(numElements(out)), 0.125f), out));
      attrs.shape = out;
      ex.run(op(OpCode::Convolution, 4, {1, 2}, attrs));
      attrs.shape = c.x;
      ex.run(op(OpCode::ConvolutionBackwardInput, 5, {3, 2}, attrs));
      attrs.shape = c.w;
      ex.run(op(OpCode::ConvolutionBackwardWeight, 6, {3, 1}, attrs));
      for (uint64_t id : {4, 5, 6}) results[library].push_back(floats(ex.fetch(id)));
      EXPECT_EQ(ex.compilerStats().compiled > 0, !library) << "only the device without a library compiles kernels";
    }
    for (size_t r = 0; r < 3; ++r) {
      ASSERT_EQ(results[0][r].size(), results[1][r].size());
      float largest = 0;
      for (float v : results[1][r]) largest = std::max(largest, std::fabs(v));
      EXPECT_GT(largest, 0.0f);
      for (size_t i = 0; i < results[0][r].size(); ++i)
        EXPECT_NEAR(results[0][r][i], results[1][r][i], 1e-5f * largest) << "result " << r << " element " << i;
    }
  }
}

TEST(Executor, MaxPoolKernelsMatchThePoolingLibrary) {
  // gt.max_pool and its gradient (to each window's first maximum), padded, strided and with
  // ceil-mode windows, with ties: the compiled kernels against oneDNN.
  struct Case {
    Shape x, out;
    std::vector<int64_t> kernel, padding, stride;
  };
  for (const Case &c : {Case{{2, 3, 9, 7}, {2, 3, 5, 4}, {3, 3}, {1, 1}, {2, 2}},
                        Case{{2, 2, 8, 8}, {2, 2, 3, 3}, {3, 2}, {0, 1}, {3, 3}},
                        Case{{1, 2, 10}, {1, 2, 4}, {4}, {2}, {3}}}) {
    OpAttrs attrs;
    attrs.axes = c.kernel;
    attrs.starts = c.padding;
    attrs.steps = c.stride;
    std::vector<float> x = ramp(size_t(numElements(c.x)), 1.0f);
    for (float &v : x) v = std::floor(v / 3.0f); // runs of equal values: ties inside windows
    std::vector<std::vector<float>> results[2];
    for (int library = 0; library < 2; ++library) {
      ExecutorOptions options;
      if (!library) options.device = std::make_shared<NoConvolutionLibrary>();
      Executor ex(options);
      ex.run(upload(1, x, c.x));
      ex.run(upload(2, ramp(size_t(numElements(c.out)), 0.5f), c.out));
      attrs.shape = c.out;
      ex.run(op(OpCode::MaxPool, 3, {1}, attrs));
      attrs.shape = c.x;
      ex.run(op(OpCode::MaxPoolBackward, 4, {2, 1}, attrs));
      for (uint64_t id : {3, 4}) results[library].push_back(floats(ex.fetch(id)));
    }
    EXPECT_EQ(results[0][0], results[1][0]) << "max_pool";
    EXPECT_EQ(results[0][1], results[1][1]) << "max_pool_backward";
  }
}
