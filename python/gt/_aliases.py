"""NumPy's and the original GT's keyword spellings beside PyTorch's: `axis=` for `dim=` and
`keepdims=` for `keepdim=` (PyTorch accepts both too), on every public function of gt and
gt.nn.functional and every Tensor method that takes `dim` or `keepdim` and not the other
spelling already; PyTorch's names for parameters GT names otherwise (`input=`, `other=`,
`exponent=`, `fill_value=`: _torch_keywords); and PyTorch's `out=` on every public function of
gt. Installed once, when gt is imported; each such call goes through one small wrapper that
renames the keywords."""
import functools
import inspect
import warnings

_RENAMES = (("axis", "dim"), ("keepdims", "keepdim"))


# Functions whose PyTorch form takes dtype= (the input cast to it first) where GT's does not.
_CAST_INPUT = {"cumsum", "prod", "mean"}


def _casts_input(fn):
    return getattr(fn, "__name__", None) in _CAST_INPUT and "dtype" not in inspect.signature(fn).parameters


def _cast_input(args, kwargs):
    """(args, kwargs) with dtype= applied to the input, the first argument."""
    dtype = kwargs.pop("dtype")
    if dtype is not None and args:
        args = (args[0].to(dtype),) + tuple(args[1:])
    return args, kwargs


