"""Complex tensors: gt.complex64 and gt.complex128 (torch.cfloat, torch.cdouble).

A complex tensor is a pair of real tensors of one shape, its real and imaginary parts (float32
for complex64, float64 for complex128), held in the tensor's handle slot (`_Parts`). GT's
workers, compiler and autograd see only the real parts: every op that reaches `_op` with a
complex operand comes here (`op`) and is written with real ops, so gradients need nothing new.
The gradient of a real loss L with respect to a complex leaf z = x + iy is dL/dx + i dL/dy, as
PyTorch's ("Autograd for Complex Numbers", PyTorch docs: the conjugate Wirtinger derivative
times 2), and optimizers update a complex parameter as its two real parts, as PyTorch's do
(they step `torch.view_as_real(p)`).

What has a complex form: the ops that only move, select, sum or scale elements (reshape,
transpose, permute, slicing and indexing, index_select, gather, flip, cat/stack, sum, mean,
cumsum, tril/triu, where, pad), +, -, *, /, matmul/einsum (and through them nn.functional.linear),
neg, exp, log, sqrt, pow with a real exponent, abs, angle, conj, ==, !=, and casts. Other ops
raise TypeError naming the op. `x.real` and `x.imag` are the parts themselves (writing them
writes x, as PyTorch's views); `view_as_real(x)` is a new tensor, not a view.
"""
import builtins
import math
import warnings

import numpy as np

from . import _tensor as _T
from . import autograd as _ag
from . import dtypes as _dt


class _Parts:
    """A complex tensor's `_h` slot: its real and imaginary parts, two real gt.Tensors of one
    shape. Anything that asks it for a worker handle (an op without a complex form) gets a
    TypeError."""
    __slots__ = ("re", "im")

    def __init__(self, re, im):
        self.re, self.im = re, im

    def __getattr__(self, name):
        raise TypeError("this operation does not support complex tensors in GT (see gt._complex for the ops "
                        "that do)")


def _functions():
    from . import _functions  # (imports this module's importer)
    return _functions


def _new_part(t, keep_history):
    p = _T.Tensor(t._h, t.shape, t.dtype, t.requires_grad if keep_history else False)
    if keep_history:
        p._node = t._node
    return p


