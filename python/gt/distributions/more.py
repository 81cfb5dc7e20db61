"""More of torch.distributions on GT tensors: HalfNormal, HalfCauchy, Cauchy, StudentT, Gumbel,
Weibull, Binomial, NegativeBinomial, Geometric, Multinomial, MixtureSameFamily, InverseGamma,
Pareto, Kumaraswamy, FisherSnedecor, VonMises, ContinuousBernoulli, ExpRelaxedCategorical,
RelaxedOneHotCategorical, LowRankMultivariateNormal, LogisticNormal (which needs the
StickBreakingTransform of gt.distributions.more_transforms), GeneralizedPareto, LKJCholesky and
OneHotCategoricalStraightThrough.

Each is written directly (not as a TransformedDistribution, as some of PyTorch's are) with
PyTorch's formulas (torch/distributions/<name>.py): log_prob, cdf/icdf where PyTorch has them,
entropy, mean, mode, variance, expand, and rsample for the continuous ones. Samples use GT's
random ops (so they differ from PyTorch's draws); Binomial's, NegativeBinomial's and
Multinomial's counts are drawn on the client with NumPy, as Poisson's are (seeded from GT's
generator, one sync to read the parameters)."""
import math

from . import (Beta, Categorical, Chi2, Distribution, OneHotCategorical, Gamma, Independent, Normal, TransformedDistribution, _as_tensor,
               _binary_parameter, _broadcast, _composites, _check_later, _lazy, _shape, _tensor, _user_line, broadcast_shapes, clamp_probs, constraints, no_grad)
from . import T, F
from .more_transforms import _Multinomial, corr_cholesky

__all__ = ["HalfNormal", "HalfCauchy", "Cauchy", "StudentT", "Gumbel", "Weibull", "Binomial", "NegativeBinomial",
           "Geometric", "Multinomial", "MixtureSameFamily", "InverseGamma", "Pareto", "Kumaraswamy", "FisherSnedecor",
           "VonMises", "ContinuousBernoulli", "ExpRelaxedCategorical", "RelaxedOneHotCategorical",
           "LowRankMultivariateNormal", "LogisticNormal", "GeneralizedPareto", "LKJCholesky",
           "OneHotCategoricalStraightThrough"]

_EULER = 0.57721566490153286060  # the Euler-Mascheroni constant


def _numpy_rng():
    import numpy as np
    return np.random.default_rng(_tensor._next_seed())


def _uniform_open(shape, dtype):
    """U(0, 1) samples of `shape` kept in [tiny, 1 - eps] (off 0 and 1, as PyTorch's clamp)."""
    fi = T.finfo(dtype)
    return T.clamp(_tensor.rand(*shape, dtype=dtype), min=fi.tiny, max=1 - fi.eps)


class Cauchy(Distribution):
    """1 / (pi scale (1 + ((x - loc) / scale)^2)); rsample is loc + scale tan(pi (u - 1/2)) with
    u ~ U(0, 1)."""
    has_rsample = True

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _init_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), shape = _broadcast(loc, scale)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        u = _uniform_open(shape, self.loc.dtype)
        return self.loc + self.scale * _composites.tan(math.pi * (u - 0.5))

    def log_prob(self, value):
        return -math.log(math.pi) - T.log(self.scale) - T.log1p(((value - self.loc) / self.scale) ** 2)

    def cdf(self, value):
        return T.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return _composites.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + T.log(self.scale)

    @property
    def mean(self):
        return T.full(self.batch_shape, float("nan"), dtype=self.loc.dtype)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return T.full(self.batch_shape, float("inf"), dtype=self.loc.dtype)


class HalfNormal(Distribution):
    """|X| with X ~ Normal(0, scale): sqrt(2 / pi) / scale exp(-x^2 / (2 scale^2)) for x >= 0
    (-inf below 0)."""
    has_rsample = True

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    _init_params = ("scale",)

    def __init__(self, scale, validate_args=None):
        self.scale = _as_tensor(scale)
        super().__init__(self.scale.shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        return T.abs(self.scale * _tensor.randn(*shape, dtype=self.scale.dtype))

    def log_prob(self, value):
        lp = (-(value ** 2) / (2 * self.scale ** 2) - T.log(self.scale) - math.log(math.sqrt(2 * math.pi))
              + math.log(2))
        return T.where(value >= 0, lp, float("-inf"))

    def cdf(self, value):
        return T.erf(value / (self.scale * math.sqrt(2)))

    def icdf(self, prob):
        return self.scale * _composites.erfinv(prob) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + T.log(self.scale) - math.log(2)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self):
        return T.zeros_like(self.scale)

    @property
    def variance(self):
        return self.scale ** 2 * (1 - 2 / math.pi)


