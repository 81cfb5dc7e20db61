"""gt's functions (torch.* and their Tensor methods) that are written by hand: those with
PyTorch's argument conventions (dim=None, keepdim, *shape, negative axes, -1 sizes) or built
from other ops (softmax, var, clamp, gelu(approximate='tanh')). With gt._tensor's creation and
arithmetic and the functions generated from the op spec (gt._ops, re-exported here) they make
the namespace gt exports; gt.nn, gt.optim and gt._indexing use them from here.
"""
import builtins
import functools
import math

import numpy as np

from . import _C, _runtime
from . import dtypes as _dt
from . import autograd as _ag
from ._tensor import (  # noqa: F401 (re-exported: gt's namespace)
    Tensor, manual_seed, get_rng_state, set_rng_state, from_numpy, tensor, as_tensor, asarray, full, zeros, ones, empty, zeros_like, ones_like, full_like,
    empty_like, randn, rand, randn_like, rand_like, randint, arange, linspace, logspace, eye,
    add, sub, div, true_divide, divide, subtract, pow, logical_not, logical_and, logical_or, logical_xor, where,
    cast, matmul, mm, bmm,
    _op, _scalar, _method, _dim, _dims, _shape_args, _transposed, _link_view)
from ._tensor import autocast_operand as _autocast_operand
from ._ops import *  # noqa: F401,F403 (the functions whose spec says `python: generated`)


# ---------------------------------------------------------------- elementwise

@_method()
def masked_fill(x, mask, value):
    """x with `value` wherever the bool `mask` (broadcast to x) is True. Raises RuntimeError for a
    mask of another dtype, as PyTorch's."""
    if isinstance(mask, Tensor) and mask.dtype is not _dt.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    return where(mask, _scalar(value, x) if not isinstance(value, Tensor) else value.to(x.dtype), x)


# neg, exp, log, log1p, sqrt, rsqrt, sin, cos, erf, relu, sigmoid, tanh, abs and floor are
# generated from their spec (python/gt/_ops.py, imported at the end of this file).


def _rounded_once(fn):
    """Decorator for a function built from several ops: a float16/bfloat16 input is computed in
    float32 and the result rounded to its dtype once, as PyTorch's kernels for it accumulate in
    float32 (each op rounding to bfloat16 left 40-45 % of softmax and tanh-gelu outputs one
    bfloat16 ulp off). The gradient flows back through the two casts."""
    @functools.wraps(fn)
    def in_float32(x, *args, **kwargs):
        if isinstance(x, Tensor) and x.dtype in (_dt.float16, _dt.bfloat16):
            return cast(fn(cast(x, _dt.float32), *args, **kwargs), x.dtype)
        return fn(x, *args, **kwargs)
    return in_float32


@_rounded_once
def gelu(x, approximate="none"):
    """x * Phi(x) (Hendrycks & Gimpel 2016): exact with erf, or approximate='tanh':
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "tanh":
        return 0.5 * x * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _op("gelu", x)


@_rounded_once
def silu(x):
    """x * sigmoid(x) (Elfwing et al. 2018)."""
    return x * sigmoid(x)


@_method('clamp', 'clip')
def clamp(x, min=None, max=None):
    """x limited to [min, max] (either may be None; NaN stays NaN). The gradient flows where x is
    strictly inside a number bound (0 at the bound itself), and at a tensor bound equal to x it
    is split half and half with the bound, as PyTorch 2's clamp."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    y = x
    if min is not None:
        y = maximum(y, min) if isinstance(min, Tensor) else where(le(x, min), _scalar(min, x), y)
    if max is not None:
        y = minimum(y, max) if isinstance(max, Tensor) else where(ge(x, max), _scalar(max, x), y)
    return y


clip = clamp


@_method()
def clone(x, memory_format=None):
    """A copy (GT tensors are never written in place on the worker, so it shares the values)."""
    if x.dtype.is_complex:
        return x.clone()  # (ComplexTensor.clone: each part cloned)
    t = Tensor(x._h, x.shape, x.dtype)
    if x.requires_grad and _ag.is_grad_enabled():
        t.requires_grad = True
        t._node = _ag.Node(_ag.identity_backward, (x,), None, _runtime.current_signal())
        t._made_now(x)
    return t


def detach(x):
    return x.detach()


def _keyword_shape(args, kwargs, *names):
    """The shape given as *args, or by keyword (x.reshape(shape=...), x.view(size=...),
    permute(dims=...)), as PyTorch takes it. Raises TypeError for another keyword or both."""
    for name in names:
        if name in kwargs:
            if args:
                raise TypeError(f"got multiple values for argument '{name}'")
            args = (kwargs.pop(name),)
    if kwargs:
        raise TypeError(f"got an unexpected keyword argument '{next(iter(kwargs))}'")
    return args


@_method()
def permute(x, *dims, **kwargs):
    dims = _shape_args(_keyword_shape(dims, kwargs, "dims") if kwargs else dims)
    if len(dims) != x.ndim:
        raise _C.ShapeError(f"permute: expected {x.ndim} dims for shape {x.shape}, got {dims}")
    return _transposed(x, [d + x.ndim if d < 0 else d for d in dims])


@_method()
def transpose(x, dim0=-2, dim1=-1):
    """Swaps two axes (PyTorch's transpose(dim0, dim1))."""
    perm = list(range(x.ndim))
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(x, *perm)


