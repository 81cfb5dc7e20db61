"""More of torch.distributions.transforms and .constraints on GT tensors.

Transforms: CumulativeDistributionTransform, AbsTransform, ReshapeTransform, SoftmaxTransform, StickBreakingTransform,
LowerCholeskyTransform, PositiveDefiniteTransform, CorrCholeskyTransform, IndependentTransform,
CatTransform, StackTransform. Constraints: lower_triangular, corr_cholesky, square, symmetric,
positive_semidefinite, cat, stack, multinomial, dependent_property. Formulas and conventions
are PyTorch's (torch/distributions/transforms.py, constraints.py); see gt.distributions.transforms
for the Transform interface (cache_size, inv, log_abs_det_jacobian, domain/codomain)."""
import math

from .. import _composites
from .. import _functions as T
from .. import _tensor
from ..nn import functional as F
from . import constraints
from .constraints import Constraint, _Dependent, lower_cholesky
from .transforms import Transform

__all__ = ["CumulativeDistributionTransform", "AbsTransform", "ReshapeTransform", "SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "CorrCholeskyTransform", "IndependentTransform", "CatTransform", "StackTransform",
           "lower_triangular", "corr_cholesky", "square", "symmetric", "positive_semidefinite", "cat", "stack",
           "multinomial", "dependent_property"]


def _sum_rightmost(x, n):
    for _ in range(n):
        x = x.sum(-1)
    return x


def _diagonal(m):
    from .._shaping import diagonal
    return diagonal(m, dim1=-2, dim2=-1)


def _diag_embed(v):
    from .._array_functions import diag_embed
    return diag_embed(v)


# ---------------------------------------------------------------- constraints
class _LowerTriangular(Constraint):
    """Matrices (..., n, n) with zeros above the diagonal."""
    event_dim = 2

    def check(self, value):
        return T.all(T.all(T.tril(value) == value, -1), -1)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower_cholesky with rows of unit norm
    (within 10 n eps of the dtype)."""
    event_dim = 2

    def check(self, value):
        tol = T.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = T.sqrt((value.detach() ** 2).sum(-1))
        unit = T.all(T.abs(row_norm - 1) <= tol, -1)
        return lower_cholesky.check(value) & unit


class _Square(Constraint):
    """Square matrices (a per-matrix bool from the shape alone)."""
    event_dim = 2

    def check(self, value):
        return T.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=_bool())


class _Symmetric(_Square):
    """Square matrices equal to their transpose (within atol 1e-6 + rtol 1e-5, torch.isclose's)."""

    def check(self, value):
        square = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return square
        vt = T.transpose(value, -1, -2)
        close = T.abs(value - vt) <= 1e-6 + 1e-5 * T.abs(vt)
        return square & T.all(T.all(close, -1), -1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric matrices with eigenvalues >= 0."""

    def check(self, value):
        from .. import linalg
        sym = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return sym
        return sym & T.all(linalg.eigvalsh(value) >= 0, -1)


class _Cat(Constraint):
    """cseq[i] on the i-th slice (lengths[i] long, 1 each by default) of axis `dim`."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError("cat: lengths must have one entry per constraint")
        self.dim = dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))
    event_dim = property(lambda self: max(c.event_dim for c in self.cseq))

    def check(self, value):
        if not -value.ndim <= self.dim < value.ndim:
            raise ValueError(f"cat: dim {self.dim} is out of range for a value of {value.ndim} dimensions")
        checks, start = [], 0
        for c, length in zip(self.cseq, self.lengths):
            checks.append(c.check(T.narrow(value, self.dim, start, length)))
            start += length
        return T.cat(checks, self.dim)


class _Stack(Constraint):
    """cseq[i] on value.select(dim, i)."""

    def __init__(self, cseq, dim=0):
        self.cseq, self.dim = list(cseq), dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        if value.shape[self.dim] != len(self.cseq):
            raise ValueError(f"stack: axis {self.dim} has size {value.shape[self.dim]}, expected {len(self.cseq)}")
        return T.stack([c.check(value.select(self.dim, i)) for i, c in enumerate(self.cseq)], self.dim)


class _Multinomial(Constraint):
    """Non-negative vectors summing to at most upper_bound."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return T.all(value >= 0, -1) & (value.sum(-1) <= self.upper_bound)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint (a support computed from parameters):
    @constraints.dependent_property(is_discrete=False, event_dim=0) on a Distribution method."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        property.__init__(self, fn)
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


def _bool():
    from .. import dtypes
    return dtypes.bool


lower_triangular = _LowerTriangular()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
cat = _Cat
stack = _Stack
multinomial = _Multinomial
dependent_property = _DependentProperty

# ---------------------------------------------------------------- transforms


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): x in the distribution's support to (0, 1); log |dy/dx| is
    distribution.log_prob(x), the inverse distribution.icdf (as PyTorch's)."""
    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


