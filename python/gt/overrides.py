"""torch.overrides: the __torch_function__ protocol, as PyTorch's (docs: "Extending torch with a
Tensor-like type", https://pytorch.org/docs/stable/notes/extending.html).

A subclass of gt.Tensor takes part unless its `__torch_function__` is
`gt._C._disabled_torch_function_impl` (nn.Parameter's and GT's own subclasses). When a function
or method gets an argument of such a class (also inside a list or tuple argument, or a keyword),
it calls `type(arg).__torch_function__(func, types, args, kwargs)` instead, where `func` is the
public function called (`torch.add`, `torch.Tensor.add`, `torch.Tensor.__getitem__`,
`torch.nn.functional.linear`, ...). The default, Tensor.__torch_function__, runs func with the
protocol disabled (DisableTorchFunctionSubclass) and returns its tensors as instances of the
subclass: so `(MyTensor(...) + 1)` is a MyTensor, as in PyTorch. A TorchFunctionMode, while
entered, sees every call first.

Where GT differs from PyTorch: the functions take part from the first moment a subclass that
takes part (or a mode) exists: GT then replaces the functions of `gt`, `gt.Tensor`,
`gt.nn.functional`, `gt.linalg`, `gt.special` and `gt.fft` with dispatching ones, also where
another public gt module re-exports them (a reference a script took before that, `from torch
import add`, does not dispatch; ~0.2 us more per call from then on). Properties (`x.shape`,
`x.grad`, `x.T`) never dispatch.
"""
import functools
import sys
import threading
import types as _types

_subclasses = set()   # the classes that take part (registered by Tensor.__init_subclass__)
_modes = []           # entered TorchFunctionModes, innermost last
_installed = False
_state = threading.local()  # .off: DisableTorchFunctionSubclass depth; .all_off: DisableTorchFunction depth

# Functions that never dispatch on a subclass argument (PyTorch's get_ignored_functions(): they
# read no tensor's values, or make a new tensor of their data).
_IGNORED = frozenset({
    "is_tensor", "is_storage", "typename", "save", "load", "manual_seed", "seed", "initial_seed", "get_rng_state",
    "set_rng_state", "set_default_dtype", "get_default_dtype", "set_default_tensor_type", "set_default_device",
    "get_default_device", "set_printoptions", "get_num_threads", "set_num_threads", "get_num_interop_threads",
    "set_num_interop_threads", "is_grad_enabled", "set_grad_enabled", "is_inference_mode_enabled", "tensor",
    "as_tensor", "asarray", "from_numpy", "compile", "use_deterministic_algorithms",
    "are_deterministic_algorithms_enabled", "is_anomaly_enabled", "set_anomaly_enabled", "connect", "gpu_workers",
    "load_config", "vmap", "is_autocast_enabled", "get_autocast_dtype"})

# Tensor methods left as they are: construction, attribute access, pickling and copying (GT's own
# rules for subclass instances), hashing.
_KEEP = frozenset({
    "__init__", "__new__", "__init_subclass__", "__torch_function__", "__getattribute__", "__getattr__",
    "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__deepcopy__",
    "__copy__", "__hash__", "__sizeof__", "__dir__", "__class_getitem__", "as_subclass", "_make_subclass",
    "__array_ufunc__", "__array_function__"})


def _overloaded(args, kwargs):
    """The arguments whose classes take part, one per class, a subclass before its bases (else in
    order of appearance), as PyTorch's _get_overloaded_args."""
    found = []

    def add(a):
        t = type(a)
        if t not in _subclasses or any(type(b) is t for b in found):
            return
        for i, b in enumerate(found):
            if issubclass(t, type(b)):
                found.insert(i, a)
                return
        found.append(a)

    for a in args:
        if type(a) in (list, tuple):
            for e in a:
                add(e)
        else:
            add(a)
    for a in kwargs.values():
        add(a)
    return found


def _takes_part(args, kwargs):
    for a in args:
        t = type(a)
        if t in _subclasses:
            return True
        if (t is list or t is tuple) and a and any(type(e) in _subclasses for e in a):
            return True
    if kwargs:
        for a in kwargs.values():
            if type(a) in _subclasses:
                return True
    return False


