// gt-approximate-math: f32 transcendental functions as MLIR's polynomial approximations.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/TypeUtilities.h"
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

/// f32 math.tanh(x), with x's sign, of a = min(|x|, 9.1): below 0.55 a fitted odd polynomial,
/// from there 1 - 2 / (e^(2a) + 1). Within 1.4 ulp of tanh (PyTorch's: 0.6), and 1 only where
/// float32's tanh is. MLIR's rational approximation (benefit 1), kept for nothing now, clamps
/// |x| to 7.9: tanh(8) was exactly 1, its gradient 1 - tanh^2 0 (PyTorch: 4.8e-7), and it was
/// 4.3 ulp off elsewhere. The math.exp becomes MLIR's polynomial; only arith and math.fma are
/// made besides (GPU kernels lower no math.absf or math.copysign).
struct AccurateTanh : OpRewritePattern<math::TanhOp> {
  AccurateTanh(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(math::TanhOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32()) return failure();
    Location loc = op.getLoc();
    auto constant = [&](float v) -> Value {
      TypedAttr a = rewriter.getF32FloatAttr(v);
      if (auto vector = dyn_cast<VectorType>(type)) a = DenseElementsAttr::get(vector, a);
      return rewriter.create<arith::ConstantOp>(loc, a);
    };
    Value x = op.getOperand();
    Value negative = rewriter.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, constant(0.0f));
    Value abs = rewriter.create<arith::SelectOp>(loc, negative, rewriter.create<arith::NegFOp>(loc, x), x);
    // (t below is >= 0, or NaN: x's sign is put on it last)
    Value a = rewriter.create<arith::MinimumFOp>(loc, abs, constant(9.1f)); // (NaN stays NaN)
    // From 0.55 on, 1 - 2 / (e^(2a) + 1): tanh >= 0.5 there, and its last bits come from the
    // small quotient (so it is 1 only where float32's tanh is)
    Value e = rewriter.create<math::ExpOp>(loc, rewriter.create<arith::MulFOp>(loc, a, constant(2.0f)));
    Value ep1 = rewriter.create<arith::AddFOp>(loc, e, constant(1.0f));
    // Near 0, a + a^3 P(a^2): P of degree 4 fitted to (tanh(a) / a - 1) / a^2 over a < 0.55 (least
    // squares at 4000 Chebyshev nodes of a^2; its leading terms are the Taylor series' -1/3,
    // 2/15): within 0.8 ulp there (the polynomial alone; the exp form there cancels).
    static constexpr float kNear0[] = {-0.3333333f, 0.13333118f, -0.05391007f, 0.021312764f, -0.0066157826f};
    Value a2 = rewriter.create<arith::MulFOp>(loc, a, a);
    Value p = constant(kNear0[4]);
    for (int i = 3; i >= 0; --i) p = rewriter.create<math::FmaOp>(loc, p, a2, constant(kNear0[i]));
    Value small = rewriter.create<math::FmaOp>(loc, rewriter.create<arith::MulFOp>(loc, a, a2), p, a);
    Value large = rewriter.create<arith::SubFOp>(loc, constant(1.0f),
                                                 rewriter.create<arith::DivFOp>(loc, constant(2.0f), ep1));
    Value near0 = rewriter.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, a, constant(0.55f));
    Value t = rewriter.create<arith::SelectOp>(loc, near0, small, large);
    // x's sign bit on t (tanh(-0) is -0): t | (x & 0x80000000), as integers
    Type bits = rewriter.getI32Type();
    if (auto vector = dyn_cast<VectorType>(type)) bits = vector.clone(bits);
    TypedAttr signBit = rewriter.getI32IntegerAttr(int32_t(0x80000000u));
    if (auto vector = dyn_cast<VectorType>(bits)) signBit = DenseElementsAttr::get(vector, signBit);
    Value sign = rewriter.create<arith::AndIOp>(loc, rewriter.create<arith::BitcastOp>(loc, bits, x),
                                                rewriter.create<arith::ConstantOp>(loc, signBit));
    Value signedT = rewriter.create<arith::OrIOp>(loc, rewriter.create<arith::BitcastOp>(loc, bits, t), sign);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, type, signedT);
    return success();
  }
};

struct GTApproximateMathPass : impl::GTApproximateMathBase<GTApproximateMathPass> {
  using GTApproximateMathBase::GTApproximateMathBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AccurateTanh>(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (fmaToLLVM) patterns.add<FmaToLLVM>(&getContext(), /*benefit=*/0);
    if (failed(applyPatternsAndFoldGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};
} // namespace
} // namespace mlir::gt
