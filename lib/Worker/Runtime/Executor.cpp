// The executor: runs programs on a Device (CPU or CUDA): the device's GEMM, aliases for
// reshape, JIT-compiled kernels for the rest.
#include "gt/Worker/Executor.h"
#include "gt/Core/OpAttrStructs.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>

namespace gt::worker {

namespace {

/// Distribution ops that exchange data with other workers.
bool exchanges(OpCode op) {
  return op == OpCode::AllReduce || op == OpCode::AllGather || op == OpCode::ReduceScatter ||
         op == OpCode::AllToAll || op == OpCode::Send || op == OpCode::Recv;
}

/// Ops the executor runs without a compiled kernel (BLAS, aliases, copies, exchanges), and
/// convolutions and max pools, which compile a kernel only on a device without a library for
/// them (Device::runLibraryOp; when they first run: none is compiled ahead for them).
bool runsWithoutKernel(OpCode op) {
  switch (op) {
  case OpCode::Upload: case OpCode::Reshape: case OpCode::Shard: case OpCode::AllSlice: case OpCode::Move:
  case OpCode::Matmul: case OpCode::Free: case OpCode::Convolution: case OpCode::ConvolutionBackwardInput:
  case OpCode::ConvolutionBackwardWeight: case OpCode::MaxPool: case OpCode::MaxPoolBackward:
    return true;
  default: return exchanges(op);
  }
}

/// Ops whose compiled kernel sees the whole result type and the operand types: the kernel's
/// verifier checks a carried type once per kernel. (full/randn/rand take their value as an
/// operand and their shape from the result type, so theirs is checked like the ops below.)
bool kernelChecksType(OpCode op) {
  return !runsWithoutKernel(op) && op != OpCode::Full && op != OpCode::Randn && op != OpCode::Rand;
}

/// The result type `inst` runs with: the carried one (Instruction::type). Where no kernel
/// checks it, it is inferred and the two must agree; a program without types is inferred.
/// `inferred` counts the inferences (ExecutorStats::typesInferred).
/// `viaViews`: the op runs as strided copies (copiesByViews), which no kernel verifier checks.
TensorType resultType(const Instruction &inst, std::span<const TensorType> operands, uint64_t &inferred,
                      bool viaViews = false) {
  if (inst.type && kernelChecksType(inst.op) && !viaViews) return *inst.type;
  inferred++;
  TensorType type = inferType(inst.op, operands, inst.attrs);
  if (inst.type && !(*inst.type == type))
    throw std::invalid_argument("the program gives it a " + std::string(dtypeName(inst.type->dtype)) +
                                shapeString(inst.type->shape) + " result, but its operands make a " +
                                dtypeName(type.dtype) + shapeString(type.shape) + " (a malformed program)");
  return type;
}

/// The operand types of the compiled kernel of `op` on operands of `types`: a fill value
/// (f64) or seed (i64) is the one 0-d run-time operand of full/randn/rand, so one kernel
/// serves every value.
std::vector<TensorType> kernelOperands(OpCode op, std::vector<TensorType> types) {
  if (op == OpCode::Full) return {TensorType{DType::Float64, {}}};
  if (op == OpCode::Randn || op == OpCode::Rand) return {TensorType{DType::Int64, {}}};
  return types;
}

/// Ops that only move elements: on the CPU they run as copies between strided views of their
/// operands and result (Executor::copyByViews), through one kernel per dtype and rank, so new
/// offsets, sizes and shapes compile nothing.
bool copiesByViews(OpCode op) {
  return op == OpCode::Slice || op == OpCode::SliceScatter || op == OpCode::Transpose ||
         op == OpCode::BroadcastTo || op == OpCode::Concat;
}

/// A transpose that swaps the last two axes and keeps the others (x.mT, x.T of a matrix): it is
/// deferred (Executor::Tensor::swapped), since a matmul (BLAS or cuBLAS) can take its operand
/// transposed and the backward pass transposes it back.
bool swapsLastTwo(const Instruction &inst) {
  return inst.op == OpCode::Transpose && swapsLastTwoAxes(attrs::Transpose::of(inst.attrs).perm);
}

std::vector<int64_t> rowMajorStrides(const Shape &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

/// Elementwise ops, reductions and index_select, whose eager CPU kernels are size-generic
/// (sizesAtRunTime).
bool sizeGeneric(OpCode op) { return isElementwise(op) || isValueReduction(op) || op == OpCode::IndexSelect; }

/// The types of a size-generic kernel for an elementwise op on `operands` making `result`:
/// every size becomes `?` (ShapedType::kDynamic, given by the descriptors at run time) except an
/// operand's size-1 axis that broadcasts, which stays a static 1 (it shapes the code). A result
/// axis stays static only where no operand has a `?` (then it is 1). One kernel then serves
/// every batch size of one broadcasting pattern.
void sizesAtRunTime(OpCode op, const OpAttrs &attrs, std::vector<TensorType> &operands, TensorType &result) {
  constexpr int64_t kDynamic = INT64_MIN; // mlir::ShapedType::kDynamic
  // (A type that does not fit, e.g. a malformed program's carried one, is left as it is: the
  // kernel for it fails its verifier.)
  if (op == OpCode::IndexSelect) { // the number of indices (an embedding's tokens); the table's sizes shape the code
    int64_t axis = attrs::IndexSelect::of(attrs).axis;
    if (operands.size() != 2 || operands[1].shape.size() != 1 || axis < 0 || size_t(axis) >= result.shape.size()) return;
    operands[1].shape[0] = kDynamic;
    result.shape[size_t(axis)] = kDynamic;
    return;
  }
  if (isValueReduction(op)) { // every input size; the kept ones in the result (a reduced axis kept is a 1)
    if (operands.size() != 1) return;
    Shape &in = operands[0].shape;
    size_t reducedCount = 0;
    for (size_t i = 0; i < in.size(); ++i)
      reducedCount += std::find(attrs.axes.begin(), attrs.axes.end(), int64_t(i)) != attrs.axes.end();
    if (result.shape.size() != (attrs.keepdims ? in.size() : in.size() - reducedCount)) return;
    for (size_t i = 0, k = 0; i < in.size(); ++i) {
      bool reduced = std::find(attrs.axes.begin(), attrs.axes.end(), int64_t(i)) != attrs.axes.end();
      if (!reduced) result.shape.at(attrs.keepdims ? i : k++) = kDynamic;
      in[i] = kDynamic;
    }
    return;
  }
  size_t rank = result.shape.size();
  for (const TensorType &t : operands)
    if (t.shape.size() > rank) return;
  std::vector<bool> dynamic(rank, false);
  for (TensorType &t : operands) {
    size_t lead = rank - t.shape.size();
    for (size_t j = 0; j < t.shape.size(); ++j) {
      if (t.shape[j] == 1 && result.shape[lead + j] != 1) continue; // broadcasts
      t.shape[j] = kDynamic;
      dynamic[lead + j] = true;
    }
  }
  for (size_t d = 0; d < rank; ++d)
    if (dynamic[d]) result.shape[d] = kDynamic;
}

/// An elementwise op's operand and result shapes with adjacent axes merged where every operand
/// keeps both or broadcasts both, and the result's size-1 axes dropped (PyTorch's TensorIterator
/// coalesces dimensions the same way): the buffers are contiguous, so a (512, 512, 3, 3) add runs
/// as one loop of 2359296 elements instead of a nest whose innermost loop has 3 (0.55 ms against
/// 9.1 on the 2-core development machine: a ResNet's SGD step). Operands come back at the merged rank, a broadcast axis as a
/// 1, so shapes of one pattern share a kernel whatever their rank; a 0-d operand stays 0-d and
/// nothing else becomes 0-d (a 0-d tensor takes part in dtype promotion as a Python number does:
/// bfloat16 x float32 0-d is bfloat16, and the kernel's verifier checks the result dtype by
/// these shapes). False: the shapes were that form already.
bool coalesceElementwise(std::vector<TensorType> &operands, Shape &result) {
  size_t rank = result.size();
  for (const TensorType &t : operands)
    if (t.shape.size() > rank) return false;
  auto size = [&](const TensorType &t, size_t d) { // the operand's size at result axis d (1 where it has none)
    size_t lead = rank - t.shape.size();
    return d < lead ? int64_t(1) : t.shape[d - lead];
  };
  std::vector<size_t> kept; // result axes of size other than 1
  for (size_t d = 0; d < rank; ++d)
    if (result[d] != 1) kept.push_back(d);
  std::vector<std::vector<size_t>> groups;
  for (size_t d : kept) {
    bool merges = !groups.empty();
    for (const TensorType &t : operands)
      merges = merges && (size(t, d) == 1) == (size(t, groups.back().back()) == 1);
    if (merges) groups.back().push_back(d);
    else groups.push_back({d});
  }
  Shape merged;
  for (const auto &g : groups) {
    int64_t n = 1;
    for (size_t d : g) n *= result[d];
    merged.push_back(n);
  }
  if (rank > 0 && merged.empty()) merged.push_back(1); // (1, 1): one axis, not 0-d (see below)
  bool changed = merged != result;
  for (TensorType &t : operands) {
    if (t.shape.empty()) continue; // 0-d stays 0-d: it promotes dtypes as a Python number does
    Shape shape(groups.empty() ? 1 : 0, 1);
    for (const auto &g : groups) {
      int64_t n = 1;
      for (size_t d : g) n *= size(t, d);
      shape.push_back(n);
    }
    changed = changed || shape != t.shape;
    t.shape = std::move(shape);
  }
  result = std::move(merged);
  return changed;
}

/// gt.full on host memory: `n` elements of `dtype` set to `value` converted as the kernels
/// convert it (C++ rules, through float32 for float16/bfloat16; to bool: value != 0), except
/// that an integer out of range saturates and NaN gives 0 instead of being undefined.
void fillHost(void *data, DType dtype, size_t n, double value) {
  auto integer = [&](auto lo, auto hi) {
    using T = decltype(lo);
    T v = std::isnan(value) ? T(0) : value <= double(lo) ? lo : value >= double(hi) ? hi : T(value);
    std::fill_n(static_cast<T *>(data), n, v);
  };
  switch (dtype) {
  case DType::Float32: std::fill_n(static_cast<float *>(data), n, float(value)); return;
  case DType::Float64: std::fill_n(static_cast<double *>(data), n, value); return;
  case DType::Float16: std::fill_n(static_cast<uint16_t *>(data), n, floatToHalf(float(value))); return;
  case DType::BFloat16: std::fill_n(static_cast<uint16_t *>(data), n, floatToBFloat16(float(value))); return;
  case DType::Int32: integer(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()); return;
  case DType::Int64: integer(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()); return;
  case DType::Bool: std::fill_n(static_cast<uint8_t *>(data), n, uint8_t(value != 0)); return;
  case DType::Int8: integer(std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()); return;
  case DType::Int16: integer(std::numeric_limits<int16_t>::min(), std::numeric_limits<int16_t>::max()); return;
  case DType::UInt8: integer(uint8_t(0), std::numeric_limits<uint8_t>::max()); return;
  }
}

/// The result shape of a size-generic op (elementwise: NumPy broadcasting; reduction: the kept
/// sizes; index_select: the table's with the axis' size the number of indices), or nullopt if
/// the operands do not fit. The kernel's verifier still checks dtypes and ranks; this checks the
/// sizes it no longer sees (a cheap check, not a type inference).
std::optional<Shape> sizeRule(OpCode op, const OpAttrs &attrs, std::span<const TensorType> operands) {
  if (op == OpCode::IndexSelect) {
    int64_t axis = attrs::IndexSelect::of(attrs).axis;
    if (operands.size() != 2 || operands[1].shape.size() != 1 || axis < 0 || axis >= int64_t(operands[0].shape.size()))
      return std::nullopt;
    Shape out = operands[0].shape;
    out[size_t(axis)] = operands[1].shape[0];
    return out;
  }
  if (isValueReduction(op)) {
    if (operands.size() != 1) return std::nullopt;
    Shape out;
    const Shape &in = operands[0].shape;
    for (int64_t axis : attrs.axes) // (axis 0 of a 0-d tensor: its one element, as the op table allows)
      if (axis < 0 || axis >= std::max<int64_t>(int64_t(in.size()), 1)) return std::nullopt;
    for (size_t i = 0; i < in.size(); ++i) {
      bool reduced = std::find(attrs.axes.begin(), attrs.axes.end(), int64_t(i)) != attrs.axes.end();
      if (!reduced) out.push_back(in[i]);
      else if (attrs.keepdims) out.push_back(1);
    }
    return out;
  }
  Shape out;
  try {
    for (const TensorType &t : operands) out = broadcastShapes(out, t.shape);
  } catch (const ShapeError &) {
    return std::nullopt;
  }
  return out;
}

/// The byte size of each of `n` members' blocks of `whole` along `axis` (numpy.array_split).
std::vector<size_t> blockBytes(const Shape &whole, int64_t axis, int64_t n, size_t elem) {
  std::vector<size_t> sizes;
  Shape block = whole;
  for (int64_t r = 0; r < n; ++r) {
    auto [b, e] = splitRange(whole[size_t(axis)], n, r);
    block[size_t(axis)] = e - b;
    sizes.push_back(size_t(numElements(block)) * elem);
  }
  return sizes;
}

/// The n blocks of `data` (a row-major tensor of `shape`) along `axis`, end to end in rank order:
/// what a collective over contiguous blocks takes (`data` itself, not copied, when axis is 0).
std::string packBlocks(std::string data, const Shape &shape, size_t elem, int64_t axis, int64_t n) {
  if (axis == 0) return data;
  std::string packed;
  packed.reserve(data.size());
  for (int64_t r = 0; r < n; ++r) {
    auto [b, e] = splitRange(shape[size_t(axis)], n, r);
    packed += takeBlock(data, shape, elem, axis, b, e);
  }
  return packed;
}

/// An all_to_all's byte counts for member `rank` of n: give[r] = block r along `splitAxis` of
/// its input `in`; take[r] = member r's block for it (the part of `out` along `concatAxis` that
/// member r held).
std::pair<std::vector<size_t>, std::vector<size_t>> allToAllBytes(const Shape &in, const Shape &out, int64_t splitAxis,
                                                                  int64_t concatAxis, int64_t n, int64_t rank,
                                                                  size_t elem) {
  auto share = [&](int64_t size) {
    auto [b, e] = splitRange(size, n, rank);
    return e - b;
  };
  if (out[size_t(splitAxis)] != share(in[size_t(splitAxis)]) || in[size_t(concatAxis)] != share(out[size_t(concatAxis)]))
    throw std::runtime_error("all_to_all: this worker's block has the wrong size");
  return {blockBytes(in, splitAxis, n, elem), blockBytes(out, concatAxis, n, elem)};
}

/// `whole` from its members' blocks along `axis`, laid end to end in `flat` (an all_gather's
/// output) in rank order.
std::string interleaveBlocks(const std::string &flat, const std::vector<size_t> &sizes, const Shape &whole,
                             size_t elem, int64_t axis) {
  std::vector<std::string_view> blocks;
  size_t offset = 0;
  for (size_t s : sizes) {
    blocks.emplace_back(flat.data() + offset, s);
    offset += s;
  }
  return concatBlocks(blocks, whole, elem, axis);
}

/// A ranked memref descriptor {allocated, aligned, offset, sizes[r], strides[r]} (row-major).
struct Descriptor {
  std::vector<int64_t> words;
  /// A strided view: element i is data[offset + sum(i[d] * strides[d])] (memref's layout).
  Descriptor(void *data, int64_t offset, const Shape &sizes, const std::vector<int64_t> &strides)
      : words(3 + 2 * sizes.size()) {
    words[0] = words[1] = int64_t(reinterpret_cast<intptr_t>(data));
    words[2] = offset;
    std::copy(sizes.begin(), sizes.end(), words.begin() + 3);
    std::copy(strides.begin(), strides.end(), words.begin() + 3 + long(sizes.size()));
  }
  /// A whole row-major tensor.
  Descriptor(void *data, const Shape &shape) : Descriptor(data, 0, shape, rowMajorStrides(shape)) {}
};

/// Copies the strided view `from` into `to` (the same sizes, `rank` axes) with the copy kernel
/// of `dtype` (KernelCompiler::getStridedCopy).
void stridedCopy(KernelCompiler &compiler, const Descriptor &from, const Descriptor &to, DType dtype, size_t rank) {
  const Shape sizes(to.words.begin() + 3, to.words.begin() + 3 + long(rank));
  if (numElements(sizes) == 0) return;
  const Kernel &kernel = compiler.getStridedCopy(dtype, int(rank));
  void *args[] = {const_cast<int64_t *>(from.words.data()), const_cast<int64_t *>(to.words.data())};
  kernel.invoke(args);
}

/// The ids a region reads from outside (in order of first use) and its fill values.
struct RegionLayout {
  std::vector<uint64_t> inputs;
  std::vector<double> fills;
};

RegionLayout layoutOf(std::span<const Instruction> insts) {
  RegionLayout layout;
  std::unordered_set<uint64_t> defined, seen;
  for (const Instruction &inst : insts) {
    if (inst.op == OpCode::Free) continue;
    for (uint64_t id : inst.operands)
      if (!defined.count(id) && seen.insert(id).second) layout.inputs.push_back(id);
    if (inst.op == OpCode::Full) layout.fills.push_back(inst.attrs.value);
    defined.insert(inst.result);
  }
  return layout;
}

/// The fused-kernel description of a region; throws if an op is not fusible or an output is
/// not made inside the region.
RegionSpec specOf(std::span<const Instruction> insts, const RegionLayout &layout,
                  const std::vector<TensorType> &inputTypes, const std::vector<uint64_t> &outputs, uint64_t &inferred) {
  RegionSpec spec;
  spec.inputs = inputTypes;
  std::unordered_map<uint64_t, int> number;
  std::vector<TensorType> types = inputTypes;
  for (size_t i = 0; i < layout.inputs.size(); ++i) number[layout.inputs[i]] = int(i);
  for (const Instruction &inst : insts) {
    if (inst.op == OpCode::Free) continue;
    if (!isFusible(inst.op))
      throw std::invalid_argument(std::string(opInfo(inst.op).mnemonic) + " cannot be fused");
    RegionSpec::Op op{inst.op, inst.attrs, {}, {}};
    std::vector<TensorType> operandTypes;
    for (uint64_t id : inst.operands) {
      op.operands.push_back(number.at(id));
      operandTypes.push_back(types[size_t(number.at(id))]);
    }
    op.type = resultType(inst, operandTypes, inferred); // the region kernel's verifier checks a carried one
    number[inst.result] = int(types.size());
    types.push_back(op.type);
    spec.ops.push_back(std::move(op));
  }
  for (uint64_t id : outputs) {
    auto it = number.find(id);
    if (it == number.end() || size_t(it->second) < inputTypes.size())
      throw std::invalid_argument("region output " + std::to_string(id) + " is not computed inside it");
    spec.outputs.push_back(it->second);
  }
  return spec;
}

std::string describe(std::span<const Instruction> insts) {
  std::string ops;
  for (const Instruction &inst : insts)
    if (inst.op != OpCode::Free) ops += std::string(ops.empty() ? "" : ",") + opInfo(inst.op).mnemonic;
  const std::string &where = insts.empty() ? std::string() : insts.front().location;
  return "[" + ops + "]" + (where.empty() ? "" : " from " + where);
}

} // namespace

/// Hot regions: compiled on a background thread with a KernelCompiler of its own (its own
/// MLIRContext and JIT), so the eager path never waits for a fused compile.
struct Executor::RegionJit {
  struct Entry {
    enum State { Queued, Ready, Failed } state = Queued;
    RegionKernel compiled;
  };

