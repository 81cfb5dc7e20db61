// gt-lower-to-linalg: gt compute ops -> linalg/tensor/arith/math on tensors.
//
// A dialect conversion (MLIR's Toy tutorial, chapter 5): one ConversionPattern per op, whose
// lowering function is shared by a family (kOpLowerings, kKindLowerings at the end), under a
// ConversionTarget where the gt dialect is illegal except for data, lifetime and movement ops
// (upload, free, the distribution ops). A compute op of the spec without a lowering fails the
// pass with "failed to legalize operation 'gt.<op>'".
//
// Every op becomes one structured op (or a short chain of them):
//   elementwise(a, b)   => linalg.generic, broadcasting written as constant-0 indexing maps
//   reduce(x, axes)     => linalg.fill(init) + linalg.generic with reduction iterators
//   matmul(a, b)        => linalg.fill(0) + linalg.generic contraction (batch axes broadcast)
//   full / randn        => linalg.fill / linalg.generic over linalg.index (counter-based RNG)
//   transpose / reshape => linalg.transpose / tensor.reshape
//   slice / slice_scatter / concat => tensor.extract_slice / tensor.insert_slice
//   im2col / col2im     => linalg.generic reading the input with tensor.extract at computed
//                          positions (col2im: a reduction over the kernel taps)
//   convolution and its gradients => one linalg.generic each, reduction loops over what a
//                          result element sums, operands read with tensor.extract (for devices
//                          without a convolution library)
//   max_pool / max_pool_backward => one linalg.generic each over the taps (the backward finds
//                          each window's first maximum by comparing its taps, unrolled)
//   argmax / argmin     => linalg.generic with two outputs (value, index)
//   index_select / gather => linalg.generic reading the input with tensor.extract
//   index_add / scatter_add => a dense linalg.generic reduction over the indices (no atomics;
//                          the GPU), or with scatter-loops scf.for loops over the source (the CPU)
#include "gt/Core/OpAttrStructs.h"
#include "gt/Dialect/GTDialect.h"
#include "gt/Dialect/GTOps.h"
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cmath>
#include <limits>

namespace mlir::gt {
#define GEN_PASS_DEF_GTLOWERTOLINALG
#include "gt/Dialect/Passes.h.inc"

namespace {
namespace core = ::gt;
namespace attrs = ::gt::attrs; // each op's typed attributes (attrs::Cumsum::of(l.attrs).axis)
using core::OpCode;
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

// ---------------------------------------------------------------- scalars

Value constantOf(OpBuilder &b, Location loc, Type type, double value) {
  if (isa<FloatType>(type)) return b.create<arith::ConstantOp>(loc, b.getFloatAttr(type, value));
  return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(type, int64_t(value)));
}

/// f16 and bf16: stored at 16 bits, computed in f32 (PyTorch's "opmath" type).
bool isHalfFloat(Type t) { return t.isF16() || t.isBF16(); }
Type computeType(Type elem) { return isHalfFloat(elem) ? Float32Type::get(elem.getContext()) : elem; }

/// Converts a scalar to `to` with C++ rules (to bool: x != 0; from bool: 0/1). Conversions to
/// or from f16/bf16 go through f32 so that only extf/truncf between f32 and a 16-bit type
/// reach LLVM (the x86 backend has no bf16 conversions other than those).
Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to) return v;
  Type f32 = b.getF32Type();
  // uint8 (ui8 in the gt dialect): arith takes signless integers only, so its bits are an i8
  // (an unrealized cast, gone once both are LLVM's i8), zero-extended to i32 before anything.
  if (from.isUnsignedInteger()) {
    Value bits = b.create<UnrealizedConversionCastOp>(loc, b.getIntegerType(from.getIntOrFloatBitWidth()), v).getResult(0);
    return convertScalar(b, loc, b.create<arith::ExtUIOp>(loc, b.getI32Type(), bits), to);
  }
  if (to.isUnsignedInteger()) {
    Value bits = convertScalar(b, loc, v, b.getIntegerType(to.getIntOrFloatBitWidth()));
    return b.create<UnrealizedConversionCastOp>(loc, to, bits).getResult(0);
  }
  // To int8/int16 from a float: through int32, so 200.0 -> uint8 keeps its bits (fptosi to a
  // type too narrow for the value is poison).
  if (isa<FloatType>(from) && to.isSignlessInteger() && to.getIntOrFloatBitWidth() > 1 &&
      to.getIntOrFloatBitWidth() < 32)
    return b.create<arith::TruncIOp>(loc, to, convertScalar(b, loc, v, b.getI32Type()));
  if (isHalfFloat(from) && to != f32) return convertScalar(b, loc, b.create<arith::ExtFOp>(loc, f32, v), to);
  if (isHalfFloat(to) && from != f32) return b.create<arith::TruncFOp>(loc, to, convertScalar(b, loc, v, f32));
  if (to.isInteger(1)) {
    Value zero = constantOf(b, loc, from, 0);
    if (isa<FloatType>(from)) return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, v, zero);
    return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, v, zero);
  }
  if (auto toF = dyn_cast<FloatType>(to)) {
    if (auto fromF = dyn_cast<FloatType>(from))
      return fromF.getWidth() < toF.getWidth() ? Value(b.create<arith::ExtFOp>(loc, to, v))
                                               : Value(b.create<arith::TruncFOp>(loc, to, v));
    if (from.isInteger(1)) return b.create<arith::UIToFPOp>(loc, to, v);
    return b.create<arith::SIToFPOp>(loc, to, v);
  }
  if (isa<FloatType>(from)) return b.create<arith::FPToSIOp>(loc, to, v);
  if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
    return from.isInteger(1) ? Value(b.create<arith::ExtUIOp>(loc, to, v))
                             : Value(b.create<arith::ExtSIOp>(loc, to, v));
  return b.create<arith::TruncIOp>(loc, to, v);
}

/// fn(x) computed in f64 (x widened, the result rounded back once), for a float x.
Value inF64(OpBuilder &b, Location loc, Value x, function_ref<Value(Value)> fn) {
  Type t = x.getType(), f64 = b.getF64Type();
  if (t == f64) return fn(x);
  return b.create<arith::TruncFOp>(loc, t, fn(b.create<arith::ExtFOp>(loc, f64, x)));
}

/// sin(x) or cos(x). An f32 x is reduced to r = x - k pi/2 in f64 (|r| <= pi/4, k the nearest
/// integer to x / (pi/2)) and sin and cos of r (f32: MLIR's polynomial approximations of |r|,
/// which are accurate there) are combined by k's quadrant: sin x = (s, c, -s, -c)[k mod 4], cos x = (c, -s,
/// -c, s)[k mod 4]. The approximations alone reduce in f32 and lose the result as |x| grows
/// (sin(1e4) off by 7.6e-4; positional encodings reach thousands), where PyTorch's is within an
/// ulp. f64 is left to math.sin / math.cos (libm's on the CPU). Source: the Cody-Waite
/// reduction (Muller, "Elementary Functions", ch. 11), with pi/2 in one f64 constant: exact to
/// f32 for |x| below ~1e7.
Value sinOrCos(OpBuilder &b, Location loc, bool sine, Value x) {
  if (!x.getType().isF32()) return sine ? b.create<math::SinOp>(loc, x).getResult() : b.create<math::CosOp>(loc, x).getResult();
  Type f64 = b.getF64Type(), f32 = x.getType();
  auto c = [&](double v) { return constantOf(b, loc, f64, v); };
  Value xd = b.create<arith::ExtFOp>(loc, f64, x);
  Value k = b.create<math::FloorOp>(loc, b.create<arith::AddFOp>(loc, b.create<arith::MulFOp>(loc, xd, c(M_2_PI)), c(0.5)));
  Value r = b.create<arith::TruncFOp>(loc, f32, b.create<arith::SubFOp>(loc, xd, b.create<arith::MulFOp>(loc, k, c(M_PI_2))));
  Value q = b.create<arith::SubFOp>(loc, k, b.create<arith::MulFOp>(loc, c(4), b.create<math::FloorOp>(loc, b.create<arith::MulFOp>(loc, k, c(0.25)))));
  // sin and cos of |r|, r's sign put back on the sine: MLIR's approximations reduce again with
  // floor(r 2/pi), which sends a small negative r to r + pi/2 in f32, where the cancellation
  // loses it (sin(-5.2e-7) was -4.4e-7; cos(29 pi/2 + 5.2e-7) 15% off). For |r| < pi/2 their
  // reduction leaves it exact. (A select, not math.absf: GPU kernels lower no math.absf.)
  Value negative = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, r, constantOf(b, loc, f32, 0));
  Value ra = b.create<arith::SelectOp>(loc, negative, b.create<arith::NegFOp>(loc, r), r);
  Value sa = b.create<math::SinOp>(loc, ra), co = b.create<math::CosOp>(loc, ra);
  Value s = b.create<arith::SelectOp>(loc, negative, b.create<arith::NegFOp>(loc, sa), sa);
  Value ns = b.create<arith::NegFOp>(loc, s), nc = b.create<arith::NegFOp>(loc, co);
  auto is = [&](double v) { return b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, q, c(v)); };
  // quadrants 0..3 (q is NaN for a non-finite x: every compare is false, and the last choice,
  // computed from a NaN r, is NaN)
  Value q1 = sine ? co : ns, q2 = sine ? ns : nc, q3 = sine ? nc : s, q0 = sine ? s : co;
  return b.create<arith::SelectOp>(loc, is(0), q0,
                                   b.create<arith::SelectOp>(loc, is(1), q1, b.create<arith::SelectOp>(loc, is(2), q2, q3)));
}

/// x <= 0 and an integer: the poles of the gamma function (false for NaN and -inf's
/// non-integer neighbours; true for -inf, whose floor is itself).
Value isGammaPole(OpBuilder &b, Location loc, Value x) {
  Value zero = constantOf(b, loc, x.getType(), 0);
  Value nonPositive = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLE, x, zero);
  Value integer = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, x, b.create<math::FloorOp>(loc, x));
  return b.create<arith::AndIOp>(loc, nonPositive, integer);
}

/// log |Gamma(x)| of an f64 x. Lanczos' approximation with g = 7 and 9 coefficients (C. Lanczos,
/// SIAM J. Numer. Anal. B 1 (1964); the coefficients of Numerical Recipes' and Wikipedia's
/// "Lanczos approximation", relative error ~1e-15) for x >= 1/2, and the reflection formula
/// log |Gamma(x)| = log(pi / |sin(pi x)|) - log Gamma(1 - x) below; +inf at the poles and +-inf.
Value lgammaF64(OpBuilder &b, Location loc, Value x) {
  auto c = [&](double v) { return constantOf(b, loc, x.getType(), v); };
  static constexpr double kLanczos[] = {0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
                                        771.32342877765313,   -176.61502916214059,   12.507343278686905,
                                        -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  Value reflect = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, c(0.5));
  Value y = b.create<arith::SelectOp>(loc, reflect, b.create<arith::SubFOp>(loc, c(1), x), x);
  Value z = b.create<arith::SubFOp>(loc, y, c(1));
  Value sum = c(kLanczos[0]);
  for (int i = 1; i < 9; ++i)
    sum = b.create<arith::AddFOp>(loc, sum, b.create<arith::DivFOp>(loc, c(kLanczos[i]), b.create<arith::AddFOp>(loc, z, c(i))));
  Value t = b.create<arith::AddFOp>(loc, z, c(7.5));
  Value lg = b.create<arith::AddFOp>(loc, c(0.91893853320467274178), // log(2 pi) / 2
                                     b.create<arith::MulFOp>(loc, b.create<arith::AddFOp>(loc, z, c(0.5)),
                                                             b.create<math::LogOp>(loc, t)));
  lg = b.create<arith::AddFOp>(loc, b.create<arith::SubFOp>(loc, lg, t), b.create<math::LogOp>(loc, sum));
  Value sinPiX = b.create<math::AbsFOp>(loc, b.create<math::SinOp>(loc, b.create<arith::MulFOp>(loc, x, c(M_PI))));
  Value reflected = b.create<arith::SubFOp>(loc, b.create<math::LogOp>(loc, b.create<arith::DivFOp>(loc, c(M_PI), sinPiX)), lg);
  Value out = b.create<arith::SelectOp>(loc, reflect, reflected, lg);
  Value infinite = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, b.create<math::AbsFOp>(loc, x), c(INFINITY));
  return b.create<arith::SelectOp>(loc, b.create<arith::OrIOp>(loc, isGammaPole(b, loc, x), infinite), c(INFINITY), out);
}

/// digamma(x) (order 0) or trigamma(x) (order 1) of an f64 x: six steps of the recurrence
/// (psi(y) = psi(y + 6) - sum 1/(y + k), psi1(y) = psi1(y + 6) + sum 1/(y + k)^2) and the
/// asymptotic series at w = y + 6 >= 6.5 (Abramowitz & Stegun 6.3.18 and 6.4.12, terms to w^-12
/// and w^-13: error below 2e-13) for y >= 1/2; below, the reflection formulas psi(x) = psi(1 - x) -
/// pi / tan(pi x) and psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) (A&S 6.3.7, 6.4.7). At the
/// poles: digamma -inf at 0 and NaN at -1, -2, ... (as PyTorch), trigamma +inf.
Value polygammaF64(OpBuilder &b, Location loc, Value x, int order) {
  auto c = [&](double v) { return constantOf(b, loc, x.getType(), v); };
  Value reflect = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, c(0.5));
  Value y = b.create<arith::SelectOp>(loc, reflect, b.create<arith::SubFOp>(loc, c(1), x), x);
  Value steps = c(0);
  for (int k = 0; k < 6; ++k) {
    Value inv = b.create<arith::DivFOp>(loc, c(1), b.create<arith::AddFOp>(loc, y, c(k)));
    steps = b.create<arith::AddFOp>(loc, steps, order == 0 ? inv : Value(b.create<arith::MulFOp>(loc, inv, inv)));
  }
  Value w = b.create<arith::AddFOp>(loc, y, c(6));
  Value r = b.create<arith::DivFOp>(loc, c(1), w), r2 = b.create<arith::MulFOp>(loc, r, r);
  // Horner in 1/w^2 of the series' tail.
  auto horner = [&](std::initializer_list<double> coefficients) {
    Value acc = c(0);
    for (double k : coefficients) acc = b.create<arith::AddFOp>(loc, b.create<arith::MulFOp>(loc, acc, r2), c(k));
    return acc;
  };
  Value series, out;
  if (order == 0) {
    // log w - 1/(2w) - 1/(12w^2) + 1/(120w^4) - 1/(252w^6) + 1/(240w^8) - 1/(132w^10) + 691/(32760w^12)
    Value tail = b.create<arith::MulFOp>(
        loc, r2, horner({691.0 / 32760, -1.0 / 132, 1.0 / 240, -1.0 / 252, 1.0 / 120, -1.0 / 12}));
    series = b.create<arith::AddFOp>(loc, b.create<arith::SubFOp>(loc, b.create<math::LogOp>(loc, w),
                                                                  b.create<arith::MulFOp>(loc, r, c(0.5))), tail);
    Value psi = b.create<arith::SubFOp>(loc, series, steps);
    Value piX = b.create<arith::MulFOp>(loc, x, c(M_PI));
    Value cot = b.create<arith::DivFOp>(loc, b.create<math::CosOp>(loc, piX), b.create<math::SinOp>(loc, piX));
    out = b.create<arith::SelectOp>(loc, reflect, b.create<arith::SubFOp>(loc, psi, b.create<arith::MulFOp>(loc, cot, c(M_PI))), psi);
    Value atZero = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, x, c(0));
    out = b.create<arith::SelectOp>(loc, isGammaPole(b, loc, x), b.create<arith::SelectOp>(loc, atZero, c(-INFINITY), c(NAN)), out);
  } else {
    // 1/w + 1/(2w^2) + 1/(6w^3) - 1/(30w^5) + 1/(42w^7) - 1/(30w^9) + 5/(66w^11) - 691/(2730w^13)
    Value odd = b.create<arith::MulFOp>(loc, b.create<arith::MulFOp>(loc, r, r2),
                                        horner({-691.0 / 2730, 5.0 / 66, -1.0 / 30, 1.0 / 42, -1.0 / 30, 1.0 / 6}));
    series = b.create<arith::AddFOp>(loc, b.create<arith::AddFOp>(loc, r, b.create<arith::MulFOp>(loc, r2, c(0.5))), odd);
    Value psi1 = b.create<arith::AddFOp>(loc, series, steps);
    Value s = b.create<math::SinOp>(loc, b.create<arith::MulFOp>(loc, x, c(M_PI)));
    Value pi2OverSin2 = b.create<arith::DivFOp>(loc, c(M_PI * M_PI), b.create<arith::MulFOp>(loc, s, s));
    out = b.create<arith::SelectOp>(loc, reflect, b.create<arith::SubFOp>(loc, pi2OverSin2, psi1), psi1);
    out = b.create<arith::SelectOp>(loc, isGammaPole(b, loc, x), c(INFINITY), out);
  }
  return out;
}

