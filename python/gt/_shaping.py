"""Functions PyTorch scripts use that GT builds from its ops: round, diag, diagonal,
repeat_interleave, einsum, nonzero, masked_select, argwhere.

nonzero, masked_select and argwhere (and repeat_interleave with a tensor of repeats) have a
result whose size depends on the values, so they wait for them, as they synchronize in
PyTorch on a GPU.
"""
import builtins
import math

import numpy as np

from . import dtypes as _dt
from . import _functions as T
from . import _runtime
from . import autograd as _ag
from ._tensor import Tensor, _method, _dim


def _zero_gradient(g, y, inputs, attrs):
    return (T.zeros_like(inputs[0]),)


@_method()
def round(x, decimals=0):
    """Rounds half to even (as torch.round and NumPy), after scaling by 10**decimals; integers
    are returned as they are. The gradient is 0, as PyTorch's."""
    if not x.dtype.is_floating_point:
        return x
    with _ag.no_grad():
        scale = 10.0 ** decimals
        y = x * scale if decimals else x
        r = T.floor(y + 0.5)
        halfway_odd = T.logical_and(r - y == 0.5, T.remainder(r, 2.0) == 1.0)
        r = T.where(halfway_odd, r - 1.0, r)
        exact = 2.0 ** (52 if x.dtype == _dt.float64 else 23)  # beyond: every value is an integer
        r = T.where(T.abs(y) >= exact, y, r)
        out = r / scale if decimals else r
    if _ag.is_grad_enabled() and x.requires_grad:
        out.requires_grad = True
        out._node = _ag.Node(_zero_gradient, (x,), None, _runtime.current_signal())
    return out


@_method()
def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of the (dim1, dim2) planes, shifted by `offset` (above the main one when
    positive), as a last axis, as torch.diagonal; an index_select of the flattened planes, so it
    carries the gradient."""
    d1, d2 = _dim(dim1, x.ndim), _dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rows, cols = x.shape[d1], x.shape[d2]
    start_row, start_col = (0, offset) if offset >= 0 else (-offset, 0)
    length = builtins.max(0, builtins.min(rows - start_row, cols - start_col))
    rest = [d for d in range(x.ndim) if d not in (d1, d2)]
    planes = T.reshape(T.permute(x, *rest, d1, d2), *[x.shape[d] for d in rest], rows * cols)
    flat = (np.arange(length) + start_row) * cols + np.arange(length) + start_col
    return T.index_select(planes, planes.ndim - 1, T.tensor(flat.astype(np.int64)))


@_method()
def diag(x, diagonal=0):
    """A 1-D x: the square matrix with x on the `diagonal`-th diagonal; a 2-D x: that diagonal,
    as torch.diag. Raises RuntimeError for another rank."""
    if x.ndim == 2:
        return globals()["diagonal"](x, diagonal)
    if x.ndim != 1:
        raise RuntimeError(f"diag: expected a 1-D or 2-D input, got {x.ndim}-D")
    m, k = x.shape[0], builtins.abs(diagonal)
    n = m + k
    on = np.eye(n, k=diagonal, dtype=bool)
    padded = T.cat([x, T.zeros(k, dtype=x.dtype)]) if k else x
    values = T.unsqueeze(padded, 1) if diagonal >= 0 else T.unsqueeze(padded, 0)  # x[i] at (i, i+k) or (j-k... )
    return T.where(T.tensor(on), values, T.zeros((), dtype=x.dtype))


@_method()
def repeat_interleave(x, repeats=None, dim=None, *, output_size=None):
    """Each element (each slice along `dim`; of the flattened x when dim is None) repeated
    `repeats` times (an int, or one count per element), as torch.repeat_interleave: one
    index_select. Counts in a tensor are read (a wait) to know the result's size. With x alone,
    x holds the counts and the result is 0 repeated x[0] times, 1 repeated x[1] times, ..."""
    if repeats is None:
        counts = np.asarray(x.numpy() if isinstance(x, Tensor) else x, dtype=np.int64).reshape(-1)
        return T.tensor(np.repeat(np.arange(len(counts)), counts).astype(np.int64))
    if dim is None:
        x, dim = T.reshape(x, -1), 0
    d = _dim(dim, x.ndim)
    counts = repeats.numpy() if isinstance(repeats, Tensor) else np.asarray(repeats)
    counts = counts.astype(np.int64).reshape(-1)
    if (counts < 0).any():
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    if counts.size not in (1, x.shape[d]):
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along dim ({x.shape[d]}), "
                           f"got {counts.size}")
    index = np.repeat(np.arange(x.shape[d]), counts if counts.size > 1 else int(counts[0]))
    return T.index_select(x, d, T.tensor(index.astype(np.int64)))


def _values_of(mask):
    values = mask.numpy() if isinstance(mask, Tensor) else np.asarray(mask)
    return values


@_method()
def nonzero(x, *, as_tuple=False):
    """The indices of the nonzero elements, (count, ndim) int64 in row-major order (a tuple of
    ndim 1-D tensors with as_tuple), as torch.nonzero; reads x's values (a wait)."""
    where = np.nonzero(_values_of(x))
    if as_tuple:
        return tuple(T.tensor(w.astype(np.int64)) for w in where)
    return T.tensor(np.stack(where, 1).astype(np.int64).reshape(-1, x.ndim))