  KernelCompiler compiler;
  bool background;
  std::mutex mu;
  std::condition_variable cv, idle;
  std::deque<std::pair<uint64_t, RegionSpec>> queue;
  std::unordered_map<uint64_t, Entry> entries;
  std::vector<std::string> failures; ///< "region <key> <ops>: why", newest last
  std::map<uint64_t, std::string> describeQueued;
  std::deque<TraceEvent> compiles; ///< the last 256 compiles, for traces
  bool stop = false, busy = false;
  std::thread thread;

  RegionJit(const ExecutorOptions &o, CompilerTarget target)
      : compiler(o.cacheDir, std::move(target)), background(o.backgroundCompile) {
    if (background) thread = std::thread([this] { loop(); });
  }
  ~RegionJit() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }

  /// Compiles one region (on whichever thread calls it) and records the outcome.
  void build(uint64_t key, const RegionSpec &spec) {
    Entry done;
    std::string error;
    int64_t start = monotonicNs();
    try {
      done.compiled.kernel = &compiler.getRegion(spec);
      done.compiled.inputTypes = spec.inputs;
      for (int v : spec.outputs)
        done.compiled.outputTypes.push_back(spec.ops[size_t(v) - spec.inputs.size()].type);
      done.state = Entry::Ready;
    } catch (const std::exception &e) {
      done.state = Entry::Failed;
      error = e.what();
    }
    {
      std::lock_guard lock(mu);
      std::string what = describeQueued.count(key) ? describeQueued[key] : "";
      compiles.push_back({"compile " + what, "compile", start, monotonicNs() - start,
                          std::string("{\"ok\": ") + (done.state == Entry::Ready ? "true" : "false") + "}"});
      if (compiles.size() > 256) compiles.pop_front();
    }
    finish(key, std::move(done), error);
  }