class HalfCauchy(Distribution):
    """|X| with X ~ Cauchy(0, scale): 2 / (pi scale (1 + (x / scale)^2)) for x >= 0."""
    has_rsample = True

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    _init_params = ("scale",)

    def __init__(self, scale, validate_args=None):
        self.scale = _as_tensor(scale)
        super().__init__(self.scale.shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        u = _uniform_open(shape, self.scale.dtype)
        return T.abs(self.scale * _composites.tan(math.pi * (u - 0.5)))

    def log_prob(self, value):
        value = _as_tensor(value, self.scale)
        lp = math.log(2 / math.pi) - T.log(self.scale) - T.log1p((value / self.scale) ** 2)
        return T.where(value >= 0, lp, float("-inf"))

    def cdf(self, value):
        return 2 * T.atan(value / self.scale) / math.pi

    def icdf(self, prob):
        return _composites.tan(math.pi * prob / 2) * self.scale

    def entropy(self):
        return math.log(2 * math.pi) + T.log(self.scale)

    @property
    def mean(self):
        return T.full(self.batch_shape, float("inf"), dtype=self.scale.dtype)

    @property
    def mode(self):
        return T.zeros_like(self.scale)

    @property
    def variance(self):
        return T.full(self.batch_shape, float("inf"), dtype=self.scale.dtype)


class StudentT(Distribution):
    """Student's t with df degrees of freedom, location loc and scale scale; rsample is
    loc + scale X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df) (Chi2's rsample, so the gradient in
    df is implicit, as PyTorch's)."""
    has_rsample = True

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _init_params = ("df", "loc", "scale")

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        (self.df, self.loc, self.scale), shape = _broadcast(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        x = _tensor.randn(*shape, dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * T.rsqrt(z / self.df)

    def log_prob(self, value):
        y = (value - self.loc) / self.scale
        z = (T.log(self.scale) + 0.5 * T.log(self.df) + 0.5 * math.log(math.pi) + T.lgamma(0.5 * self.df)
             - T.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * T.log1p(y ** 2 / self.df) - z

    def entropy(self):
        lbeta = T.lgamma(0.5 * self.df) + math.lgamma(0.5) - T.lgamma(0.5 * (self.df + 1))
        return (T.log(self.scale) + 0.5 * (self.df + 1) * (T.digamma(0.5 * (self.df + 1)) - T.digamma(0.5 * self.df))
                + 0.5 * T.log(self.df) + lbeta)

    @property
    def mean(self):
        return T.where(self.df > 1, self.loc, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        v = self.scale ** 2 * self.df / T.where(self.df > 2, self.df - 2, 1.0)
        return T.where(self.df > 2, v, T.where(self.df > 1, float("inf"), float("nan")))


class Gumbel(Distribution):
    """exp(-(z + exp(-z))) / scale with z = (x - loc) / scale; rsample is
    loc - scale log(-log u), u ~ U(0, 1)."""
    has_rsample = True

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _init_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), shape = _broadcast(loc, scale)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        u = _uniform_open(shape, self.loc.dtype)
        return self.loc - self.scale * T.log(-T.log(u))

    def log_prob(self, value):
        z = (value - self.loc) / self.scale
        return -(T.log(self.scale) + z + T.exp(-z))

    def cdf(self, value):
        return T.exp(-T.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        return self.loc - self.scale * T.log(-T.log(value))

    def entropy(self):
        return T.log(self.scale) + (1 + _EULER)

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev ** 2


class Weibull(Distribution):
    """(c / scale) (x / scale)^(c - 1) exp(-(x / scale)^c) for x > 0, c = concentration;
    rsample is scale (-log u)^(1 / c), u ~ U(0, 1)."""
    has_rsample = True

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _init_params = ("scale", "concentration")

    def __init__(self, scale, concentration, validate_args=None):
        (self.scale, self.concentration), shape = _broadcast(scale, concentration)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        u = _uniform_open(shape, self.scale.dtype)
        return self.scale * (-T.log(u)) ** (1.0 / self.concentration)

    def log_prob(self, value):
        c, s = self.concentration, self.scale
        return T.log(c / s) + (c - 1) * T.log(value / s) - (value / s) ** c

    def cdf(self, value):
        return -_composites.expm1(-((value / self.scale) ** self.concentration))

    def icdf(self, value):
        return self.scale * (-T.log1p(-value)) ** (1.0 / self.concentration)

    def entropy(self):
        c = self.concentration
        return _EULER * (1 - 1 / c) + T.log(self.scale / c) + 1

    @property
    def mean(self):
        return self.scale * T.exp(T.lgamma(1 + 1 / self.concentration))

    @property
    def mode(self):
        c = self.concentration
        return self.scale * ((c - 1) / c) ** (1 / c)

    @property
    def variance(self):
        c = self.concentration
        return self.scale ** 2 * (T.exp(T.lgamma(1 + 2 / c)) - T.exp(2 * T.lgamma(1 + 1 / c)))


def _clamp_by_zero(x):
    return (T.clamp(x, min=0) + x - T.clamp(x, max=0)) / 2


def _homogeneous_count(total_count, what):
    n = total_count.detach()
    top = int(n.max().item())
    if int(n.min().item()) != top:
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return top


def _count_and_binary(d, total_count, probs, logits):
    """Sets d.total_count and the one of probs/logits given, broadcast together; returns their shape."""
    param = _binary_parameter(d, probs, logits)
    (d.total_count, param), shape = _broadcast(total_count, param)
    setattr(d, "probs" if probs is not None else "logits", param)
    return shape


class Binomial(Distribution):
    """C(n, k) p^k (1 - p)^(n - k) for k = 0..n, n = total_count, p = probs (or sigmoid(logits));
    samples (floats) are drawn on the client with NumPy."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True
    _init_params = ("total_count", "logits")

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        super().__init__(_count_and_binary(self, total_count, probs, logits), validate_args=validate_args)

    @_lazy
    def logits(self):
        p = clamp_probs(self.probs)
        return T.log(p) - T.log1p(-p)

    @_lazy
    def probs(self):
        return T.sigmoid(self.logits)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def param_shape(self):
        return self.probs.shape

    def sample(self, sample_shape=()):
        import numpy as np
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        rng = _numpy_rng()
        n = np.broadcast_to(self.total_count.detach().numpy().astype(np.int64), shape)
        p = np.broadcast_to(self.probs.detach().numpy().astype(np.float64), shape)
        return _tensor.tensor(rng.binomial(n, p).astype(self.probs.dtype.numpy))

    def log_prob(self, value):
        n, logits = self.total_count, self.logits
        normalize = n * _clamp_by_zero(logits) + n * T.log1p(T.exp(-T.abs(logits))) - T.lgamma(n + 1)
        return value * logits - T.lgamma(value + 1) - T.lgamma(n - value + 1) - normalize

    def enumerate_support(self, expand=True):
        """0 .. total_count along a new first axis (total_count the same for the whole batch)."""
        n = _homogeneous_count(self.total_count, "enumerate_support")
        values = _tensor.arange(1 + n, dtype=self.total_count.dtype).reshape((-1,) + (1,) * len(self.batch_shape))
        return T.broadcast_to(values, (1 + n,) + tuple(self.batch_shape)) if expand else values

    def entropy(self):
        """-sum_k P(k) log P(k) over the support (one sync reads total_count)."""
        lp = self.log_prob(self.enumerate_support(False))
        return -(T.exp(lp) * lp).sum(0)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return T.minimum(T.floor((self.total_count + 1) * self.probs), self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)


class NegativeBinomial(Distribution):
    """The number of successes (probability probs each) before total_count failures:
    Gamma(n + k) / (k! Gamma(n)) p^k (1 - p)^n; samples are Poisson(Gamma(n, (1 - p) / p)),
    the Poisson draw on the client with NumPy."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer
    _init_params = ("total_count", "logits")

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        super().__init__(_count_and_binary(self, total_count, probs, logits), validate_args=validate_args)

    logits, probs = Binomial.__dict__["logits"], Binomial.__dict__["probs"]
    param_shape = Binomial.param_shape

    def sample(self, sample_shape=()):
        import numpy as np
        with no_grad():
            rate = Gamma(self.total_count, T.exp(-self.logits), validate_args=False).sample(sample_shape)
            counts = _numpy_rng().poisson(rate.numpy().astype(np.float64))
            return _tensor.tensor(counts.astype(self.logits.dtype.numpy))

    def log_prob(self, value):
        n, logits = self.total_count, self.logits
        unnormalized = n * F.logsigmoid(-logits) + value * F.logsigmoid(logits)
        normalization = -T.lgamma(n + value) + T.lgamma(1.0 + value) + T.lgamma(n)
        normalization = T.where(n + value == 0.0, 0.0, normalization)
        return unnormalized - normalization

    @property
    def mean(self):
        return self.total_count * T.exp(self.logits)

    @property
    def mode(self):
        return T.clamp(T.floor((self.total_count - 1) * T.exp(self.logits)), min=0.0)

    @property
    def variance(self):
        return self.mean / T.sigmoid(-self.logits)


class Geometric(Distribution):
    """The number of failures before the first success (probability probs): (1 - p)^k p for
    k = 0, 1, ...; samples are floor(log u / log(1 - p)), u ~ U(0, 1), on the workers."""

    arg_constraints = {"probs": constraints.interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer
    _init_params = ("logits",)

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(_binary_parameter(self, probs, logits).shape, validate_args=validate_args)
        if self._validate_args and probs is not None:  # (beyond unit_interval, as PyTorch's)
            _check_later(self.probs.detach() > 0, lambda: (
                f"Expected parameter probs (Tensor of shape {tuple(self.probs.shape)}) of distribution {self!r} "
                f"to be positive but found invalid values:\n{self.probs}"), _user_line())

    logits, probs = Binomial.__dict__["logits"], Binomial.__dict__["probs"]

    def sample(self, sample_shape=()):
        with no_grad():
            shape = _shape(sample_shape) + tuple(self.batch_shape)
            tiny = T.finfo(self.probs.dtype).tiny
            u = T.clamp(_tensor.rand(*shape, dtype=self.probs.dtype), min=tiny)
            return T.floor(T.log(u) / T.log1p(-self.probs.detach()))

    def log_prob(self, value):
        value = _as_tensor(value, self.probs)
        shape = broadcast_shapes(value.shape, self.probs.shape)
        value, probs = T.broadcast_to(value, shape), T.broadcast_to(self.probs, shape)
        probs = T.where((probs == 1) & (value == 0), 0.0, probs)
        return value * T.log1p(-probs) + T.log(self.probs)

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return T.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs


class Multinomial(Distribution):
    """Counts (..., K) of total_count draws from Categorical(probs or logits); total_count an
    int, as PyTorch's. Samples (floats) are drawn on the client with NumPy."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    _init_params = ("logits",)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,), validate_args=False)
        self._validate_args = self._categorical._validate_args

    @property
    def probs(self):  # (properties, as PyTorch's: a subclass may read super().probs)
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    def expand(self, batch_shape, _instance=None):
        k = self.event_shape[0]
        return Multinomial(self.total_count, logits=T.broadcast_to(self.logits, tuple(batch_shape) + (k,)),
                           validate_args=False)

    @property
    def support(self):
        return _Multinomial(self.total_count)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        import numpy as np
        shape = _shape(sample_shape) + tuple(self.batch_shape) + tuple(self.event_shape)
        p = self.probs.detach().numpy().astype(np.float64)
        p = np.broadcast_to(p / p.sum(-1, keepdims=True), shape)
        counts = _numpy_rng().multinomial(self.total_count, p)
        return _tensor.tensor(counts.astype(self.probs.dtype.numpy))

    def log_prob(self, value):
        value = _as_tensor(value, self.logits)
        shape = broadcast_shapes(value.shape, self.logits.shape)
        logits, value = T.broadcast_to(self.logits, shape), T.broadcast_to(value, shape)
        logits = T.where((value == 0) & (logits == float("-inf")), 0.0, logits)
        return T.lgamma(value.sum(-1) + 1) - T.lgamma(value + 1).sum(-1) + (logits * value).sum(-1)

    def entropy(self):
        """n H(categorical) - log n! + sum_i E[log x_i!], the last over each x_i ~ Binomial(n, p_i)."""
        n = _tensor.tensor(float(self.total_count), dtype=self.probs.dtype)
        term1 = n * self._categorical.entropy() - T.lgamma(n + 1)
        support = _tensor.arange(1, self.total_count + 1, dtype=self.probs.dtype)
        support = support.reshape((-1,) + (1,) * (len(self.batch_shape) + 1))
        binomial = Binomial(self.total_count, probs=self.probs, validate_args=False)
        lp = binomial.log_prob(support)
        term2 = (T.exp(lp) * T.lgamma(support + 1)).sum((0, -1))
        return term1 + term2

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)


class MixtureSameFamily(Distribution):
    """sum_k pi_k p_k(x): mixture_distribution a Categorical over the K components (batch_shape
    B), component_distribution one distribution with batch_shape B + (K,); as PyTorch's."""

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)

    @property
    def support(self):
        return self._component_distribution.support

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        comp = self._component_distribution.expand(batch_shape + (self._num_component,))
        mix = self._mixture_distribution.expand(batch_shape)
        return MixtureSameFamily(mix, comp, validate_args=False)

    def _pad(self, x):
        return T.unsqueeze(x, -1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        """The law of total variance: E[Var(X | k)] + Var(E[X | k])."""
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        d = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(d)
        var_cond_mean = (probs * (self.component_distribution.mean - self._pad(self.mean)) ** 2).sum(d)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        x = self._pad(x)
        cdf_x = self.component_distribution.cdf(x)
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        x = self._pad(x)
        log_prob_x = self.component_distribution.log_prob(x)  # (S, B, K)
        log_mix_prob = T.log_softmax(self.mixture_distribution.logits, -1)  # (B, K)
        return T.logsumexp(log_prob_x + log_mix_prob, -1)

    def sample(self, sample_shape=()):
        with no_grad():
            sample_shape = _shape(sample_shape)
            n = len(sample_shape)
            batch_len = len(self.batch_shape)
            gather_dim = n + batch_len
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)  # (S, B)
            comp_samples = self.component_distribution.sample(sample_shape)  # (S, B, K, E)
            index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (len(es) + 1))
            index = T.broadcast_to(index, tuple(mix_sample.shape) + (1,) + es)
            picked = T.gather(comp_samples, gather_dim, index)
            return T.squeeze(picked, gather_dim)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self.mixture_distribution!r},\n  {self.component_distribution!r})")


class InverseGamma(Distribution):
    """1 / X with X ~ Gamma(concentration, rate): b^a x^(-a - 1) e^(-b / x) / Gamma(a) for
    x > 0; rsample is 1 / Gamma's rsample (its implicit gradient)."""
    has_rsample = True

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    _init_params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        (self.concentration, self.rate), shape = _broadcast(concentration, rate)
        self._gamma = Gamma(self.concentration, self.rate, validate_args=False)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        return 1.0 / self._gamma.rsample(sample_shape)

    def log_prob(self, value):
        a, b = self.concentration, self.rate
        return _composites.xlogy(a, b) - T.lgamma(a) - (a + 1) * T.log(value) - b / value

    def cdf(self, value):
        """P(X <= value) = 1 - gammainc(a, b / value) (PyTorch's, through its transforms)."""
        return 1 - _composites.gammainc(self.concentration, self.rate / value)

    def entropy(self):
        a = self.concentration
        return a + T.log(self.rate) + T.lgamma(a) - (1 + a) * T.digamma(a)

    @property
    def mean(self):
        a = self.concentration
        return T.where(a > 1, self.rate / (a - 1), float("inf"))

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        v = self.rate ** 2 / ((a - 1) ** 2 * (a - 2))
        return T.where(a > 2, v, float("inf"))


class Pareto(Distribution):
    """alpha scale^alpha / x^(alpha + 1) for x >= scale; rsample is scale exp(E / alpha),
    E ~ Exponential(1)."""
    has_rsample = True

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _init_params = ("scale", "alpha")

    def __init__(self, scale, alpha, validate_args=None):
        (self.scale, self.alpha), shape = _broadcast(scale, alpha)
        super().__init__(shape, validate_args=validate_args)

    @property
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        u = _uniform_open(shape, self.scale.dtype)
        return self.scale * T.exp(-T.log(u) / self.alpha)

    def log_prob(self, value):
        return T.log(self.alpha) + self.alpha * T.log(self.scale) - (self.alpha + 1) * T.log(value)

    def cdf(self, value):
        return 1 - T.exp(self.alpha * (T.log(self.scale) - T.log(value)))

    def icdf(self, value):
        return self.scale * T.exp(-T.log1p(-value) / self.alpha)

    def entropy(self):
        return T.log(self.scale / self.alpha) + 1 / self.alpha + 1

    @property
    def mean(self):
        a = T.clamp(self.alpha, min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = T.clamp(self.alpha, min=2)
        return self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2))


class Kumaraswamy(Distribution):
    """a b x^(a - 1) (1 - x^a)^(b - 1) on (0, 1), a = concentration1, b = concentration0;
    rsample is (1 - u^(1 / b))^(1 / a), u ~ U(0, 1)."""
    has_rsample = True

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    _init_params = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args=None):
        (self.concentration1, self.concentration0), shape = _broadcast(concentration1, concentration0)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        u = _uniform_open(shape, self.concentration1.dtype)
        return T.exp(T.log1p(-T.exp(T.log(u) / self.concentration0)) / self.concentration1)

    def log_prob(self, value):
        a, b = self.concentration1, self.concentration0
        return T.log(a) + T.log(b) + (a - 1) * T.log(value) + (b - 1) * T.log1p(-(value ** a))

    def _moments(self, n):
        arg1 = 1 + n / self.concentration1
        b = self.concentration0
        return b * T.exp(T.lgamma(arg1) + T.lgamma(b) - T.lgamma(arg1 + b))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        h_b = T.digamma(b + 1) + _EULER
        return (1 - 1 / b) + (1 - 1 / a) * h_b - T.log(a) - T.log(b)

    @property
    def mean(self):
        return self._moments(1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = T.log1p(-b) / b - T.log1p(-b * a)
        return T.where((b < 1) | (a < 1), float("nan"), T.exp(log_mode))

    @property
    def variance(self):
        return self._moments(2) - self._moments(1) ** 2


class FisherSnedecor(Distribution):
    """Snedecor's F(df1, df2); rsample is X1 / X2 with X1 ~ Gamma(df1 / 2, df1), X2 ~
    Gamma(df2 / 2, df2) (Gamma's implicit gradient), clamped to >= tiny as PyTorch's."""
    has_rsample = True

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    _init_params = ("df1", "df2")

    def __init__(self, df1, df2, validate_args=None):
        (self.df1, self.df2), shape = _broadcast(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        super().__init__(shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        tiny = T.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape)
        x2 = T.clamp(self._gamma2.rsample(sample_shape), min=tiny)
        return T.clamp(x1 / x2, min=tiny)

    def log_prob(self, value):
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = T.lgamma(ct1 + ct2) - T.lgamma(ct1) - T.lgamma(ct2)
        t2 = ct1 * T.log(ct3) + (ct1 - 1) * T.log(value)
        t3 = (ct1 + ct2) * T.log1p(ct3 * value)
        return t1 + t2 - t3

    @property
    def mean(self):
        df2 = T.where(self.df2 <= 2, float("nan"), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return T.where(self.df1 <= 2, float("nan"), mode)

    @property
    def variance(self):
        df2 = T.where(self.df2 <= 4, float("nan"), self.df2)
        return 2 * df2 ** 2 * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2) ** 2 * (df2 - 4))


# Abramowitz and Stegun 9.8.1-9.8.4 polynomials for I0 and I1 (PyTorch's von_mises.py)
_BESSEL_SMALL = ([1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2],
                 [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3])
_BESSEL_LARGE = ([0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
                  -0.1647633e-1, 0.392377e-2],
                 [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1,
                  -0.2895312e-1, 0.1787654e-1, -0.420059e-2])


def _eval_poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """log I_order(x) for x > 0, order 0 or 1 (PyTorch's polynomial approximations)."""
    y = (x / 3.75) ** 2
    small = _eval_poly(y, _BESSEL_SMALL[order])
    if order == 1:
        small = T.abs(x) * small
    small = T.log(small)
    large = x - 0.5 * T.log(x) + T.log(_eval_poly(3.75 / x, _BESSEL_LARGE[order]))
    return T.where(x < 3.75, small, large)


class VonMises(Distribution):
    """exp(kappa cos(x - loc)) / (2 pi I0(kappa)) on angles (loc and values any real, read
    modulo 2 pi). Samples by Best and Fisher's rejection method ("Efficient simulation of the
    von Mises distribution", Applied Statistics 1979), in float64 on the client with NumPy
    (seeded from GT's generator); mean and variance are the circular ones, as PyTorch's."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False
    _init_params = ("loc", "concentration")

    def __init__(self, loc, concentration, validate_args=None):
        (self.loc, self.concentration), shape = _broadcast(loc, concentration)
        super().__init__(shape, validate_args=validate_args)

    def log_prob(self, value):
        return (self.concentration * T.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    def sample(self, sample_shape=()):
        import numpy as np
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        loc = np.broadcast_to(self.loc.detach().numpy().astype(np.float64), shape)
        kappa = np.broadcast_to(self.concentration.detach().numpy().astype(np.float64), shape)
        tau = 1 + np.sqrt(1 + 4 * kappa ** 2)
        rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
        rng = _numpy_rng()
        x = np.zeros(shape)
        done = np.zeros(shape, dtype=bool)
        while not done.all():
            u1, u2, u3 = rng.random((3,) + shape)
            z = np.cos(np.pi * u1)
            f = (1 + r * z) / (r + z)
            c = kappa * (r - f)
            with np.errstate(divide="ignore", invalid="ignore"):
                accept = ((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0)
            accept &= ~done
            x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
            done |= accept
        x = np.mod(x + np.pi + loc, 2 * np.pi) - np.pi
        return _tensor.tensor(x.astype(self.loc.dtype.numpy))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        return 1 - T.exp(_log_modified_bessel_fn(k, order=1) - _log_modified_bessel_fn(k, order=0))


class ContinuousBernoulli(Distribution):
    """C(p) p^x (1 - p)^(1 - x) on [0, 1] (Loaiza-Ganem and Cunningham, NeurIPS 2019), probs or
    logits; near p = 1/2 (inside `lims`) the normalizer, mean and variance use PyTorch's Taylor
    expansions. rsample is icdf(u), u ~ U(0, 1)."""
    has_rsample = True

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _init_params = ("logits",)

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        param = _binary_parameter(self, probs, logits)
        self._lims = lims
        super().__init__(param.shape, validate_args=validate_args)  # (checks the probs given, unclamped)
        if probs is not None:
            self.probs = clamp_probs(param)

    def expand(self, batch_shape, _instance=None):
        return ContinuousBernoulli(logits=T.broadcast_to(self.logits, tuple(batch_shape)), lims=self._lims,
                                   validate_args=False)

    @_lazy
    def logits(self):
        p = clamp_probs(self.probs)
        return T.log(p) - T.log1p(-p)

    @_lazy
    def probs(self):
        return clamp_probs(T.sigmoid(self.logits))

    @property
    def param_shape(self):
        return self.probs.shape

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return T.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below = T.where(cut <= 0.5, cut, 0.0)
        above = T.where(cut >= 0.5, cut, 1.0)
        log_norm = (T.log(T.abs(T.log1p(-cut) - T.log(cut)))
                    - T.where(cut <= 0.5, T.log1p(-2.0 * below), T.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return T.where(self._outside_unstable_region(), log_norm, taylor)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        return self.icdf(_tensor.rand(*shape, dtype=self.probs.dtype))

    def log_prob(self, value):
        value = _as_tensor(value, self.logits)
        logits = T.broadcast_to(self.logits, broadcast_shapes(self.logits.shape, value.shape))
        return (-F.binary_cross_entropy_with_logits(logits, T.broadcast_to(value, logits.shape), reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = T.where(self._outside_unstable_region(), cdfs, value)
        return T.where(value <= 0.0, 0.0, T.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        x = (T.log1p(-cut + value * (2.0 * cut - 1.0)) - T.log1p(-cut)) / (T.log(cut) - T.log1p(-cut))
        return T.where(self._outside_unstable_region(), x, value)

    def entropy(self):
        log_p0, log_p1 = T.log1p(-self.probs), T.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (T.log1p(-cut) - T.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return T.where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self):
        cut = self._cut_probs()
        v = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (T.log1p(-cut) - T.log(cut)) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return T.where(self._outside_unstable_region(), v, taylor)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample (Maddison et al. 2017, "The Concrete
    Distribution"): rsample is log_softmax((logits + g) / temperature), g standard Gumbel
    noise; event_shape (K,)."""
    has_rsample = True

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.independent(constraints.real, 1)

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self.temperature = _as_tensor(temperature, self._categorical.logits)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,), validate_args=False)
        self._validate_args = self._categorical._validate_args

    def expand(self, batch_shape, _instance=None):
        k = self.event_shape[0]
        return type(self)(self.temperature, logits=T.broadcast_to(self.logits, tuple(batch_shape) + (k,)),
                          validate_args=False)

    logits = property(lambda self: self._categorical.logits)
    probs = property(lambda self: self._categorical.probs)
    param_shape = property(lambda self: self._categorical.param_shape)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape) + tuple(self.event_shape)
        u = clamp_probs(_tensor.rand(*shape, dtype=self.logits.dtype))
        scores = (self.logits - T.log(-T.log(u))) / self.temperature
        return scores - T.logsumexp(scores, -1, keepdim=True)

    def log_prob(self, value):
        return self._log_prob(value)

    def _log_prob(self, value):
        k = self.event_shape[0]
        log_scale = math.lgamma(k) + (k - 1) * T.log(self.temperature)
        score = self.logits - value * self.temperature
        score = (score - T.logsumexp(score, -1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(ExpRelaxedCategorical):
    """exp of an ExpRelaxedCategorical sample: points of the simplex (..., K) that approach
    one-hot vectors as temperature -> 0 (Gumbel-softmax, Jang et al. 2017); log_prob(y) is the
    base's at log y minus sum(log y) (PyTorch's TransformedDistribution with ExpTransform)."""
    support = constraints.simplex

    def rsample(self, sample_shape=()):
        return T.exp(super().rsample(sample_shape))

    def log_prob(self, value):
        x = T.log(value)
        return self._log_prob(x) - x.sum(-1)

    @property
    def base_dist(self):
        return ExpRelaxedCategorical(self.temperature, logits=self.logits, validate_args=False)


class LowRankMultivariateNormal(Distribution):
    """N(loc, W W^T + diag(D)) over vectors (..., n), W = cov_factor (..., n, m), D = cov_diag
    (..., n). log_prob and entropy go through the m x m capacitance I + W^T D^-1 W (its Cholesky
    factor, on the client through gt.linalg) with the Woodbury identity and the matrix
    determinant lemma, as PyTorch's; rsample is loc + W eps_W + sqrt(D) eps_D."""
    has_rsample = True

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    _init_params = ("loc", "cov_factor", "cov_diag")

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        from .. import linalg
        loc, cov_factor, cov_diag = _as_tensor(loc), _as_tensor(cov_factor), _as_tensor(cov_diag)
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != (n,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(n,)}")
        m = cov_factor.shape[-1]
        batch = broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2], cov_diag.shape[:-1])
        self.loc = T.broadcast_to(loc, batch + (n,))
        self.cov_diag = T.broadcast_to(cov_diag, batch + (n,))
        self.cov_factor = T.broadcast_to(cov_factor, batch + (n, m))
        wt_dinv = self.cov_factor.mT / T.unsqueeze(self.cov_diag, -2)
        capacitance = T.matmul(wt_dinv, self.cov_factor) + _tensor.eye(m, dtype=self.loc.dtype)
        self._capacitance_tril = linalg.cholesky(capacitance)
        super().__init__(batch, (n,), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return (self.cov_factor ** 2).sum(-1) + self.cov_diag

    @property
    def covariance_matrix(self):
        from .._array_functions import diag_embed
        return T.matmul(self.cov_factor, self.cov_factor.mT) + diag_embed(self.cov_diag)

    @property
    def scale_tril(self):
        from .. import linalg
        return linalg.cholesky(self.covariance_matrix)

    @property
    def precision_matrix(self):
        from .. import linalg
        from .._array_functions import diag_embed
        wt_dinv = self.cov_factor.mT / T.unsqueeze(self.cov_diag, -2)
        a = linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        return diag_embed(1.0 / self.cov_diag) - T.matmul(a.mT, a)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape) + tuple(self.event_shape)
        eps_w = _tensor.randn(*(shape[:-1] + (self.cov_factor.shape[-1],)), dtype=self.loc.dtype)
        eps_d = _tensor.randn(*shape, dtype=self.loc.dtype)
        return self.loc + T.squeeze(T.matmul(self.cov_factor, T.unsqueeze(eps_w, -1)), -1) + \
            T.sqrt(self.cov_diag) * eps_d

    def _log_det(self):
        from .._shaping import diagonal
        return 2 * T.log(diagonal(self._capacitance_tril, dim1=-2, dim2=-1)).sum(-1) + T.log(self.cov_diag).sum(-1)

    def log_prob(self, value):
        """-(n log 2 pi + log|S| + d^T S^-1 d) / 2, S^-1 by Woodbury: D^-1 - D^-1 W C^-1 W^T D^-1."""
        from .. import linalg
        diff = _as_tensor(value, self.loc) - self.loc
        batch = tuple(diff.shape[:-1])
        m = self.cov_factor.shape[-1]
        w = T.broadcast_to(self.cov_factor, batch + tuple(self.cov_factor.shape[-2:]))
        d = T.broadcast_to(self.cov_diag, tuple(diff.shape))
        wt_dinv_x = T.squeeze(T.matmul(w.mT, T.unsqueeze(diff / d, -1)), -1)
        tril = T.broadcast_to(self._capacitance_tril, batch + (m, m))
        z = T.squeeze(linalg.solve_triangular(tril, T.unsqueeze(wt_dinv_x, -1), upper=False), -1)
        mahalanobis = (diff ** 2 / d).sum(-1) - (z * z).sum(-1)
        return -0.5 * (self.event_shape[0] * math.log(2 * math.pi) + self._log_det() + mahalanobis)

    def entropy(self):
        return 0.5 * (self.event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())