@_method()
def argwhere(x):
    """nonzero(x): (count, ndim) int64 indices of the nonzero elements."""
    return nonzero(x)


@_method()
def masked_select(x, mask):
    """The elements of x (broadcast with mask) where mask is True, as a 1-D tensor in row-major
    order, as torch.masked_select; reads the mask (a wait); carries x's gradient."""
    m = _values_of(mask).astype(bool)
    shape = np.broadcast_shapes(tuple(x.shape), m.shape)
    flat = T.reshape(T.broadcast_to(x, shape) if tuple(x.shape) != shape else x, -1)
    index = np.flatnonzero(np.broadcast_to(m, shape)).astype(np.int64)
    return T.index_select(flat, 0, T.tensor(index))


def einsum(equation, *operands):
    """Einstein summation, as torch.einsum ("bhqd,bhkd->bhqk", with "..." and the implicit
    output of the letters used once, in order): a letter repeated within one operand takes that
    operand's diagonal first ("ii->" is the trace, "ii->i" the diagonal), each operand then sums
    the letters no one else needs, and pairs are joined left to right by one batched matrix
    product each (permute, reshape, matmul)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {len(terms)} operands in the equation, {len(operands)} given")
    # "..." becomes upper-case letters, as many as the operand's extra axes
    width = builtins.max((t.ndim - (len(s) - 3) for s, t in zip(terms, operands) if "..." in s), default=0)
    ell = "".join(chr(ord("A") + i) for i in range(width))
    terms = [s.replace("...", ell[width - (t.ndim - (len(s) - 3)):]) if "..." in s else s for s, t in zip(terms, operands)]
    for s, t in zip(terms, operands):
        if len(s) != t.ndim:
            raise ValueError(f"einsum(): the subscript {s!r} has {len(s)} letters for an operand of {t.ndim} dims")
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    terms, operands = list(terms), list(operands)
    for k, (s, t) in enumerate(zip(terms, operands)):
        while len(set(s)) != len(s):  # a repeated letter: the diagonal over its two axes (moved last)
            c = next(c for c in s if s.count(c) > 1)
            i = s.index(c)
            j = s.index(c, i + 1)
            if t.shape[i] != t.shape[j]:
                raise ValueError(f"einsum(): subscript {c!r} is repeated for operand {k} but the sizes don't match, "
                                 f"{t.shape[i]} != {t.shape[j]}")
            t = diagonal(t, 0, i, j)
            s = s[:i] + s[i + 1:j] + s[j + 1:] + c
        terms[k], operands[k] = s, t
    sizes = {}
    for s, t in zip(terms, operands):
        for c, n in zip(s, t.shape):
            if sizes.get(c, n) != n and 1 not in (sizes[c], n):
                raise ValueError(f"einsum(): letter {c!r} has sizes {sizes[c]} and {n}")
            if sizes.get(c, 1) == 1:  # (a size 1 broadcasts to the other, 0 included)
                sizes[c] = n

    def reduce_unused(s, t, keep):  # sum the letters nobody else needs
        drop = [i for i, c in enumerate(s) if c not in keep]
        if drop:
            t = T.sum(t, tuple(drop))
            s = "".join(c for c in s if c in keep)
        return s, t

    items = list(zip(terms, operands))
    s, t = reduce_unused(*items[0], set(out) | set("".join(x for x, _ in items[1:])))
    for k in range(1, len(items)):
        later = set(out) | set("".join(x for x, _ in items[k + 1:]))
        s2, t2 = reduce_unused(*items[k], later | set(s))
        s, t = _contract(s, t, s2, t2, later, sizes)
    s, t = reduce_unused(s, t, set(out))
    if s != out:
        t = T.permute(t, *[s.index(c) for c in out]) if len(out) > 1 else t
    return t


def _contract(s1, t1, s2, t2, keep, sizes):
    """t1 (letters s1) and t2 (s2) multiplied, summing the shared letters not in `keep`: one
    batched matmul of (batch, left, summed) by (batch, summed, right)."""
    batch = [c for c in s1 if c in s2 and c in keep]
    summed = [c for c in s1 if c in s2 and c not in keep]
    left = [c for c in s1 if c not in s2]
    right = [c for c in s2 if c not in s1]

    def arrange(s, t, first, second, third):
        order = first + second + third
        t = T.permute(t, *[s.index(c) for c in order]) if order != list(s) else t
        shape = [sizes[c] for c in order]
        t = T.broadcast_to(t, shape) if list(t.shape) != shape else t
        return T.reshape(t, math.prod(sizes[c] for c in first), math.prod(sizes[c] for c in second),
                         math.prod(sizes[c] for c in third))

    if not summed and t1.dtype != t2.dtype:  # a product without a sum: PyTorch's mul, promoting
        d = _dt.promote_types(t1.dtype, t2.dtype)
        t1, t2 = T.cast(t1, d), T.cast(t2, d)
    a = arrange(s1, t1, batch, left, summed)
    b = arrange(s2, t2, batch, summed, right)
    product = T.matmul(a, b)  # (batch, left, right)
    letters = batch + left + right
    return "".join(letters), T.reshape(product, *[sizes[c] for c in letters]) if letters else T.reshape(product, ())
