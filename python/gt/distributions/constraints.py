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


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return value > self.lower_bound


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return value >= self.lower_bound


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)


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
