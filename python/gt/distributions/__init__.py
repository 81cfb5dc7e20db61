"""gt.distributions: torch.distributions' common distributions on GT tensors.

    from gt.distributions import Categorical, Normal
    dist = Categorical(logits=policy(state))      # REINFORCE, actor-critic
    action = dist.sample()
    loss = -(dist.log_prob(action) * advantage).mean()

Categorical, Normal, Bernoulli and Uniform, with sample / rsample (reparameterized, for Normal
and Uniform), log_prob, entropy, mean, variance, stddev, batch_shape / event_shape, and
kl_divergence between two of the same kind. Parameters are broadcast like PyTorch's; numbers
become 0-d float32 tensors. Formulas are PyTorch's (torch/distributions/*.py). Distributions
not listed (Beta, Gamma, MultivariateNormal, ...) are not in GT: importing them raises
ImportError.
"""
import math

from .. import _composites, _sorting, _tensor
from .. import _functions as T
from .. import dtypes as _dt
from ..autograd import no_grad
from ..nn import functional as F
from .._array_functions import broadcast_shapes

__all__ = ["Distribution", "Categorical", "Normal", "Bernoulli", "Uniform", "kl_divergence"]


def _as_tensor(x):
    return x if isinstance(x, T.Tensor) else _tensor.tensor(float(x))


def _shape(sample_shape):
    return tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)


class Distribution:
    """The base class: batch_shape (the parameters' broadcast shape), event_shape (() for the
    scalar distributions here), sample(sample_shape) -> sample_shape + batch_shape + event_shape."""
    has_rsample = False

    def __init__(self, batch_shape=(), event_shape=()):
        self.batch_shape = tuple(batch_shape)
        self.event_shape = tuple(event_shape)

    def sample(self, sample_shape=()):
        """A sample without gradient (rsample's, for the distributions that have one)."""
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def __repr__(self):
        return f"{type(self).__name__}(batch_shape={self.batch_shape})"