class ComplexTensor(_T.Tensor):
    """A complex gt.Tensor (dtype gt.complex64 or gt.complex128); see the module's docstring."""
    __slots__ = ()
    __hash__ = _T.Tensor.__hash__
    __torch_function__ = _T._disabled_torch_function_impl  # GT's own: ops give what they give

    def __init__(self, re, im=None, *_):
        if type(re) is _Parts:  # Tensor(z._h, ...) made elsewhere: new part objects, detached
            re, im = _new_part(re.re, False), _new_part(re.im, False)
        self._h = _Parts(re, im)
        self.shape = re.shape
        self.dtype = _dt.complex_of(re.dtype)
        self._node = None
        self._host = None

    # ------------------------------------------------------------ the parts
    @property
    def real(self):
        return self._h.re

    @real.setter
    def real(self, value):
        self._h.re.copy_(value)

    @property
    def imag(self):
        return self._h.im

    @imag.setter
    def imag(self, value):
        self._h.im.copy_(value)

    @property
    def requires_grad(self):
        return self._h.re.requires_grad or self._h.im.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self._h.re.requires_grad = self._h.im.requires_grad = flag

    def requires_grad_(self, flag=True):
        self._h.re.requires_grad_(flag)
        self._h.im.requires_grad_(flag)
        return self

    @property
    def grad(self):
        re, im = self._h.re.grad, self._h.im.grad
        if re is None and im is None:
            return None
        return ComplexTensor(re if re is not None else _T.zeros_like(self._h.re),
                             im if im is not None else _T.zeros_like(self._h.im))

    @grad.setter
    def grad(self, value):
        if value is None:
            self._h.re.grad = self._h.im.grad = None
        else:
            value = as_complex(value, self.dtype)
            self._h.re.grad, self._h.im.grad = value.real, value.imag

    @property
    def is_leaf(self):
        return self._h.re.is_leaf and self._h.im.is_leaf

    @property
    def grad_fn(self):
        return self._h.re.grad_fn or self._h.im.grad_fn

    @property
    def _version(self):
        return self._h.re._version + self._h.im._version

    def retain_grad(self):
        self._h.re.retain_grad()
        self._h.im.retain_grad()

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Backpropagates `gradient` (a complex tensor of this shape, dL/dRe + i dL/dIm);
        without one, RuntimeError, as PyTorch (a complex output has no implicit gradient)."""
        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for real scalar outputs")
        gradient = as_complex(gradient, self.dtype)
        parts = [(p, g) for p, g in ((self._h.re, gradient.real), (self._h.im, gradient.imag)) if p.requires_grad]
        if not parts:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        _ag.backward([p for p, _ in parts], [g for _, g in parts], retain_graph, create_graph)

    def detach(self):
        return ComplexTensor(self._h.re.detach(), self._h.im.detach())

    @property
    def data(self):
        return ComplexTensor(self._h.re.data, self._h.im.data)

    @data.setter
    def data(self, value):
        """`z.data = w`: z takes w's values, shape and dtype, as PyTorch's (p.data =
        p.data.to(torch.cdouble) makes p complex128; a real w makes z real)."""
        if not is_complex_tensor(value) or value.dtype != self.dtype:
            become(self, value.detach())
            self.shape = value.shape
            return
        self._h.re.data, self._h.im.data = value.real, value.imag
        self.shape = value.shape

    def clone(self, memory_format=None):
        return ComplexTensor(self._h.re.clone(), self._h.im.clone())

    # ------------------------------------------------------------ in place: each part in place
    def _before(self):
        return ComplexTensor(self._h.re._before(), self._h.im._before())

    def _assign(self, new):
        new = as_complex(new, self.dtype)
        if new.shape != self.shape:
            raise ValueError(f"in-place op would change the shape from {self.shape} to {new.shape}")
        self._h.re._assign(new.real)
        self._h.im._assign(new.imag)
        # a new handle object for the same parts: code that tells writes apart by handle sees
        # this one, and a view writes its values back into its base (Tensor._rebind)
        self._rebind(_Parts(self._h.re, self._h.im))
        return self

    def _assign_reshaped(self, new):
        self._h.re._assign_reshaped(new.real)
        self._h.im._assign_reshaped(new.imag)
        self.shape = new.shape
        return self

    def copy_(self, src, non_blocking=False):
        """src's values (a complex or real tensor, or a number; broadcast to this shape) in place."""
        src = as_complex(src, self.dtype)
        if src.shape != self.shape:
            src = _functions().broadcast_to(src, self.shape)
        return self._assign(src)

    def fill_(self, value):
        with _ag.no_grad():
            return self._assign(full(self.shape, value, self.dtype))

    def zero_(self):
        return self.fill_(0)

    # ------------------------------------------------------------ values
    def numpy(self):
        return (self._h.re.numpy() + 1j * self._h.im.numpy()).astype(self.dtype.numpy)

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to a Python scalar")
        return builtins.complex(self.numpy().reshape(()))

    def tolist(self):
        return self.numpy().tolist()

    def __format__(self, spec):
        if self.numel() == 1:
            return format(self.item(), spec)
        return object.__format__(self, spec) if not spec else format(str(self), spec)

    def __complex__(self):
        return self.item()

    def __bool__(self):
        return builtins.bool(self.item())

    def __repr__(self):
        return _repr(self)

    @property
    def is_meta(self):
        return self._h.re.is_meta

    def is_complex(self):
        return True

    def is_floating_point(self):
        return False

    def element_size(self):
        return self.dtype.itemsize

    def conj(self):
        return ComplexTensor(self._h.re, -self._h.im)

    conj_physical = conj

    def resolve_conj(self):
        return self

    resolve_neg = resolve_conj

    def is_conj(self):
        return False

    def angle(self):
        return angle(self)

    def abs(self):
        return _abs(self)

    __abs__ = absolute = abs

    def sgn(self):
        r = _abs(self)
        safe = _T.where(r == 0, _T.ones_like(r), r)
        return ComplexTensor(self._h.re / safe, self._h.im / safe)

    @property
    def H(self):
        return self.conj().transpose(-2, -1) if self.ndim == 2 else self.conj()

    @property
    def mH(self):
        return self.conj().transpose(-2, -1)

    # Orderings: PyTorch has none for complex numbers.
    def _no_order(self, other):
        raise RuntimeError(f"comparison is not supported for complex tensors ({self.dtype})")

    __lt__ = __le__ = __gt__ = __ge__ = _no_order

    # complex * tensor, tensor * complex ...: Python asks this subclass's reflected operator
    # first, which records the same op (and comes back through `op` below).
    def __eq__(self, o):
        return False if o is None else _T._op("eq", self, o)

    def __ne__(self, o):
        return True if o is None else _T._op("ne", self, o)

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
        for a in args:
            if isinstance(a, _dt.dtype):
                dtype = a
            elif isinstance(a, _T.Tensor):
                dtype = a.dtype
        out = self if dtype is None else _T.cast(self, dtype)
        return out.clone() if copy and out is self else out

    def type_as(self, other):
        return _T.cast(self, other.dtype)

    def cfloat(self):
        return _T.cast(self, _dt.complex64)

    def cdouble(self):
        return _T.cast(self, _dt.complex128)