Value scalarUnary(OpBuilder &b, Location loc, OpCode code, Value x, Type resultType) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (code) {
  case OpCode::Neg:
    return isFloat ? Value(b.create<arith::NegFOp>(loc, x))
                   : Value(b.create<arith::SubIOp>(loc, constantOf(b, loc, x.getType(), 0), x));
  case OpCode::Exp: return b.create<math::ExpOp>(loc, x);
  case OpCode::Log: return b.create<math::LogOp>(loc, x);
  case OpCode::Sqrt: return b.create<math::SqrtOp>(loc, x);
  case OpCode::Tanh: return b.create<math::TanhOp>(loc, x);
  case OpCode::Relu: {
    Value zero = constantOf(b, loc, x.getType(), 0);
    return isFloat ? Value(b.create<arith::MaximumFOp>(loc, x, zero))
                   : Value(b.create<arith::MaxSIOp>(loc, x, zero));
  }
  case OpCode::Sigmoid: { // 1 / (1 + e^-x)
    Value one = constantOf(b, loc, x.getType(), 1);
    Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, x));
    return b.create<arith::DivFOp>(loc, one, b.create<arith::AddFOp>(loc, one, e));
  }
  case OpCode::Cast: return convertScalar(b, loc, x, resultType);
  case OpCode::BitwiseNot: return b.create<arith::XOrIOp>(loc, x, constantOf(b, loc, x.getType(), -1));
  case OpCode::Abs: // integers: max(x, 0 - x), not math.absi, which the NVVM lowering has no pattern for
    if (isFloat) return b.create<math::AbsFOp>(loc, x);
    return b.create<arith::MaxSIOp>(loc, x, b.create<arith::SubIOp>(loc, constantOf(b, loc, x.getType(), 0), x));
  case OpCode::Log1p: { // Goldberg's trick: log(u) * x / (u - 1) with u = 1 + x, exact when u == 1
    Value one = constantOf(b, loc, x.getType(), 1);
    Value u = b.create<arith::AddFOp>(loc, one, x);
    Value um1 = b.create<arith::SubFOp>(loc, u, one);
    Value ratio = b.create<arith::DivFOp>(loc, b.create<arith::MulFOp>(loc, b.create<math::LogOp>(loc, u), x), um1);
    Value exact = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, um1, constantOf(b, loc, x.getType(), 0));
    Value inf = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, u, constantOf(b, loc, x.getType(), INFINITY));
    return b.create<arith::SelectOp>(loc, b.create<arith::OrIOp>(loc, exact, inf),
                                     b.create<arith::SelectOp>(loc, exact, x, u), ratio);
  }
  case OpCode::Sin: case OpCode::Cos: return sinOrCos(b, loc, code == OpCode::Sin, x);
  case OpCode::Rsqrt: return b.create<math::RsqrtOp>(loc, x);
  case OpCode::Erf: return b.create<math::ErfOp>(loc, x);
  case OpCode::Gelu: { // x * (1 + erf(x / sqrt 2)) / 2
    Value e = b.create<math::ErfOp>(loc, b.create<arith::MulFOp>(loc, x, constantOf(b, loc, x.getType(), M_SQRT1_2)));
    Value half = b.create<arith::MulFOp>(loc, x, constantOf(b, loc, x.getType(), 0.5));
    return b.create<arith::MulFOp>(loc, half, b.create<arith::AddFOp>(loc, constantOf(b, loc, x.getType(), 1), e));
  }
  case OpCode::Floor: return isFloat ? Value(b.create<math::FloorOp>(loc, x)) : x;
  // In f64 (libm or libdevice), rounded once: MLIR 19's f32 polynomials for these were off by
  // up to 0.04 (asin near 1) and gave NaN for atan2 on an axis. asin and acos are atan2 of
  // x and sqrt((1 - x)(1 + x)) (NaN outside [-1, 1]): MLIR 19 lowers math.asin and math.acos
  // to no GPU function.
  case OpCode::Atan: return inF64(b, loc, x, [&](Value v) { return b.create<math::AtanOp>(loc, v).getResult(); });
  case OpCode::Asin:
  case OpCode::Acos:
    return inF64(b, loc, x, [&](Value v) {
      Value one = constantOf(b, loc, v.getType(), 1);
      Value c = b.create<math::SqrtOp>(loc, b.create<arith::MulFOp>(loc, b.create<arith::SubFOp>(loc, one, v),
                                                                    b.create<arith::AddFOp>(loc, one, v)));
      return code == OpCode::Asin ? b.create<math::Atan2Op>(loc, v, c).getResult()
                                  : b.create<math::Atan2Op>(loc, c, v).getResult();
    });
  case OpCode::Lgamma: return inF64(b, loc, x, [&](Value v) { return lgammaF64(b, loc, v); });
  case OpCode::Digamma: return inF64(b, loc, x, [&](Value v) { return polygammaF64(b, loc, v, 0); });
  case OpCode::Trigamma: return inF64(b, loc, x, [&](Value v) { return polygammaF64(b, loc, v, 1); });
  default: return {};
  }
}

/// The run-time checks the op being lowered emits (the pass' `checks` option and the op's code):
/// set by GTOpToLinalg around each op's lowering and read by the helpers many lowerings share
/// (indices, integer quotients), so that they need not pass it along.
struct CheckContext {
  bool enabled = false;
  OpCode op = OpCode::Free;
};
thread_local CheckContext currentChecks;

/// When `failed` holds, calls gt_runtime_error(op, check, value, bound) (see
/// kRuntimeErrorFunction); nothing without the `checks` option.
void reportIf(OpBuilder &b, Location loc, Value failed, RuntimeCheck check, Value value, int64_t bound) {
  if (!currentChecks.enabled) return;
  Type i64 = b.getI64Type();
  SmallVector<Value> args = {b.create<arith::ConstantIntOp>(loc, int64_t(currentChecks.op), 64),
                             b.create<arith::ConstantIntOp>(loc, int64_t(check), 64), convertScalar(b, loc, value, i64),
                             b.create<arith::ConstantIntOp>(loc, bound, 64)};
  b.create<scf::IfOp>(loc, failed, [&](OpBuilder &nb, Location nloc) {
    nb.create<func::CallOp>(nloc, kRuntimeErrorFunction, TypeRange{}, args);
    nb.create<scf::YieldOp>(nloc);
  });
}

/// Integer floor division and Python remainder that never trap: a divisor of 0 gives 0 (and is
/// reported with the `checks` option) and INT_MIN // -1 wraps (x86's idiv would kill the
/// worker on either).
Value integerDivision(OpBuilder &b, Location loc, OpCode code, Value x, Value y) {
  Type t = x.getType();
  Value zero = constantOf(b, loc, t, 0), one = constantOf(b, loc, t, 1), minusOne = constantOf(b, loc, t, -1);
  Value byZero = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, y, zero);
  reportIf(b, loc, byZero, RuntimeCheck::DivisionByZero, x, 0);
  Value byMinusOne = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, y, minusOne);
  Value safe = b.create<arith::SelectOp>(loc, b.create<arith::OrIOp>(loc, byZero, byMinusOne), one, y);
  // C division truncates; floor differs when the remainder is nonzero and its sign is not y's
  Value q = b.create<arith::DivSIOp>(loc, x, safe);
  Value rem = b.create<arith::RemSIOp>(loc, x, safe);
  Value signsDiffer = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, b.create<arith::XOrIOp>(loc, rem, safe), zero);
  Value fix = b.create<arith::AndIOp>(loc, signsDiffer, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, rem, zero));
  Value r;
  if (code == OpCode::FloorDivide) {
    r = b.create<arith::SelectOp>(loc, fix, b.create<arith::SubIOp>(loc, q, one), q);
    r = b.create<arith::SelectOp>(loc, byMinusOne, b.create<arith::SubIOp>(loc, zero, x), r);
  } else { // remainder with the divisor's sign
    r = b.create<arith::SelectOp>(loc, fix, b.create<arith::AddIOp>(loc, rem, safe), rem);
    r = b.create<arith::SelectOp>(loc, byMinusOne, zero, r);
  }
  return b.create<arith::SelectOp>(loc, byZero, zero, r);
}

/// The unsigned form of an ordering predicate (sgt -> ugt ...); eq and ne as they are.
arith::CmpIPredicate unsignedOf(arith::CmpIPredicate p) {
  using IP = arith::CmpIPredicate;
  switch (p) {
  case IP::sgt: return IP::ugt;
  case IP::slt: return IP::ult;
  case IP::sge: return IP::uge;
  case IP::sle: return IP::ule;
  default: return p;
  }
}

/// x and y already have the computation type.
Value scalarBinary(OpBuilder &b, Location loc, OpCode code, Value x, Value y) {
  bool f = isa<FloatType>(x.getType());
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;
  auto cmp = [&](FP fp, IP ip) -> Value {
    if (f) return b.create<arith::CmpFOp>(loc, fp, x, y);
    if (x.getType().isInteger(1)) ip = unsignedOf(ip); // bools: false < true (as signed 1-bit ints, true is -1)
    return b.create<arith::CmpIOp>(loc, ip, x, y);
  };
  switch (code) {
  case OpCode::Add: return f ? Value(b.create<arith::AddFOp>(loc, x, y)) : Value(b.create<arith::AddIOp>(loc, x, y));
  case OpCode::Sub: return f ? Value(b.create<arith::SubFOp>(loc, x, y)) : Value(b.create<arith::SubIOp>(loc, x, y));
  case OpCode::Mul: return f ? Value(b.create<arith::MulFOp>(loc, x, y)) : Value(b.create<arith::MulIOp>(loc, x, y));
  case OpCode::Div: return b.create<arith::DivFOp>(loc, x, y);
  case OpCode::Pow: return b.create<math::PowFOp>(loc, x, y);
  case OpCode::Atan2: { // in f64, as atan above
    Type t = x.getType(), f64 = b.getF64Type();
    auto wide = [&](Value v) { return t == f64 ? v : b.create<arith::ExtFOp>(loc, f64, v).getResult(); };
    Value r = b.create<math::Atan2Op>(loc, wide(x), wide(y));
    return t == f64 ? r : b.create<arith::TruncFOp>(loc, t, r).getResult();
  }
  case OpCode::Maximum:
    if (f) return b.create<arith::MaximumFOp>(loc, x, y);
    if (x.getType().isInteger(1)) return b.create<arith::OrIOp>(loc, x, y);
    return b.create<arith::MaxSIOp>(loc, x, y);
  case OpCode::Minimum:
    if (f) return b.create<arith::MinimumFOp>(loc, x, y);
    if (x.getType().isInteger(1)) return b.create<arith::AndIOp>(loc, x, y);
    return b.create<arith::MinSIOp>(loc, x, y);
  case OpCode::FloorDivide: case OpCode::Remainder: {
    if (!f) return integerDivision(b, loc, code, x, y);
    if (code == OpCode::FloorDivide) return b.create<math::FloorOp>(loc, b.create<arith::DivFOp>(loc, x, y));
    // x - floor(x / y) * y: y's sign, as Python and PyTorch (arith.remf has no NVVM lowering)
    Value q = b.create<math::FloorOp>(loc, b.create<arith::DivFOp>(loc, x, y));
    return b.create<arith::SubFOp>(loc, x, b.create<arith::MulFOp>(loc, q, y));
  }
  case OpCode::BitwiseAnd: return b.create<arith::AndIOp>(loc, x, y);
  case OpCode::BitwiseOr: return b.create<arith::OrIOp>(loc, x, y);
  case OpCode::BitwiseXor: return b.create<arith::XOrIOp>(loc, x, y);
  case OpCode::Gt: return cmp(FP::OGT, IP::sgt);
  case OpCode::Lt: return cmp(FP::OLT, IP::slt);
  case OpCode::Ge: return cmp(FP::OGE, IP::sge);
  case OpCode::Le: return cmp(FP::OLE, IP::sle);
  case OpCode::Eq: return cmp(FP::OEQ, IP::eq);
  case OpCode::Ne: return cmp(FP::UNE, IP::ne);
  default: return {};
  }
}

// ---------------------------------------------------------------- tensors

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type) {
  return b.create<tensor::EmptyOp>(loc, type.getShape(), type.getElementType());
}

/// (d0, ..., d{numDims-1}) -> (d0, ..., d{numResults-1}): the leading loops, e.g. the output
/// map of a generic whose last loop is a reduction. Unlike AffineMap::getMajorSubMap, zero
/// results give `(d0) -> ()` (a 0-d operand), not a null map.
AffineMap leadingDims(OpBuilder &b, int64_t numDims, int64_t numResults) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < numResults; ++d) exprs.push_back(b.getAffineDimExpr(d));
  return AffineMap::get(numDims, 0, exprs, b.getContext());
}

