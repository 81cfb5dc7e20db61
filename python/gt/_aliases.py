"""NumPy's and the original GT's keyword spellings beside PyTorch's: `axis=` for `dim=` and
`keepdims=` for `keepdim=` (PyTorch accepts both too), on every public function of gt and
gt.nn.functional and every Tensor method that takes `dim` or `keepdim` and not the other
spelling already. Installed once, when gt is imported; each such call goes through one small
wrapper that renames the keywords."""
import functools
import inspect

_RENAMES = (("axis", "dim"), ("keepdims", "keepdim"))


def _needs_alias(fn):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins, C functions
        return False
    return any(new in params and old not in params for old, new in _RENAMES)


def _with_alias(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if kwargs:
            for old, new in _RENAMES:
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {new}= and its alias {old}=")
                    kwargs[new] = kwargs.pop(old)
        return fn(*args, **kwargs)
    call._gt_alias = True
    return call


def install(namespaces, tensor_class):
    """Wraps the functions of each module in `namespaces` and the methods of `tensor_class`."""
    done = {}
    for ns in namespaces:
        for name, obj in list(vars(ns).items()):
            if name.startswith("_") or not inspect.isfunction(obj) or getattr(obj, "_gt_alias", False):
                continue
            if obj not in done:
                done[obj] = _with_alias(obj) if _needs_alias(obj) else obj
            setattr(ns, name, done[obj])
    for name, obj in list(vars(tensor_class).items()):
        if name.startswith("_") or not inspect.isfunction(obj) or getattr(obj, "_gt_alias", False):
            continue
        wrapped = done.get(obj)
        if wrapped is None:
            wrapped = _with_alias(obj) if _needs_alias(obj) else obj
        if wrapped is not obj:
            setattr(tensor_class, name, wrapped)
