// libFuzzer harness: what a worker does with one program. The input is a Cap'n Proto message
// holding a gt.capnp Batch, as the dispatcher's Worker.run carries it; its instructions and
// regions run on a CPU executor with 16 MiB of memory (kernels compiled as needed, regions
// fused when hot). A failing op must poison its result; anything else (a crash, a sanitizer
// finding, a hang) is a bug. Seeds: test/fuzz/corpus/worker-program, recorded from real runs
// (GT_RECORD).
#include "gt/Transport/Wire.h"
#include "gt/Worker/Executor.h"

#include <capnp/serialize.h>

#include <cstring>

using namespace gt;
using namespace gt::worker;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Executor *executor = [] {
    ExecutorOptions o;
    o.backgroundCompile = false; // regions compile before their first replay: fused code runs too
    o.memoryBytes = o.sessionMemoryBytes = 16 << 20;
    return new Executor(o);
  }();
  if (size < 8 || size > (size_t(1) << 20)) return 0;
  auto words = kj::heapArray<capnp::word>(size / sizeof(capnp::word));
  std::memcpy(words.begin(), data, words.size() * sizeof(capnp::word));
  ProgramRun program;
  try {
    capnp::ReaderOptions options = capnp::ReaderOptions();
    options.traversalLimitInWords = words.size() * 4 + 64;
    capnp::FlatArrayMessageReader reader(words, options);
    auto batch = reader.getRoot<wire::Batch>();
    if (batch.getInstructions().size() > 4096) return 0;
    for (auto inst : batch.getInstructions()) program.instructions.push_back(wire::fromWire(inst));
    for (auto r : batch.getRegions()) {
      RegionCall call{r.getKey(), r.getHot(), r.getStart(), r.getCount(), {}};
      for (uint64_t id : r.getOutputs()) call.outputs.push_back(id);
      program.regions.push_back(std::move(call));
    }
  } catch (const kj::Exception &) {
    return 0;
  } catch (const std::exception &) { // an unknown op or dtype: the worker refuses the program
    return 0;
  }
  executor->setSession(1);
  while (!program.done()) executor->runNext(program);
  executor->endSession(1); // nothing survives into the next input
  return 0;
}