/// An elementwise linalg.generic producing `resultType`; each input broadcasts to it
/// (missing leading axes and size-1 axes read index 0).
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs, BodyFn body) {
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps;
  for (Value in : inputs) {
    auto t = cast<RankedTensorType>(in.getType());
    SmallVector<AffineExpr> exprs;
    for (int64_t j = 0; j < t.getRank(); ++j) {
      int64_t axis = rank - t.getRank() + j;
      bool broadcast = t.getDimSize(j) == 1 && resultType.getDimSize(axis) != 1;
      exprs.push_back(broadcast ? b.getAffineConstantExpr(0) : b.getAffineDimExpr(axis));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  // A size-generic worker kernel (`?` sizes): each dynamic result size is that of an input
  // with a dynamic size on the same axis (a broadcast axis is a static 1 in the input).
  SmallVector<Value> sizes;
  for (int64_t axis = 0; axis < rank; ++axis) {
    if (!resultType.isDynamicDim(axis)) continue;
    for (Value in : inputs) {
      auto t = cast<RankedTensorType>(in.getType());
      int64_t j = axis - (rank - t.getRank());
      if (j >= 0 && t.isDynamicDim(j)) {
        sizes.push_back(b.create<tensor::DimOp>(loc, in, j));
        break;
      }
    }
  }
  if (int64_t(sizes.size()) != resultType.getNumDynamicDims()) return {}; // no input gives a size
  Value init = b.create<tensor::EmptyOp>(loc, resultType, sizes);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        nb.create<linalg::YieldOp>(nloc, body(nb, nloc, args.drop_back()));
      });
  return generic.getResult(0);
}

/// `type` filled with `scalar`; `sizes` are its dynamic sizes, in order (none for a static type).
Value fill(OpBuilder &b, Location loc, RankedTensorType type, Value scalar, ValueRange sizes = {}) {
  Value empty = sizes.empty() ? emptyLike(b, loc, type) : Value(b.create<tensor::EmptyOp>(loc, type, sizes));
  return b.create<linalg::FillOp>(loc, ValueRange{scalar}, ValueRange{empty}).getResult(0);
}

/// Same elements, new static shape (row-major).
Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (v.getType() == type) return v;
  auto shapeType = RankedTensorType::get({type.getRank()}, b.getI64Type());
  Value shape = b.create<arith::ConstantOp>(loc, DenseIntElementsAttr::get(shapeType, type.getShape()));
  return b.create<tensor::ReshapeOp>(loc, type, v, shape);
}

/// The identity of max (`lowest`) or min: -inf / +inf, or the integer type's extreme (for
/// bool, false / true: bools order false < true, not as signed 1-bit integers).
Value lowestOf(OpBuilder &b, Location loc, Type elem, bool lowest) {
  if (auto ft = dyn_cast<FloatType>(elem))
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(ft, (lowest ? -1 : 1) * std::numeric_limits<double>::infinity()));
  unsigned width = elem.getIntOrFloatBitWidth();
  if (width == 1) return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(elem, lowest ? 0 : 1));
  return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(elem, lowest ? APInt::getSignedMinValue(width)
                                                                        : APInt::getSignedMaxValue(width)));
}

/// argmax/argmin along `axis`: one generic with outputs (best value, its index); a later
/// index only wins on a strictly better value, so ties keep the first (NumPy, PyTorch). A NaN
/// beats every number, the first NaN every later one: the index of the first NaN, as
/// PyTorch's (max(x, dim) then returns NaN with its index, as amax does).
Value lowerArgExtremum(OpBuilder &b, Location loc, OpCode code, Value input, int64_t axis, RankedTensorType resultType) {
  auto inType = cast<RankedTensorType>(input.getType());
  Type elem = inType.getElementType();
  bool isMax = code == OpCode::Argmax;
  SmallVector<int64_t> reducedShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iters;
  for (int64_t i = 0; i < inType.getRank(); ++i) {
    iters.push_back(i == axis ? utils::IteratorType::reduction : utils::IteratorType::parallel);
    if (i != axis) {
      reducedShape.push_back(inType.getDimSize(i));
      outExprs.push_back(b.getAffineDimExpr(i));
    }
  }
  elem = computeType(elem);
  auto valueType = RankedTensorType::get(reducedShape, elem);
  auto indexType = RankedTensorType::get(reducedShape, b.getI64Type());
  AffineMap outMap = AffineMap::get(inType.getRank(), 0, outExprs, b.getContext());
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(inType.getRank()), outMap, outMap};
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{valueType, indexType}, ValueRange{input},
      ValueRange{fill(b, loc, valueType, lowestOf(b, loc, elem, isMax)), fill(b, loc, indexType, constantOf(b, loc, b.getI64Type(), 0))},
      maps, iters, [&](OpBuilder &nb, Location nloc, ValueRange a) {
        Value x = convertScalar(nb, nloc, a[0], elem), best = a[1], bestIndex = a[2];
        Value i = nb.create<arith::IndexCastOp>(nloc, nb.getI64Type(), nb.create<linalg::IndexOp>(nloc, axis));
        bool f = isa<FloatType>(elem);
        bool boolean = elem.isInteger(1); // (false < true: unsigned)
        auto intPredicate = isMax ? (boolean ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
                                  : (boolean ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt);
        Value better = f ? Value(nb.create<arith::CmpFOp>(nloc, isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, x, best))
                         : Value(nb.create<arith::CmpIOp>(nloc, intPredicate, x, best));
        Value same = f ? Value(nb.create<arith::CmpFOp>(nloc, arith::CmpFPredicate::OEQ, x, best))
                       : Value(nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::eq, x, best));
        Value earlier = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::slt, i, bestIndex);
        Value take = nb.create<arith::OrIOp>(nloc, better, nb.create<arith::AndIOp>(nloc, same, earlier));
        if (f) { // x NaN: taken over a number, or over a later NaN
          Value xNaN = nb.create<arith::CmpFOp>(nloc, arith::CmpFPredicate::UNO, x, x);
          Value bestNumber = nb.create<arith::CmpFOp>(nloc, arith::CmpFPredicate::ORD, best, best);
          Value nanWins = nb.create<arith::AndIOp>(nloc, xNaN, nb.create<arith::OrIOp>(nloc, bestNumber, earlier));
          take = nb.create<arith::OrIOp>(nloc, take, nanWins);
        }
        nb.create<linalg::YieldOp>(nloc, ValueRange{nb.create<arith::SelectOp>(nloc, take, x, best),
                                                    nb.create<arith::SelectOp>(nloc, take, i, bestIndex)});
      });
  return reshapeTo(b, loc, generic.getResult(1), resultType); // keepdims
}

Value lowerReduction(OpBuilder &b, Location loc, OpCode code, Value input, ArrayRef<int64_t> axes,
                     RankedTensorType resultType) {
  auto inType = cast<RankedTensorType>(input.getType());
  Type elem = computeType(resultType.getElementType()); // the accumulator: f32 for f16/bf16
  SmallVector<int64_t> reducedShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iters;
  int64_t count = 1;
  // A size-generic worker kernel (`?` sizes): the kept sizes, the kept shape for keepdims and
  // the count of a mean come from the input at run time.
  SmallVector<Value> keptSizes, keptShape; // keptShape: i64, one per input axis (keepdims)
  Value dynamicCount;                      // index: the product of the dynamic reduced sizes
  auto dim = [&](int64_t i) { return b.create<tensor::DimOp>(loc, input, i).getResult(); };
  auto i64 = [&](Value index) { return b.create<arith::IndexCastOp>(loc, b.getI64Type(), index).getResult(); };
  for (int64_t i = 0; i < inType.getRank(); ++i) {
    if (llvm::is_contained(axes, i)) {
      iters.push_back(utils::IteratorType::reduction);
      if (!inType.isDynamicDim(i)) count *= inType.getDimSize(i);
      else dynamicCount = dynamicCount ? b.create<arith::MulIOp>(loc, dynamicCount, dim(i)).getResult() : dim(i);
      keptShape.push_back(b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(1)));
    } else {
      iters.push_back(utils::IteratorType::parallel);
      reducedShape.push_back(inType.getDimSize(i));
      outExprs.push_back(b.getAffineDimExpr(i));
      if (inType.isDynamicDim(i)) keptSizes.push_back(dim(i));
      keptShape.push_back(inType.isDynamicDim(i) ? i64(dim(i))
                                                 : b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(inType.getDimSize(i))).getResult());
    }
  }
  auto reducedType = RankedTensorType::get(reducedShape, elem);
  Value init = code == OpCode::Max ? lowestOf(b, loc, elem, true)
               : code == OpCode::Min ? lowestOf(b, loc, elem, false)
                                     : constantOf(b, loc, elem, code == OpCode::Prod ? 1 : 0);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(inType.getRank()),
                                 AffineMap::get(inType.getRank(), 0, outExprs, b.getContext())};
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{reducedType}, ValueRange{input}, ValueRange{fill(b, loc, reducedType, init, keptSizes)}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value x = convertScalar(nb, nloc, args[0], elem);
        OpCode combine = code == OpCode::Max    ? OpCode::Maximum
                         : code == OpCode::Min  ? OpCode::Minimum
                         : code == OpCode::Prod ? OpCode::Mul
                                                : OpCode::Add;
        Value r = scalarBinary(nb, nloc, combine, x, args[1]);
        nb.create<linalg::YieldOp>(nloc, r);
      });
  Value result = generic.getResult(0);
  if (code == OpCode::Mean) {
    Value n = constantOf(b, loc, elem, double(count));
    if (dynamicCount) // count * the dynamic sizes, as a float
      n = b.create<arith::MulFOp>(loc, n, b.create<arith::SIToFPOp>(loc, elem, i64(dynamicCount)));
    result = buildElementwise(b, loc, reducedType, {result}, [&](OpBuilder &nb, Location nloc, ValueRange a) {
      return nb.create<arith::DivFOp>(nloc, a[0], n).getResult();
    });
  }
  if (elem != resultType.getElementType()) { // round the f32 accumulator once
    auto roundedType = RankedTensorType::get(reducedShape, resultType.getElementType());
    result = buildElementwise(b, loc, roundedType, {result}, [&](OpBuilder &nb, Location nloc, ValueRange a) {
      return convertScalar(nb, nloc, a[0], roundedType.getElementType());
    });
  }
  if (!resultType.hasStaticShape() && result.getType() != resultType) { // keepdims with `?` sizes
    auto shapeType = RankedTensorType::get({int64_t(keptShape.size())}, b.getI64Type());
    Value shape = b.create<tensor::FromElementsOp>(loc, shapeType, keptShape);
    return b.create<tensor::ReshapeOp>(loc, resultType, result, shape);
  }
  return reshapeTo(b, loc, result, resultType); // keepdims
}

/// (..., m, k) @ (..., k, n): loops are (batch..., m?, n?, k); 1-D operands drop m or n.
Value lowerMatmul(OpBuilder &b, Location loc, Value lhs, Value rhs, RankedTensorType resultType) {
  auto ta = cast<RankedTensorType>(lhs.getType()), tb = cast<RankedTensorType>(rhs.getType());
  bool vecA = ta.getRank() == 1, vecB = tb.getRank() == 1;
  int64_t rank = resultType.getRank();
  int64_t nBatch = rank - (vecA ? 0 : 1) - (vecB ? 0 : 1);
  int64_t mDim = nBatch, nDim = nBatch + (vecA ? 0 : 1), kDim = rank;
  auto batchExprs = [&](RankedTensorType t) {
    SmallVector<AffineExpr> e;
    int64_t tb = t.getRank() - 2;
    for (int64_t j = 0; j < tb; ++j) {
      int64_t axis = nBatch - tb + j;
      bool broadcast = t.getDimSize(j) == 1 && resultType.getDimSize(axis) != 1;
      e.push_back(broadcast ? b.getAffineConstantExpr(0) : b.getAffineDimExpr(axis));
    }
    return e;
  };
  SmallVector<AffineExpr> ea = vecA ? SmallVector<AffineExpr>{} : batchExprs(ta);
  if (!vecA) ea.push_back(b.getAffineDimExpr(mDim));
  ea.push_back(b.getAffineDimExpr(kDim));
  SmallVector<AffineExpr> eb = vecB ? SmallVector<AffineExpr>{} : batchExprs(tb);
  eb.push_back(b.getAffineDimExpr(kDim));
  if (!vecB) eb.push_back(b.getAffineDimExpr(nDim));
  SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, ea, b.getContext()),
                                 AffineMap::get(rank + 1, 0, eb, b.getContext()),
                                 leadingDims(b, rank + 1, rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Type acc = computeType(resultType.getElementType()); // f16/bf16 products are summed in f32
  auto accType = RankedTensorType::get(resultType.getShape(), acc);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{accType}, ValueRange{lhs, rhs}, ValueRange{fill(b, loc, accType, constantOf(b, loc, acc, 0))},
      maps, iters, [&](OpBuilder &nb, Location nloc, ValueRange a) {
        Value p = nb.create<arith::MulFOp>(nloc, convertScalar(nb, nloc, a[0], acc), convertScalar(nb, nloc, a[1], acc));
        nb.create<linalg::YieldOp>(nloc, nb.create<arith::AddFOp>(nloc, a[2], p).getResult());
      });
  if (acc == resultType.getElementType()) return generic.getResult(0);
  return buildElementwise(b, loc, resultType, {generic.getResult(0)}, [&](OpBuilder &nb, Location nloc, ValueRange a) {
    return convertScalar(nb, nloc, a[0], resultType.getElementType());
  });
}

/// splitmix64 (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
Value splitmix64(OpBuilder &b, Location loc, Value z) {
  auto c = [&](uint64_t v) { return b.create<arith::ConstantOp>(loc, b.getI64IntegerAttr(int64_t(v))); };
  auto xorShift = [&](Value x, uint64_t s) {
    return b.create<arith::XOrIOp>(loc, x, b.create<arith::ShRUIOp>(loc, x, c(s)));
  };
  z = b.create<arith::AddIOp>(loc, z, c(0x9E3779B97F4A7C15ull));
  z = b.create<arith::MulIOp>(loc, xorShift(z, 30), c(0xBF58476D1CE4E5B9ull));
  z = b.create<arith::MulIOp>(loc, xorShift(z, 27), c(0x94D049BB133111EBull));
  return xorShift(z, 31);
}

