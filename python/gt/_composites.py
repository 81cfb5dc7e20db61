"""More of torch's functions and Tensor methods, each built from GT's ops (so gradients and
fusion come with them): elementwise math (reciprocal, square, trunc, frac, ceil, fmod, expm1,
exp2, log2, log10, sinh, cosh, tan, hypot, logaddexp, xlogy, deg2rad, heaviside, sinc,
nan_to_num), addcmul / addcdiv, nansum / nanmean, count_nonzero, var_mean / std_mean, tile,
tensor_split, scatter, searchsorted / bucketize, cdist, meshgrid, cartesian_prod,
tril_indices / triu_indices, bincount, unique, bernoulli, normal, randint_like; and the Tensor
methods new_tensor, new_empty, view_as, reshape_as, element_size, nelement, nbytes, itemsize,
is_contiguous, stride, storage_offset, t, mH, type and in-place forms of unary functions.

bincount and unique have a size that depends on the values, so they read them (a wait).
"""
import builtins
import functools
import math

import numpy as np

from . import autograd as _ag
from . import dtypes as _dt
from . import _functions as T
from ._tensor import Tensor, _method, _dim, _next_seed, _op, _takes_device, warn_at_user_line
from ._indexing import group_ends, put_rows

LN2, LN10 = math.log(2.0), math.log(10.0)


def _float(x):
    """x in a floating dtype: integers and bools cast to the default float dtype; a complex x as
    it is (the composite then computes with complex ops, or raises TypeError for one without a
    complex form: casting it to real dropped the imaginary part, silently wrong)."""
    return x if x.dtype.is_floating_point or x.dtype.is_complex else T.cast(x, _dt.default_float())


# ---------------------------------------------------------------- elementwise

@_method()
def reciprocal(x):
    return 1.0 / _float(x)


@_method()
def square(x):
    return x * x


@_method()
def trunc(x):
    """Rounds toward zero."""
    return x if not x.dtype.is_floating_point else T.where(x < 0, -T.floor(-x), T.floor(x))


fix = trunc


@_method()
def frac(x):
    return x - trunc(x)


@_method()
def ceil(x):
    return x if not x.dtype.is_floating_point else -T.floor(-x)


@_method()
def fmod(x, other):
    """C's remainder: x - trunc(x / other) * other (the sign of x), as torch.fmod."""
    if not x.dtype.is_floating_point and not (isinstance(other, Tensor) and other.dtype.is_floating_point) \
            and not isinstance(other, builtins.float):
        r = T.remainder(x, other)  # Python's (the divisor's sign): move it to the dividend's sign
        return T.where(T.logical_and(r != 0, (r < 0) != (x < 0)), r - other, r)
    return x - trunc(x / other) * other


@_method()
def expm1(x):
    """e^x - 1, accurate near 0 (exp(x) - 1 loses every digit below about 1e-7 in float32):
    with u = e^x, (u - 1) x / log(u), whose rounding errors cancel (Kahan's trick; Higham,
    Accuracy and Stability of Numerical Algorithms, 2002, sec. 1.14.1); x itself where u == 1.
    float32 and half types compute in float64 and round once (within 1 ulp, as PyTorch's: the
    float32 polynomial exp left 2.5 ulp, which k-diffusion's DPM-Solver steps carry). Gradient e^x."""
    return _Expm1.apply(_float(x))


class _Expm1(_ag.Function):
    @staticmethod
    def forward(ctx, x):
        wide = T.cast(x, _dt.float64) if x.dtype in (_dt.float32, _dt.bfloat16, _dt.float16) else x
        u = T.exp(wide)
        um1 = u - 1.0
        exact = T.logical_or(T.isinf(u), um1 == -1.0)  # (inf, and -1 where u underflowed to 0)
        y = T.where(u == 1.0, wide, T.where(exact, um1, um1 * wide / T.log(u)))
        ctx.save_for_backward(x)
        return T.cast(y, x.dtype) if wide is not x else y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * T.exp(x)  # (from x, so that create_graph differentiates it again)


@_method()
def exp2(x):
    return T.exp(_float(x) * LN2)


@_method()
def log2(x):
    return T.log(_float(x)) / LN2


@_method()
def log10(x):
    return T.log(_float(x)) / LN10


@_method()
def sinh(x):
    e = T.exp(_float(x))
    return (e - 1.0 / e) * 0.5


@_method()
def cosh(x):
    e = T.exp(_float(x))
    return (e + 1.0 / e) * 0.5


@_method()
def tan(x):
    return T.sin(_float(x)) / T.cos(_float(x))


@_method()
def hypot(x, other):
    return T.sqrt(x * x + other * other)


@_method()
def logaddexp(x, other):
    """log(exp(x) + exp(other)), computed stably."""
    m = T.maximum(x, other)
    return m + T.log1p(T.exp(-T.abs(x - other)))


@_method()
def xlogy(x, other):
    """x * log(other), 0 where x is 0 (as torch.xlogy)."""
    x = _float(x) if isinstance(x, Tensor) else x
    return T.where(x == 0, 0.0, x * T.log(other))


@_method()
def deg2rad(x):
    return _float(x) * (math.pi / 180.0)


@_method()
def rad2deg(x):
    return _float(x) * (180.0 / math.pi)


@_method()
def heaviside(x, values):
    """1 where x > 0, 0 where x < 0, `values` where x == 0."""
    return T.where(x > 0, T.ones_like(x), T.where(x < 0, T.zeros_like(x), values))


@_method()
def sinc(x):
    """sin(pi x) / (pi x), 1 at 0."""
    px = _float(x) * math.pi
    safe = T.where(px == 0, 1.0, px)
    return T.where(px == 0, 1.0, T.sin(safe) / safe)


@_method()
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """NaN -> nan, inf -> posinf (default the dtype's largest value), -inf -> neginf."""
    if not x.dtype.is_floating_point:
        return x
    info = T.finfo(x.dtype)
    y = T.where(T.isnan(x), nan, x)
    y = T.where(y == float("inf"), info.max if posinf is None else posinf, y)
    return T.where(y == float("-inf"), info.min if neginf is None else neginf, y)


def _legacy_value(name, tensor1, tensor2, more):
    """(tensor1, tensor2, value) of PyTorch's deprecated addcmul/addcdiv(x, value, tensor1,
    tensor2) spelling (Ranger and other optimizers still use it), with its warning."""
    warn_at_user_line(f"This overload of {name} is deprecated: {name}(Number value, Tensor tensor1, Tensor tensor2); "
                      f"use {name}(Tensor tensor1, Tensor tensor2, *, Number value)")
    return tensor2, more[0], tensor1


@_method()
def addcmul(x, tensor1, tensor2, *more, value=1):
    """x + value * tensor1 * tensor2."""
    if more:
        tensor1, tensor2, value = _legacy_value("addcmul", tensor1, tensor2, more)
    return x + value * tensor1 * tensor2


@_method()
def addcdiv(x, tensor1, tensor2, *more, value=1):
    """x + value * tensor1 / tensor2."""
    if more:
        tensor1, tensor2, value = _legacy_value("addcdiv", tensor1, tensor2, more)
    return x + value * tensor1 / tensor2


# ---------------------------------------------------------------- reductions

@_method()
def nansum(x, dim=None, keepdim=False):
    """sum with NaN counted as 0."""
    return T.sum(T.where(T.isnan(x), 0.0, x) if x.dtype.is_floating_point else x, dim, keepdim)


@_method()
def nanmean(x, dim=None, keepdim=False):
    """mean over the elements that are not NaN."""
    keep = T.logical_not(T.isnan(x))
    return T.sum(T.where(keep, x, 0.0), dim, keepdim) / T.sum(T.cast(keep, x.dtype), dim, keepdim)


@_method()
def count_nonzero(x, dim=None):
    return T.sum(T.cast(x != 0, _dt.int64), dim)


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) as torch.var_mean."""
    kw = {} if correction is None else {"correction": correction}
    if unbiased is not None:
        kw["unbiased"] = unbiased
    return T.var(x, dim, keepdim=keepdim, **kw), T.mean(x, dim, keepdim=keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) as torch.std_mean."""
    v, m = var_mean(x, dim, unbiased, keepdim, correction=correction)
    return T.sqrt(v), m


# ---------------------------------------------------------------- shapes and indices

@_method()
def tile(x, dims):
    """x repeated along each axis dims[i] times (missing leading dims count as 1), as torch.tile."""
    dims = tuple(dims)
    if len(dims) < x.ndim:
        dims = (1,) * (x.ndim - len(dims)) + dims
    return T.repeat(x, *dims)


