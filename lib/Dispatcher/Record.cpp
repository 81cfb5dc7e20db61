// GT_RECORD: batches and programs as self-contained Cap'n Proto messages (see Record.h).
#include "gt/Dispatcher/Record.h"

#include "gt/Transport/Wire.h"

#include <capnp/serialize.h>

#include <fcntl.h>
#include <unistd.h>

#include <unordered_set>

namespace gt::dispatcher {

void recordBatch(const std::string &path, const std::vector<Instruction> &batch, std::vector<ProgramRegion> regions,
                 const std::function<std::optional<TensorType>(uint64_t)> &typeOf) {
  std::vector<Instruction> prefix;
  std::unordered_set<uint64_t> made, defined;
  for (const Instruction &inst : batch) {
    for (uint64_t id : inst.operands)
      if (!made.count(id) && defined.insert(id).second)
        if (std::optional<TensorType> type = typeOf(id)) {
          Instruction full;
          full.op = OpCode::Full;
          full.result = id;
          full.attrs.shape = type->shape;
          full.attrs.dtype = type->dtype;
          full.attrs.value = 0.5;
          prefix.push_back(std::move(full));
        }
    if (inst.op != OpCode::Free) made.insert(inst.result);
  }
  capnp::MallocMessageBuilder message;
  auto out = message.initRoot<wire::Batch>();
  auto list = out.initInstructions(unsigned(prefix.size() + batch.size()));
  unsigned i = 0;
  for (const Instruction &inst : prefix) wire::toWire(inst, list[i++]);
  for (const Instruction &inst : batch) wire::toWire(inst, list[i++]);
  auto rlist = out.initRegions(unsigned(regions.size()));
  for (unsigned r = 0; r < regions.size(); ++r) {
    rlist[r].setKey(regions[r].key);
    rlist[r].setHot(regions[r].hot);
    rlist[r].setStart(regions[r].start + uint32_t(prefix.size()));
    rlist[r].setCount(regions[r].count);
    auto outs = rlist[r].initOutputs(unsigned(regions[r].outputs.size()));
    for (unsigned j = 0; j < regions[r].outputs.size(); ++j) outs.set(j, regions[r].outputs[j]);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  try {
    capnp::writeMessageToFd(fd, message);
  } catch (...) {
  }
  ::close(fd);
}

} // namespace gt::dispatcher