/// randn: element i = sqrt(-2 ln u1) cos(2 pi u2) (Box & Muller 1958), (u1, u2) from
/// splitmix64(seed', 2i) and (2i + 1). rand: element i = the top mantissa-many bits of
/// splitmix64(seed', 2i) as a fraction, so it lies in [0, 1) even after rounding.
Value lowerRandom(OpBuilder &b, Location loc, OpCode code, Value seed, RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  Value mixedSeed = splitmix64(b, loc, seed);
  Type elem = resultType.getElementType();
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{}, ValueRange{emptyLike(b, loc, resultType)}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange) {
        auto c = [&](int64_t v) { return nb.create<arith::ConstantOp>(nloc, nb.getI64IntegerAttr(v)); };
        Value linear = c(0);
        for (int64_t d = 0; d < rank; ++d) { // row-major linear index
          Value idx = nb.create<arith::IndexCastOp>(nloc, nb.getI64Type(), nb.create<linalg::IndexOp>(nloc, d));
          linear = nb.create<arith::AddIOp>(nloc, nb.create<arith::MulIOp>(nloc, linear, c(resultType.getDimSize(d))), idx);
        }
        Value ctr = nb.create<arith::AddIOp>(nloc, mixedSeed, nb.create<arith::MulIOp>(nloc, linear, c(2)));
        auto f64 = nb.getF64Type();
        auto uniform = [&](Value bits, int mantissa, double offset) { // [0, 1) + offset * 2^-mantissa
          Value top = nb.create<arith::UIToFPOp>(nloc, f64, nb.create<arith::ShRUIOp>(nloc, bits, c(64 - mantissa)));
          Value shifted = nb.create<arith::AddFOp>(nloc, top, constantOf(nb, nloc, f64, offset));
          return nb.create<arith::MulFOp>(nloc, shifted, constantOf(nb, nloc, f64, std::ldexp(1.0, -mantissa)));
        };
        Value z;
        if (code == OpCode::Rand) {
          int mantissa = cast<FloatType>(elem).getFPMantissaWidth();
          z = uniform(splitmix64(nb, nloc, ctr), mantissa, 0.0);
        } else {
          Value u1 = uniform(splitmix64(nb, nloc, ctr), 53, 0.5); // in (0, 1): log is finite
          Value u2 = uniform(splitmix64(nb, nloc, nb.create<arith::AddIOp>(nloc, ctr, c(1))), 53, 0.0);
          Value r = nb.create<math::SqrtOp>(nloc, nb.create<arith::MulFOp>(nloc, constantOf(nb, nloc, f64, -2.0),
                                                                           nb.create<math::LogOp>(nloc, u1)));
          Value theta = nb.create<arith::MulFOp>(nloc, u2, constantOf(nb, nloc, f64, 2 * M_PI));
          z = nb.create<arith::MulFOp>(nloc, r, nb.create<math::CosOp>(nloc, theta));
        }
        nb.create<linalg::YieldOp>(nloc, convertScalar(nb, nloc, z, elem));
      });
  return generic.getResult(0);
}

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  SmallVector<OpFoldResult> out;
  for (int64_t v : values) out.push_back(b.getIndexAttr(v));
  return out;
}

/// An index value from a tensor element, clamped into [0, size) so that no index can read
/// outside the tensor; one outside is reported with the `checks` option.
Value clampedIndex(OpBuilder &b, Location loc, Value raw, int64_t size) {
  Value i = convertScalar(b, loc, raw, b.getI64Type());
  if (currentChecks.enabled) {
    Value low = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, i, constantOf(b, loc, b.getI64Type(), 0));
    Value high = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sge, i, constantOf(b, loc, b.getI64Type(), double(size)));
    reportIf(b, loc, b.create<arith::OrIOp>(loc, low, high), RuntimeCheck::IndexOutOfRange, i, size);
  }
  i = b.create<arith::MaxSIOp>(loc, i, constantOf(b, loc, b.getI64Type(), 0));
  i = b.create<arith::MinSIOp>(loc, i, constantOf(b, loc, b.getI64Type(), std::max<int64_t>(size - 1, 0)));
  return b.create<arith::IndexCastOp>(loc, b.getIndexType(), i);
}

/// `indices` (a tensor of any integer type) as i64, each checked against [0, size) (`check`,
/// reported with the index and `size`) and clamped into it, by a generic of its own: an op
/// that reads each index for many elements (index_select, one_hot) then checks it once, not
/// once per element read, and its own loops hold no call (gt-fuse-elementwise keeps a producer
/// with a call out of a consumer that broadcasts it), so they vectorize. Only with checks on.
Value checkedIndices(OpBuilder &b, Location loc, Value indices, int64_t size, RuntimeCheck check) {
  auto type = cast<RankedTensorType>(indices.getType());
  auto out = RankedTensorType::get(type.getShape(), b.getI64Type());
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.isDynamicDim(d)) dynamicSizes.push_back(b.create<tensor::DimOp>(loc, indices, d));
  Value init = b.create<tensor::EmptyOp>(loc, out, dynamicSizes);
  SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iters(type.getRank(), utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{out}, ValueRange{indices}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange a) {
        Type i64 = nb.getI64Type();
        Value i = convertScalar(nb, nloc, a[0], i64);
        Value low = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::slt, i, constantOf(nb, nloc, i64, 0));
        Value high = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::sge, i, constantOf(nb, nloc, i64, double(size)));
        reportIf(nb, nloc, nb.create<arith::OrIOp>(nloc, low, high), check, i, size);
        i = nb.create<arith::MaxSIOp>(nloc, i, constantOf(nb, nloc, i64, 0));
        i = nb.create<arith::MinSIOp>(nloc, i, constantOf(nb, nloc, i64, std::max<int64_t>(size - 1, 0)));
        nb.create<linalg::YieldOp>(nloc, i);
      });
  return generic.getResult(0);
}

/// index_select(x, idx) (`perAxis` false: idx is 1-D, read at the axis' loop index) or
/// gather(x, idx) (`perAxis` true: idx has the result's shape): result[..., k, ...] =
/// x[..., idx, ...].
Value lowerGather(OpBuilder &b, Location loc, Value input, Value indices, int64_t axis, bool perAxis,
                  RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  auto inType = cast<RankedTensorType>(input.getType());
  AffineMap idxMap = perAxis ? b.getMultiDimIdentityMap(rank)
                             : AffineMap::get(rank, 0, {b.getAffineDimExpr(axis)}, b.getContext());
  SmallVector<AffineMap> maps = {idxMap, b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  // A size-generic eager index_select (the executor's sizesAtRunTime) has `?` indices: the
  // result's axis is their count.
  SmallVector<Value> dynamicSizes;
  for (int64_t d = 0; d < rank; ++d)
    if (resultType.isDynamicDim(d))
      dynamicSizes.push_back(b.create<tensor::DimOp>(loc, perAxis || d == axis ? indices : input, perAxis ? d : d == axis ? 0 : d));
  Value init = dynamicSizes.empty() ? emptyLike(b, loc, resultType)
                                    : Value(b.create<tensor::EmptyOp>(loc, resultType, dynamicSizes));
  // index_select reads each index for a whole slice: checked once each, beforehand.
  bool prechecked = !perAxis && currentChecks.enabled && !inType.isDynamicDim(axis);
  if (prechecked) indices = checkedIndices(b, loc, indices, inType.getDimSize(axis), RuntimeCheck::IndexOutOfRange);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{indices}, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange a) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d)
          at.push_back(d != axis   ? Value(nb.create<linalg::IndexOp>(nloc, d))
                       : prechecked ? Value(nb.create<arith::IndexCastOp>(nloc, nb.getIndexType(), a[0]))
                                    : clampedIndex(nb, nloc, a[0], inType.getDimSize(axis)));
        nb.create<linalg::YieldOp>(nloc, nb.create<tensor::ExtractOp>(nloc, input, at).getResult());
      });
  return generic.getResult(0);
}

/// index_add(idx, src) / scatter_add(idx, src): result[..., v, ...] = sum over k of
/// src[..., k, ...] where idx[k] (or idx[..., k, ...]) == v. Loops: the result's axes plus k
/// (a reduction), so every output element is written by one loop nest without atomics.
Value lowerScatterAdd(OpBuilder &b, Location loc, Value indices, Value source, int64_t axis, bool perAxis,
                      RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  Type elem = resultType.getElementType();
  SmallVector<AffineExpr> srcExprs;
  for (int64_t d = 0; d < rank; ++d) srcExprs.push_back(b.getAffineDimExpr(d == axis ? rank : d));
  AffineMap srcMap = AffineMap::get(rank + 1, 0, srcExprs, b.getContext());
  AffineMap idxMap = perAxis ? srcMap : AffineMap::get(rank + 1, 0, {b.getAffineDimExpr(rank)}, b.getContext());
  SmallVector<AffineMap> maps = {idxMap, srcMap, leadingDims(b, rank + 1, rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value zero = constantOf(b, loc, elem, 0);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{indices, source}, ValueRange{fill(b, loc, resultType, zero)}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange a) {
        Value v = nb.create<linalg::IndexOp>(nloc, axis);
        Value hit = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::eq,
                                             clampedIndex(nb, nloc, a[0], resultType.getDimSize(axis)), v);
        Type acc = computeType(elem);
        Value term = nb.create<arith::SelectOp>(nloc, hit, convertScalar(nb, nloc, a[1], acc), constantOf(nb, nloc, acc, 0));
        Value sum = scalarBinary(nb, nloc, OpCode::Add, convertScalar(nb, nloc, a[2], acc), term);
        nb.create<linalg::YieldOp>(nloc, convertScalar(nb, nloc, sum, elem));
      });
  return generic.getResult(0);
}

/// scatter_add(idx, src) whose indices have extent 1 along `axis` (cross-entropy's one-hot
/// gradient, idx [N, 1] into [N, C]): each output element receives at most one source element,
/// so the result is elementwise: result[..., v, ...] = 0 + (clamp(idx[..., 0, ...]) == v ?
/// src[..., 0, ...] : 0), the same value as the dense form's and the loops'. With no zero-filled
/// buffer and no reduction loop, elementwise fusion folds it into its consumers (the
/// log-softmax gradient), which then never write the [N, C] one-hot tensor.
Value lowerScatterAddOneHot(OpBuilder &b, Location loc, Value indices, Value source, int64_t axis,
                            RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  Type elem = resultType.getElementType();
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d) exprs.push_back(d == axis ? b.getAffineConstantExpr(0) : b.getAffineDimExpr(d));
  AffineMap oneHot = AffineMap::get(rank, 0, exprs, b.getContext());
  SmallVector<AffineMap> maps = {oneHot, oneHot, b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{indices, source}, ValueRange{emptyLike(b, loc, resultType)}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange a) {
        Value v = nb.create<linalg::IndexOp>(nloc, axis);
        Value hit = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::eq,
                                             clampedIndex(nb, nloc, a[0], resultType.getDimSize(axis)), v);
        Type acc = computeType(elem);
        Value zero = constantOf(nb, nloc, acc, 0);
        Value term = nb.create<arith::SelectOp>(nloc, hit, convertScalar(nb, nloc, a[1], acc), zero);
        nb.create<linalg::YieldOp>(nloc, convertScalar(nb, nloc, scalarBinary(nb, nloc, OpCode::Add, zero, term), elem));
      });
  return generic.getResult(0);
}

/// index_add / scatter_add as loops over every element of src (scf.for, carrying the result
/// tensor, which bufferizes in place): result = 0, then result[..., clamp(idx), ...] +=
/// src[..., k, ...]. Source-size additions instead of the dense form's result size x number of
/// indices (char_gpt's embedding gradient: 0.26 M against 17 M), in the same order for every
/// output element. Sequential, so for the CPU; the GPU keeps the dense form.
Value lowerScatterAddLoops(OpBuilder &b, Location loc, Value indices, Value source, int64_t axis, bool perAxis,
                           RankedTensorType resultType) {
  auto srcType = cast<RankedTensorType>(source.getType());
  Type elem = resultType.getElementType(), acc = computeType(elem);
  Value init = fill(b, loc, resultType, constantOf(b, loc, elem, 0));
  if (resultType.getNumElements() == 0 || srcType.getNumElements() == 0) return init;
  SmallVector<Value> lower, upper, steps;
  for (int64_t d = 0; d < srcType.getRank(); ++d) {
    lower.push_back(b.create<arith::ConstantIndexOp>(loc, 0));
    upper.push_back(b.create<arith::ConstantIndexOp>(loc, srcType.getDimSize(d)));
    steps.push_back(b.create<arith::ConstantIndexOp>(loc, 1));
  }
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lower, upper, steps, ValueRange{init},
      [&](OpBuilder &nb, Location nloc, ValueRange ivs, ValueRange result) -> scf::ValueVector {
        Value idx = perAxis ? nb.create<tensor::ExtractOp>(nloc, indices, ivs).getResult()
                            : nb.create<tensor::ExtractOp>(nloc, indices, ValueRange{ivs[size_t(axis)]}).getResult();
        SmallVector<Value> at(ivs.begin(), ivs.end());
        at[size_t(axis)] = clampedIndex(nb, nloc, idx, resultType.getDimSize(axis));
        Value current = nb.create<tensor::ExtractOp>(nloc, result[0], at);
        Value term = nb.create<tensor::ExtractOp>(nloc, source, ivs);
        Value sum = scalarBinary(nb, nloc, OpCode::Add, convertScalar(nb, nloc, current, acc),
                                 convertScalar(nb, nloc, term, acc));
        return {nb.create<tensor::InsertOp>(nloc, convertScalar(nb, nloc, sum, elem), result[0], at).getResult()};
      });
  return nest.results.front();
}

// ---------------------------------------------------------------- one lowering per op or family

/// What a lowering gets: the op, its operands (already converted), its attributes, and the
/// pass' options. It returns the replacement, or null when it has no form for this op (the
/// conversion then fails naming the op).
struct Lowering {
  Operation *op;
  const core::OpInfo &info;
  ValueRange in;
  core::OpAttrs attrs;
  RankedTensorType resultType;
  bool scatterLoops;
  Location loc() const { return op->getLoc(); }
  Type elem() const { return resultType.getElementType(); }
};
using LowerFn = Value (*)(OpBuilder &, const Lowering &);

/// Whether `body` builds a scalar for arguments of these types, i.e. the scalar switch has a
/// case for the op (built in a scratch block and erased): a forgotten case fails the
/// conversion by name instead of leaving a linalg.generic with an empty body.
bool hasScalarForm(MLIRContext *ctx, Location loc, ArrayRef<Type> args,
                   function_ref<Value(OpBuilder &, ValueRange)> body) {
  Block scratch;
  OpBuilder b(ctx); // a detached block has no region to give a context
  b.setInsertionPointToStart(&scratch);
  SmallVector<Value> values;
  for (Type t : args) values.push_back(scratch.addArgument(t, loc));
  bool ok = bool(body(b, values));
  while (!scratch.empty()) scratch.back().erase(); // users (later ops) first
  return ok;
}

Value lowerFull(OpBuilder &b, const Lowering &l) {
  Value v = l.in.empty() ? Value(b.create<arith::ConstantOp>(l.loc(), b.getF64FloatAttr(l.attrs.value)))
                         : Value(b.create<tensor::ExtractOp>(l.loc(), l.in[0], ValueRange{}));
  // A generic rather than linalg.fill, so that elementwise fusion folds fills into their
  // consumers inside fused regions.
  Value scalar = convertScalar(b, l.loc(), v, l.elem());
  return buildElementwise(b, l.loc(), l.resultType, {}, [&](OpBuilder &, Location, ValueRange) { return scalar; });
}

Value lowerRandomOp(OpBuilder &b, const Lowering &l) {
  Value seed = l.in.empty() ? Value(b.create<arith::ConstantOp>(l.loc(), b.getI64IntegerAttr(l.attrs.seed)))
                            : Value(b.create<tensor::ExtractOp>(l.loc(), l.in[0], ValueRange{}));
  return lowerRandom(b, l.loc(), l.info.code, seed, l.resultType);
}