def _real_dtype(d):
    return _dt.float64 if d is _dt.complex128 else _dt.float32


def is_complex_tensor(x):
    return isinstance(x, _T.Tensor) and type(x._h) is _Parts


def involved(operands):
    """Whether one of `operands` is a complex tensor (an op to compute with `op`)."""
    return builtins.any(isinstance(o, _T.Tensor) and type(o._h) is _Parts for o in operands)


def parts(x, d=None):
    """(real, imaginary) of tensor or number x; None for the imaginary part of a real one."""
    if isinstance(x, _T.Tensor):
        if type(x._h) is _Parts:
            return x._h.re, x._h.im
        return x, None
    if isinstance(x, builtins.complex):
        return x.real, x.imag
    return x, None


def as_complex(x, d=None):
    """x as a complex tensor (of dtype d's parts when given): a real tensor or number gets a
    zero imaginary part."""
    if isinstance(x, _T.Tensor) and type(x._h) is _Parts:
        if d is not None and x.dtype is not d:
            return _T.cast(x, d)
        return x if type(x) is ComplexTensor else ComplexTensor(x._h.re, x._h.im)
    real = _real_dtype(d) if d is not None else None
    if isinstance(x, _T.Tensor):
        x = x if real is None or x.dtype is real else _T.cast(x, real)
        if real is None and not x.dtype.is_floating_point:
            x = _T.cast(x, _dt.default_float())
        return ComplexTensor(x, _T.zeros_like(x))
    if isinstance(x, np.ndarray):
        return from_numpy(x.astype(d.numpy if d is not None else np.complex64))
    v = builtins.complex(x)
    real = real or _dt.default_float()
    return ComplexTensor(_T.tensor(v.real, dtype=real), _T.tensor(v.imag, dtype=real))


def _pair(re, im):
    """The complex tensor re + i im (broadcast to one shape; im None means 0)."""
    if im is None:
        im = _T.zeros_like(re)
    if re.shape != im.shape:
        shape = np.broadcast_shapes(tuple(re.shape), tuple(im.shape))
        re, im = re.expand(*shape), im.expand(*shape)
    return ComplexTensor(re, im)


def become(t, new):
    """Tensor t (a module's parameter or buffer: it stays the same object) takes new's values
    and dtype, real or complex, keeping whether it requires grad (Module.to(dtype))."""
    from .nn.modules import Parameter, ComplexParameter
    requires_grad = t.requires_grad
    if is_complex_tensor(new):
        if not is_complex_tensor(t):
            t.__class__ = ComplexParameter if isinstance(t, Parameter) else ComplexTensor
        t._h = _Parts(new.real.detach().requires_grad_(requires_grad),
                      new.imag.detach().requires_grad_(requires_grad))
    else:
        if is_complex_tensor(t):
            t.__class__ = Parameter if isinstance(t, Parameter) else _T.Tensor
            t.grad, t._node, t._host = None, None, None
        t._h = new._h
        t.requires_grad = requires_grad
    t.dtype = new.dtype


