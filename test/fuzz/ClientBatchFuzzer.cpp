// libFuzzer harness: what a dispatcher does with one client batch. The input is a Cap'n Proto
// message holding a gt.capnp Batch, as a client's submit carries it; it is read with the
// dispatcher's limits, checked instruction by instruction (checkClientInstruction), captured
// into the gt dialect and run through the dispatcher's pass pipeline, plain and sharded over two
// workers. Anything but an error report (a crash, a sanitizer finding, a hang) is a bug.
// Seeds: test/fuzz/corpus/client-batch, recorded from real runs (GT_RECORD).
#include "gt/Core/Config.h"
#include "gt/Dialect/GTOps.h"
#include "gt/Dispatcher/Capture.h"
#include "gt/Dispatcher/ClientBatch.h"
#include "gt/Transport/Wire.h"

#include "mlir/IR/MLIRContext.h"

#include <capnp/serialize.h>

#include <cstring>

using namespace gt;

namespace {

mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    auto *c = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    mlir::DialectRegistry registry;
    mlir::gt::registerGTDialects(registry);
    c->appendDialectRegistry(registry);
    c->loadAllAvailableDialects();
    c->printOpOnDiagnostic(false);
    return c;
  }();
  return *ctx;
}

/// The signals the recorded sharded runs use (test/python/sharding/*.yaml).
const ShardingConfig &config() {
  static const ShardingConfig c = ShardingConfig::parse(R"(
data: {shard: {axis: 0}}
params: {replicated: true}
columns: {shard: {axis: 1}}
column_bias: {shard: {axis: 0}}
rows: {shard: {axis: 0}}
stage1: {shard: {axis: 0, workers: [0]}}
stage1_params: {replicated: {workers: [0]}}
stage2: {shard: {axis: 0, workers: [1]}}
stage2_params: {replicated: {workers: [1]}}
)", "fuzz.yaml");
  return c;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8 || size > (size_t(1) << 20)) return 0;
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  std::memcpy(words.begin(), data, words.size() * sizeof(capnp::word));
  capnp::ReaderOptions options; // as the dispatcher reads a client's message
  options.traversalLimitInWords = words.size() * 4 + 64;
  options.nestingLimit = 64;
  dispatcher::BatchLimits limits;
  std::vector<Instruction> batch;
  try {
    capnp::FlatArrayMessageReader reader(words, options);
    auto instructions = reader.getRoot<wire::Batch>().getInstructions();
    if (!dispatcher::checkBatchSize(instructions.size(), limits).empty()) return 0;
    for (auto inst : instructions) {
      try {
        Instruction in = wire::fromWire(inst);
        if (dispatcher::checkClientInstruction(in, limits).empty()) batch.push_back(std::move(in));
      } catch (const std::exception &) { // refused: an unknown op or dtype
      }
    }
  } catch (const kj::Exception &) { // not a message: the dispatcher closes the connection
    return 0;
  }
  for (bool sharded : {false, true}) {
    try {
      auto module = dispatcher::captureBatch(context(), batch, [](uint64_t) { return std::nullopt; });
      mlir::gt::DispatcherPipelineOptions o;
      o.numWorkers = 2;
      o.verifyEachPass = true; // a pass that makes invalid IR from a valid batch is a finding too
      if (sharded) o.config = &config();
      dispatcher::runDispatcherPipeline(*module, o);
    } catch (const std::exception &) { // refused with a reason: what the client would see
    }
  }
  return 0;
}
