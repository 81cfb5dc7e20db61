"""torch's NumPy-style array functions, each built from GT's ops (gradients and fusion come with
them): running maxima, minima and log-sum-exps (cummax, cummin, logcumsumexp), stacking and
splitting (hstack, vstack, row_stack, dstack, column_stack, atleast_1d/2d/3d, hsplit, vsplit,
dsplit, broadcast_shapes), matrices (kron, block_diag, rot90, diag_embed, trace, vander, addmv,
chain_matmul, cov, corrcoef), trapezoid, and elementwise fmax, fmin, signbit, copysign, ldexp,
float_power, rsub.

The scans use Hillis-Steele doubling (Hillis & Steele, "Data parallel algorithms", CACM 1986):
log2(n) steps, each combining every element with the one 2^k before it, so a scan over n
elements is ~2 log2(n) ops whatever n is.
"""
import builtins
import collections
import functools
import math

import numpy as np

from . import dtypes as _dt
from . import _functions as T
from ._tensor import Tensor, _method, _dim
from ._tensor import autocast_operand as _autocast_operand

_Cummax = collections.namedtuple("cummax", ["values", "indices"])
_Cummin = collections.namedtuple("cummin", ["values", "indices"])


def _scan(x, d, combine):
    """Inclusive scan along axis d of the tuple of tensors x (all of one shape) by doubling:
    combine(later, earlier) -> tuple merges the summary of a later segment with the summary
    of the segment just before it (must be associative). The first 2^k elements keep theirs."""
    n, shift = x[0].shape[d], 1
    while shift < n:
        later = [T.narrow(t, d, shift, n - shift) for t in x]
        earlier = [T.narrow(t, d, 0, n - shift) for t in x]
        merged = combine(later, earlier)
        x = [T.cat([T.narrow(t, d, 0, shift), m], d) for t, m in zip(x, merged)]
        shift *= 2
    return x


def _cumulative_extreme(x, dim, larger):
    result = _Cummax if larger else _Cummin
    if x.ndim == 0:
        return result(x, T.zeros((), dtype=_dt.int64))
    d = _dim(dim, x.ndim)
    shape = [1] * x.ndim
    shape[d] = x.shape[d]
    index = T.expand(T.reshape(T.arange(x.shape[d]), *shape), *x.shape)

    def combine(later, earlier):
        (v, i), (u, j) = later, earlier
        wins = (v >= u) if larger else (v <= u)
        # NaN is the extreme of all (it propagates, as in PyTorch); ties go to the later index.
        take = T.isnan(v) | (~T.isnan(u) & wins)
        return T.where(take, v, u), T.where(take, i, j)

    values, indices = _scan([x, index], d, combine)
    return result(values, indices)


@_method()
def cummax(x, dim):
    """(values, indices): the running maximum along dim and where it was found, as
    torch.cummax: a tie takes the later index; once a NaN is seen the maximum is NaN. Shapes:
    both as x; indices int64. The gradient goes to the element each maximum came from."""
    return _cumulative_extreme(x, dim, larger=True)


@_method()
def cummin(x, dim):
    """(values, indices): the running minimum along dim, as torch.cummin (see cummax)."""
    return _cumulative_extreme(x, dim, larger=False)


def _real_float(x, name):
    """x in a floating dtype (integers cast to the default float dtype); TypeError for a complex
    x (casting it to real would drop the imaginary part: a silently wrong result)."""
    if x.dtype.is_complex:
        raise TypeError(f"{name}: GT's complex tensors do not support this op")
    return x if x.dtype.is_floating_point else T.cast(x, _dt.default_float())


@_method()
def logcumsumexp(x, dim):
    """log(cumsum(exp(x), dim)) computed without overflow: a doubling scan of logaddexp, with
    -inf (exp(x) = 0) handled so that neither values nor gradients become NaN."""
    if x.ndim == 0:
        return x
    x = _real_float(x, "logcumsumexp")
    d = _dim(dim, x.ndim)
    ninf = -math.inf

    def combine(later, earlier):
        (a,), (b,) = later, earlier
        a_gone, b_gone = a == ninf, b == ninf
        sa, sb = T.where(a_gone, 0.0, a), T.where(b_gone, 0.0, b)  # finite stand-ins
        both = T.maximum(sa, sb) + T.log1p(T.exp(-T.abs(sa - sb)))
        return (T.where(b_gone, a, T.where(a_gone, b, both)),)

    return _scan([x], d, combine)[0]