class AbsTransform(Transform):
    """y = |x| (not bijective: inv gives y back)."""
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = Transform.__hash__

    def _call(self, x):
        return T.abs(x)

    def _inverse(self, y):
        return y


class ReshapeTransform(Transform):
    """Reshapes the rightmost event axes from in_shape to out_shape (same number of elements);
    log |det| is 0."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size)

    domain = property(lambda self: constraints.independent(constraints.real, len(self.in_shape)))
    codomain = property(lambda self: constraints.independent(constraints.real, len(self.out_shape)))

    def _call(self, x):
        batch = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return x.reshape(batch + self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[:y.ndim - len(self.out_shape)])
        return y.reshape(batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return T.zeros(batch, dtype=x.dtype)

    def forward_shape(self, shape):
        if len(shape) < len(self.in_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.in_shape)
        if tuple(shape[cut:]) != self.in_shape:
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {self.in_shape}")
        return tuple(shape[:cut]) + self.out_shape

    def inverse_shape(self, shape):
        if len(shape) < len(self.out_shape):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(self.out_shape)
        if tuple(shape[cut:]) != self.out_shape:
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {self.out_shape}")
        return tuple(shape[:cut]) + self.in_shape


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last axis (not bijective; inv is log y)."""
    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = T.exp(x - T.amax(x, -1, keepdim=True))
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return T.log(y)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _clipped_sigmoid(x):
    fi = T.finfo(x.dtype)
    return T.clamp(T.sigmoid(x), min=fi.tiny, max=1.0 - fi.eps)


class StickBreakingTransform(Transform):
    """R^K -> the simplex in R^(K+1) by stick breaking: z_i = sigmoid(x_i - log(K - i)),
    y_i = z_i prod_{j<i} (1 - z_j) (PyTorch's; bijective, log |det| from its formula)."""
    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _offset(self, k, dtype):
        return T.log(k + 1.0 - _tensor.arange(1, k + 1, dtype=dtype))

    def _call(self, x):
        k = x.shape[-1]
        z = _clipped_sigmoid(x - self._offset(k, x.dtype))
        z_cumprod = _composites.cumprod(1 - z, -1)
        ones = T.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype)
        return T.cat([z, ones], -1) * T.cat([ones, z_cumprod], -1)

    def _inverse(self, y):
        y_crop = T.narrow(y, -1, 0, y.shape[-1] - 1)
        k = y_crop.shape[-1]
        offset = T.log(float(y.shape[-1]) - _tensor.arange(1, k + 1, dtype=y.dtype))
        sf = T.clamp(1 - T.cumsum(y_crop, -1), min=T.finfo(y.dtype).tiny)
        return T.log(y_crop) - T.log(sf) + offset

    def log_abs_det_jacobian(self, x, y):
        x = x - self._offset(x.shape[-1], x.dtype)
        y_crop = T.narrow(y, -1, 0, y.shape[-1] - 1)
        return (-x + F.logsigmoid(x) + T.log(y_crop)).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Unconstrained matrices -> lower-triangular ones with positive diagonal: the strict lower
    triangle kept, the diagonal exponentiated (not bijective, no log |det|, as PyTorch's)."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return T.tril(x, -1) + _diag_embed(T.exp(_diagonal(x)))

    def _inverse(self, y):
        return T.tril(y, -1) + _diag_embed(T.log(_diagonal(y)))


class PositiveDefiniteTransform(Transform):
    """Unconstrained matrices -> positive definite ones: L L^T with L = LowerCholeskyTransform(x);
    the inverse takes the Cholesky factor (gt.linalg, on the client)."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return T.matmul(lower, lower.mT)

    def _inverse(self, y):
        from .. import linalg
        return LowerCholeskyTransform().inv(linalg.cholesky(y))


def _tril_positions(n, diag):
    """Flat positions (row-major) of the entries of an n x n matrix on or below diagonal `diag`."""
    return [i * n + j for i in range(n) for j in range(n) if j - i <= diag]


def _vec_to_tril_matrix(vec, diag=-1):
    """vec (..., N) into the lower triangle (below diagonal `diag`, row-major) of (..., n, n)
    matrices, zeros elsewhere (torch.distributions.utils')."""
    count = vec.shape[-1]
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * count + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2)
    positions = _tril_positions(n, diag)
    if len(positions) != count:
        raise ValueError(f"The size of last dimension is {count} which cannot be expressed as the lower triangular "
                         f"part of a square D x D matrix.")
    where = [count] * (n * n)  # (index `count` is a zero appended to vec)
    for k, p in enumerate(positions):
        where[p] = k
    padded = T.cat([vec, T.zeros(tuple(vec.shape[:-1]) + (1,), dtype=vec.dtype)], -1)
    flat = T.index_select(padded, -1, _tensor.tensor(where))
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))


