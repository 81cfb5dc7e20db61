// gt-fuse-elementwise: MLIR's elementwise fusion of linalg generics (the patterns of
// linalg-fuse-elementwise-ops) with a control function that does not fuse a producer's
// transcendentals into a consumer that broadcasts them.
#include "gt/Dialect/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gt {
#define GEN_PASS_DEF_GTFUSEELEMENTWISE
#include "gt/Dialect/Passes.h.inc"

namespace {
/// Whether `op` costs far more than a load: a math-dialect function (exp, log, erf, tanh,
/// sqrt, ...; polynomial approximations of tens of instructions on a CPU), a division, or a
/// run-time check (a call under an scf.if: a loop holding one does not vectorize).
bool costly(Operation &op) {
  return op.walk([](Operation *o) {
             return isa<math::MathDialect>(o->getDialect()) || isa<arith::DivFOp, arith::RemFOp, func::CallOp>(o)
                        ? WalkResult::interrupt()
                        : WalkResult::advance();
           })
      .wasInterrupted();
}

/// Whether fusing the producer of `use` into its consumer keeps the work as it is: MLIR's rule
/// (the producer has no other use), and, unless `recompute`, not when the consumer reads the
/// producer's result broadcast (its indexing map is no permutation: each element read by many
/// consumer iterations) and the producer's body holds a costly op. Fused, that op would run
/// once per consumer iteration: cross-entropy's log of each row's sum once per class.
bool fusable(OpOperand *use, bool recompute) {
  Operation *producer = use->get().getDefiningOp();
  if (!producer || !producer->hasOneUse()) return false;
  if (recompute) return true;
  auto generic = dyn_cast<linalg::GenericOp>(producer);
  auto consumer = dyn_cast<linalg::LinalgOp>(use->getOwner());
  if (!generic || !consumer) return true;
  if (consumer.getMatchingIndexingMap(use).isPermutation()) return true;
  return !llvm::any_of(generic.getRegion().front(), costly);
}

struct GTFuseElementwisePass : impl::GTFuseElementwiseBase<GTFuseElementwisePass> {
  using GTFuseElementwiseBase::GTFuseElementwiseBase;

  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    bool again = recompute;
    linalg::ControlFusionFn control = [again](OpOperand *use) { return fusable(use, again); };
    linalg::ControlFusionFn oneUse = [](OpOperand *use) {
      Operation *producer = use->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    // What linalg-fuse-elementwise-ops adds (MLIR 19), with `control` for the fusion itself.
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, oneUse);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, oneUse);
    GreedyRewriteConfig config;
    config.useTopDownTraversal = true; // as upstream: compile time
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns), config);
  }
};
} // namespace
} // namespace mlir::gt