/// Unary ops: scalarUnary's case for the op, computed in f32 for f16/bf16.
Value lowerUnary(OpBuilder &b, const Lowering &l) {
  Type elem = l.elem(), compute = computeType(elem);
  if (l.info.code != OpCode::Cast &&
      !hasScalarForm(b.getContext(), l.loc(), {compute}, [&](OpBuilder &pb, ValueRange a) {
        return scalarUnary(pb, l.loc(), l.info.code, a[0], compute);
      }))
    return {};
  return buildElementwise(b, l.loc(), l.resultType, l.in, [&](OpBuilder &nb, Location nloc, ValueRange a) {
    if (l.info.code == OpCode::Cast) return convertScalar(nb, nloc, a[0], elem);
    Value r = scalarUnary(nb, nloc, l.info.code, convertScalar(nb, nloc, a[0], compute), compute);
    return convertScalar(nb, nloc, r, elem);
  });
}

/// Binary ops and comparisons: scalarBinary's case, on the promoted operand type.
Value lowerBinary(OpBuilder &b, const Lowering &l) {
  Type compute = l.elem();
  if (l.info.kind == core::OpKind::Compare) { // in the operands' result type (a 0-d one may not widen)
    auto typeOf = [](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      return core::TensorType{*toDType(t.getElementType()), core::Shape(t.getShape().begin(), t.getShape().end())};
    };
    compute = toElementType(b.getContext(), core::resultType(typeOf(l.in[0]), typeOf(l.in[1])));
  }
  compute = computeType(compute);
  if (!hasScalarForm(b.getContext(), l.loc(), {compute, compute}, [&](OpBuilder &pb, ValueRange a) {
        return scalarBinary(pb, l.loc(), l.info.code, a[0], a[1]);
      }))
    return {};
  return buildElementwise(b, l.loc(), l.resultType, l.in, [&](OpBuilder &nb, Location nloc, ValueRange a) {
    Value r = scalarBinary(nb, nloc, l.info.code, convertScalar(nb, nloc, a[0], compute),
                           convertScalar(nb, nloc, a[1], compute));
    return convertScalar(nb, nloc, r, l.elem());
  });
}

Value lowerWhere(OpBuilder &b, const Lowering &l) {
  return buildElementwise(b, l.loc(), l.resultType, l.in, [&](OpBuilder &nb, Location nloc, ValueRange a) {
    return nb.create<arith::SelectOp>(nloc, a[0], convertScalar(nb, nloc, a[1], l.elem()),
                                      convertScalar(nb, nloc, a[2], l.elem())).getResult();
  });
}

Value lowerMatmulOp(OpBuilder &b, const Lowering &l) { return lowerMatmul(b, l.loc(), l.in[0], l.in[1], l.resultType); }

Value lowerTranspose(OpBuilder &b, const Lowering &l) {
  // The identity (0-d tensors: the empty permutation, which linalg.transpose cannot hold) is a copy.
  std::vector<int64_t> perm = attrs::Transpose::of(l.attrs).perm;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == int64_t(i);
  if (identity)
    return buildElementwise(b, l.loc(), l.resultType, l.in, [](OpBuilder &, Location, ValueRange a) { return a[0]; });
  // A generic reading the input through the permutation (result axis i is input axis
  // perm[i]) rather than linalg.transpose: elementwise fusion takes generics only, so a
  // transpose fuses with what produces and consumes it.
  int64_t rank = int64_t(perm.size());
  SmallVector<AffineExpr> reads(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) reads[size_t(perm[size_t(i)])] = b.getAffineDimExpr(unsigned(i));
  SmallVector<AffineMap> maps{AffineMap::get(unsigned(rank), 0, reads, b.getContext()),
                              b.getMultiDimIdentityMap(unsigned(rank))};
  SmallVector<utils::IteratorType> iters(size_t(rank), utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{l.resultType}, ValueRange{l.in[0]}, ValueRange{emptyLike(b, l.loc(), l.resultType)}, maps, iters,
      [](OpBuilder &nb, Location nloc, ValueRange args) { nb.create<linalg::YieldOp>(nloc, args[0]); });
  return generic.getResult(0);
}

/// A reshape that only splits or only merges neighbouring axes (static shapes) becomes
/// tensor.expand_shape / tensor.collapse_shape: views that bufferize without a copy (a split of
/// a slice's contiguous axis too), and that elementwise fusion sees through (reshape by
/// expansion), so a bias add, a slice, a split into heads and a transpose fuse into one loop
/// nest. Any other reshape stays a tensor.reshape.
Value lowerReshape(OpBuilder &b, const Lowering &l) {
  Value in = l.in[0];
  auto from = cast<RankedTensorType>(in.getType());
  RankedTensorType to = l.resultType;
  if (from == to) return in;
  if (from.hasStaticShape() && to.hasStaticShape() && from.getRank() > 0 && to.getRank() > 0 &&
      from.getRank() != to.getRank())
    if (auto groups = getReassociationIndicesForReshape(from, to)) {
      if (from.getRank() > to.getRank()) return b.create<tensor::CollapseShapeOp>(l.loc(), to, in, *groups);
      return b.create<tensor::ExpandShapeOp>(l.loc(), to, in, *groups);
    }
  return reshapeTo(b, l.loc(), in, to);
}

Value lowerBroadcastTo(OpBuilder &b, const Lowering &l) {
  return buildElementwise(b, l.loc(), l.resultType, l.in, [](OpBuilder &, Location, ValueRange a) { return a[0]; });
}

Value lowerSlice(OpBuilder &b, const Lowering &l) {
  auto slice = attrs::Slice::of(l.attrs);
  return b.create<tensor::ExtractSliceOp>(l.loc(), l.resultType, l.in[0], indexAttrs(b, slice.starts),
                                          indexAttrs(b, l.resultType.getShape()), indexAttrs(b, slice.steps));
}

Value lowerSliceScatter(OpBuilder &b, const Lowering &l) {
  auto src = cast<RankedTensorType>(l.in[1].getType());
  auto slice = attrs::SliceScatter::of(l.attrs);
  return b.create<tensor::InsertSliceOp>(l.loc(), l.in[1], l.in[0], indexAttrs(b, slice.starts),
                                         indexAttrs(b, src.getShape()), indexAttrs(b, slice.steps));
}

Value lowerConcat(OpBuilder &b, const Lowering &l) {
  Value result = emptyLike(b, l.loc(), l.resultType);
  int64_t axis = attrs::Concat::of(l.attrs).axis;
  SmallVector<int64_t> offsets(l.resultType.getRank(), 0), ones(l.resultType.getRank(), 1);
  for (Value part : l.in) {
    auto t = cast<RankedTensorType>(part.getType());
    result = b.create<tensor::InsertSliceOp>(l.loc(), part, result, indexAttrs(b, offsets),
                                             indexAttrs(b, t.getShape()), indexAttrs(b, ones));
    offsets[axis] += t.getDimSize(axis);
  }
  return result;
}

Value lowerReductionOp(OpBuilder &b, const Lowering &l) {
  if (l.info.code == OpCode::Argmax || l.info.code == OpCode::Argmin)
    return lowerArgExtremum(b, l.loc(), l.info.code, l.in[0], l.attrs.axes[0], l.resultType);
  if (l.info.code != OpCode::Sum && l.info.code != OpCode::Mean && l.info.code != OpCode::Max &&
      l.info.code != OpCode::Min && l.info.code != OpCode::Prod)
    return {};
  return lowerReduction(b, l.loc(), l.info.code, l.in[0], l.attrs.axes, l.resultType);
}

Value lowerOneHot(OpBuilder &b, const Lowering &l) { // result[..., c] = (input[...] == c)
  int64_t rank = l.resultType.getRank();
  SmallVector<AffineMap> maps = {leadingDims(b, rank, rank - 1), b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  // With checks, each label is checked once beforehand (a label out of range poisons the
  // result, so its clamped value is never seen); without, it is compared as it is. The class
  // axis is num_classes, an attribute: static in every kernel (one_hot is not size-generic).
  Value labels = l.in[0];
  if (currentChecks.enabled)
    labels = checkedIndices(b, l.loc(), labels, l.resultType.getDimSize(rank - 1), RuntimeCheck::ClassOutOfRange);
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{l.resultType}, ValueRange{labels}, ValueRange{emptyLike(b, l.loc(), l.resultType)}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange a) {
        Value c = nb.create<arith::IndexCastOp>(nloc, nb.getI64Type(), nb.create<linalg::IndexOp>(nloc, rank - 1));
        Value label = convertScalar(nb, nloc, a[0], nb.getI64Type());
        Value hit = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::eq, c, label);
        nb.create<linalg::YieldOp>(nloc, convertScalar(nb, nloc, hit, l.elem()));
      });
  return generic.getResult(0);
}

Value lowerIndexSelect(OpBuilder &b, const Lowering &l) {
  return lowerGather(b, l.loc(), l.in[0], l.in[1], attrs::IndexSelect::of(l.attrs).axis, /*perAxis=*/false, l.resultType);
}

Value lowerGatherOp(OpBuilder &b, const Lowering &l) {
  return lowerGather(b, l.loc(), l.in[0], l.in[1], attrs::Gather::of(l.attrs).axis, /*perAxis=*/true, l.resultType);
}

Value lowerIndexAddSorted(OpBuilder &b, Location loc, Value indices, Value source, int64_t axis,
                          RankedTensorType resultType);

Value lowerScatter(OpBuilder &b, const Lowering &l) {
  bool perAxis = l.info.code == OpCode::ScatterAdd;
  int64_t axis = perAxis ? attrs::ScatterAdd::of(l.attrs).axis : attrs::IndexAdd::of(l.attrs).axis;
  auto srcType = cast<RankedTensorType>(l.in[1].getType());
  if (perAxis && srcType.hasStaticShape() && l.resultType.hasStaticShape() && srcType.getDimSize(axis) == 1 &&
      l.resultType.getNumElements() > 0)
    return lowerScatterAddOneHot(b, l.loc(), l.in[0], l.in[1], axis, l.resultType);
  if (l.scatterLoops) return lowerScatterAddLoops(b, l.loc(), l.in[0], l.in[1], axis, perAxis, l.resultType);
  if (!perAxis) return lowerIndexAddSorted(b, l.loc(), l.in[0], l.in[1], axis, l.resultType);
  return lowerScatterAdd(b, l.loc(), l.in[0], l.in[1], axis, perAxis, l.resultType);
}

/// tril: result[..., i, j] = j - i <= diagonal ? input[..., i, j] : 0, over the last two axes;
/// triu: j - i >= diagonal.
Value lowerTriangle(OpBuilder &b, const Lowering &l) {
  bool lower = l.info.code == OpCode::Tril;
  int64_t rank = l.resultType.getRank();
  int64_t diagonal = lower ? attrs::Tril::of(l.attrs).diagonal : attrs::Triu::of(l.attrs).diagonal;
  return buildElementwise(b, l.loc(), l.resultType, l.in, [&](OpBuilder &nb, Location nloc, ValueRange a) {
    auto index = [&](int64_t d) {
      return nb.create<arith::IndexCastOp>(nloc, nb.getI64Type(), nb.create<linalg::IndexOp>(nloc, d)).getResult();
    };
    Value offset = nb.create<arith::SubIOp>(nloc, index(rank - 1), index(rank - 2)); // j - i
    auto predicate = lower ? arith::CmpIPredicate::sle : arith::CmpIPredicate::sge;
    Value keep = nb.create<arith::CmpIOp>(nloc, predicate, offset,
                                          nb.create<arith::ConstantOp>(nloc, nb.getI64IntegerAttr(diagonal)));
    return nb.create<arith::SelectOp>(nloc, keep, a[0], constantOf(nb, nloc, l.elem(), 0)).getResult();
  });
}

/// flip: result[..., i, ...] = input[..., n - 1 - i, ...] along every axis in `dims` (a generic
/// whose input map reverses those axes).
/// im2col: result[n, o..., c, k...] = input[n, c, o * stride - padding + k * dilation] along
/// every spatial axis, 0 where that position is outside the input. One parallel generic that
/// reads the input with tensor.extract (clamped into range, then selected away).
Value lowerIm2col(OpBuilder &b, const Lowering &l) {
  auto a = attrs::Im2col::of(l.attrs);
  Value input = l.in[0];
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t n = inType.getRank() - 2, rank = l.resultType.getRank();
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{l.resultType}, ValueRange{}, ValueRange{emptyLike(b, l.loc(), l.resultType)},
      SmallVector<AffineMap>{b.getMultiDimIdentityMap(rank)}, iters, [&](OpBuilder &nb, Location nloc, ValueRange) {
        auto index = [&](int64_t v) { return nb.create<arith::ConstantIndexOp>(nloc, v).getResult(); };
        SmallVector<Value> at = {nb.create<linalg::IndexOp>(nloc, 0), nb.create<linalg::IndexOp>(nloc, 1 + n)};
        Value inside;
        for (int64_t i = 0; i < n; ++i) {
          Value o = nb.create<linalg::IndexOp>(nloc, 1 + i), k = nb.create<linalg::IndexOp>(nloc, 2 + n + i);
          Value pos = nb.create<arith::AddIOp>(nloc, nb.create<arith::MulIOp>(nloc, o, index(a.stride[i])),
                                               nb.create<arith::MulIOp>(nloc, k, index(a.dilation[i])));
          pos = nb.create<arith::SubIOp>(nloc, pos, index(a.padding[i]));
          int64_t size = inType.getDimSize(2 + i);
          Value ok = nb.create<arith::AndIOp>(
              nloc, nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::sge, pos, index(0)),
              nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::slt, pos, index(size)));
          inside = inside ? nb.create<arith::AndIOp>(nloc, inside, ok).getResult() : ok;
          pos = nb.create<arith::MaxSIOp>(nloc, pos, index(0));
          at.push_back(nb.create<arith::MinSIOp>(nloc, pos, index(std::max<int64_t>(size - 1, 0))));
        }
        Value v = nb.create<tensor::ExtractOp>(nloc, input, at);
        nb.create<linalg::YieldOp>(nloc, nb.create<arith::SelectOp>(nloc, inside, v, constantOf(nb, nloc, l.elem(), 0)).getResult());
      });
  return generic.getResult(0);
}

