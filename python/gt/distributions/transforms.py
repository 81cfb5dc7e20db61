"""torch.distributions.transforms: invertible maps y = f(x) with log |det dy/dx|, for
TransformedDistribution (a squashed Gaussian policy: Normal through TanhTransform).

Each transform has __call__(x), inv (the inverse transform), log_abs_det_jacobian(x, y),
domain/codomain (constraints, with event_dim), bijective and sign, as PyTorch's. With
cache_size=1 a transform remembers its last (x, y), so inv(y) of the y it just made gives x
back exactly (for tanh near +-1, where atanh would lose it), as PyTorch's cache does. Formulas
are PyTorch's (torch/distributions/transforms.py)."""
import math

from .. import _composites
from .. import _functions as T
from ..nn import functional as F
from . import constraints

__all__ = ["Transform", "ExpTransform", "AffineTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform",
           "PowerTransform", "ComposeTransform", "identity_transform"]


class Transform:
    """The base class (see the module's docstring)."""
    bijective = False
    domain = constraints.real
    codomain = constraints.real
    sign = 1

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached = None  # (x, y)

    @property
    def event_dim(self):
        return max(self.domain.event_dim, self.codomain.event_dim)

    @property
    def inv(self):
        return _InverseTransform(self)

    def __call__(self, x):
        if self._cache_size and self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size and self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform):
        super().__init__()
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    bijective = property(lambda self: self._inv.bijective)
    sign = property(lambda self: self._inv.sign)

    @property
    def inv(self):
        return self._inv

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"


class _Identity(Transform):
    bijective = True

    def _call(self, x):
        return x

    def _inverse(self, y):
        return y

    def log_abs_det_jacobian(self, x, y):
        return T.zeros_like(x)


identity_transform = _Identity()


class ExpTransform(Transform):
    """y = exp(x)."""
    codomain = constraints.positive
    bijective = True

    def _call(self, x):
        return T.exp(x)

    def _inverse(self, y):
        return T.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    """y = sigmoid(x); the inverse is the logit of y clamped to (eps, 1 - eps)."""
    codomain = constraints.unit_interval
    bijective = True

    def _call(self, x):
        eps = T.finfo(x.dtype).eps
        return T.clamp(T.sigmoid(x), min=eps, max=1 - eps)

    def _inverse(self, y):
        eps = T.finfo(y.dtype).eps
        y = T.clamp(y, min=eps, max=1 - eps)
        return T.log(y) - T.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x); log |dy/dx| = 2 (log 2 - x - softplus(-2x)), the stable form of
    log(1 - tanh(x)^2) PyTorch uses."""
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True

    def _call(self, x):
        return T.tanh(x)

    def _inverse(self, y):
        return 0.5 * (T.log1p(y) - T.log1p(-y))  # atanh

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""
    codomain = constraints.positive
    bijective = True

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return y + T.log(-_composites.expm1(-y))

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class PowerTransform(Transform):
    """y = x ** exponent on positive x."""
    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size)
        self.exponent = exponent

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return T.abs(self.exponent * y / x).log()


class AffineTransform(Transform):
    """y = loc + scale x; event_dim > 0 treats the rightmost axes as one event (its log det
    sums over them)."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    @property
    def sign(self):
        return self.scale.sign() if isinstance(self.scale, T.Tensor) else (1 if self.scale >= 0 else -1)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        result = T.abs(scale).log() if isinstance(scale, T.Tensor) else T.full_like(x, math.log(abs(scale)))
        result = T.broadcast_to(result, x.shape) if result.shape != x.shape else result
        for _ in range(self._event_dim):
            result = result.sum(-1)
        return result


class ComposeTransform(Transform):
    """parts[0], then parts[1], ...; log det the sum of the parts' (over the widest event)."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size)
        self.parts = list(parts)

    bijective = property(lambda self: all(p.bijective for p in self.parts))
    domain = property(lambda self: self.parts[0].domain if self.parts else constraints.real)
    codomain = property(lambda self: self.parts[-1].codomain if self.parts else constraints.real)

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return T.zeros_like(x)
        total, event_dim = 0, self.event_dim
        for part in self.parts:
            y_part = part(x)
            term = part.log_abs_det_jacobian(x, y_part)
            for _ in range(event_dim - part.event_dim):
                term = term.sum(-1)
            total = total + term
            x = y_part
        return total