swapaxes = swapdims = transpose
Tensor.swapaxes = Tensor.swapdims = transpose


@_method('reshape')
def reshape(x, *shape, **kwargs):
    """Same elements, new shape; one size may be -1 (also as shape= or size=). Raises
    gt.ShapeError (a RuntimeError, as PyTorch, and a ValueError) if the sizes do not match."""
    shape = list(_shape_args(_keyword_shape(shape, kwargs, "shape", "size") if kwargs else shape))
    wanted = list(shape)
    if shape.count(-1) > 1:
        raise _C.ShapeError("reshape: only one dimension can be inferred (-1)")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.numel() % known:
            raise _C.ShapeError(f"reshape: cannot reshape {list(x.shape)} ({x.numel()} elements) into {wanted}")
        shape[shape.index(-1)] = x.numel() // known
    shape = tuple(shape)
    if shape == x.shape:
        return x
    if math.prod(shape) != x.numel():
        raise _C.ShapeError(f"reshape: cannot reshape {list(x.shape)} ({x.numel()} elements) into {wanted}")
    return _op("reshape", x, shape=shape)


@_method()
def view(x, *shape, dtype=None, **kwargs):
    """x.view(*shape): reshape (a view of x: gt._views). x.view(dtype): x's bytes read as `dtype`
    (bit reinterpretation, as torch.Tensor.view(dtype); the last axis scales by the ratio of the
    item sizes), a view whose in-place writes reach x's bytes (schedulefree's XOR swap). It is
    read and written back through the client (a wait), and carries no gradient. Raises
    RuntimeError for a 0-d x or a last axis the new item size does not divide."""
    if dtype is None and len(shape) == 1 and isinstance(shape[0], _dt.dtype) and not kwargs:
        dtype = shape[0]
    if dtype is None:
        return reshape(x, *shape, **kwargs)
    d = _dt.resolve(dtype)
    if d == x.dtype:
        return x
    from ._tensor import _Layout, _ViewOf
    y = _bitcast(x, d)
    y._view_of = _ViewOf(x, _Layout(lambda base: _bitcast(base, d), True,
                                    writer=lambda base, v: base._assign(_bitcast(v, base.dtype))))
    return y


def _bitcast(x, d):
    """x's bytes as a new tensor of dtype d (see view)."""
    a = np.array(x.numpy(), order="C")  # (0-d stays 0-d)
    nd = np.dtype(_dt.numpy_dtype(d))
    if a.dtype.itemsize != nd.itemsize:
        if a.ndim == 0:
            raise RuntimeError("self.dim() cannot be 0 to view a tensor as a dtype of another size")
        if (a.shape[-1] * a.dtype.itemsize) % nd.itemsize:
            raise RuntimeError(f"self.size(-1) must be divisible by {nd.itemsize // a.dtype.itemsize or 1} to view "
                               f"{x.dtype} as {d} (different element sizes), but got {a.shape[-1]}")
    return from_numpy(a.view(nd).copy())


@_method()
def flatten(x, start_dim=0, end_dim=-1):
    """Merges dims start_dim..end_dim into one (a 0-d tensor becomes shape (1,))."""
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = _dim(start_dim, x.ndim), _dim(end_dim, x.ndim)
    return reshape(x, x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


@_method()
def squeeze(x, dim=None, *more):
    """Drops size-1 axes (all, or those in `dim`, an int or tuple, or several ints, x.squeeze(0, 2);
    others are left alone)."""
    if more:
        dim = (dim, *more)
    if dim is None:
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = [_dim(d, x.ndim) for d in ((dim,) if isinstance(dim, builtins.int) else dim)]
        dims = [d for d in dims if x.ndim and x.shape[d] == 1]
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in dims))


@_method()
def unsqueeze(x, dim):
    """Inserts a size-1 axis at `dim` (negative counts from the end of the result)."""
    d = _C.normalize_axes([dim], x.ndim + 1)[0]
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


@_method()
def broadcast_to(x, shape):
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return _op("broadcast_to", x, shape=shape)


@_method()
def expand(x, *shape, **kwargs):
    """broadcast_to, where -1 keeps a size (PyTorch's expand; also as size=)."""
    shape = list(_shape_args(_keyword_shape(shape, kwargs, "size") if kwargs else shape))
    lead = len(shape) - x.ndim
    for i in range(x.ndim):
        if shape[lead + i] == -1:
            shape[lead + i] = x.shape[i]
    return broadcast_to(x, tuple(shape))


def broadcast_tensors(*ts):
    """The tensors broadcast to their common shape; raises gt.ShapeError if there is none."""
    shape = ()
    for t in ts:
        shape = tuple(_C.broadcast_shapes(list(shape), list(t.shape)))
    return tuple(broadcast_to(t, shape) for t in ts)


def _slice(x, starts, steps, shape):
    """x[starts + i * steps] on every axis (the gt.slice op), or x when that is all of it."""
    starts, steps, shape = tuple(starts), tuple(steps), tuple(shape)
    if shape == x.shape and not builtins.any(starts):
        return x
    return _op("slice", x, shape=shape, starts=starts, steps=steps)


def _narrow(x, d, start, length):
    starts, steps, shape = [0] * x.ndim, [1] * x.ndim, list(x.shape)
    starts[d], shape[d] = start, length
    return _slice(x, starts, steps, shape)


