"""functorch, the package torch.func grew from (`import functorch` under gt.as_torch):
grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call (gt.func's), and
its older module API:

    func, params = make_functional(model)                       # func(params, *args)
    func, params, buffers = make_functional_with_buffers(model)  # func(params, buffers, *args)

params and buffers are tuples in named_parameters() / named_buffers() order (the model's own
tensors, detached copies need not be made: calls of func leave the model unchanged); func
calls the model with them in place of its own, through gt.func.functional_call.
"""
from .func import functional_call, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp, vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call",
           "make_functional", "make_functional_with_buffers"]


class FunctionalModule:
    """func(params, *args, **kwargs): the model called with `params` (a sequence in
    named_parameters() order) in place of its parameters."""

    def __init__(self, model, names):
        self.model, self.names = model, names

    def __call__(self, params, *args, **kwargs):
        return functional_call(self.model, dict(zip(self.names, params)), args, kwargs)


class FunctionalModuleWithBuffers:
    """func(params, buffers, *args, **kwargs), as FunctionalModule with the buffers too."""

    def __init__(self, model, names, buffer_names):
        self.model, self.names, self.buffer_names = model, names, buffer_names

    def __call__(self, params, buffers, *args, **kwargs):
        values = dict(zip(self.names, params))
        values.update(zip(self.buffer_names, buffers))
        return functional_call(self.model, values, args, kwargs)


def make_functional(model, disable_autograd_tracking=False):
    """(func, params): see the module's docstring. disable_autograd_tracking gives params that
    do not require grad (detached)."""
    names, params = _named(model.named_parameters(), disable_autograd_tracking)
    return FunctionalModule(model, names), params


def make_functional_with_buffers(model, disable_autograd_tracking=False):
    """(func, params, buffers): see the module's docstring."""
    names, params = _named(model.named_parameters(), disable_autograd_tracking)
    buffer_names, buffers = _named(model.named_buffers(), False)
    return FunctionalModuleWithBuffers(model, names, buffer_names), params, buffers


def _named(pairs, detach):
    pairs = list(pairs)
    return [n for n, _ in pairs], tuple(t.detach() if detach else t for _, t in pairs)
