"""torch._dynamo's switches that scripts set around torch.compile: accepted and read back.
GT's compile (gt.compile) does not trace Python, so they change nothing: `config` takes any
attribute (`torch._dynamo.config.suppress_errors = True`, `cache_size_limit = 64`), `reset()`
does nothing, and `disable` / `allow_in_graph` return what they are given."""
import types

config = types.SimpleNamespace(suppress_errors=False, cache_size_limit=8, verbose=False,
                               capture_scalar_outputs=False, optimize_ddp=True)


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
