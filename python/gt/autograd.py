"""Reverse-mode autograd: the tape lives on the tensors, the formulas in one table.

Each op that needs a gradient stores a Node on its output: its backward function, inputs,
attributes and signal. The backward functions are generated from the op spec's derivative
formulas (ops/*.yaml -> python/gt/_ops.py); each takes (grad_output, output, inputs, attrs) and
returns one gradient (or None) per input, already reduced to that input's shape when the op
broadcast it.
"""
import contextlib
import threading

_state = threading.local()


def is_grad_enabled():
    return getattr(_state, "enabled", True)


@contextlib.contextmanager
def _grad_mode(enabled):
    previous = is_grad_enabled()
    _state.enabled = enabled
    try:
        yield
    finally:
        _state.enabled = previous


def no_grad():
    """Context manager: ops inside record no history (for updates and evaluation)."""
    return _grad_mode(False)


def enable_grad():
    """Context manager (or decorator): ops inside record history even under no_grad."""
    return _grad_mode(True)


def set_grad_enabled(mode):
    return _grad_mode(bool(mode))


# ---------------------------------------------------------------- the tape

class Node:
    """How a tensor was made, for the backward pass: `backward(g, result, inputs, attrs)` gives
    one gradient (or None) per input; `attrs` are the op's attributes by their spec names;
    `signal` is the gt.signal active when it ran (its gradient ops carry it, as backward)."""
    __slots__ = ("backward", "inputs", "attrs", "signal")

    def __init__(self, backward, inputs, attrs, signal):
        self.backward = backward
        self.inputs = inputs
        self.attrs = attrs
        self.signal = signal


# ---------------------------------------------------------------- helpers of the formulas
# The derivative formulas live in the op spec (`grad:` in ops/*.yaml); ops/generate.py turns
# them into python/gt/_ops.py's BACKWARD table. These are the helpers they may call besides
# ops (ops/generate.py lists them, with the same meaning, for the C++ derivative table).

def _t():
    from . import _tensor as tensor
    return tensor


def unbroadcast(g, x):
    """g summed over the axes NumPy broadcasting added or stretched, giving x's shape (x a
    Tensor or a shape)."""
    shape = tuple(x.shape) if hasattr(x, "shape") else tuple(x)
    if g.shape == shape:
        return g
    T = _t()
    lead = g.ndim - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    return T.reshape(T.sum(g, axes, keepdim=True), shape)


def cast_like(a, b):
    """a converted to b's dtype."""
    return a.to(b.dtype)


def sign(x):
    """-1, 0 or 1 by the sign of x, in x's dtype."""
    T = _t()
    return T.where(x > 0, 1.0, T.where(x < 0, -1.0, 0.0)).to(x.dtype)


def zeros_like(x):
    """Zeros of x's shape and dtype."""
    return _t().zeros(x.shape, dtype=x.dtype)


def mT(x):
    """x with its last two axes swapped."""
    return _t().transpose(x, -1, -2)


def inverse_perm(perm):
    """The permutation that undoes `perm`."""
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def expand_reduced(g, x, axes, keepdims):
    """A reduction's output gradient g, broadcast back over the reduced axes of x."""
    T = _t()
    if not keepdims:
        g = T.reshape(g, tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    if g.dtype != x.dtype and x.dtype.is_floating_point:
        g = g.to(x.dtype)
    return T.broadcast_to(g, x.shape)


def reduced_count(x, axes):
    """How many elements of x a reduction over `axes` combines into each result (a float)."""
    count = 1
    for a in axes:
        count *= x.shape[a]
    return float(count)


def extremum_grad(g, result, x, axes, keepdims):
    """amax/amin: the gradient goes to the elements equal to the result, shared evenly between
    ties (as PyTorch)."""
    T = _t()
    m = result if keepdims else T.reshape(result, tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    mask = (x == m.detach()).to(x.dtype)
    mask = mask / T.sum(mask, axes, keepdim=True)
    return expand_reduced(g, x, axes, keepdims) * mask


def split_as(g, tensors, axis):
    """g cut along `axis` into pieces the sizes of `tensors` along it."""
    return _t().split(g, [t.shape[axis] for t in tensors], axis)


def identity_backward(g, result, inputs, attrs):
    return (g,)


# ---------------------------------------------------------------- the backward pass

def backward(root, gradient=None, retain_graph=False):
    T = _t()
    if not root.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    if gradient is None:
        if root.numel() != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs (shape {root.shape})")
        gradient = T.ones(root.shape, dtype=root.dtype)
    elif not isinstance(gradient, T.Tensor):
        gradient = T.tensor(gradient, dtype=root.dtype)
    if gradient.shape != root.shape:
        raise ValueError(f"gradient has shape {gradient.shape}, expected {root.shape}")

    # Topological order of the graph above root (iterative DFS: deep graphs are fine).
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        stack.append((t, True))
        if t._node is not None:
            for i in t._node.inputs:
                if i.requires_grad and id(i) not in seen:
                    stack.append((i, False))

    grads = {id(root): gradient}
    with no_grad():
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._node is None:  # a leaf: accumulate
                t.grad = g if t.grad is None else t.grad + g
                continue
            node = t._node
            # Gradient ops carry the forward op's signal, marked as backward (gt.signal).
            with _signal_for(node.signal):
                for inp, ig in zip(node.inputs, node.backward(g, t, node.inputs, node.attrs)):
                    if ig is None or not inp.requires_grad:
                        continue
                    k = id(inp)
                    grads[k] = ig if k not in grads else grads[k] + ig
            if not retain_graph:
                t._node = Node(_freed, (), None, None)  # release the saved tensors


def _signal_for(node_signal):
    from . import signal
    if (node_signal is None or node_signal[0] is None) and signal.current()[0] is None:
        return contextlib.nullcontext()
    return signal._for_gradient(node_signal if node_signal and node_signal[0] else (None, None))


def _freed(*args):
    raise RuntimeError("Trying to backward through the graph a second time; pass retain_graph=True "
                       "to the first backward() if you need to")
