"""torch.library's Python custom operators, for GT: an op defined by a Python function of
tensors (which runs GT ops, recorded and differentiated as any), reachable as
torch.ops.<namespace>.<name>:

    @gt.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: Tensor, s: float) -> Tensor:
        return x * s

    gt.library.register_autograd("mylib::scale", backward, setup_context=setup_context)
    gt.ops.mylib.scale(x, 2.0)

register_autograd makes the op's gradient the given backward (an autograd.Function around the
function); without it the gradient is that of the ops the function runs. register_fake is
accepted (GT infers shapes by running the function; a meta tensor's ops give meta tensors)."""
import inspect
import types

from . import autograd as _ag

ops = types.SimpleNamespace()  # torch.ops: a namespace per library ("mylib" -> its ops)


class CustomOpDef:
    """A custom op: calling it runs its function (or the autograd.Function register_autograd
    made around it)."""

    def __init__(self, qualname, fn):
        self._qualname, self._fn, self._autograd = qualname, fn, None
        self.__name__ = qualname.split("::")[-1]
        self.__doc__ = fn.__doc__

    def __call__(self, *args, **kwargs):
        if self._autograd is not None:  # (arguments by position, defaults filled: what setup_context's inputs hold)
            bound = inspect.signature(self._fn).bind(*args, **kwargs)
            bound.apply_defaults()
            return self._autograd.apply(*bound.args, **bound.kwargs)
        return self._fn(*args, **kwargs)

    def register_autograd(self, backward, *, setup_context=None):
        register_autograd(self._qualname, backward, setup_context=setup_context)

    def register_fake(self, fn):
        return fn

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"


_OPS = {}  # "ns::name" -> CustomOpDef


def custom_op(name, fn=None, /, *, mutates_args=(), device_types=None, schema=None):
    """Defines op `name` ("namespace::name") as `fn` (or, without fn, a decorator doing so);
    returns the op, also reachable as ops.<namespace>.<name>."""
    def define(fn):
        op = CustomOpDef(name, fn)
        _OPS[name] = op
        namespace, _, short = name.partition("::")
        if not hasattr(ops, namespace):
            setattr(ops, namespace, types.SimpleNamespace())
        setattr(getattr(ops, namespace), short, op)
        return op
    return define(fn) if fn is not None else define


def register_fake(op, fn=None, /, *, lib=None, _stacklevel=1):
    """Accepted (see the module's docstring); returns fn (or a decorator that returns its)."""
    return fn if fn is not None else (lambda f: f)


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """The gradient of op (a name or a CustomOpDef): backward(ctx, *grad_outputs) after
    setup_context(ctx, inputs, output) saved what it needs, as torch.library.register_autograd.
    Raises KeyError for an op custom_op did not define."""
    opdef = op if isinstance(op, CustomOpDef) else _OPS[op]

    class _Op(_ag.Function):
        @staticmethod
        def forward(ctx, *args, **kwargs):
            out = opdef._fn(*args, **kwargs)
            if setup_context is not None:
                setup_context(ctx, args, out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            return backward(ctx, *grads)
    _Op.__name__ = opdef.__name__
    opdef._autograd = _Op


class Library:
    """torch.library.Library(namespace, kind): accepted for code that opens one before defining
    ops with custom_op; its define/impl (C++-schema operators) raise NotImplementedError."""

    def __init__(self, ns, kind, dispatch_key=""):
        self.ns, self.kind = ns, kind

    def define(self, *args, **kwargs):
        raise NotImplementedError("torch.library.Library.define: GT defines Python ops with custom_op")

    impl = define
