// gt-copy-to-linalg: bufferized copies become linalg.copy, so they lower to loops (CPU) or kernels (GPU).
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTCOPYTOLINALG
#include "gt/Dialect/Passes.h.inc"

namespace {
struct GTCopyToLinalgPass : impl::GTCopyToLinalgBase<GTCopyToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      if (copy.getSource() != copy.getTarget())
        b.create<linalg::CopyOp>(copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace
} // namespace mlir::gt