def _needs_alias(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins, C functions
        return False
    return any(new in params and old not in params for old, new in _RENAMES) or _casts_input(fn)


# PyTorch's keyword names for parameters GT names otherwise: `input` for the first (GT's x, a,
# t...), `other` for a binary op's second (GT's b), and a few of their own.
_FIRST = {"x", "a", "t", "A", "tensor"}
_SECOND = {"b", "y"}
_SPECIAL = {"pow": {"exponent": 1}, "float_power": {"exponent": 1}, "full": {"size": 0, "fill_value": 1},
            "full_like": {"fill_value": 1}, "where": {"input": 1, "other": 2}}


def _torch_keywords(fn, method=False):
    """{PyTorch's keyword: GT's parameter} for `fn` (torch.sum(input=x) is gt.sum(x=x),
    x.pow(exponent=2) is pow(x, b=2)); empty when the names agree. A method's first parameter
    is self, never passed by keyword."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    except (TypeError, ValueError):
        return {}
    names = {}
    if not method and params and params[0] in _FIRST and "input" not in params:
        names["input"] = params[0]
    if len(params) > 1 and params[1] in _SECOND and "other" not in params:
        names["other"] = params[1]
    for key, i in _SPECIAL.get(fn.__name__, {}).items():
        if i < len(params) and key not in params:
            names[key] = params[i]
    return names


def _rename(fn, kwargs, names, alias=True):
    """kwargs with NumPy's spellings (axis=, keepdims=; when `alias`) and PyTorch's names
    (`names`) turned into fn's parameters, in place."""
    for old, new in _RENAMES if alias else ():
        if old in kwargs:
            if new in kwargs:
                raise TypeError(f"{fn.__name__}() got both {new}= and its alias {old}=")
            kwargs[new] = kwargs.pop(old)
    for torch_name, name in names.items():
        if torch_name in kwargs:
            kwargs[name] = kwargs.pop(torch_name)


def _with_alias(fn, names=None):
    names = names or {}
    cast = _casts_input(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            _rename(fn, kwargs, names)
            if cast and "dtype" in kwargs:
                args, kwargs = _cast_input(args, kwargs)
        return fn(*args, **kwargs)
    call._gt_alias = True
    return call


# The modules whose functions are tensor ops (out= applies); gt's other functions (vmap, compile,
# save, and those of public submodules: gt.matrix_exp is gt.linalg.matrix_exp) stay the same
# objects as in their own modules (torch.vmap is torch.func.vmap).
_OP_MODULES = {"gt._tensor", "gt._functions", "gt._ops", "gt._composites", "gt._shaping", "gt._sorting",
               "gt._array_functions", "gt._compat"}


def _write_out(name, result, out, tensor_class):
    """PyTorch's `out=`: `out` (a tensor, or a tuple of them for a function returning a tuple)
    takes the result's values (the same object is returned). The result is cast to out's dtype
    where PyTorch casts (not a floating-point result into an integer or bool tensor); out takes
    the result's shape, with PyTorch's warning if it held elements of another shape. Raises
    RuntimeError where an argument requires grad in grad mode (PyTorch's out= functions are
    not differentiable) and TypeError for an out of the wrong kind."""
    from . import dtypes as _dt
    from .autograd import is_grad_enabled, no_grad
    if isinstance(out, (tuple, list)):
        if not isinstance(result, tuple) or len(result) != len(out):
            raise TypeError(f"{name}(): out= takes one tensor here, not {len(out)}")
        for r, o in zip(result, out):
            _write_out(name, r, o, tensor_class)
        return out
    if not isinstance(out, tensor_class):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(result, tensor_class):
        raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if result.dtype != out.dtype:
        floating = result.dtype.is_floating_point
        if (floating and not out.dtype.is_floating_point) or (result.dtype != _dt.bool and out.dtype == _dt.bool):
            raise RuntimeError(f"{name}(): result type {result.dtype} can't be cast to the desired output type "
                               f"{out.dtype}")
        result = result.to(out.dtype)
    with no_grad():
        if out.shape != result.shape:
            if out.numel() != 0:
                warnings.warn(f"{name}(): an output with one or more elements was resized since it had shape "
                              f"{list(out.shape)}, which does not match the required output shape "
                              f"{list(result.shape)}", UserWarning, stacklevel=4)
            out.shape = result.shape
            out._rebind(result._h)
        else:
            out._assign(result)
    return out


def _with_out(fn, tensor_class, names):
    """fn taking out= and the keyword spellings _rename turns into its own (one wrapper)."""
    alias = _needs_alias(fn)
    cast = _casts_input(fn)

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if kwargs:
            _rename(fn, kwargs, names, alias)
            if cast and "dtype" in kwargs:
                args, kwargs = _cast_input(args, kwargs)
        result = fn(*args, **kwargs)
        return result if out is None else _write_out(fn.__name__, result, out, tensor_class)
    call._gt_alias = True
    return call


def install(namespaces, tensor_class, out_namespace=None):
    """Wraps the functions of each module in `namespaces` and the methods of `tensor_class`;
    the functions of `out_namespace` (one of `namespaces`) also take `out=`."""
    done, outs = {}, {}  # (methods take no out=: one wrapper less on x.view(), x.sum(), ...)
    for ns in namespaces:
        for name, obj in list(vars(ns).items()):
            if name.startswith("_") or not inspect.isfunction(obj) or getattr(obj, "_gt_alias", False):
                continue
            own = getattr(obj, "__module__", "") in _OP_MODULES or getattr(obj, "__module__", "") == ns.__name__
            names = _torch_keywords(obj) if own else {}  # (gt.matrix_exp stays gt.linalg.matrix_exp)
            if ns is out_namespace and getattr(obj, "__module__", "") in _OP_MODULES and \
                    "out" not in inspect.signature(obj).parameters:
                if obj not in outs:
                    outs[obj] = _with_out(obj, tensor_class, names)
                wrapped = outs[obj]
            else:
                if obj not in done:
                    done[obj] = _with_alias(obj, names) if names or _needs_alias(obj) else obj
                wrapped = done[obj]
            setattr(ns, name, wrapped)
    for name, obj in list(vars(tensor_class).items()):
        if name.startswith("_") or not inspect.isfunction(obj) or getattr(obj, "_gt_alias", False):
            continue
        names = _torch_keywords(obj, method=True)  # (a method's first parameter is self: no input=)
        wrapped = _with_alias(obj, names) if names or _needs_alias(obj) else obj
        if wrapped is not obj:
            setattr(tensor_class, name, wrapped)
