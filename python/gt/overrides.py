"""torch.overrides: the __torch_function__ protocol's names, for libraries that import them.

GT's functions do not dispatch through __torch_function__: a TorchFunctionMode can be entered
and left (libraries use one to skip weight initialization or count calls), but its
__torch_function__ is never called, and has_torch_function is always False."""


class TorchFunctionMode:
    """A context manager whose __torch_function__ GT never calls (see the module's docstring)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)


def has_torch_function(relevant_args):
    """False: GT does not dispatch to __torch_function__."""
    return False


has_torch_function_unary = has_torch_function_variadic = has_torch_function


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Calls public_api itself (GT does not dispatch to __torch_function__)."""
    return public_api(*args, **kwargs)


def is_tensor_like(inp):
    from ._tensor import Tensor
    return isinstance(inp, Tensor)


def get_default_nowrap_functions():
    return set()


def get_overridable_functions():
    return {}


def get_ignored_functions():
    return set()


def _get_current_function_mode():
    return None


def _get_current_function_mode_stack():
    return []
