"""Wraps a function of GT everywhere GT binds it: in every gt.* module and on gt.Tensor.

PyTorch-facing behaviour that sits around many functions at once (autocast's float32 ops,
PyTorch's grad_fn names) is written once as a wrapper and applied here, after `import gt` has
bound the functions: `from ._functions import sum` in one module and `gt.sum` are the same
function object, and both must see the wrapper (pickling checks that `gt.nn.functional.silu`
names the object it pickles).
"""
import sys


def rebind(entries, wrap, owners):
    """For each (owner, attribute, arg) of `entries`, replaces the function `owners[owner].attribute`
    by wrap(function, arg) wherever a gt module, or gt.Tensor, binds it under that attribute name
    (an alias under another name, gt.bmm for matmul, gets its own wrapper from its own entry).
    A property (on Tensor) gets its getter wrapped. Missing attributes are skipped."""
    tensor = owners["Tensor"]
    wrapped = {}  # (id(function), name) -> its wrapper
    for owner, attr, arg in entries:
        space = owners[owner]
        original = space.__dict__.get(attr) if owner == "Tensor" else getattr(space, attr, None)
        if original is None:
            continue
        if isinstance(original, property):
            setattr(space, attr, property(wrap(original.fget, arg), original.fset, original.fdel, original.__doc__))
            continue
        wrapped.setdefault((id(original), attr), wrap(original, arg))
    modules = [m.__dict__ for name, m in list(sys.modules.items())
               if m is not None and (name == "gt" or name.startswith("gt."))]
    for d in modules + [None]:
        for key, value in list((d if d is not None else tensor.__dict__).items()):
            w = wrapped.get((id(value), key))
            if w is None or value is not w.__wrapped__:
                continue
            if d is None:
                setattr(tensor, key, w)
            else:
                d[key] = w
