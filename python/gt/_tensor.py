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

_OP = {name: _C.op_code(name) for name in (
    "upload", "full", "randn", "neg", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "cast",
    "add", "sub", "mul", "div", "pow", "maximum", "gt", "lt", "ge", "le", "eq", "ne", "where",
    "matmul", "transpose", "reshape", "broadcast_to", "sum", "mean", "max", "one_hot")}


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
        self._node = None  # (backward fn, inputs, saved) when made by a recorded op

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
        return np.frombuffer(data, dtype=_dt.from_code(code).numpy).reshape(shape).copy()

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
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __neg__(self): return neg(self)
    def __pos__(self): return self
    def __gt__(self, o): return _compare("gt", self, o)
    def __lt__(self, o): return _compare("lt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __eq__(self, o): return _compare("eq", self, o)
    def __ne__(self, o): return _compare("ne", self, o)
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
    def exp(self): return exp(self)
    def log(self): return log(self)
    def sqrt(self): return sqrt(self)
    def relu(self): return relu(self)
    def sigmoid(self): return sigmoid(self)
    def tanh(self): return tanh(self)
    def abs(self): return where(self < 0, -self, self)
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None): return sum(self, axis, keepdims, dim=dim, keepdim=keepdim)
    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None): return mean(self, axis, keepdims, dim=dim, keepdim=keepdim)
    def max(self, axis=None, keepdims=False, *, dim=None, keepdim=None): return max(self, axis, keepdims, dim=dim, keepdim=keepdim)
    def reshape(self, *shape): return reshape(self, *shape)
    def view(self, *shape): return reshape(self, *shape)
    def transpose(self, dim0=-2, dim1=-1): return transpose(self, dim0, dim1)
    def permute(self, *dims): return permute(self, *dims)
    def broadcast_to(self, shape): return broadcast_to(self, shape)
    def expand(self, *shape): return broadcast_to(self, _shape_args(shape))
    def log_softmax(self, dim=-1): return log_softmax(self, dim)
    def softmax(self, dim=-1): return softmax(self, dim)
    def to(self, dtype): return cast(self, dtype)
    def float(self): return cast(self, _dt.float32)
    def double(self): return cast(self, _dt.float64)
    def long(self): return cast(self, _dt.int64)
    def bool(self): return cast(self, _dt.bool)

    @property
    def T(self):
        return permute(self, *reversed(range(self.ndim)))


# ---------------------------------------------------------------- emitting ops

def _client():
    return _runtime.client()


def _make(result, inputs, backward=None, saved=None):
    """Wraps an emitted (id, shape, dtype) and records it on the tape if it needs a gradient."""
    client = _client()
    id, shape, code = result
    t = Tensor(_Handle(id, client), shape, _dt.from_code(code))
    if backward is not None and _ag.is_grad_enabled() and any(i.requires_grad for i in inputs):
        t.requires_grad = True
        t._node = (backward, inputs, saved)
    return t


def _emit(op, *inputs, backward=None, saved=None):
    return _make(_client().emit(_OP[op], [t._h.id for t in inputs]), inputs, backward, saved)


def _emit_attrs(op, inputs=(), shape=(), axes=(), keepdims=False, value=0.0, seed=0, count=0,
                dtype=_dt.float32, backward=None, saved=None):
    r = _client().emit_attrs(_OP[op], [t._h.id for t in inputs], list(shape), list(axes), keepdims,
                             value, seed, count, dtype.code)
    return _make(r, inputs, backward, saved)


_scalars = {}