@_method()
def tensor_split(x, indices_or_sections, dim=0):
    """Splits along dim into n nearly equal parts (the first size % n one longer) or at the
    given indices, as torch.tensor_split; views are narrow()s."""
    d = _dim(dim, x.ndim)
    size = x.shape[d]
    if isinstance(indices_or_sections, builtins.int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be positive, got {n}")
        bounds = [i * (size // n) + builtins.min(i, size % n) for i in range(n + 1)]
    else:
        bounds = [0] + [builtins.min(builtins.max(int(i), 0), size) for i in indices_or_sections] + [size]
    return tuple(T.narrow(x, d, a, builtins.max(b - a, 0)) for a, b in zip(bounds[:-1], bounds[1:]))


def _scalar_index(x, index, src):
    """A 0-d index (and a 0-d src) of scatter into a 1-D tensor as one element, as PyTorch
    takes it (the transforms tutorial's one-hot: zeros(10).scatter_(0, tensor(y), value=1))."""
    if isinstance(index, Tensor) and index.ndim == 0 and x.ndim == 1:
        index = T.reshape(index, (1,))
        if isinstance(src, Tensor) and src.ndim == 0:
            src = T.reshape(src, (1,))
    return index, src


@_method()
def scatter(x, dim, index, src=None, value=None, reduce=None):
    """x with src (or the number `value`) written at index along dim, as torch.scatter: where
    several writes hit one element (a case PyTorch documents as undefined) the last one in
    index's row-major order stays, as PyTorch's CPU kernel leaves it. reduce='add' adds to x,
    'multiply' is not supported."""
    if reduce not in (None, "add"):
        raise NotImplementedError(f"scatter: reduce={reduce!r} is not supported by GT (None or 'add')")
    d = _dim(dim, x.ndim)
    index, src = _scalar_index(x, index, src)
    if src is None or not isinstance(src, Tensor):
        src = T.full(index.shape, value if src is None else src, dtype=x.dtype)
    if reduce == "add":
        return x + T.scatter_add_zeros(x.shape, d, index, T.cast(src, x.dtype))
    positions, values = _scatter_elements(x, d, index, src)
    return T.reshape(put_rows(T.reshape(x, (-1,)), positions, values), x.shape)


@_method()
def scatter_reduce(x, dim, index, src, reduce, *, include_self=True):
    """x with the elements of src reduced into x[..., index, ...] along dim, as
    torch.scatter_reduce: reduce is "sum", "prod" (a segmented product scan), "mean", "amax" or "amin";
    with include_self=False x's own value at a position that receives values takes no part.
    Positions no index names keep x's value. An integer "mean" rounds down, as PyTorch's.
    Gradients: "sum"/"mean" to every contributing element; "amax"/"amin" to the one element
    chosen (the last listed of equal extremes; PyTorch shares the gradient among them)."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _dim(dim, x.ndim)
    if index.numel() == 0:
        return x * 1  # (nothing to reduce: x's values, a new tensor as PyTorch's)
    positions, values = _scatter_elements(x, d, index, src)
    flat = T.reshape(x, (-1,))
    n = flat.shape[0]
    with _ag.no_grad():
        count = T.index_add_zeros((n,), 0, positions, T.ones(positions.shape, dtype=_dt.int64))
        hit = count > 0
    if reduce in ("sum", "mean"):
        total = T.index_add_zeros((n,), 0, positions, values)
        if include_self:
            total = total + flat
            count = count + 1
        if reduce == "mean":
            divisor = T.cast(T.maximum(count, T.ones((), dtype=_dt.int64)), x.dtype)
            total = total // divisor if not x.dtype.is_floating_point else total / divisor
        out = T.where(hit, total, flat)
    elif reduce == "prod":
        ordered, product, ends = _segmented_product(positions, values)
        chosen = put_rows(flat, ordered, product, last=ends)
        out = T.where(hit, chosen * flat, flat) if include_self else chosen
    else:
        chosen = put_rows(flat, positions, values, last=group_ends(positions, values, descending=reduce == "amin"))
        out = T.where(hit, (T.maximum if reduce == "amax" else T.minimum)(chosen, flat), flat) if include_self else chosen
    return T.reshape(out, x.shape)


@_method()
def index_put(x, indices, values, accumulate=False):
    """x with x[indices] = values (indices: a tuple of index tensors, one per leading axis), as
    torch.index_put; accumulate=True adds the values instead (repeated indices add up)."""
    indices = tuple(indices)
    if not accumulate:
        out = T.clone(x)
        out[indices] = values
        return out
    from ._indexing import _flat_index
    k = len(indices)
    index, bshape = _flat_index(list(indices), x.shape[:k])
    rest = x.shape[k:]
    v = values if isinstance(values, Tensor) else T.full((), values, dtype=x.dtype)
    rows = T.reshape(T.broadcast_to(T.cast(v, x.dtype), tuple(bshape) + rest), (index.shape[0],) + rest)
    flat = T.reshape(x, (math.prod(x.shape[:k]),) + rest)
    return T.reshape(flat + T.index_add_zeros(flat.shape, 0, index, rows), x.shape)


def _segmented_product(positions, values):
    """(positions sorted, the running product of values within each run of equal positions,
    whether each element ends its run): a segmented inclusive scan by doubling (Hillis & Steele
    1986, "Data parallel algorithms"), log2(n) rounds of a shifted multiply where the element
    k back has the same position; differentiable (no division)."""
    n = positions.shape[0]
    order = _op("argsort", positions, axis=0, descending=False)
    pos = T.index_select(positions, 0, order)
    v = T.index_select(values, 0, order)
    k = 1
    while k < n:
        same = T.cat([T.zeros(k, dtype=_dt.bool), T.narrow(pos, 0, k, n - k) == T.narrow(pos, 0, 0, n - k)], 0)
        behind = T.cat([T.ones(k, dtype=v.dtype), T.narrow(v, 0, 0, n - k)], 0)
        v = T.where(same, v * behind, v)
        k *= 2
    ends = T.cat([T.narrow(pos, 0, 0, n - 1) != T.narrow(pos, 0, 1, n - 1), T.ones(1, dtype=_dt.bool)], 0) \
        if n > 1 else T.ones((n,), dtype=_dt.bool)
    return pos, v, ends


def _scatter_elements(x, d, index, src):
    """(positions, values): the flat position in x of each element of `index` (scatter's
    index along dim d: x[..., index[i, j, ...], ...] at the other coordinates of the element)
    and src's element there (src cut to index's shape), both 1-D in index's row-major order. An
    index out of range fails on the worker (index_select of 0..n-1 at it), naming the size."""
    if index.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    index = T.cast(index, _dt.int64)
    checked = T.index_select(T.arange(x.shape[d], dtype=_dt.int64), 0, T.reshape(index, (-1,)))
    strides = [math.prod(x.shape[k + 1:]) for k in range(x.ndim)]
    positions = T.reshape(checked, index.shape) * strides[d]
    for k in range(x.ndim):
        if k != d and index.shape[k] > 1:
            shape = [1] * x.ndim
            shape[k] = index.shape[k]
            positions = positions + T.reshape(T.arange(index.shape[k], dtype=_dt.int64) * strides[k], tuple(shape))
    if tuple(src.shape) != tuple(index.shape):
        src = T._slice(src, [0] * src.ndim, [1] * src.ndim, list(index.shape))
    return T.reshape(positions, (-1,)), T.reshape(T.cast(src, x.dtype), (-1,))


def searchsorted(sorted_sequence, values, *, right=False, out_int32=False, side=None, sorter=None):
    """Insertion points of `values` in the last axis of `sorted_sequence` (1-D, or one row per
    leading position of values), as torch.searchsorted: the count of elements < v (<= v with
    right=True or side='right'); `sorter` holds the indices that sort an unsorted sequence
    along its last axis. One comparison per (value, element), written as PyTorch's binary
    search compares: a NaN value goes after every element."""
    right = right or side == "right"
    vals = values if isinstance(values, Tensor) else T.tensor(values)
    seq = sorted_sequence if sorter is None else T.gather(sorted_sequence, -1, sorter)
    expanded = T.unsqueeze(vals, -1)
    boundary = seq if seq.ndim == 1 else T.unsqueeze(seq, -2) if seq.ndim == vals.ndim else seq
    below = T.logical_not(boundary > expanded) if right else T.logical_not(boundary >= expanded)
    out = T.sum(T.cast(below, _dt.int64), -1)
    return T.cast(out, _dt.int32) if out_int32 else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each input element among 1-D `boundaries`, as torch.bucketize."""
    return searchsorted(boundaries, input, right=right, out_int32=out_int32)


@_method()
def sgn(x):
    """torch.sgn: sign(x) for a real x; x / |x| (0 at 0) for a complex x."""
    from . import _complex
    if _complex.is_complex_tensor(x):
        a = x.abs()
        return x / T.where(a == 0, T.ones((), dtype=a.dtype), a)
    return T.sign(x)


@_method()
def flipud(x):
    """x reversed along axis 0 (x at least 1-D), as torch.flipud."""
    if x.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _ops_mod().flip(x, [0])


@_method()
def fliplr(x):
    """x reversed along axis 1 (x at least 2-D), as torch.fliplr."""
    if x.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _ops_mod().flip(x, [1])


@_method()
def masked_scatter(x, mask, source):
    """x with the positions where `mask` (bool, broadcast to x's shape) is True taking
    consecutive elements of `source` in row-major order, as torch.masked_scatter (source needs
    at least as many elements as mask has True values). Gradients reach x and source."""
    if mask.dtype != _dt.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    m = T.reshape(T.broadcast_to(mask, x.shape), (-1,))
    flat = T.reshape(source, (-1,))
    position = T.clamp(_ops_mod().cumsum(T.cast(m, _dt.int64), 0) - 1, 0, builtins.max(flat.shape[0] - 1, 0))
    taken = T.index_select(flat, 0, position) if flat.shape[0] else T.zeros(m.shape, dtype=x.dtype)
    return T.reshape(T.where(m, T.cast(taken, x.dtype), T.reshape(x, (-1,))), x.shape)


@_method()
def renorm(input, p, dim, maxnorm):
    """input with each slice along `dim` whose p-norm (over the other axes) exceeds maxnorm
    scaled to norm maxnorm (by maxnorm / (norm + 1e-7), as PyTorch's kernel), as torch.renorm."""
    d = _dim(dim, input.ndim)
    norms = T.norm(input, p, tuple(i for i in range(input.ndim) if i != d), keepdim=True)
    return input * T.where(norms > maxnorm, maxnorm / (norms + 1e-7), T.ones((), dtype=input.dtype))


@_method()
def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), a 0-d tensor, as torch.dist."""
    return T.norm(input - other, p)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise p-norm distances between the rows of (..., P, M) x1 and (..., R, M) x2 ->
    (..., P, R), as torch.cdist: p=2 through x1^2 + x2^2 - 2 x1 x2^T (clamped at 0) when P or R
    exceeds 25 (compute_mode's default, PyTorch's rule) or compute_mode="use_mm_for_euclid_dist",
    else directly from the differences (exact zeros for equal rows: e3nn's radius graph)."""
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mm = compute_mode == "use_mm_for_euclid_dist" or \
        compute_mode == "use_mm_for_euclid_dist_if_necessary" and (x1.shape[-2] > 25 or x2.shape[-2] > 25)
    if p == 2.0 and mm:
        sq = T.sum(x1 * x1, -1, keepdim=True) + T.transpose(T.sum(x2 * x2, -1, keepdim=True), -2, -1) \
            - 2.0 * T.matmul(x1, T.transpose(x2, -2, -1))
        return T.sqrt(T.clamp(sq, min=0.0))
    diff = T.unsqueeze(x1, -2) - T.unsqueeze(x2, -3)
    if p == 2.0:
        from . import linalg
        return linalg.vector_norm(diff, 2, -1)  # (its gradient is 0 at a zero distance, as PyTorch's cdist's)
    diff = T.abs(diff)
    if p == float("inf"):
        return T.amax(diff, -1)
    return T.sum(diff ** p, -1) ** (1.0 / p)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors, as torch.meshgrid ('ij' or 'xy' indexing)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    grids = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        grids.append(T.expand(T.reshape(t, *view), *shape))
    if swap:  # 'xy': the grids of (t1, t0, ...) in 'ij', the first two swapped back
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """All combinations of the elements of 1-D tensors, (count, len(tensors)), as torch."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return T.stack([T.reshape(g, -1) for g in grids], 1)


def _triangle_indices(row, col, offset, upper):
    r, c = np.triu_indices(row, offset, col) if upper else np.tril_indices(row, offset, col)
    return T.tensor(np.stack([r, c]).astype(np.int64))


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """(2, count) int64 row and column indices of the lower triangle, as torch.tril_indices."""
    return _triangle_indices(row, col, offset, upper=False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """(2, count) int64 row and column indices of the upper triangle, as torch.triu_indices."""
    return _triangle_indices(row, col, offset, upper=True)


@_method()
def bincount(x, weights=None, minlength=0):
    """Counts (or weight sums) of each non-negative integer in 1-D x, as torch.bincount; reads
    x's largest value to size the result (a wait)."""
    if x.ndim != 1:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got {x.ndim}-d")
    n = builtins.max(int(T.amax(x).item()) + 1 if x.numel() else 0, minlength)
    if weights is None:
        return T.scatter_add_zeros((n,), 0, x, T.ones(x.shape, dtype=_dt.int64))
    return T.scatter_add_zeros((n,), 0, x, _float(weights) if weights.dtype != _dt.float64 else weights)


@_method()
def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of x in ascending order (with the inverse indices and the counts if
    asked), as torch.unique; with `dim`, the distinct slices along dim in lexicographic order
    (the inverse then indexes x's slices). Computed from x's values (a wait)."""
    a = x.numpy()
    if dim is not None:
        d = _dim(dim, x.ndim)
        values, inverse, counts = np.unique(a, axis=d, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
    else:
        values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(x.shape)
    out = [T.tensor(values, dtype=x.dtype)]
    if return_inverse:
        out.append(T.tensor(inverse.astype(np.int64)))
    if return_counts:
        out.append(T.tensor(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@_method()
def unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    """x with each run of equal consecutive values (slices along `dim`) kept once, as
    torch.unique_consecutive, with the inverse indices and the run lengths if asked; computed
    from x's values (a wait)."""
    a = x.numpy()
    if dim is None:
        flat = a.reshape(-1)
        starts = np.ones(flat.shape[0], dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        values, shape = flat[starts], x.shape
    else:
        d = _dim(dim, x.ndim)
        moved = np.moveaxis(a, d, 0).reshape(a.shape[d], -1)
        starts = np.ones(moved.shape[0], dtype=bool)
        starts[1:] = (moved[1:] != moved[:-1]).any(axis=1)
        values, shape = np.take(a, np.flatnonzero(starts), axis=d), (a.shape[d],)
    out = [T.tensor(values, dtype=x.dtype)]
    if return_inverse:
        out.append(T.tensor((np.cumsum(starts) - 1).reshape(shape).astype(np.int64)))
    if return_counts:
        out.append(T.tensor(np.diff(np.append(np.flatnonzero(starts), starts.shape[0])).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@_method()
def as_strided(x, size, stride, storage_offset=0):
    """The tensor of shape `size` whose element at index i is x's element at flat position
    storage_offset + sum(i_k * stride_k), as torch.as_strided, reading x's elements in
    row-major (contiguous) order. A copy taken by one gather (it carries x's gradient); writing
    to it does not write x (PyTorch's shares x's memory)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    flat = np.full(size, storage_offset, dtype=np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        flat = flat + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    if flat.size and (flat.min() < 0 or flat.max() >= x.numel()):
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {storage_offset} "
                           f"reach past the {x.numel()} elements of the input")
    return T.reshape(T.index_select(T.reshape(x, (-1,)), 0, T.tensor(flat.reshape(-1))), size)


# ---------------------------------------------------------------- random

@_method()
def bernoulli(input, p=None, *, generator=None):
    """1 with probability input (or p) per element, else 0, in input's dtype."""
    probs = input if p is None else T.full(input.shape, p, dtype=input.dtype)
    seed = generator._next_seed() if generator is not None else _next_seed()
    u = _op("rand", shape=tuple(input.shape), seed=seed, dtype=_float(probs).dtype)
    return T.cast(u < probs, input.dtype)


@_takes_device
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False):
    """Samples of N(mean, std^2): mean and std tensors or numbers (broadcast), or a `size`;
    requires_grad=True makes them a leaf that requires grad (d2l's `w = normal(0, 0.01, (2, 1),
    requires_grad=True)`)."""
    if requires_grad:
        with _ag.no_grad():
            sample = normal(mean, std, size, generator=generator, dtype=dtype)
        return sample.requires_grad_(True)
    if size is None:
        shape = np.broadcast_shapes(*[tuple(v.shape) for v in (mean, std) if isinstance(v, Tensor)])
    else:
        shape = tuple(size)
    like = next((v for v in (mean, std) if isinstance(v, Tensor)), None)
    d = dtype or (like.dtype if like is not None else _dt.default_float())
    seed = generator._next_seed() if generator is not None else _next_seed()
    return _op("randn", shape=shape, seed=seed, dtype=_dt.resolve(d)) * std + mean


@_takes_device
def randint_like(input, low=0, high=None, *, dtype=None, generator=None, requires_grad=False):
    """Integers uniform in [low, high) of input's shape and dtype (randint_like(x, high) as torch)."""
    if high is None:
        low, high = 0, low
    return T.randint(low, high, input.shape, dtype=dtype or input.dtype, generator=generator, requires_grad=requires_grad)


# ---------------------------------------------------------------- Tensor methods

def _method_only(name):
    def register(fn):
        setattr(Tensor, name, fn)
        return fn
    return register


@_method_only("new_tensor")
def _new_tensor(x, data, dtype=None, device=None, requires_grad=False):
    return T.tensor(data.numpy() if isinstance(data, Tensor) else data, dtype=dtype or x.dtype,
                    device=device or x.device, requires_grad=requires_grad)


@_method_only("new_empty")
def _new_empty(x, *size, dtype=None, device=None, requires_grad=False):
    return T.zeros(*size, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


@_method_only("view_as")
def _view_as(x, other):
    return T.reshape(x, *other.shape)


@_method_only("reshape_as")
def _reshape_as(x, other):
    return T.reshape(x, *other.shape)


@_method_only("element_size")
def _element_size(x):
    return x.dtype.itemsize


@_method_only("nelement")
def _nelement(x):
    return x.numel()


@_method_only("is_contiguous")
def _is_contiguous(x, memory_format=None):
    """True: a GT tensor's values are always laid out row-major (views are copies)."""
    return True


@_method_only("stride")
def _stride(x, dim=None):
    """The row-major strides in elements (GT tensors are always contiguous)."""
    strides = [math.prod(x.shape[i + 1:]) for i in range(x.ndim)]
    return tuple(strides) if dim is None else strides[_dim(dim, x.ndim)]


@_method_only("storage_offset")
def _storage_offset(x):
    return 0


@_method_only("t")
def _t(x):
    """The transpose of a tensor of at most 2 dims, as torch.Tensor.t."""
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return T.transpose(x, 0, 1) if x.ndim == 2 else x


@_method_only("type")
def _type(x, dtype=None, non_blocking=False):
    """Without dtype: the type's name ('torch.FloatTensor' style, as PyTorch); with one: a cast."""
    names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "bfloat16": "BFloat16Tensor",
             "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor", "int16": "ShortTensor",
             "int8": "CharTensor", "uint8": "ByteTensor"}
    if dtype is None:
        return "torch." + names[x.dtype.name]
    if isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), _dt.dtype):  # gt.FloatTensor, ...
        dtype = dtype.dtype
    elif isinstance(dtype, str) and dtype.startswith("torch.") and dtype.endswith("Tensor"):
        dtype = {v: k for k, v in names.items()}[dtype[len("torch."):]]
    return T.cast(x, _dt.resolve(dtype))


Tensor.mH = property(lambda x: T.transpose(x, -2, -1))  # real tensors: the conjugate is the tensor
Tensor.nbytes = property(lambda x: x.numel() * x.dtype.itemsize)
Tensor.itemsize = property(lambda x: x.dtype.itemsize)


def _add_inplace_forms(pairs):
    """x.name_(...) for each (name_, fn): computes fn(x, ...) and rebinds x to it (see
    Tensor._assign); names Tensor already has are kept."""
    for name, fn in pairs:
        if hasattr(Tensor, name):
            continue

        def inplace(x, *args, _fn=fn, **kwargs):
            x._assign(_fn(x, *args, **kwargs))
            return x
        inplace.__name__ = name
        inplace.__doc__ = f"In place: x = {name[:-1]}(x, ...) (x is rebound to the result, as GT's in-place ops)."
        setattr(Tensor, name, inplace)


def _install_inplace():
    """x.f_() for these unary functions: computes f(x) and rebinds x to it (see Tensor._assign)."""
    from ._shaping import round as round_
    _add_inplace_forms((("abs_", T.abs), ("exp_", T.exp), ("sqrt_", T.sqrt), ("neg_", T.neg), ("sigmoid_", T.sigmoid),
                        ("tanh_", T.tanh), ("relu_", T.relu), ("log_", T.log), ("floor_", T.floor),
                        ("reciprocal_", reciprocal), ("square_", square), ("trunc_", trunc), ("ceil_", ceil),
                        ("round_", round_), ("clamp_min_", T.clamp_min), ("clamp_max_", T.clamp_max),
                        ("pow_", T.pow), ("cumsum_", T.cumsum), ("nan_to_num_", nan_to_num),
                        ("addcmul_", addcmul), ("addcdiv_", addcdiv), ("fmod_", fmod), ("remainder_", T.remainder)))

    def bernoulli_(x, p=0.5, *, generator=None):
        """Fills x with 1 (probability p, a number or a tensor) or 0, in x's dtype."""
        probs = p if isinstance(p, Tensor) else T.full(x.shape, p, dtype=_float(x).dtype)
        x._assign(T.cast(bernoulli(probs, generator=generator), x.dtype))
        return x
    Tensor.bernoulli_ = bernoulli_

    def detach_(x):
        """Makes x a leaf that records no history (as torch.Tensor.detach_); results already
        computed from x keep their gradient path through it."""
        x._keep_prior()
        x._node = None
        x.requires_grad = False
        return x
    Tensor.detach_ = detach_


_install_inplace()


# ---------------------------------------------------------------- methods scripts call on tensors
# torch.Tensor has a method for most torch functions; these were missing (x.add(y), x.eq(y),
# x.mm(w), x.index_add_(0, i, src), ...), each the function of the same name.

def _install_function_methods():
    for name in ("add", "sub", "mul", "div", "true_divide", "floor_divide", "eq", "ne", "lt", "le", "gt", "ge",
                 "neg", "matmul", "mm", "bmm", "maximum", "minimum", "logical_and", "logical_or", "logical_xor",
                 "allclose", "equal"):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, getattr(T, name))
    Tensor.absolute = T.abs
    Tensor.ndimension = Tensor.dim
    Tensor.multiply, Tensor.subtract, Tensor.divide = T.mul, T.sub, T.div
    Tensor.greater, Tensor.less, Tensor.greater_equal, Tensor.less_equal = T.gt, T.lt, T.ge, T.le
    Tensor.not_equal = T.ne
    Tensor.H = property(lambda x: T.transpose(x, 0, 1) if x.ndim == 2 else x)


_install_function_methods()
for _name in ("multiply", "subtract", "divide", "greater", "less", "greater_equal", "less_equal", "not_equal",
              "absolute"):
    globals()[_name] = getattr(Tensor, _name)


@_method()
def dot(a, b):
    """The dot product of 1-D a (n,) and b (n,) of one dtype: a 0-d tensor. RuntimeError for
    other ranks or two dtypes, as PyTorch's."""
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype != b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_dt.torch_name(a.dtype)} "
                           f"and {_dt.torch_name(b.dtype)}")
    return T.sum(a * b)