def _dispatch(func, impl, args, kwargs, subclasses=True, overloaded=None):
    """Calls the innermost mode's, then the arguments' (or `overloaded`'s) __torch_function__ for
    func(*args, **kwargs); impl (func's own implementation) when none takes it and nothing
    overloads it, else TypeError."""
    if overloaded is None:
        overloaded = _overloaded(args, kwargs) if subclasses and not getattr(_state, "off", 0) else []
    classes = tuple(type(a) for a in overloaded)
    if _modes and not getattr(_state, "all_off", 0):
        mode = _modes.pop()  # a mode does not see the calls its own __torch_function__ makes
        try:
            out = mode.__torch_function__(func, classes, args, kwargs)
        finally:
            _modes.append(mode)
        if out is not NotImplemented:
            return out
    if not overloaded and impl is not None:
        return impl(*args, **kwargs)
    for a in overloaded:
        out = type(a).__torch_function__(func, classes, args, kwargs)
        if out is not NotImplemented:
            return out
    raise _no_handler(func, classes)


def _no_handler(func, classes):
    from . import dtypes
    name = getattr(func, "_gt_public_name", None) or getattr(func, "__qualname__", repr(func))
    listed = "".join(f"\n  - tensor subclass {c}" for c in classes)
    return TypeError(f"Multiple dispatch failed for '{name.replace('gt', dtypes.package[0], 1)}'; all "
                     f"__torch_function__ handlers returned NotImplemented:\n{listed}")


def _public(fn, name, subclasses=True, as_func=None):
    """fn as a function that dispatches through __torch_function__ (fn is its __wrapped__).
    as_func: a binary operator's method, which the protocol gets instead (`x + y` calls
    __torch_function__ with Tensor.add, as PyTorch's), and a TypeError from it is NotImplemented."""
    if as_func is not None:
        @functools.wraps(fn)
        def public(*args, **kwargs):
            if (_modes or _takes_part(args, kwargs)) and not getattr(_state, "all_off", 0):
                try:
                    return _dispatch(as_func, fn, args, kwargs)
                except TypeError:
                    return NotImplemented
            return fn(*args, **kwargs)
    elif subclasses:
        @functools.wraps(fn)
        def public(*args, **kwargs):
            if (_modes or _takes_part(args, kwargs)) and not getattr(_state, "all_off", 0):
                return _dispatch(public, fn, args, kwargs)
            return fn(*args, **kwargs)
    else:
        @functools.wraps(fn)
        def public(*args, **kwargs):
            if _modes and not getattr(_state, "all_off", 0):
                return _dispatch(public, fn, args, kwargs, subclasses=False)
            return fn(*args, **kwargs)
    public._gt_dispatches = True
    public._gt_public_name = name  # gt.add, gt.Tensor.add, gt.nn.functional.relu: for error messages
    return public


# Tensor's operators that PyTorch dispatches as the method of the same op.
_OPERATORS = {"__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__isub__": "sub_",
              "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div", "__itruediv__": "div_",
              "__floordiv__": "floor_divide", "__mod__": "remainder", "__matmul__": "matmul", "__eq__": "eq",
              "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
              "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor"}


