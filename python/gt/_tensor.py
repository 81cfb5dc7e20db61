"""gt.Tensor: a handle to a tensor that lives on a worker, with PyTorch's API.

Every op records one instruction with the client (no waiting); shapes and dtypes come back
from the op table at once, so shape errors raise at the line that made them. Values travel
only when asked for (`.numpy()`, `.item()`, `print`).
"""
import builtins
import math

import numpy as np

from . import _C, _runtime
from . import dtypes as _dt
from . import autograd as _ag
from . import signal as _signal

class _Handle:
    """Owns one tensor id; when the last Tensor using it goes away, the worker frees it."""
    __slots__ = ("id", "client")

    def __init__(self, id, client):
        self.id = id
        self.client = client

    def __del__(self):
        try:
            self.client.release(self.id)
        except Exception:
            pass  # interpreter shutdown


class Tensor:
    """A tensor on a GT worker.

    Attributes: `shape` (tuple of ints), `dtype` (gt.dtype), `requires_grad`, `grad`
    (a Tensor or None; accumulates over backward() calls on leaves).
    """
    __slots__ = ("_h", "shape", "dtype", "requires_grad", "grad", "_node", "__weakref__")
    __array_priority__ = 1000  # numpy_scalar * tensor -> Tensor.__rmul__

    def __init__(self, handle, shape, dtype, requires_grad=False):
        self._h = handle
        self.shape = shape
        self.dtype = dtype
        self.requires_grad = requires_grad
        self.grad = None
        self._node = None  # an autograd.Node when made by a recorded op that needs a gradient

    # ------------------------------------------------------------ identity
    @property
    def id(self):
        """The session's id of this tensor (what the instruction stream names)."""
        return self._h.id

    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        return math.prod(self.shape)

    @property
    def is_leaf(self):
        return self._node is None

    # ------------------------------------------------------------ values
    def numpy(self):
        """The values as a NumPy array (waits for them). Raises RuntimeError (gt.RemoteError)
        naming the failed op and your line if the computation failed on a worker."""
        data, shape, code = self._h.client.fetch(self._h.id)
        return np.frombuffer(data, dtype=_dt.numpy_dtype(_dt.from_code(code))).reshape(shape).copy()

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        """The single value as a Python number. Raises RuntimeError if numel() != 1 (as PyTorch)."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to a Python scalar")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

    @property
    def data(self):
        """This tensor without its autograd history (shares the values); has .numpy()."""
        return self.detach()

    def detach(self):
        return Tensor(self._h, self.shape, self.dtype)

    def __repr__(self):
        a = self.numpy()
        body = np.array2string(a, separator=", ", prefix="tensor(", precision=4)
        extra = ""
        if self.dtype not in (_dt.float32, _dt.int64, _dt.bool) or a.size == 0:
            extra += f", dtype={self.dtype!r}"
        if self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __bool__(self):
        return builtins.bool(self.item())

    def __float__(self):
        return builtins.float(self.item())

    def __int__(self):
        return builtins.int(self.item())

    # ------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=False):
        """Accumulates d(self)/d(leaf) into every leaf's `.grad`. `gradient` is required for a
        non-scalar tensor (as PyTorch). Raises RuntimeError if self does not require grad."""
        _ag.backward(self, gradient, retain_graph)

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    # ------------------------------------------------------------ operators
    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __sub__(self, o): return sub(self, o)
    def __rsub__(self, o): return sub(o, self)
    def __mul__(self, o): return mul(self, o)
    def __rmul__(self, o): return mul(o, self)
    def __truediv__(self, o): return div(self, o)
    def __rtruediv__(self, o): return div(o, self)
    def __pow__(self, o): return pow(self, o)
    def __rpow__(self, o): return pow(o, self)
    def __floordiv__(self, o): return floor_divide(self, o)
    def __rfloordiv__(self, o): return floor_divide(o, self)
    def __mod__(self, o): return remainder(self, o)
    def __rmod__(self, o): return remainder(o, self)
    def __and__(self, o): return logical_and(self, o) if self.dtype == _dt.bool else _no_bitwise("&")
    def __or__(self, o): return logical_or(self, o) if self.dtype == _dt.bool else _no_bitwise("|")
    def __xor__(self, o): return logical_xor(self, o) if self.dtype == _dt.bool else _no_bitwise("^")
    def __invert__(self): return logical_not(self) if self.dtype == _dt.bool else _no_bitwise("~")
    def __abs__(self): return abs(self)
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __neg__(self): return neg(self)
    def __pos__(self): return self
    def __gt__(self, o): return _op("gt", self, o)
    def __lt__(self, o): return _op("lt", self, o)
    def __ge__(self, o): return _op("ge", self, o)
    def __le__(self, o): return _op("le", self, o)
    def __eq__(self, o): return _op("eq", self, o)
    def __ne__(self, o): return _op("ne", self, o)
    __hash__ = object.__hash__

    # In-place forms compute a new tensor and rebind this one to it: the old values are freed
    # when nothing else holds them, so `p -= lr * g` leaks nothing.
    def _assign(self, new):
        if new.shape != self.shape:
            raise ValueError(f"in-place op would change the shape from {self.shape} to {new.shape}")
        if self.requires_grad and self.is_leaf and _ag.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation "
                               "(wrap the update in `with gt.no_grad():`)")
        if new.dtype != self.dtype:
            new = new.to(self.dtype)
        self._h = new._h
        if not self.is_leaf or new._node is not None:
            self._node = new._node
        return self

    def __iadd__(self, o): return self._assign(add(self, o))
    def __isub__(self, o): return self._assign(sub(self, o))
    def __imul__(self, o): return self._assign(mul(self, o))
    def __itruediv__(self, o): return self._assign(div(self, o))

    def zero_(self):
        with _ag.no_grad():
            return self._assign(zeros(self.shape, dtype=self.dtype))

    # ------------------------------------------------------------ methods
    # (the generated ops' methods, exp() and the like, are attached at the end of this file)
    def clamp(self, min=None, max=None): return clamp(self, min, max)
    clip = clamp
    def pow(self, e): return pow(self, e)
    def logical_not(self): return logical_not(self)
    def masked_fill(self, mask, value): return masked_fill(self, mask, value)
    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=None): return sum(self, dim, keepdim, axis=axis, keepdims=keepdims)
    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None): return mean(self, dim, keepdim, axis=axis, keepdims=keepdims)
    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None): return max(self, dim, keepdim, axis=axis, keepdims=keepdims)
    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None): return min(self, dim, keepdim, axis=axis, keepdims=keepdims)
    def amax(self, dim=None, keepdim=False): return amax(self, dim, keepdim)
    def amin(self, dim=None, keepdim=False): return amin(self, dim, keepdim)
    def argmax(self, dim=None, keepdim=False): return argmax(self, dim, keepdim)
    def argmin(self, dim=None, keepdim=False): return argmin(self, dim, keepdim)
    def var(self, dim=None, keepdim=False, *, correction=1, unbiased=None): return var(self, dim, keepdim, correction=correction, unbiased=unbiased)
    def std(self, dim=None, keepdim=False, *, correction=1, unbiased=None): return std(self, dim, keepdim, correction=correction, unbiased=unbiased)
    def logsumexp(self, dim, keepdim=False): return logsumexp(self, dim, keepdim)
    def log_softmax(self, dim=-1): return log_softmax(self, dim)
    def softmax(self, dim=-1): return softmax(self, dim)
    def reshape(self, *shape): return reshape(self, *shape)
    def view(self, *shape): return reshape(self, *shape)
    def flatten(self, start_dim=0, end_dim=-1): return flatten(self, start_dim, end_dim)
    def squeeze(self, dim=None): return squeeze(self, dim)
    def unsqueeze(self, dim): return unsqueeze(self, dim)
    def transpose(self, dim0=-2, dim1=-1): return transpose(self, dim0, dim1)
    def permute(self, *dims): return permute(self, *dims)
    def broadcast_to(self, shape): return broadcast_to(self, shape)
    def expand(self, *shape): return expand(self, *shape)
    def expand_as(self, other): return broadcast_to(self, other.shape)
    def contiguous(self): return self
    def split(self, split_size_or_sections, dim=0): return split(self, split_size_or_sections, dim)
    def chunk(self, chunks, dim=0): return chunk(self, chunks, dim)
    def index_select(self, dim, index): return index_select(self, dim, index)
    def gather(self, dim, index): return gather(self, dim, index)
    def to(self, dtype): return cast(self, dtype)
    def type_as(self, other): return cast(self, other.dtype)
    def float(self): return cast(self, _dt.float32)
    def double(self): return cast(self, _dt.float64)
    def half(self): return cast(self, _dt.float16)
    def bfloat16(self): return cast(self, _dt.bfloat16)
    def long(self): return cast(self, _dt.int64)
    def int(self): return cast(self, _dt.int32)
    def bool(self): return cast(self, _dt.bool)
    def clone(self): return clone(self)
    def new_zeros(self, *shape): return zeros(*shape, dtype=self.dtype)
    def new_ones(self, *shape): return ones(*shape, dtype=self.dtype)
    def new_full(self, shape, value): return full(shape, value, dtype=self.dtype)

    def __getitem__(self, key):
        from ._indexing import getitem
        return getitem(self, key)

    def __setitem__(self, key, value):
        from ._indexing import setitem
        setitem(self, key, value)

    @property
    def T(self):
        return permute(self, *reversed(range(self.ndim)))

    @property
    def mT(self):
        return transpose(self, -2, -1)

    def is_floating_point(self):
        return self.dtype.is_floating_point


# ---------------------------------------------------------------- emitting ops

def _client():
    return _runtime.client()


def _make(result, inputs, backward=None, attrs=None):
    """Wraps an emitted (id, shape, dtype) and records it on the tape if it needs a gradient
    (a floating-point result of an op with a backward function and an input that requires grad)."""
    client = _client()
    id, shape, code = result
    t = Tensor(_Handle(id, client), shape, _dt.from_code(code))
    if backward is not None and t.dtype.is_floating_point and _ag.is_grad_enabled() and \
            any(i.requires_grad for i in inputs):
        t.requires_grad = True
        t._node = _ag.Node(backward, inputs, attrs, _signal.current())
    return t


def _op(name, *operands, backward=None, **attrs):
    """Records op `name` (ops/*.yaml) on `operands` with attributes by their spec names, and
    returns the new Tensor. Numbers among the operands become 0-d tensors like the first tensor
    operand. The op's derivative (its spec's `grad:` formulas) is its backward unless `backward`
    is given. Raises TypeError without a tensor operand, and what the op table raises for bad
    shapes or dtypes (gt.ShapeError, gt.DTypeError) at the user's line."""
    if not builtins.all(isinstance(o, Tensor) for o in operands):
        ref = next((o for o in operands if isinstance(o, Tensor)), None)
        if ref is None and operands:
            if len(operands) == 1:
                raise TypeError(f"{name}: expected a gt.Tensor, got {type(operands[0]).__name__}")
            raise TypeError(f"{name}: at least one operand must be a gt.Tensor")
        operands = tuple(o if isinstance(o, Tensor) else _scalar(o, ref) for o in operands)
    for k, v in attrs.items():
        if isinstance(v, _dt.dtype):
            attrs[k] = v.code
    r = _client().emit(_ops.CODES[name], [t._h.id for t in operands], attrs)
    return _make(r, operands, backward or _ops.BACKWARD.get(name), attrs)


def _method(*names):
    """Decorator: the function is also a Tensor method (under its own name, or `names`), as
    torch.exp is Tensor.exp; `x.f(*args)` calls f(x, *args)."""
    def register(fn):
        for n in names or (fn.__name__,):
            setattr(Tensor, n, fn)
        return fn
    return register


_scalars = {}


def _scalar(value, like):
    """A 0-d tensor for a Python number in an op with tensor `like` (cached: scalars are immutable).
    int tensor with a float scalar -> float32, as PyTorch."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) > 0:
        return from_numpy(np.asarray(value, order="C"))
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, builtins.bool):
        d = like.dtype if like is not None else _dt.bool
    elif isinstance(value, builtins.int):
        d = like.dtype if like is not None and like.dtype != _dt.bool else _dt.int64
    elif isinstance(value, builtins.float):
        d = like.dtype if like is not None and like.dtype.is_floating_point else _dt.float32
    else:
        raise TypeError(f"expected a Tensor or a number, got {type(value).__name__}")
    key = (value, d.code, type(value), _signal.current()[0])  # a scalar lives where its signal says
    t = _scalars.get(key)
    if t is None or t._h.client is not _client():
        if len(_scalars) > 512:
            _scalars.clear()
        with _ag.no_grad():
            t = _op("full", value=builtins.float(value), dtype=d, shape=())
        _scalars[key] = t
    return t


def _pair(a, b):
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a, b
    if isinstance(a, Tensor):
        return a, _scalar(b, a)
    if isinstance(b, Tensor):
        return _scalar(a, b), b
    raise TypeError("at least one operand must be a gt.Tensor")


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(builtins.int(s) for s in shape)



def _no_bitwise(op):
    raise TypeError(f"bitwise {op} is only supported on bool tensors in GT")


# ---------------------------------------------------------------- creation

_seed = [0, 0]  # [seed, counter]: random call n uses stream hash(seed, n)


def manual_seed(seed):
    """Makes gt.randn/gt.rand (and so every layer's initialisation and dropout) reproducible."""
    _seed[0], _seed[1] = builtins.int(seed), 0


def _next_seed():
    _seed[1] += 1
    return (_seed[0] * 1_000_003 + _seed[1]) & 0x7FFFFFFFFFFFFFFF


def _leaf(t, requires_grad):
    if requires_grad and not t.dtype.is_floating_point:
        raise RuntimeError(f"only floating-point tensors can require gradients, got {t.dtype}")
    t.requires_grad = builtins.bool(requires_grad)
    return t


def from_numpy(array, requires_grad=False):
    """Uploads a NumPy array (its dtype kept: float32, float64, float16, ml_dtypes.bfloat16,
    int32, int64 or bool; other integer types become int64). Raises TypeError for other dtypes."""
    array = np.asarray(array)
    if array.dtype.kind in "iu" and array.dtype not in (np.int32, np.int64):
        array = array.astype(np.int64)
    array = np.asarray(array, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    d = _dt.resolve(array.dtype)
    raw = array.view(np.uint16) if d is _dt.bfloat16 else array  # the buffer protocol has no bfloat16
    return _leaf(_make(_client().upload(raw, list(array.shape), d.code), ()), requires_grad)


def tensor(data, dtype=None, requires_grad=False):
    """A tensor from nested lists, a number or a NumPy array. Python floats give float32, ints
    int64, bools bool (as PyTorch). Raises TypeError for an unknown dtype."""
    if isinstance(data, Tensor):
        data = data.numpy()
    elif isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        data = [x.numpy() if isinstance(x, Tensor) else x for x in data]
    a = np.asarray(data)
    if dtype is not None:
        a = a.astype(_dt.numpy_dtype(_dt.resolve(dtype)))
    elif a.dtype == np.float64 and not isinstance(data, (np.ndarray, np.generic)):
        a = a.astype(np.float32)
    return from_numpy(a, requires_grad=requires_grad)


as_tensor = tensor


def _default_dtype(value, dtype):
    if dtype is not None:
        return _dt.resolve(dtype)
    if isinstance(value, builtins.bool):
        return _dt.bool
    if isinstance(value, builtins.int):
        return _dt.int64
    return _dt.float32


def full(shape, value, dtype=None, requires_grad=False):
    """A tensor of `shape` filled with `value` (dtype from the value: float32, int64 or bool)."""
    d = _default_dtype(value, dtype)
    t = _op("full", shape=_shape_args((shape,) if isinstance(shape, builtins.int) else shape),
            value=builtins.float(value), dtype=d)
    return _leaf(t, requires_grad)


def zeros(*shape, dtype=None, requires_grad=False):
    """A tensor of `shape` (ints or one tuple) filled with 0 (float32 unless `dtype`)."""
    return full(_shape_args(shape), 0.0, dtype or _dt.float32, requires_grad)


def ones(*shape, dtype=None, requires_grad=False):
    """A tensor of `shape` (ints or one tuple) filled with 1 (float32 unless `dtype`)."""
    return full(_shape_args(shape), 1.0, dtype or _dt.float32, requires_grad)


def empty(*shape, dtype=None, requires_grad=False):
    """Zeros (GT never hands out uninitialised memory)."""
    return zeros(*shape, dtype=dtype, requires_grad=requires_grad)


def zeros_like(t, dtype=None, requires_grad=False):
    return zeros(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    return ones(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def full_like(t, value, dtype=None, requires_grad=False):
    """A tensor of t's shape (and dtype unless `dtype`) filled with `value`."""
    return full(t.shape, value, dtype=dtype or t.dtype, requires_grad=requires_grad)


empty_like = zeros_like


def _random(op, shape, dtype, requires_grad):
    d = _dt.resolve(dtype or _dt.float32)
    if not d.is_floating_point:
        raise TypeError(f"{op} needs a floating-point dtype, got {d}")
    t = _op(op, shape=_shape_args(shape), seed=_next_seed(), dtype=d)
    return _leaf(t, requires_grad)


def randn(*shape, dtype=None, requires_grad=False):
    """Standard normal samples (counter-based generator on the worker; see gt.manual_seed)."""
    return _random("randn", shape, dtype, requires_grad)


def rand(*shape, dtype=None, requires_grad=False):
    """Uniform samples in [0, 1) (counter-based generator on the worker; see gt.manual_seed)."""
    return _random("rand", shape, dtype, requires_grad)


def randn_like(t, dtype=None):
    return randn(t.shape, dtype=dtype or t.dtype)


def rand_like(t, dtype=None):
    """rand of t's shape and (float) dtype."""
    return rand(t.shape, dtype=dtype or t.dtype)


def randint(low, high=None, size=None, dtype=None):
    """Integers uniform in [low, high) (torch.randint(low, high, size) or randint(high, size))."""
    if size is None:
        low, high, size = 0, low, high
    u = rand(_shape_args(size), dtype=_dt.float64)
    return cast(floor(u * (high - low)) + low, dtype or _dt.int64)


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    """[start, end) by step, as torch.arange (int64 for integer arguments, else float32). The
    values are computed on the client and uploaded."""
    if end is None:
        start, end = 0, start
    ints = builtins.all(isinstance(v, builtins.int) for v in (start, end, step))
    d = _dt.resolve(dtype) if dtype is not None else (_dt.int64 if ints else _dt.float32)
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    values = np.arange(start, end, step, dtype=np.float64 if not ints else np.int64)
    return from_numpy(values.astype(_dt.numpy_dtype(d)), requires_grad=requires_grad)


def linspace(start, end, steps, dtype=None):
    """`steps` evenly spaced values from start to end inclusive (float32; uploaded)."""
    return from_numpy(np.linspace(start, end, steps).astype(_dt.numpy_dtype(_dt.resolve(dtype or _dt.float32))))


def eye(n, m=None, dtype=None):
    """The n x m identity (uploaded from the client)."""
    return from_numpy(np.eye(n, m, dtype=_dt.numpy_dtype(_dt.resolve(dtype or _dt.float32))))


# ---------------------------------------------------------------- elementwise

def add(a, b, *, alpha=1):
    """a + alpha * b with broadcasting and type promotion; raises gt.ShapeError if the shapes
    do not broadcast and gt.DTypeError for bool + bool."""
    if alpha != 1:
        b = mul(b, alpha)
    return _op("add", a, b)


def sub(a, b, *, alpha=1):
    """a - alpha * b (rules of add)."""
    if alpha != 1:
        b = mul(b, alpha)
    return _op("sub", a, b)


def div(a, b, *, rounding_mode=None):
    """True division (ints give float32, as PyTorch); rounding_mode='floor' is floor_divide."""
    if rounding_mode == "floor":
        return floor_divide(a, b)
    if rounding_mode is not None:
        raise ValueError(f"div: rounding_mode must be None or 'floor', got {rounding_mode!r}")
    a, b = _pair(a, b)
    if not a.dtype.is_floating_point and not b.dtype.is_floating_point:
        a = cast(a, _dt.float32)
    return _op("div", a, b)


true_divide = divide = div
subtract = sub


def pow(a, b):
    """a ** b; an integer tensor to a float power gives float32."""
    if isinstance(a, Tensor) and isinstance(b, (builtins.int, builtins.float)) and not isinstance(b, builtins.bool):
        if b == 1:
            return a
        if b == 2:
            return mul(a, a)
        if not a.dtype.is_floating_point:
            a = cast(a, _dt.float32)
    a, b = _pair(a, b)
    if not a.dtype.is_floating_point and not b.dtype.is_floating_point:
        a = cast(a, _dt.float32)
    return _op("pow", a, b)


# mul, maximum, minimum, floor_divide, remainder and the comparisons eq, ne, lt, le, gt, ge are
# generated from their spec (python/gt/_ops.py, imported at the end of this file).


def _as_bool(x):
    return x if x.dtype == _dt.bool else ne(x, 0)


def logical_not(x):
    return eq(_as_bool(x), False)


def logical_and(a, b):
    """Elementwise and of truth values (nonzero is True); bool result, broadcasting."""
    a, b = _pair(a, b)
    return _op("minimum", _as_bool(a), _as_bool(b))


def logical_or(a, b):
    a, b = _pair(a, b)
    return _op("maximum", _as_bool(a), _as_bool(b))


def logical_xor(a, b):
    a, b = _pair(a, b)
    return ne(_as_bool(a), _as_bool(b))


def where(condition, a, b):
    """condition ? a : b, elementwise with broadcasting; `condition` must be bool."""
    ref = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    a, b = _scalar(a, ref), _scalar(b, ref)
    if not isinstance(condition, Tensor):
        condition = tensor(condition)
    return _op("where", condition, a, b)


def masked_fill(x, mask, value):
    """x with `value` wherever the bool `mask` (broadcast to x) is True."""
    return where(mask, _scalar(value, x) if not isinstance(value, Tensor) else value.to(x.dtype), x)


# neg, exp, log, log1p, sqrt, rsqrt, sin, cos, erf, relu, sigmoid, tanh, abs and floor are
# generated from their spec (python/gt/_ops.py, imported at the end of this file).


def gelu(x, approximate="none"):
    """x * Phi(x) (Hendrycks & Gimpel 2016): exact with erf, or approximate='tanh':
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "tanh":
        return 0.5 * x * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _op("gelu", x)


def silu(x):
    """x * sigmoid(x) (Elfwing et al. 2018)."""
    return x * sigmoid(x)


def clamp(x, min=None, max=None):
    """x limited to [min, max] (either may be None); the gradient flows where x is inside, as
    PyTorch (at the bounds too)."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    y = x
    if min is not None:
        y = where(lt(x, min), _scalar(min, x) if not isinstance(min, Tensor) else min, y)
    if max is not None:
        y = where(gt(x, max), _scalar(max, x) if not isinstance(max, Tensor) else max, y)
    return y


clip = clamp


def cast(x, dtype):
    """x converted to `dtype` (to bool: x != 0; float to int truncates toward zero)."""
    d = _dt.resolve(dtype)
    if d is x.dtype:
        return x
    return _op("cast", x, dtype=d)


def clone(x):
    """A copy (GT tensors are never written in place on the worker, so it shares the values)."""
    t = Tensor(x._h, x.shape, x.dtype)
    if x.requires_grad and _ag.is_grad_enabled():
        t.requires_grad = True
        t._node = _ag.Node(_ag.identity_backward, (x,), None, _signal.current())
    return t


def detach(x):
    return x.detach()


# ---------------------------------------------------------------- linear algebra and layout

def matmul(a, b):
    """NumPy/PyTorch matmul: (..., m, k) @ (..., k, n) -> (..., m, n), batch axes broadcast."""
    if a.ndim == 1 and b.ndim == 1:
        return reshape(matmul(reshape(a, 1, -1), reshape(b, -1, 1)), ())
    if a.ndim == 1:
        return reshape(matmul(reshape(a, 1, -1), b), b.shape[:-2] + b.shape[-1:])
    if b.ndim == 1:
        return reshape(matmul(a, reshape(b, -1, 1)), a.shape[:-1])
    return _op("matmul", a, b)


mm = bmm = matmul


def _dim(d, ndim):
    return _C.normalize_axes([d], builtins.max(ndim, 1))[0]


def _dims(dims, ndim):
    """Axes from None (all of them), an int or a sequence (negative ones count from the end),
    sorted; raises gt.ShapeError for one out of range or repeated."""
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, (builtins.int, np.integer)):
        dims = [dims]
    dims = [builtins.int(d) for d in dims]
    return _C.normalize_axes(dims, builtins.max(ndim, 1)) if dims else []


def permute(x, *dims):
    dims = _shape_args(dims)
    if len(dims) != x.ndim:
        raise _C.ShapeError(f"permute: expected {x.ndim} dims for shape {x.shape}, got {dims}")
    perm = [d + x.ndim if d < 0 else d for d in dims]
    if perm == list(range(x.ndim)):
        return x
    return _op("transpose", x, perm=perm)


def transpose(x, dim0=-2, dim1=-1):
    """Swaps two axes (PyTorch's transpose(dim0, dim1))."""
    perm = list(range(x.ndim))
    d0, d1 = _dim(dim0, x.ndim), _dim(dim1, x.ndim)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(x, *perm)


swapaxes = transpose


def reshape(x, *shape):
    """Same elements, new shape; one size may be -1. Raises gt.ShapeError (a RuntimeError, as
    PyTorch, and a ValueError) if the sizes do not match."""
    shape = list(_shape_args(shape))
    wanted = list(shape)
    if shape.count(-1) > 1:
        raise _C.ShapeError("reshape: only one dimension can be inferred (-1)")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.numel() % known:
            raise _C.ShapeError(f"reshape: cannot reshape {list(x.shape)} ({x.numel()} elements) into {wanted}")
        shape[shape.index(-1)] = x.numel() // known
    shape = tuple(shape)
    if shape == x.shape:
        return x
    if math.prod(shape) != x.numel():
        raise _C.ShapeError(f"reshape: cannot reshape {list(x.shape)} ({x.numel()} elements) into {wanted}")
    return _op("reshape", x, shape=shape)


view = reshape


def flatten(x, start_dim=0, end_dim=-1):
    """Merges dims start_dim..end_dim into one (a 0-d tensor becomes shape (1,))."""
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = _dim(start_dim, x.ndim), _dim(end_dim, x.ndim)
    return reshape(x, x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


def squeeze(x, dim=None):
    """Drops size-1 axes (all, or those in `dim`, an int or tuple; others are left alone)."""
    if dim is None:
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = [_dim(d, x.ndim) for d in ((dim,) if isinstance(dim, builtins.int) else dim)]
        dims = [d for d in dims if x.ndim and x.shape[d] == 1]
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in dims))


def unsqueeze(x, dim):
    """Inserts a size-1 axis at `dim` (negative counts from the end of the result)."""
    d = _C.normalize_axes([dim], x.ndim + 1)[0]
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def broadcast_to(x, shape):
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return _op("broadcast_to", x, shape=shape)


def expand(x, *shape):
    """broadcast_to, where -1 keeps a size (PyTorch's expand)."""
    shape = list(_shape_args(shape))
    lead = len(shape) - x.ndim
    for i in range(x.ndim):
        if shape[lead + i] == -1:
            shape[lead + i] = x.shape[i]
    return broadcast_to(x, tuple(shape))


def broadcast_tensors(*ts):
    """The tensors broadcast to their common shape; raises gt.ShapeError if there is none."""
    shape = ()
    for t in ts:
        shape = tuple(_C.broadcast_shapes(list(shape), list(t.shape)))
    return tuple(broadcast_to(t, shape) for t in ts)


def _slice(x, starts, steps, shape):
    """x[starts + i * steps] on every axis (the gt.slice op), or x when that is all of it."""
    starts, steps, shape = tuple(starts), tuple(steps), tuple(shape)
    if shape == x.shape and not builtins.any(starts):
        return x
    return _op("slice", x, shape=shape, starts=starts, steps=steps)


def narrow(x, dim, start, length):
    """x[..., start:start + length, ...] along `dim`; raises gt.ShapeError if it does not fit."""
    d = _dim(dim, x.ndim)
    starts, steps, shape = [0] * x.ndim, [1] * x.ndim, list(x.shape)
    starts[d], shape[d] = start, length
    return _slice(x, starts, steps, shape)


def _promote_all(ts):
    d = ts[0].dtype
    for t in ts[1:]:
        d = _dt.from_code(_C.promote_types(d.code, t.dtype.code))
    return [cast(t, d) for t in ts]


def cat(tensors, dim=0):
    """Joins tensors along `dim` (dtypes promote). Raises gt.ShapeError (a RuntimeError) if sizes
    differ elsewhere."""
    tensors = [t for t in tensors]
    if not tensors:
        raise _C.ShapeError("cat expects a non-empty list of tensors")
    if len(tensors) == 1:
        return tensors[0]
    tensors = _promote_all(tensors)
    d = _dim(dim, tensors[0].ndim)
    while len(tensors) > _MAX_CAT:  # one concat op joins at most _MAX_CAT: join in steps
        tensors = [tensors[i] if i + 1 == len(tensors) else
                   _op("concat", *tensors[i:i + _MAX_CAT], axis=d)
                   for i in range(0, len(tensors), _MAX_CAT)]
    return _op("concat", *tensors, axis=d)


_MAX_CAT = _C.max_concat_operands


concat = concatenate = cat


def stack(tensors, dim=0):
    """Joins same-shape tensors along a new axis `dim`."""
    tensors = list(tensors)
    if not tensors:
        raise _C.ShapeError("stack expects a non-empty list of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise _C.ShapeError(f"stack expects each tensor to be equal size, got {sorted(shapes)}")
    d = _C.normalize_axes([dim], tensors[0].ndim + 1)[0]
    return cat([unsqueeze(t, d) for t in tensors], d)


def split(x, split_size_or_sections, dim=0):
    """Pieces of `split_size` along `dim` (the last may be smaller), or of the listed sizes."""
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, builtins.int):
        size = split_size_or_sections
        if size <= 0:
            raise ValueError(f"split: split_size must be positive, got {size}")
        sizes = [builtins.min(size, n - i) for i in range(0, n, size)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise _C.ShapeError(f"split: sizes {sizes} do not add up to {n} (the size of dim {dim})")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks, dim=0):
    """At most `chunks` pieces of equal size (the last may be smaller) along `dim`."""
    n = x.shape[_dim(dim, x.ndim)]
    return split(x, builtins.max(1, -(-n // chunks)), dim)


def unbind(x, dim=0):
    """The slices of x along `dim`, each without that dim."""
    d = _dim(dim, x.ndim)
    return tuple(squeeze(p, d) for p in split(x, 1, d))


# ---------------------------------------------------------------- indexing ops

def _indices(index, size=None, what="index"):
    """An int64/int32 index tensor from a Tensor, list or array; client-known values are
    checked against `size` and negative ones wrapped."""
    if isinstance(index, Tensor):
        if index.dtype not in (_dt.int64, _dt.int32):
            raise IndexError(f"{what}: tensors used as indices must be long or int, got {index.dtype}")
        return index
    a = np.asarray(index)
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        if a.size == 0:
            a = a.astype(np.int64)
        else:
            raise IndexError(f"{what}: indices must be integers, got {a.dtype}")
    a = a.astype(np.int64)
    if size is not None and a.size:
        if a.max() >= size or a.min() < -size:
            bad = a[(a >= size) | (a < -size)][0]
            raise IndexError(f"{what}: index {bad} is out of bounds for size {size}")
        a = np.where(a < 0, a + size, a)
    return from_numpy(a)


def index_select(x, dim, index):
    """x's entries at `index` (1-D) along `dim`. Out-of-range indices in a Tensor are clamped on
    the worker; in a list or array they raise IndexError here."""
    d = _dim(dim, x.ndim)
    idx = _indices(index, x.shape[d], "index_select")
    if idx.ndim != 1:
        raise IndexError(f"index_select: index must be 1-D, got shape {idx.shape}")
    return _op("index_select", x, idx, axis=d)


def gather(x, dim, index):
    """torch.gather: out[i][j] = x[index[i][j]][j] for dim 0, likewise for other dims. `index`
    has x's sizes on every other axis."""
    d = _dim(dim, x.ndim)
    idx = _indices(index, x.shape[d], "gather")
    return _op("gather", x, idx, axis=d)


def take_along_dim(x, indices, dim):
    return gather(x, dim, indices)


def index_add_zeros(shape, dim, index, source):
    """Zeros of `shape` with source's slices added at `index` along `dim` (repeats add up)."""
    return _op("index_add", index, source, shape=shape, axis=dim)


def scatter_add_zeros(shape, dim, index, source):
    return _op("scatter_add", index, source, shape=shape, axis=dim)


def one_hot(indices, num_classes=-1, dtype=None):
    """One-hot rows for integer class indices: shape indices.shape + (C,). PyTorch gives int64;
    pass dtype=gt.float32 to get floats directly. num_classes=-1 needs the values (a fetch)."""
    if num_classes < 0:
        num_classes = builtins.int(indices.numpy().max()) + 1
    return _op("one_hot", indices, num_classes=num_classes, dtype=_dt.resolve(dtype or _dt.int64))


def embedding(indices, weight):
    """weight[indices]: rows of `weight` (V, D) for integer `indices` of any shape -> (*, D)."""
    idx = _indices(indices, weight.shape[0], "embedding")
    flat = reshape(idx, -1)
    rows = index_select(weight, 0, flat)
    return reshape(rows, idx.shape + weight.shape[1:])


# ---------------------------------------------------------------- reductions

def _axes(x, dim, axis):
    if axis is not None:
        dim = axis
    if dim is None:
        return _C.normalize_axes([], x.ndim)
    if isinstance(dim, builtins.int):
        dim = [dim]
    return _C.normalize_axes(list(dim), x.ndim)


def _reduce(op, x, dim, keepdim, axis, keepdims):
    keep = keepdims if keepdims is not None else keepdim
    axes = _axes(x, dim, axis)
    return _op(op, x, axes=axes, keepdims=builtins.bool(keep))


def sum(x, dim=None, keepdim=False, *, axis=None, keepdims=None, dtype=None):
    """Sum over `dim` (int, tuple, negative allowed; None = all). bool/int32 sum to int64."""
    if dtype is not None:
        x = cast(x, dtype)
    return _reduce("sum", x, dim, keepdim, axis, keepdims)


def mean(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Mean over `dim` (floats only, as PyTorch)."""
    return _reduce("mean", x, dim, keepdim, axis, keepdims)


def amax(x, dim=None, keepdim=False):
    """Maximum over `dim` (int or tuple); the gradient is split evenly between ties."""
    return _reduce("max", x, dim, keepdim, None, None)


def amin(x, dim=None, keepdim=False):
    return _reduce("min", x, dim, keepdim, None, None)


class MaxMin(tuple):
    """(values, indices) of max/min along a dim, as torch.return_types.max."""
    __slots__ = ()

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]


def _extremum(name, x, dim, keepdim, axis, keepdims):
    if isinstance(dim, Tensor):  # torch.max(a, b) is maximum
        return (maximum if name == "max" else minimum)(x, dim)
    if axis is not None:
        dim = axis
    keep = keepdims if keepdims is not None else keepdim
    if dim is None:
        return (amax if name == "max" else amin)(x)
    if not isinstance(dim, builtins.int):
        raise TypeError(f"{name}(dim) takes one int dim; use amax/amin for several")
    d = _dim(dim, x.ndim)
    idx = (argmax if name == "max" else argmin)(x, d, keepdim=True)
    values = gather(x, d, idx)  # the gradient goes to the index returned, as PyTorch
    if not keep:
        values, idx = squeeze(values, d), squeeze(idx, d)
    return MaxMin((values, idx))


def max(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """max(x): the largest value (gradient split between ties); max(x, dim): (values, indices)
    along dim (gradient to the first maximum); max(x, other): maximum(x, other)."""
    return _extremum("max", x, dim, keepdim, axis, keepdims)


def min(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    return _extremum("min", x, dim, keepdim, axis, keepdims)


def _arg(op, x, dim, keepdim):
    if dim is None:
        r = _op(op, reshape(x, -1), axes=[0])
        return reshape(r, (1,) * x.ndim) if keepdim else r
    return _op(op, x, axes=[_dim(dim, x.ndim)], keepdims=builtins.bool(keepdim))


def argmax(x, dim=None, keepdim=False):
    """int64 index of the first maximum along `dim` (None: of the flattened tensor)."""
    return _arg("argmax", x, dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    return _arg("argmin", x, dim, keepdim)


def var(x, dim=None, keepdim=False, *, correction=1, unbiased=None):
    """Variance over `dim` with Bessel's `correction` (PyTorch's default 1; unbiased=False is 0)."""
    if unbiased is not None:
        correction = 1 if unbiased else 0
    axes = _axes(x, dim, None)
    n = math.prod(x.shape[a] for a in axes) if x.ndim else 1
    d = x - mean(x, axes, keepdim=True)
    return sum(d * d, axes, keepdim) / builtins.max(n - correction, 0)


def std(x, dim=None, keepdim=False, *, correction=1, unbiased=None):
    return sqrt(var(x, dim, keepdim, correction=correction, unbiased=unbiased))


def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over `dim`, shifted by the max for stability."""
    axes = _axes(x, dim, None)
    m = amax(x, axes, keepdim=True).detach()
    r = log(sum(exp(x - m), axes, keepdim=True)) + m
    return r if keepdim else squeeze(r, axes)


def log_softmax(x, dim=-1):
    """x - logsumexp(x) along `dim` (max-shifted for stability)."""
    return x - logsumexp(x, dim, keepdim=True)


def softmax(x, dim=-1):
    e = exp(x - amax(x, dim, keepdim=True).detach())
    return e / sum(e, dim, keepdim=True)


def norm(x, p=2, dim=None, keepdim=False):
    """The p-norm (2 by default) over `dim` (None: all elements)."""
    if p == 2:
        return sqrt(sum(x * x, dim, keepdim))
    if p == 1:
        return sum(abs(x), dim, keepdim)
    return pow(sum(pow(abs(x), p), dim, keepdim), 1.0 / p)


def allclose(a, b, rtol=1e-5, atol=1e-8):
    return builtins.bool(np.allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol))


# ---------------------------------------------------------------- generated from the op spec

from ._ops import *  # noqa: E402,F401,F403 (the functions whose spec says `python: generated`)
from . import _ops  # noqa: E402

for _name in _ops.METHODS:
    setattr(Tensor, _name, getattr(_ops, _name))

multiply = mul
negative = neg
