// Sharding layouts (balanced splits) and the YAML sharding config (errors name the line).
#include "gt/Core/Config.h"
#include "gt/Core/Sharding.h"

#include <gtest/gtest.h>

using namespace gt;

TEST(Sharding, UnevenSplitsAreBalancedLikeArraySplit) {
  // 13 rows over 4 workers: 4, 3, 3, 3 (numpy.array_split)
  std::vector<std::pair<int64_t, int64_t>> expected = {{0, 4}, {4, 7}, {7, 10}, {10, 13}};
  for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(splitRange(13, 4, r), expected[size_t(r)]);
  EXPECT_EQ(splitRange(2, 4, 3), (std::pair<int64_t, int64_t>{2, 2})); // more workers than rows: empty blocks
  Sharding s = Sharding::split(1, {2, 3});
  EXPECT_EQ(localShape({5, 7}, s, 2), (Shape{5, 4}));
  EXPECT_EQ(localShape({5, 7}, s, 3), (Shape{5, 3}));
  EXPECT_THROW(localShape({5, 7}, s, 0), std::invalid_argument);
  EXPECT_EQ(localShape({5, 7}, Sharding::partial(ReduceKind::Sum, {0, 1}), 1), (Shape{5, 7}));
  EXPECT_EQ(s.str(), "split(1) over [2, 3]");
  EXPECT_EQ(Sharding::partial(ReduceKind::Max, {0}).str(), "partial(max) over [0]");
  EXPECT_FALSE(Sharding::split(0, {0, 1}) == Sharding::split(1, {0, 1}));
  EXPECT_TRUE(Sharding::replicated({0, 1}) == Sharding::replicated({0, 1}));
}

TEST(ShardingConfig, ParsesEveryKey) {
  ShardingConfig c = ShardingConfig::parse(R"(
forward_layer1:
  shard: {axis: 0, workers: [0, 1, 2, 3]}
  backward: backward_layer1
backward_layer1:
  shard: {axis: -1, workers: [2, 3]}
params:
  replicated: true
stage:
  replicated: {workers: [1]}
hot_block:
  compile: true
)", "cfg.yaml");
  ASSERT_EQ(c.signals.size(), 5u);
  const SignalConfig *f = c.find("forward_layer1");
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->shard);
  EXPECT_EQ(f->axis, 0);
  EXPECT_EQ(f->workers, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(f->backward, "backward_layer1");
  EXPECT_EQ(f->line, 2);
  EXPECT_EQ(c.find("backward_layer1")->axis, -1);
  EXPECT_TRUE(c.find("params")->replicated && c.find("params")->workers.empty());
  EXPECT_EQ(c.find("stage")->workers, (std::vector<int64_t>{1}));
  EXPECT_TRUE(c.find("hot_block")->compile);
  EXPECT_EQ(c.find("nothing"), nullptr);
  EXPECT_NO_THROW(c.checkWorkers(4));
  EXPECT_TRUE(ShardingConfig::parse("", "empty.yaml").empty());
}

static std::string errorOf(const std::string &yaml, int64_t workers = 4) {
  try {
    ShardingConfig::parse(yaml, "cfg.yaml").checkWorkers(workers);
  } catch (const ConfigError &e) {
    return e.what();
  }
  return "";
}

TEST(ShardingConfig, ErrorsNameTheLine) {
  EXPECT_EQ(errorOf("a:\n  shard: {axis: 0}\n  shards: 1\n"),
            "cfg.yaml:3: unknown key 'shards' in signal 'a' (expected shard, replicated, backward, compile)");
  EXPECT_EQ(errorOf("a:\n  shard: {axis: 0, workers: [0, 9]}\n"),
            "cfg.yaml:2: signal 'a' names worker 9, but there are only 4 workers (0..3)");
  EXPECT_EQ(errorOf("a:\n  shard: {workers: [0]}\n"), "cfg.yaml:2: signal 'a': shard needs an axis");
  EXPECT_EQ(errorOf("a:\n  shard: {axis: x}\n"), "cfg.yaml:2: signal 'a': shard axis must be an integer, got 'x'");
  EXPECT_EQ(errorOf("a:\n  shard: {axis: 0, worker: [0]}\n"),
            "cfg.yaml:2: unknown key 'worker' in the shard of signal 'a' (expected axis, workers)");
  EXPECT_EQ(errorOf("a:\n  backward: b\n"), "cfg.yaml:2: signal 'a': backward names 'b', which is not defined in this file");
  EXPECT_EQ(errorOf("a:\n  replicated: maybe\n"), "cfg.yaml:2: signal 'a': replicated must be true or false");
  EXPECT_EQ(errorOf("a:\n  shard: {axis: 0, workers: [1, 1]}\n"), "cfg.yaml:2: signal 'a': worker 1 is listed twice");
  EXPECT_EQ(errorOf("a:\n  shard: {axis: 0}\n  replicated: true\n"), "cfg.yaml:1: signal 'a' is both sharded and replicated");
  EXPECT_EQ(errorOf("a: [1, 2\n").substr(0, 11), "cfg.yaml:2:");
  EXPECT_EQ(errorOf("- a\n- b\n"), "cfg.yaml:1: a sharding config is a map of signal names to settings");
  EXPECT_EQ(errorOf("a:\n  compile: true\n", 1), "");
  EXPECT_EQ(errorOf("a:\n  [x]: 1\n").substr(0, 11), "cfg.yaml:2:"); // a list as a key
}

TEST(Sharding, BlocksOfAnAxisRoundTrip) {
  // A 2x5x3 tensor of bytes split along axis 1 over 3 workers (2, 2, 1 rows) and put back.
  Shape shape{2, 5, 3};
  std::string whole;
  for (int i = 0; i < 30; ++i) whole.push_back(char(i));
  std::vector<std::string> blocks;
  for (int64_t r = 0; r < 3; ++r) {
    auto [b, e] = splitRange(5, 3, r);
    blocks.push_back(takeBlock(whole, shape, 1, 1, b, e));
  }
  EXPECT_EQ(blocks[0], std::string({0, 1, 2, 3, 4, 5, 15, 16, 17, 18, 19, 20}));
  EXPECT_EQ(blocks[2].size(), 6u); // 2 x 1 x 3
  EXPECT_EQ(concatBlocks({blocks[0], blocks[1], blocks[2]}, shape, 1, 1), whole);
  EXPECT_THROW(concatBlocks({blocks[0], blocks[0], blocks[0]}, shape, 1, 1), std::invalid_argument);
}

TEST(Sharding, CombineParts) {
  float a[3] = {1, -2, 3}, b[3] = {4, 5, -6};
  combineParts(DType::Float32, ReduceKind::Sum, a, b, 3);
  EXPECT_EQ(std::vector<float>(a, a + 3), (std::vector<float>{5, 3, -3}));
  int64_t c[2] = {1, 9}, d[2] = {7, 2};
  combineParts(DType::Int64, ReduceKind::Max, c, d, 2);
  EXPECT_EQ(c[0], 7);
  EXPECT_EQ(c[1], 9);
  uint16_t h[1] = {floatToBFloat16(1.5f)}, k[1] = {floatToBFloat16(2.25f)};
  combineParts(DType::BFloat16, ReduceKind::Min, h, k, 1);
  EXPECT_EQ(bfloat16ToFloat(h[0]), 1.5f);
  uint8_t p[2] = {0, 1}, q[2] = {1, 1};
  combineParts(DType::Bool, ReduceKind::Sum, p, q, 2); // or
  EXPECT_EQ(p[0], 1);
  EXPECT_EQ(p[1], 1);
}