  void finish(uint64_t key, Entry done, const std::string &error) {
    std::lock_guard lock(mu);
    if (done.state == Entry::Failed) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)key);
      std::string line = "hot region " + std::string(hex) + " " + describeQueued[key] + " stays eager: " + error;
      std::cerr << "gt-worker: " << line << std::endl; // once: the key is never queued again
      if (failures.size() < 64) failures.push_back(line); // (stats() reports the first 16)
    }
    describeQueued.erase(key);
    entries[key] = std::move(done);
  }

  void loop() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (stop) return;
      auto [key, spec] = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      build(key, spec);
      lock.lock();
      busy = false;
      if (queue.empty()) idle.notify_all();
    }
  }

  /// A copy of the entry for `key` (the compile thread may update it), if it was requested.
  std::optional<Entry> find(uint64_t key) {
    std::lock_guard lock(mu);
    auto it = entries.find(key);
    if (it == entries.end()) return std::nullopt;
    return it->second;
  }

  /// Records a region that cannot be compiled at all (it stays eager).
  void refuse(uint64_t key, std::string what, const std::string &why) {
    {
      std::lock_guard lock(mu);
      if (!entries.emplace(key, Entry{}).second) return;
      describeQueued[key] = std::move(what);
    }
    finish(key, Entry{Entry::Failed, {}}, why);
  }

  void request(uint64_t key, RegionSpec spec, std::string what) {
    {
      std::lock_guard lock(mu);
      if (!entries.emplace(key, Entry{}).second) return;
      describeQueued[key] = std::move(what);
      if (background) {
        queue.emplace_back(key, std::move(spec));
        cv.notify_one();
        return;
      }
    }
    build(key, spec);
  }

  void wait() {
    std::unique_lock lock(mu);
    idle.wait(lock, [&] { return queue.empty() && !busy; });
  }
};

/// Eager kernels compiled ahead on a thread of their own (see Executor::prepareNext): the
/// thread that runs programs never waits for a compile while other sessions have work.
struct Executor::EagerCompiles {
  struct Request {
    OpCode op;
    std::vector<TensorType> operands;
    OpAttrs attrs;
    TensorType result;
  };
  KernelCompiler &compiler;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Request> queue;
  std::set<std::string> queued; ///< keys of the requests in `queue` or compiling
  std::function<void()> compiled; ///< called after each compile (the scheduler wakes up)
  bool stop = false;
  std::thread thread;

  explicit EagerCompiles(KernelCompiler &c) : compiler(c), thread([this] { loop(); }) {}
  ~EagerCompiles() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    thread.join();
  }

  static std::string keyOf(const Request &r) {
    std::string key = std::to_string(int(r.op));
    for (const TensorType &t : r.operands) key += "|" + std::to_string(int(t.dtype)) + shapeString(t.shape);
    return key + ">" + std::to_string(int(r.result.dtype)) + shapeString(r.result.shape) + attrsKey(r.op, r.attrs);
  }

  void request(Request r) {
    std::string key = keyOf(r);
    {
      std::lock_guard lock(mu);
      if (!queued.insert(key).second) return;
      queue.push_back(std::move(r));
    }
    cv.notify_one();
  }

  void loop() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (stop) return;
      Request r = std::move(queue.front());
      queue.pop_front();
      lock.unlock();
      try {
        compiler.get(r.op, r.operands, r.attrs, r.result);
      } catch (const std::exception &) { // remembered by the compiler; the op reports it when it runs
      }
      lock.lock();
      queued.erase(keyOf(r));
      if (compiled) {
        auto notify = compiled;
        lock.unlock();
        notify();
        lock.lock();
      }
    }
  }
};

/// Bytes held per session and in all (see Executor::allocate).
struct Executor::Accounts {
  std::mutex mu;
  std::unordered_map<uint32_t, uint64_t> bySession;
  uint64_t total = 0, peak = 0;
  void give(uint32_t session, uint64_t bytes) {
    std::lock_guard lock(mu);
    total -= bytes;
    auto it = bySession.find(session);
    if (it != bySession.end() && (it->second -= bytes) == 0) bySession.erase(it);
  }
};

