// gt-gpu-device-memory: host-side buffers become device buffers; no host code may touch memory.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTGPUDEVICEMEMORY
#include "gt/Dialect/Passes.h.inc"

namespace {
struct GTGPUDeviceMemoryPass : impl::GTGPUDeviceMemoryBase<GTGPUDeviceMemoryPass> {
  void runOnOperation() override {
    bool failed = false;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      SmallVector<Operation *> allocs;
      func.walk([&](Operation *op) {
        if (isa<memref::AllocOp, memref::DeallocOp>(op)) allocs.push_back(op);
        else if (isa<memref::LoadOp, memref::StoreOp, memref::CopyOp, memref::AllocaOp, linalg::LinalgOp>(op)) {
          op->emitOpError("would run on the host and dereference device memory");
          failed = true;
        }
      });
      for (Operation *op : allocs) {
        OpBuilder b(op);
        if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
          auto device = b.create<gpu::AllocOp>(op->getLoc(), alloc.getType(), /*asyncToken=*/Type(),
                                               ValueRange{}, alloc.getDynamicSizes(), alloc.getSymbolOperands());
          alloc.replaceAllUsesWith(device.getMemref());
        } else {
          b.create<gpu::DeallocOp>(op->getLoc(), /*asyncToken=*/Type(), ValueRange{},
                                   cast<memref::DeallocOp>(op).getMemref());
        }
        op->erase();
      }
    }
    if (failed) signalPassFailure();
  }
};
} // namespace
} // namespace mlir::gt
