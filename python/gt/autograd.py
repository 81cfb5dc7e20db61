"""Reverse-mode autograd: the tape lives on the tensors, the formulas in one table.

Each op that needs a gradient stores `(backward_fn, inputs, saved)` on its output. A
backward_fn takes (grad_output, output, inputs, saved) and returns one gradient (or None) per
input, already reduced to that input's shape when the op broadcast it.
"""
import contextlib
import math
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


# ---------------------------------------------------------------- the formulas

def _t():
    from . import _tensor as tensor
    return tensor


def unbroadcast(g, shape):
    """Sums `g` over the axes NumPy broadcasting added or stretched, giving `shape`."""
    if g.shape == tuple(shape):
        return g
    T = _t()
    lead = g.ndim - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    return T.reshape(T.sum(g, axes, keepdim=True), tuple(shape))


def add_backward(g, out, inputs, saved):
    a, b = inputs
    return unbroadcast(g, a.shape), unbroadcast(g, b.shape)


def sub_backward(g, out, inputs, saved):
    a, b = inputs
    return unbroadcast(g, a.shape), unbroadcast(-g, b.shape)


def mul_backward(g, out, inputs, saved):
    a, b = inputs
    return (unbroadcast(g * b, a.shape) if a.requires_grad else None,
            unbroadcast(g * a, b.shape) if b.requires_grad else None)


def div_backward(g, out, inputs, saved):
    a, b = inputs
    return (unbroadcast(g / b, a.shape) if a.requires_grad else None,
            unbroadcast(-g * out / b, b.shape) if b.requires_grad else None)


def pow_backward(g, out, inputs, saved):
    a, b = inputs
    T = _t()
    return (unbroadcast(g * b * T.pow(a, b - 1), a.shape) if a.requires_grad else None,
            unbroadcast(g * out * T.log(a), b.shape) if b.requires_grad else None)


def _pick_backward(g, a, b, a_wins):
    # maximum/minimum: the gradient goes to the chosen input; ties split it evenly (PyTorch).
    T = _t()
    wa = T.where(a_wins, 1.0, T.where(a == b, 0.5, 0.0))
    return unbroadcast(g * wa, a.shape), unbroadcast(g * (1.0 - wa), b.shape)


def maximum_backward(g, out, inputs, saved):
    a, b = inputs
    return _pick_backward(g, a, b, a > b)


def minimum_backward(g, out, inputs, saved):
    a, b = inputs
    return _pick_backward(g, a, b, a < b)


def remainder_backward(g, out, inputs, saved):
    # a - floor(a / b) * b: d/da = 1, d/db = -floor(a / b)
    a, b = inputs
    T = _t()
    return (unbroadcast(g, a.shape) if a.requires_grad else None,
            unbroadcast(-g * T.floor_divide(a, b), b.shape) if b.requires_grad else None)


def identity_backward(g, out, inputs, saved):
    return (g,)


def where_backward(g, out, inputs, saved):
    c, a, b = inputs
    T = _t()
    zero = T.zeros((), dtype=g.dtype)
    return None, unbroadcast(T.where(c, g, zero), a.shape), unbroadcast(T.where(c, zero, g), b.shape)


UNARY_BACKWARD = {
    "neg": lambda g, out, i, s: (-g,),
    "exp": lambda g, out, i, s: (g * out,),
    "log": lambda g, out, i, s: (g / i[0],),
    "sqrt": lambda g, out, i, s: (g / (2.0 * out),),
    "relu": lambda g, out, i, s: (g * (i[0] > 0).to(g.dtype),),
    "sigmoid": lambda g, out, i, s: (g * out * (1.0 - out),),
    "tanh": lambda g, out, i, s: (g * (1.0 - out * out),),
    "abs": lambda g, out, i, s: (g * _sign(i[0]),),
    "log1p": lambda g, out, i, s: (g / (1.0 + i[0]),),
    "rsqrt": lambda g, out, i, s: (g * -0.5 * out * out * out,),
    "sin": lambda g, out, i, s: (g * _t().cos(i[0]),),
    "cos": lambda g, out, i, s: (-g * _t().sin(i[0]),),
    "erf": lambda g, out, i, s: (g * (2.0 / math.sqrt(math.pi)) * _t().exp(-i[0] * i[0]),),
    # d/dx x Phi(x) = Phi(x) + x phi(x)
    "gelu": lambda g, out, i, s: (g * (0.5 * (1.0 + _t().erf(i[0] * (1.0 / math.sqrt(2.0))))
                                       + i[0] * (1.0 / math.sqrt(2.0 * math.pi)) * _t().exp(-0.5 * i[0] * i[0])),),
    "floor": lambda g, out, i, s: (g * 0.0,),
}


