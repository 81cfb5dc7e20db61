"""Sorting and sampling, as torch's: sort, argsort, topk, kthvalue, median, msort (on the
gt.argsort op: a stable sort of each row along an axis, NaN as the largest value) and
multinomial (inverse-CDF sampling on cumsum).

Values come from gather(x, dim, indices), so they carry x's gradient (to the elements they
were taken from), as PyTorch's do.
"""
import builtins

from . import dtypes as _dt
from . import _functions as T
from ._tensor import Tensor, _op, _method, _dim, _next_seed


_ValuesIndices = T.return_type  # (values, indices), as torch.return_types.sort / topk / kthvalue / median


@_method()
def argsort(x, dim=-1, descending=False, stable=False):
    """int64 indices that sort `x` along `dim` (the gt.argsort op), as torch.argsort. The sort is
    always stable (equal elements keep their order; `stable` is accepted); NaN sorts as the
    largest value. Bool sorts as 0/1. Raises gt.AxisError for a dim out of range."""
    if x.ndim == 0:
        return T.zeros((), dtype=_dt.int64)
    src = T.cast(x, _dt.int64) if x.dtype == _dt.bool else x
    return _op("argsort", src, axis=_dim(dim, x.ndim), descending=builtins.bool(descending))


@_method()
def sort(x, dim=-1, descending=False, stable=False):
    """(values, indices) of `x` sorted along `dim`, as torch.sort (stable; NaN largest); values
    carry x's gradient."""
    if x.ndim == 0:
        return _ValuesIndices("sort")((x, T.zeros((), dtype=_dt.int64)))
    idx = argsort(x, dim, descending)
    return _ValuesIndices("sort")((T.gather(x, dim, idx), idx))


@_method()
def msort(x):
    """x sorted along its first axis (torch.msort)."""
    return sort(x, 0).values


