// The combiner of a linalg reduction (Reductions.h).
#include "Reductions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

namespace mlir::gt {

/// combine(identity, x) == x for the combining op, of element type `type`.
static TypedAttr identityOf(Operation *op, Type type) {
  Builder b(op->getContext());
  auto fl = [&](double v) -> TypedAttr { return b.getFloatAttr(type, v); };
  auto in = [&](const APInt &v) -> TypedAttr { return b.getIntegerAttr(type, v); };
  unsigned width = type.isIntOrFloat() ? type.getIntOrFloatBitWidth() : 0;
  double inf = std::numeric_limits<double>::infinity();
  return llvm::TypeSwitch<Operation *, TypedAttr>(op)
      .Case([&](arith::AddFOp) { return fl(0.0); })
      .Case([&](arith::MulFOp) { return fl(1.0); })
      .Case<arith::MaximumFOp, arith::MaxNumFOp>([&](auto) { return fl(-inf); })
      .Case<arith::MinimumFOp, arith::MinNumFOp>([&](auto) { return fl(inf); })
      .Case<arith::AddIOp, arith::OrIOp, arith::XOrIOp, arith::MaxUIOp>([&](auto) { return in(APInt(width, 0)); })
      .Case([&](arith::MulIOp) { return in(APInt(width, 1)); })
      .Case([&](arith::MaxSIOp) { return in(APInt::getSignedMinValue(width)); })
      .Case([&](arith::MinSIOp) { return in(APInt::getSignedMaxValue(width)); })
      .Case<arith::MinUIOp, arith::AndIOp>([&](auto) { return in(APInt::getAllOnes(width)); })
      .Default([](Operation *) { return TypedAttr(); });
}

std::optional<Combiner> matchCombiner(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1) return std::nullopt;
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArguments().back();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *combiner = yield.getValues()[0].getDefiningOp();
  if (!combiner || combiner->getBlock() != &body || combiner->getNumOperands() != 2 ||
      combiner->getNumResults() != 1 || !out.hasOneUse() || out.getUses().begin()->getOwner() != combiner ||
      !combiner->getResult(0).hasOneUse() || !out.getType().isIntOrFloat())
    return std::nullopt;
  TypedAttr identity = identityOf(combiner, out.getType());
  if (!identity) return std::nullopt;
  return Combiner{combiner, combiner->getOperand(0) == out ? 0u : 1u, identity};
}

} // namespace mlir::gt
