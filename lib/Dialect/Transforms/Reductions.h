// What gt-gpu-reductions and gt-cpu-reductions look for in a linalg reduction: the body's last op
// combining the element it computes with the output (`%out`), associatively.
#ifndef GT_DIALECT_TRANSFORMS_REDUCTIONS_H
#define GT_DIALECT_TRANSFORMS_REDUCTIONS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace mlir::gt {

/// The combine at the end of a reduction's body: `yield op(element, %out)` (either operand
/// order), `%out` read nowhere else. `identity` is its neutral value (0 for add, -inf for max,
/// ...), of the output's element type.
struct Combiner {
  Operation *op;
  unsigned outOperand; ///< which of op's two operands is `%out`
  TypedAttr identity;

  /// The element the body computes, in `body`'s values.
  Value element() const { return op->getOperand(1 - outOperand); }

  /// A copy of the combine at `b`'s insertion point: `op(element, acc)` in the body's operand
  /// order (vector operands give the lanewise combine).
  Value build(OpBuilder &b, Value element, Value acc) const {
    IRMapping map;
    map.map(op->getOperand(outOperand), acc);
    map.map(op->getOperand(1 - outOperand), element);
    Operation *copy = b.clone(*op, map);
    copy->getResult(0).setType(acc.getType());
    return copy->getResult(0);
  }
};

/// The indices an indexing map (a projected permutation, zeros allowed: a kept dimension of
/// size 1) gives at loop indices `ivs`.
inline SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map, ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(e)) indices.push_back(ivs[dim.getPosition()]);
    else indices.push_back(b.create<arith::ConstantIndexOp>(loc, cast<AffineConstantExpr>(e).getValue()));
  }
  return indices;
}

/// The combiner of `op` (one output, a body ending in addf/mulf/maximumf/minimumf/maxnumf/
/// minnumf/addi/muli/max-min si-ui/andi/ori/xori of an element and `%out`), if it has one.
std::optional<Combiner> matchCombiner(linalg::GenericOp op);

} // namespace mlir::gt

#endif