class LogisticNormal(TransformedDistribution):
    """Normal(loc, scale) over R^K (loc, scale (..., K)) through StickBreakingTransform onto the
    simplex in R^(K+1): event_shape (K + 1,), as PyTorch's."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        from .more_transforms import StickBreakingTransform
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(Independent(base, 1), StickBreakingTransform(), validate_args=validate_args)
        self.event_shape = _tensor.Size((base.batch_shape[-1] + 1,))
        if validate_args is not None:
            self._validate_args = validate_args

    loc = property(lambda self: self.base_dist.base_dist.loc)
    scale = property(lambda self: self.base_dist.base_dist.scale)

    def expand(self, batch_shape, _instance=None):
        k = self.event_shape[0] - 1
        shape = tuple(batch_shape) + (k,)
        return LogisticNormal(T.broadcast_to(self.loc, shape), T.broadcast_to(self.scale, shape), validate_args=False)

    def __repr__(self):
        return f"LogisticNormal(loc: {self.loc.size()}, scale: {self.scale.size()})"


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (Pickands 1975): with z = (x - loc) / scale and
    concentration c, density (1 + c z)^(-1/c - 1) / scale (exp(-z) / scale at c = 0), for
    x >= loc (and x <= loc - scale / c when c < 0); rsample through icdf,
    loc + scale ((1 - u)^(-c) - 1) / c."""
    has_rsample = True
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    _init_params = ("loc", "scale", "concentration")

    def __init__(self, loc, scale, concentration, validate_args=None):
        (self.loc, self.scale, self.concentration), shape = _broadcast(loc, scale, concentration)
        super().__init__(shape, validate_args=validate_args)

    def _safe_concentration(self):
        zero = self.concentration == 0
        return zero, T.where(zero, T.ones_like(self.concentration), self.concentration)

    @property
    def support(self):
        upper = T.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                        T.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def rsample(self, sample_shape=()):
        shape = _shape(sample_shape) + tuple(self.batch_shape)
        return self.icdf(_uniform_open(shape, self.loc.dtype))

    def log_prob(self, value):
        z = (value - self.loc) / self.scale
        zero, c = self._safe_concentration()
        power = (1 / c + 1) * T.log1p(c * z)
        return -T.log(self.scale) - T.where(zero, z, power)

    def log_survival_function(self, value):
        z = (value - self.loc) / self.scale
        zero, c = self._safe_concentration()
        return T.where(zero, -z, -T.log1p(c * z) / c)

    def cdf(self, value):
        return -_composites.expm1(self.log_survival_function(value))

    def icdf(self, value):
        zero, c = self._safe_concentration()
        tail = -T.log1p(-value)  # -log(1 - u)
        return self.loc + self.scale * T.where(zero, tail, _composites.expm1(c * tail) / c)

    def entropy(self):
        return T.log(self.scale) + self.concentration + 1

    @property
    def mean(self):
        finite = self.concentration < 1
        c = T.where(finite, self.concentration, T.zeros_like(self.concentration))
        return T.where(finite, self.loc + self.scale / (1 - c), T.full_like(self.loc, math.inf))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.concentration < 0.5
        c = T.where(finite, self.concentration, T.zeros_like(self.concentration))
        return T.where(finite, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), T.full_like(self.scale, math.inf))


