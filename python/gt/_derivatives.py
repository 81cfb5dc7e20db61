"""The helpers the op spec's derivative formulas may call besides ops (`grad:` in ops/*.yaml;
ops/generate.py lists them, with the same meaning, for the C++ derivative table). Each takes
and returns gt Tensors; they are built on gt._tensor alone, since the generated formulas
(gt._ops) sit below the hand-written functions."""
from . import _tensor as T
from . import _runtime


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


def matmul_rhs_grad(lhs, g, rhs):
    """The gradient of matmul's rhs: lhs^T @ g summed over the batch axes broadcasting added.
    When rhs is one (k, n) matrix that every batch element of a (..., m, k) lhs multiplied, it
    is one product over all of lhs's rows, (k, N) @ (N, n) with N the product of lhs's leading
    axes (as PyTorch's matmul backward folds them), instead of a batch of (k, m) @ (m, n)
    products summed afterwards: for char_gpt's tied output head, one GEMM with N = 2048 rows
    instead of 32 of 64 rows and a sum."""
    if rhs.ndim == 2 and lhs.ndim > 2:
        rows = 1
        for size in lhs.shape[:-1]:
            rows *= size
        rows_lhs = _reshaped(lhs, (rows, lhs.shape[-1]))
        rows_g = _reshaped(g, (rows, g.shape[-1]))
        return T.matmul(rows_lhs.mT, rows_g)  # the .mT is free on a CPU worker: a transposed GEMM operand
    return unbroadcast(T.matmul(lhs.mT, g), rhs)


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


def slice_grad(g, x, starts, steps):
    """gt.slice's gradient: zeros of x's shape and dtype with g in the window (starts, steps).
    Kept as a SliceGrad, which autograd.backward materializes: the gradients of disjoint
    windows of one tensor (split, chunk, unbind, x[:, :k] and x[:, k:]) add up to one concat."""
    return SliceGrad(tuple(x.shape), x.dtype, [(g, tuple(starts), tuple(steps))])


class SliceGrad:
    """A gradient that is zero but in disjoint strided windows: `pieces` [(g, starts, steps)]
    of a tensor of `shape` and `dtype`. Sums of these stay lazy while their windows do not
    overlap; `tensor()` builds the result: where every window is a full slab along one axis
    (the pieces of a split), the concat of the pieces with zeros in the gaps, as PyTorch's
    split backward does; otherwise zeros with each window written in (gt.slice_scatter)."""
    __slots__ = ("shape", "dtype", "pieces", "signal")

    def __init__(self, shape, dtype, pieces):
        self.shape, self.dtype, self.pieces = shape, dtype, pieces
        self.signal = _runtime.client().signal()  # what the gradient ops carry

    @staticmethod
    def add(a, b):
        """a + b, either or both a SliceGrad (lazy while both are and their windows are disjoint)."""
        if isinstance(a, SliceGrad) and isinstance(b, SliceGrad) and a.shape == b.shape and a.dtype == b.dtype \
                and a.signal == b.signal and all(_disjoint(p, q) for p in a.pieces for q in b.pieces):
            return SliceGrad(a.shape, a.dtype, a.pieces + b.pieces)
        return materialize(a) + materialize(b)

    def tensor(self):
        c = _runtime.client()
        previous = c.signal()
        if previous != self.signal:
            c.set_signal(*self.signal)
        try:
            return self._build()
        finally:
            if previous != self.signal:
                c.set_signal(*previous)

    def _build(self):
        axis = self._slab_axis()
        if axis is None:
            out = T.zeros(self.shape, dtype=self.dtype)
            for g, starts, steps in self.pieces:
                out = T._op("slice_scatter", out, g, starts=list(starts), steps=list(steps))
            return out
        parts, at = [], 0
        for g, starts, _ in sorted(self.pieces, key=lambda p: p[1][axis]):
            if starts[axis] > at:
                parts.append(self._zeros(axis, starts[axis] - at))
            parts.append(g if g.dtype == self.dtype else g.to(self.dtype))
            at = starts[axis] + g.shape[axis]
        if at < self.shape[axis]:
            parts.append(self._zeros(axis, self.shape[axis] - at))
        from ._functions import cat  # (above this module: imported when a gradient is built)
        return cat(parts, axis)

    def _slab_axis(self):
        """The axis along which every window is a full slab (unit step, whole extent on every
        other axis), or None."""
        for axis in range(len(self.shape)):
            if all(all(s == 1 for s in steps) and
                   all(d == axis or (starts[d] == 0 and g.shape[d] == self.shape[d]) for d in range(len(self.shape)))
                   for g, starts, steps in self.pieces):
                return axis
        return None

    def _zeros(self, axis, n):
        shape = list(self.shape)
        shape[axis] = n
        return T.zeros(tuple(shape), dtype=self.dtype)


def materialize(g):
    """g as a Tensor (a SliceGrad built; anything else as is)."""
    return g.tensor() if isinstance(g, SliceGrad) else g


def _disjoint(p, q):
    """Whether two windows (g, starts, steps) share no element: on some axis their spans
    [start, start + (size - 1) * step] do not meet."""
    (g, s1, t1), (h, s2, t2) = p, q
    for d in range(len(s1)):
        if g.shape[d] == 0 or h.shape[d] == 0:
            return True
        if s1[d] + (g.shape[d] - 1) * t1[d] < s2[d] or s2[d] + (h.shape[d] - 1) * t2[d] < s1[d]:
            return True
    return False
