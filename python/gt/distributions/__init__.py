"""gt.distributions: torch.distributions' common distributions on GT tensors.

    from gt.distributions import Categorical, Normal
    dist = Categorical(logits=policy(state))      # REINFORCE, actor-critic
    action = dist.sample()
    loss = -(dist.log_prob(action) * advantage).mean()

Categorical, Normal, Bernoulli, Uniform, Exponential, Laplace, LogNormal, MultivariateNormal,
Independent, Gamma, Chi2, Beta, Dirichlet, Poisson, OneHotCategorical and
TransformedDistribution (with the transforms of gt.distributions.transforms: Exp, Affine,
Sigmoid, Tanh, Compose), with sample, rsample (reparameterized: all but Categorical,
OneHotCategorical, Bernoulli and Poisson, whose rsample raises NotImplementedError; Gamma's,
Chi2's, Beta's and Dirichlet's by implicit differentiation of the Gamma CDF, see
_standard_gamma_rsample), log_prob, entropy (not Poisson), mean, mode, variance, stddev,
perplexity, expand, enumerate_support (Categorical, OneHotCategorical, Bernoulli),
arg_constraints / support, batch_shape / event_shape, and kl_divergence (register_kl adds
pairs). Parameters are broadcast like PyTorch's: numbers take the dtype of the first tensor
parameter (float32 without one). Formulas are PyTorch's (torch/distributions/*.py). Gamma
samples (and Chi2's, Beta's, Dirichlet's, made from them) use Marsaglia and Tsang's method on
the workers; Poisson samples are drawn on the client with NumPy (one sync to read the rates).

Arguments are validated as PyTorch's (validate_args, on by default; set_default_validate_args):
shapes at once, values (NaN logits, a negative scale, a log_prob value outside the support)
at the next point the client waits for values (.item(), .numpy(), print), where a ValueError
names the parameter, the distribution and the line that made it: PyTorch checks at once with a
device sync, GT defers the check so that the step does not wait (like CUDA's device-side
asserts)."""
import functools
import math
import sys

from .. import _composites, _sorting, _tensor
from .. import _functions as T
from .. import dtypes as _dt
from ..autograd import is_grad_enabled, no_grad
from ..nn import functional as F
from .._array_functions import broadcast_shapes
from . import constraints  # noqa: F401 (torch.distributions.constraints)

__all__ = ["Distribution", "Categorical", "Normal", "Bernoulli", "Uniform", "Exponential", "Laplace", "LogNormal",
           "MultivariateNormal", "Independent", "Gamma", "Chi2", "Beta", "Dirichlet", "Poisson", "OneHotCategorical",
           "TransformedDistribution", "RelaxedBernoulli", "LogitRelaxedBernoulli", "Wishart", "kl_divergence",
           "register_kl"]


def _as_tensor(x, like=None):
    """x as a tensor; a number in the dtype of `like` (a tensor) when it is floating, else the
    default float dtype."""
    if isinstance(x, T.Tensor):
        return x
    d = like.dtype if like is not None and like.dtype.is_floating_point else _dt.default_float()
    return _tensor.tensor(float(x), dtype=d)


def _broadcast(*params):
    """The parameters as tensors broadcast to one shape, and that shape (the batch shape);
    numbers take the first tensor parameter's dtype, as PyTorch's broadcast_all."""
    like = next((p for p in params if isinstance(p, T.Tensor)), None)
    tensors = [_as_tensor(p, like) for p in params]
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return [T.broadcast_to(t, shape) for t in tensors], shape


def broadcast_all(*values):
    """The values (tensors or numbers) as tensors of one broadcast shape (numbers in the first
    tensor's dtype), as torch.distributions.utils.broadcast_all."""
    return tuple(_broadcast(*values)[0])


def _standard_normal(shape, dtype, device):
    """Samples of N(0, 1) of `shape` (torch.distributions.utils')."""
    return _tensor.randn(*shape, dtype=dtype)


def _sum_rightmost(value, dim):
    """value summed over its last `dim` axes (torch.distributions.utils')."""
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1) if dim > 0 else value


