"""Reverse-mode autograd: the tape lives on the tensors, the formulas in one table.

Each op that needs a gradient stores a Node on its output: its backward function, inputs,
attributes and signal. The backward functions are generated from the op spec's derivative
formulas (ops/*.yaml -> python/gt/_ops.py, which fills `formulas`); each takes (grad_output,
output, inputs, attrs) and returns one gradient (or None) per input, already reduced to that
input's shape when the op broadcast it. The helpers the formulas call are in gt._derivatives.
"""
import contextlib
import threading

from . import _derivatives, _runtime

_state = threading.local()
formulas = {}  # op name -> backward function; filled by gt._ops from the spec's `grad:` formulas


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


def identity_backward(g, result, inputs, attrs):
    return (g,)


# ---------------------------------------------------------------- the backward pass

def backward(root, gradient, retain_graph=False):
    """Accumulates d(root)/d(leaf) * gradient into the `.grad` of every leaf above root (a
    tensor that requires grad; `gradient` has root's shape). Tensor.backward checks both."""
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
    with no_grad(), _runtime.gradient_signals() as use_signal:
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if type(g) is _derivatives.SliceGrad:
                g = _derivatives.materialize(g)  # the gradients of slices of t, joined
            node = t._node
            if node is None:  # a leaf: accumulate
                t.grad = g if t.grad is None else t.grad + g
                continue
            # Gradient ops carry the forward op's signal, marked as backward (gt.signal).
            use_signal(node.signal)
            for inp, ig in zip(node.inputs, node.backward(g, t, node.inputs, node.attrs)):
                if ig is None or not inp.requires_grad:
                    continue
                k = id(inp)
                total = grads.get(k)
                grads[k] = ig if total is None else _accumulate(total, ig)
            if not retain_graph:
                t._node = _FREED  # release the saved tensors


def _accumulate(total, g):
    """total + g, either of them possibly a slice's lazy gradient (gt._derivatives.SliceGrad)."""
    if total is None:
        return g
    if isinstance(total, _derivatives.SliceGrad) or isinstance(g, _derivatives.SliceGrad):
        return _derivatives.SliceGrad.add(total, g)
    return total + g


def _freed(*args):
    raise RuntimeError("Trying to backward through the graph a second time; pass retain_graph=True "
                       "to the first backward() if you need to")


_FREED = Node(_freed, (), None, None)  # a node whose saved tensors backward released
