"""What the Python autograd keeps of the derivative formulas, which run in the client core
(lib/Client/Autograd.cpp, from the derivative table): slice_grad's lazy gradient (SliceGrad),
which the backward pass joins, and unbroadcast for the hand-written backward functions."""
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


def _reshaped(x, shape):
    return x if x.shape == tuple(shape) else T._op("reshape", x, shape=tuple(shape))


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

