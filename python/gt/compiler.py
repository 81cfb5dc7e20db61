"""torch.compiler: the switches scripts use around torch.compile (gt.compile).

GT's compile does not trace Python (it makes a model's fused regions hot: see gt._compile), so:
`is_compiling()` is True while a gt.compile'd function or module runs (PyTorch's is True
while it traces one, the same code paths), unless the stance is "force_eager"; `set_stance`
sets that stance (a function, a context manager or a decorator, as PyTorch's); `reset`,
`cudagraph_mark_step_begin` do nothing; `disable` / `allow_in_graph` /
`assume_constant_result` return what they are given.
"""
import functools

from . import _runtime
from ._compile import compile  # noqa: F401,A001 (torch.compiler.compile)

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "is_exporting", "set_stance", "reset", "disable",
           "allow_in_graph", "assume_constant_result", "cudagraph_mark_step_begin", "list_backends"]

_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
            "aot_eager_then_compile")
_stance = ["default"]


def is_compiling():
    """True inside a gt.compile'd call (see the module's docstring)."""
    return _stance[0] != "force_eager" and any(name == _runtime.COMPILE_SIGNAL for name, _ in _runtime._signals)


is_dynamo_compiling = is_compiling


def is_exporting():
    """False: GT has no torch.export."""
    return False


class set_stance:
    """Sets the compile stance now (restored on leaving a `with` block; as a decorator, the
    stance holds during the function's calls only). Raises ValueError for an unknown stance."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in _STANCES:
            raise ValueError(f"Unknown stance {stance!r}: expected one of {', '.join(_STANCES)}")
        self.stance, self.previous = stance, _stance[0]
        _stance[0] = stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _stance[0] = self.previous
        return False

    def __call__(self, fn):
        _stance[0] = self.previous  # a decorator: only during the calls

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            before = _stance[0]
            _stance[0] = self.stance
            try:
                return fn(*args, **kwargs)
            finally:
                _stance[0] = before
        return wrapper


def reset():
    """Nothing to reset: GT keeps no traced graphs."""


def cudagraph_mark_step_begin():
    """Nothing: GT's replays need no step marks."""


def disable(fn=None, recursive=True, *, reason=None):
    """fn itself (as a decorator with or without arguments)."""
    return fn if fn is not None else (lambda f: f)


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def list_backends(exclude_tags=("debug", "experimental")):
    """The backends torch.compile accepts here (all mean GT's hot regions)."""
    return ["cudagraphs", "inductor", "onnxrt", "openxla", "tvm"]