@_method()
def topk(x, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (smallest with largest=False) elements along `dim`,
    in order, as torch.topk. Raises RuntimeError when k is outside [0, size of dim]."""
    d = _dim(dim, x.ndim)
    size = x.shape[d] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk: selected index k ({k}) out of range for a dimension of size {size}")
    if x.ndim == 0:
        return _ValuesIndices("topk")((x, T.zeros((), dtype=_dt.int64)))
    idx = T.narrow(argsort(x, d, descending=largest), d, 0, k)
    return _ValuesIndices("topk")((T.gather(x, d, idx), idx))


@_method()
def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element (k from 1) along `dim`, as torch.kthvalue.
    Raises RuntimeError when k is outside [1, size of dim]."""
    d = _dim(dim, x.ndim)
    size = x.shape[d] if x.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue: k ({k}) out of range for a dimension of size {size}")
    if x.ndim == 0:
        return _ValuesIndices("kthvalue")((x, T.zeros((), dtype=_dt.int64)))
    idx = T.narrow(argsort(x, d), d, k - 1, 1)
    values = T.gather(x, d, idx)
    if not keepdim:
        values, idx = T.squeeze(values, d), T.squeeze(idx, d)
    return _ValuesIndices("kthvalue")((values, idx))


@_method()
def median(x, dim=None, keepdim=False):
    """The lower median (the ((n - 1) // 2 + 1)-th smallest), as torch.median: of all elements
    with dim=None (a 0-d tensor), else (values, indices) along `dim`."""
    if dim is None:
        flat = T.reshape(x, -1)
        return kthvalue(flat, (flat.shape[0] - 1) // 2 + 1, 0).values
    n = x.shape[_dim(dim, x.ndim)] if x.ndim else 1
    return _ValuesIndices("median")(kthvalue(x, (n - 1) // 2 + 1, dim, keepdim))


@_method()
def multinomial(input, num_samples, replacement=False, *, generator=None):
    """int64 indices drawn from the categorical distributions in the rows of `input` ((n,) or
    (N, n) non-negative weights, need not sum to 1), as torch.multinomial: num_samples per row,
    with or without replacement. Each draw is inverse-CDF sampling: the number of cumulative
    weights <= u * total, u ~ U[0, 1) from `generator` (a gt.Generator) or gt.manual_seed's
    stream; without replacement, each drawn category's weight is zeroed before the next draw.
    Raises RuntimeError for another rank or num_samples > n without replacement."""
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}")
    n = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample {num_samples} samples")
    if not replacement and num_samples > n:
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    from .autograd import no_grad
    with no_grad():
        p = T.cast(input if input.ndim == 2 else T.unsqueeze(input, 0), _dt.float64)
        rows = p.shape[0]

        def draw(weights, count):  # (rows, count) indices, with replacement
            seed = generator._next_seed() if generator is not None else _next_seed()
            u = _op("rand", shape=(rows, count, 1), seed=seed, dtype=_dt.float64)
            cdf = T.unsqueeze(T.cumsum(weights, -1), 1)  # (rows, 1, n)
            total = T.narrow(cdf, 2, n - 1, 1)
            picked = T.sum(T.cast(cdf <= u * total, _dt.int64), -1)
            return T.clamp(picked, max=n - 1)

        if replacement or num_samples == 1:
            out = draw(p, num_samples)
        else:
            picks = []
            for _ in range(num_samples):
                i = draw(p, 1)
                picks.append(i)
                p = T.where(T.one_hot(T.squeeze(i, 1), n) > 0, 0.0, p)
            out = T.cat(picks, 1)
    return out if input.ndim == 2 else T.squeeze(out, 0)


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    from . import _composites
    """quantile / nanquantile: PyTorch's algorithm (aten/src/ATen/native/Sorting.cpp): the
    values sorted along dim (NaN last), rank q * (n - 1) (n the non-NaN count for nanquantile;
    a slice holding NaN gives NaN for quantile), rounded as `interpolation` says, the values at
    the ranks below and above gathered and lerped by the rank's fraction."""
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                         f"Got {interpolation}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    qt = T.full((), float(q), dtype=input.dtype) if scalar_q else q
    if not scalar_q and qt.dtype != input.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if qt.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if dim is None:
        x, d = T.reshape(input, (-1,)), 0
    else:
        x, d = input, _dim(dim, input.ndim) if input.ndim else 0
    x = T.reshape(x, (1,)) if x.ndim == 0 else x.movedim(d, -1)
    srt = sort(x, -1)[0]
    n = srt.shape[-1]
    qv = T.reshape(qt, (-1,))  # (Q,)
    nan = T.isnan(srt)
    if ignore_nan:
        count = T.sum(T.cast(~nan, input.dtype), -1, keepdim=True)
        ranks = T.clamp(qv * (count - 1), min=0.0)
    else:
        ranks = T.where(T.any(nan, -1, keepdim=True), float(n - 1), qv * float(n - 1))
        ranks = T.broadcast_to(ranks, srt.shape[:-1] + (qv.shape[0],))
    if interpolation == "lower":
        ranks = T.floor(ranks)
    elif interpolation == "higher":
        ranks = _composites.ceil(ranks)
    elif interpolation == "nearest":
        ranks = ranks.round()  # (half to even, as PyTorch's)
    below = T.cast(ranks, _dt.int64)
    out = T.gather(srt, -1, below)
    if interpolation in ("linear", "midpoint"):
        weights = T.full(ranks.shape, 0.5, dtype=input.dtype) if interpolation == "midpoint" else ranks - T.cast(below, input.dtype)
        above = T.gather(srt, -1, T.cast(_composites.ceil(ranks), _dt.int64))
        out = T.lerp(out, above, weights)
    # out: (..., Q) over the other axes; q's axis first, the reduced axis kept as 1 if keepdim
    if keepdim:
        if dim is None:
            out = T.reshape(out, (1,) * input.ndim + (qv.shape[0],))
        elif input.ndim:
            out = T.unsqueeze(out, -2).movedim(-2, d)
    out = out.movedim(-1, 0)
    return T.squeeze(out, 0) if scalar_q or qt.ndim == 0 else out


@_method()
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (q a number in [0, 1] or a 1-D tensor of them, input's dtype) of input
    along dim (all elements when None), as torch.quantile: with a tensor q the quantiles are the
    first axis of the result; a slice holding NaN gives NaN. interpolation: linear, lower,
    higher, midpoint or nearest. RuntimeError for an integer input or an empty one."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@_method()
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring NaN (a slice of NaN only gives NaN), as torch.nanquantile."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")