def clamp_probs(probs):
    """probs clamped to [eps, 1 - eps] of their dtype."""
    eps = T.finfo(probs.dtype).eps
    return T.clamp(probs, min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log(p) (log(p) - log(1 - p) when is_binary), probs clamped first."""
    p = clamp_probs(probs)
    return T.log(p) - T.log1p(-p) if is_binary else T.log(p)


def logits_to_probs(logits, is_binary=False):
    """sigmoid (is_binary) or softmax over the last axis."""
    return T.sigmoid(logits) if is_binary else T.softmax(logits, -1)


def _shape(sample_shape):
    return tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)


class _lazy:
    """A parameter computed from another on first use, then kept in the instance (PyTorch's
    lazy_property: Categorical(logits=...) makes probs only when asked, and prints without it)."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.fn(instance)
        instance.__dict__[self.fn.__name__] = value
        return value


lazy_property = _lazy  # (torch.distributions.utils' name)


def _user_line():
    """file:line of the innermost frame outside gt (where the user made the distribution)."""
    frame, _ = _tensor.outside_gt(sys._getframe(1))
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "?"


class Distribution:
    """The base class: batch_shape (the parameters' broadcast shape), event_shape (() for the
    scalar distributions), sample(sample_shape) -> sample_shape + batch_shape + event_shape.
    `arg_constraints` (parameter name -> constraint) and `support` are PyTorch's; validation
    (validate_args, default on) checks them (see the module's docstring)."""
    has_rsample = False
    has_enumerate_support = False
    arg_constraints = {}
    support = None
    _validate_args = True
    _init_params = ()  # the constructor's parameters expand() broadcasts

    def __init_subclass__(cls, **kwargs):
        """A subclass's log_prob and cdf validate their tensor argument first (_validate_sample)."""
        super().__init_subclass__(**kwargs)
        for name in ("log_prob", "cdf"):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_validates", False):
                setattr(cls, name, _validating(fn))

    @staticmethod
    def set_default_validate_args(value):
        """Turns argument validation on or off for distributions made from now on (the default
        on, as PyTorch's under Python's __debug__)."""
        if value not in (True, False):
            raise ValueError("set_default_validate_args expects True or False")
        Distribution._validate_args = value

    # Stored as PyTorch's _batch_shape / _event_shape, which subclasses in libraries set and read
    # (gpytorch's MultivariateNormal), or replace with read-only properties of their own (zuko's flows)
    @property
    def batch_shape(self):
        shape = self._batch_shape  # (a Size, also when a subclass assigned a tuple to _batch_shape)
        return shape if type(shape) is _tensor.Size else _tensor.Size(shape)

    @batch_shape.setter
    def batch_shape(self, value):
        self._batch_shape = _tensor.Size(value)

    @property
    def event_shape(self):
        shape = self._event_shape  # (a Size, also when a subclass assigned a tuple to _event_shape)
        return shape if type(shape) is _tensor.Size else _tensor.Size(shape)

    @event_shape.setter
    def event_shape(self, value):
        self._event_shape = _tensor.Size(value)

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _tensor.Size(batch_shape)
        self._event_shape = _tensor.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            line = None
            for name, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint) or name not in self.__dict__:
                    continue
                value = self.__dict__[name]
                if not isinstance(value, T.Tensor):
                    continue
                if line is None:
                    line = _user_line()
                    # as printed now (a later access may add a lazy parameter); a one-element
                    # parameter prints its value, which would wait: that one is printed if raised
                    shown = repr(self) if all(self.__dict__[k].numel() != 1 for k in self.arg_constraints
                                              if isinstance(self.__dict__.get(k), T.Tensor)) else None
                _check_later(constraint.check(value.detach()), lambda name=name, value=value, constraint=constraint,
                             shown=shown: (
                    f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of distribution "
                    f"{shown or repr(self)} to satisfy the constraint {constraint!r}, but found invalid values:\n"
                    f"{value}"), line)

    def _validate_sample(self, value):
        """Checks a log_prob/cdf argument: its shape at once (ValueError, as PyTorch), whether it
        lies in the support later (see the module's docstring)."""
        if not self._validate_args:
            return
        if not isinstance(value, T.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim = len(self.event_shape)
        if value.shape[len(value.shape) - event_dim:] != self.event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{tuple(self.event_shape)}.")
        actual, expected = value.shape[:len(value.shape) - event_dim], self.batch_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {tuple(value.shape)} vs "
                                 f"{tuple(self.batch_shape + self.event_shape)}.")
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        _check_later(support.check(value.detach()), lambda: (
            f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be within the support "
            f"({support!r}) of the distribution {self!r}, but found invalid values:\n{value}"), _user_line())

    def sample(self, sample_shape=()):
        """A sample without gradient (rsample's, for the distributions that have one)."""
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample")

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def perplexity(self):
        """exp(entropy())."""
        return T.exp(self.entropy())

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def expand(self, batch_shape, _instance=None):
        """The distribution with its parameters broadcast to `batch_shape` (+ their event axes)."""
        batch_shape = _tensor.Size(batch_shape)
        params = {}
        for name in self._init_params:
            value = getattr(self, name)
            event = value.shape[len(self.batch_shape):]
            params[name] = T.broadcast_to(value, tuple(batch_shape) + tuple(event))
        return type(self)(**params, validate_args=False)

    def _get_checked_instance(self, cls, _instance=None):
        """A new, uninitialised instance of type(self) for a subclass's expand() (or _instance), as
        PyTorch's; NotImplementedError when type(self) has its own __init__ and no _instance."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _extended_shape(self, sample_shape=()):
        return _tensor.Size(_shape(sample_shape) + tuple(self.batch_shape) + tuple(self.event_shape))

    def __repr__(self):
        """As PyTorch's: each parameter (of arg_constraints) made so far with its shape, or its
        value when it has one element."""
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else self.__dict__[k].size()}"
                         for k in names)
        return f"{type(self).__name__}({args})"


# ---------------------------------------------------------------- deferred validation
def _validating(fn):
    @functools.wraps(fn)
    def checked(self, value):
        if self._validate_args and isinstance(value, T.Tensor):
            self._validate_sample(value)
        return fn(self, value)
    checked._validates = True
    return checked


def _check_later(ok, message, line):
    """Records bool tensor `ok` (every element must be True) to be read at the next sync point
    (gt._tensor.run_pending_checks), with the message to raise and the user's line."""
    _tensor.defer_check(ok, lambda: f"{message()} (checked at {line})")


class Categorical(Distribution):
    """K categories per batch element, from `probs` (..., K), which need not sum to 1 (they are
    normalized), or `logits` (..., K) (normalized with logsumexp). sample() gives int64 indices."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _init_params = ("logits",)

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = _as_tensor(probs if probs is not None else logits)
        if given.ndim < 1:
            raise ValueError("`probs` parameter must be at least one-dimensional." if probs is not None else
                             "`logits` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = given / given.sum(-1, keepdim=True)
        else:
            self.logits = given - T.logsumexp(given, -1, keepdim=True)
        self._num_events = given.shape[-1]
        super().__init__(given.shape[:-1], validate_args=validate_args)  # (checks the parameter given)

    @_lazy
    def logits(self):
        eps = T.finfo(self.probs.dtype).eps
        return T.log(T.clamp(self.probs, min=eps))  # (PyTorch clamps the same way)

    @_lazy
    def probs(self):
        return T.softmax(self.logits, -1)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self):
        return self.logits.shape

    @property
    def mode(self):
        return self.probs.argmax(-1)

    def enumerate_support(self, expand=True):
        """0 .. K-1 along a new first axis (expanded over batch_shape unless expand=False)."""
        values = _tensor.arange(self._num_events).reshape((-1,) + (1,) * len(self.batch_shape))
        return T.broadcast_to(values, (self._num_events,) + tuple(self.batch_shape)) if expand else values

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

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _init_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), shape = _broadcast(loc, scale)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        return self.loc + self.scale * _tensor.randn(*shape, dtype=self.loc.dtype)

    @property
    def mode(self):
        return self.loc

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


def _binary_parameter(d, probs, logits):
    """Sets the one of probs/logits given (the other is made on first use, _lazy) and returns
    it. ValueError unless exactly one is given."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        d.probs = _as_tensor(probs)
        return d.probs
    d.logits = _as_tensor(logits)
    return d.logits