namespace {
std::string gib(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t(1) << 30)) std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(1 << 30));
  else std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(1 << 20));
  return text;
}
} // namespace

/// CUDA graphs of region replays (ExecutorOptions::cudaGraphs, GT_CUDA_GRAPHS=1). A replay is
/// named by its region, kernel and every word of its arguments (buffer addresses, shapes), with
/// fill values instead of their scalar buffers: a graph launched under such a name runs exactly
/// the kernels, with exactly the arguments, that invoking the region's host code would queue.
/// A name seen twice is captured (its first run loaded the kernels), and from then on one
/// cuGraphLaunch replaces the host code's launches. That pays only where a loop gives a region
/// the same buffers again; GT's training loops on an H200 did for 1-3 % of replays.
struct Executor::RegionGraphs {
  struct Slot {
    int seen = 0;
    std::shared_ptr<void> graph;
    std::vector<Buffer> fills; ///< the fill scalars the graph reads
  };
  std::unordered_map<std::string, Slot> slots;
  std::unordered_set<const Kernel *> refused; ///< kernels whose capture failed: never captured again
  size_t graphs = 0, bytes = 0; ///< graphs held, and the device memory they keep
  /// Bounds (each graph keeps its kernels' temporaries): past kMaxSlots, names without a graph
  /// are forgotten; past kMaxGraphs or kMaxBytes, every graph is dropped (and captured again
  /// as the regions recur).
  static constexpr size_t kMaxSlots = 16384, kMaxGraphs = 2048, kMaxBytes = size_t(1) << 30;

  Slot &slot(std::string name) {
    if (graphs >= kMaxGraphs || bytes >= kMaxBytes) clear();
    if (slots.size() >= kMaxSlots) std::erase_if(slots, [](const auto &s) { return !s.second.graph; });
    if (slots.size() >= kMaxSlots) clear();
    return slots[std::move(name)];
  }
  void clear() {
    slots.clear();
    graphs = bytes = 0;
  }
};

Executor::Executor(ExecutorOptions options)
    : options_(options), accounts_(std::make_shared<Accounts>()),
      device_(options.device ? options.device : std::shared_ptr<Device>(createCPUDevice())),
      compiler_(options.cacheDir, device_->target()), jit_(std::make_unique<RegionJit>(options, device_->target())),
      profile_(std::getenv("GT_JIT_PROFILE") != nullptr) {
  if (options_.backgroundCompile) eager_ = std::make_unique<EagerCompiles>(compiler_);
  const char *graphs = std::getenv("GT_CUDA_GRAPHS");
  bool useGraphs = graphs && *graphs ? std::string(graphs) != "0" : options_.cudaGraphs;
  if (useGraphs && device_->nativeStream())
    graphs_ = std::make_unique<RegionGraphs>();
  sizeGenericKernels_ = device_->target().kind == CompilerTarget::Kind::CPU;
}
Executor::~Executor() = default;

void Executor::onCompiled(std::function<void()> notify) {
  if (!eager_) return;
  std::lock_guard lock(eager_->mu);
  eager_->compiled = std::move(notify);
}

std::span<const Instruction> Executor::nextUnit(const ProgramRun &p) const {
  if (p.done()) return {};
  for (size_t r = p.region; r < p.regions.size(); ++r) { // as runNext picks it
    const RegionCall &region = p.regions[r];
    if (region.start < p.next || size_t(region.start) + region.count > p.instructions.size() || region.count == 0) continue;
    if (region.start != p.next) break;
    if (region.hot) // a compiled hot region replays as its fused kernel: no eager kernels
      if (auto entry = jit_->find(region.key); entry && entry->state == RegionJit::Entry::Ready) return {};
    return std::span<const Instruction>(p.instructions).subspan(region.start, region.count);
  }
  return std::span<const Instruction>(p.instructions).subspan(p.next, 1);
}

Executor::UnitRef Executor::nextUnitRef(const ProgramRun &p) {
  for (size_t r = p.region; r < p.regions.size(); ++r) { // as runNext picks it
    const RegionCall &region = p.regions[r];
    if (region.start < p.next || size_t(region.start) + region.count > p.instructions.size() || region.count == 0) continue;
    if (region.start == p.next) return {true, uint32_t(r)};
    break;
  }
  return {false, uint32_t(p.next)};
}

TraceEvent Executor::describeUnit(const ProgramRun &p, UnitRef unit) {
  TraceEvent e;
  if (unit.region) {
    const RegionCall &region = p.regions.at(unit.index);
    auto insts = std::span<const Instruction>(p.instructions).subspan(region.start, region.count);
    e.name = "region " + describe(insts);
    e.category = "region";
    e.args = "{\"ops\": " + std::to_string(insts.size()) + ", \"hot\": " + (region.hot ? "true" : "false") + "}";
    return e;
  }
  const Instruction &inst = p.instructions.at(unit.index);
  e.name = opInfo(inst.op).mnemonic;
  e.category = inst.op == OpCode::Free                              ? "free"
               : inst.op == OpCode::Send || inst.op == OpCode::Recv ? "p2p"
               : exchanges(inst.op)                                 ? "collective"
                                                                    : "kernel";
  std::string args;
  if (inst.type) {
    args += "\"dtype\": " + jsonString(dtypeName(inst.type->dtype)) + ", \"shape\": " + shapeString(inst.type->shape);
    if (exchanges(inst.op)) {
      int64_t bytes = 0;
      try {
        bytes = numBytes(*inst.type);
      } catch (const std::exception &) {
      }
      args += ", \"bytes\": " + std::to_string(bytes);
    }
  }
  if (!inst.attrs.workers.empty()) {
    std::string peers;
    for (int64_t w : inst.attrs.workers) peers += (peers.empty() ? "" : ", ") + std::to_string(w);
    args += std::string(args.empty() ? "" : ", ") + "\"workers\": [" + peers + "]";
  }
  if (!inst.location.empty()) args += std::string(args.empty() ? "" : ", ") + "\"line\": " + jsonString(inst.location);
  e.args = "{" + args + "}";
  return e;
}

std::vector<TraceEvent> Executor::compileEvents(int64_t sinceNs) const {
  std::lock_guard lock(jit_->mu);
  std::vector<TraceEvent> out;
  for (const TraceEvent &e : jit_->compiles)
    if (e.startNs >= sinceNs) out.push_back(e);
  return out;
}

bool Executor::prepareNext(const ProgramRun &p) {
  if (!eager_) return true;
  std::unordered_map<uint64_t, TensorType> made; // results of the unit's earlier instructions
  bool ready = true;
  for (const Instruction &inst : nextUnit(p)) {
    if (inst.op == OpCode::Free) continue;
    std::vector<TensorType> types;
    bool known = true;
    for (uint64_t id : inst.operands) {
      if (auto m = made.find(id); m != made.end()) {
        types.push_back(m->second);
      } else if (auto t = tensors_.find(id); t != tensors_.end() && t->second.error.empty()) {
        types.push_back(t->second.type);
      } else {
        known = false; // a missing or failed operand: the op fails without a kernel
        break;
      }
    }
    if (!known) continue;
    TensorType out;
    try {
      // Only to find the kernels to compile: a carried type is taken as it is here (a kernel
      // built from a wrong one fails its verifier; run() checks the rest).
      out = inst.type ? *inst.type : resultType(inst, types, stats_.typesInferred);
    } catch (const std::exception &) {
      continue; // it fails when it runs, without a kernel
    }
    made[inst.result] = out;
    if (runsWithoutKernel(inst.op) || runsByViews(inst.op, types) || (sizeGenericKernels_ && inst.op == OpCode::Full))
      continue; // (element moves: a copy kernel per dtype and rank; full: a host fill)
    std::vector<TensorType> operands = kernelOperands(inst.op, types);
    if (sizeGenericKernels_ && isElementwise(inst.op)) coalesceElementwise(operands, out.shape);
    if (sizeGenericKernels_ && sizeGeneric(inst.op)) sizesAtRunTime(inst.op, inst.attrs, operands, out);
    if (compiler_.ready(inst.op, operands, inst.attrs, out)) continue;
    eager_->request({inst.op, std::move(operands), inst.attrs, out});
    ready = false;
  }
  return ready;
}

void Executor::waitForCompiles() { jit_->wait(); }

CompilerStats Executor::compilerStats() const {
  CompilerStats a = compiler_.stats(), b = jit_->compiler.stats();
  a.compiled += b.compiled;
  a.memoryHits += b.memoryHits;
  a.diskHits += b.diskHits;
  a.compileMs += b.compileMs;
  a.diskLoadMs += b.diskLoadMs;
  return a;
}