/// col2im: result[n, c, p...] = sum over the taps k of input[n, o, c, k] where o * stride -
/// padding + k * dilation = p, i.e. o = (p + padding - k * dilation) / stride when that divides
/// evenly and 0 <= o < out. Loops: the result's axes, then the taps (reductions), so each
/// output element is one loop nest's sum (no atomics, the same order everywhere).
Value lowerCol2im(OpBuilder &b, const Lowering &l) {
  auto a = attrs::Col2im::of(l.attrs);
  Value input = l.in[0];
  auto inType = cast<RankedTensorType>(input.getType());
  int64_t n = l.resultType.getRank() - 2, rank = l.resultType.getRank(), loops = rank + n;
  Type elem = l.elem(), acc = computeType(elem);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.append(size_t(n), utils::IteratorType::reduction);
  // The taps as loops: a generic needs a shaped operand to carry them (its values are unused).
  SmallVector<int64_t> taps;
  for (int64_t i = 0; i < n; ++i) taps.push_back(inType.getDimSize(2 + n + i));
  Value tapSpace = b.create<tensor::EmptyOp>(l.loc(), taps, b.getI8Type());
  SmallVector<AffineExpr> tapExprs;
  for (int64_t i = 0; i < n; ++i) tapExprs.push_back(b.getAffineDimExpr(rank + i));
  // Loops (n, p..., c, k...): the channel inside the positions, so that one position's taps
  // and channels read neighbouring columns of the input (its [n, o..., c, k...] layout keeps
  // c and k innermost) rather than a column 288 floats away per step of the last position.
  SmallVector<AffineExpr> outExprs = {b.getAffineDimExpr(0), b.getAffineDimExpr(rank - 1)};
  for (int64_t i = 0; i < n; ++i) outExprs.push_back(b.getAffineDimExpr(1 + i));
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, tapExprs, b.getContext()),
                                 AffineMap::get(loops, 0, outExprs, b.getContext())};
  Value zero = constantOf(b, l.loc(), elem, 0);
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{l.resultType}, ValueRange{tapSpace}, ValueRange{fill(b, l.loc(), l.resultType, zero)}, maps,
      iters, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        auto index = [&](int64_t v) { return nb.create<arith::ConstantIndexOp>(nloc, v).getResult(); };
        SmallVector<Value> at = {nb.create<linalg::IndexOp>(nloc, 0)};
        Value inside;
        for (int64_t i = 0; i < n; ++i) {
          Value p = nb.create<linalg::IndexOp>(nloc, 1 + i), k = nb.create<linalg::IndexOp>(nloc, rank + i);
          Value t = nb.create<arith::SubIOp>(nloc, nb.create<arith::AddIOp>(nloc, p, index(a.padding[i])),
                                             nb.create<arith::MulIOp>(nloc, k, index(a.dilation[i])));
          Value ok = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::sge, t, index(0));
          t = nb.create<arith::MaxSIOp>(nloc, t, index(0));
          Value o = t;
          if (a.stride[i] != 1) {
            o = nb.create<arith::DivUIOp>(nloc, t, index(a.stride[i]));
            Value rem = nb.create<arith::RemUIOp>(nloc, t, index(a.stride[i]));
            ok = nb.create<arith::AndIOp>(nloc, ok, nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::eq, rem, index(0)));
          }
          int64_t out = inType.getDimSize(1 + i);
          ok = nb.create<arith::AndIOp>(nloc, ok, nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::slt, o, index(out)));
          inside = inside ? nb.create<arith::AndIOp>(nloc, inside, ok).getResult() : ok;
          at.push_back(nb.create<arith::MinSIOp>(nloc, o, index(std::max<int64_t>(out - 1, 0))));
        }
        at.push_back(nb.create<linalg::IndexOp>(nloc, rank - 1));
        for (int64_t i = 0; i < n; ++i) at.push_back(nb.create<linalg::IndexOp>(nloc, rank + i));
        Value v = convertScalar(nb, nloc, nb.create<tensor::ExtractOp>(nloc, input, at), acc);
        Value term = nb.create<arith::SelectOp>(nloc, inside, v, constantOf(nb, nloc, acc, 0));
        Value sum = scalarBinary(nb, nloc, OpCode::Add, convertScalar(nb, nloc, args[1], acc), term);
        nb.create<linalg::YieldOp>(nloc, convertScalar(nb, nloc, sum, elem));
      });
  return generic.getResult(0);
}

/// gt.convolution and its two gradients as one linalg.generic each (for devices without a
/// convolution library; CPU workers run them with oneDNN): the result's axes as parallel loops,
/// then reduction loops over what each result element sums, with the operands read by
/// tensor.extract at computed positions (a tap outside the input reads 0; an output position a
/// tap cannot come from, in the input gradient, adds nothing). Each result element is one loop
/// nest's sum, in the same order everywhere.
///   convolution:       (n, o, p...) summing (j, k...): input[n, c, p s - pad + k d] weight[o, j, k]
///   backward_input:    (n, c, q...) summing (oj, k...): grad[n, o, (q + pad - k d) / s] weight[o, j, k]
///   backward_weight:   (o, j, k...) summing (n, p...): grad[n, o, p] input[n, c, p s - pad + k d]
/// with groups: o = g * O/groups + oj and c = g * C/groups + j for the group g of o (or of c).
Value lowerConvolution(OpBuilder &b, const Lowering &l) {
  auto a = attrs::Convolution::of(l.attrs); // the three ops declare the same attributes
  OpCode code = l.info.code;
  auto first = cast<RankedTensorType>(l.in[0].getType()), second = cast<RankedTensorType>(l.in[1].getType());
  ArrayRef<int64_t> input = code == OpCode::Convolution ? first.getShape()
                            : code == OpCode::ConvolutionBackwardInput ? l.resultType.getShape() : second.getShape();
  ArrayRef<int64_t> weight = code == OpCode::ConvolutionBackwardWeight ? l.resultType.getShape() : second.getShape();
  ArrayRef<int64_t> output = code == OpCode::Convolution ? l.resultType.getShape() : first.getShape();
  int64_t n = int64_t(input.size()) - 2, rank = l.resultType.getRank();
  int64_t groups = a.groups, og = weight[0] / groups, cg = weight[1];
  // The reduction loops' sizes, carried by an i8 operand whose values are unused.
  SmallVector<int64_t> summed;
  if (code == OpCode::Convolution) summed = {cg};
  else if (code == OpCode::ConvolutionBackwardInput) summed = {og};
  else summed = {output[0]};
  for (int64_t i = 0; i < n; ++i)
    summed.push_back(code == OpCode::ConvolutionBackwardWeight ? output[2 + i] : weight[2 + i]);
  int64_t loops = rank + int64_t(summed.size());
  Value space = b.create<tensor::EmptyOp>(l.loc(), summed, b.getI8Type());
  SmallVector<AffineExpr> spaceExprs, outExprs;
  for (int64_t i = 0; i < int64_t(summed.size()); ++i) spaceExprs.push_back(b.getAffineDimExpr(rank + i));
  for (int64_t i = 0; i < rank; ++i) outExprs.push_back(b.getAffineDimExpr(i));
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, spaceExprs, b.getContext()),
                                 AffineMap::get(loops, 0, outExprs, b.getContext())};
  SmallVector<utils::IteratorType> iters(size_t(rank), utils::IteratorType::parallel);
  iters.append(summed.size(), utils::IteratorType::reduction);
  Type elem = l.elem();
  Value zero = constantOf(b, l.loc(), elem, 0);
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{l.resultType}, ValueRange{space}, ValueRange{fill(b, l.loc(), l.resultType, zero)}, maps,
      iters, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        auto index = [&](int64_t v) { return nb.create<arith::ConstantIndexOp>(nloc, v).getResult(); };
        auto loop = [&](int64_t d) { return nb.create<linalg::IndexOp>(nloc, d).getResult(); };
        auto add = [&](Value x, Value y) { return nb.create<arith::AddIOp>(nloc, x, y).getResult(); };
        auto mul = [&](Value x, int64_t c) { return nb.create<arith::MulIOp>(nloc, x, index(c)).getResult(); };
        auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) { return nb.create<arith::CmpIOp>(nloc, p, x, y).getResult(); };
        auto both = [&](Value x, Value y) { return x ? nb.create<arith::AndIOp>(nloc, x, y).getResult() : y; };
        auto clamp = [&](Value v, int64_t size) {
          return nb.create<arith::MinSIOp>(nloc, nb.create<arith::MaxSIOp>(nloc, v, index(0)),
                                           index(std::max<int64_t>(size - 1, 0))).getResult();
        };
        Value inside; // every position read lies inside its operand
        SmallVector<Value> at0, at1; // where the two operands are read
        // The input's position along spatial axis i for window p and tap k, clamped, and
        // whether it lies inside the input.
        auto position = [&](Value p, Value k, int64_t i) {
          Value pos = nb.create<arith::SubIOp>(nloc, add(mul(p, a.stride[i]), mul(k, a.dilation[i])), index(a.padding[i]));
          inside = both(inside, both(cmp(arith::CmpIPredicate::sge, pos, index(0)),
                                     cmp(arith::CmpIPredicate::slt, pos, index(input[2 + i]))));
          return clamp(pos, input[2 + i]);
        };
        if (code == OpCode::Convolution) {
          Value nIdx = loop(0), o = loop(1), j = loop(rank);
          Value c = add(mul(nb.create<arith::DivUIOp>(nloc, o, index(og)), cg), j);
          at0 = {nIdx, c};
          at1 = {o, j};
          for (int64_t i = 0; i < n; ++i) {
            at0.push_back(position(loop(2 + i), loop(rank + 1 + i), i));
            at1.push_back(loop(rank + 1 + i));
          }
        } else if (code == OpCode::ConvolutionBackwardInput) {
          Value nIdx = loop(0), c = loop(1), oj = loop(rank);
          Value o = add(mul(nb.create<arith::DivUIOp>(nloc, c, index(cg)), og), oj);
          Value j = nb.create<arith::RemUIOp>(nloc, c, index(cg));
          at0 = {nIdx, o};
          at1 = {o, j};
          for (int64_t i = 0; i < n; ++i) {
            Value k = loop(rank + 1 + i);
            Value t = nb.create<arith::SubIOp>(nloc, add(loop(2 + i), index(a.padding[i])), mul(k, a.dilation[i]));
            Value ok = cmp(arith::CmpIPredicate::sge, t, index(0));
            t = nb.create<arith::MaxSIOp>(nloc, t, index(0));
            Value p = t;
            if (a.stride[i] != 1) {
              p = nb.create<arith::DivUIOp>(nloc, t, index(a.stride[i]));
              ok = both(ok, cmp(arith::CmpIPredicate::eq, nb.create<arith::RemUIOp>(nloc, t, index(a.stride[i])), index(0)));
            }
            inside = both(inside, both(ok, cmp(arith::CmpIPredicate::slt, p, index(output[2 + i]))));
            at0.push_back(clamp(p, output[2 + i]));
            at1.push_back(k);
          }
        } else {
          Value o = loop(0), j = loop(1), nIdx = loop(rank);
          Value c = add(mul(nb.create<arith::DivUIOp>(nloc, o, index(og)), cg), j);
          at0 = {nIdx, o};
          at1 = {nIdx, c};
          for (int64_t i = 0; i < n; ++i) {
            Value p = loop(rank + 1 + i);
            at0.push_back(p);
            at1.push_back(position(p, loop(2 + i), i));
          }
        }
        Value x = nb.create<tensor::ExtractOp>(nloc, l.in[0], at0), y = nb.create<tensor::ExtractOp>(nloc, l.in[1], at1);
        Value term = nb.create<arith::MulFOp>(nloc, x, y);
        if (inside) term = nb.create<arith::SelectOp>(nloc, inside, term, constantOf(nb, nloc, elem, 0));
        nb.create<linalg::YieldOp>(nloc, nb.create<arith::AddFOp>(nloc, args[1], term).getResult());
      });
  return generic.getResult(0);
}

/// gt.max_pool and gt.max_pool_backward as one linalg.generic each (for devices without a
/// pooling library; CPU workers run them with oneDNN). max_pool: the result's axes, then the
/// taps as reduction loops, the maximum of the taps inside the input (-inf outside).
/// max_pool_backward: the input's positions q, then the taps k as reduction loops: the window p
/// whose tap k reads q (p = (q + padding - k) / stride when that divides evenly and 0 <= p <
/// out) adds its gradient if k is the first of its taps (row-major) holding its maximum, which
/// the body finds by comparing all of that window's taps (unrolled: the kernel is static).
Value lowerMaxPool(OpBuilder &b, const Lowering &l) {
  auto a = attrs::MaxPool::of(l.attrs); // both ops declare the same attributes
  bool backward = l.info.code == OpCode::MaxPoolBackward;
  Value x = backward ? l.in[1] : l.in[0];
  ArrayRef<int64_t> input = cast<RankedTensorType>(x.getType()).getShape();
  ArrayRef<int64_t> output = backward ? cast<RankedTensorType>(l.in[0].getType()).getShape() : l.resultType.getShape();
  int64_t n = int64_t(input.size()) - 2, rank = l.resultType.getRank(), taps = 1;
  for (int64_t k : a.kernel) taps *= k;
  Value space = b.create<tensor::EmptyOp>(l.loc(), a.kernel, b.getI8Type());
  SmallVector<AffineExpr> spaceExprs, outExprs;
  for (int64_t i = 0; i < n; ++i) spaceExprs.push_back(b.getAffineDimExpr(rank + i));
  for (int64_t i = 0; i < rank; ++i) outExprs.push_back(b.getAffineDimExpr(i));
  SmallVector<AffineMap> maps = {AffineMap::get(rank + n, 0, spaceExprs, b.getContext()),
                                 AffineMap::get(rank + n, 0, outExprs, b.getContext())};
  SmallVector<utils::IteratorType> iters(size_t(rank), utils::IteratorType::parallel);
  iters.append(size_t(n), utils::IteratorType::reduction);
  Type elem = l.elem();
  Value init = constantOf(b, l.loc(), elem, backward ? 0.0 : -std::numeric_limits<double>::infinity());
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{l.resultType}, ValueRange{space}, ValueRange{fill(b, l.loc(), l.resultType, init)}, maps,
      iters, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        auto index = [&](int64_t v) { return nb.create<arith::ConstantIndexOp>(nloc, v).getResult(); };
        auto loop = [&](int64_t d) { return nb.create<linalg::IndexOp>(nloc, d).getResult(); };
        auto cmp = [&](arith::CmpIPredicate p, Value u, Value v) { return nb.create<arith::CmpIOp>(nloc, p, u, v).getResult(); };
        auto both = [&](Value u, Value v) { return u ? nb.create<arith::AndIOp>(nloc, u, v).getResult() : v; };
        auto clamp = [&](Value v, int64_t size) {
          return nb.create<arith::MinSIOp>(nloc, nb.create<arith::MaxSIOp>(nloc, v, index(0)),
                                           index(std::max<int64_t>(size - 1, 0))).getResult();
        };
        Value lowest = constantOf(nb, nloc, elem, -std::numeric_limits<double>::infinity());
        // Tap `k` (indices per spatial axis) of window `p`: the input's value there, -inf outside.
        auto tap = [&](ValueRange p, ArrayRef<Value> k) {
          SmallVector<Value> at = {loop(0), loop(1)};
          Value inside;
          for (int64_t i = 0; i < n; ++i) {
            Value pos = nb.create<arith::SubIOp>(
                nloc, nb.create<arith::AddIOp>(nloc, nb.create<arith::MulIOp>(nloc, p[i], index(a.stride[i])), k[i]),
                index(a.padding[i]));
            inside = both(inside, both(cmp(arith::CmpIPredicate::sge, pos, index(0)),
                                       cmp(arith::CmpIPredicate::slt, pos, index(input[2 + i]))));
            at.push_back(clamp(pos, input[2 + i]));
          }
          Value v = nb.create<tensor::ExtractOp>(nloc, x, at);
          return nb.create<arith::SelectOp>(nloc, inside, v, lowest).getResult();
        };
        SmallVector<Value> k;
        for (int64_t i = 0; i < n; ++i) k.push_back(loop(rank + i));
        if (!backward) {
          SmallVector<Value> p;
          for (int64_t i = 0; i < n; ++i) p.push_back(loop(2 + i));
          nb.create<linalg::YieldOp>(nloc, nb.create<arith::MaximumFOp>(nloc, args[1], tap(p, k)).getResult());
          return;
        }
        // The window p that reads position q through tap k, clamped, and whether there is one.
        SmallVector<Value> p;
        Value valid;
        for (int64_t i = 0; i < n; ++i) {
          Value t = nb.create<arith::SubIOp>(nloc, nb.create<arith::AddIOp>(nloc, loop(2 + i), index(a.padding[i])), k[i]);
          Value ok = cmp(arith::CmpIPredicate::sge, t, index(0));
          t = nb.create<arith::MaxSIOp>(nloc, t, index(0));
          Value w = nb.create<arith::DivUIOp>(nloc, t, index(a.stride[i]));
          ok = both(ok, cmp(arith::CmpIPredicate::eq, nb.create<arith::RemUIOp>(nloc, t, index(a.stride[i])), index(0)));
          valid = both(valid, both(ok, cmp(arith::CmpIPredicate::slt, w, index(output[2 + i]))));
          p.push_back(clamp(w, output[2 + i]));
        }
        // The window's first tap holding its maximum (strictly greater replaces), as a flat index.
        Value best = lowest, bestTap = index(0);
        for (int64_t t = 0; t < taps; ++t) {
          SmallVector<Value> kk;
          int64_t rest = t;
          SmallVector<int64_t> digits(static_cast<size_t>(n), 0);
          for (int64_t i = n - 1; i >= 0; --i) {
            digits[size_t(i)] = rest % a.kernel[i];
            rest /= a.kernel[i];
          }
          for (int64_t i = 0; i < n; ++i) kk.push_back(index(digits[size_t(i)]));
          Value v = tap(p, kk);
          Value greater = nb.create<arith::CmpFOp>(nloc, arith::CmpFPredicate::OGT, v, best);
          if (t == 0) greater = nb.create<arith::ConstantIntOp>(nloc, 1, 1);
          best = nb.create<arith::SelectOp>(nloc, greater, v, best);
          bestTap = nb.create<arith::SelectOp>(nloc, greater, index(t), bestTap);
        }
        Value flatK = k[0];
        for (int64_t i = 1; i < n; ++i)
          flatK = nb.create<arith::AddIOp>(nloc, nb.create<arith::MulIOp>(nloc, flatK, index(a.kernel[i])), k[i]);
        Value chosen = both(valid, cmp(arith::CmpIPredicate::eq, flatK, bestTap));
        SmallVector<Value> at = {loop(0), loop(1)};
        at.append(p.begin(), p.end());
        Value g = nb.create<tensor::ExtractOp>(nloc, l.in[0], at);
        Value term = nb.create<arith::SelectOp>(nloc, chosen, g, constantOf(nb, nloc, elem, 0));
        nb.create<linalg::YieldOp>(nloc, nb.create<arith::AddFOp>(nloc, args[1], term).getResult());
      });
  return generic.getResult(0);
}