def _install():
    """Replaces the public functions and Tensor methods by dispatching ones (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    import gt
    from gt import fft, linalg, special
    from gt.nn import functional
    T = gt.Tensor
    # (GT's own functions only: a library's additions to torch.Tensor, fastai's, call torch's functions
    # themselves and do not dispatch, as in PyTorch)
    methods = [(name, fn) for name, fn in vars(T).items()
               if type(fn) is _types.FunctionType and name not in _KEEP and fn.__name__ not in _KEEP
               and not hasattr(fn, "_gt_dispatches") and (fn.__module__ or "").startswith("gt")]
    for name, fn in methods:
        if name not in _OPERATORS:
            setattr(T, name, _public(fn, f"gt.Tensor.{name}"))
    for name, fn in methods:
        if name in _OPERATORS:
            method = vars(T).get(_OPERATORS[name])
            setattr(T, name, _public(fn, f"gt.Tensor.{name}",
                                     as_func=method if hasattr(method, "_gt_dispatches") else None))
    made = {}  # a function under several names (gt.matrix_exp is gt.linalg.matrix_exp) stays one
    for module in (gt, functional, linalg, special, fft):
        for name, fn in list(vars(module).items()):
            if (type(fn) is _types.FunctionType and not name.startswith("_") and not hasattr(fn, "_gt_dispatches")
                    and (fn.__module__ or "").startswith("gt") and fn.__name__ not in _KEEP):
                if fn not in made:
                    made[fn] = _public(fn, f"{module.__name__}.{name}", subclasses=name not in _IGNORED)
                setattr(module, name, made[fn])
    for module_name, module in list(sys.modules.items()):  # the same functions re-exported by other public
        if not module_name.startswith("gt.") or any(p.startswith("_") for p in module_name.split(".")):  # modules
            continue  # (torchvision.ops.misc.interpolate is torch.nn.functional.interpolate)
        for name, fn in list(vars(module).items()):
            if type(fn) is _types.FunctionType and fn in made:
                setattr(module, name, made[fn])


def _on_subclass(cls):
    """Tensor.__init_subclass__: cls takes part unless its __torch_function__ is disabled."""
    from ._tensor import _disabled_torch_function_impl
    tf = cls.__dict__.get("__torch_function__", None)
    if tf is None:
        tf = getattr(cls, "__torch_function__", None)
    if getattr(tf, "__func__", tf) is _disabled_torch_function_impl:
        return
    _subclasses.add(cls)
    _install()


def convert(ret, cls, args=(), kwargs=None):
    """ret with its plain tensors as cls instances (PyTorch's torch._tensor._convert), within
    tuples and lists too. A tensor the call made becomes a cls instance itself; one of the
    arguments handed back gets a new cls object on the same values (as_subclass)."""
    from ._tensor import Tensor
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor):
        if isinstance(ret, cls):
            return ret
        if type(ret) is Tensor and not _is_argument(ret, args, kwargs):
            try:
                ret.__class__ = cls
                return ret
            except TypeError:  # cls adds __slots__: a new object
                pass
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [convert(r, cls, args, kwargs) for r in ret]
        return type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


def keeps_subclass(forward):
    """A module's forward(self, x, ...) whose tensors come out as x's class when x is a subclass
    that takes part: for modules that compute with GT's internal functions (LSTM,
    MultiheadAttention), where PyTorch's give the subclass through the functions they call. Its
    __torch_function__ is not called for those inner functions."""
    @functools.wraps(forward)
    def wrapped(self, x, *args, **kwargs):
        out = forward(self, x, *args, **kwargs)
        return convert(out, type(x)) if type(x) in _subclasses else out
    return wrapped


def _is_argument(t, args, kwargs):
    for a in args:
        if a is t or (type(a) in (list, tuple) and any(e is t for e in a)):
            return True
    return any(a is t for a in (kwargs or {}).values())


class DisableTorchFunctionSubclass:
    """torch._C.DisableTorchFunctionSubclass: within it, subclasses' __torch_function__ is not
    called (modes still are)."""

    def __enter__(self):
        _state.off = getattr(_state, "off", 0) + 1
        return self

    def __exit__(self, *exc):
        _state.off -= 1
        return False


class DisableTorchFunction:
    """torch._C.DisableTorchFunction: within it, neither subclasses nor modes are called."""

    def __enter__(self):
        _state.all_off = getattr(_state, "all_off", 0) + 1
        return self

    def __exit__(self, *exc):
        _state.all_off -= 1
        return False


class TorchFunctionMode:
    """A context manager whose `__torch_function__(func, types, args, kwargs)` sees every call of
    a public function while it is entered (innermost mode first; not the calls its own
    __torch_function__ makes). Subclass it and override __torch_function__; calling
    `func(*args, **kwargs)` there runs the function."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    def __enter__(self):
        _install()
        _modes.append(self)
        return self

    def __exit__(self, *exc):
        if self in _modes:
            del _modes[len(_modes) - 1 - _modes[::-1].index(self)]
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs)


def has_torch_function(relevant_args):
    """Whether calling a function with relevant_args (a tuple) would go to a __torch_function__."""
    return not getattr(_state, "all_off", 0) and (bool(_modes) or (not getattr(_state, "off", 0)
                                                                   and _takes_part(tuple(relevant_args), None)))


def has_torch_function_unary(arg):
    return has_torch_function((arg,))


def has_torch_function_variadic(*args):
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Runs the __torch_function__ protocol for public_api(*args, **kwargs) (a library's own
    function written as PyTorch's are: `if has_torch_function(...): return handle_torch_function(...)`):
    the result of the first mode's or relevant_args' class's __torch_function__ that takes it."""
    return _dispatch(public_api, None, args, kwargs, overloaded=_overloaded(tuple(relevant_args), {}))


def is_tensor_like(inp):
    """Whether inp is a tensor or has a __torch_function__ (a tensor-like type)."""
    from ._tensor import Tensor
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def get_default_nowrap_functions():
    """The functions whose result the default __torch_function__ does not convert."""
    from ._tensor import Tensor
    return {Tensor.grad.__get__}


def get_overridable_functions():
    return {}


def get_ignored_functions():
    import gt
    return {getattr(gt, n) for n in _IGNORED if hasattr(gt, n)}


def _get_current_function_mode():
    return _modes[-1] if _modes else None


def _get_current_function_mode_stack():
    return list(_modes)


def _is_torch_function_enabled():
    return not getattr(_state, "all_off", 0)


def _is_torch_function_mode_enabled():
    return bool(_modes) and not getattr(_state, "all_off", 0)
