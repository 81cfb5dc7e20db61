"""The helpers the op spec's derivative formulas may call besides ops (`grad:` in ops/*.yaml;
ops/generate.py lists them, with the same meaning, for the C++ derivative table). Each takes
and returns gt Tensors; they are built on gt._tensor alone, since the generated formulas
(gt._ops) sit below the hand-written functions."""
from . import _tensor as T


def unbroadcast(g, x):
    """g summed over the axes NumPy broadcasting added or stretched, giving x's shape (x a
    Tensor or a shape)."""
    shape = tuple(x.shape) if hasattr(x, "shape") else tuple(x)
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    return _reshaped(T._op("sum", g, axes=axes, keepdims=True), shape)


def cast_like(a, b):
    """a converted to b's dtype."""
    return a.to(b.dtype)


def sign(x):
    """-1, 0 or 1 by the sign of x, in x's dtype."""
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)


def zeros_like(x):
    """Zeros of x's shape and dtype."""
    return T.zeros(x.shape, dtype=x.dtype)


def mT(x):
    """x with its last two axes swapped."""
    return x.mT


def inverse_perm(perm):
    """The permutation that undoes `perm`."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def expand_reduced(g, x, axes, keepdims):
    """A reduction's output gradient g, broadcast back over the reduced axes of x."""
    if not keepdims:
        g = _reshaped(g, tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    if g.dtype != x.dtype and x.dtype.is_floating_point:
        g = g.to(x.dtype)
    return g.expand_as(x)


def reduced_count(x, axes):
    """How many elements of x a reduction over `axes` combines into each result (a float)."""
    count = 1
    for a in axes:
        count *= x.shape[a]
    return float(count)


def extremum_grad(g, result, x, axes, keepdims):
    """amax/amin: the gradient goes to the elements equal to the result, shared evenly between
    ties (as PyTorch)."""
    m = result if keepdims else _reshaped(result, tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    mask = (x == m.detach()).to(x.dtype)
    mask = mask / T._op("sum", mask, axes=list(axes), keepdims=True)
    return expand_reduced(g, x, axes, keepdims) * mask


def split_as(g, tensors, axis):
    """g cut along `axis` into pieces the sizes of `tensors` along it."""
    pieces, start = [], 0
    for t in tensors:
        starts, steps, shape = [0] * g.ndim, [1] * g.ndim, list(g.shape)
        starts[axis], shape[axis] = start, t.shape[axis]
        pieces.append(T._op("slice", g, shape=shape, starts=starts, steps=steps))
        start += t.shape[axis]
    return pieces


def _reshaped(x, shape):
    return x if x.shape == tuple(shape) else T._op("reshape", x, shape=tuple(shape))
