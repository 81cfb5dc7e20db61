"""torch.distributions.transformed_distribution: a base distribution pushed through
transforms (gt.distributions.transforms)."""
from . import Distribution
from . import constraints


def _sum_rightmost(x, n):
    for _ in range(n):
        x = x.sum(-1)
    return x


class TransformedDistribution(Distribution):
    """Samples transforms[-1](...transforms[0](base sample)); log_prob(y) = base.log_prob(x) -
    sum of each transform's log |det dy/dx|, x the inverses of y (PyTorch's formula). A tanh-
    squashed Gaussian (SAC's policy): TransformedDistribution(Normal(mu, std), [TanhTransform(
    cache_size=1)])."""
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        from .transforms import Transform
        if isinstance(transforms, Transform):
            transforms = [transforms]
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        self.base_dist, self.transforms = base_distribution, list(transforms)
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = max([len(base_distribution.event_shape)] + [t.codomain.event_dim for t in self.transforms])
        cut = len(shape) - event_dim
        self.has_rsample = base_distribution.has_rsample
        super().__init__(shape[:cut], shape[cut:], validate_args=False)

    @property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        extra = len(self.event_shape) - support.event_dim
        return constraints.independent(support, extra) if extra > 0 else support

    def sample(self, sample_shape=()):
        x = self.base_dist.sample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """value, or 1 - value when the transforms together decrease (the product of their signs
        is -1), as PyTorch's: the cdf of y is the base's of x or its complement."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        """The base's cdf at the inverse transforms of value (for monotonic transforms), as
        PyTorch's TransformedDistribution.cdf."""
        for t in reversed(self.transforms):
            value = t.inv(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        """The transforms of the base's icdf (for monotonic transforms), as PyTorch's
        TransformedDistribution.icdf."""
        x = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self):
        return f"{type(self).__name__}()"
