// The CPU device: host memory, cblas GEMM, kernels compiled for the host.
#include "gt/Worker/Device.h"

#include "../MatmulShape.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace gt::worker {
namespace {

/// NumPy matmul through cblas_{s,d}gemm, one call per batch element.
void matmulBlas(const TensorType &ta, const void *a, const TensorType &tb, const void *b, const TensorType &tc,
                void *c) {
  MatmulShape s(ta, tb);
  int64_t m = s.m, k = s.k, n = s.n;
  for (int64_t i = 0; i < s.batches; ++i) {
    int64_t offA = s.offsetA(i), offB = s.offsetB(i);
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

class CPUDevice final : public Device {
public:
  std::string describe() const override { return "cpu"; }
  CompilerTarget target() const override { return {}; }
  Buffer allocate(size_t bytes) override {
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, rounded);
    if (!p) throw std::runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
    return {std::shared_ptr<std::byte>(static_cast<std::byte *>(p), std::free), bytes};
  }
  void upload(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void *dst, const void *src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void setScalar(void *dst, uint64_t bits) override { std::memcpy(dst, &bits, 8); }
  void matmul(const TensorType &ta, const void *a, const TensorType &tb, const void *b, const TensorType &tc,
              void *c) override {
    if (tc.dtype != DType::Float32 && tc.dtype != DType::Float64)
      throw std::invalid_argument(std::string("matmul supports float32 and float64, not ") + dtypeName(tc.dtype));
    if (numElements(tc.shape) > 0) matmulBlas(ta, a, tb, b, tc, c);
  }
};

} // namespace

std::unique_ptr<Device> createCPUDevice() { return std::make_unique<CPUDevice>(); }

std::unique_ptr<Device> createDevice(const std::string &name, bool allowTF32) {
  if (name == "cpu") return createCPUDevice();
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    CUDAOptions options;
    options.allowTF32 = allowTF32;
    if (name.size() > 5) {
      try {
        size_t used = 0;
        options.ordinal = std::stoi(name.substr(5), &used);
        if (used != name.size() - 5 || options.ordinal < 0) throw std::invalid_argument("");
      } catch (const std::exception &) {
        throw std::invalid_argument("bad device '" + name + "': expected cuda:N with N a GPU index");
      }
    }
    return createCUDADevice(options);
  }
  throw std::invalid_argument("unknown device '" + name + "': expected 'cpu' or 'cuda:N'");
}

} // namespace gt::worker