@_method()
def narrow(x, dim, start, length):
    """x[..., start:start + length, ...] along `dim`, a view of x (writes to it reach x, see
    Tensor._rebind); raises gt.ShapeError if it does not fit."""
    d = _dim(dim, x.ndim)
    key = (slice(None),) * d + (slice(start, start + length),)
    return _link_view(_narrow(x, d, start, length), x, key)


def _promote_all(ts):
    d = ts[0].dtype
    for t in ts[1:]:
        d = _dt.promote_types(d, t.dtype) if d.code is None or t.dtype.code is None else \
            _dt.from_code(_C.promote_types(d.code, t.dtype.code))  # (complex dtypes: no code)
    return [cast(t, d) for t in ts]


def cat(tensors, dim=0):
    """Joins tensors along `dim` (dtypes promote). Raises gt.ShapeError (a RuntimeError) if sizes
    differ elsewhere."""
    tensors = [t for t in tensors]
    if not tensors:
        raise _C.ShapeError("cat expects a non-empty list of tensors")
    if len(tensors) == 1:
        return tensors[0].clone()  # (a new tensor, as PyTorch's: writing to it leaves the input)
    tensors = _promote_all(tensors)
    # PyTorch's legacy rule: 1-D empty tensors (shape (0,)) are skipped beside tensors of any
    # rank (an empty cache concatenated with the first keys: transformers' DynamicCache); they
    # count for the result's dtype.
    kept = [t for t in tensors if t.shape != (0,)]
    if len(kept) < len(tensors):
        if len(kept) < 2:
            return (kept or tensors)[0].clone()
        tensors = kept
    d = _dim(dim, tensors[0].ndim)
    while len(tensors) > _MAX_CAT:  # one concat op joins at most _MAX_CAT: join in steps
        tensors = [tensors[i] if i + 1 == len(tensors) else
                   _op("concat", *tensors[i:i + _MAX_CAT], axis=d)
                   for i in range(0, len(tensors), _MAX_CAT)]
    return _op("concat", *tensors, axis=d)


_MAX_CAT = _C.max_concat_operands


concat = concatenate = cat


