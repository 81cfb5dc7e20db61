// gt-approximate-math: f32 transcendental functions as MLIR's polynomial approximations.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTAPPROXIMATEMATH
#include "gt/Dialect/Passes.h.inc"

namespace {
/// math.fma -> llvm.intr.fma (a fused multiply-add on every target, as on the CPU).
struct FmaToLLVM : OpRewritePattern<math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FmaOp op, PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::FMAOp>(op, op.getA(), op.getB(), op.getC());
    return success();
  }
};

struct GTApproximateMathPass : impl::GTApproximateMathBase<GTApproximateMathPass> {
  using GTApproximateMathBase::GTApproximateMathBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (fmaToLLVM) patterns.add<FmaToLLVM>(&getContext(), /*benefit=*/0);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};
} // namespace
} // namespace mlir::gt