class LKJCholesky(Distribution):
    """Lower Cholesky factors L (dim, dim) of correlation matrices L L^T with density
    proportional to det(L L^T)^(concentration - 1) (Lewandowski, Kurowicka and Joe 2009):
    log_prob sums (2 (concentration - 1) + dim - i) log L_ii over the rows i = 2 .. dim, less the
    normalizer; sample builds L row by row by the onion method (a Beta-distributed squared
    norm for each row, a uniform direction from normalized Gaussians)."""
    arg_constraints = {"concentration": constraints.positive}
    support = corr_cholesky
    _init_params = ("dim", "concentration")

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        self.concentration = _as_tensor(concentration)
        batch = tuple(self.concentration.shape)
        # the onion method's Beta for row k (0-based): Beta(k / 2, c + (dim - 2 - k) / 2) for k >= 1
        offset = T.cat([T.zeros(1, dtype=self.concentration.dtype),
                        T.arange(dim - 1, dtype=self.concentration.dtype)])
        marginal = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta(offset + 0.5, T.unsqueeze(marginal, -1) - 0.5 * offset)
        super().__init__(batch, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        return LKJCholesky(self.dim, T.broadcast_to(self.concentration, batch_shape), validate_args=False)

    def sample(self, sample_shape=()):
        with no_grad():
            y = T.unsqueeze(self._beta.sample(sample_shape), -1)  # (..., dim, 1): each row's squared norm
            shape = _shape(sample_shape) + tuple(self.batch_shape) + (self.dim, self.dim)
            normal = _tensor.randn(*shape, dtype=y.dtype).tril(-1)
            rows = T.arange(self.dim)
            first = T.reshape(rows == 0, (self.dim, 1))  # row 0 is (1, 0, ...)
            direction = T.where(first, T.zeros_like(normal),
                                normal / T.clamp(T.norm(normal, 2, -1, keepdim=True), min=T.finfo(y.dtype).tiny))
            w = T.sqrt(y) * direction
            diagonal = T.sqrt(T.clamp(1 - T.sum(w * w, -1), min=T.finfo(w.dtype).tiny))
            from .._array_functions import diag_embed
            return w + diag_embed(diagonal)

    def log_prob(self, value):
        d = self.dim
        diagonal = value.diagonal(0, -2, -1)[..., 1:]
        order = 2 * T.unsqueeze(self.concentration - 1, -1) + d - T.arange(2, d + 1, dtype=value.dtype)
        unnormalized = T.sum(order * T.log(diagonal), -1)
        alpha = self.concentration + 0.5 * (d - 1)
        normalizer = 0.5 * (d - 1) * math.log(math.pi) + _composites.mvlgamma(alpha - 0.5, d - 1) \
            - T.lgamma(alpha) * (d - 1)
        return unnormalized - normalizer


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose rsample is the straight-through estimator (Bengio et al. 2013): the
    one-hot sample's values, with the gradient of the probabilities."""
    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        return samples + (self.probs - self.probs.detach())