def _scalar(value, like):
    """A 0-d tensor for a Python number in an op with tensor `like` (cached: scalars are immutable).
    int tensor with a float scalar -> float32, as PyTorch."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) > 0:
        return from_numpy(np.ascontiguousarray(value))
    value = value.item() if isinstance(value, np.generic) else value
    if isinstance(value, builtins.bool):
        d = like.dtype if like is not None else _dt.bool
    elif isinstance(value, builtins.int):
        d = like.dtype if like is not None and like.dtype != _dt.bool else _dt.int64
    elif isinstance(value, builtins.float):
        d = like.dtype if like is not None and like.dtype.is_floating_point else _dt.float32
    else:
        raise TypeError(f"expected a Tensor or a number, got {type(value).__name__}")
    key = (value, d.code, type(value))
    t = _scalars.get(key)
    if t is None or t._h.client is not _client():
        if len(_scalars) > 512:
            _scalars.clear()
        with _ag.no_grad():
            t = _emit_attrs("full", value=builtins.float(value), dtype=d)
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


# ---------------------------------------------------------------- creation

_seed = [0, 0]  # [seed, counter]: randn call n uses stream hash(seed, n)


def manual_seed(seed):
    """Makes gt.randn (and so nn.Linear's initialisation) reproducible."""
    _seed[0], _seed[1] = builtins.int(seed), 0


def _next_seed():
    _seed[1] += 1
    return (_seed[0] * 1_000_003 + _seed[1]) & 0x7FFFFFFFFFFFFFFF


def from_numpy(array, requires_grad=False):
    """Uploads a NumPy array (its dtype kept; float32, float64, int32, int64 or bool)."""
    array = np.ascontiguousarray(array)
    d = _dt.resolve(array.dtype)
    t = _make(_client().upload(array, list(array.shape), d.code), ())
    t.requires_grad = requires_grad
    return t


def tensor(data, dtype=None, requires_grad=False):
    """A tensor from nested lists, a number or a NumPy array. Python floats give float32, ints
    int64, bools bool (as PyTorch). Raises TypeError for an unknown dtype."""
    if isinstance(data, Tensor):
        data = data.numpy()
    a = np.asarray(data)
    if dtype is not None:
        a = a.astype(_dt.resolve(dtype).numpy)
    elif a.dtype == np.float64 and not isinstance(data, np.ndarray):
        a = a.astype(np.float32)
    elif a.dtype.kind in "iu" and a.dtype not in (np.int32, np.int64):
        a = a.astype(np.int64)
    return from_numpy(a, requires_grad=requires_grad)


def full(shape, value, dtype=None, requires_grad=False):
    d = _dt.resolve(dtype) if dtype is not None else (
        _dt.float32 if isinstance(value, builtins.float) else _dt.bool if isinstance(value, builtins.bool) else
        _dt.int64 if isinstance(value, builtins.int) else _dt.float32)
    t = _emit_attrs("full", shape=_shape_args((shape,) if isinstance(shape, builtins.int) else shape),
                    value=builtins.float(value), dtype=d)
    t.requires_grad = requires_grad
    return t


def zeros(*shape, dtype=None, requires_grad=False):
    return full(_shape_args(shape), 0.0, dtype or _dt.float32, requires_grad)


def ones(*shape, dtype=None, requires_grad=False):
    return full(_shape_args(shape), 1.0, dtype or _dt.float32, requires_grad)


def zeros_like(t, dtype=None):
    return zeros(t.shape, dtype=dtype or t.dtype)


def ones_like(t, dtype=None):
    return ones(t.shape, dtype=dtype or t.dtype)


def randn(*shape, dtype=None, requires_grad=False):
    """Standard normal samples (counter-based generator on the worker; see gt.manual_seed)."""
    t = _emit_attrs("randn", shape=_shape_args(shape), seed=_next_seed(), dtype=_dt.resolve(dtype or _dt.float32))
    t.requires_grad = requires_grad
    return t


# ---------------------------------------------------------------- elementwise

def add(a, b):
    a, b = _pair(a, b)
    return _emit("add", a, b, backward=_ag.add_backward)


def sub(a, b):
    a, b = _pair(a, b)
    return _emit("sub", a, b, backward=_ag.sub_backward)


def mul(a, b):
    a, b = _pair(a, b)
    return _emit("mul", a, b, backward=_ag.mul_backward)


def div(a, b):
    a, b = _pair(a, b)
    if not a.dtype.is_floating_point and not b.dtype.is_floating_point:
        a = cast(a, _dt.float32)  # true division, as PyTorch
    return _emit("div", a, b, backward=_ag.div_backward)


def pow(a, b):
    if isinstance(a, Tensor) and isinstance(b, (builtins.int, builtins.float)):
        if b == 2:
            return mul(a, a)
        if b == 1:
            return a
    a, b = _pair(a, b)
    return _emit("pow", a, b, backward=_ag.pow_backward)


def maximum(a, b):
    a, b = _pair(a, b)
    return _emit("maximum", a, b, backward=_ag.maximum_backward)


def _compare(op, a, b):
    a, b = _pair(a, b)
    return _emit(op, a, b)


def where(condition, a, b):
    """condition ? a : b, elementwise with broadcasting; `condition` must be bool."""
    ref = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    a, b = _scalar(a, ref), _scalar(b, ref)
    return _emit("where", condition, a, b, backward=_ag.where_backward)


def _unary(op):
    def f(x):
        return _emit(op, x, backward=_ag.UNARY_BACKWARD[op])
    f.__name__ = op
    f.__doc__ = f"Elementwise {op}; same shape and dtype as the input."
    return f


neg, exp, log, sqrt, relu, sigmoid, tanh = (_unary(o) for o in ("neg", "exp", "log", "sqrt", "relu", "sigmoid", "tanh"))


def cast(x, dtype):
    """x converted to `dtype` (to bool: x != 0)."""
    d = _dt.resolve(dtype)
    if d is x.dtype:
        return x
    return _emit_attrs("cast", (x,), dtype=d, backward=_ag.cast_backward if d.is_floating_point else None)


# ---------------------------------------------------------------- linear algebra and layout

def matmul(a, b):
    """NumPy/PyTorch matmul: (..., m, k) @ (..., k, n) -> (..., m, n), batch axes broadcast."""
    if a.ndim == 1 and b.ndim == 1:
        return reshape(matmul(reshape(a, 1, -1), reshape(b, -1, 1)), ())
    if a.ndim == 1:
        return reshape(matmul(reshape(a, 1, -1), b), b.shape[:-2] + b.shape[-1:])
    if b.ndim == 1:
        return reshape(matmul(a, reshape(b, -1, 1)), a.shape[:-1])
    return _emit("matmul", a, b, backward=_ag.matmul_backward)


def permute(x, *dims):
    dims = _shape_args(dims)
    perm = [d + x.ndim if d < 0 else d for d in dims]
    if perm == list(range(x.ndim)):
        return x
    return _emit_attrs("transpose", (x,), axes=perm, backward=_ag.transpose_backward, saved=perm)


def transpose(x, dim0=-2, dim1=-1):
    """Swaps two axes (PyTorch's transpose(dim0, dim1))."""
    perm = list(range(x.ndim))
    d0, d1 = _C.normalize_axes([dim0], x.ndim)[0], _C.normalize_axes([dim1], x.ndim)[0]
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return permute(x, *perm)


def reshape(x, *shape):
    """Same elements, new shape; one size may be -1. Raises ValueError if sizes do not match."""
    shape = list(_shape_args(shape))
    if shape.count(-1) > 1:
        raise ValueError("reshape: only one dimension can be -1")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or x.numel() % known:
            raise ValueError(f"reshape: cannot reshape {list(x.shape)} into {shape}")
        shape[shape.index(-1)] = x.numel() // known
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return _emit_attrs("reshape", (x,), shape=shape, backward=_ag.reshape_backward)


def broadcast_to(x, shape):
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return _emit_attrs("broadcast_to", (x,), shape=shape, backward=_ag.broadcast_backward)


# ---------------------------------------------------------------- reductions

def _axes(x, axis, dim):
    if dim is not None:
        axis = dim
    if axis is None:
        return _C.normalize_axes([], x.ndim)
    if isinstance(axis, builtins.int):
        axis = [axis]
    return _C.normalize_axes(list(axis), x.ndim)


def _reduce(op, x, axis, keepdims, dim, keepdim, backward):
    keep = keepdim if keepdim is not None else keepdims
    axes = _axes(x, axis, dim)
    return _emit_attrs(op, (x,), axes=axes, keepdims=keep, backward=backward, saved=(axes, keep))


def sum(x, axis=None, keepdims=False, *, dim=None, keepdim=None):
    """Sum over `axis` (int, tuple, negative allowed; None = all). bool/int32 sum to int64."""
    return _reduce("sum", x, axis, keepdims, dim, keepdim, _ag.sum_backward)


def mean(x, axis=None, keepdims=False, *, dim=None, keepdim=None):
    return _reduce("mean", x, axis, keepdims, dim, keepdim, _ag.mean_backward)


def max(x, axis=None, keepdims=False, *, dim=None, keepdim=None):
    """Maximum over `axis` (values only; gradient split evenly between ties, as PyTorch)."""
    return _reduce("max", x, axis, keepdims, dim, keepdim, _ag.max_backward)


def logsumexp(x, dim=-1, keepdim=False):
    m = max(x, dim, keepdims=True).detach()
    r = log(sum(exp(x - m), dim, keepdims=True)) + m
    return r if keepdim else reshape(r, tuple(s for i, s in enumerate(x.shape) if i != _axes(x, dim, None)[0]))


def log_softmax(x, dim=-1):
    """x - logsumexp(x) along `dim` (max-shifted for stability)."""
    return x - logsumexp(x, dim, keepdim=True)


def softmax(x, dim=-1):
    e = exp(x - max(x, dim, keepdims=True).detach())
    return e / sum(e, dim, keepdims=True)


def one_hot(indices, num_classes, dtype=None):
    """float32 (or `dtype`) one-hot rows for integer class indices: shape indices.shape + (C,)."""
    return _emit_attrs("one_hot", (indices,), count=num_classes, dtype=_dt.resolve(dtype or _dt.float32))