@_method()
def vdot(a, b):
    """The dot product of 1-D a and b with a conjugated (sum(conj(a) b)): for real tensors dot,
    for complex ones the Hermitian inner product, as torch.vdot (vdot(z, z) is sum |z|^2)."""
    return dot(a.conj() if a.dtype.is_complex else a, b)


@_method()
def inner(a, b):
    """sum(a * b) over the last axis of each, as torch.inner: a (*A, n) and b (*B, n) give
    (*A, *B); a 0-d operand multiplies the other. No conjugation, as PyTorch's. RuntimeError when
    the last sizes differ."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    if a.ndim == 1 and b.ndim == 1:
        return T.sum(a * b)
    from ._compat import tensordot
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))


@_method()
def mv(mat, vec):
    """Matrix (n, m) times vector (m,): (n,)."""
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got {mat.ndim}-D and {vec.ndim}-D")
    return T.matmul(mat, vec)


@_method()
def index_add(x, dim, index, source, *, alpha=1):
    """x plus the slices of `source` added at `index` (1-D, int) along dim; repeated indices
    accumulate (torch.index_add). source has x's shape except index.numel() along dim."""
    d = _dim(dim, x.ndim)
    added = _op("index_add", index, T.cast(source, x.dtype), shape=x.shape, axis=d)
    return x + (added * alpha if alpha != 1 else added)