class Bernoulli(Distribution):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0; samples are floats, as PyTorch's."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _init_params = ("logits",)

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(_binary_parameter(self, probs, logits).shape, validate_args=validate_args)

    @_lazy
    def logits(self):
        eps = T.finfo(self.probs.dtype).eps
        p = T.clamp(self.probs, min=eps, max=1 - eps)
        return T.log(p) - T.log1p(-p)

    @_lazy
    def probs(self):
        return T.sigmoid(self.logits)

    @property
    def param_shape(self):
        return self.probs.shape

    @property
    def mode(self):
        """1 where probs > 1/2, 0 where below, NaN at exactly 1/2 (as PyTorch's)."""
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return T.where(self.probs == 0.5, float("nan"), m)

    def enumerate_support(self, expand=True):
        values = _tensor.tensor([0.0, 1.0], dtype=self.probs.dtype).reshape((-1,) + (1,) * len(self.batch_shape))
        return T.broadcast_to(values, (2,) + tuple(self.batch_shape)) if expand else values

    def sample(self, sample_shape=()):
        with no_grad():
            p = T.broadcast_to(self.probs.detach(), _shape(sample_shape) + self.batch_shape)
            return _composites.bernoulli(p)

    def log_prob(self, value):
        """log P(value) for value 0 or 1 (floats broadcasting with batch_shape)."""
        value = _as_tensor(value, self.probs)
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

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    _init_params = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        (self.low, self.high), shape = _broadcast(low, high)
        super().__init__(shape, validate_args=validate_args)
        if self._validate_args:
            line = _user_line()
            _check_later(self.low < self.high, lambda: "Uniform is not defined when low>= high", line)

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mode(self):
        return float("nan") * self.high

    def cdf(self, value):
        """(value - low) / (high - low), clamped to [0, 1]."""
        return T.clamp((value - self.low) / (self.high - self.low), min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

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


class Exponential(Distribution):
    """rate * exp(-rate x) for x >= 0; rsample is -log(u) / rate with u ~ U(0, 1]."""
    has_rsample = True

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    _init_params = ("rate",)

    def __init__(self, rate, validate_args=None):
        self.rate = _as_tensor(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mode(self):
        return T.zeros_like(self.rate)

    def rsample(self, sample_shape=()):
        u = 1.0 - _tensor.rand(*(_shape(sample_shape) + self.batch_shape), dtype=self.rate.dtype)  # (0, 1]
        return -T.log(u) / self.rate

    def log_prob(self, value):
        return T.log(self.rate) - self.rate * value

    def cdf(self, value):
        return 1 - T.exp(-self.rate * value)

    def entropy(self):
        return 1.0 - T.log(self.rate)

    @property
    def mean(self):
        return 1.0 / self.rate

    @property
    def variance(self):
        return self.rate ** -2


class Laplace(Distribution):
    """exp(-|x - loc| / scale) / (2 scale); rsample is loc - scale sign(u) log(1 - |u|) with
    u ~ U(-1, 1)."""
    has_rsample = True

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _init_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), shape = _broadcast(loc, scale)
        super().__init__(shape, validate_args=validate_args)

    @property
    def mode(self):
        return self.loc

    def rsample(self, sample_shape=()):
        eps = T.finfo(self.loc.dtype).eps
        u = _tensor.rand(*(_shape(sample_shape) + self.batch_shape), dtype=self.loc.dtype) * 2 - 1
        u = T.clamp(u, min=eps - 1, max=1 - eps)  # (PyTorch keeps u off -1 the same way)
        return self.loc - self.scale * T.sign(u) * T.log1p(-T.abs(u))

    def log_prob(self, value):
        return -T.log(2 * self.scale) - T.abs(value - self.loc) / self.scale

    def cdf(self, value):
        d = value - self.loc
        return 0.5 - 0.5 * T.sign(d) * _composites.expm1(-T.abs(d) / self.scale)

    def entropy(self):
        return 1 + T.log(2 * self.scale)

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale ** 2


class LogNormal(Distribution):
    """exp(X) with X ~ Normal(loc, scale)."""
    has_rsample = True

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    _init_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args=False)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    @property
    def mode(self):
        return T.exp(self.loc - self.scale ** 2)

    def rsample(self, sample_shape=()):
        return T.exp(self.base_dist.rsample(sample_shape))

    def log_prob(self, value):
        y = T.log(value)
        return self.base_dist.log_prob(y) - y

    def entropy(self):
        return self.base_dist.entropy() + self.loc

    @property
    def mean(self):
        return T.exp(self.loc + self.scale ** 2 / 2)

    @property
    def variance(self):
        s2 = self.scale ** 2
        return _composites.expm1(s2) * T.exp(2 * self.loc + s2)