def stack(tensors, dim=0):
    """Joins same-shape tensors along a new axis `dim`."""
    tensors = list(tensors)
    if not tensors:
        raise _C.ShapeError("stack expects a non-empty list of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise _C.ShapeError(f"stack expects each tensor to be equal size, got {sorted(shapes)}")
    d = _C.normalize_axes([dim], tensors[0].ndim + 1)[0]
    return cat([unsqueeze(t, d) for t in tensors], d)


@_method()
def split(x, split_size_or_sections=None, dim=0, *, split_size=None):
    """Pieces of `split_size` along `dim` (the last may be smaller), or of the listed sizes
    (torch.split's split_size_or_sections, or Tensor.split's split_size=)."""
    if split_size is not None:
        split_size_or_sections = split_size
    if split_size_or_sections is None:
        raise TypeError("split() missing required argument 'split_size_or_sections'")
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, builtins.int):
        size = split_size_or_sections
        if size <= 0:
            raise ValueError(f"split: split_size must be positive, got {size}")
        sizes = [builtins.min(size, n - i) for i in range(0, n, size)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise _C.ShapeError(f"split: sizes {sizes} do not add up to {n} (the size of dim {dim})")
    out, start = [], 0
    for s in sizes:
        out.append(_narrow(x, d, start, s))
        start += s
    return tuple(out)


@_method()
def chunk(x, chunks, dim=0):
    """At most `chunks` pieces of equal size (the last may be smaller) along `dim`."""
    n = x.shape[_dim(dim, x.ndim)]
    return split(x, builtins.max(1, -(-n // chunks)), dim)


@_method()
def unbind(x, dim=0):
    """The slices of x along `dim`, each without that dim."""
    d = _dim(dim, x.ndim)
    return tuple(squeeze(p, d) for p in split(x, 1, d))


# ---------------------------------------------------------------- indexing ops

def _indices(index, size=None, what="index"):
    """An int64/int32 index tensor from a Tensor, list or array; client-known values are
    checked against `size` and negative ones wrapped."""
    if isinstance(index, Tensor):
        if index.dtype not in (_dt.int64, _dt.int32):
            raise IndexError(f"{what}: tensors used as indices must be long or int, got {index.dtype}")
        return index
    a = np.asarray(index)
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        if a.size == 0:
            a = a.astype(np.int64)
        else:
            raise IndexError(f"{what}: indices must be integers, got {a.dtype}")
    a = a.astype(np.int64)
    if size is not None and a.size:
        if a.max() >= size or a.min() < -size:
            bad = a[(a >= size) | (a < -size)][0]
            raise IndexError(f"{what}: index {bad} is out of bounds for size {size}")
        a = np.where(a < 0, a + size, a)
    return from_numpy(a)


@_method()
def index_select(x, dim, index):
    """x's entries at `index` (1-D) along `dim`. Out-of-range indices in a Tensor are clamped on
    the worker; in a list or array they raise IndexError here."""
    d = _dim(dim, x.ndim)
    idx = _indices(index, x.shape[d], "index_select")
    if idx.ndim != 1:
        raise IndexError(f"index_select: index must be 1-D, got shape {idx.shape}")
    return _op("index_select", x, idx, axis=d)


@_method()
def gather(x, dim, index):
    """torch.gather: out[i][j] = x[index[i][j]][j] for dim 0, likewise for other dims. `index`
    has x's sizes on every other axis."""
    d = _dim(dim, x.ndim)
    idx = _indices(index, x.shape[d], "gather")
    return _op("gather", x, idx, axis=d)


@_method()
def isposinf(x):
    """Whether each element is +inf (bool; all False for integer and bool tensors)."""
    return eq(x, math.inf) if x.dtype.is_floating_point else zeros(x.shape, dtype=_dt.bool)


@_method()
def isneginf(x):
    """Whether each element is -inf (bool; all False for integer and bool tensors)."""
    return eq(x, -math.inf) if x.dtype.is_floating_point else zeros(x.shape, dtype=_dt.bool)


@_method()
def take_along_dim(x, indices, dim=None):
    """x's values at `indices` along `dim`, as torch.take_along_dim: x and indices broadcast
    against each other on every other axis (transformers' beam search picks beams this way);
    dim=None: of the flattened x at the flattened indices."""
    if dim is None:
        return gather(reshape(x, -1), 0, reshape(indices, -1))
    d = _dim(dim, x.ndim)
    if x.ndim != indices.ndim:
        raise _C.ShapeError(f"take_along_dim: input and indices should have the same number of dimensions, but got "
                            f"{x.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    want_index = list(x.shape)
    want_index[d] = indices.shape[d]
    want_x = list(indices.shape)
    want_x[d] = x.shape[d]
    index_shape = tuple(_C.broadcast_shapes(want_index, list(indices.shape)))
    x_shape = tuple(_C.broadcast_shapes(want_x, list(x.shape)))
    if index_shape != indices.shape:
        indices = broadcast_to(indices, index_shape)
    if x_shape != x.shape:
        x = broadcast_to(x, x_shape)
    return gather(x, d, indices)


def index_add_zeros(shape, dim, index, source):
    """Zeros of `shape` with source's slices added at `index` along `dim` (repeats add up)."""
    return _op("index_add", index, source, shape=shape, axis=dim)


def scatter_add_zeros(shape, dim, index, source):
    return _op("scatter_add", index, source, shape=shape, axis=dim)


def one_hot(indices, num_classes=-1, dtype=None):
    """One-hot rows for integer class indices: shape indices.shape + (C,). PyTorch gives int64;
    pass dtype=gt.float32 to get floats directly. num_classes=-1 needs the values (a fetch)."""
    if num_classes < 0:
        num_classes = builtins.int(indices.numpy().max()) + 1
    return _op("one_hot", indices, num_classes=num_classes, dtype=_dt.resolve(dtype or _dt.int64))


def embedding(indices, weight):
    """weight[indices]: rows of `weight` (V, D) for integer `indices` of any shape -> (*, D)."""
    idx = _indices(indices, weight.shape[0], "embedding")
    flat = reshape(idx, -1)
    rows = index_select(weight, 0, flat)
    return reshape(rows, idx.shape + weight.shape[1:])


# ---------------------------------------------------------------- reductions

_LOW_FLOATS = (_dt.float32, _dt.float16, _dt.bfloat16)


def _axes(x, dim, axis):
    if axis is not None:
        dim = axis
    if dim is None:
        return _C.normalize_axes([], x.ndim)
    if isinstance(dim, builtins.int):
        dim = [dim]
    return _C.normalize_axes(list(dim), x.ndim)


# A float sum or mean over at least this many elements per result accumulates in float64 (the
# client core's rule, kPreciseSumMin in include/gt/Client/Autograd.h, which its gradient sums
# follow too): the CPU kernels add a long run of elements into 8 float32 lanes, or (a column sum,
# an eager reduction over interleaved axes such as batch norm's (N, H, W)) into one float32
# value, whose rounding grows with the count. PyTorch's cascade sums stay within ~1e-7; float64
# accumulation does too, for a cast (fused with the sum in a fused region).
_PRECISE_SUM_MIN = _C.precise_sum_min


def _reduce(op, x, dim, keepdim, axis, keepdims):
    keep = keepdims if keepdims is not None else keepdim
    axes = _axes(x, dim, axis)
    if op in ("sum", "mean") and x.dtype in _LOW_FLOATS:
        shape = x.shape
        count = 1
        for a in (axes or range(len(shape))):
            count *= shape[a]
        if count >= _PRECISE_SUM_MIN:
            wide = _op(op, cast(x, _dt.float64), axes=axes, keepdims=builtins.bool(keep))
            return cast(wide, x.dtype)
    return _op(op, x, axes=axes, keepdims=builtins.bool(keep))


@_method()
def sum(x, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None):
    """Sum over `dim` (int, tuple, negative allowed; None = all). bool/int32 sum to int64."""
    if dtype is not None:
        x = cast(x, dtype)
    return _reduce("sum", x, dim, keepdim, axis, keepdims)


@_method()
def mean(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Mean over `dim` (floats only, as PyTorch)."""
    return _reduce("mean", x, dim, keepdim, axis, keepdims)


@_method()
def amax(x, dim=None, keepdim=False):
    """Maximum over `dim` (int or tuple); the gradient is split evenly between ties."""
    return _reduce("max", x, dim, keepdim, None, None)


@_method()
def amin(x, dim=None, keepdim=False):
    return _reduce("min", x, dim, keepdim, None, None)


class MaxMin(tuple):
    """(values, indices) of max/min along a dim, as torch.return_types.max; return_type(name)
    gives the class of another op's (sort, topk, kthvalue), printed as PyTorch prints them."""
    __slots__ = ()
    _name = "max"

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        return f"{_dt.package[0]}.return_types.{self._name}(\nvalues={self[0]!r},\nindices={self[1]!r})"


MaxMin.__name__ = MaxMin.__qualname__ = "max"  # type(x.max(0)).__name__, as torch.return_types.max's
_return_types = {"max": MaxMin}


def return_type(name):
    """The (values, indices) class of op `name` (torch.return_types.<name>)."""
    cls = _return_types.get(name)
    if cls is None:
        cls = _return_types[name] = type(name, (MaxMin,), {"__slots__": (), "_name": name, "__module__": "gt.return_types"})
    return cls


def _extremum(name, x, dim, keepdim, axis, keepdims):
    if isinstance(dim, Tensor):  # torch.max(a, b) is maximum
        return (maximum if name == "max" else minimum)(x, dim)
    if axis is not None:
        dim = axis
    keep = keepdims if keepdims is not None else keepdim
    if dim is None:
        return (amax if name == "max" else amin)(x)
    if not isinstance(dim, builtins.int):
        raise TypeError(f"{name}(dim) takes one int dim; use amax/amin for several")
    d = _dim(dim, x.ndim)
    idx = (argmax if name == "max" else argmin)(x, d, keepdim=True)
    values = gather(x, d, idx)  # the gradient goes to the index returned, as PyTorch
    if not keep:
        values, idx = squeeze(values, d), squeeze(idx, d)
    return return_type(name)((values, idx))


@_method()
def max(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """max(x): the largest value (gradient split between ties); max(x, dim): (values, indices)
    along dim (gradient to the first maximum); max(x, other): maximum(x, other)."""
    return _extremum("max", x, dim, keepdim, axis, keepdims)


@_method()
def min(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return _extremum("min", x, dim, keepdim, axis, keepdims)


def _arg(op, x, dim, keepdim):
    if x.dtype == _dt.bool:  # (the op takes numbers: False < True as 0 < 1)
        x = cast(x, _dt.int32)
    if dim is None:
        r = _op(op, reshape(x, -1), axes=[0])
        return reshape(r, (1,) * x.ndim) if keepdim else r
    return _op(op, x, axes=[_dim(dim, x.ndim)], keepdims=builtins.bool(keepdim))


@_method()
def argmax(x, dim=None, keepdim=False):
    """int64 index of the first maximum along `dim` (None: of the flattened tensor)."""
    return _arg("argmax", x, dim, keepdim)


@_method()
def argmin(x, dim=None, keepdim=False):
    return _arg("argmin", x, dim, keepdim)


@_method()
def var(x, dim=None, keepdim=False, *, correction=1, unbiased=None):
    """Variance over `dim` with Bessel's `correction` (PyTorch's default 1; unbiased=False is 0)."""
    if unbiased is not None:
        correction = 1 if unbiased else 0
    axes = _axes(x, dim, None)
    n = math.prod(x.shape[a] for a in axes) if x.ndim else 1
    half = x.dtype in (_dt.bfloat16, _dt.float16)  # (computed in float32 and rounded once, as PyTorch's)
    xf = cast(x, _dt.float32) if half else x
    d = xf - mean(xf, axes, keepdim=True)
    v = sum(d * d, axes, keepdim) / builtins.max(n - correction, 0)
    return cast(v, x.dtype) if half else v


@_method()
def std(x, dim=None, keepdim=False, *, correction=1, unbiased=None):
    return sqrt(var(x, dim, keepdim, correction=correction, unbiased=unbiased))


@_method()
def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over `dim`, shifted by the max for stability; as PyTorch's, a max of
    +-inf shifts by 0, so a row of only -inf gives -inf and one holding +inf gives +inf."""
    axes = _axes(x, dim, None)
    m = amax(x, axes, keepdim=True).detach()
    m = masked_fill(m, abs(m) == math.inf, 0.0)
    r = log(sum(exp(x - m), axes, keepdim=True)) + m
    return r if keepdim else squeeze(r, axes)


def _logsumexp(x, dim):
    """logsumexp(x, dim, keepdim=True) shifted by the max as it is (log_softmax's: a row of
    -inf gives NaN there, as in PyTorch's)."""
    m = amax(x, dim, keepdim=True).detach()
    return log(sum(exp(x - m), dim, keepdim=True)) + m


class _LogSoftmax(_ag.Function):
    """x - logsumexp(x) along `dim` (max-shifted), with the backward written in terms of the
    output alone, as PyTorch's _log_softmax_backward_data: dx = g - exp(y) * sum(g, dim).
    Differentiating the composite instead would record a node per op and keep exp(x - max)
    and its sum alive for backward."""

    @staticmethod
    def forward(ctx, x, dim):
        y = x - _logsumexp(x, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g - exp(y) * sum(g, ctx.dim, keepdim=True), None


@_method()
def log_softmax(x, dim=-1, dtype=None):
    """x - logsumexp(x) along `dim` (max-shifted for stability); same shape and dtype, or x
    cast to `dtype` first when given (PyTorch's way to a float32 result of half input)."""
    return _log_softmax(x if dtype is None else cast(x, dtype), dim)


@_rounded_once
def _log_softmax(x, dim):
    return _LogSoftmax.apply(x, dim)


class _Softmax(_ag.Function):
    """exp(x - max) / sum(exp(x - max)) along `dim`, with the backward written in terms of
    the output alone, as PyTorch's _softmax_backward_data: dx = y * (g - sum(g * y, dim)).
    Differentiating the composite instead would keep exp(x - max) and its sum alive for the
    quotient rule, and the forward region would write both besides y."""

    @staticmethod
    def forward(ctx, x, dim):
        e = exp(x - amax(x, dim, keepdim=True))
        y = e / sum(e, dim, keepdim=True)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - sum(g * y, ctx.dim, keepdim=True)), None


@_method()
def softmax(x, dim=-1, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (max-shifted for stability); same shape and dtype, or
    x cast to `dtype` first when given."""
    return _softmax(x if dtype is None else cast(x, dtype), dim)


@_rounded_once
def _softmax(x, dim):
    return _Softmax.apply(x, dim)


@_method()
def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: the p-norm of x's elements over `dim` (an int, a tuple; None: all elements),
    p 'fro' (the 2-norm) or a number (gt.linalg.vector_norm's: inf / -inf the max / min of |x|,
    0 the count of non-zeros); p 'nuc' the nuclear norm of the matrices over the two axes `dim`
    (the last two when None). dtype: x is cast to it first."""
    if dtype is not None:
        x = cast(x, dtype)
    if x.dtype.is_complex:  # (of the magnitudes: a real result)
        x = abs(x)
    if x.dtype in (_dt.bfloat16, _dt.float16):  # (computed in float32 and rounded once, as PyTorch's)
        return cast(norm(cast(x, _dt.float32), p, dim, keepdim), x.dtype)
    if p == "fro" or p is None or p == 2:
        return _l2(sum(x * x, dim, keepdim))
    if p == 1:
        return sum(abs(x), dim, keepdim)
    from . import linalg
    if p == "nuc":
        return linalg.matrix_norm(x, "nuc", (-2, -1) if dim is None else dim, keepdim)
    if isinstance(p, str):
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")  # (PyTorch's words)
    return linalg.vector_norm(x, p, dim, keepdim)


def _l2(squares):
    """sqrt of a sum of squares, with gradient 0 where it is 0 (PyTorch's choice for a norm at
    the zero vector: WGAN-GP's gradient penalty meets one), where sqrt's would be nan."""
    nonzero = squares != 0  # (True for NaN: a NaN norm stays NaN, as PyTorch's)
    return where(nonzero, sqrt(where(nonzero, squares, ones_like(squares))), zeros_like(squares))


def allclose(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
    """Whether |a - b| <= atol + rtol |b| everywhere (NaNs equal with equal_nan), as torch.allclose
    (a wait: it reads both)."""
    return builtins.bool(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


# ---------------------------------------------------------------- built from other ops
# PyTorch's functions that scripts reach for early, written with the ops above (their
# gradients follow from those ops' formulas).

@_method()
def isnan(x):
    """Whether each element is NaN (bool; all False for integer and bool tensors): x != x."""
    return ne(x, x) if x.dtype.is_floating_point else zeros(x.shape, dtype=_dt.bool)


@_method()
def isinf(x):
    """Whether each element is +inf or -inf (bool)."""
    return eq(abs(x), math.inf) if x.dtype.is_floating_point else zeros(x.shape, dtype=_dt.bool)


@_method()
def isfinite(x):
    """Whether each element is neither NaN nor infinite (bool): x - x == 0."""
    return eq(x - x, 0.0) if x.dtype.is_floating_point else ones(x.shape, dtype=_dt.bool)


def _nonzero(x):
    return x if x.dtype == _dt.bool else ne(x, 0)


@_method()
def any(x, dim=None, keepdim=False):
    """Whether any element (along `dim`; None: of all) is nonzero (bool)."""
    return gt(sum(cast(_nonzero(x), _dt.int64), dim, keepdim), 0)


@_method()
def all(x, dim=None, keepdim=False):
    """Whether every element (along `dim`; None: of all) is nonzero (bool)."""
    return eq(sum(cast(logical_not(_nonzero(x)), _dt.int64), dim, keepdim), 0)


def equal(a, b):
    """Whether a and b have the same shape and elements (a Python bool: waits for the values)."""
    return tuple(a.shape) == tuple(b.shape) and builtins.bool(all(eq(a, b)).item())


@_method()
def outer(a, b):
    """The outer product of 1-D a (n,) and b (m,): (n, m), a[i] * b[j]."""
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, got {a.ndim}-D and {b.ndim}-D")
    return reshape(a, (-1, 1)) * reshape(b, (1, -1))


ger = outer


def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product, without the products by 1; beta == 0 ignores input (its
    NaNs too), as PyTorch. Inside gt.amp.autocast input is cast with the product's operands."""
    input = _autocast_operand(input)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (input if beta == 1 else input * beta) + product


@_method()
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 (n, k) @ mat2 (k, m)); input broadcasts to (n, m)."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


@_method()
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 (b, n, k) @ batch2 (b, k, m)); input broadcasts to (b, n, m)."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


@_method()
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * the sum over b of batch1[b] @ batch2[b]."""
    return _scaled_sum(input, sum(bmm(batch1, batch2), 0), beta, alpha)


@_method()
def lerp(input, end, weight):
    """input + weight * (end - input) (weight a number or a tensor), rounded as PyTorch's CPU
    kernel rounds it: fma(weight, end - input, input) where |weight| < 0.5, else
    fma(-(end - input), 1 - weight, end); a float32 (or 16-bit) fma as one rounding from float64
    (exact products), so float32 results equal PyTorch's."""
    diff = end - input
    if isinstance(weight, Tensor):
        small = abs(weight) < 0.5
        return where(small, _fma(weight, diff, input), _fma(-diff, 1 - weight, end))
    if diff.dtype.is_floating_point and diff.dtype != _dt.float64:  # (the number in the tensors' precision, as PyTorch's)
        weight = builtins.float(np.float32(weight))
    if builtins.abs(weight) < 0.5:
        return _fma(weight, diff, input)
    return _fma(-diff, builtins.float(np.float32(1) - np.float32(weight)) if diff.dtype != _dt.float64 else 1 - weight,
                end)


def _fma(a, b, c):
    """a * b + c, one rounding for float32 and 16-bit floats (computed in float64)."""
    like = c if isinstance(c, Tensor) else b
    if like.dtype in (_dt.float64,) or not like.dtype.is_floating_point:
        return a * b + c
    wide = [cast(v, _dt.float64) if isinstance(v, Tensor) else v for v in (a, b, c)]
    return cast(wide[0] * wide[1] + wide[2], like.dtype)


@_method()
def clamp_min(x, min):
    """clamp(x, min=min): x limited from below (a number or a tensor that broadcasts)."""
    return clamp(x, min=min)


@_method()
def clamp_max(x, max):
    """clamp(x, max=max): x limited from above (a number or a tensor that broadcasts)."""
    return clamp(x, max=max)


@_method()
def sign(x):
    """-1, 0 or 1 by the sign of each element (NaN stays NaN), in x's dtype (bool stays bool).
    Its gradient is zero, as PyTorch's: a result of an x that requires grad requires grad too
    (SignBackward0), and a backward pass through it gives x zeros."""
    if x.dtype == _dt.bool:
        return x
    if x.requires_grad and _ag.is_grad_enabled():
        return _Sign.apply(x)
    s = cast(gt(x, 0), x.dtype) - cast(lt(x, 0), x.dtype)
    return where(isnan(x), x.detach(), s) if x.dtype.is_floating_point else s


class _Sign(_ag.Function):
    @staticmethod
    def forward(ctx, x):
        return sign(x)

    @staticmethod
    def backward(ctx, g):
        return zeros_like(g)


@_method()
def repeat(x, *sizes, **kwargs):
    """x tiled `sizes` times along each axis (torch.Tensor.repeat, also as repeats=; len(sizes)
    >= x.ndim, x taking leading axes of size 1 first): one broadcast and a reshape."""
    sizes = _shape_args(_keyword_shape(sizes, kwargs, "repeats") if kwargs else sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    shape = (1,) * (len(sizes) - x.ndim) + tuple(x.shape)
    interleaved = [d for s in shape for d in (1, s)]
    tiled = [d for r, s in zip(sizes, shape) for d in (r, s)]
    return reshape(broadcast_to(reshape(x, interleaved), tiled), [r * s for r, s in zip(sizes, shape)])


@_method()
def roll(x, shifts, dims=None):
    """x with its elements shifted by `shifts` along `dims` (wrapping around; dims None: over
    the flattened tensor, then the shape restored)."""
    if dims is None:
        return reshape(roll(reshape(x, -1), shifts, 0), x.shape)
    shifts = [shifts] if isinstance(shifts, builtins.int) else list(shifts)
    dims = [dims] if isinstance(dims, builtins.int) else list(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts ({len(shifts)}) and dims ({len(dims)}) must have the same length")
    for shift, dim in zip(shifts, dims):
        d = _dim(dim, x.ndim)
        n = x.shape[d]
        s = shift % n if n else 0
        if s:
            x = cat([_narrow(x, d, n - s, s), _narrow(x, d, 0, n - s)], d)
    return x


def finfo(dtype=None):
    """Limits of a floating dtype (default float32), as torch.finfo: bits, eps, max, min, tiny
    (= smallest_normal), resolution, dtype; a complex dtype gives its parts' (complex64:
    float32's). Raises TypeError for another dtype."""
    d = dtype if isinstance(dtype, _dt._Unsupported) else _dt.resolve(dtype or _dt.default_float())
    if getattr(d, "is_complex", False):
        d = _dt.float32 if d == _dt.complex64 else _dt.float64
    if not d.is_floating_point:
        raise TypeError(f"finfo: expected a floating-point dtype, got {d}")
    info = _ml_finfo(d)
    return _Limits(bits=info.bits, eps=builtins.float(info.eps), max=builtins.float(info.max),
                   min=builtins.float(info.min), tiny=builtins.float(info.tiny),
                   smallest_normal=builtins.float(info.tiny), resolution=builtins.float(info.resolution), dtype=d.name)


def iinfo(dtype):
    """Limits of an integer dtype, as torch.iinfo: bits, max, min, dtype."""
    d = dtype if isinstance(dtype, _dt._Unsupported) else _dt.resolve(dtype)
    if d.is_floating_point or d == _dt.bool:
        raise TypeError(f"iinfo: expected an integer dtype, got {d}")
    info = np.iinfo(d.numpy)
    return _Limits(bits=info.bits, max=builtins.int(info.max), min=builtins.int(info.min), dtype=d.name)


def _ml_finfo(d):
    if d == _dt.bfloat16 or isinstance(d, _dt._Unsupported):  # (ml_dtypes' types: bfloat16, float8)
        import ml_dtypes
        return ml_dtypes.finfo(d.numpy)
    return np.finfo(d.numpy)


class _Limits:
    """What finfo / iinfo return: the limits as attributes."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        kind = "finfo" if "eps" in self.__dict__ else "iinfo"
        return f"{kind}(" + ", ".join(f"{k}={v}" for k, v in self.__dict__.items()) + ")"


# ---------------------------------------------------------------- in-place forms
# As `x += y`: the tensor is rebound to the new values (GT never writes a worker buffer in
# place); on a leaf that requires grad they raise unless under gt.no_grad(), as PyTorch.

def _inplace(name, fn, what):
    def method(self, *args, **kwargs):
        return self._in_place(fn, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"In place (x rebound, see Tensor._in_place): x = {what}; returns x."
    setattr(Tensor, name, method)


def _copy(x, src, non_blocking=False):
    """src broadcast to x's shape and cast to x's dtype."""
    return cast(src if tuple(src.shape) == x.shape else broadcast_to(src, x.shape), x.dtype)


_inplace("add_", add, "add(x, other, alpha=alpha)")
_inplace("sub_", sub, "sub(x, other, alpha=alpha)")
_inplace("mul_", mul, "mul(x, other)")
_inplace("div_", div, "div(x, other)")
_inplace("clamp_", clamp, "clamp(x, min, max)")
_inplace("masked_fill_", masked_fill, "masked_fill(x, mask, value)")
_inplace("lerp_", lerp, "lerp(x, end, weight)")
_inplace("sign_", sign, "sign(x)")
_inplace("copy_", _copy, "src broadcast to x's shape, in x's dtype")
_inplace("fill_", lambda x, value: full(x.shape, value.item() if isinstance(value, Tensor) else value, dtype=x.dtype),
         "full(x.shape, value) in x's dtype")
for _name, _compare in (("eq_", "__eq__"), ("ne_", "__ne__"), ("lt_", "__lt__"), ("le_", "__le__"), ("gt_", "__gt__"),
                        ("ge_", "__ge__"), ("not_equal_", "__ne__"), ("less_", "__lt__"), ("less_equal_", "__le__"),
                        ("greater_", "__gt__"), ("greater_equal_", "__ge__")):
    _inplace(_name, lambda x, other, _c=_compare: cast(getattr(x, _c)(other), x.dtype),
             f"x {_compare.strip('_')} other as 1 or 0 in x's dtype (ultralytics' mask.gt_(0))")
_inplace("normal_", lambda x, mean=0.0, std=1.0, generator=None: randn(x.shape, dtype=x.dtype) * std + mean,
         "samples of N(mean, std^2) of x's shape and dtype (floats; `generator` is accepted and ignored)")
_inplace("uniform_", lambda x, a=0.0, b=1.0, generator=None: rand(x.shape, dtype=x.dtype) * (b - a) + a,
         "samples of U[a, b) of x's shape and dtype (floats; `generator` is accepted and ignored)")


@_method("where")
def _where_method(x, condition, other):
    """x.where(condition, other): where(condition, x, other)."""
    return where(condition, x, other)


multiply = mul
negative = neg


def _scalar_dims(fn):
    """fn with PyTorch's rule for a 0-d input: dim 0 or -1 (or a tuple of them) names its one
    element, so x.sum(0), x.max(0), x.softmax(-1) of a 0-d x compute over that element and
    give a 0-d result (torchmetrics' accuracy sums a 0-d count over dim 0). Another dim raises
    IndexError, as PyTorch's."""
    @functools.wraps(fn)
    def call(x, *args, **kwargs):
        if getattr(x, "shape", True) or not (args or kwargs):  # (the common case, first: not 0-d, or no dim)
            return fn(x, *args, **kwargs)
        key = "dim" if "dim" in kwargs else "axis" if "axis" in kwargs else None
        dim = args[0] if args else kwargs.get(key) if key else None
        if dim is None or not isinstance(x, Tensor) or x.ndim != 0 or isinstance(dim, Tensor):
            return fn(x, *args, **kwargs)
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        for d in dims:
            if d not in (0, -1):
                raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {d})")
        if not dims:
            return fn(x, *args, **kwargs)
        new_dim = 0 if not isinstance(dim, (tuple, list)) else (0,)
        if args:
            args = (new_dim,) + args[1:]
        else:
            kwargs[key] = new_dim
        return _as_0d(fn(reshape(x, (1,)), *args, **kwargs))
    return call


def _as_0d(out):
    if isinstance(out, Tensor):
        return reshape(out, ()) if out.ndim else out
    if isinstance(out, tuple):
        return type(out)(tuple(_as_0d(o) for o in out)) if isinstance(out, MaxMin) else type(out)(_as_0d(o) for o in out)
    return out