def _sign(x):
    T = _t()
    return T.where(x > 0, 1.0, T.where(x < 0, -1.0, 0.0)).to(x.dtype)


def cast_backward(g, out, inputs, saved):
    a = inputs[0]
    return (g.to(a.dtype) if a.dtype.is_floating_point else None,)


def matmul_backward(g, out, inputs, saved):
    # (..., m, k) @ (..., k, n): dA = g @ B^T, dB = A^T @ g, summed over broadcast batch axes.
    a, b = inputs
    T = _t()
    return (unbroadcast(T.matmul(g, T.transpose(b, -1, -2)), a.shape) if a.requires_grad else None,
            unbroadcast(T.matmul(T.transpose(a, -1, -2), g), b.shape) if b.requires_grad else None)


def transpose_backward(g, out, inputs, saved):
    inverse = [0] * len(saved)
    for i, p in enumerate(saved):
        inverse[p] = i
    return (_t().permute(g, *inverse),)


def reshape_backward(g, out, inputs, saved):
    return (_t().reshape(g, inputs[0].shape),)


def broadcast_backward(g, out, inputs, saved):
    return (unbroadcast(g, inputs[0].shape),)


def _expand_reduced(g, x, axes, keepdims):
    """A reduction's output gradient, broadcast back over the reduced axes of x."""
    T = _t()
    if not keepdims:
        g = T.reshape(g, tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    if g.dtype != x.dtype and x.dtype.is_floating_point:
        g = g.to(x.dtype)
    return T.broadcast_to(g, x.shape)


def sum_backward(g, out, inputs, saved):
    axes, keepdims = saved
    return (_expand_reduced(g, inputs[0], axes, keepdims),)


def mean_backward(g, out, inputs, saved):
    axes, keepdims = saved
    x = inputs[0]
    count = 1
    for a in axes:
        count *= x.shape[a]
    return (_expand_reduced(g / float(count), x, axes, keepdims),)


def extremum_backward(g, out, inputs, saved):
    # amax/amin: ties share the gradient evenly, as PyTorch.
    axes, keepdims = saved
    x = inputs[0]
    T = _t()
    m = out if keepdims else T.reshape(out, tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    mask = (x == m.detach()).to(x.dtype)
    mask = mask / T.sum(mask, axes, keepdim=True)
    return (_expand_reduced(g, x, axes, keepdims) * mask,)


def slice_backward(g, out, inputs, saved):
    starts, steps = saved
    x = inputs[0]
    T = _t()
    zeros = T.zeros(x.shape, dtype=g.dtype)
    return (T._emit_attrs("slice_scatter", (zeros, g), starts=starts, steps=steps,
                          backward=slice_scatter_backward, saved=saved),)


def slice_scatter_backward(g, out, inputs, saved):
    # base gets g outside the window, source gets the window of g
    starts, steps = saved
    base, src = inputs
    T = _t()
    window = T._slice(g, starts, steps, src.shape)
    hole = None
    if base.requires_grad:
        hole = T._emit_attrs("slice_scatter", (g, T.zeros(src.shape, dtype=g.dtype)), starts=starts, steps=steps)
    return hole, window


def concat_backward(g, out, inputs, saved):
    T = _t()
    return T.split(g, [t.shape[saved] for t in inputs], saved)


def index_select_backward(g, out, inputs, saved):
    x, idx = inputs
    return _t().index_add_zeros(x.shape, saved, idx, g), None


def index_add_backward(g, out, inputs, saved):
    idx, src = inputs
    return None, _t().index_select(g, saved, idx)


def gather_backward(g, out, inputs, saved):
    x, idx = inputs
    return _t().scatter_add_zeros(x.shape, saved, idx, g), None


def scatter_add_backward(g, out, inputs, saved):
    idx, src = inputs
    return None, _t().gather(g, saved, idx)


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
            for i in t._node[1]:
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
            fn, inputs, saved = t._node[:3]
            # Gradient ops carry the forward op's signal, marked as backward (gt.signal).
            with _signal_for(t._node[3] if len(t._node) > 3 else None):
                for inp, ig in zip(inputs, fn(g, t, inputs, saved)):
                    if ig is None or not inp.requires_grad:
                        continue
                    k = id(inp)
                    grads[k] = ig if k not in grads else grads[k] + ig
            if not retain_graph:
                t._node = (_freed, (), None)  # release the saved tensors


def _signal_for(node_signal):
    from . import signal
    if node_signal is None and signal.current()[0] is None:
        return contextlib.nullcontext()
    return signal._for_gradient(node_signal or (None, None))


def _freed(*args):
    raise RuntimeError("Trying to backward through the graph a second time; pass retain_graph=True "
                       "to the first backward() if you need to")
