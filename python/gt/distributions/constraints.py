"""torch.distributions.constraints: the sets a distribution's parameters and samples live in,
each with check(value), a bool tensor of whether value is in the set (per element, or per
event for simplex and positive_definite)."""
from .. import _functions as T


class Constraint:
    """A set of values: check(value) -> bool tensor. is_discrete and event_dim as PyTorch's."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Real(Constraint):
    def check(self, value):
        return value == value  # (not NaN)


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _Dependent(Constraint):
    """A constraint that depends on other parameters (a support set by them): never checked."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete=None, event_dim=None):
        return _Dependent(is_discrete=self.is_discrete if is_discrete is None else is_discrete,
                          event_dim=self.event_dim if event_dim is None else event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class _IndependentConstraint(Constraint):
    """base_constraint over the rightmost reinterpreted_batch_ndims axes as one event: check()
    is all() over them."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = T.all(result, -1)
        return result

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound

    def __repr__(self):
        return f"{type(self).__name__.lstrip('_')}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return value >= self.lower_bound


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return f"{type(self).__name__.lstrip('_')}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & super().check(value)


class _Simplex(Constraint):
    """Non-negative entries summing to 1 along the last axis (within 1e-6)."""
    event_dim = 1

    def check(self, value):
        return T.all(value >= 0, -1) & (T.abs(T.sum(value, -1) - 1) < 1e-6)


class _PositiveDefinite(Constraint):
    """Symmetric matrices (..., n, n) with positive eigenvalues."""
    event_dim = 2

    def check(self, value):
        from .. import linalg
        symmetric = T.all(T.all(T.abs(value - T.transpose(value, -1, -2)) <= 1e-6 * T.abs(value).amax(), -1), -1)
        return symmetric & T.all(linalg.eigvalsh(value) > 0, -1)


real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
unit_interval = _Interval(0.0, 1.0)
nonnegative_integer = _IntegerInterval(0, float("inf"))
positive_integer = _IntegerInterval(1, float("inf"))
simplex = _Simplex()
positive_definite = _PositiveDefinite()
dependent = _Dependent()
independent = _IndependentConstraint
real_vector = _IndependentConstraint(real, 1)


class _LowerCholesky(Constraint):
    """Lower-triangular matrices with positive diagonals."""
    event_dim = 2

    def check(self, value):
        from .._shaping import diagonal
        lower = T.all(T.all(T.tril(value) == value, -1), -1)
        return lower & T.all(diagonal(value, dim1=-2, dim2=-1) > 0, -1)


lower_cholesky = _LowerCholesky()


class _OneHot(Constraint):
    """Vectors with one 1 and 0s elsewhere (OneHotCategorical's support)."""
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return T.all((value == 0) | (value == 1), -1) & (T.sum(value, -1) == 1)


one_hot = _OneHot()
