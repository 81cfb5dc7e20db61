"""GT's element types: gt.float32 (default), gt.float64, gt.float16 (half), gt.bfloat16,
gt.int32, gt.int64, gt.bool, and gt.int8, gt.int16 (short), gt.uint8.

int8, int16 and uint8 are stored at their width, and every op on them gives PyTorch's result
(uint8 + uint8 is uint8, wrapping around), computed through int32: the workers only move and
cast them (gt._tensor._small_int_op computes the rest through int32 casts).

float16 and bfloat16 are stored at 16 bits and computed in float32 by every kernel (each op
rounds its result once), as PyTorch's CUDA kernels do. NumPy has float16; bfloat16 arrays use
the `ml_dtypes` package's NumPy type (`ml_dtypes.bfloat16`, installed with GT)."""
import builtins as _builtins
from builtins import complex as builtins_complex

import numpy as np

from . import _C

try:
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - GT's install brings it; a bare environment may not
    _ml_dtypes = None


# The package name dtypes and shapes print with: "gt" (gt.float32, gt.Size([2, 3])), or "torch"
# once gt.as_torch made `torch` mean GT (torch.float32, torch.Size([2, 3]), as PyTorch prints).
package = ["gt"]


class dtype:
    """An element type. `name` is PyTorch's (float32, int64, bool ...); `numpy` its NumPy dtype
    (None for bfloat16 when `ml_dtypes` is not installed); `itemsize` bytes per element."""
    __slots__ = ("name", "code", "numpy", "is_floating_point", "itemsize", "is_complex")

    def __init__(self, name, numpy_type, itemsize):
        self.name = name
        self.code = _C.dtype_code(name)
        self.numpy = np.dtype(numpy_type) if numpy_type is not None else None
        self.is_floating_point = name.startswith(("float", "bfloat"))
        self.itemsize = itemsize
        self.is_complex = False

    def __repr__(self):
        return f"{package[0]}.{self.name}"

    def __eq__(self, other):
        """Equal to itself and to its name, as the original GT's `x.dtype == "float32"` (also
        "torch.float32" and aliases such as "float" or "half")."""
        if isinstance(other, dtype):
            return self is other
        if isinstance(other, str):
            name = other.removeprefix("torch.").removeprefix("gt.")
            try:
                return resolve(name) is self
            except Exception:  # not a dtype's name
                return False
        return NotImplemented

    def __hash__(self):
        return hash(self.name)


class _Unsupported(dtype):
    """A PyTorch dtype GT has no tensors of (the float8 types, uint16/32/64): it exists for code
    that names it (a dtype table, a class attribute: transformers' float8 cache), compares and
    prints as PyTorch's, and has finfo/iinfo; making or casting a tensor to it raises TypeError
    (resolve)."""
    __slots__ = ()

    def __init__(self, name, numpy_type, itemsize):
        self.name, self.code, self.itemsize = name, None, itemsize
        self.numpy = np.dtype(numpy_type) if numpy_type is not None else None
        self.is_floating_point = name.startswith("float")
        self.is_complex = name.startswith("complex")

    def __eq__(self, other):
        if isinstance(other, str):
            return other.removeprefix("torch.").removeprefix("gt.") == self.name
        return self is other

    def __hash__(self):
        return hash(self.name)


class _Complex(dtype):
    """complex64 and complex128: a complex tensor is a pair of real tensors, float32 or float64
    (gt._complex), so the workers have no code for it (`code` None); resolve() and the creation
    functions know it."""
    __slots__ = ()

    def __init__(self, name, numpy_type, itemsize):
        self.name, self.code, self.itemsize = name, None, itemsize
        self.numpy = np.dtype(numpy_type)
        self.is_floating_point = False
        self.is_complex = True

    def __hash__(self):
        return hash(self.name)


complex64 = _Complex("complex64", np.complex64, 8)
complex128 = _Complex("complex128", np.complex128, 16)
cfloat, cdouble = complex64, complex128
_COMPLEX_NAMES = {"complex64": complex64, "cfloat": complex64, "complex128": complex128, "cdouble": complex128}


def complex_of(d):
    """The complex dtype whose parts are `d` (float32 -> complex64, float64 -> complex128; a
    complex dtype itself)."""
    if d is complex64 or d is complex128:
        return d
    return complex128 if d is float64 else complex64


def _ml(name):
    return getattr(_ml_dtypes, name, None) if _ml_dtypes else None


float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu = (
    _Unsupported(n, _ml(n), 1) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                                         "float8_e8m0fnu"))
uint16, uint32, uint64 = (_Unsupported(n, getattr(np, n), w) for n, w in (("uint16", 2), ("uint32", 4), ("uint64", 8)))
complex32 = chalf = _Unsupported("complex32", None, 4)
# PyTorch's quantized dtypes (tensordict's dtype tables name them)
qint8, quint8, qint32, quint4x2, quint2x4 = (_Unsupported(n, None, w) for n, w in (
    ("qint8", 1), ("quint8", 1), ("qint32", 4), ("quint4x2", 1), ("quint2x4", 1)))
UNSUPPORTED = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32, uint64,
               complex32, qint8, quint8, qint32, quint4x2, quint2x4)

float32 = dtype("float32", np.float32, 4)
float64 = dtype("float64", np.float64, 8)
float16 = dtype("float16", np.float16, 2)
bfloat16 = dtype("bfloat16", _ml_dtypes.bfloat16 if _ml_dtypes else None, 2)
int32 = dtype("int32", np.int32, 4)
int64 = dtype("int64", np.int64, 8)
bool = dtype("bool", np.bool_, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 2)
uint8 = dtype("uint8", np.uint8, 1)
float, double, half, long, int, short = float32, float64, float16, int64, int32, int16

