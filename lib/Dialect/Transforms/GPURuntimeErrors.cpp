// gt-gpu-runtime-errors: GPU kernels report failed run-time checks in a device global.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTGPURUNTIMEERRORS
#include "gt/Dialect/Passes.h.inc"

namespace {
struct GTGPURuntimeErrorsPass : impl::GTGPURuntimeErrorsBase<GTGPURuntimeErrorsPass> {
  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    SmallVector<func::CallOp> calls;
    module.walk([&](func::CallOp call) {
      if (call.getCallee() == kRuntimeErrorFunction) calls.push_back(call);
    });
    // gpu-kernel-outlining copied the host module's declaration in with the calls.
    if (auto declaration = module.lookupSymbol<func::FuncOp>(kRuntimeErrorFunction)) declaration.erase();
    if (calls.empty()) return;

    Location loc = module.getLoc();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToStart(&module.getBodyRegion().front());
    Type i64 = b.getI64Type();
    auto type = MemRefType::get({kRuntimeErrorWords}, i64);
    auto zeros = DenseElementsAttr::get(RankedTensorType::get({kRuntimeErrorWords}, i64), b.getI64IntegerAttr(0));
    // Public, so that the worker finds it by name in the loaded module (cuModuleGetGlobal).
    b.create<memref::GlobalOp>(loc, kRuntimeErrorGlobal, /*sym_visibility=*/StringAttr(), type, zeros,
                               /*constant=*/false, b.getI64IntegerAttr(8));
    for (func::CallOp call : calls) {
      b.setInsertionPoint(call);
      Location at = call.getLoc();
      Value words = b.create<memref::GetGlobalOp>(at, type, kRuntimeErrorGlobal);
      auto index = [&](int64_t i) { return b.create<arith::ConstantIndexOp>(at, i).getResult(); };
      Value one = b.create<arith::ConstantIntOp>(at, 1, 64), zero = b.create<arith::ConstantIntOp>(at, 0, 64);
      // The first failing thread of all the module's launches since the worker cleared word 0
      // writes the rest; the others leave it (one consistent report, as on the CPU).
      Value before = b.create<memref::AtomicRMWOp>(at, arith::AtomicRMWKind::assign, one, words, ValueRange{index(0)});
      Value first = b.create<arith::CmpIOp>(at, arith::CmpIPredicate::eq, before, zero);
      SmallVector<Value> args(call.getOperands());
      b.create<scf::IfOp>(at, first, [&](OpBuilder &nb, Location nat) {
        for (size_t i = 0; i < args.size(); ++i)
          nb.create<memref::StoreOp>(nat, args[i], words, ValueRange{index(int64_t(i) + 1)});
        nb.create<scf::YieldOp>(nat);
      });
      call.erase();
    }
  }
};
} // namespace
} // namespace mlir::gt