void Executor::runProgram(std::span<const Instruction> program, std::span<const RegionCall> regions) {
  ProgramRun run{{program.begin(), program.end()}, {regions.begin(), regions.end()}};
  while (!run.done()) runNext(run);
}

bool Executor::isExchange(OpCode op) { return exchanges(op); }

bool Executor::nextIsExchange(const ProgramRun &p) {
  if (p.done()) return false;
  for (size_t r = p.region; r < p.regions.size(); ++r) {
    const RegionCall &region = p.regions[r];
    if (region.start < p.next || size_t(region.start) + region.count > p.instructions.size()) continue;
    if (region.start == p.next && region.count > 0) return false; // regions hold no exchanges
    break;
  }
  return exchanges(p.instructions[p.next].op);
}

void Executor::runNext(ProgramRun &p, bool dropped) {
  if (p.done()) return;
  while (p.region < p.regions.size()) { // skip malformed regions (they run eagerly) and passed ones
    const RegionCall &r = p.regions[p.region];
    if (r.start < p.next || size_t(r.start) + r.count > p.instructions.size() || r.count == 0) p.region++;
    else break;
  }
  if (p.region < p.regions.size() && p.regions[p.region].start == p.next) {
    const RegionCall &region = p.regions[p.region++];
    auto insts = std::span<const Instruction>(p.instructions).subspan(region.start, region.count);
    p.next = size_t(region.start) + region.count;
    if (!dropped) return runRegion(insts, region);
    for (const Instruction &inst : insts) runDropped(inst);
    return;
  }
  const Instruction &inst = p.instructions[p.next++];
  if (dropped) runDropped(inst);
  else run(inst);
}

void Executor::runDropped(const Instruction &inst) {
  if (inst.op == OpCode::Free) return run(inst);
  if (!exchanges(inst.op)) return;
  Tensor out;
  try {
    exchange(inst, nullptr, "the session ended", out);
  } catch (const std::exception &) {
  }
  if (inst.op != OpCode::Send) store(inst.result, std::move(out));
}

void Executor::store(uint64_t id, Tensor t) {
  t.session = session_;
  if (auto it = tensors_.find(id); it != tensors_.end()) it->second = std::move(t);
  else tensors_.emplace(id, std::move(t));
}

void Executor::endSession(uint32_t session) {
  for (auto it = tensors_.begin(); it != tensors_.end();)
    it = it->second.session == session ? tensors_.erase(it) : std::next(it);
}

uint64_t Executor::sessionBytes(uint32_t session) const {
  std::lock_guard lock(accounts_->mu);
  auto it = accounts_->bySession.find(session);
  return it == accounts_->bySession.end() ? 0 : it->second;
}

bool Executor::ownedBy(uint64_t id, uint32_t session) const {
  auto it = tensors_.find(id);
  return it != tensors_.end() && it->second.session == session;
}

bool Executor::holds(uint64_t id, uint32_t session, const TensorType &type) const {
  auto it = tensors_.find(id);
  return it != tensors_.end() && it->second.session == session && it->second.type == type;
}

bool Executor::cheapToFetch(uint64_t id, uint64_t maxBytes) const {
  auto it = tensors_.find(id);
  return it == tensors_.end() || (!it->second.swapped && it->second.buffer.bytes <= maxBytes);
}

void Executor::runRegion(std::span<const Instruction> insts, const RegionCall &region) {
  stats_.regionsSeen++;
  if (region.hot) {
    stats_.regionsHot++;
    std::optional<RegionJit::Entry> entry = jit_->find(region.key);
    if (!entry) {
      // First hot sighting: describe it from the operand types on this worker and queue it.
      RegionLayout layout = layoutOf(insts);
      std::vector<TensorType> inputTypes;
      bool ready = true;
      for (uint64_t id : layout.inputs) {
        auto it = tensors_.find(id);
        if (it == tensors_.end() || !it->second.error.empty()) { ready = false; break; }
        inputTypes.push_back(it->second.type);
      }
      if (ready) {
        try {
          jit_->request(region.key, specOf(insts, layout, inputTypes, region.outputs, stats_.typesInferred), describe(insts));
        } catch (const std::exception &e) {
          jit_->refuse(region.key, describe(insts), e.what());
        }
        entry = jit_->find(region.key);
      }
    }
    auto t0 = std::chrono::steady_clock::now();
    bool replayed = false;
    if (entry && entry->state == RegionJit::Entry::Ready) {
      try {
        replayed = replay(insts, region, entry->compiled);
      } catch (const OutOfMemory &) { // op by op, the op that does not fit fails with the reason
      } catch (const std::exception &e) { // a launch failed: this occurrence runs op by op
        if (replayFailuresLogged_.insert(region.key).second) // once per region: a log cannot be flooded
          std::cerr << "gt-worker: replaying region " << describe(insts) << " failed: " << e.what() << std::endl;
      }
    }
    if (replayed) {
      if (profile_) {
        auto &p = profileByKey_[region.key];
        p.first += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (p.second++ == 0) profileNames_[region.key] = describe(insts);
      }
      if (options_.verifyRegions) verifyReplay(insts, region);
      return;
    }
  }
  for (const Instruction &inst : insts) run(inst);
}

void Executor::verifyReplay(std::span<const Instruction> insts, const RegionCall &region) {
  std::vector<std::string> fused;
  for (uint64_t id : region.outputs) fused.push_back(fetch(id).bytes);
  for (const Instruction &inst : insts) run(inst);
  for (size_t i = 0; i < fused.size(); ++i) {
    Fetched eager = fetch(region.outputs[i]);
    if (eager.bytes == fused[i]) continue;
    stats_.verifyFailures++;
    double worst = 0;
    if (eager.type.dtype == DType::Float32)
      for (size_t j = 0; j * 4 < eager.bytes.size(); ++j) {
        float a, b;
        std::memcpy(&a, eager.bytes.data() + 4 * j, 4);
        std::memcpy(&b, fused[i].data() + 4 * j, 4);
        worst = std::max(worst, double(std::fabs(a - b)));
      }
    std::cerr << "gt-worker: GT_JIT_VERIFY: region " << std::hex << region.key << std::dec << " " << describe(insts)
              << " output " << i << " differs from eager (max abs diff " << worst << ")" << std::endl;
  }
}

bool Executor::replay(std::span<const Instruction> insts, const RegionCall &region, const RegionKernel &entry) {
  // The key names the structure; still check what memory safety depends on.
  const std::vector<TensorType> &outputTypes = entry.outputTypes;
  RegionLayout layout = layoutOf(insts);
  if (outputTypes.size() != region.outputs.size() || layout.inputs.size() != entry.inputTypes.size() ||
      int(layout.inputs.size() + layout.fills.size() + outputTypes.size()) != entry.kernel->numArgs)
    return false;
  std::vector<Descriptor> inputs;
  inputs.reserve(layout.inputs.size());
  for (uint64_t id : layout.inputs) {
    auto it = tensors_.find(id);
    if (it == tensors_.end() || !it->second.error.empty()) return false; // the eager path reports it
    if (!(it->second.type == entry.inputTypes[inputs.size()])) return false;
    materialize(it->second); // (OutOfMemory: the caller runs the region op by op)
    inputs.emplace_back(it->second.buffer.data.get(), it->second.type.shape);
  }
  std::vector<Tensor> outs(region.outputs.size());
  std::vector<Descriptor> outputs;
  outputs.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    outs[i].type = outputTypes[i];
    outs[i].buffer = allocate(size_t(numElements(outs[i].type.shape)) * dtypeSize(outs[i].type.dtype));
    outputs.emplace_back(outs[i].buffer.data.get(), outs[i].type.shape);
  }
  // A CUDA graph of this very replay (RegionGraphs), if one was captured: one launch.
  uint64_t launchedBefore = device_->kernelLaunches();
  RegionGraphs::Slot *slot = nullptr;
  bool ran = false;
  if (graphs_ && !graphs_->refused.count(entry.kernel)) {
    std::string name;
    auto put = [&name](const void *p, size_t n) { name.append(static_cast<const char *>(p), n); };
    put(&region.key, 8);
    put(&entry.kernel, sizeof entry.kernel);
    for (const Descriptor &d : inputs) put(d.words.data(), d.words.size() * 8);
    for (double v : layout.fills) put(&v, 8);
    for (const Descriptor &d : outputs) put(d.words.data(), d.words.size() * 8);
    slot = &graphs_->slot(std::move(name));
    if (slot->graph) {
      device_->launchGraph(slot->graph.get());
      stats_.graphReplays++;
      ran = true;
    } else if (++slot->seen < 2) {
      slot = nullptr; // the first run loads the kernels: capture the next
    }
  }
  if (!ran) {
    std::vector<Buffer> fills;
    std::vector<Descriptor> descriptors = std::move(inputs);
    for (double v : layout.fills) {
      uint64_t bits;
      std::memcpy(&bits, &v, 8);
      fills.push_back(scalar(bits));
      descriptors.emplace_back(fills.back().data.get(), Shape{});
    }
    for (Descriptor &d : outputs) descriptors.push_back(std::move(d));
    std::vector<void *> args;
    for (Descriptor &d : descriptors) args.push_back(d.words.data());
    if (slot && !device_->beginCapture()) {
      graphs_->refused.insert(entry.kernel); // no capture on this stream: do not ask every replay
    } else if (slot) {
      entry.kernel->invoke(args.data()); // recorded, not run
      if (std::shared_ptr<void> graph = device_->endCapture()) {
        slot->graph = std::move(graph);
        slot->fills = std::move(fills);
        graphs_->graphs++;
        graphs_->bytes += device_->graphBytes(slot->graph.get());
        stats_.graphCaptures++;
        device_->launchGraph(slot->graph.get());
        stats_.graphReplays++;
        ran = true;
      } else {
        graphs_->refused.insert(entry.kernel); // capture failed (nothing ran): launch directly
      }
    }
    if (!ran) entry.kernel->invoke(args.data());
  }
  device_->checkLaunches();
  stats_.regionKernels += device_->kernelLaunches() - launchedBefore;
  if (std::optional<KernelError> failed = device_->takeKernelError()) {
    // Every output is poisoned, naming the first op of the failed check's kind and its line.
    std::string where = opInfo(failed->op).mnemonic;
    for (const Instruction &inst : insts)
      if (inst.op == failed->op) {
        if (!inst.location.empty()) where += " at " + inst.location;
        break;
      }
    for (Tensor &out : outs) {
      out.buffer = {};
      out.error = where + ": " + failed->message();
    }
  }
  for (size_t i = 0; i < outs.size(); ++i) store(region.outputs[i], std::move(outs[i]));
  stats_.instructions += insts.size();
  stats_.regionReplays++;
  for (const Instruction &inst : insts) stats_.fusedOps += inst.op != OpCode::Free;
  return true;
}