_all = (float32, float64, float16, bfloat16, int32, int64, bool, int8, int16, uint8)
SMALL_INTS = (int8, int16, uint8)
_by_code = {d.code: d for d in _all}
_C.set_dtypes(_by_code)  # an op's result comes back with its dtype object
_by_numpy = {d.numpy: d for d in _all if d.numpy is not None}
_NAMES = "float32, float64, float16, bfloat16, int32, int64, bool, int8, int16 or uint8"


class memory_format:
    """torch.memory_format: how a tensor's elements are ordered in memory (torch.channels_last,
    ...). A GT tensor is a value whose layout its worker's kernels choose, so every format is
    accepted where PyTorch takes one (Tensor.to, contiguous, clone, Module.to, the creation
    functions) and changes nothing; x.is_contiguous(memory_format=...) is True."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "gt." + self.name


contiguous_format, channels_last, channels_last_3d, preserve_format, legacy_contiguous_format = (
    memory_format(n) for n in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
                               "legacy_contiguous_format"))


_default_float = [float32]  # gt.set_default_dtype's setting


_SCALAR_TYPE = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def torch_name(d):
    """PyTorch's scalar-type name of dtype d, as its error messages print it (Float, Double, Long, ...)."""
    return _SCALAR_TYPE.get(d.name, d.name)


def default_float():
    """The dtype of floating-point tensors made without a dtype (gt.get_default_dtype)."""
    return _default_float[0]


def from_code(code):
    return _by_code[code]


def numpy_dtype(d):
    """The NumPy dtype of gt dtype `d`; TypeError for bfloat16 without `ml_dtypes`."""
    if d.numpy is None:
        raise TypeError("bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes)")
    return d.numpy


def resolve(d):
    """A gt.dtype from a gt.dtype, a name ('float32', 'half'), or a NumPy dtype. Raises TypeError,
    also for a dtype GT has no tensors of (float8, uint16/32/64)."""
    if isinstance(d, dtype):
        if d.code is None and not d.is_complex:
            raise TypeError(f"{d!r}: GT has no tensors of this dtype (it has {_NAMES})")
        return d
    if isinstance(d, str):
        if d in _COMPLEX_NAMES:
            return _COMPLEX_NAMES[d]
        return _by_code[_C.dtype_code(d)]
    if d is builtins_complex:
        return complex64
    try:
        nd = np.dtype(d)
    except TypeError:
        raise TypeError(f"unknown dtype {d!r} (use gt.{_NAMES.replace(', ', ', gt.')})") from None
    if nd.kind == "c":
        return complex128 if nd == np.complex128 else complex64
    if nd not in _by_numpy:
        raise TypeError(f"unsupported dtype {nd} (use {_NAMES})")
    return _by_numpy[nd]


def promote_small(a, b):
    """PyTorch's result dtype of an op on tensors of dtypes a and b when both are int8, int16 or
    uint8: the wider one, and int16 for uint8 with int8."""
    if a is b:
        return a
    if {a, b} == {uint8, int8}:
        return int16
    return a if a.itemsize > b.itemsize else b


def _category(d):
    """0 bool, 1 integer, 2 floating point, 3 complex (PyTorch's promotion categories)."""
    return 0 if d is bool else 3 if d.is_complex else 2 if d.is_floating_point else 1


def promote_types(type1, type2):
    """The dtype an op on tensors of these two dtypes gives, as torch.promote_types: the higher
    category (bool < integer < floating point) wins; within one, the wider dtype; float16 with
    bfloat16 is float32, uint8 with int8 int16."""
    a, b = resolve(type1), resolve(type2)
    if a is b:
        return a
    if a.is_complex or b.is_complex:  # complex64 with float64: complex128
        return complex128 if float64 in (a, b) or complex128 in (a, b) else complex64
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if {a, b} == {float16, bfloat16}:
        return float32
    if {a, b} == {uint8, int8}:
        return int16
    return a if a.itemsize > b.itemsize else b


def result_type(tensor1, tensor2):
    """The dtype of an op on two operands (tensors or Python numbers), as torch.result_type: a
    tensor with dimensions decides over a 0-d one, which decides over a number, unless the
    lesser one is of a higher category (an integer tensor times 2.5 is the default float
    dtype; times a 0-d float64 tensor, float64)."""
    groups = [[], [], []]  # dtypes of tensors with dims, of 0-d tensors, of numbers
    for x in (tensor1, tensor2):
        if hasattr(x, "dtype") and hasattr(x, "ndim"):
            groups[0 if x.ndim else 1].append(resolve(x.dtype))
        elif isinstance(x, _builtins.bool):  # (bool, int and float name dtypes in this module)
            groups[2].append(bool)
        elif isinstance(x, _builtins.int):
            groups[2].append(int64)
        elif isinstance(x, _builtins.float):
            groups[2].append(default_float())
        else:
            raise TypeError(f"result_type: expected a tensor or a number, got {type(x).__name__}")
    result = None
    for group in groups:
        if not group:
            continue
        d = group[0]
        for other in group[1:]:
            d = promote_types(d, other)
        if result is None:
            result = d
        elif _category(d) > _category(result):
            result = d
    return result


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow `from_` to become `to` without a lower category
    (floating point to integer, or integer to bool, is refused), as torch.can_cast."""
    return _category(resolve(to)) >= _category(resolve(from_))