# ---------------------------------------------------------------- stacking and splitting

def _each(tensors, fn):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = tuple(fn(t) for t in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors):
    """Each tensor with at least 1 axis (a 0-d one becomes shape [1]); one tensor in, one out."""
    return _each(tensors, lambda t: T.reshape(t, 1) if t.ndim == 0 else t)


def atleast_2d(*tensors):
    """Each tensor with at least 2 axes: [] -> [1, 1], [n] -> [1, n]."""
    return _each(tensors, lambda t: T.reshape(t, *(1,) * (2 - t.ndim), *t.shape) if t.ndim < 2 else t)


def atleast_3d(*tensors):
    """Each tensor with at least 3 axes: [] -> [1, 1, 1], [n] -> [1, n, 1], [m, n] -> [m, n, 1]."""
    def three(t):
        if t.ndim == 0:
            return T.reshape(t, 1, 1, 1)
        if t.ndim == 1:
            return T.reshape(t, 1, t.shape[0], 1)
        return T.reshape(t, *t.shape, 1) if t.ndim == 2 else t
    return _each(tensors, three)


def hstack(tensors):
    """Concatenation along axis 1 (axis 0 for 1-D tensors), as torch.hstack."""
    ts = [atleast_1d(t) for t in tensors]
    return T.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """Concatenation along axis 0 after atleast_2d ([n] -> [1, n]), as torch.vstack."""
    return T.cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack


def dstack(tensors):
    """Concatenation along axis 2 after atleast_3d, as torch.dstack."""
    return T.cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors):
    """0-d and 1-d tensors as columns ([n] -> [n, 1]), then concatenation along axis 1."""
    return T.cat([T.reshape(t, t.numel(), 1) if t.ndim <= 1 else t for t in tensors], 1)


def _split_along(x, sections, d, name):
    if isinstance(sections, builtins.int) and x.shape[d] % sections:
        raise RuntimeError(f"torch.{name}: dimension {d} of size {x.shape[d]} is not divisible by {sections} sections")
    from ._composites import tensor_split
    return tensor_split(x, sections, d)


@_method()
def hsplit(x, sections):
    """Splits along axis 1 (axis 0 of a 1-D tensor) into equal parts or at indices (torch.hsplit)."""
    if x.ndim < 1:
        raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got a 0-d tensor")
    return _split_along(x, sections, 1 if x.ndim > 1 else 0, "hsplit")


@_method()
def vsplit(x, sections):
    """Splits along axis 0 (torch.vsplit; x needs 2 or more axes)."""
    if x.ndim < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimensions, but got {x.ndim}")
    return _split_along(x, sections, 0, "vsplit")