def _scale_tril(covariance_matrix, precision_matrix, scale_tril):
    """The lower Cholesky factor of the one scale matrix given (through gt.linalg); ValueError
    unless exactly one is."""
    from .. import linalg
    if sum(m is not None for m in (covariance_matrix, precision_matrix, scale_tril)) != 1:
        raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return linalg.cholesky(covariance_matrix)
    return linalg.cholesky(linalg.inv(precision_matrix))


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors of size k, with Sigma given as exactly one of
    `covariance_matrix`, `precision_matrix` (its inverse) or `scale_tril` (its lower Cholesky
    factor L, Sigma = L L^T); loc (..., k), matrices (..., k, k), batch axes broadcast.
    rsample is loc + L eps with eps ~ N(0, I). The factorizations run through gt.linalg (on the
    client); log_prob solves with L (PyTorch's formulas)."""
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        L = _scale_tril(covariance_matrix, precision_matrix, scale_tril)
        loc = _as_tensor(loc)
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if L.ndim < 2 or L.shape[-1] != L.shape[-2] or L.shape[-1] != loc.shape[-1]:
            raise ValueError(f"the scale matrix {list(L.shape)} must be (..., k, k) with k = loc's last size, "
                             f"{loc.shape[-1]}")
        batch = broadcast_shapes(loc.shape[:-1], L.shape[:-2])
        k = loc.shape[-1]
        self.loc = T.broadcast_to(loc, batch + (k,))
        self._unbroadcasted_scale_tril = L
        self.scale_tril = T.broadcast_to(L, batch + (k, k))
        self._given = "covariance_matrix" if covariance_matrix is not None else \
            "precision_matrix" if precision_matrix is not None else "scale_tril"
        super().__init__(batch, (k,), validate_args=validate_args)

    @property
    def scale_tril(self):
        """L (batch + (k, k)): the one made here, or _unbroadcasted_scale_tril broadcast (PyTorch's
        attribute, which a subclass that skips this __init__ provides: gpytorch's lazy MVN)."""
        L = self.__dict__.get("scale_tril")
        if L is None:
            k = self.event_shape[-1]
            L = T.broadcast_to(self._unbroadcasted_scale_tril, tuple(self.batch_shape) + (k, k))
        return L

    @scale_tril.setter
    def scale_tril(self, value):
        self.__dict__["scale_tril"] = value

    arg_constraints = {"loc": constraints.real_vector, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    _init_params = ("loc", "scale_tril")

    def __repr__(self):
        """As PyTorch's: loc and the matrix it was given (covariance_matrix, precision_matrix or scale_tril)."""
        given = self.__dict__.get("_given", "scale_tril")
        loc = self.loc if self.loc.numel() == 1 else self.loc.size()
        return f"MultivariateNormal(loc: {loc}, {given}: {self.scale_tril.size()})"

    @property
    def mode(self):
        return self.loc

    @property
    def covariance_matrix(self):
        return self.scale_tril @ self.scale_tril.mT

    @property
    def precision_matrix(self):
        from .. import linalg
        return linalg.inv(self.covariance_matrix)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape + self.event_shape
        eps = _tensor.randn(*shape, dtype=self.loc.dtype)
        return self.loc + T.squeeze(self.scale_tril @ T.unsqueeze(eps, -1), -1)

    def _half_log_det(self):
        return T.log(_diagonal(self.scale_tril)).sum(-1)

    def log_prob(self, value):
        """The log density at vectors `value` (..., k)."""
        from .. import linalg
        diff = _as_tensor(value) - self.loc
        L = T.broadcast_to(self.scale_tril, diff.shape + diff.shape[-1:])
        z = T.squeeze(linalg.solve_triangular(L, T.unsqueeze(diff, -1), upper=False), -1)
        k = self.event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + (z * z).sum(-1)) - self._half_log_det()

    def entropy(self):
        k = self.event_shape[0]
        return 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return (self.scale_tril ** 2).sum(-1)


def _diagonal(m):
    from .._shaping import diagonal
    return diagonal(m, dim1=-2, dim2=-1)


class Independent(Distribution):
    """`base_distribution` with its rightmost `reinterpreted_batch_ndims` batch axes taken as
    event axes: log_prob and entropy sum over them (a diagonal Normal as one distribution over
    vectors, as torch.distributions.Independent)."""

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = reinterpreted_batch_ndims
        if n > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {n} vs {len(base_distribution.batch_shape)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        self.has_rsample = base_distribution.has_rsample
        self.has_enumerate_support = base_distribution.has_enumerate_support and n == 0
        cut = len(base_distribution.batch_shape) - n
        super().__init__(base_distribution.batch_shape[:cut],
                         base_distribution.batch_shape[cut:] + base_distribution.event_shape, validate_args=False)

    arg_constraints = {}

    @property
    def support(self):
        base = self.base_dist.support
        return constraints.independent(base, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims else base

    @property
    def mode(self):
        return self.base_dist.mode

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        base = self.base_dist.expand(batch_shape + tuple(self.event_shape[:self.reinterpreted_batch_ndims]))
        return Independent(base, self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"

    def _sum(self, x):
        for _ in range(self.reinterpreted_batch_ndims):
            x = x.sum(-1)
        return x

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return self._sum(self.base_dist.log_prob(value))

    def entropy(self):
        return self._sum(self.base_dist.entropy())

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def variance(self):
        return self.base_dist.variance


def _standard_gamma(alpha, shape):
    """Gamma(alpha, 1) samples of `shape` (alpha broadcast to it): Marsaglia and Tsang, "A simple
    method for generating gamma variables", ACM TOMS 26(3), 2000. For alpha >= 1, d = alpha - 1/3,
    c = 1 / sqrt(9 d), v = (1 + c z)^3 with z ~ N(0, 1) is accepted when v > 0 and
    log u < z^2 / 2 + d - d v + d log v (u ~ U(0, 1)), giving d v; alpha < 1 samples alpha + 1 and
    multiplies by u^(1 / alpha). Each element draws 16 candidates on the worker and keeps its
    first accepted one (each is accepted with probability >= 0.95; an element with none, which
    happens with probability below 1e-20, keeps d, the mode of its proposal): no sync, no loop."""
    k = 16
    a = T.broadcast_to(alpha, shape)
    boost = a < 1.0
    a1 = T.where(boost, a + 1.0, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / T.sqrt(9.0 * d)
    z = _tensor.randn(*((k,) + tuple(shape)), dtype=a.dtype)
    u = _tensor.rand(*((k,) + tuple(shape)), dtype=a.dtype)
    v = (1.0 + c * z) ** 3
    positive = v > 0
    safe_v = T.where(positive, v, T.ones_like(v))
    accept = positive & (T.log(T.clamp(u, min=1e-38)) < 0.5 * z * z + d - d * safe_v + d * T.log(safe_v))
    # The first accepted candidate: argmax of the mask (its first maximum), d where none is.
    first = T.argmax(accept.float(), 0)
    chosen = T.squeeze(T.gather(d * safe_v, 0, T.unsqueeze(first, 0)), 0)
    any_accepted = accept.any(0)
    g = T.where(any_accepted, chosen, d)
    u_boost = _tensor.rand(*tuple(shape), dtype=a.dtype)
    return T.where(boost, g * T.pow(T.clamp(u_boost, min=1e-38), 1.0 / a), g)


def _standard_gamma_rsample(alpha, shape):
    """_standard_gamma's samples with a reparameterized gradient in alpha, by implicit
    differentiation of the CDF (Figurnov et al., "Implicit Reparameterization Gradients", 2018;
    as PyTorch's Gamma.rsample): a sample z with P(alpha, z) = u moves with alpha as
    dz/dalpha = -(dP/dalpha) / p(z), p the density z^(alpha-1) e^-z / Gamma(alpha). dP/dalpha is
    a central difference of gt.special.gammainc in float64 (step 1e-4 alpha; gammainc is
    accurate to ~1e-12, so the derivative to ~1e-7 relative)."""
    with no_grad():
        z = _standard_gamma(alpha.detach(), shape)
    if not (alpha.requires_grad and is_grad_enabled()):
        return z
    return _gamma_reparameterization().apply(T.broadcast_to(alpha, shape), z)


@functools.lru_cache(maxsize=None)
def _gamma_reparameterization():
    from ..autograd import Function

    class GammaSample(Function):
        """z, a Gamma(alpha, 1) sample, as a function of alpha (see _standard_gamma_rsample)."""

        @staticmethod
        def forward(ctx, alpha, z):
            ctx.save_for_backward(alpha, z)
            return z

        @staticmethod
        def backward(ctx, g):
            alpha, z = ctx.saved_tensors
            a, x = T.cast(alpha, _dt.float64), T.cast(z, _dt.float64)
            h = 1e-4 * a
            dp = (_composites.gammainc(a + h, x) - _composites.gammainc(a - h, x)) / (2.0 * h)
            safe_x = T.clamp(x, min=1e-300)
            density = T.exp((a - 1.0) * T.log(safe_x) - safe_x - T.lgamma(a))
            dz = T.where(density > 0, -dp / T.where(density > 0, density, 1.0), 0.0)
            return T.cast(g * T.cast(dz, g.dtype), alpha.dtype), None
    return GammaSample


class Gamma(Distribution):
    """rate^concentration x^(concentration - 1) e^(-rate x) / Gamma(concentration) for x > 0.
    rsample's gradient in concentration is implicit (see _standard_gamma_rsample), in rate
    through the division."""
    has_rsample = True

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    _init_params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        (self.concentration, self.rate), shape = _broadcast(concentration, rate)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + self.batch_shape
        return _standard_gamma_rsample(self.concentration, shape) / T.broadcast_to(self.rate, shape)

    def cdf(self, value):
        """P(X <= value) = gammainc(concentration, rate value) (as PyTorch's)."""
        return _composites.gammainc(self.concentration, self.rate * value)

    def log_prob(self, value):
        a, b = self.concentration, self.rate
        return _composites.xlogy(a, b) + _composites.xlogy(a - 1, value) - b * value - T.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - T.log(self.rate) + T.lgamma(a) + (1.0 - a) * T.digamma(a)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return T.clamp((self.concentration - 1) / self.rate, min=0)

    @property
    def variance(self):
        return self.concentration / self.rate ** 2


class Chi2(Gamma):
    """Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}
    _init_params = ("df",)

    def __init__(self, df, validate_args=None):
        self.df = _as_tensor(df)
        super().__init__(0.5 * self.df, T.full_like(self.df, 0.5), validate_args=validate_args)


class Dirichlet(Distribution):
    """Gamma(alpha) / sum over the last axis of `concentration` (..., K): event_shape (K,)."""
    has_rsample = True

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    _init_params = ("concentration",)

    def __init__(self, concentration, validate_args=None):
        self.concentration = _as_tensor(concentration)
        if len(self.concentration.shape) < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        super().__init__(self.concentration.shape[:-1], self.concentration.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=()):
        """Normalized Gamma(concentration) samples, with _standard_gamma_rsample's gradient."""
        g = _standard_gamma_rsample(self.concentration, _shape(sample_shape) + tuple(self.concentration.shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        a = self.concentration
        return (_composites.xlogy(a - 1.0, value)).sum(-1) + T.lgamma(a.sum(-1)) - T.lgamma(a).sum(-1)

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (T.lgamma(a).sum(-1) - T.lgamma(a0) - (k - a0) * T.digamma(a0)
                - ((a - 1.0) * T.digamma(a)).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def variance(self):
        a0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (a0 - self.concentration) / (a0 ** 2 * (a0 + 1))


class Beta(Distribution):
    """x^(a - 1) (1 - x)^(b - 1) / B(a, b) on (0, 1), a = concentration1, b = concentration0;
    a Dirichlet over (x, 1 - x)."""
    has_rsample = True

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    _init_params = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args=None):
        (self.concentration1, self.concentration0), shape = _broadcast(concentration1, concentration0)
        self._dirichlet = Dirichlet(T.stack([self.concentration1, self.concentration0], -1), validate_args=False)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        value = _as_tensor(value, self.concentration1)
        return self._dirichlet.log_prob(T.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total ** 2 * (total + 1))


class Poisson(Distribution):
    """rate^k e^(-rate) / k! for k = 0, 1, 2, ...; samples are drawn on the client with NumPy
    (seeded from GT's generator, one sync to read the rates) and are float tensors of counts."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _init_params = ("rate",)

    def __init__(self, rate, validate_args=None):
        self.rate = _as_tensor(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def sample(self, sample_shape=()):
        import numpy as np
        shape = _shape(sample_shape) + self.batch_shape
        rng = np.random.default_rng(_tensor._next_seed())
        rate = np.broadcast_to(self.rate.detach().numpy(), shape)
        return _tensor.tensor(rng.poisson(rate).astype(self.rate.dtype.numpy))

    def log_prob(self, value):
        return _composites.xlogy(value, self.rate) - self.rate - T.lgamma(value + 1.0)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return T.floor(self.rate)

    @property
    def variance(self):
        return self.rate


_KL_REGISTRY = {}  # (type p, type q) -> fn(p, q), what register_kl added


def register_kl(type_p, type_q):
    """Decorator: fn(p, q) computes kl_divergence(p, q) for p of type_p and q of type_q (or
    subclasses: the most specific registered pair wins), as torch.distributions.kl.register_kl.
    Any classes are taken, as PyTorch's (pyro registers its own Distribution base); TypeError
    for something else."""
    if not (isinstance(type_p, type) and isinstance(type_q, type)):
        raise TypeError(f"Expected type_p and type_q to be Distribution subclasses but got {type_p} and {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn
    return decorator


def _registered_kl(p, q):
    matches = [(tp, tq) for tp, tq in _KL_REGISTRY if isinstance(p, tp) and isinstance(q, tq)]
    if not matches:
        return None
    best = min(matches, key=lambda m: (type(p).__mro__.index(m[0]), type(q).__mro__.index(m[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p, q):
    """KL(p || q), elementwise over the batch: a pair register_kl added, else two distributions
    of the same kind here (Normal, Categorical, OneHotCategorical, Bernoulli, Uniform, Exponential,
    Laplace, LogNormal, MultivariateNormal, Gamma, Chi2, Beta, Dirichlet, Poisson, Independent
    over such; inf where q gives no probability to what p can draw, as PyTorch's);
    NotImplementedError for other pairs."""
    fn = _registered_kl(p, q)
    if fn is not None:
        return fn(p, q)
    if type(p) is not type(q):
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    if isinstance(p, OneHotCategorical):
        return kl_divergence(p._categorical, q._categorical)
    if isinstance(p, Poisson):
        return p.rate * (T.log(p.rate) - T.log(q.rate)) - (p.rate - q.rate)
    if isinstance(p, Independent):
        if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
            raise NotImplementedError("kl_divergence of Independent distributions over different event axes")
        return p._sum(kl_divergence(p.base_dist, q.base_dist))
    if isinstance(p, LogNormal):
        return kl_divergence(p.base_dist, q.base_dist)
    if isinstance(p, Gamma):  # Chi2 too
        ap, bp, aq, bq = p.concentration, p.rate, q.concentration, q.rate
        return ((ap - aq) * T.digamma(ap) - T.lgamma(ap) + T.lgamma(aq) + aq * (T.log(bp) - T.log(bq))
                + ap * (bq - bp) / bp)
    if isinstance(p, Beta):
        return kl_divergence(p._dirichlet, q._dirichlet)
    if isinstance(p, Dirichlet):
        ap, aq = p.concentration, q.concentration
        sp = ap.sum(-1)
        return (T.lgamma(sp) - T.lgamma(aq.sum(-1)) - (T.lgamma(ap) - T.lgamma(aq)).sum(-1)
                + ((ap - aq) * (T.digamma(ap) - T.unsqueeze(T.digamma(sp), -1))).sum(-1))
    if isinstance(p, Exponential):
        ratio = q.rate / p.rate
        return ratio - 1 - T.log(ratio)
    if isinstance(p, Laplace):
        ratio = p.scale / q.scale
        d = T.abs(p.loc - q.loc)
        return -T.log(ratio) + d / q.scale + ratio * T.exp(-d / p.scale) - 1
    if isinstance(p, MultivariateNormal):
        # (tr(Sq^-1 Sp) + |Lq^-1 (mq - mp)|^2 - k) / 2 + log det Lq - log det Lp
        from .. import linalg
        k = p.event_shape[0]
        batch = broadcast_shapes(p.batch_shape, q.batch_shape)
        Lp = T.broadcast_to(p.scale_tril, batch + (k, k))
        Lq = T.broadcast_to(q.scale_tril, batch + (k, k))
        m = linalg.solve_triangular(Lq, Lp, upper=False)  # Lq^-1 Lp: its squared norm is the trace term
        z = T.squeeze(linalg.solve_triangular(Lq, T.unsqueeze(T.broadcast_to(q.loc - p.loc, batch + (k,)), -1),
                                              upper=False), -1)
        return 0.5 * ((m * m).sum((-2, -1)) + (z * z).sum(-1) - k) + q._half_log_det() - p._half_log_det()
    if isinstance(p, Normal):
        var_ratio = (p.scale / q.scale) ** 2
        t1 = ((p.loc - q.loc) / q.scale) ** 2
        return 0.5 * (var_ratio + t1 - 1 - T.log(var_ratio))
    if isinstance(p, Categorical):
        t = p.probs * (p.logits - q.logits)
        t = T.where(T.broadcast_to(q.probs == 0, t.shape), float("inf"), t)
        return T.where(T.broadcast_to(p.probs == 0, t.shape), 0.0, t).sum(-1)
    if isinstance(p, Bernoulli):
        t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
        t1 = T.where(p.probs == 0, 0.0, T.where(q.probs == 0, float("inf"), t1))
        t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
        t2 = T.where(p.probs == 1, 0.0, T.where(q.probs == 1, float("inf"), t2))
        return t1 + t2
    if isinstance(p, Uniform):
        inside = (q.low <= p.low) & (p.high <= q.high)
        return T.where(inside, T.log((q.high - q.low) / (p.high - p.low)), float("inf"))
    raise NotImplementedError(f"kl_divergence for {type(p).__name__} is not implemented")


class OneHotCategorical(Distribution):
    """Categorical with one-hot samples: sample() gives float vectors (..., K) with one 1;
    log_prob takes such vectors (as torch.distributions.OneHotCategorical)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True
    _init_params = ("logits",)

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,), validate_args=False)
        self._validate_args = self._categorical._validate_args

    @property
    def probs(self):  # (properties, as PyTorch's: a subclass reads super().logits, dreamer's OneHotDist)
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(self.probs.dtype)

    def log_prob(self, value):
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self._categorical._num_events
        values = _tensor.eye(n, dtype=self.probs.dtype).reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return T.broadcast_to(values, (n,) + tuple(self.batch_shape) + (n,)) if expand else values

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return F.one_hot(self.probs.argmax(-1), self._categorical._num_events).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)


from . import transforms  # noqa: E402  (torch.distributions.transforms)
from .transformed_distribution import TransformedDistribution  # noqa: E402


class LogitRelaxedBernoulli(Distribution):
    """The logit of a relaxed (Concrete) Bernoulli sample, as PyTorch's: rsample is
    (logits + log u - log(1 - u)) / temperature with u ~ U(0, 1) (Maddison et al. 2017;
    Jang et al. 2017)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _init_params = ("temperature", "logits")

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        super().__init__(_binary_parameter(self, probs, logits).shape, validate_args=validate_args)

    logits, probs = Bernoulli.__dict__["logits"], Bernoulli.__dict__["probs"]  # (made from each other as Bernoulli's)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        eps = T.finfo(self.logits.dtype).eps
        u = T.clamp(_tensor.rand(*shape, dtype=self.logits.dtype), min=eps, max=1 - eps)
        return (T.log(u) - T.log1p(-u) + self.logits) / self.temperature

    def log_prob(self, value):
        diff = self.logits - value * self.temperature
        return math.log(self.temperature) + diff - 2 * F.softplus(diff) if not isinstance(self.temperature, T.Tensor) \
            else T.log(self.temperature) + diff - 2 * F.softplus(diff)


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed (Concrete) Bernoulli on (0, 1): the sigmoid of a LogitRelaxedBernoulli sample;
    rsample is differentiable in probs/logits, as PyTorch's."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, transforms.SigmoidTransform(), validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)

    def expand(self, batch_shape, _instance=None):
        return RelaxedBernoulli(self.temperature, logits=T.broadcast_to(self.logits, tuple(batch_shape)))


class Wishart(Distribution):
    """Positive definite matrices (..., p, p) with df degrees of freedom and scale Sigma (one of
    covariance_matrix, precision_matrix, scale_tril: its Cholesky factor L), as PyTorch's.
    rsample by the Bartlett decomposition: L A A^T L^T with A lower triangular, A_ii^2 ~
    Chi2(df - i), A_ij ~ N(0, 1) below the diagonal (Bartlett 1933); log_prob is the density
    ((df - p - 1) / 2 log|X| - tr(Sigma^-1 X) / 2 - df p / 2 log 2 - df / 2 log|Sigma| -
    log Gamma_p(df / 2))."""
    arg_constraints = {"df": constraints.greater_than(0), "scale_tril": constraints.lower_cholesky}
    support = constraints.positive_definite
    has_rsample = True

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        L = _scale_tril(covariance_matrix, precision_matrix, scale_tril)
        p = L.shape[-1]
        self.df = _as_tensor(df, L)
        batch = broadcast_shapes(tuple(self.df.shape), tuple(L.shape[:-2]))
        self.scale_tril = T.broadcast_to(L, batch + (p, p))
        self.df = T.broadcast_to(self.df, batch)
        if self._validate_args if validate_args is None else validate_args:
            _check_later(self.df > p - 1, lambda: f"Value of df={self.df} expected to be greater than ndim - 1 = {p - 1}.",
                         _user_line())
        super().__init__(batch, (p, p), validate_args=validate_args)

    @property
    def covariance_matrix(self):
        return T.matmul(self.scale_tril, self.scale_tril.mT)

    @property
    def mean(self):
        return self.df[..., None, None] * self.covariance_matrix

    def _bartlett_sampling(self, sample_shape=()):
        p = self.event_shape[-1]
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        dfs = self.df[..., None] - _tensor.arange(p, dtype=self.df.dtype)  # (..., p): df - i
        chi2 = Chi2(T.broadcast_to(dfs, shape + (p,))).rsample()
        noise = T.tril(_tensor.randn(*shape, p, p, dtype=self.df.dtype), diagonal=-1)
        from .._array_functions import diag_embed
        A = noise + diag_embed(T.sqrt(chi2))
        LA = T.matmul(self.scale_tril, A)
        return T.matmul(LA, LA.mT)

    def rsample(self, sample_shape=()):
        return self._bartlett_sampling(sample_shape)

    def log_prob(self, value):
        from .. import linalg
        p = self.event_shape[-1]
        nu = self.df
        log_det_scale = 2 * T.log(_diagonal(self.scale_tril)).sum(-1)
        log_det_value = linalg.slogdet(value)[1]
        inv_scale = linalg.cholesky_inverse(self.scale_tril) if hasattr(linalg, "cholesky_inverse") else \
            linalg.inv(self.covariance_matrix)
        trace = (inv_scale * value).sum((-2, -1))
        return (0.5 * (nu - p - 1) * log_det_value - 0.5 * trace - 0.5 * nu * p * math.log(2.0)
                - 0.5 * nu * log_det_scale - _composites.mvlgamma(0.5 * nu, p))


class ExponentialFamily(Distribution):
    """torch.distributions.ExponentialFamily: a base class for densities p(x; theta) =
    exp(<t(x), theta> - F(theta) + k(x)). A subclass gives _natural_params (theta, a tuple),
    _log_normalizer(*theta) (F) and _mean_carrier_measure (E[k(x)]); entropy() then follows
    from the Bregman divergence of F, computed with autograd (as PyTorch's). GT's own
    distributions do not derive from it (isinstance is False for them)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        from .. import autograd
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with autograd.enable_grad():
            log_normalizer = self._log_normalizer(*params)
            grads = autograd.grad(log_normalizer.sum(), params, create_graph=True)
        result = result + log_normalizer
        for p, g in zip(params, grads):
            result = result - T.reshape(p * g, tuple(self.batch_shape) + (-1,)).sum(-1)
        return result


def _submodules():
    """torch.distributions.<file> (categorical, normal, kl, ...): PyTorch defines each class in
    a file of its own, and scripts import from there (cleanrl: `from torch.distributions.categorical
    import Categorical`)."""
    import types
    this = sys.modules[__name__]
    files = {"distribution": "Distribution", "categorical": "Categorical", "normal": "Normal",
             "bernoulli": "Bernoulli", "uniform": "Uniform", "exponential": "Exponential", "laplace": "Laplace",
             "log_normal": "LogNormal", "multivariate_normal": "MultivariateNormal", "independent": "Independent",
             "gamma": "Gamma", "chi2": "Chi2", "beta": "Beta", "dirichlet": "Dirichlet", "poisson": "Poisson",
             "one_hot_categorical": "OneHotCategorical", "kl": "kl_divergence register_kl",
             "utils": "broadcast_all probs_to_logits logits_to_probs clamp_probs _standard_normal _sum_rightmost "
                      "lazy_property",
             "relaxed_bernoulli": "RelaxedBernoulli LogitRelaxedBernoulli", "wishart": "Wishart",
             "transformed_distribution": "TransformedDistribution", "half_normal": "HalfNormal",
             "half_cauchy": "HalfCauchy", "cauchy": "Cauchy", "studentT": "StudentT", "gumbel": "Gumbel",
             "weibull": "Weibull", "binomial": "Binomial", "negative_binomial": "NegativeBinomial",
             "geometric": "Geometric", "multinomial": "Multinomial", "mixture_same_family": "MixtureSameFamily",
             "inverse_gamma": "InverseGamma", "pareto": "Pareto", "kumaraswamy": "Kumaraswamy",
             "fishersnedecor": "FisherSnedecor", "von_mises": "VonMises", "continuous_bernoulli": "ContinuousBernoulli",
             "relaxed_categorical": "RelaxedOneHotCategorical ExpRelaxedCategorical",
             "lowrank_multivariate_normal": "LowRankMultivariateNormal", "logistic_normal": "LogisticNormal"}
    files["exp_family"] = "ExponentialFamily"
    for file, names in files.items():
        sub = types.ModuleType(f"{__name__}.{file}", f"torch.distributions.{file}")
        sub.Distribution, sub.constraints = Distribution, constraints  # (as each of PyTorch's files imports them)
        for name in names.split():
            setattr(sub, name, getattr(this, name))
        sys.modules[sub.__name__] = sub
        setattr(this, file, sub)


# The rest of torch.distributions (more.py), its transforms and constraints (more_transforms.py,
# also reachable as gt.distributions.transforms / constraints) and constraint_registry's biject_to / transform_to
from .more import *  # noqa: E402,F401,F403
from .more import __all__ as _more  # noqa: E402
from . import more_transforms as _more_transforms, transforms  # noqa: E402
from . import constraint_registry  # noqa: E402,F401
from .constraint_registry import biject_to, transform_to  # noqa: E402,F401
__all__ += _more + ["biject_to", "transform_to", "ExponentialFamily"]
for _name in ("lower_triangular", "corr_cholesky", "square", "symmetric", "positive_semidefinite", "cat", "stack",
              "multinomial", "dependent_property"):
    setattr(constraints, _name, getattr(_more_transforms, _name))
for _name, _value in vars(_more_transforms).items():  # their classes too (pyro patches _CorrCholesky.check)
    if isinstance(_value, type) and issubclass(_value, constraints.Constraint) and not hasattr(constraints, _name):
        setattr(constraints, _name, _value)
for _name in _more_transforms.__all__:
    setattr(transforms, _name, getattr(_more_transforms, _name))
transforms._clipped_sigmoid = _more_transforms._clipped_sigmoid  # (private, imported by pytorch-forecasting)
# the transforms under torch.distributions itself too (torch.distributions.ExpTransform, as PyTorch's)
for _name in transforms.__all__ + _more_transforms.__all__:
    if _name.endswith("Transform") or _name == "identity_transform":
        globals()[_name] = getattr(transforms, _name)
        __all__.append(_name)

_submodules()
# constraints.__all__: its public constraint objects and classes, as PyTorch's module lists them
constraints.__all__ = sorted(n for n, v in vars(constraints).items()
                             if not n.startswith("_") and (isinstance(v, constraints.Constraint)
                                                            or (isinstance(v, type) and issubclass(v, constraints.Constraint))
                                                            or n in ("cat", "stack", "dependent_property")))