Buffer Executor::allocate(size_t bytes) {
  Accounts &a = *accounts_;
  uint32_t session = session_;
  {
    std::lock_guard lock(a.mu);
    uint64_t held = a.bySession.count(session) ? a.bySession[session] : 0;
    uint64_t quota = options_.sessionMemoryBytes ? options_.sessionMemoryBytes : options_.memoryBytes;
    if (quota && held + bytes > quota)
      throw OutOfMemory("out of memory: " + gib(bytes) + " more would take this session over its quota on this worker (it holds " +
                        gib(held) + " of " + gib(quota) + ")");
    if (options_.memoryBytes && a.total + bytes > options_.memoryBytes)
      throw OutOfMemory("out of memory: the worker's " + gib(options_.memoryBytes) + " are in use (" + gib(a.total) +
                        "; this session holds " + gib(held) + ") and " + gib(bytes) + " more do not fit");
    a.total += bytes;
    a.bySession[session] += bytes;
    a.peak = std::max(a.peak, a.total);
  }
  Buffer raw;
  try {
    raw = device_->allocate(bytes);
  } catch (...) {
    a.give(session, bytes);
    throw;
  }
  // The account gets the bytes back when the last alias (reshape) of the buffer goes.
  std::shared_ptr<Accounts> accounts = accounts_;
  std::byte *data = raw.data.get();
  return {std::shared_ptr<std::byte>(data, [accounts, session, bytes, keep = std::move(raw.data)](std::byte *) mutable {
            keep.reset();
            accounts->give(session, bytes);
          }),
          bytes};
}

Buffer Executor::scalar(uint64_t bits) {
  Buffer buffer = device_->allocate(8);
  device_->setScalar(buffer.data.get(), bits);
  return buffer;
}

void Executor::run(const Instruction &inst) {
  stats_.instructions++;
  if (inst.op == OpCode::Free) {
    for (uint64_t id : inst.operands) tensors_.erase(id);
    return;
  }
  Tensor out;
  std::vector<const Tensor *> in;
  std::string where = std::string(opInfo(inst.op).mnemonic) +
                      (inst.location.empty() ? "" : " at " + inst.location);
  // Deferred transposes reach only a matmul or another last-two-axes transpose as they are.
  bool takesSwapped = inst.op == OpCode::Matmul || swapsLastTwo(inst);
  for (uint64_t id : inst.operands) {
    auto it = tensors_.find(id);
    if (it == tensors_.end()) {
      out.error = where + ": operand tensor " + std::to_string(id) + " does not exist on this worker";
      break;
    }
    if (!it->second.error.empty()) {
      out.error = it->second.error; // poisoned operands poison the result
      break;
    }
    if (it->second.swapped && !takesSwapped) {
      try {
        materialize(it->second);
      } catch (const std::exception &e) {
        out.error = where + ": " + e.what();
        break;
      }
    }
    in.push_back(&it->second);
  }
  if (exchanges(inst.op)) {
    try {
      exchange(inst, in.empty() ? nullptr : in[0], out.error, out);
    } catch (const std::exception &e) {
      out.error = where + ": " + e.what();
    }
    if (inst.op == OpCode::Send) return; // no result
  } else if (out.error.empty()) {
    try {
      stats_.eagerOps++;
      execute(inst, in, out);
    } catch (const std::exception &e) {
      out.error = where + ": " + e.what();
    }
  }
  tensors_.erase(inst.result); // a reused id: the old tensor's memory goes first
  store(inst.result, std::move(out));
}

