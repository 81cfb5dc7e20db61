"""torch._dynamo's switches that scripts set around torch.compile: accepted and read back.
GT's compile (gt.compile) does not trace Python, so they change nothing: `config` takes any
attribute (`torch._dynamo.config.suppress_errors = True`, `cache_size_limit = 64`), `reset()`
does nothing, and `disable` / `allow_in_graph` return what they are given."""
import sys
import types

__path__ = []  # (a package, so that `import torch.X.config` finds its config below)
# A module of its own, so that `import torch._dynamo.config` works too.
config = types.ModuleType("gt._dynamo.config", "torch._dynamo.config: any attribute is accepted and read back.")
config.__dict__.update(suppress_errors=False, cache_size_limit=8, verbose=False, capture_scalar_outputs=False,
                       optimize_ddp=True)
sys.modules[config.__name__] = config


class _TransformGetItemToIndex:
    """torch._dynamo._trace_wrapped_higher_order_op.TransformGetItemToIndex: a context under which
    PyTorch's vmap indexes a tensor with a 0-d tensor as with an int; GT's vmap does so anyway,
    so it changes nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_trace_wrapped_higher_order_op = types.ModuleType("gt._dynamo._trace_wrapped_higher_order_op",
                                                  _TransformGetItemToIndex.__doc__)
_trace_wrapped_higher_order_op.TransformGetItemToIndex = _TransformGetItemToIndex
sys.modules[_trace_wrapped_higher_order_op.__name__] = _trace_wrapped_higher_order_op


def assume_constant_result(fn):
    """fn itself (GT does not trace Python, so nothing is assumed)."""
    return fn


def mark_static_address(tensor, guard=True):
    """Nothing: GT keeps no traced graphs whose guards this would change."""


def reset():
    """Nothing to reset: GT keeps no traced graphs."""


def disable(fn=None, recursive=True):
    """fn itself (as a decorator with or without arguments)."""
    return fn if fn is not None else (lambda f: f)


def allow_in_graph(fn):
    return fn


def mark_dynamic(tensor, index, **kwargs):
    """Nothing: GT's eager kernels take any size already."""


def is_compiling():
    """As gt.compiler.is_compiling."""
    from .compiler import is_compiling as _is_compiling
    return _is_compiling()


def _eval_frame_attribute(name):
    if name == "OptimizedModule":
        from .nn.modules import OptimizedModule
        return OptimizedModule
    raise AttributeError(f"module 'gt._dynamo.eval_frame' has no attribute {name!r}")


# torch._dynamo.eval_frame, for `isinstance(model, torch._dynamo.eval_frame.OptimizedModule)`
eval_frame = types.ModuleType("gt._dynamo.eval_frame", "OptimizedModule: what gt.compile(model) returns.")
eval_frame.__getattr__ = _eval_frame_attribute
sys.modules[eval_frame.__name__] = eval_frame


def __getattr__(name):  # torch._dynamo.OptimizedModule (gt.nn imports this module's importer)
    return _eval_frame_attribute(name)