Value lowerFlip(OpBuilder &b, const Lowering &l) {
  int64_t rank = l.resultType.getRank();
  std::vector<int64_t> dims = attrs::Flip::of(l.attrs).dims;
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d) {
    AffineExpr i = b.getAffineDimExpr(d);
    exprs.push_back(llvm::is_contained(dims, d) ? b.getAffineConstantExpr(l.resultType.getDimSize(d) - 1) - i : i);
  }
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, exprs, b.getContext()), b.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{l.resultType}, l.in, ValueRange{emptyLike(b, l.loc(), l.resultType)}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange a) { nb.create<linalg::YieldOp>(nloc, a[0]); });
  return generic.getResult(0);
}

/// cumsum along `axis`: result[..., i, ...] = sum over k <= i of input[..., k, ...]. Sums in f32
/// for f16/bf16, like the reductions, and rounds once at the end.
///
/// With scatter-loops (CPU workers): one scf.for nest over the result in row-major order carrying
/// the sums, result[..., i, ...] = result[..., i - 1, ...] + input[..., i, ...] (the element before
/// along the axis comes earlier in that order): n additions. Otherwise (the GPU): one generic over
/// the result's axes plus k (a reduction) adding the terms with k <= i, n^2 / 2 additions along
/// the axis but every output element independent.
/// Running sums along the axis, accumulated in f64 for f32 (and f16/bf16) input and rounded
/// once per element, as PyTorch's CPU kernel accumulates in double: an f32 accumulator's error
/// grows with the length (2e-7 relative over 1000 elements against PyTorch's 6e-8).
Value lowerCumsum(OpBuilder &b, const Lowering &l) {
  int64_t rank = l.resultType.getRank(), axis = attrs::Cumsum::of(l.attrs).axis;
  Type elem = l.elem(), acc = computeType(elem);
  if (acc.isF32()) acc = b.getF64Type();
  auto convert = [&](Value v, Type to) {
    auto type = RankedTensorType::get(l.resultType.getShape(), to);
    return buildElementwise(b, l.loc(), type, {v}, [&](OpBuilder &nb, Location nloc, ValueRange a) {
      return convertScalar(nb, nloc, a[0], to);
    });
  };
  if (rank == 0) return convert(l.in[0], elem); // one element: itself
  auto accType = RankedTensorType::get(l.resultType.getShape(), acc);
  if (l.scatterLoops) {
    Value sums = fill(b, l.loc(), accType, constantOf(b, l.loc(), acc, 0));
    if (accType.getNumElements() > 0) {
      SmallVector<Value> lower, upper, steps;
      for (int64_t d = 0; d < rank; ++d) {
        lower.push_back(b.create<arith::ConstantIndexOp>(l.loc(), 0));
        upper.push_back(b.create<arith::ConstantIndexOp>(l.loc(), l.resultType.getDimSize(d)));
        steps.push_back(b.create<arith::ConstantIndexOp>(l.loc(), 1));
      }
      scf::LoopNest nest = scf::buildLoopNest(
          b, l.loc(), lower, upper, steps, ValueRange{sums},
          [&](OpBuilder &nb, Location nloc, ValueRange ivs, ValueRange carried) -> scf::ValueVector {
            Value i = ivs[size_t(axis)], zero = nb.create<arith::ConstantIndexOp>(nloc, 0);
            Value hasPrevious = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::ugt, i, zero);
            SmallVector<Value> previous(ivs.begin(), ivs.end());
            previous[size_t(axis)] = nb.create<arith::SelectOp>(
                nloc, hasPrevious, nb.create<arith::SubIOp>(nloc, i, nb.create<arith::ConstantIndexOp>(nloc, 1)), i);
            Value before = nb.create<tensor::ExtractOp>(nloc, carried[0], previous);
            before = nb.create<arith::SelectOp>(nloc, hasPrevious, before, constantOf(nb, nloc, acc, 0));
            Value x = convertScalar(nb, nloc, nb.create<tensor::ExtractOp>(nloc, l.in[0], ivs), acc);
            Value sum = scalarBinary(nb, nloc, OpCode::Add, before, x);
            return {nb.create<tensor::InsertOp>(nloc, sum, carried[0], ivs).getResult()};
          });
      sums = nest.results.front();
    }
    return acc == elem ? sums : convert(sums, elem);
  }
  SmallVector<AffineExpr> inExprs;
  for (int64_t d = 0; d < rank; ++d) inExprs.push_back(b.getAffineDimExpr(d == axis ? rank : d));
  SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, inExprs, b.getContext()),
                                 leadingDims(b, rank + 1, rank)};
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  auto generic = b.create<linalg::GenericOp>(
      l.loc(), TypeRange{accType}, l.in, ValueRange{fill(b, l.loc(), accType, constantOf(b, l.loc(), acc, 0))}, maps,
      iters, [&](OpBuilder &nb, Location nloc, ValueRange a) {
        Value k = nb.create<linalg::IndexOp>(nloc, rank), i = nb.create<linalg::IndexOp>(nloc, axis);
        Value take = nb.create<arith::CmpIOp>(nloc, arith::CmpIPredicate::ule, k, i);
        Value term = nb.create<arith::SelectOp>(nloc, take, convertScalar(nb, nloc, a[0], acc), constantOf(nb, nloc, acc, 0));
        nb.create<linalg::YieldOp>(nloc, scalarBinary(nb, nloc, OpCode::Add, a[1], term));
      });
  return acc == elem ? generic.getResult(0) : convert(generic.getResult(0), elem);
}

/// Whether key `x` sorts strictly before `y`: x < y, NaN as the largest value (x > y with
/// `descending`, NaN then first), as PyTorch's sort.
Value sortsBefore(OpBuilder &b, Location loc, Value x, Value y, bool descending) {
  if (descending) std::swap(x, y);
  if (!isa<FloatType>(x.getType())) return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x, y);
  Value less = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OLT, x, y);
  Value xNumber = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::ORD, x, x);
  Value yNaN = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO, y, y);
  return b.create<arith::OrIOp>(loc, less, b.create<arith::AndIOp>(loc, xNumber, yNaN));
}

/// argsort, dense (CUDA workers): the stable rank of element i of a row is the number of j
/// that sort before it (before(x_j, x_i), or neither before the other and j < i); then
/// result[r] = the i whose rank is r. Two n^2 generics with independent outputs.
Value lowerArgsortDense(OpBuilder &b, Location loc, Value input, int64_t axis, bool descending,
                        RankedTensorType resultType) {
  int64_t rank = resultType.getRank();
  Type i64 = b.getI64Type();
  SmallVector<AffineExpr> other; // the input at the inner loop's position j along `axis`
  for (int64_t d = 0; d < rank; ++d) other.push_back(b.getAffineDimExpr(d == axis ? rank : d));
  AffineMap self = leadingDims(b, rank + 1, rank);
  AffineMap atJ = AffineMap::get(rank + 1, 0, other, b.getContext());
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  Value zero = constantOf(b, loc, i64, 0);
  Value ranks = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{input, input}, ValueRange{fill(b, loc, resultType, zero)},
      SmallVector<AffineMap>{self, atJ, self}, iters, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value i = nb.create<linalg::IndexOp>(nl, axis), j = nb.create<linalg::IndexOp>(nl, rank);
        Value jFirst = sortsBefore(nb, nl, a[1], a[0], descending);
        Value iFirst = sortsBefore(nb, nl, a[0], a[1], descending);
        Value earlier = nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::ult, j, i);
        Value tieBefore = nb.create<arith::AndIOp>(
            nl, nb.create<arith::XOrIOp>(nl, iFirst, constantOf(nb, nl, nb.getI1Type(), 1)), earlier);
        Value counts = nb.create<arith::OrIOp>(nl, jFirst, tieBefore);
        nb.create<linalg::YieldOp>(nl, nb.create<arith::AddIOp>(nl, a[2], nb.create<arith::ExtUIOp>(nl, i64, counts)).getResult());
      }).getResult(0);
  // result[..., r, ...] = sum over i of (ranks[..., i, ...] == r) * i
  return b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{ranks}, ValueRange{fill(b, loc, resultType, zero)},
      SmallVector<AffineMap>{atJ, self}, iters, [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value r = nb.create<arith::IndexCastOp>(nl, i64, nb.create<linalg::IndexOp>(nl, axis));
        Value i = nb.create<arith::IndexCastOp>(nl, i64, nb.create<linalg::IndexOp>(nl, rank));
        Value hit = nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::eq, a[0], r);
        Value term = nb.create<arith::SelectOp>(nl, hit, i, constantOf(nb, nl, i64, 0));
        nb.create<linalg::YieldOp>(nl, nb.create<arith::AddIOp>(nl, a[1], term).getResult());
      }).getResult(0);
}

/// index_add(idx, src) along `axis` without the dense form's result size x number of indices
/// (CUDA workers; GPT-2's embedding gradient: 50257 x 768 x 8192 = 316 G steps, 2.4 s on an
/// H200). The source rows are put in order of their (clamped) index with a stable argsort;
/// starts[v] counts the indices below v, so the rows that add into result row v are
/// order[starts[v] .. starts[v+1]); each result element sums its rows in a loop of its own.
/// Work: the argsort's n^2 ranks, (V+1) x n counts, and the source's size of additions, in
/// ascending source position within each row, as the CPU's loops add them.
Value lowerIndexAddSorted(OpBuilder &b, Location loc, Value indices, Value source, int64_t axis,
                          RankedTensorType resultType) {
  auto srcType = cast<RankedTensorType>(source.getType());
  int64_t rank = resultType.getRank(), n = srcType.getDimSize(axis), rows = resultType.getDimSize(axis);
  Type elem = resultType.getElementType(), acc = computeType(elem), i64 = b.getI64Type();
  if (resultType.getNumElements() == 0 || srcType.getNumElements() == 0)
    return fill(b, loc, resultType, constantOf(b, loc, elem, 0));
  auto idxType = RankedTensorType::get({n}, i64);
  Value clamped = buildElementwise(b, loc, idxType, {indices}, [&](OpBuilder &nb, Location nl, ValueRange a) {
    return nb.create<arith::IndexCastOp>(nl, i64, clampedIndex(nb, nl, a[0], rows)).getResult();
  });
  Value order = lowerArgsortDense(b, loc, clamped, 0, /*descending=*/false, idxType);
  // starts[v] = #{k : clamped[k] < v}, v = 0 .. rows
  auto startsType = RankedTensorType::get({rows + 1}, i64);
  AffineMap d0 = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, b.getContext());
  AffineMap d1 = AffineMap::get(2, 0, {b.getAffineDimExpr(1)}, b.getContext());
  Value starts = b.create<linalg::GenericOp>(
      loc, TypeRange{startsType}, ValueRange{clamped}, ValueRange{fill(b, loc, startsType, constantOf(b, loc, i64, 0))},
      SmallVector<AffineMap>{d1, d0}, SmallVector<utils::IteratorType>{utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location nl, ValueRange a) {
        Value v = nb.create<arith::IndexCastOp>(nl, i64, nb.create<linalg::IndexOp>(nl, 0));
        Value below = nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::slt, a[0], v);
        nb.create<linalg::YieldOp>(nl, nb.create<arith::AddIOp>(nl, a[1], nb.create<arith::ExtUIOp>(nl, i64, below)).getResult());
      }).getResult(0);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  return b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, ValueRange{}, ValueRange{emptyLike(b, loc, resultType)},
      SmallVector<AffineMap>{b.getMultiDimIdentityMap(rank)}, iters, [&](OpBuilder &nb, Location nl, ValueRange) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d) at.push_back(nb.create<linalg::IndexOp>(nl, d));
        Value v = at[size_t(axis)];
        Value next = nb.create<arith::AddIOp>(nl, v, nb.create<arith::ConstantIndexOp>(nl, 1));
        auto asIndex = [&](Value x) { return nb.create<arith::IndexCastOp>(nl, nb.getIndexType(), x).getResult(); };
        Value lo = asIndex(nb.create<tensor::ExtractOp>(nl, starts, ValueRange{v}));
        Value hi = asIndex(nb.create<tensor::ExtractOp>(nl, starts, ValueRange{next}));
        Value one = nb.create<arith::ConstantIndexOp>(nl, 1);
        auto loop = nb.create<scf::ForOp>(
            nl, lo, hi, one, ValueRange{constantOf(nb, nl, acc, 0)},
            [&](OpBuilder &lb, Location ll, Value j, ValueRange sum) {
              SmallVector<Value> from(at);
              from[size_t(axis)] = asIndex(lb.create<tensor::ExtractOp>(ll, order, ValueRange{j}));
              Value term = convertScalar(lb, ll, lb.create<tensor::ExtractOp>(ll, source, from), acc);
              lb.create<scf::YieldOp>(ll, scalarBinary(lb, ll, OpCode::Add, sum[0], term));
            });
        nb.create<linalg::YieldOp>(nl, convertScalar(nb, nl, loop.getResult(0), elem));
      }).getResult(0);
}