@_method()
def scatter_add(x, dim, index, src):
    """x plus src[i][j] added at [index[i][j]][j] (dim 0; likewise for other dims), as
    torch.scatter_add; repeated indices accumulate. index has src's shape."""
    index, src = _scalar_index(x, index, src)
    return x + T.scatter_add_zeros(x.shape, _dim(dim, x.ndim), index, T.cast(src, x.dtype))


@_method()
def index_fill(x, dim, index, value):
    """x with the slices at `index` (1-D or 0-d) along dim set to `value` (a number or 0-d tensor)."""
    d = _dim(dim, x.ndim)
    idx = index if isinstance(index, Tensor) else T.tensor(np.asarray(index, dtype=np.int64).reshape(-1))
    if idx.ndim == 0:
        idx = T.reshape(idx, (1,))
    shape, ones = [1] * x.ndim, [1] * x.ndim
    shape[d], ones[d] = x.shape[d], idx.shape[0]
    hit = _op("index_add", idx, T.ones(tuple(ones), dtype=_dt.float32), shape=tuple(shape), axis=d) > 0
    v = value if isinstance(value, Tensor) else T.full((), value, dtype=x.dtype)
    return T.where(hit, T.cast(v, x.dtype), x)


def _fill_diagonal(x, fill_value, wrap=False):
    """x with its main diagonal set to fill_value, as torch.Tensor.fill_diagonal_: the elements
    (i, i, ..., i) of a tensor whose sizes are all equal (a matrix may be tall: with wrap=True
    the diagonal starts again every columns + 1 rows, as NumPy's fill_diagonal)."""
    if x.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(x.shape, dtype=bool)
    if x.ndim == 2:
        rows, cols = x.shape
        flat = np.arange(0, rows * cols, cols + 1)
        if not wrap:
            flat = flat[:min(rows, cols)]
        mask.reshape(-1)[flat] = True
    else:
        mask[(np.arange(x.shape[0]),) * x.ndim] = True
    return T.where(T.tensor(mask), T.full((), fill_value, dtype=x.dtype), x)


@_method()
def index_copy(x, dim, index, source):
    """x with the slices at `index` (1-D) along dim replaced by those of source (an index listed
    twice: the last slice listed for it, as PyTorch's CPU kernel leaves it)."""
    d = _dim(dim, x.ndim)
    out = put_rows(x.movedim(d, 0), T.reshape(index, (-1,)), T.cast(source, x.dtype).movedim(d, 0))
    return out.movedim(0, d)


@_method()
def select(x, dim, index):
    """The slice at `index` along dim, that dim removed (x[..., index, ...])."""
    d = _dim(dim, x.ndim)
    i = index + x.shape[d] if index < 0 else index
    if not 0 <= i < x.shape[d]:
        raise IndexError(f"select(): index {index} out of range for tensor of size {x.shape[d]} at dimension {dim}")
    return T._link_view(T.squeeze(T._narrow(x, d, i, 1), d), x, (slice(None),) * d + (i,))  # a view of x


@_method_only("unfold")
def _unfold(x, dimension, size, step):
    """Every window of `size` elements along `dimension`, `step` apart: that dim becomes the
    number of windows and a last dim of `size` is added (torch.Tensor.unfold)."""
    d = _dim(dimension, x.ndim)
    n = (x.shape[d] - size) // step + 1
    if size > x.shape[d] or n < 1:
        raise RuntimeError(f"unfold: size {size} is larger than the dimension's {x.shape[d]}")
    windows = [T.narrow(x, d, i * step, size) for i in range(n)]
    stacked = T.stack(windows, d)  # (..., n, size, ...): the window's axis d + 1 goes last
    order = [i for i in range(stacked.ndim) if i != d + 1] + [d + 1]
    return T.permute(stacked, *order)


@_method()
def cumprod(x, dim, *, dtype=None):
    """Running products along dim (torch.cumprod), by Hillis-Steele doubling: log2(n) steps of
    y = y * (y shifted by 2^k, ones shifted in), so gradients come from the products
    themselves, zeros included. float32 (and float16/bfloat16) is computed in float64 and
    rounded once, as PyTorch's CPU kernel accumulates in double (in float32 the doubling's
    error reached 1e-6 relative over 1000 elements, DDPM's alphas_cumprod; PyTorch's 6e-8)."""
    y = T.cast(x, _dt.resolve(dtype)) if dtype is not None else x
    if y.dtype == _dt.bool:
        y = T.cast(y, _dt.int64)
    if y.dtype in (_dt.float32, _dt.float16, _dt.bfloat16):
        return T.cast(cumprod(T.cast(y, _dt.float64), dim), y.dtype)
    d = _dim(dim, y.ndim) if y.ndim else 0
    if y.ndim == 0:
        return y
    n, shift = y.shape[d], 1
    while shift < n:
        ones_shape = list(y.shape)
        ones_shape[d] = shift
        shifted = T.cat([T.ones(tuple(ones_shape), dtype=y.dtype), T.narrow(y, d, 0, n - shift)], d)
        y = y * shifted
        shift *= 2
    return y


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2010), single precision:
# erfinv(x) = x p(w), w = -log((1 - x)(1 + x)), p a polynomial in w - 2.5 (w < 5) or in
# sqrt(w) - 3.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients, w):
    p = coefficients[0]
    for c in coefficients[1:]:
        p = p * w + c
    return p


