// NumPy matmul shapes, shared by the devices' GEMM paths.
#pragma once

#include "gt/Core/DType.h"

namespace gt::worker {

/// C[batch] (m x n) = A[batch] (m x k) @ B[batch] (k x n), after NumPy's 1-D promotion, with
/// batch dimensions broadcast.
struct MatmulShape {
  int64_t m = 0, k = 0, n = 0, batches = 1;
  Shape batchA, batchB, outBatch;

  MatmulShape(const TensorType &ta, const TensorType &tb) {
    Shape sa = ta.shape, sb = tb.shape;
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
    batchA.assign(sa.begin(), sa.end() - 2);
    batchB.assign(sb.begin(), sb.end() - 2);
    outBatch = broadcastShapes(batchA, batchB);
    batches = numElements(outBatch);
  }

  /// Offset (in elements) of batch element `index` of the output in an operand with batch
  /// shape `batch` broadcast to outBatch, whose matrices hold `matrixSize` elements.
  int64_t batchOffset(int64_t index, const Shape &batch, int64_t matrixSize) const {
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
  int64_t offsetA(int64_t index) const { return batchOffset(index, batchA, m * k); }

  /// Folds the batch into A's rows when B is one matrix for every batch element and A is fully
  /// batched: its matrices then lie one after another, so the batch is one GEMM of
  /// (batches * m) x k times k x n, whose result is C's memory as it is (PyTorch's matmul folds
  /// the same way). An nn.Linear on (batch, time, features) is this case: one large GEMM runs
  /// at a BLAS's full speed where `batches` GEMMs of m rows each did not. Only for an A stored
  /// as its matrices (a transposed A's rows are not contiguous). Returns whether it folded.
  bool foldBatchIntoRows() {
    if (batches <= 1 || numElements(batchB) != 1 || batchA != outBatch) return false;
    m *= batches;
    batches = 1;
    batchA.clear(), batchB.clear(), outBatch.clear();
    return true;
  }
  int64_t offsetB(int64_t index) const { return batchOffset(index, batchB, k * n); }
};

} // namespace gt::worker