def _tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return T.index_select(flat, -1, _tensor.tensor(_tril_positions(n, diag)))


class CorrCholeskyTransform(Transform):
    """Vectors of n (n - 1) / 2 reals -> Cholesky factors of n x n correlation matrices: tanh onto
    (-1, 1), placed below the diagonal, then stick breaking on the squares so that each row has
    unit norm (LKJ, Lewandowski et al. 2009; PyTorch's, bijective with its log |det|)."""
    domain = constraints.real_vector
    codomain = corr_cholesky
    bijective = True

    def _call(self, x):
        eps = T.finfo(x.dtype).eps
        r = _vec_to_tril_matrix(T.clamp(T.tanh(x), min=-1 + eps, max=1 - eps), diag=-1)
        z1m_cumprod_sqrt = _composites.cumprod(T.sqrt(1 - r ** 2), -1)
        n = r.shape[-1]
        ones = T.ones(tuple(r.shape[:-1]) + (1,), dtype=r.dtype)
        shifted = T.cat([ones, T.narrow(z1m_cumprod_sqrt, -1, 0, n - 1)], -1)
        return (r + _tensor.eye(n, dtype=r.dtype)) * shifted

    def _inverse(self, y):
        n = y.shape[-1]
        y_cumsum = 1 - T.cumsum(y * y, -1)
        ones = T.ones(tuple(y.shape[:-1]) + (1,), dtype=y.dtype)
        shifted = T.cat([ones, T.narrow(y_cumsum, -1, 0, n - 1)], -1)
        t = _tril_matrix_to_vec(y, diag=-1) / T.sqrt(_tril_matrix_to_vec(shifted, diag=-1))
        return (T.log1p(t) - T.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x, y):
        y1m_cumsum = 1 - T.cumsum(y * y, -1)
        stick_breaking = 0.5 * T.log(_tril_matrix_to_vec(y1m_cumsum, diag=-2)).sum(-1)
        tanh = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2 or shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class IndependentTransform(Transform):
    """base_transform with its rightmost reinterpreted_batch_ndims axes taken as one event:
    log |det| summed over them."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size)
        self.base_transform, self.reinterpreted_batch_ndims = base_transform, reinterpreted_batch_ndims

    domain = property(lambda self: constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims))
    codomain = property(lambda self: constraints.independent(self.base_transform.codomain,
                                                             self.reinterpreted_batch_ndims))
    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _call(self, x):
        if x.ndim < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.ndim < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class CatTransform(Transform):
    """tseq[i] on the i-th slice (lengths[i] long, 1 each by default) of axis `dim`, the results
    concatenated again."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: lengths must have one entry per transform")
        self.dim = dim

    event_dim = property(lambda self: max(t.event_dim for t in self.transforms))
    length = property(lambda self: sum(self.lengths))
    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    domain = property(lambda self: _Cat([t.domain for t in self.transforms], self.dim, self.lengths))
    codomain = property(lambda self: _Cat([t.codomain for t in self.transforms], self.dim, self.lengths))

    def _pieces(self, x, fn):
        if x.shape[self.dim] != self.length:
            raise ValueError(f"CatTransform: axis {self.dim} has size {x.shape[self.dim]}, expected {self.length}")
        out, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            out.append(fn(t, T.narrow(x, self.dim, start, length)))
            start += length
        return T.cat(out, self.dim)

    def _call(self, x):
        return self._pieces(x, lambda t, v: t(v))

    def _inverse(self, y):
        return self._pieces(y, lambda t, v: t.inv(v))

    def log_abs_det_jacobian(self, x, y):
        terms, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            term = t.log_abs_det_jacobian(T.narrow(x, self.dim, start, length), T.narrow(y, self.dim, start, length))
            if t.event_dim < self.event_dim:
                term = _sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
            start += length
        dim = self.dim - x.ndim if self.dim >= 0 else self.dim
        dim += self.event_dim
        if dim < 0:
            return T.cat(terms, dim)
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total


class StackTransform(Transform):
    """tseq[i] on x.select(dim, i), the results stacked again along dim."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(cache_size)
        self.transforms, self.dim = list(tseq), dim

    bijective = property(lambda self: all(t.bijective for t in self.transforms))
    domain = property(lambda self: _Stack([t.domain for t in self.transforms], self.dim))
    codomain = property(lambda self: _Stack([t.codomain for t in self.transforms], self.dim))

    def _slices(self, z):
        if z.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: axis {self.dim} has size {z.shape[self.dim]}, "
                             f"expected {len(self.transforms)}")
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        return T.stack([t(v) for t, v in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y):
        return T.stack([t.inv(v) for t, v in zip(self.transforms, self._slices(y))], self.dim)

    def log_abs_det_jacobian(self, x, y):
        return T.stack([t.log_abs_det_jacobian(a, b)
                        for t, a, b in zip(self.transforms, self._slices(x), self._slices(y))], self.dim)
