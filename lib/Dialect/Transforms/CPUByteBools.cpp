// gt-cpu-byte-bools: a CPU kernel's bool loads and stores as byte loads and stores, so LLVM
// vectorizes them.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTCPUBYTEBOOLS
#include "gt/Dialect/Passes.h.inc"

namespace {
struct GTCPUByteBoolsPass : impl::GTCPUByteBoolsBase<GTCPUByteBoolsPass> {
  void runOnOperation() override {
    SmallVector<LLVM::LoadOp> loads;
    SmallVector<LLVM::StoreOp> stores;
    getOperation()->walk([&](Operation *op) {
      if (auto load = dyn_cast<LLVM::LoadOp>(op); load && load.getType().isInteger(1)) loads.push_back(load);
      if (auto store = dyn_cast<LLVM::StoreOp>(op); store && store.getValue().getType().isInteger(1))
        stores.push_back(store);
    });
    for (LLVM::LoadOp load : loads) {
      OpBuilder b(load);
      Location loc = load.getLoc();
      Type byte = b.getI8Type();
      auto wide = b.create<LLVM::LoadOp>(loc, byte, load.getAddr());
      wide->setAttrs(load->getAttrDictionary()); // alignment, alias scopes, ...
      Value zero = b.create<LLVM::ConstantOp>(loc, byte, b.getI8IntegerAttr(0));
      Value set = b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::ne, wide, zero);
      load.replaceAllUsesWith(set);
      load.erase();
    }
    for (LLVM::StoreOp store : stores) {
      OpBuilder b(store);
      Value byte = b.create<LLVM::ZExtOp>(store.getLoc(), b.getI8Type(), store.getValue());
      auto wide = b.create<LLVM::StoreOp>(store.getLoc(), byte, store.getAddr());
      wide->setAttrs(store->getAttrDictionary());
      store.erase();
    }
  }
};
} // namespace
} // namespace mlir::gt
