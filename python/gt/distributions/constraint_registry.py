"""torch.distributions.constraint_registry: biject_to(constraint) and transform_to(constraint),
a Transform from unconstrained reals onto the constraint's set (to optimize a constrained
parameter unconstrained: `scale = transform_to(constraints.positive)(raw)`).

biject_to's transforms are bijective (for log_prob through TransformedDistribution);
transform_to's need not be (SoftmaxTransform onto the simplex, LowerCholeskyTransform).
Both dispatch on the constraint's type, as PyTorch's ConstraintRegistry; register() adds
factories. Registered here: real, independent, positive / nonnegative / greater_than(_eq),
less_than, interval / half_open_interval (unit_interval: sigmoid alone), simplex, corr_cholesky,
cat, stack, and for transform_to also lower_cholesky, positive_definite and
positive_semidefinite."""
from . import constraints
from . import more_transforms as _mt
from . import transforms
from .more_transforms import _Cat, _CorrCholesky, _PositiveSemidefinite, _Stack

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """constraint type -> factory(constraint) making a Transform."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Registers factory for constraint (a Constraint subclass or an instance, whose type is
        used); usable as a decorator when factory is omitted."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _is_unit(constraint):
    lb, ub = constraint.lower_bound, constraint.upper_bound
    return isinstance(lb, (int, float)) and lb == 0 and isinstance(ub, (int, float)) and ub == 1


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    base = biject_to(constraint.base_constraint)
    return _mt.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    base = transform_to(constraint.base_constraint)
    return _mt.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint):
    lb = constraint.lower_bound
    if isinstance(lb, (int, float)) and lb == 0:
        return transforms.ExpTransform()
    return transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(lb, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint):
    if _is_unit(constraint):
        return transforms.SigmoidTransform()
    lb, ub = constraint.lower_bound, constraint.upper_bound
    return transforms.ComposeTransform([transforms.SigmoidTransform(), transforms.AffineTransform(lb, ub - lb)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return _mt.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return _mt.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return _mt.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(_PositiveSemidefinite)
def _transform_to_positive_definite(constraint):
    return _mt.PositiveDefiniteTransform()


@biject_to.register(_CorrCholesky)
@transform_to.register(_CorrCholesky)
def _transform_to_corr_cholesky(constraint):
    return _mt.CorrCholeskyTransform()


@biject_to.register(_Cat)
def _biject_to_cat(constraint):
    return _mt.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@transform_to.register(_Cat)
def _transform_to_cat(constraint):
    return _mt.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim, constraint.lengths)


@biject_to.register(_Stack)
def _biject_to_stack(constraint):
    return _mt.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(_Stack)
def _transform_to_stack(constraint):
    return _mt.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