@_method()
def dsplit(x, sections):
    """Splits along axis 2 (torch.dsplit; x needs 3 or more axes)."""
    if x.ndim < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimensions, but got {x.ndim}")
    return _split_along(x, sections, 2, "dsplit")


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to (a gt.Size), as torch.broadcast_shapes;
    RuntimeError naming the shapes when they do not broadcast."""
    from ._tensor import Size
    shapes = [(s,) if isinstance(s, builtins.int) else tuple(s) for s in shapes]
    try:
        return Size(builtins.int(n) for n in np.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes: shapes {shapes} cannot be broadcast together") from None


# ---------------------------------------------------------------- matrices

@_method()
def kron(a, b):
    """The Kronecker product (torch.kron): for a of shape [a0, a1, ...] and b [b0, b1, ...]
    (the shorter padded with leading 1s), [a0 b0, a1 b1, ...] with block (i, j, ...) = a[i, j, ...] * b."""
    n = builtins.max(a.ndim, b.ndim)
    a = T.reshape(a, *(1,) * (n - a.ndim), *a.shape)
    b = T.reshape(b, *(1,) * (n - b.ndim), *b.shape)
    spread_a = T.reshape(a, *[s for d in a.shape for s in (d, 1)])
    spread_b = T.reshape(b, *[s for d in b.shape for s in (1, d)])
    return T.reshape(spread_a * spread_b, *[p * q for p, q in zip(a.shape, b.shape)])


def block_diag(*tensors):
    """The block-diagonal matrix of 0-d, 1-d ([n] is one row) and 2-d tensors (torch.block_diag),
    zeros elsewhere, in their promoted dtype."""
    blocks = [T.reshape(t, 1, 1) if t.ndim == 0 else T.reshape(t, 1, t.shape[0]) if t.ndim == 1 else t
              for t in tensors]
    if any(b.ndim != 2 for b in blocks):
        raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions")
    blocks = T._promote_all(blocks) if blocks else []
    dtype = blocks[0].dtype if blocks else _dt.default_float()
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        parts = [T.zeros(b.shape[0], left, dtype=dtype), b,
                 T.zeros(b.shape[0], width - left - b.shape[1], dtype=dtype)]
        rows.append(T.cat(parts, 1))
        left += b.shape[1]
    return T.cat(rows, 0) if rows else T.zeros(0, 0, dtype=dtype)


@_method()
def rot90(x, k=1, dims=(0, 1)):
    """x rotated by 90 degrees k times in the plane dims, from the first axis towards the second
    (torch.rot90)."""
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected 2 dims, got {len(dims)}")
    d0, d1 = _dim(dims[0], x.ndim), _dim(dims[1], x.ndim)
    if d0 == d1:
        raise RuntimeError(f"rot90: the two dims must differ, got {dims}")
    k %= 4
    if k == 1:
        return T.transpose(T.flip(x, [d1]), d0, d1)
    if k == 2:
        return T.flip(x, [d0, d1])
    if k == 3:
        return T.transpose(T.flip(x, [d0]), d0, d1)
    return x


@_method()
def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """A tensor whose (dim1, dim2) planes have x's last axis on their diagonal `offset` (above
    the main one when positive) and zeros elsewhere (torch.diag_embed): x [..., n] gives
    [..., n + |offset|, n + |offset|] for the default dims."""
    n = x.shape[-1]
    m = n + builtins.abs(offset)
    padded = T.cat([x, T.zeros(*x.shape[:-1], builtins.abs(offset), dtype=x.dtype)], -1) if offset else x
    on = T.tensor(np.eye(m, k=offset, dtype=bool))
    spread = T.unsqueeze(padded, -1) if offset >= 0 else T.unsqueeze(padded, -2)  # by row / by column
    out = T.where(on, spread, T.zeros((), dtype=x.dtype))
    nd = out.ndim
    d1, d2 = _dim(dim1, nd), _dim(dim2, nd)
    if (d1, d2) == (nd - 2, nd - 1):
        return out
    from ._compat import movedim
    return movedim(out, (nd - 2, nd - 1), (d1, d2))


@_method()
def trace(x):
    """The sum of a 2-D tensor's main diagonal (torch.trace)."""
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got a tensor with {x.ndim} dimensions")
    from ._shaping import diagonal
    return T.sum(diagonal(x))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x: columns x^(N-1), ..., x^0 (or increasing powers),
    N = len(x) by default (torch.vander)."""
    if x.ndim != 1:
        raise RuntimeError("torch.vander: x must be a one-dimensional tensor")
    n = x.shape[0] if N is None else N
    powers = range(n) if increasing else range(n - 1, -1, -1)
    cols = [T.ones_like(x) if p == 0 else x if p == 1 else x ** p for p in powers]
    return T.stack(cols, 1) if cols else T.zeros(x.shape[0], 0, dtype=x.dtype)


@_method()
def addmv(x, mat, vec, *, beta=1, alpha=1):
    """beta * x + alpha * (mat @ vec): mat [n, m], vec [m], x broadcast to [n] (torch.addmv)."""
    return beta * _autocast_operand(x) + alpha * T.matmul(mat, vec)


def chain_matmul(*matrices):
    """The product of the matrices, left to right (torch.chain_matmul)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    return functools.reduce(T.matmul, matrices)


@_method()
def cov(x, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in x's rows, observations in its columns (a 1-D x
    is one variable): (x - mean) (x - mean)^T / (N - correction), as torch.cov. Frequency and
    observation weights are not supported (NotImplementedError)."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("gt.cov: fweights and aweights are not supported; weight the observations first")
    if x.ndim > 2:
        raise RuntimeError(f"cov: expected input to have two or fewer dimensions but got an input with {x.ndim}")
    x = atleast_2d(_real_float(x, "cov"))
    centered = x - T.mean(x, 1, True)
    c = T.matmul(centered, T.transpose(centered, 0, 1)) / builtins.max(x.shape[1] - correction, 0)
    return T.reshape(c, ()) if c.shape == (1, 1) else c


