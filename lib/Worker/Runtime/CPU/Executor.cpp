// The CPU executor: BLAS for GEMM, aliases for reshape, JIT-compiled kernels for the rest.
#include "gt/Worker/Executor.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>

namespace gt::worker {

namespace {

/// A ranked memref descriptor {allocated, aligned, offset, sizes[r], strides[r]} (row-major).
struct Descriptor {
  std::vector<int64_t> words;
  Descriptor(void *data, const Shape &shape) : words(3 + 2 * shape.size()) {
    words[0] = words[1] = int64_t(reinterpret_cast<intptr_t>(data));
    words[2] = 0;
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      words[3 + i] = shape[i];
      words[3 + shape.size() + i] = stride;
      stride *= shape[i];
    }
  }
};

/// Offset (in elements) of batch element `index` of `out` in an operand with batch shape
/// `batch` broadcast to `outBatch`, whose matrices hold `matrixSize` elements.
int64_t batchOffset(int64_t index, const Shape &outBatch, const Shape &batch, int64_t matrixSize) {
  int64_t offset = 0, stride = matrixSize;
  for (size_t i = outBatch.size(); i-- > 0;) {
    int64_t coord = index % outBatch[i];
    index /= outBatch[i];
    size_t j = i + batch.size();
    if (j >= outBatch.size()) { // this axis exists in the operand
      int64_t size = batch[j - outBatch.size()];
      if (size != 1) offset += coord * stride;
      stride *= size;
    }
  }
  return offset;
}

/// NumPy matmul through cblas_{s,d}gemm, one call per batch element.
void matmul(const TensorType &ta, const void *a, const TensorType &tb, const void *b,
            const TensorType &tc, void *c) {
  Shape sa = ta.shape, sb = tb.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  Shape outBatch = broadcastShapes(batchA, batchB);
  int64_t batches = numElements(outBatch);
  for (int64_t i = 0; i < batches; ++i) {
    int64_t offA = batchOffset(i, outBatch, batchA, m * k), offB = batchOffset(i, outBatch, batchB, k * n);
    if (tc.dtype == DType::Float32)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                  static_cast<const float *>(a) + offA, k, static_cast<const float *>(b) + offB, n,
                  0.0f, static_cast<float *>(c) + i * m * n, n);
    else
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0,
                  static_cast<const double *>(a) + offA, k, static_cast<const double *>(b) + offB, n,
                  0.0, static_cast<double *>(c) + i * m * n, n);
  }
}

} // namespace

Executor::Executor(std::string cacheDir) : compiler_(std::move(cacheDir)) {}

HostBuffer Executor::allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p) throw std::runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  stats_.liveBytes += bytes;
  stats_.peakBytes = std::max(stats_.peakBytes, stats_.liveBytes);
  return {std::shared_ptr<std::byte>(static_cast<std::byte *>(p), std::free), bytes};
}

void Executor::release(const Tensor &t) {
  // Aliases (reshape) share a buffer; the bytes count once, when the last one goes.
  if (t.buffer.data && t.buffer.data.use_count() == 1) stats_.liveBytes -= t.buffer.bytes;
}

void Executor::run(const Instruction &inst) {
  stats_.instructions++;
  if (inst.op == OpCode::Free) {
    for (uint64_t id : inst.operands)
      if (auto it = tensors_.find(id); it != tensors_.end()) {
        release(it->second);
        tensors_.erase(it);
      }
    return;
  }
  Tensor out;
  std::vector<const Tensor *> in;
  std::string where = std::string(opInfo(inst.op).mnemonic) +
                      (inst.location.empty() ? "" : " at " + inst.location);
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
    in.push_back(&it->second);
  }
  if (out.error.empty()) {
    try {
      execute(inst, in, out);
    } catch (const std::exception &e) {
      out.error = where + ": " + e.what();
    }
  }
  if (auto it = tensors_.find(inst.result); it != tensors_.end()) {
    release(it->second);
    tensors_.erase(it);
  }
  tensors_.emplace(inst.result, std::move(out));
}

void Executor::execute(const Instruction &inst, const std::vector<const Tensor *> &in, Tensor &out) {
  std::vector<TensorType> types;
  for (const Tensor *t : in) types.push_back(t->type);
  out.type = inferType(inst.op, types, inst.attrs);
  size_t bytes = size_t(numElements(out.type.shape)) * dtypeSize(out.type.dtype);

  switch (inst.op) {
  case OpCode::Upload:
    if (inst.data.size() != bytes)
      throw std::invalid_argument("upload carries " + std::to_string(inst.data.size()) +
                                  " bytes, a " + dtypeName(out.type.dtype) + shapeString(out.type.shape) +
                                  " tensor needs " + std::to_string(bytes));
    out.buffer = allocate(bytes);
    std::memcpy(out.buffer.data.get(), inst.data.data(), bytes);
    return;
  case OpCode::Reshape: // same bytes, new shape
    out.buffer = in[0]->buffer;
    return;
  case OpCode::Matmul:
    out.buffer = allocate(bytes);
    if (bytes) matmul(in[0]->type, in[0]->buffer.data.get(), in[1]->type, in[1]->buffer.data.get(), out.type,
                      out.buffer.data.get());
    return;
  default: break;
  }

  // Everything else is a compiled kernel. Fill values and seeds are 0-d run-time operands,
  // so one kernel serves every value.
  std::vector<TensorType> kernelTypes = types;
  std::vector<Descriptor> descriptors;
  double value = inst.attrs.value;
  int64_t seed = inst.attrs.seed;
  if (inst.op == OpCode::Full) {
    kernelTypes = {TensorType{DType::Float64, {}}};
    descriptors.emplace_back(&value, Shape{});
  } else if (inst.op == OpCode::Randn) {
    kernelTypes = {TensorType{DType::Int64, {}}};
    descriptors.emplace_back(&seed, Shape{});
  } else {
    for (const Tensor *t : in) descriptors.emplace_back(t->buffer.data.get(), t->type.shape);
  }
  const Kernel &kernel = compiler_.get(inst.op, kernelTypes, inst.attrs, out.type);
  out.buffer = allocate(bytes);
  descriptors.emplace_back(out.buffer.data.get(), out.type.shape);
  std::vector<void *> args;
  for (Descriptor &d : descriptors) args.push_back(d.words.data());
  if (numElements(out.type.shape) > 0) kernel.invoke(args.data());
}

Fetched Executor::fetch(uint64_t id) const {
  Fetched f;
  auto it = tensors_.find(id);
  if (it == tensors_.end()) {
    f.error = "tensor " + std::to_string(id) + " does not exist on this worker";
    return f;
  }
  f.type = it->second.type;
  f.error = it->second.error;
  if (f.error.empty())
    f.bytes.assign(reinterpret_cast<const char *>(it->second.buffer.data.get()), it->second.buffer.bytes);
  return f;
}

ExecutorStats Executor::stats() const {
  ExecutorStats s = stats_;
  s.liveTensors = tensors_.size();
  return s;
}

} // namespace gt::worker