void Executor::execute(const Instruction &inst, const std::vector<const Tensor *> &in, Tensor &out) {
  std::vector<TensorType> types;
  for (const Tensor *t : in) types.push_back(t->type);
  // Element moves on the CPU: views and a copy kernel, whose verifier never sees the op, so
  // the result type (and with it a slice's window) is inferred and checked here.
  bool viaViews = runsByViews(inst.op, types);
  bool generic = sizeGenericKernels_ && sizeGeneric(inst.op); // the kernel's verifier sees `?` sizes only
  out.type = resultType(inst, types, stats_.typesInferred, viaViews);
  if (generic && inst.type) { // the sizes the kernel's verifier no longer sees
    std::optional<Shape> sizes = sizeRule(inst.op, inst.attrs, types);
    if (!sizes || *sizes != out.type.shape)
      throw std::invalid_argument("the program gives it a " + shapeString(out.type.shape) + " result, but its operands " +
                                  (sizes ? "make a " + shapeString(*sizes) : std::string("do not fit together")) +
                                  " (a malformed program)");
  }
  size_t bytes = size_t(numBytes(out.type));
  if (swapsLastTwo(inst)) { // deferred: an alias read with its last two axes swapped
    out.buffer = in[0]->buffer;
    out.swapped = !in[0]->swapped;
    return;
  }
  if (viaViews) {
    out.buffer = allocate(bytes);
    copyByViews(inst, in, out);
    return;
  }
  if (sizeGenericKernels_ && inst.op == OpCode::Full) { // CPU memory: a fill, no kernel for any shape
    out.buffer = allocate(bytes);
    fillHost(out.buffer.data.get(), out.type.dtype, size_t(numElements(out.type.shape)), inst.attrs.value);
    return;
  }

  switch (inst.op) {
  case OpCode::Upload:
    if (inst.data.size() != bytes)
      throw std::invalid_argument("upload carries " + std::to_string(inst.data.size()) +
                                  " bytes, a " + dtypeName(out.type.dtype) + shapeString(out.type.shape) +
                                  " tensor needs " + std::to_string(bytes));
    out.buffer = allocate(bytes);
    device_->upload(out.buffer.data.get(), inst.data.data(), bytes);
    return;
  case OpCode::Reshape: // same bytes, new shape
  case OpCode::Shard:   // the dispatcher already gave this worker its block: an alias
    if (inst.op == OpCode::Shard && in[0]->type.shape != out.type.shape)
      throw std::invalid_argument("shard of a " + shapeString(in[0]->type.shape) + " block into " +
                                  shapeString(out.type.shape) + " (the dispatcher should have resharded it first)");
    out.buffer = in[0]->buffer;
    return;
  case OpCode::AllSlice: { // replicated -> split: keep this worker's block, no communication
    auto slice = attrs::AllSlice::of(inst.attrs);
    int64_t axis = slice.axis, rank = Sharding::replicated(slice.workers).rankOf(self_);
    if (rank < 0) throw std::invalid_argument("this worker is not in the group of the all_slice");
    auto [begin, end] = splitRange(in[0]->type.shape[size_t(axis)], int64_t(slice.workers.size()), rank);
    if (end - begin != out.type.shape[size_t(axis)]) throw std::invalid_argument("all_slice block size mismatch");
    out.buffer = deviceBytes(takeBlock(hostBytes(*in[0]), in[0]->type.shape, dtypeSize(out.type.dtype), axis, begin, end));
    return;
  }
  case OpCode::Move:
    throw std::invalid_argument("move must be lowered to send/recv by gt-split-by-worker");
  case OpCode::Matmul:
    out.buffer = allocate(bytes);
    device_->matmul(in[0]->type, in[0]->buffer.data.get(), in[1]->type, in[1]->buffer.data.get(), out.type,
                    out.buffer.data.get(), {in[0]->swapped, in[1]->swapped});
    return;
  case OpCode::Convolution: case OpCode::ConvolutionBackwardInput: case OpCode::ConvolutionBackwardWeight:
  case OpCode::MaxPool: case OpCode::MaxPoolBackward: {
    out.buffer = allocate(bytes);
    std::vector<TensorType> operandTypes;
    std::vector<const void *> operands;
    for (const Tensor *t : in) {
      operandTypes.push_back(t->type);
      operands.push_back(t->buffer.data.get());
    }
    if (device_->runLibraryOp(inst.op, inst.attrs, operandTypes, operands, out.type, out.buffer.data.get())) return;
    out.buffer = {}; // no library for it on this device: the op's compiled kernel, below
    break;
  }
  default: break;
  }

  // Everything else is a compiled kernel. Fill values and seeds are 0-d run-time operands,
  // so one kernel serves every value.
  std::vector<TensorType> kernelTypes = kernelOperands(inst.op, types);
  TensorType kernelResult = out.type;
  // CPU elementwise kernels see the operands with their axes merged (the descriptors below too).
  bool coalesced = generic && isElementwise(inst.op) && coalesceElementwise(kernelTypes, kernelResult.shape);
  Shape resultShape = kernelResult.shape; // (before sizesAtRunTime makes its sizes `?`)
  std::vector<Shape> operandShapes;
  for (const TensorType &t : kernelTypes) operandShapes.push_back(t.shape);
  if (generic) sizesAtRunTime(inst.op, inst.attrs, kernelTypes, kernelResult);
  std::vector<Descriptor> descriptors;
  Buffer operand; // the fill value or seed, in device memory
  if (inst.op == OpCode::Full || inst.op == OpCode::Randn || inst.op == OpCode::Rand) {
    uint64_t bits;
    if (inst.op == OpCode::Full) std::memcpy(&bits, &inst.attrs.value, 8);
    else std::memcpy(&bits, &inst.attrs.seed, 8);
    operand = scalar(bits);
    descriptors.emplace_back(operand.data.get(), Shape{});
  } else {
    for (size_t i = 0; i < in.size(); ++i)
      descriptors.emplace_back(in[i]->buffer.data.get(), coalesced ? operandShapes[i] : in[i]->type.shape);
  }
  const Kernel &kernel = compiler_.get(inst.op, kernelTypes, inst.attrs, kernelResult);
  out.buffer = allocate(bytes);
  descriptors.emplace_back(out.buffer.data.get(), coalesced ? resultShape : out.type.shape);
  std::vector<void *> args;
  for (Descriptor &d : descriptors) args.push_back(d.words.data());
  if (numElements(out.type.shape) > 0) {
    kernel.invoke(args.data());
    device_->checkLaunches();
    if (std::optional<KernelError> failed = device_->takeKernelError()) {
      out.buffer = {}; // a poisoned result holds no memory
      throw std::invalid_argument(failed->message());
    }
  }
}

bool Executor::runsByViews(OpCode op, std::span<const TensorType> operands) const {
  return sizeGenericKernels_ && copiesByViews(op) && !operands.empty() && !operands[0].shape.empty();
}

void Executor::materialize(Tensor &t) {
  if (!t.swapped) return;
  const Shape &shape = t.type.shape;
  size_t r = shape.size();
  Shape stored = shape;
  std::swap(stored[r - 2], stored[r - 1]);
  std::vector<int64_t> strides = rowMajorStrides(stored);
  std::swap(strides[r - 2], strides[r - 1]);
  uint32_t current = session_;
  session_ = t.session; // the bytes are the owner's
  Buffer buffer;
  try {
    buffer = allocate(size_t(numBytes(t.type)));
  } catch (...) {
    session_ = current;
    throw;
  }
  session_ = current;
  if (sizeGenericKernels_) { // CPU: the strided copy kernel of this dtype and rank
    stridedCopy(compiler_, Descriptor(t.buffer.data.get(), 0, shape, strides), Descriptor(buffer.data.get(), shape),
                t.type.dtype, r);
  } else if (numElements(shape) > 0) { // GPU: the transpose kernel of the stored shape
    OpAttrs attrs;
    attrs::Transpose swap;
    for (size_t d = 0; d < r; ++d) swap.perm.push_back(int64_t(d));
    std::swap(swap.perm[r - 2], swap.perm[r - 1]);
    swap.into(attrs);
    std::vector<TensorType> operand{TensorType{t.type.dtype, stored}};
    const Kernel &kernel = compiler_.get(OpCode::Transpose, operand, attrs, t.type);
    Descriptor from(t.buffer.data.get(), stored), to(buffer.data.get(), shape);
    void *args[] = {from.words.data(), to.words.data()};
    kernel.invoke(args);
    device_->checkLaunches();
  }
  t.buffer = std::move(buffer);
  t.swapped = false;
}

void Executor::copyByViews(const Instruction &inst, const std::vector<const Tensor *> &in, Tensor &out) {
  const Shape &outShape = out.type.shape;
  std::vector<int64_t> outStrides = rowMajorStrides(outShape);
  auto copy = [&](const Descriptor &from, const Descriptor &to) {
    stridedCopy(compiler_, from, to, out.type.dtype, outShape.size());
  };
  void *result = out.buffer.data.get();
  Descriptor whole(result, outShape);
  const Tensor &x = *in[0];
  std::vector<int64_t> xStrides = rowMajorStrides(x.type.shape);
  switch (inst.op) {
  case OpCode::Slice: { // result[i] = x[starts + i * steps]
    auto slice = attrs::Slice::of(inst.attrs);
    int64_t offset = 0;
    std::vector<int64_t> strides(outShape.size());
    for (size_t d = 0; d < outShape.size(); ++d) { // (a step along an axis of size <= 1 is never taken: it may be huge)
      offset += slice.starts[d] * xStrides[d];
      strides[d] = outShape[d] <= 1 ? 0 : xStrides[d] * slice.steps[d];
    }
    copy(Descriptor(x.buffer.data.get(), offset, outShape, strides), whole);
    return;
  }
  case OpCode::SliceScatter: { // x, with the window at starts by steps replaced by the source
    auto slice = attrs::SliceScatter::of(inst.attrs);
    const Tensor &source = *in[1];
    if (out.buffer.bytes) device_->copy(result, x.buffer.data.get(), out.buffer.bytes);
    int64_t offset = 0;
    std::vector<int64_t> strides(outShape.size());
    for (size_t d = 0; d < outShape.size(); ++d) {
      offset += slice.starts[d] * outStrides[d];
      strides[d] = source.type.shape[d] <= 1 ? 0 : outStrides[d] * slice.steps[d];
    }
    copy(Descriptor(source.buffer.data.get(), source.type.shape),
         Descriptor(result, offset, source.type.shape, strides));
    return;
  }
  case OpCode::Transpose: { // result axis d is x's axis perm[d]
    auto perm = attrs::Transpose::of(inst.attrs).perm;
    std::vector<int64_t> strides(outShape.size());
    for (size_t d = 0; d < outShape.size(); ++d) strides[d] = xStrides[size_t(perm[d])];
    copy(Descriptor(x.buffer.data.get(), 0, outShape, strides), whole);
    return;
  }
  case OpCode::BroadcastTo: { // NumPy's rule: missing leading axes and size-1 axes repeat (stride 0)
    std::vector<int64_t> strides(outShape.size(), 0);
    size_t lead = outShape.size() - x.type.shape.size();
    for (size_t j = 0; j < x.type.shape.size(); ++j)
      strides[lead + j] = x.type.shape[j] == 1 ? 0 : xStrides[j];
    copy(Descriptor(x.buffer.data.get(), 0, outShape, strides), whole);
    return;
  }
  case OpCode::Concat: { // each part into its window of the result along the axis
    size_t axis = size_t(attrs::Concat::of(inst.attrs).axis);
    int64_t at = 0;
    for (const Tensor *part : in) {
      copy(Descriptor(part->buffer.data.get(), part->type.shape),
           Descriptor(result, at * outStrides[axis], part->type.shape, outStrides));
      at += part->type.shape[axis];
    }
    return;
  }
  default: throw std::logic_error("copyByViews: not an element move");
  }
}