class Categorical(Distribution):
    """K categories per batch element, from `probs` (..., K), which need not sum to 1 (they are
    normalized), or `logits` (..., K) (normalized with logsumexp). sample() gives int64 indices."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            probs = _as_tensor(probs)
            self.probs = probs / probs.sum(-1, keepdim=True)
            eps = T.finfo(self.probs.dtype).eps
            self.logits = T.log(T.clamp(self.probs, min=eps))  # (PyTorch clamps the same way)
        else:
            logits = _as_tensor(logits)
            self.logits = logits - T.logsumexp(logits, -1, keepdim=True)
            self.probs = T.softmax(self.logits, -1)
        if self.logits.ndim < 1:
            raise ValueError("Categorical needs at least one dimension of categories")
        self._num_events = self.logits.shape[-1]
        super().__init__(self.logits.shape[:-1])

    def sample(self, sample_shape=()):
        n = math.prod(_shape(sample_shape))
        with no_grad():
            flat = self.probs.detach().reshape(-1, self._num_events)
            drawn = _sorting.multinomial(flat, n, replacement=True)  # (batch, n)
            return drawn.T.reshape(*_shape(sample_shape), *self.batch_shape)

    def log_prob(self, value):
        """log P(value) for category indices `value` (integers broadcasting with batch_shape)."""
        value = _as_tensor(value)
        value = T.broadcast_to(T.cast(value, _dt.int64), broadcast_shapes(value.shape, self.batch_shape))
        logits = T.broadcast_to(self.logits, value.shape + (self._num_events,))
        return T.squeeze(T.gather(logits, -1, T.unsqueeze(value, -1)), -1)

    def entropy(self):
        """-sum(p log p) over the categories: batch_shape."""
        logits = T.clamp(self.logits, min=T.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    @property
    def mean(self):
        return T.full(self.batch_shape, float("nan"))

    @property
    def variance(self):
        return T.full(self.batch_shape, float("nan"))


class Normal(Distribution):
    """N(loc, scale^2), elementwise; rsample is loc + scale * eps with eps ~ N(0, 1)."""
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = _as_tensor(loc), _as_tensor(scale)
        shape = broadcast_shapes(self.loc.shape, self.scale.shape)
        self.loc, self.scale = T.broadcast_to(self.loc, shape), T.broadcast_to(self.scale, shape)
        super().__init__(shape)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        return self.loc + self.scale * _tensor.randn(*shape, dtype=self.loc.dtype)

    def log_prob(self, value):
        """The log density at `value` (a tensor or number broadcasting with batch_shape)."""
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - T.log(self.scale) - math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + T.log(self.scale)

    def cdf(self, value):
        """P(X <= value); icdf is its inverse (value in (0, 1))."""
        return 0.5 * (1 + T.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        return self.loc + self.scale * _composites.erfinv(2 * value - 1) * math.sqrt(2)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return self.scale ** 2

    @property
    def stddev(self):
        return self.scale


class Bernoulli(Distribution):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0; samples are floats, as PyTorch's."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs = _as_tensor(probs)
            eps = T.finfo(self.probs.dtype).eps
            p = T.clamp(self.probs, min=eps, max=1 - eps)
            self.logits = T.log(p) - T.log1p(-p)
        else:
            self.logits = _as_tensor(logits)
            self.probs = T.sigmoid(self.logits)
        super().__init__(self.probs.shape)

    def sample(self, sample_shape=()):
        with no_grad():
            p = T.broadcast_to(self.probs.detach(), _shape(sample_shape) + self.batch_shape)
            return _composites.bernoulli(p)

    def log_prob(self, value):
        """log P(value) for value 0 or 1 (floats broadcasting with batch_shape)."""
        logits = T.broadcast_to(self.logits, broadcast_shapes(self.logits.shape, value.shape))
        return -F.binary_cross_entropy_with_logits(logits, T.broadcast_to(value, logits.shape).float(),
                                                   reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def mean(self):
        return self.probs

    @property
    def variance(self):
        return self.probs * (1 - self.probs)


class Uniform(Distribution):
    """Uniform on [low, high); rsample is low + (high - low) * u with u ~ U[0, 1)."""
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = _as_tensor(low), _as_tensor(high)
        shape = broadcast_shapes(self.low.shape, self.high.shape)
        self.low, self.high = T.broadcast_to(self.low, shape), T.broadcast_to(self.high, shape)
        super().__init__(shape)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        return self.low + (self.high - self.low) * _tensor.rand(*shape, dtype=self.low.dtype)

    def log_prob(self, value):
        """-log(high - low) inside [low, high), -inf outside."""
        inside = (value >= self.low) & (value < self.high)
        return T.where(inside, -T.log(self.high - self.low), float("-inf"))

    def entropy(self):
        return T.log(self.high - self.low)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12


def kl_divergence(p, q):
    """KL(p || q) for two distributions of the same kind here (Normal, Categorical, Bernoulli,
    Uniform), elementwise over the batch; NotImplementedError for other pairs."""
    if type(p) is not type(q):
        raise NotImplementedError(f"kl_divergence({type(p).__name__}, {type(q).__name__}) is not implemented")
    if isinstance(p, Normal):
        var_ratio = (p.scale / q.scale) ** 2
        t1 = ((p.loc - q.loc) / q.scale) ** 2
        return 0.5 * (var_ratio + t1 - 1 - T.log(var_ratio))
    if isinstance(p, Categorical):
        t = p.probs * (p.logits - q.logits)
        return T.where(p.probs == 0, 0.0, t).sum(-1)
    if isinstance(p, Bernoulli):
        return (p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
                + (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits)))
    if isinstance(p, Uniform):
        inside = (q.low <= p.low) & (p.high <= q.high)
        return T.where(inside, T.log((q.high - q.low) / (p.high - p.low)), float("inf"))
    raise NotImplementedError(f"kl_divergence for {type(p).__name__} is not implemented")