@_method()
def corrcoef(x):
    """Pearson correlation coefficients of the variables in x's rows (torch.corrcoef): cov(x)
    divided by the outer product of the standard deviations, clamped to [-1, 1]."""
    c = cov(x)
    if c.ndim == 0:
        return c / c
    from ._shaping import diagonal
    sd = T.sqrt(diagonal(c))
    return T.clamp(c / T.unsqueeze(sd, 1) / T.unsqueeze(sd, 0), -1.0, 1.0)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim (torch.trapezoid): the sum of (x[i+1] - x[i]) (y[i] +
    y[i+1]) / 2, with sample points x (a 1-D tensor, or y's shape) or a spacing dx (1 by default)."""
    d = _dim(dim, y.ndim)
    n = y.shape[d]
    y = y if y.dtype.is_floating_point or y.dtype.is_complex else T.cast(y, _dt.default_float())
    if n == 0:
        return T.sum(y, d)
    pairs = T.narrow(y, d, 1, n - 1) + T.narrow(y, d, 0, n - 1)
    if x is None:
        return (1.0 if dx is None else dx) * T.sum(pairs, d) / 2.0
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[d] = n
        x = T.reshape(x, *shape)
    xd = _dim(dim, x.ndim)
    steps = T.narrow(x, xd, 1, n - 1) - T.narrow(x, xd, 0, n - 1)
    return T.sum(steps * pairs, d) / 2.0


trapz = trapezoid  # (PyTorch's older name)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along dim (torch.cumulative_trapezoid): element i is
    trapezoid of y[..., :i + 2]; one element fewer than y along dim."""
    d = _dim(dim, y.ndim)
    n = y.shape[d]
    y = y if y.dtype.is_floating_point or y.dtype.is_complex else T.cast(y, _dt.default_float())
    pairs = T.narrow(y, d, 1, builtins.max(n - 1, 0)) + T.narrow(y, d, 0, builtins.max(n - 1, 0))
    if x is None:
        areas = (1.0 if dx is None else dx) * pairs / 2.0
    else:
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[d] = n
            x = T.reshape(x, *shape)
        xd = _dim(dim, x.ndim)
        areas = (T.narrow(x, xd, 1, n - 1) - T.narrow(x, xd, 0, n - 1)) * pairs / 2.0
    return T.cumsum(areas, d)


# ---------------------------------------------------------------- elementwise

@_method()
def fmax(x, other):
    """The elementwise maximum, ignoring a NaN when the other value is a number (torch.fmax)."""
    return T.where(T.isnan(x), other, T.where(T.isnan(other), x, T.maximum(x, other)))


@_method()
def fmin(x, other):
    """The elementwise minimum, ignoring a NaN when the other value is a number (torch.fmin)."""
    return T.where(T.isnan(x), other, T.where(T.isnan(other), x, T.minimum(x, other)))


@_method()
def signbit(x):
    """Whether each element's sign bit is set (a bool tensor): true for negatives and -0.0."""
    if not x.dtype.is_floating_point:
        return x < 0
    return (x < 0) | ((x == 0) & (1.0 / x < 0))


@_method()
def copysign(x, other):
    """|x| with the sign of other, elementwise (-0.0 counts as negative), as torch.copysign."""
    x = _real_float(x, "copysign")
    negative = signbit(other) if isinstance(other, Tensor) else math.copysign(1.0, other) < 0
    return T.where(negative, -T.abs(x), T.abs(x))


@_method()
def ldexp(x, other):
    """x * 2^other (torch.ldexp), in a floating-point dtype."""
    x = _real_float(x, "ldexp")
    return x * T.pow(2.0, other) if isinstance(other, Tensor) else x * (2.0 ** other)


@_method()
def float_power(x, exponent):
    """x ** exponent in float64 (torch.float_power), whatever the inputs' dtypes."""
    base = T.cast(x, _dt.float64) if isinstance(x, Tensor) else T.tensor(x, dtype=_dt.float64)
    e = T.cast(exponent, _dt.float64) if isinstance(exponent, Tensor) else exponent
    return T.pow(base, e)


@_method()
def rsub(x, other, *, alpha=1):
    """other - alpha * x (torch.rsub: subtraction with the operands swapped)."""
    return other - alpha * x if alpha != 1 else other - x