std::string Executor::hostBytes(const Tensor &t) {
  std::string bytes(t.buffer.bytes, '\0');
  if (!bytes.empty()) device_->download(bytes.data(), t.buffer.data.get(), bytes.size());
  return bytes;
}

Buffer Executor::deviceBytes(const std::string &bytes) {
  Buffer b = allocate(bytes.size());
  if (!bytes.empty()) device_->upload(b.data.get(), bytes.data(), bytes.size());
  return b;
}

void Executor::exchange(const Instruction &inst, const Tensor *in, const std::string &inputError, Tensor &out) {
  if (!comm_) throw std::runtime_error("this worker has no connection to other workers");
  const std::vector<int64_t> &group = inst.attrs.workers;
  bool failed = !inputError.empty();
  auto peerFailed = [&] { return std::string(opInfo(inst.op).mnemonic) + ": " + kPeerFailed; };

  if (inst.op == OpCode::Send || inst.op == OpCode::Recv) {
    stats_.p2pOps++;
    int64_t peer = inst.op == OpCode::Send ? attrs::Send::of(inst.attrs).peer : attrs::Recv::of(inst.attrs).peer;
    if (inst.op == OpCode::Send) { // a flag, then the block unless this worker's input failed
      comm_->sendFlag(failed, peer);
      if (!failed) comm_->send(in->buffer.data.get(), size_t(numElements(in->type.shape)) * dtypeSize(in->type.dtype), peer);
      return;
    }
    auto recv = attrs::Recv::of(inst.attrs);
    out.type = TensorType{recv.dtype, recv.shape};
    if (comm_->recvFlag(peer)) {
      out.error = "recv from worker " + std::to_string(peer) + ": " + kPeerFailed;
      return;
    }
    size_t size = size_t(numElements(out.type.shape)) * dtypeSize(out.type.dtype);
    out.buffer = allocate(size);
    comm_->recv(out.buffer.data.get(), size, peer);
    return;
  }

  // Collectives: first agree whether every member's input is sound.
  stats_.collectiveOps++;
  if (comm_->any(failed, group)) {
    out.error = failed ? inputError : peerFailed();
    return;
  }
  Sharding members = Sharding::replicated(group);
  int64_t rank = members.rankOf(self_), n = int64_t(group.size());
  if (rank < 0) throw std::runtime_error("this worker is not in the collective's group");
  std::vector<TensorType> types{in->type};
  out.type = resultType(inst, types, stats_.typesInferred);
  size_t elem = dtypeSize(in->type.dtype), inBytes = size_t(numElements(in->type.shape)) * elem;
  auto reduceKind = ReduceKind(inst.attrs.reduce);
  // The members' blocks of `whole` along `axis`, gathered into one buffer; for an axis other
  // than 0 the blocks are interleaved through the host (correct, not fast).
  auto gather = [&](const Tensor &mine, const Shape &whole, int64_t axis) {
    std::vector<size_t> sizes = blockBytes(whole, axis, n, elem);
    if (sizes[size_t(rank)] != size_t(numElements(mine.type.shape)) * elem)
      throw std::runtime_error("all_gather: this worker's block has the wrong size");
    Buffer flat = allocate(size_t(numElements(whole)) * elem);
    comm_->allGather(mine.buffer.data.get(), flat.data.get(), sizes, group);
    if (axis == 0) return flat;
    std::string host(flat.bytes, '\0');
    device_->download(host.data(), flat.data.get(), host.size());
    return deviceBytes(interleaveBlocks(host, sizes, whole, elem, axis));
  };
  // A copy of t with its blocks along `axis` end to end in rank order (rearranged through the
  // host when axis is not 0: correct, not fast). The communicator may clobber it.
  auto pack = [&](const Tensor &t, int64_t axis) {
    if (axis != 0) return deviceBytes(packBlocks(hostBytes(t), t.type.shape, elem, axis, n));
    Buffer copy = allocate(inBytes);
    device_->copy(copy.data.get(), t.buffer.data.get(), inBytes);
    return copy;
  };
  switch (inst.op) {
  case OpCode::AllReduce:
    out.buffer = pack(*in, 0);
    comm_->allReduce(out.buffer.data.get(), inBytes / elem, in->type.dtype, reduceKind, group);
    return;
  case OpCode::AllGather:
    out.buffer = gather(*in, out.type.shape, attrs::AllGather::of(inst.attrs).axis);
    return;
  case OpCode::ReduceScatter: { // each member's blocks end to end in rank order; keep the reduced own block
    int64_t axis = attrs::ReduceScatter::of(inst.attrs).axis;
    std::vector<size_t> counts = blockBytes(in->type.shape, axis, n, 1);
    Buffer scratch = pack(*in, axis);
    out.buffer = allocate(counts[size_t(rank)] * elem);
    comm_->reduceScatter(scratch.data.get(), out.buffer.data.get(), counts, in->type.dtype, reduceKind, group);
    return;
  }
  case OpCode::AllToAll: { // block r of the split axis to member r; theirs concatenated along the concat axis
    auto toAll = attrs::AllToAll::of(inst.attrs);
    int64_t splitAxis = toAll.splitAxis, concatAxis = toAll.concatAxis;
    auto [give, take] = allToAllBytes(in->type.shape, out.type.shape, splitAxis, concatAxis, n, rank, elem);
    Buffer blocks = splitAxis == 0 ? in->buffer : pack(*in, splitAxis); // (only read)
    out.buffer = allocate(size_t(numElements(out.type.shape)) * elem);
    comm_->allToAll(blocks.data.get(), give, out.buffer.data.get(), take, group);
    if (concatAxis != 0) out.buffer = deviceBytes(interleaveBlocks(hostBytes(out), take, out.type.shape, elem, concatAxis));
    return;
  }
  default: throw std::logic_error("not an exchange op");
  }
}

Fetched Executor::fetch(uint64_t id, uint64_t offset, uint64_t length) {
  Fetched f;
  auto it = tensors_.find(id);
  if (it == tensors_.end()) {
    f.error = "tensor " + std::to_string(id) + " does not exist on this worker";
    return f;
  }
  f.type = it->second.type;
  f.error = it->second.error;
  if (f.error.empty()) {
    try {
      materialize(it->second);
    } catch (const std::exception &e) {
      f.error = std::string("fetching tensor ") + std::to_string(id) + ": " + e.what();
    }
  }
  if (f.error.empty()) {
    size_t size = it->second.buffer.bytes;
    offset = std::min<uint64_t>(offset, size);
    size_t n = length ? size_t(std::min<uint64_t>(length, size - offset)) : size - offset;
    f.bytes.resize(n);
    try {
      if (n) device_->download(f.bytes.data(), it->second.buffer.data.get() + offset, n);
    } catch (const std::exception &e) {
      f.bytes.clear();
      f.error = std::string("fetching tensor ") + std::to_string(id) + ": " + e.what();
    }
  }
  return f;
}

ExecutorStats Executor::stats() const {
  ExecutorStats s = stats_;
  s.liveTensors = tensors_.size();
  {
    std::lock_guard lock(accounts_->mu);
    s.liveBytes = accounts_->total;
    s.peakBytes = accounts_->peak;
  }
  std::lock_guard lock(jit_->mu);
  for (auto &[key, e] : jit_->entries) {
    s.regionsCompiled += e.state == RegionJit::Entry::Ready;
    s.regionFallbacks += e.state == RegionJit::Entry::Failed;
    s.regionsCompiling += e.state == RegionJit::Entry::Queued;
  }
  CompilerStats regionCompiler = jit_->compiler.stats();
  s.regionCompileMs = regionCompiler.compileMs;
  s.regionLoadMs = regionCompiler.diskLoadMs;
  s.regionDiskHits = regionCompiler.diskHits;
  for (auto &[key, p] : profileByKey_)
    s.notes.push_back("profile: region " + profileNames_.at(key) + ": " + std::to_string(p.second) +
                                " replays, " + std::to_string(p.first) + " ms");
  for (size_t i = 0; i < jit_->failures.size() && i < 16; ++i) s.notes.push_back(jit_->failures[i]);
  return s;
}

} // namespace gt::worker