/// argsort, loops (CPU workers): each row (every position of the other axes) is sorted by a
/// bottom-up merge sort of its indices (Knuth, TAOCP vol. 3, 5.2.4): ceil(log2 n) passes, pass
/// p merging neighbouring runs of 2^p (left first on ties: stable) from one scratch row into
/// the other; n log n comparisons, each reading the keys through the indices.
Value lowerArgsortLoops(OpBuilder &b, Location loc, Value input, int64_t axis, bool descending,
                        RankedTensorType resultType) {
  int64_t rank = resultType.getRank(), n = resultType.getDimSize(axis);
  Type i64 = b.getI64Type();
  auto c = [&](OpBuilder &nb, Location nl, int64_t v) { return nb.create<arith::ConstantIndexOp>(nl, v).getResult(); };
  auto rowType = RankedTensorType::get({n}, i64);
  SmallVector<Value> lower, upper, steps;
  for (int64_t d = 0; d < rank; ++d) {
    lower.push_back(c(b, loc, 0));
    upper.push_back(c(b, loc, d == axis ? 1 : resultType.getDimSize(d)));
    steps.push_back(c(b, loc, 1));
  }
  scf::LoopNest rows = scf::buildLoopNest(
      b, loc, lower, upper, steps, ValueRange{emptyLike(b, loc, resultType)},
      [&](OpBuilder &nb, Location nl, ValueRange ivs, ValueRange result) -> scf::ValueVector {
        auto at = [&](Value k) { // the row's element k
          SmallVector<Value> where(ivs.begin(), ivs.end());
          where[size_t(axis)] = k;
          return where;
        };
        auto key = [&](OpBuilder &kb, Location kl, Value row, Value k) { // input at index row[k]
          Value i = kb.create<arith::IndexCastOp>(kl, kb.getIndexType(), kb.create<tensor::ExtractOp>(kl, row, k));
          SmallVector<Value> where(ivs.begin(), ivs.end());
          where[size_t(axis)] = i;
          return kb.create<tensor::ExtractOp>(kl, input, where).getResult();
        };
        Value src = nb.create<scf::ForOp>(
            nl, c(nb, nl, 0), c(nb, nl, n), c(nb, nl, 1), ValueRange{nb.create<tensor::EmptyOp>(nl, rowType.getShape(), i64)},
            [&](OpBuilder &fb, Location fl, Value k, ValueRange row) {
              Value v = fb.create<arith::IndexCastOp>(fl, i64, k);
              fb.create<scf::YieldOp>(fl, ValueRange{fb.create<tensor::InsertOp>(fl, v, row[0], k).getResult()});
            }).getResult(0);
        Value dst = nb.create<tensor::EmptyOp>(nl, rowType.getShape(), i64);
        for (int64_t width = 1; width < n; width *= 2) { // one pass: runs of `width` merged in pairs
          Value merged = nb.create<scf::ForOp>(
              nl, c(nb, nl, 0), c(nb, nl, n), c(nb, nl, 2 * width), ValueRange{dst},
              [&](OpBuilder &pb, Location pl, Value lo, ValueRange out) {
                Value last = c(pb, pl, n);
                Value mid = pb.create<arith::MinUIOp>(pl, pb.create<arith::AddIOp>(pl, lo, c(pb, pl, width)), last);
                Value hi = pb.create<arith::MinUIOp>(pl, pb.create<arith::AddIOp>(pl, lo, c(pb, pl, 2 * width)), last);
                auto step = pb.create<scf::ForOp>(
                    pl, lo, hi, c(pb, pl, 1), ValueRange{lo, mid, out[0]},
                    [&](OpBuilder &mb, Location ml, Value k, ValueRange s) {
                      Value i = s[0], j = s[1];
                      Value lastIndex = c(mb, ml, n - 1); // reads stay in the row; a run's end is masked below
                      Value iAt = mb.create<arith::MinUIOp>(ml, i, lastIndex), jAt = mb.create<arith::MinUIOp>(ml, j, lastIndex);
                      Value leftLeft = mb.create<arith::CmpIOp>(ml, arith::CmpIPredicate::ult, i, mid);
                      Value rightDone = mb.create<arith::CmpIOp>(ml, arith::CmpIPredicate::uge, j, hi);
                      Value rightFirst = sortsBefore(mb, ml, key(mb, ml, src, jAt), key(mb, ml, src, iAt), descending);
                      Value takeLeft = mb.create<arith::AndIOp>(
                          ml, leftLeft,
                          mb.create<arith::OrIOp>(ml, rightDone, mb.create<arith::XOrIOp>(ml, rightFirst,
                                                                                      constantOf(mb, ml, mb.getI1Type(), 1))));
                      Value v = mb.create<arith::SelectOp>(ml, takeLeft, mb.create<tensor::ExtractOp>(ml, src, iAt),
                                                           mb.create<tensor::ExtractOp>(ml, src, jAt));
                      Value one = c(mb, ml, 1), none = c(mb, ml, 0);
                      Value nextI = mb.create<arith::AddIOp>(ml, i, mb.create<arith::SelectOp>(ml, takeLeft, one, none));
                      Value nextJ = mb.create<arith::AddIOp>(ml, j, mb.create<arith::SelectOp>(ml, takeLeft, none, one));
                      mb.create<scf::YieldOp>(ml, ValueRange{nextI, nextJ, mb.create<tensor::InsertOp>(ml, v, s[2], k).getResult()});
                    });
                pb.create<scf::YieldOp>(pl, ValueRange{step.getResult(2)});
              }).getResult(0);
          dst = src;
          src = merged;
        }
        Value written = nb.create<scf::ForOp>(
            nl, c(nb, nl, 0), c(nb, nl, n), c(nb, nl, 1), ValueRange{result[0]},
            [&](OpBuilder &fb, Location fl, Value k, ValueRange out) {
              Value v = fb.create<tensor::ExtractOp>(fl, src, k);
              fb.create<scf::YieldOp>(fl, ValueRange{fb.create<tensor::InsertOp>(fl, v, out[0], at(k)).getResult()});
            }).getResult(0);
        return {written};
      });
  return rows.results.front();
}

Value lowerArgsort(OpBuilder &b, const Lowering &l) {
  auto a = attrs::Argsort::of(l.attrs);
  Value input = l.in[0];
  Type elem = cast<RankedTensorType>(input.getType()).getElementType();
  if (isHalfFloat(elem)) { // compare in float32 (exact: every half value is a float)
    auto wide = RankedTensorType::get(l.resultType.getShape(), Float32Type::get(b.getContext()));
    input = buildElementwise(b, l.loc(), wide, {input}, [&](OpBuilder &nb, Location nloc, ValueRange v) {
      return convertScalar(nb, nloc, v[0], wide.getElementType());
    });
  }
  if (l.resultType.getRank() == 0 || l.resultType.getNumElements() == 0)
    return fill(b, l.loc(), l.resultType, constantOf(b, l.loc(), l.elem(), 0));
  if (l.scatterLoops) return lowerArgsortLoops(b, l.loc(), input, a.axis, a.descending, l.resultType);
  return lowerArgsortDense(b, l.loc(), input, a.axis, a.descending, l.resultType);
}

/// The lowering of each op, by op or (when no op entry exists) by kind. An op of the spec with
/// neither gets no pattern, and the conversion fails on it by name.
struct OpLowering {
  OpCode code;
  LowerFn lower;
};
const OpLowering kOpLowerings[] = {
    {OpCode::Full, lowerFull},
    {OpCode::Randn, lowerRandomOp},
    {OpCode::Rand, lowerRandomOp},
    {OpCode::Where, lowerWhere},
    {OpCode::Matmul, lowerMatmulOp},
    {OpCode::Transpose, lowerTranspose},
    {OpCode::Reshape, lowerReshape},
    {OpCode::BroadcastTo, lowerBroadcastTo},
    {OpCode::Slice, lowerSlice},
    {OpCode::SliceScatter, lowerSliceScatter},
    {OpCode::Concat, lowerConcat},
    {OpCode::Flip, lowerFlip},
    {OpCode::Im2col, lowerIm2col},
    {OpCode::Col2im, lowerCol2im},
    {OpCode::Convolution, lowerConvolution},
    {OpCode::ConvolutionBackwardInput, lowerConvolution},
    {OpCode::ConvolutionBackwardWeight, lowerConvolution},
    {OpCode::MaxPool, lowerMaxPool},
    {OpCode::MaxPoolBackward, lowerMaxPool},
    {OpCode::Cumsum, lowerCumsum},
    {OpCode::OneHot, lowerOneHot},
    {OpCode::Tril, lowerTriangle},
    {OpCode::Triu, lowerTriangle},
    {OpCode::IndexSelect, lowerIndexSelect},
    {OpCode::IndexAdd, lowerScatter},
    {OpCode::Gather, lowerGatherOp},
    {OpCode::ScatterAdd, lowerScatter},
    {OpCode::Argsort, lowerArgsort},
};
struct KindLowering {
  core::OpKind kind;
  LowerFn lower;
};
const KindLowering kKindLowerings[] = {
    {core::OpKind::Unary, lowerUnary},
    {core::OpKind::Binary, lowerBinary},
    {core::OpKind::Compare, lowerBinary},
    {core::OpKind::Reduction, lowerReductionOp},
};

LowerFn loweringOf(const core::OpInfo &info) {
  for (const OpLowering &l : kOpLowerings)
    if (l.code == info.code) return l.lower;
  for (const KindLowering &l : kKindLowerings)
    if (l.kind == info.kind) return l.lower;
  return nullptr;
}

/// Data, lifetime and movement stay for the executor: upload, free, and the distribution ops.
bool staysGT(const core::OpInfo &info) {
  return info.code == OpCode::Upload || info.kind == core::OpKind::Lifetime || info.kind == core::OpKind::Distribution;
}

/// One gt op -> its linalg form (a conversion pattern per op; the function is shared by a family).
struct GTOpToLinalg : ConversionPattern {
  GTOpToLinalg(MLIRContext *ctx, StringRef opName, LowerFn lower, bool scatterLoops, bool checks)
      : ConversionPattern(opName, /*benefit=*/1, ctx), lower(lower), scatterLoops(scatterLoops), checks(checks) {}

  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                                ConversionPatternRewriter &rewriter) const override {
    const core::OpInfo &info = *opInfoOf(op);
    Lowering l{op, info, operands, attrsOf(op), cast<RankedTensorType>(op->getResult(0).getType()), scatterLoops};
    CheckContext outer = currentChecks;
    currentChecks = {checks, info.code};
    Value lowered = lower(rewriter, l);
    currentChecks = outer;
    if (!lowered) return rewriter.notifyMatchFailure(op, "no linalg form for this op");
    rewriter.replaceOp(op, lowered);
    return success();
  }

  LowerFn lower;
  bool scatterLoops;
  bool checks;
};

/// sum over `axes` of scatter_add(idx, src) along an axis in `axes` (or of its negation) =>
/// sum of src (of neg(src)): every source element lands somewhere along that axis, so the sum
/// is the same, without reading the [N, C] scatter result. Cross-entropy's gradient sums its
/// one-hot over the classes. The old ops stay for their other uses; unused, they are erased.
void sumSourcesOfScatters(ModuleOp module) {
  SmallVector<SumOp> sums;
  module.walk([&](SumOp sum) { sums.push_back(sum); });
  for (SumOp sum : sums) {
    Value x = sum.getInput();
    auto neg = x.getDefiningOp<NegOp>();
    auto scatter = (neg ? neg.getInput() : x).getDefiningOp<ScatterAddOp>();
    if (!scatter || !llvm::is_contained(sum.getAxes(), int64_t(scatter.getAxis()))) continue;
    OpBuilder b(sum);
    Value src = scatter.getSource();
    if (neg) src = b.create<NegOp>(neg.getLoc(), src.getType(), src);
    Value replacement = b.create<SumOp>(sum.getLoc(), sum.getType(), src, sum.getAxes(), sum.getKeepdims());
    sum.replaceAllUsesWith(replacement);
    sum.erase();
    if (neg && neg->use_empty()) neg.erase();
    if (scatter->use_empty()) scatter.erase();
  }
}

struct GTLowerToLinalgPass : impl::GTLowerToLinalgBase<GTLowerToLinalgPass> {
  using GTLowerToLinalgBase::GTLowerToLinalgBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    sumSourcesOfScatters(getOperation());
    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect, func::FuncDialect>();
    target.addLegalOp<UnrealizedConversionCastOp>(); // uint8's bits as i8 (convertScalar)
    // The gt dialect is illegal but for the ops that stay: a compute op without a lowering is an
    // error naming it ("failed to legalize operation 'gt.expm1'").
    target.addDynamicallyLegalDialect<GTDialect>([](Operation *op) {
      const core::OpInfo *info = opInfoOf(op);
      return !info || staysGT(*info); // gt.region and gt.yield have no op-table entry
    });
    RewritePatternSet patterns(ctx);
    for (OpCode code = OpCode(0); code < OpCode::NumOps; code = OpCode(int(code) + 1)) {
      const core::OpInfo &info = core::opInfo(code);
      if (staysGT(info)) continue;
      if (LowerFn lower = loweringOf(info))
        patterns.add<GTOpToLinalg>(ctx, (GTDialect::getDialectNamespace() + "." + info.mnemonic).str(), lower,
                                   scatterLoops, checks);
    }
    ModuleOp module = getOperation();
    if (checks && !module.lookupSymbol(kRuntimeErrorFunction)) { // what the checks call
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      Type i64 = b.getI64Type();
      auto fn = b.create<func::FuncOp>(module.getLoc(), kRuntimeErrorFunction,
                                       b.getFunctionType({i64, i64, i64, i64}, {}));
      fn.setPrivate();
    }
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns)))) signalPassFailure();
  }
};
} // namespace

LinalgLowering linalgLoweringOf(core::OpCode code) {
  const core::OpInfo &info = core::opInfo(code);
  if (staysGT(info)) return LinalgLowering::Stays;
  return loweringOf(info) ? LinalgLowering::Converted : LinalgLowering::Missing;
}
} // namespace mlir::gt