def polygamma(n, input):
    """The n-th derivative of digamma (torch.polygamma): n = 0 is digamma and n = 1 trigamma
    (GT's ops); n >= 2 is (-1)^(n+1) n! zeta(n + 1, x) (Abramowitz & Stegun 6.4.10), the
    Hurwitz zeta function summed directly over 24 shifts and finished by its Euler-Maclaurin
    series (see _hurwitz_zeta), in float64: accurate for x > -14; NaN below, inf at the poles
    (0, -1, -2, ...). Differentiable for every n (the gradient of polygamma(n) is polygamma(n + 1)).
    ValueError for a negative or non-integer n."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"polygamma(n, input): n must be a non-negative int, got {n!r}")
    if n == 0:
        return T.digamma(input)
    x = _float(input)
    if x.requires_grad and _grad_enabled():
        return _polygamma_function().apply(x, n)
    return _polygamma_values(n, x)


def _polygamma_values(n, x):
    if n == 1:
        return _ops_mod().trigamma(x)
    y = _hurwitz_zeta(n + 1, T.cast(x, _dt.float64)) * ((-1.0) ** (n + 1) * math.factorial(n))
    return T.cast(y, x.dtype)


# Bernoulli numbers B_2, B_4, ..., B_18 (Abramowitz & Stegun, Table 23.2).
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798)
_ZETA_SHIFTS = 24


def _power(t, s):
    """t ** s for a Python int s >= 1 by repeated squaring (a negative t keeps its sign rule)."""
    result, base = None, t
    while s:
        if s & 1:
            result = base if result is None else result * base
        s >>= 1
        if s:
            base = base * base
    return result


def _hurwitz_zeta(s, q):
    """zeta(s, q) = sum over k >= 0 of (q + k)^-s for float64 q and s > 1 (a Python int or a
    tensor): the first 24 terms summed, then the Euler-Maclaurin formula at a = q + 24
    (DLMF 25.11.5 / Abramowitz & Stegun 23.1.30): a^(1-s) / (s-1) + a^-s / 2 +
    sum_j B_2j / (2j)! s (s+1) ... (s+2j-2) a^(-s-2j+1), j <= 9 (error below 1e-16 relative
    for a >= 10). With an int s the powers are products, so a negative q works; with a tensor
    s they are exp(-s log(q + k)), which needs q > 0."""
    integer = isinstance(s, int)

    def inverse_power(t):
        return 1.0 / _power(t, s) if integer else T.exp(-s * T.log(t))
    total = None
    for k in range(_ZETA_SHIFTS):
        term = inverse_power(q + float(k))
        total = term if total is None else total + term
    a = q + float(_ZETA_SHIFTS)
    a_s = inverse_power(a)  # a^-s
    tail = a_s * a / (s - 1.0) + 0.5 * a_s
    rising, power = s, a_s / a  # s (s+1)...(s+2j-2) and a^(-s-2j+1)
    for j, b in enumerate(_BERNOULLI, 1):
        tail = tail + (b / math.factorial(2 * j)) * rising * power
        rising = rising * (s + 2.0 * j - 1) * (s + 2.0 * j)
        power = power / (a * a)
    return total + tail


def zeta(input, other):
    """The Hurwitz zeta function zeta(x, q) = sum over k >= 0 of (q + k)^-x, elementwise with
    broadcasting (torch.special.zeta; x = 2 and q = 1 is Riemann's zeta(2) = pi^2 / 6), in
    float64 (see _hurwitz_zeta). inf for x = 1, NaN for x < 1; for q <= 0: inf at integers, NaN
    elsewhere (PyTorch's Cephes kernel also sums negative q for integer x; polygamma does).
    Not differentiable (as PyTorch's)."""
    from .autograd import no_grad
    like = next((v for v in (input, other) if isinstance(v, Tensor) and v.dtype.is_floating_point), None)
    x, q = (v if isinstance(v, Tensor) else T.tensor(float(v), dtype=like.dtype if like is not None else None)
            for v in (input, other))
    floats = [v.dtype for v in (x, q) if v.dtype.is_floating_point]
    out_dtype = (_dt.float64 if _dt.float64 in floats else floats[0]) if floats else _dt.default_float()
    with no_grad():
        x64, q64 = T.cast(x, _dt.float64), T.cast(q, _dt.float64)
        x64, q64 = T.broadcast_tensors(x64, q64)
        safe_q = T.where(q64 > 0, q64, 1.0)
        safe_x = T.where(x64 > 1, x64, 2.0)
        z = _hurwitz_zeta(safe_x, safe_q)
        z = T.where(x64 == 1, math.inf, T.where(x64 < 1, math.nan, z))
        z = T.where(q64 > 0, z, T.where(q64 == T.floor(q64), math.inf, math.nan))
    return T.cast(z, out_dtype)


Tensor.polygamma = lambda self, n: polygamma(n, self)


# ---------------------------------------------------------------- modified Bessel functions

_BESSEL_SERIES_MAX = 20.0  # |x| at or below: the power series; above: the asymptotic expansion


def _bessel_power_series(order, x, alternating, terms, weighted=False):
    """(S, W) for float64 x and order n of 0 or 1: S = sum over k < terms of s^k (x/2)^(2k+n) /
    (k! (k+n)!), s = -1 when alternating (J_n, A&S 9.1.10) else 1 (I_n, A&S 9.6.10); with
    `weighted`, W = the same terms times H_k (n = 0) or psi(k+1) + psi(k+2) (n = 1), with
    psi(k+1) = H_k - gamma: the sums in Y_n (A&S 9.1.11, 9.1.13) and K_n (A&S 9.6.11, 9.6.13),
    else None."""
    y = (-0.25 if alternating else 0.25) * x * x
    term = x * 0.5 if order else T.ones_like(x)
    series = term
    weights = term * (1.0 - 2.0 * _EULER_GAMMA) if weighted and order else None
    harmonic = 0.0
    for k in range(1, terms):
        term = term * y * (1.0 / (k * (k + order)))
        series = series + term
        if weighted:
            harmonic += 1.0 / k
            weight = 2.0 * harmonic - 2.0 * _EULER_GAMMA + 1.0 / (k + 1) if order else harmonic
            weights = term * weight if weights is None else weights + term * weight
    return series, weights


def _bessel_i(order, x, scaled):
    """I_order(|x|) (order 0 or 1), times exp(-|x|) when scaled, in float64: for |x| <= 20 the
    power series sum_k (x/2)^(2k+order) / (k! (k+order)!) (Abramowitz & Stegun 9.6.10), 60
    terms; above, the asymptotic expansion e^x / sqrt(2 pi x) sum_k (-1)^k a_k(mu) / (8x)^k with
    mu = 4 order^2, a_k = (mu - 1)(mu - 9)...(mu - (2k-1)^2) / k! (A&S 9.7.1), 24 terms. Each
    branch sees its inputs clamped to its range, so neither overflows into the other's
    gradient."""
    ax = T.abs(x)
    small = T.clamp(ax, max=_BESSEL_SERIES_MAX)
    series, _ = _bessel_power_series(order, small, alternating=False, terms=60)
    if scaled:
        series = series * T.exp(-small)
    large = T.clamp(ax, min=_BESSEL_SERIES_MAX)
    mu = 4.0 * order * order
    coefficient, total, inv8x = 1.0, T.ones_like(large), 1.0 / (8.0 * large)
    power = T.ones_like(large)
    for k in range(1, 24):
        coefficient *= -(mu - (2 * k - 1) ** 2) / k
        power = power * inv8x
        total = total + coefficient * power
    asymptotic = total / T.sqrt(2.0 * math.pi * large)
    if not scaled:
        asymptotic = asymptotic * T.exp(large)
    out = T.where(ax <= _BESSEL_SERIES_MAX, series, asymptotic)
    return out * T.sign(x) if order else out


def _bessel(order, scaled, name):
    def fn(input):
        x = _float(input)
        return T.cast(_bessel_i(order, T.cast(x, _dt.float64), scaled), x.dtype)
    fn.__name__ = name
    fn.__doc__ = (f"The modified Bessel function of the first kind of order {order}"
                  f"{', times exp(-|x|)' if scaled else ''}, elementwise (torch.special.{name}; see _bessel_i). "
                  "Differentiable through its series.")
    return fn


i0, i0e, i1, i1e = (_bessel(o, s, n) for o, s, n in ((0, False, "i0"), (0, True, "i0e"), (1, False, "i1"),
                                                     (1, True, "i1e")))
Tensor.i0 = i0


# ------------------------------------------------- Bessel functions J, Y and K (orders 0 and 1)

_EULER_GAMMA = 0.5772156649015329
_BESSEL_JY_SERIES_MAX = 12.0  # x at or below: power series (cancellation ~1e-12); above: Hankel's expansion


def _bessel_jy_series(order, x):
    """(J_order(x), Y_order(x)) for float64 0 < x <= 12 by their power series, 50 terms (see
    _bessel_power_series): Y_0 = (2/pi)(ln(x/2) + gamma) J_0 - (2/pi) W (A&S 9.1.13), Y_1 =
    -2/(pi x) + (2/pi) ln(x/2) J_1 - W / pi (A&S 9.1.11)."""
    j, w = _bessel_power_series(order, x, alternating=True, terms=50, weighted=True)
    log_half = T.log(0.5 * x)
    if order:
        return j, -2.0 / (math.pi * x) + (2.0 / math.pi) * log_half * j - w / math.pi
    return j, (2.0 / math.pi) * (log_half + _EULER_GAMMA) * j - (2.0 / math.pi) * w


def _bessel_jy_asymptotic(order, x):
    """(J_order(x), Y_order(x)) for float64 x >= 12 by Hankel's expansion (A&S 9.2.5-9.2.10):
    sqrt(2 / (pi x)) (P cos chi - Q sin chi) and (P sin chi + Q cos chi), chi = x - (n/2 + 1/4) pi,
    P = c_0 - c_2 + c_4 - ..., Q = c_1 - c_3 + ..., c_m = (mu - 1)(mu - 9)...(mu - (2m-1)^2) /
    (m! (8x)^m), mu = 4 n^2; 24 terms (the smallest term at x = 12 is near 1e-11)."""
    mu = 4.0 * order * order
    inv8x = 1.0 / (8.0 * x)
    c = T.ones_like(x)
    p, q = c, None
    for m in range(1, 24):
        c = c * inv8x * ((mu - (2 * m - 1) ** 2) / m)
        sign = 1.0 if (m // 2) % 2 == 0 else -1.0
        if m % 2:
            q = c * sign if q is None else q + c * sign
        else:
            p = p + c * sign
    chi = x - (0.5 * order + 0.25) * math.pi
    scale = T.sqrt(2.0 / (math.pi * x))
    cos, sin = T.cos(chi), T.sin(chi)
    return scale * (p * cos - q * sin), scale * (p * sin + q * cos)


def _bessel_jy(order, x):
    """(J_order(|x|), Y_order(|x|)) in float64, each branch on its inputs clamped to its range."""
    ax = T.abs(x)
    small = T.clamp(ax, min=1e-300, max=_BESSEL_JY_SERIES_MAX)
    large = T.clamp(ax, min=_BESSEL_JY_SERIES_MAX)
    js, ys = _bessel_jy_series(order, small)
    ja, ya = _bessel_jy_asymptotic(order, large)
    near = ax <= _BESSEL_JY_SERIES_MAX
    return T.where(near, js, ja), T.where(near, ys, ya)


_BESSEL_K_SERIES_MAX, _BESSEL_K_ASYMPTOTIC_MIN = 2.0, 25.0


def _bessel_k(order, x, scaled):
    """K_order(x) for float64 x > 0 (times exp(x) when scaled). x <= 2: the series
    K_0 = -(ln(x/2) + gamma) I_0 + sum_k>=1 H_k (x^2/4)^k / k!^2 (A&S 9.6.13), K_1 = 1/x +
    ln(x/2) I_1 - (x/4) sum_k (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!) (A&S 9.6.11), 30
    terms. 2 < x <= 25: e^x K_n(x) = integral over t > 0 of exp(-x (cosh t - 1)) cosh(n t) dt
    (A&S 9.6.24) by the trapezoidal rule, step 1/16 to t = 4 (exponentially convergent for
    this analytic, fast-decaying integrand: DLMF 3.5.ii). x > 25: the asymptotic expansion
    e^x K_n(x) = sqrt(pi / 2x) sum_k (mu - 1)(mu - 9)...(mu - (2k-1)^2) / (k! (8x)^k), mu = 4 n^2
    (A&S 9.7.2), 30 terms. Each branch on its inputs clamped to its range."""
    small = T.clamp(x, min=1e-300, max=_BESSEL_K_SERIES_MAX)
    i_series, k_sum = _bessel_power_series(order, small, alternating=False, terms=30, weighted=True)
    log_half = T.log(0.5 * small)
    if order:
        series = 1.0 / small + log_half * i_series - 0.5 * k_sum
    else:
        series = -(log_half + _EULER_GAMMA) * i_series + k_sum
    series = series * T.exp(small)  # scaled, as the other branches
    middle = T.clamp(x, min=_BESSEL_K_SERIES_MAX, max=_BESSEL_K_ASYMPTOTIC_MIN)
    h = 1.0 / 16
    integral = 0.5 * T.ones_like(middle)  # the t = 0 node, halved
    for j in range(1, 65):
        t = j * h
        integral = integral + T.exp(middle * (1.0 - math.cosh(t))) * math.cosh(order * t)
    integral = integral * h
    large = T.clamp(x, min=_BESSEL_K_ASYMPTOTIC_MIN)
    mu = 4.0 * order * order
    inv8x = 1.0 / (8.0 * large)
    c = T.ones_like(large)
    total = c
    for k in range(1, 30):
        c = c * inv8x * ((mu - (2 * k - 1) ** 2) / k)
        total = total + c
    asymptotic = total * T.sqrt(math.pi / (2.0 * large))
    out = T.where(x <= _BESSEL_K_SERIES_MAX, series,
                  T.where(x <= _BESSEL_K_ASYMPTOTIC_MIN, integral, asymptotic))
    return out if scaled else out * T.exp(-x)


def _bessel_function(name, order, kind, doc):
    def fn(input):
        x = _float(input)
        x64 = T.cast(x, _dt.float64)
        if kind in ("j", "y"):
            j, bessel_y = _bessel_jy(order, x64)
            if kind == "j":
                out = j * T.sign(x64) if order else j  # J_0 even, J_1 odd
            else:  # -inf at 0, NaN below
                out = T.where(x64 > 0, bessel_y, T.where(x64 == 0, -math.inf, math.nan))
        else:
            k = _bessel_k(order, T.clamp(x64, min=1e-300), kind == "k_scaled")
            out = T.where(x64 > 0, k, T.where(x64 == 0, math.inf, math.nan))
        out = T.where(T.isnan(x64), math.nan, out)
        return T.cast(out, x.dtype)
    fn.__name__ = name
    fn.__doc__ = (doc + " Elementwise; computed in float64, returned in the input's floating dtype (float32 "
                  "for an integer input); differentiable through its series.")
    return fn


bessel_j0 = _bessel_function("bessel_j0", 0, "j", "The Bessel function of the first kind of order 0 (torch.special.bessel_j0): power series for |x| <= 12, Hankel's expansion above (see _bessel_jy).")
bessel_j1 = _bessel_function("bessel_j1", 1, "j", "The Bessel function of the first kind of order 1 (torch.special.bessel_j1), odd in x (see _bessel_jy).")
bessel_y0 = _bessel_function("bessel_y0", 0, "y", "The Bessel function of the second kind of order 0 (torch.special.bessel_y0): -inf at 0, NaN for x < 0 (see _bessel_jy).")
bessel_y1 = _bessel_function("bessel_y1", 1, "y", "The Bessel function of the second kind of order 1 (torch.special.bessel_y1): -inf at 0, NaN for x < 0 (see _bessel_jy).")
modified_bessel_k0 = _bessel_function("modified_bessel_k0", 0, "k", "The modified Bessel function of the second kind of order 0 (torch.special.modified_bessel_k0): inf at 0, NaN for x < 0 (see _bessel_k).")
modified_bessel_k1 = _bessel_function("modified_bessel_k1", 1, "k", "The modified Bessel function of the second kind of order 1 (torch.special.modified_bessel_k1): inf at 0, NaN for x < 0 (see _bessel_k).")
scaled_modified_bessel_k0 = _bessel_function("scaled_modified_bessel_k0", 0, "k_scaled", "exp(x) K_0(x) (torch.special.scaled_modified_bessel_k0; see _bessel_k).")
scaled_modified_bessel_k1 = _bessel_function("scaled_modified_bessel_k1", 1, "k_scaled", "exp(x) K_1(x) (torch.special.scaled_modified_bessel_k1; see _bessel_k).")


# ------------------------------------------------------- regularized incomplete gamma functions

def _igamma_terms(largest_a):
    """Series terms and continued-fraction steps for a up to `largest_a`: near x = a the terms
    shrink like exp(-n^2 / 2a), so 100 + 7 sqrt(a) (checked against mpmath at 30 digits for a
    from 0.01 to 1000, x from 1e-3 to 3a + 10: relative error below 1e-14 for a <= 10 and 6e-13 at
    a = 1000, where the prefix x^a e^-x / Gamma(a) loses digits, on the side computed directly),
    at most 2000."""
    return min(2000, 100 + int(7.0 * math.sqrt(max(largest_a, 0.0))))


def _igamma_values(a, x, terms):
    """P(a, x) and Q(a, x) = 1 - P, float64 tensors of one shape, a > 0, x > 0: for x < a + 1
    the series P = x^a e^-x / Gamma(a+1) sum_n x^n / ((a+1)...(a+n)) (Numerical Recipes 6.2.5);
    else Q by the continued fraction 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)) (NR 6.2.7)
    evaluated by the modified Lentz method; each branch on inputs clamped to its range, `terms`
    terms or steps (see _igamma_terms). The other of P and Q is 1 minus it, as in Cephes'
    igam/igamc (PyTorch's): exact to 1e-16 absolute, so a tiny complement loses its relative
    precision."""
    use_series = x < a + 1.0
    # the series, on x clamped below a + 1
    xs = T.where(use_series, x, a)
    term = 1.0 / a
    total = term
    for n in range(1, terms):
        term = term * xs / (a + float(n))
        total = total + term
    prefix_s = T.exp(a * T.log(xs) - xs - T.lgamma(a))
    p_series = total * prefix_s
    # the continued fraction (modified Lentz), on x clamped to at least a + 1
    xc = T.where(use_series, a + 1.0, x)
    tiny = 1e-300
    b = xc + 1.0 - a
    c = T.full_like(b, 1.0 / tiny)
    d = 1.0 / b
    h = d
    for i in range(1, terms):
        an = -float(i) * (float(i) - a)
        b = b + 2.0
        d = an * d + b
        d = T.where(T.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = T.where(T.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        h = h * d * c
    prefix_c = T.exp(a * T.log(xc) - xc - T.lgamma(a))
    q_fraction = prefix_c * h
    p = T.where(use_series, p_series, 1.0 - q_fraction)
    q = T.where(use_series, 1.0 - p_series, q_fraction)
    return p, q


def _igamma(a, x, upper):
    from .autograd import no_grad
    like = next((v for v in (a, x) if isinstance(v, Tensor) and v.dtype.is_floating_point), None)
    a, x = (v if isinstance(v, Tensor) else T.tensor(float(v), dtype=like.dtype if like is not None else None)
            for v in (a, x))
    floats = [v.dtype for v in (a, x) if v.dtype.is_floating_point]
    out_dtype = (_dt.float64 if _dt.float64 in floats else floats[0]) if floats else _dt.default_float()
    if a.requires_grad and _grad_enabled():
        raise NotImplementedError(f"{'gammaincc' if upper else 'gammainc'}: the derivative with respect to "
                                  "its first argument (a) is not implemented (as in PyTorch)")
    if x.requires_grad and _grad_enabled():
        return _igamma_function().apply(a, x, upper, out_dtype)
    with no_grad():
        return _igamma_result(a, x, upper, out_dtype)


def _igamma_result(a, x, upper, out_dtype):
    a64, x64 = T.broadcast_tensors(T.cast(a, _dt.float64), T.cast(x, _dt.float64))
    safe_a = T.where(a64 > 0, a64, 1.0)
    safe_x = T.where(x64 > 0, x64, 1.0)
    safe_a, safe_x = T.where(T.isinf(safe_a), 1.0, safe_a), T.where(T.isinf(safe_x), 1.0, safe_x)
    largest = float(safe_a.max().item()) if safe_a.numel() else 1.0  # (a wait)
    p, q = _igamma_values(safe_a, safe_x, _igamma_terms(largest))
    out = q if upper else p
    zero, one = (1.0, 0.0) if upper else (0.0, 1.0)  # P or Q at x = 0; at x = inf
    # PyTorch's edge cases (calc_igamma / calc_igammac): NaN for a < 0 or x < 0; a = 0: P = 1
    # for x > 0; x = 0: P = 0; a = inf: P = 0 (NaN with x = inf); x = inf: P = 1.
    out = T.where(x64 == 0, zero, out)
    out = T.where(T.isinf(x64), one, out)
    out = T.where(T.isinf(a64), T.where(T.isinf(x64), math.nan, zero), out)
    out = T.where(a64 == 0, T.where(x64 > 0, one, math.nan), out)
    out = T.where((a64 < 0) | (x64 < 0) | T.isnan(a64) | T.isnan(x64), math.nan, out)
    return T.cast(out, out_dtype)


@functools.lru_cache(maxsize=None)
def _igamma_function():
    from . import autograd

    class IncompleteGamma(autograd.Function):
        """P(a, x) or Q(a, x) of an x that requires grad: dP/dx = x^(a-1) e^-x / Gamma(a)
        (DLMF 8.8.13), dQ/dx its negative."""

        @staticmethod
        def forward(ctx, a, x, upper, out_dtype):
            ctx.save_for_backward(a, x)
            ctx.upper = upper
            return _igamma_result(a, x, upper, out_dtype)

        @staticmethod
        def backward(ctx, g):
            a, x = ctx.saved_tensors
            density = T.exp((a - 1.0) * T.log(x) - x - T.lgamma(a))
            grad = g * (-density if ctx.upper else density)
            if grad.shape != x.shape:  # broadcast: sum back to x's shape
                extra = grad.ndim - x.ndim
                grad = grad.sum(tuple(range(extra))) if extra else grad
                axes = tuple(i for i, n in enumerate(x.shape) if n == 1 and grad.shape[i] != 1)
                if axes:
                    grad = grad.sum(axes, keepdims=True)
            return None, T.cast(grad, x.dtype), None, None
    return IncompleteGamma


def gammainc(input, other):
    """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a), a = input,
    x = other, elementwise with broadcasting (torch.special.gammainc, torch.igamma), computed in
    float64 (see _igamma_values: P for x < a + 1, Q = 1 - P above, each within 1e-12 relative
    where computed directly and 1e-16 absolute as the complement, for a up to 1000; the number
    of terms grows with the largest a, read on the client).
    NaN for a < 0 or x < 0. Differentiable in x; NotImplementedError for a gradient in a, as in
    PyTorch. A composite of GT ops: a few thousand per call."""
    return _igamma(input, other, upper=False)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (torch.special.gammaincc,
    torch.igammac); see gammainc."""
    return _igamma(input, other, upper=True)


Tensor.igamma = gammainc
Tensor.igammac = gammaincc


# ---------------------------------------------------------------- orthogonal polynomials

def _polynomial(name, first, recurrence, shift=False, doc=""):
    """An orthogonal polynomial p_n(x) of torch.special (input x, degree n: a number or a tensor,
    truncated to an integer), by its three-term recurrence from p_0 = 1 and p_1 = first(x):
    p_{k+1} = recurrence(k, x, p_k, p_{k-1}) (the recurrences of DLMF 18.9.1 and Table 18.9.1).
    Elementwise with broadcasting; a tensor n runs the recurrence to its largest value (read on
    the client: a wait) and picks each element's degree. 0 for n < 0, as PyTorch's."""
    def fn(input, n):
        x = input if isinstance(input, Tensor) else T.tensor(float(input))
        x = _float(x)
        if shift:  # the shifted polynomials: p*_n(x) = p_n(2x - 1)
            x = 2.0 * x - 1.0
        if isinstance(n, Tensor):
            degree = T.cast(n, _dt.int64) if n.dtype.is_floating_point else n
            top = int(degree.max().item()) if degree.numel() else 0
        else:
            degree, top = None, int(n)
        if top < 0:
            out = T.zeros_like(x)
        else:
            prev, cur = T.ones_like(x), first(x)
            values = [prev]
            for k in range(1, top + 1):
                values.append(cur)
                prev, cur = cur, recurrence(k, x, cur, prev)
            if degree is None:
                out = values[top]
            else:
                out = T.zeros_like(x)
                for k, v in enumerate(values):
                    out = T.where(degree == k, v, out)
        return out
    fn.__name__ = name
    fn.__doc__ = doc + " See _polynomial."
    return fn


chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w = (
    _polynomial(f"chebyshev_polynomial_{kind}", first, lambda k, x, p, q: 2.0 * x * p - q,
                doc=f"The Chebyshev polynomial of the {nth} kind, {kind.upper()}_n(x) (torch.special.chebyshev_polynomial_{kind}).")
    for kind, nth, first in (("t", "first", lambda x: x), ("u", "second", lambda x: 2.0 * x),
                             ("v", "third", lambda x: 2.0 * x - 1.0), ("w", "fourth", lambda x: 2.0 * x + 1.0)))
(shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
 shifted_chebyshev_polynomial_w) = (
    _polynomial(f"shifted_chebyshev_polynomial_{kind}", first, lambda k, x, p, q: 2.0 * x * p - q, shift=True,
                doc=f"The shifted Chebyshev polynomial {kind.upper()}*_n(x) = {kind.upper()}_n(2x - 1) "
                    f"(torch.special.shifted_chebyshev_polynomial_{kind}).")
    for kind, first in (("t", lambda x: x), ("u", lambda x: 2.0 * x), ("v", lambda x: 2.0 * x - 1.0),
                        ("w", lambda x: 2.0 * x + 1.0)))
hermite_polynomial_h = _polynomial("hermite_polynomial_h", lambda x: 2.0 * x,
                                   lambda k, x, p, q: 2.0 * x * p - (2.0 * k) * q,
                                   doc="The physicists' Hermite polynomial H_n(x) (torch.special.hermite_polynomial_h).")
hermite_polynomial_he = _polynomial("hermite_polynomial_he", lambda x: x, lambda k, x, p, q: x * p - float(k) * q,
                                    doc="The probabilists' Hermite polynomial He_n(x) (torch.special.hermite_polynomial_he).")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", lambda x: 1.0 - x,
                                    lambda k, x, p, q: ((2.0 * k + 1.0 - x) * p - float(k) * q) * (1.0 / (k + 1)),
                                    doc="The Laguerre polynomial L_n(x) (torch.special.laguerre_polynomial_l).")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", lambda x: x,
                                    lambda k, x, p, q: ((2.0 * k + 1.0) * x * p - float(k) * q) * (1.0 / (k + 1)),
                                    doc="The Legendre polynomial P_n(x) (torch.special.legendre_polynomial_p).")


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, requires_grad=False, **kwargs):
    """The Kaiser window (torch.kaiser_window): w[n] = I0(beta sqrt(1 - (2n/(N-1) - 1)^2)) / I0(beta)
    for n < N = window_length (periodic: the first N of a window of N + 1). ValueError for a
    negative length."""
    if window_length < 0:
        raise ValueError(f"kaiser_window requires non-negative window_length, got window_length={window_length}")
    d = _dt.resolve(dtype) if dtype is not None else _dt.default_float()
    if window_length <= 1:
        return T.ones(window_length, dtype=d, requires_grad=requires_grad)
    n = window_length + 1 if periodic else window_length
    ratio = np.arange(window_length, dtype=np.float64) * (2.0 / (n - 1)) - 1.0
    arg = T.tensor(beta * np.sqrt(np.clip(1.0 - ratio * ratio, 0.0, None)))
    w = _bessel_i(0, arg, False) / _bessel_i(0, T.tensor(float(beta), dtype=_dt.float64), False)
    out = T.cast(w, d)
    out.requires_grad = bool(requires_grad)
    return out


def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension p (torch.mvlgamma):
    p (p - 1) / 4 log(pi) + sum over i < p of lgamma(x - i / 2). ValueError unless every
    element is > (p - 1) / 2 (as PyTorch; one sync to check)."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ValueError(f"mvlgamma: p must be a positive int, got {p!r}")
    x = _float(input)
    if not bool((x > (p - 1) / 2.0).all().item()):
        raise ValueError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    out = T.lgamma(x)
    for i in range(1, p):
        out = out + T.lgamma(x - i / 2.0)
    return out + p * (p - 1) / 4.0 * math.log(math.pi)


def _ops_mod():
    from . import _ops
    return _ops


def _grad_enabled():
    from . import autograd
    return autograd.is_grad_enabled()


@functools.lru_cache(maxsize=None)
def _polygamma_function():
    from . import autograd  # (not at import: gt.autograd imports this module)

    class Polygamma(autograd.Function):
        """polygamma(n, x) of a tensor that requires grad; its gradient is polygamma(n + 1, x)."""

        @staticmethod
        def forward(ctx, x, n):
            ctx.save_for_backward(x)
            ctx.n = n
            return _polygamma_values(n, x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * polygamma(ctx.n + 1, x), None
    return Polygamma


Tensor.mvlgamma = mvlgamma


@_method()
def erfinv(x):
    """The inverse of erf on (-1, 1) (+-inf at +-1, NaN outside): Giles' approximation (2010),
    then, for float64, two Newton steps on erf(y) = x. Its gradient is sqrt(pi) / 2
    exp(erfinv(x)^2), from the result."""
    from . import autograd as _ag
    from . import _runtime
    x = _float(x)
    with _ag.no_grad():
        w = -T.log((1.0 - x) * (1.0 + x))
        central = _horner(_ERFINV_CENTRAL, w - 2.5)
        tail = _horner(_ERFINV_TAIL, T.sqrt(T.clamp(w, min=5.0)) - 3.0)
        y = T.where(w < 5.0, central, tail) * x
        if x.dtype == _dt.float64:
            for _ in range(2):  # Newton on erf(y) - x, erf'(y) = 2 / sqrt(pi) exp(-y^2)
                step = (T.erf(y) - x) / (1.1283791670955126 * T.exp(-y * y))
                y = T.where(T.isfinite(step), y - step, y)
        y = T.where(T.abs(x) == 1.0, x * math.inf, y)
    if _ag.is_grad_enabled() and x.requires_grad:
        y.requires_grad = True
        y._node = _ag.Node(lambda g, r, inputs, attrs: (g * 0.8862269254527580 * T.exp(r * r),), (x,), None,
                           _runtime.current_signal())
    return y


@_method()
def asinh(x):
    """The inverse hyperbolic sine: sign(x) log(|x| + sqrt(x^2 + 1)) (odd, so accurate for
    negative x too)."""
    x = _float(x)
    a = T.abs(x)
    return T.sign(x) * T.log(a + T.sqrt(a * a + 1.0))


@_method()
def acosh(x):
    """The inverse hyperbolic cosine: log(x + sqrt(x^2 - 1)), NaN below 1."""
    x = _float(x)
    return T.log(x + T.sqrt(x * x - 1.0))


@_method()
def atanh(x):
    """The inverse hyperbolic tangent: (log1p(x) - log1p(-x)) / 2, +-inf at +-1, NaN outside."""
    x = _float(x)
    return 0.5 * (T.log1p(x) - T.log1p(-x))


arcsinh, arccosh, arctanh = asinh, acosh, atanh


@_method()
def cross(a, b, dim=None):
    """The cross product of 3-vectors along dim (the first dim of size 3 when None)."""
    if dim is None:
        dim = next(i for i, s in enumerate(a.shape) if s == 3)
    d = _dim(dim, a.ndim)
    a0, a1, a2 = (select(a, d, i) for i in range(3))
    b0, b1, b2 = (select(b, d, i) for i in range(3))
    return T.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _install_more_inplace():
    _add_inplace_forms((("erfinv_", erfinv), ("index_add_", index_add), ("scatter_add_", scatter_add), ("index_fill_", index_fill),
                        ("index_copy_", index_copy), ("fill_diagonal_", _fill_diagonal), ("scatter_", scatter), ("scatter_reduce_", scatter_reduce), ("index_put_", index_put), ("cumprod_", cumprod), ("renorm_", renorm),
                        ("sgn_", sgn), ("masked_scatter_", masked_scatter),
                        ("mul_", T.mul), ("sub_", T.sub)))
    for name, fn in (("t_", _t), ("unsqueeze_", T.unsqueeze), ("squeeze_", T.squeeze), ("transpose_", T.transpose),
                     ("swapaxes_", T.transpose), ("swapdims_", T.transpose)):
        if hasattr(Tensor, name):
            continue

        def reshaping(x, *args, _fn=fn, **kwargs):
            return x._assign_reshaped(_fn(x._before(), *args, **kwargs))
        reshaping.__name__ = name
        reshaping.__doc__ = f"In place: x = {name[:-1]}(x, ...), its shape included (see Tensor._assign_reshaped)."
        setattr(Tensor, name, reshaping)


_install_more_inplace()


def _u(x):
    """Uniform [0, 1) samples of x's shape in float64 (53 random bits), for the fills below."""
    return T.rand(x.shape, dtype=_dt.float64)


def _fill_as(x, values):
    x._assign(T.cast(values, x.dtype))
    return x


def _random_(x, from_=0, to=None, *, generator=None, **kwargs):
    """Integers uniform in [from, to - 1] (as values of x's dtype); without `to`, up to 2^24
    (float32 and 16-bit floats), 2^53 (float64, int64) or 2^31 - 1 (int32), as torch's random_.
    (`from` is also accepted as a keyword.)"""
    from_ = kwargs.pop("from", from_)
    if to is None:  # random_(to) or random_()
        from_, to = (0, from_) if from_ else (0, {_dt.float64: 2 ** 53, _dt.int64: 2 ** 53,
                                                  _dt.int32: 2 ** 31 - 1}.get(x.dtype, 2 ** 24))
    return _fill_as(x, T.floor(_u(x) * float(to - from_)) + float(from_))


def _exponential_(x, lambd=1.0, *, generator=None):
    """Samples of Exp(lambd): -log(1 - u) / lambd."""
    return _fill_as(x, -T.log1p(-_u(x)) / lambd)


def _geometric_(x, p, *, generator=None):
    """Samples of the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    return _fill_as(x, ceil(T.log1p(-_u(x)) / math.log1p(-p)) if p < 1 else T.ones(x.shape, dtype=_dt.float64))


def _log_normal_(x, mean=1.0, std=2.0, *, generator=None):
    """exp of samples of N(mean, std^2)."""
    return _fill_as(x, T.exp(T.randn(x.shape, dtype=_dt.float64) * std + mean))


def _cauchy_(x, median=0.0, sigma=1.0, *, generator=None):
    """Samples of the Cauchy distribution: median + sigma tan(pi (u - 1/2))."""
    return _fill_as(x, median + sigma * tan(math.pi * (_u(x) - 0.5)))


Tensor.random_, Tensor.exponential_, Tensor.geometric_ = _random_, _exponential_, _geometric_
Tensor.log_normal_, Tensor.cauchy_ = _log_normal_, _cauchy_


@_method()
def histc(input, bins=100, min=0, max=0):
    """Counts of input's elements in `bins` equal-width bins over [min, max] (the input's own
    minimum and maximum when min == max), elements outside ignored, the maximum in the last
    bin, as torch.histc; a float tensor of `bins` counts. Computed on the device (index_add)."""
    x = T.reshape(_float(input), -1)
    lo = T.amin(x) if min == max else T.full((), float(min), dtype=x.dtype)
    hi = T.amax(x) if min == max else T.full((), float(max), dtype=x.dtype)
    if min == max:  # all elements equal: PyTorch widens the range by 1 each side
        same = hi == lo
        lo, hi = T.where(same, lo - 1, lo), T.where(same, hi + 1, hi)
    inside = T.logical_and(x >= lo, x <= hi)
    idx = T.clamp(T.floor((x - lo) * (bins / (hi - lo))), 0, bins - 1)
    ones = T.cast(inside, x.dtype)
    return _op("index_add", T.cast(idx, _dt.int64), ones, shape=(bins,), axis=0)


class _Histogram(tuple):
    """(hist, bin_edges), as torch.return_types.histogram."""
    __slots__ = ()
    hist = property(lambda self: self[0])
    bin_edges = property(lambda self: self[1])

    def __repr__(self):
        return f"{_dt.package[0]}.return_types.histogram(\nhist={self[0]!r},\nbin_edges={self[1]!r})"


@_method()
def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of a float tensor's elements, as torch.histogram and NumPy's
    np.histogram: `bins` equal-width bins over `range` (min, max) or the input's own minimum
    and maximum (widened by 0.5 each side when they are equal), or the edges given as a 1-D
    tensor; elements outside ignored, the last bin closed on the right; `weight` (input's
    shape) adds weights instead of counts; `density` divides by the total and the bin widths.
    Both results have the input's dtype. Read on the client (a wait), as PyTorch computes
    histograms on the CPU only. RuntimeError for a non-float input."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, "
                           f"but got input {input.dtype}")
    a = input.numpy().astype(np.float64).reshape(-1)
    edges = bins.numpy().astype(np.float64) if isinstance(bins, Tensor) else int(bins)
    w = None if weight is None else weight.numpy().astype(np.float64).reshape(-1)
    if w is not None and w.size != a.size:
        raise RuntimeError(f"torch.histogram: weight should have the same shape as input, got {tuple(weight.shape)} "
                           f"and {tuple(input.shape)}")
    hist, edges = np.histogram(a, bins=edges, range=range, weights=w, density=density)
    d = _dt.numpy_dtype(input.dtype)
    return _Histogram((T.from_numpy(hist.astype(d)), T.from_numpy(edges.astype(d))))


@_method_only("data_ptr")
def _data_ptr(x):
    """A nonzero int naming x's values, where PyTorch gives their address: equal for tensors
    sharing them (a tied weight, x.detach(), p.data), different for other tensors; a view's is
    its base's plus its first element's offset in bytes, as PyTorch's (w[1] of a (4, 3) float32 w:
    12 more; w.view(-1): the same), so transformers finds the end of a tied weight by
    w.view(-1)[-1].data_ptr(). An in-place op rebinds x to new values (docs/api.md), so unlike
    PyTorch's it changes then."""
    view = getattr(x, "_view_of", None)
    if view is not None:
        from ._tensor import _Layout
        base = view.base()
        if base is not None and base.shape == view.base_shape:
            offset = 0 if type(view.key) is _Layout else _first_offset(view.key, base.shape)
            if offset is not None:
                return _data_ptr(base) + offset * x.element_size()
    return x._h.id << 8


def _first_offset(key, shape):
    """The row-major position in a tensor of `shape` of the first element basic-indexing `key`
    (ints, slices, None, Ellipsis) reads; None for another key."""
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) == 1:
        i = key.index(Ellipsis)
        used = sum(k is not None and k is not Ellipsis for k in key)
        key = key[:i] + (slice(None),) * (len(shape) - used) + key[i + 1:]
    axis, offset = 0, 0
    for k in key:
        if k is None:
            continue
        if axis >= len(shape):
            return None
        n = shape[axis]
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            start = int(k) % n if n else 0
        elif isinstance(k, slice):
            start = k.indices(n)[0] if n else 0
        else:
            return None
        offset += start * math.prod(shape[axis + 1:])
        axis += 1
    return offset


@_method_only("get_device")
def _get_device(x):
    """-1 (PyTorch's answer for a CPU tensor): a GT tensor lives on the dispatcher's workers."""
    return -1


Tensor.pin_memory = lambda x, device=None: x
Tensor.is_pinned = lambda x, device=None: False


@_method()
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` (a tensor) is among `test_elements` (a tensor, a
    number or a list), as torch.isin: bool of elements' shape (invert: is not). Compares every
    pair (elements.numel() x test_elements.numel())."""
    if not isinstance(elements, Tensor):
        elements = T.tensor(elements)
    tests = test_elements if isinstance(test_elements, Tensor) else T.tensor(test_elements)
    hit = T.any(T.unsqueeze(elements, -1) == T.reshape(tests, -1), -1) if tests.numel() else \
        T.zeros(elements.shape, dtype=_dt.bool)
    return T.logical_not(hit) if invert else hit


def is_floating_point(input):
    """Whether input's dtype is a floating-point one (torch.is_floating_point)."""
    return input.dtype.is_floating_point


def is_complex(input):
    """Whether input's dtype is complex (complex64 or complex128)."""
    return input.dtype.is_complex
