"""torch.autograd.function: Function, FunctionCtx and once_differentiable.

    @staticmethod
    @once_differentiable
    def backward(ctx, g): ...

once_differentiable marks a custom Function's backward as not differentiable itself (it may
use non-differentiable code, NumPy for instance): it runs without recording, and when its
gradients are asked for with create_graph=True (a second derivative, gt.func.jacfwd, hessian),
differentiating them raises RuntimeError, as in PyTorch, instead of giving zeros.
"""
import functools

from . import Function, FunctionCtx, Node, is_grad_enabled, no_grad
from .. import _runtime

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


def _twice(*args):
    raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(backward):
    """backward run without recording; with create_graph its gradients raise when differentiated."""
    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        from .._tensor import Tensor
        with no_grad():
            result = backward(ctx, *grad_outputs)
        recorded = tuple(g for g in grad_outputs if isinstance(g, Tensor) and g.requires_grad)
        if not (is_grad_enabled() and recorded):
            return result
        single = not isinstance(result, tuple)
        marked = []
        for r in ((result,) if single else result):
            if isinstance(r, Tensor) and r.dtype.is_floating_point:
                r = r.detach()
                r.requires_grad = True
                r._node = Node(_twice, recorded, None, _runtime.current_signal())
            marked.append(r)
        return marked[0] if single else tuple(marked)
    return wrapper