# ---------------------------------------------------------------- creation
def complex_dtype_of(x):
    """The complex dtype whose parts have x's dtype (float32 -> complex64, float64 -> complex128)."""
    return _dt.complex_of(x.dtype)


def full(shape, value, d, requires_grad=False):
    v = builtins.complex(value)
    real = _real_dtype(d)
    re, im = _T.full(shape, v.real, dtype=real), _T.full(shape, v.imag, dtype=real)
    return ComplexTensor(re.requires_grad_(requires_grad), im.requires_grad_(requires_grad))


def random(op, shape, d, requires_grad, generator):
    """rand: real and imaginary parts uniform in [0, 1); randn: standard complex normal (each
    part normal with variance 1/2, as PyTorch's)."""
    real = _real_dtype(d)
    re, im = (_T._random(op, shape, real, False, generator) for _ in range(2))
    if op == "randn":
        re, im = re * math.sqrt(0.5), im * math.sqrt(0.5)
    return ComplexTensor(re.requires_grad_(requires_grad), im.requires_grad_(requires_grad))


def from_numpy(a, requires_grad=False):
    d = _dt.complex128 if a.dtype == np.complex128 else _dt.complex64
    real = _dt.numpy_dtype(_real_dtype(d))
    re = _T.from_numpy(np.asarray(a.real, dtype=real, order="C"), requires_grad)  # (ascontiguousarray: 0-d -> 1-d)
    im = _T.from_numpy(np.asarray(a.imag, dtype=real, order="C"), requires_grad)
    return ComplexTensor(re, im)


def cast(x, d):
    """x (real or complex) as dtype d: to a complex dtype, each part cast (a real x gets a zero
    imaginary part); a complex x to a real dtype loses its imaginary part, with PyTorch's
    warning."""
    re, im = parts(x)
    if d.is_complex:
        real = _real_dtype(d)
        if not re.dtype.is_floating_point and re.dtype is not _dt.bool:
            re = _T.cast(re, real)
        return ComplexTensor(_T.cast(re, real), _T.zeros(re.shape, dtype=real) if im is None else _T.cast(im, real))
    warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=4)
    return _T.cast(re, d)


# ---------------------------------------------------------------- ops on complex operands
# Ops whose result is the same op applied to the real and to the imaginary parts: they move,
# select, sum or scale elements (a real-linear map). The operands at these positions are the
# complex ones (the others, indices and masks, are used for both parts as they are).
_PER_PART = {
    "reshape": (0,), "transpose": (0,), "broadcast_to": (0,), "slice": (0,), "flip": (0,), "tril": (0,),
    "triu": (0,), "sum": (0,), "mean": (0,), "cumsum": (0,), "neg": (0,), "index_select": (0,), "gather": (0,),
    "im2col": (0,), "col2im": (0,), "slice_scatter": (0, 1), "index_add": (0, 2), "scatter_add": (0, 2),
    "where": (1, 2), "add": (0, 1), "sub": (0, 1), "concat": None,  # None: every operand
}


