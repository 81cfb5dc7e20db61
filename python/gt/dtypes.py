"""GT's element types: gt.float32 (default), gt.float64, gt.int32, gt.int64, gt.bool."""
import numpy as np

from . import _C


class dtype:
    """An element type. `name` is PyTorch's (float32, int64, bool ...)."""
    __slots__ = ("name", "code", "numpy", "is_floating_point")

    def __init__(self, name, numpy_type):
        self.name = name
        self.code = _C.dtype_code(name)
        self.numpy = np.dtype(numpy_type)
        self.is_floating_point = name.startswith("float")

    def __repr__(self):
        return f"gt.{self.name}"


float32 = dtype("float32", np.float32)
float64 = dtype("float64", np.float64)
int32 = dtype("int32", np.int32)
int64 = dtype("int64", np.int64)
bool = dtype("bool", np.bool_)
float, double, long, int = float32, float64, int64, int32

_by_code = {d.code: d for d in (float32, float64, int32, int64, bool)}
_by_numpy = {d.numpy: d for d in (float32, float64, int32, int64, bool)}


def from_code(code):
    return _by_code[code]


def resolve(d):
    """A gt.dtype from a gt.dtype, a name ('float32'), or a NumPy dtype. Raises TypeError."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str):
        return _by_code[_C.dtype_code(d)]
    try:
        nd = np.dtype(d)
    except TypeError:
        raise TypeError(f"unknown dtype {d!r} (use gt.float32, gt.float64, gt.int32, gt.int64 or gt.bool)") from None
    if nd not in _by_numpy:
        raise TypeError(f"unsupported dtype {nd} (use float32, float64, int32, int64 or bool)")
    return _by_numpy[nd]
