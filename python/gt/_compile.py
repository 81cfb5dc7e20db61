"""gt.compile: where scripts call torch.compile.

GT already compiles: the dispatcher groups runs of fusible ops into regions and a worker
compiles a region once it has been seen GT_HOT_AFTER times (docs/jit.md). gt.compile makes the
regions of everything the model or function issues hot the first time they are seen, as a
`compile: true` signal of a sharding config does: calls run under the signal `gt_compile`,
whose entry (`compile: true`, nothing else) is appended to the session's config.
"""
import functools

from . import _runtime
from . import signal as _signal


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """For a gt.nn.Module, an OptimizedModule wrapping it, as torch.compile returns (the
    model's calls, and the gradients of what they issue, now compile their fused regions at
    once); for a function, a wrapper that does the same. With no model, a decorator. The other arguments are
    torch.compile's, accepted and ignored (disable=True returns `model` unchanged). A signal
    that a loaded sharding config names, issued inside the model, takes precedence (the
    innermost configured signal applies), so those regions follow that entry's `compile:`."""
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if disable:
        return model
    if not callable(model):
        raise TypeError(f"gt.compile expects a Module or a function, got {type(model).__name__}")
    _runtime.enable_compile_signal()
    from .nn.modules import Module, OptimizedModule
    if isinstance(model, Module):
        model._call_state()["compiled"] = True
        return OptimizedModule(model)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        with _signal.context(_runtime.COMPILE_SIGNAL):
            return model(*args, **kwargs)

    return compiled