def op(name, operands, attrs):
    """Op `name` of ops/*.yaml on operands of which at least one is complex, computed with real
    ops. Raises TypeError for an op without a complex form."""
    rule = _PER_PART.get(name)
    if name in _PER_PART:
        positions = range(len(operands)) if rule is None else rule
        d = _result_dtype(operands[i] for i in positions)
        real_ops, imag_ops = list(operands), list(operands)
        for i in positions:
            re, im = parts(operands[i])
            if isinstance(re, _T.Tensor) and re.dtype != _real_dtype(d):
                re = _T.cast(re, _real_dtype(d))
            if im is None:
                im = _T.zeros_like(re) if isinstance(re, _T.Tensor) else 0.0
            real_ops[i], imag_ops[i] = re, im
        if name in ("add", "sub") and not is_complex_tensor(operands[1]):
            imag = parts(operands[0])[1]  # z + real: the imaginary part is z's
        elif name == "add" and not is_complex_tensor(operands[0]):
            imag = parts(operands[1])[1]
        else:
            imag = _T._op(name, *imag_ops, **attrs)
        return _pair(_T._op(name, *real_ops, **attrs), imag)
    if name == "mul":
        (a, b), (c, e) = parts(operands[0]), parts(operands[1])
        if b is None:
            return _pair(a * c, a * e)
        if e is None:
            return _pair(a * c, b * c)
        return _pair(a * c - b * e, a * e + b * c)
    if name == "div":
        (a, b), (c, e) = parts(operands[0]), parts(operands[1])
        if e is None:
            return _pair(a / c, b / c)
        denominator = c * c + e * e
        if b is None:
            return _pair(a * c / denominator, -a * e / denominator)
        return _pair((a * c + b * e) / denominator, (b * c - a * e) / denominator)
    if name == "matmul":
        (a, b), (c, e) = parts(operands[0]), parts(operands[1])
        def mm(x, y):  # (PyTorch's autocast casts no complex product)
            return _T._op("matmul", x, y)
        if b is None or e is None:  # (as PyTorch's: no promotion in a product)
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {operands[0].dtype} != "
                               f"{operands[1].dtype}")
        return _pair(mm(a, c) - mm(b, e), mm(a, e) + mm(b, c))
    if name in ("eq", "ne"):
        (a, b), (c, e) = parts(operands[0]), parts(operands[1])
        same = (a == c) & (b == (e if e is not None else 0))
        return same if name == "eq" else ~same
    if name == "exp":
        a, b = parts(operands[0])
        m = _T._op("exp", a)
        return _pair(m * _T._op("cos", b), m * _T._op("sin", b))
    if name == "log":
        a, b = parts(operands[0])
        return _pair(_T._op("log", _abs(operands[0])), _T._op("atan2", b, a))
    if name == "sqrt":
        return _power(operands[0], 0.5)
    if name == "pow":
        if is_complex_tensor(operands[1]):  # z ** w = exp(w log z) (principal branch, as PyTorch's)
            base = operands[0] if is_complex_tensor(operands[0]) else as_complex(operands[0], operands[1].dtype)
            return op("exp", [op("mul", [operands[1], op("log", [base], {})], {})], {})
        return _power(operands[0], operands[1])
    if name == "abs":
        return _abs(operands[0])
    if name == "cast":
        return cast(operands[0], attrs["dtype"] if isinstance(attrs["dtype"], _dt.dtype)
                    else _dt.from_code(attrs["dtype"]))
    raise TypeError(f"{name}: GT's complex tensors do not support this op (they support reshaping, indexing, "
                    f"sums, +, -, *, /, matmul, exp, log, abs, angle, conj and the torch.fft functions)")


def _result_dtype(operands):
    d = _dt.complex64
    for o in operands:
        if isinstance(o, _T.Tensor) and (o.dtype is _dt.complex128 or o.dtype is _dt.float64):
            d = _dt.complex128
    return d


def _abs_function():
    """|a + ib| = sqrt(a^2 + b^2), with gradient (a, b) / |z|, and 0 at z = 0 (PyTorch's
    choice there, where the modulus has no derivative): a gt.autograd.Function (made on first
    use: gt.autograd imports this module's importer)."""
    class Abs(_ag.Function):
        @staticmethod
        def forward(ctx, a, b):
            r = _T._op("sqrt", a * a + b * b)
            ctx.save_for_backward(a, b, r)
            return r

        @staticmethod
        def backward(ctx, g):
            a, b, r = ctx.saved_tensors
            zero = r == 0
            scale = _T.where(zero, _T.zeros_like(r), g / _T.where(zero, _T.ones_like(r), r))
            return scale * a, scale * b
    return Abs


_Abs = []


def _abs(z):
    if not _Abs:
        _Abs.append(_abs_function())
    a, b = parts(z)
    return _Abs[0].apply(a, b)


def angle(z):
    """The argument of each element, in (-pi, pi] (atan2(imag, real)); 0 or pi for a real
    tensor's elements, as torch.angle."""
    a, b = parts(z)
    if b is None:
        return _T.where(a < 0, _T.full_like(a, math.pi), _T.zeros_like(a)) if a.dtype.is_floating_point else \
            _T.where(a < 0, math.pi, 0.0)
    return _T._op("atan2", b, a)


def _power(z, p):
    """z ** p for a real exponent p: |z|^p (cos p theta + i sin p theta)."""
    r, theta = _abs(z), angle(z)
    magnitude = r ** p
    return _pair(magnitude * _T._op("cos", theta * p), magnitude * _T._op("sin", theta * p))


# ---------------------------------------------------------------- gt's functions
def real(x):
    """The real part: a complex tensor's own real part (writing it writes x), or x itself for
    a real tensor, as torch.real."""
    return x._h.re if is_complex_tensor(x) else x


def imag(x):
    """The imaginary part of a complex tensor (writing it writes x). RuntimeError for a real
    tensor, as torch.imag."""
    if not is_complex_tensor(x):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return x._h.im


def conj(x):
    """The complex conjugate (x itself for a real tensor)."""
    return x.conj() if is_complex_tensor(x) else x


def complex(real, imag):
    """torch.complex: the complex tensor real + i imag from two float32 (complex64) or float64
    (complex128) tensors of one dtype (broadcast together). TypeError for other dtypes."""
    for t in (real, imag):
        if not isinstance(t, _T.Tensor) or t.dtype not in (_dt.float32, _dt.float64, _dt.float16):
            raise TypeError(f"complex(): expected both inputs to be Half, Float or Double tensors but got "
                            f"{getattr(t, 'dtype', type(t).__name__)}")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype} but got scalar type {imag.dtype} for "
                           "second argument")
    return _pair(real, imag)


def polar(abs, angle):
    """torch.polar: abs * (cos(angle) + i sin(angle)), elementwise."""
    return complex(abs * _T._op("cos", angle), abs * _T._op("sin", angle))


def view_as_real(x):
    """A real tensor of shape (*x.shape, 2): each element's real and imaginary parts. Unlike
    PyTorch's (a view), a new tensor: writing it does not write x."""
    if not is_complex_tensor(x):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _functions().stack([x._h.re, x._h.im], -1)


def view_as_complex(x):
    """The complex tensor of shape x.shape[:-1] whose parts are x[..., 0] and x[..., 1] (x
    float32 or float64 with a last dimension of size 2, else RuntimeError). Its parts are views
    of x, so writing them writes x."""
    if x.dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    return ComplexTensor(x[..., 0], x[..., 1])


# ---------------------------------------------------------------- printing
def _repr(z):
    """As PyTorch prints a complex tensor: tensor([1.0000+2.0000j, 0.5000-1.0000j]), each part
    with the real printing rules (gt._tensor._float_formatter), the imaginary part's sign
    written."""
    a = z.numpy()
    if z.is_meta:
        return f"tensor(..., device='meta', size={tuple(z.shape)}, dtype={z.dtype})"
    re_fmt = _T._float_formatter(np.asarray(a.real, dtype=np.float64)) or {}
    im_fmt = _T._float_formatter(np.asarray(np.abs(a.imag), dtype=np.float64)) or {}
    f_re = re_fmt.get("float_kind", repr)
    f_im = im_fmt.get("float_kind", repr)

    def one(v):
        sign = "-" if (v.imag < 0 or (v.imag == 0 and math.copysign(1, v.imag) < 0)) else "+"
        return f"{f_re(v.real)}{sign}{f_im(abs(v.imag)).strip()}j"
    body = np.array2string(a, separator=", ", prefix="tensor(", formatter={"complex_kind": one},
                           threshold=1000, edgeitems=3)
    extras = ""
    if z.dtype is not _dt.complex64 and _dt.default_float() is _dt.float32 or \
            (z.dtype is _dt.complex64 and _dt.default_float() is _dt.float64):
        extras += f", dtype={z.dtype}"
    if z.grad_fn is not None:
        extras += ", grad_fn=<ComplexBackward>"
    elif z.requires_grad:
        extras += ", requires_grad=True"
    return f"tensor({body}{extras})"
