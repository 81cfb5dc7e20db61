"""gt.Tensor: a handle to a tensor that lives on a worker, and how an op is recorded.

Every op records one instruction with the client (no waiting); shapes and dtypes come back
from the op table at once, so shape errors raise at the line that made them. Values travel
only when asked for (`.numpy()`, `.item()`, `print`).

This module holds the class with its Python operators, `_op` (record one op of ops/*.yaml),
the creation functions and the arithmetic behind the operators. The functions generated from
the op spec (gt._ops) and the hand-written ones (gt._functions) are built on it and register
their Tensor methods here with `_method`; gt._indexing adds `x[...]`.
"""
import builtins
import functools
import inspect
import math
import os
import struct
import sys
import time
import weakref

import numpy as np

from . import _C, _device, _runtime
from . import dtypes as _dt
from . import autograd as _ag


# .item() of these dtypes unpacks the value itself (a NumPy array costs more than the read).
_UNPACK_SCALAR = {_dt.float32: struct.Struct("=f").unpack, _dt.float64: struct.Struct("=d").unpack,
                  _dt.int32: struct.Struct("=i").unpack, _dt.int64: struct.Struct("=q").unpack,
                  _dt.bool: struct.Struct("=?").unpack}



# A tensor's values never change (in-place ops rebind the Python object to a new handle), so
# the client may keep what it fetched: Tensor._host is (handle, array) for a tensor fetched
# whole, or (handle, weakref to base, base_handle, key) for base[key] with int indices of a
# base of at most 1 MiB, which reads the element from the base's values, fetched whole once
# (the weak reference keeps nothing alive on the workers; a Dataset's
# `self.ixes[idx].item()` per sample then waits once, not once per sample). Either is valid
# only while the handles are still the tensors' own.
_HOLD_BYTES = 1 << 20
_Handle = _C.Handle  # a worker tensor's handle (a complex tensor's is a gt._complex._Parts)
_META = _device.device("meta")


_INTS = (_dt.int64, _dt.int32)


def _known_int(out, fn, a, b):
    """`out` (= fn(a, b) computed on the worker), knowing its values too when it is a small
    integer tensor whose operands' values the client holds (Tensor._host) or are Python ints:
    int64/int32 +, - and * wrap alike in NumPy and on the worker, so `data[i:i + T]` for an `i`
    of a held index tensor (nanoGPT's get_batch) reads `i + T` without a sync."""
    values = []
    for x in (a, b):
        if isinstance(x, Tensor):
            x = _held(x) if x._host is not None else None
            if x is None:
                return out
        elif type(x) is not builtins.int:
            return out
        values.append(x)
    if math.prod(out.shape) <= 64:
        with np.errstate(over="ignore"):
            v = np.asarray(fn(*[np.asarray(x, dtype=_dt.numpy_dtype(out.dtype)) for x in values]))
        if v.shape == tuple(out.shape):
            out._host = (out._h, v.astype(_dt.numpy_dtype(out.dtype)))
    return out


def _held(t):
    """t's values if the client holds them (or can read them from its base at one fetch), else None."""
    h = t._host
    if h is None or h[0] is not t._h:
        return None
    if len(h) == 2:
        return h[1]
    _, base_ref, base_handle, key = h
    base = base_ref()
    if base is None or base._h is not base_handle:
        return None
    values = _held(base)
    if values is None:
        values = base.numpy()
    return np.asarray(values[key])


class _PrintOptions:
    """torch._tensor_str.PRINT_OPTS: how tensors print (set_printoptions changes it)."""
    precision, threshold, edgeitems, linewidth, sci_mode = 4, 1000, 3, 80, None

    def __repr__(self):
        return f"PrintOptions({get_printoptions()})"


PRINT_OPTS = _PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print, as torch.set_printoptions: `precision` digits after the point (4),
    more than `threshold` elements (1000) summarized to `edgeitems` (3) at each end of every
    axis, lines of `linewidth` characters (80); profile 'default', 'short' or 'full' sets all
    four first; sci_mode True / False forces scientific or fixed notation (None, as every call
    without it: chosen from the values)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"profile must be 'default', 'short' or 'full', got {profile!r}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options, a dict (torch.get_printoptions)."""
    return {name: getattr(PRINT_OPTS, name) for name in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


def _float_formatter(a):
    """PyTorch's way to print floats (the rules of torch/_tensor_str.py): whole numbers as `1.`,
    else PRINT_OPTS.precision (4) decimals (`0.0000, 0.7854`); scientific notation (`1.2346e+05`)
    when the largest magnitude is over 1e8 or over 1000 times the smallest nonzero one, or (not
    whole numbers) the smallest is under 1e-4, unless PRINT_OPTS.sci_mode says; every element
    padded to one width. None (NumPy's printing) for other dtypes."""
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
        return None
    values = np.asarray(a, dtype=np.float64)
    edge = PRINT_OPTS.edgeitems
    if values.size > PRINT_OPTS.threshold:  # summarized: only the first and last edgeitems along each axis are shown
        for axis in range(values.ndim):
            if values.shape[axis] > 2 * edge:
                values = np.take(values, list(range(edge)) + list(range(-edge, 0)), axis=axis)
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    p = PRINT_OPTS.precision
    if finite.size and np.all(finite == np.round(finite)):
        sci = nonzero.size > 0 and (nonzero.max() / nonzero.min() > 1000 or nonzero.max() > 1e8)
        sci = sci if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        fmt = (lambda v: f"{v:.{p}e}") if sci else (lambda v: f"{v:.0f}.")
    else:
        sci = nonzero.size > 0 and (nonzero.max() / nonzero.min() > 1000 or nonzero.max() > 1e8 or nonzero.min() < 1e-4)
        sci = sci if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode
        fmt = (lambda v: f"{v:.{p}e}") if sci else (lambda v: f"{v:.{p}f}")

    def one(v):
        v = float(v)
        return ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")) if not math.isfinite(v) else fmt(v)
    # The width is the widest nonzero finite value's (nan and inf are padded to it, never
    # counted: tensor([-inf, 5.]), tensor([   inf, 5.0000, 1.5000]), as PyTorch's _Formatter).
    width = builtins.max((len(fmt(v)) for v in finite[finite != 0].flat), default=1)
    return {"float_kind": lambda v: one(v).rjust(width)}


class Size(_C._SizeBase):
    """torch.Size: a tensor's shape (`x.shape`, `x.size()`), a tuple of ints that compares
    equal to any tuple of the same ints; a slice of it is a Size too (its base, in the client
    core, keeps indexing as fast as a tuple's)."""
    __module__ = "gt"
    __slots__ = ()  # a tuple's layout: the client core makes these directly (gt._C.set_size_type)

    def __repr__(self):
        return f"{_dt.package[0]}.Size({list(self)})"

    __str__ = __repr__

    def numel(self):
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __add__(self, other):
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):  # (1,) + x.shape: a Size, as PyTorch's
        return Size(tuple.__add__(tuple(other), self))

    def __reduce__(self):
        return (Size, (tuple(self),))


_C.set_size_type(Size)


_h_slot = None  # Tensor._h's slot descriptor (set below the class)


def _initialized(t):
    """Whether Tensor t has its handle already (its __init__ ran, or as_subclass made it)."""
    try:
        _h_slot.__get__(t)
        return True
    except AttributeError:
        return False


class _ViewOf:
    """Where a view's values were read from: `base[key]` (basic indexing), as of the base's
    write count `version`. A view holds a base that is itself a view (`x[i][j] = v` writes
    through `x[i]`, which nothing else holds) and refers to any other base weakly: GT's views
    are copies, so holding the base would keep its worker memory too, and once nothing else
    holds it nothing can see a write through the view."""
    __slots__ = ("_base", "key", "version", "base_shape", "written")

    def __init__(self, base, key):
        # (strongly when the base itself writes through: a view, or an x.data alias a script
        # does not keep, x.data[0].fill_(1), whose write must still reach x)
        self._base = base if getattr(base, "_view_of", None) is not None or getattr(base, "_data_of", None) \
            is not None else weakref.ref(base)
        self.key = key
        self.version = base._version
        self.base_shape = base.shape  # (a base whose shape changed in place, x.unsqueeze_(0), is let go)
        self.written = None  # the view's handle last written back into the base

    def base(self):
        b = self._base
        return b if type(b) is not weakref.ref else b()

    def check_writable(self):
        """Raises PyTorch's error for an in-place write to a view of a leaf that requires grad."""
        base = self.base()
        while base is not None:
            if base.requires_grad and base.is_leaf and _ag.is_grad_enabled():
                raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                                   "operation (wrap the update in `with gt.no_grad():`)")
            up = getattr(base, "_view_of", None)
            base = up.base() if up is not None else None

    def refresh(self, view):
        base = self.base()
        if base is None or base.shape != self.base_shape:
            view._view_of = None
            return
        base._fresh()
        if base._version != self.version:
            again = self.key.read(base) if type(self.key) is _Layout else base[self.key]
            view._h = again._h
            view._writes = view._version + 1  # (its own views are stale now too)
            if not view.is_leaf or again._node is not None:
                view._node = again._node
                view._made = None  # (its node and values are new together)
            self.version = base._version

    def write_back(self, view):
        base = self.base()
        if base is None or base.shape != self.base_shape:
            view._view_of = None
            return
        if type(self.key) is _Layout:
            self.key.write(base, view)
        else:
            base[self.key] = view  # rebinds base, and what base was read from in turn
        # the base holds the view's values now: the view is as fresh as if read again, and
        # `base[key] = view` next (what `base[key] += 1` does after the write) changes nothing
        self.version, self.written = base._version, view._h


class _Layout:
    """The key of a view made by a layout method (x.view, reshape, flatten, squeeze, unsqueeze,
    transpose, permute, t, T, mT, movedim, diagonal, ...: gt._views): `fn(base)` reads it again;
    writing it puts its values back into base: reshaped (`same_order`: the elements in base's
    order), or each at the flat position of base that fn reads (fn of base's positions), or by
    `writer(base, view)` when given (x.view(dtype): the bytes reinterpreted back)."""
    __slots__ = ("fn", "same_order", "writer")

    def __init__(self, fn, same_order, writer=None):
        self.fn, self.same_order, self.writer = fn, same_order, writer

    def read(self, base):
        return self.fn(base)

    def write(self, base, view):
        from . import _functions as F
        if self.writer is not None:
            self.writer(base, view)
            return
        if self.same_order:
            base._assign(F.reshape(view, base.shape))
            return
        from ._indexing import put_rows
        from .autograd import no_grad
        with no_grad():
            positions = F.reshape(self.fn(F.reshape(arange(base.numel()), base.shape)), (-1,))
        flat = put_rows(F.reshape(base._before(), (-1,)), positions, F.reshape(view, (-1,)))
        base._assign(F.reshape(flat, base.shape))


def _link_view(view, base, key):
    """Marks `view`, read as base[key] with basic indices, as a view of base (Tensor._rebind)."""
    if view is not base:
        view._view_of = _ViewOf(base, key)
    return view


class Tensor:
    """A tensor on a GT worker.

    Attributes: `shape` (a gt.Size: a tuple of ints), `dtype` (gt.dtype), `requires_grad`, `grad`
    (a Tensor or None; accumulates over backward() calls on leaves). Most methods (x.exp(),
    x.sum(dim), x[i], ...) are the gt functions of the same name, registered by the modules
    that define them.
    """
    __module__ = "gt"  # type(x) is gt.Tensor, as torch.Tensor
    __slots__ = ("_h", "shape", "dtype", "requires_grad", "grad", "_node", "_hooks", "_retains_grad", "_data_of",
                 "_host", "_writes", "_view_of", "_priors", "_made", "__weakref__", "__dict__")  # (__dict__: a script's own
    # attributes, `p._no_weight_decay = True`, as a torch.Tensor takes them)
    __array_priority__ = 1000  # numpy_scalar * tensor -> Tensor.__rmul__

    def __init__(self, handle=None, shape=None, dtype=None, requires_grad=False, *sizes, **kwargs):
        if shape is None or dtype is None or type(handle) is not _Handle:
            if _initialized(self):  # Sub(x, img_size=...) whose __new__ returned x.as_subclass(Sub): Python
                return  # calls __init__ with the same arguments, which (as PyTorch's Tensor.__init__) change nothing
            if kwargs:
                raise TypeError(f"Tensor() got unexpected keyword arguments {', '.join(map(repr, kwargs))}")
            if type(handle) is _complex._Parts:  # Tensor(z._h, ...) of a complex z: a complex tensor
                self.__class__ = _complex.ComplexTensor
                return _complex.ComplexTensor.__init__(self, handle)
            more = (requires_grad, *sizes) if sizes or type(requires_grad) is builtins.int else ()
            requires_grad = False if more else requires_grad  # (gt.Tensor(2, 2, 14, 4): four sizes)
            handle, shape, dtype = _legacy_constructor(handle, shape, dtype, *more)  # gt.Tensor([1, 2]), gt.Tensor(2, 3)
        self._h = handle
        self.shape = shape if type(shape) is Size else Size(shape)
        self.dtype = dtype
        self.requires_grad = requires_grad
        self.grad = None
        self._node = None  # an autograd.Node when made by a recorded op that needs a gradient
        self._host = None  # values the client holds already (see _held)

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
        """The shape (a gt.Size, a tuple), or the size of dimension `dim`."""
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        return math.prod(self.shape)

    @property
    def is_leaf(self):
        return self._node is None

    # ------------------------------------------------------------ values
    def numpy(self):
        """The values as a NumPy array (waits for them). Raises RuntimeError (gt.RemoteError)
        naming the failed op and your line if the computation failed on a worker. A tensor of
        at most 1 MiB keeps a copy of what it fetched (its values never change: an in-place op
        rebinds it to new ones), so reading it again, or an element of it (`x[i].item()`), waits
        for nothing."""
        held = _held(self)
        if held is not None:
            return np.array(held)
        if self.is_meta:
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        if _pending_checks:
            run_pending_checks()
        start = time.perf_counter_ns()
        data, shape, code = self._h.client.fetch(self._h.id)
        if _trace is not None:
            _trace.sync(start, len(data))
        _runtime.after_wait((time.perf_counter_ns() - start) * 1e-9)
        a = np.frombuffer(data, dtype=_dt.numpy_dtype(_dt.from_code(code))).reshape(shape).copy()
        if a.nbytes <= _HOLD_BYTES:
            self._host = (self._h, a.copy())
        return a

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        """The single value as a Python number. Raises RuntimeError if numel() != 1 (as PyTorch)."""
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to a Python scalar")
        held = _held(self)
        if held is not None:
            return held.reshape(()).item()
        if self.is_meta:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        unpack = _UNPACK_SCALAR.get(self.dtype)
        if unpack is None:  # float16, bfloat16: through NumPy
            return self.numpy().reshape(()).item()
        if _pending_checks:
            run_pending_checks()
        start = time.perf_counter_ns()
        data, _, _ = self._h.client.fetch(self._h.id)
        if _trace is not None:
            _trace.sync(start, len(data))
        _runtime.after_wait((time.perf_counter_ns() - start) * 1e-9)
        return unpack(data)[0]

    def tolist(self):
        if self.is_meta:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return self.numpy().tolist()

    @property
    def data(self):
        """This tensor without its autograd history, sharing its values: an in-place op on it
        (`p.data.add_(u)`, `p.data.copy_(w)`, `p.data.normal_()`) changes this tensor's values,
        as PyTorch's shared storage does, without recording autograd history."""
        d = Tensor(self._h, self.shape, self.dtype)
        d._data_of = self
        return d

    @data.setter
    def data(self, value):
        """`p.data = t`: p now holds t's values, shape and dtype; its autograd role (a leaf that
        requires grad) stays."""
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, not {type(value).__name__}")
        self._h, self.shape, self.dtype = value._h, value.shape, value.dtype

    def detach(self):
        return Tensor(self._h, self.shape, self.dtype)

    def _is_view(self):
        """Whether this tensor was read from another one with basic indexing, select or narrow
        (writes to it reach that tensor; see _rebind)."""
        return getattr(self, "_view_of", None) is not None

    def __repr__(self):
        # As PyTorch's: a subclass of a library or script prints its own name ("MetaTensor([...])")
        own = type(self).__module__.partition(".")[0] in ("gt", "torch")  # (GT's classes are torch's under gt.as_torch)
        prefix = "tensor(" if own else type(self).__name__ + "("
        suffixes = []
        if self.is_meta:  # PyTorch's: tensor(..., device='meta', size=(2, 3), dtype=torch.float64)
            body = "..."
            suffixes.append("device='meta'")
            suffixes.append(f"size={tuple(self.shape)}")
            if self.dtype not in (_dt.default_float(), _dt.int64, _dt.bool):
                suffixes.append(f"dtype={self.dtype!r}")
        else:
            a = self.numpy()
            if a.dtype.name == "bfloat16":  # (NumPy formats ml_dtypes' bfloat16 as no float kind)
                a = a.astype(np.float32)
            formatter = _float_formatter(a)
            if a.dtype == np.bool_ and a.all():  # PyTorch pads bools to "False"'s width only when one is False
                formatter = {"bool": lambda v: "True"}
            # PyTorch fits (80 - indent) // (width + 2) elements on a line, its closing brackets not
            # counted; NumPy counts them: one more column per axis beyond the first.
            threshold = PRINT_OPTS.threshold
            body = np.array2string(a, separator=", ", prefix=prefix, precision=PRINT_OPTS.precision, formatter=formatter,
                                   max_line_width=PRINT_OPTS.linewidth + max(a.ndim - 1, 0), edgeitems=PRINT_OPTS.edgeitems,
                                   threshold=sys.maxsize if threshold == math.inf else threshold
                                   ).replace(", ..., ", ",  ..., ")
            if a.size == 0:  # as PyTorch: "[]", the size unless 1-D, the dtype unless the default float
                body = "[]"
                if a.ndim != 1:
                    suffixes.append(f"size={tuple(self.shape)}")
                if self.dtype != _dt.default_float():
                    suffixes.append(f"dtype={self.dtype!r}")
            elif self.dtype not in (_dt.default_float(), _dt.int64, _dt.bool):
                suffixes.append(f"dtype={self.dtype!r}")
        node = self._node
        if node is not None:
            suffixes.append(f"grad_fn=<{node.name()}>")  # PyTorch's: tensor([...], grad_fn=<AddBackward0>)
        elif self.requires_grad:
            suffixes.append("requires_grad=True")
        # As PyTorch: a suffix that would pass column 80 goes on a line of its own.
        out = prefix + body
        last = len(out) - out.rfind("\n") + 1
        for suffix in suffixes:
            if last + len(suffix) + 2 > PRINT_OPTS.linewidth:
                out += ",\n" + " " * len(prefix) + suffix
                last = len(prefix) + len(suffix)
            else:
                out += ", " + suffix
                last += len(suffix) + 2
        return out + ")"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        """The tensor's slices along axis 0, in order (views: writing one writes this tensor), as
        PyTorch's; TypeError for a 0-d tensor."""
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        for i in builtins.range(self.shape[0]):
            yield self[i]

    def __contains__(self, value):
        """`value in x`: whether any element equals value (a number or a tensor), as PyTorch's
        (a wait: it reads the answer)."""
        return builtins.bool((self == value).any().item())

    def __reversed__(self):
        """reversed(x): x flipped along axis 0 (a tensor, as PyTorch's; a 0-d tensor itself)."""
        return self if not self.shape else self.flip(0)

    def __reduce_ex__(self, protocol):
        """pickle, copy.deepcopy and gt.save: the values (fetched from the workers), dtype, shape
        and requires_grad; unpickling uploads them again (a copy, as deepcopy of a torch.Tensor).
        The autograd history is not kept. A meta tensor pickles as its shape and dtype."""
        state = dict(self.__dict__) or None  # (a script's own attributes come along, as PyTorch's)
        cls = Tensor if type(self) is _complex.ComplexTensor else type(self)  # (its dtype makes it complex again)
        if self.is_meta:
            return (_rebuild_meta, (cls, self.dtype.name, self.shape, self.requires_grad), state)
        return (_rebuild_tensor, (cls, self.numpy().tobytes(), self.dtype.name, self.shape, self.requires_grad), state)

    def __format__(self, spec):
        """f"{loss:.4f}": a 0-d tensor formats as its number; another tensor without a format
        spec as str(); else TypeError, as PyTorch."""
        if not self.shape:
            return format(self.item(), spec)
        if not spec:
            return str(self)
        raise TypeError(f"unsupported format string passed to Tensor.__format__ (a tensor of shape {self.shape})")

    def __bool__(self):
        return builtins.bool(self.item())

    def __float__(self):
        if self.requires_grad and not _warned_float[0]:  # (PyTorch's warning, once a process; .item() gives none)
            import warnings
            _warned_float[0] = True
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                          "Consider using tensor.detach() first.", UserWarning, stacklevel=2)
        return builtins.float(self.item())

    def __int__(self):
        return builtins.int(self.item())

    def __index__(self):
        """An integer tensor of one element as a Python int (list indices, slices, range), as
        PyTorch; waits for the value. TypeError for other tensors."""
        if self.dtype.is_floating_point or self.dtype == _dt.bool or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    # ------------------------------------------------------------ autograd
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulates d(self)/d(leaf) into every leaf's `.grad` (and that of tensors that called
        retain_grad()), or with `inputs` (a tensor or a sequence) into those tensors' `.grad`
        only. `gradient` is required for a non-scalar tensor (as PyTorch); with create_graph the
        gradients are differentiable again. Raises RuntimeError if self does not require grad or
        is not a scalar without `gradient`, and ValueError if `gradient` has another shape."""
        if inputs is not None:
            return _ag.backward(self, gradient, retain_graph, create_graph, inputs=inputs)
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if gradient is None:
            if self.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs (shape {self.shape})")
            gradient = ones(self.shape, dtype=self.dtype, device=_META if self.is_meta else None)
        elif not isinstance(gradient, Tensor):
            gradient = tensor(gradient, dtype=self.dtype)
        if gradient.shape != self.shape:
            raise ValueError(f"gradient has shape {gradient.shape}, expected {self.shape}")
        _ag.backward(self, gradient, bool(retain_graph), create_graph)

    def register_hook(self, hook):
        """hook(grad) runs when this tensor's gradient is computed; it may return a tensor to use
        instead. Returns a handle whose remove() unregisters it. Raises RuntimeError if the
        tensor does not require grad."""
        return _ag.register_hook(self, hook)

    def retain_grad(self):
        """Keeps this non-leaf tensor's gradient in `.grad` during backward (leaves always do)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._node is not None:
            self._retains_grad = True

    @property
    def retains_grad(self):
        return self._node is not None and getattr(self, "_retains_grad", False)

    @property
    def grad_fn(self):
        """The autograd node that made this tensor (None for a leaf), as PyTorch's grad_fn."""
        return self._node

    def requires_grad_(self, flag=True):
        self.requires_grad = flag
        return self

    # ------------------------------------------------------------ operators
    # (_known_int only for integer results: a float op pays one membership test, not a call)
    def __add__(self, o):
        try:
            out = _op("add", self, o)
            return _known_int(out, np.add, self, o) if out.dtype in _INTS else out
        except NotAnOperand:
            return NotImplemented

    # o + x and o * x record x first, as PyTorch's (grad_fn.next_functions puts x's node first)
    def __radd__(self, o):
        try:
            out = _op("add", self, o)
            return _known_int(out, np.add, o, self) if out.dtype in _INTS else out
        except NotAnOperand:
            return NotImplemented

    def __sub__(self, o):
        try:
            out = _op("sub", self, o)
            return _known_int(out, np.subtract, self, o) if out.dtype in _INTS else out
        except NotAnOperand:
            return NotImplemented

    def __rsub__(self, o):
        try:
            out = _op("sub", o, self)
            return _known_int(out, np.subtract, o, self) if out.dtype in _INTS else out
        except NotAnOperand:
            return NotImplemented

    def __mul__(self, o):
        try:
            out = _op("mul", self, o)
            return _known_int(out, np.multiply, self, o) if out.dtype in _INTS else out
        except NotAnOperand:
            return NotImplemented

    def __rmul__(self, o):
        try:
            out = _op("mul", self, o)
            return _known_int(out, np.multiply, o, self) if out.dtype in _INTS else out
        except NotAnOperand:
            return NotImplemented

    def __truediv__(self, o):
        try:
            return div(self, o)
        except NotAnOperand:
            return NotImplemented
    def __rtruediv__(self, o):
        try:
            return div(o, self)
        except NotAnOperand:
            return NotImplemented
    def __pow__(self, o):
        try:
            return pow(self, o)
        except NotAnOperand:
            return NotImplemented
    def __rpow__(self, o):
        try:
            return pow(o, self)
        except NotAnOperand:
            return NotImplemented
    def __floordiv__(self, o):
        try:
            return _op("floor_divide", self, o)
        except NotAnOperand:
            return NotImplemented
    def __rfloordiv__(self, o):
        try:
            return _op("floor_divide", o, self)
        except NotAnOperand:
            return NotImplemented
    def __mod__(self, o):
        try:
            return _op("remainder", self, o)
        except NotAnOperand:
            return NotImplemented
    def __rmod__(self, o):
        try:
            return _op("remainder", o, self)
        except NotAnOperand:
            return NotImplemented
    # & | ^ ~: on bool tensors the logical ops, on integer tensors the bitwise ones; floating
    # point raises gt.DTypeError (PyTorch raises a RuntimeError there too)
    def __and__(self, o):
        try:
            return _bitwise("and", self, o)
        except NotAnOperand:
            return NotImplemented
    def __rand__(self, o):
        try:
            return _bitwise("and", o, self)
        except NotAnOperand:
            return NotImplemented
    def __or__(self, o):
        try:
            return _bitwise("or", self, o)
        except NotAnOperand:
            return NotImplemented
    def __ror__(self, o):
        try:
            return _bitwise("or", o, self)
        except NotAnOperand:
            return NotImplemented
    def __xor__(self, o):
        try:
            return _bitwise("xor", self, o)
        except NotAnOperand:
            return NotImplemented
    def __rxor__(self, o):
        try:
            return _bitwise("xor", o, self)
        except NotAnOperand:
            return NotImplemented
    def __invert__(self): return logical_not(self) if self.dtype == _dt.bool else _op("bitwise_not", self)
    def __iand__(self, o): return self._in_place(lambda a, b: _bitwise("and", a, b), o)
    def __ior__(self, o): return self._in_place(lambda a, b: _bitwise("or", a, b), o)
    def __ixor__(self, o): return self._in_place(lambda a, b: _bitwise("xor", a, b), o)
    def __abs__(self): return _op("abs", self)
    def __matmul__(self, o):
        try:
            return matmul(self, o)
        except NotAnOperand:
            return NotImplemented
    def __rmatmul__(self, o):
        try:
            return matmul(o, self)
        except NotAnOperand:
            return NotImplemented
    def __neg__(self): return _op("neg", self)
    def __pos__(self): return self
    def __gt__(self, o):
        try:
            return _op("gt", self, o)
        except NotAnOperand:
            return NotImplemented
    def __lt__(self, o):
        try:
            return _op("lt", self, o)
        except NotAnOperand:
            return NotImplemented
    def __ge__(self, o):
        try:
            return _op("ge", self, o)
        except NotAnOperand:
            return NotImplemented
    def __le__(self, o):
        try:
            return _op("le", self, o)
        except NotAnOperand:
            return NotImplemented
    def __eq__(self, o):
        try:
            return False if o is None else _op("eq", self, o)  # (x == None: False, as PyTorch)
        except NotAnOperand:
            return NotImplemented

    def __ne__(self, o):
        try:
            return True if o is None else _op("ne", self, o)
        except NotAnOperand:
            return NotImplemented

    __hash__ = object.__hash__

    # In-place forms compute a new tensor and rebind this one to it: the old values are freed
    # when nothing else holds them, so `p -= lr * g` leaks nothing.
    def _assign(self, new):
        if new.shape != self.shape:
            raise ValueError(f"in-place op would change the shape from {self.shape} to {new.shape}")
        if self.requires_grad and self.is_leaf and _ag.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation "
                               "(wrap the update in `with gt.no_grad():`)")
        view = getattr(self, "_view_of", None)
        if view is not None:
            view.check_writable()
        if new.dtype != self.dtype:
            new = new.to(self.dtype)
        if new.is_meta != self.is_meta:  # a meta tensor stays one (copy_ of values into it); the other way has no data
            if new.is_meta:
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            new = new.to("meta")
        node = self._node
        self._take_history(new)
        self._rebind(new._h)
        if self._node is not node:  # (a new node: ordered by the new values' id)
            self._made = None
        base = getattr(self, "_data_of", None)
        if base is not None and base.shape == self.shape and base.dtype == self.dtype:
            base._rebind(new._h)  # x.data's in-place op changes x's values (not its history)
        return self

    def _keep_prior(self):
        """Before an in-place change of this tensor's values or history (an in-place op, detach_):
        the ops recorded so far read the state before it, so a tensor with history keeps that
        state (its values and its node) in _priors with the client's next id; the backward pass
        hands it to the ops recorded earlier (python/src/module.cpp, runBackward's resolve).
        That state (a Tensor), or None when it had no history."""
        if self._node is None or not self.requires_grad:
            return None
        before = Tensor(self._h, self.shape, self.dtype, True)
        before._node = self._node
        hooks = getattr(self, "_hooks", None)
        if hooks:  # a hook registered before the write sees the gradient of the values before it, as PyTorch's
            before._hooks, self._hooks = hooks, None
        self._priors = (getattr(self, "_priors", None) or ()) + ((_runtime.client().next_id(), before),)
        return before

    def _made_now(self, source):
        """This tensor, sharing `source`'s values, was given a node now (clone, an identity node)
        rather than by a recorded op: once source has been written in place with history, its
        place among those writes is the client's next id (_made; the backward pass orders an
        input's states by it, and this tensor's own id is the write's, which reads as before it)."""
        if getattr(source, "_priors", None):
            self._made = _runtime.client().next_id()
        return self

    def _take_history(self, new):
        """For an in-place op: this tensor's autograd history becomes new's (the state before is
        kept for the ops recorded earlier: _keep_prior)."""
        before = self._keep_prior()
        if before is not None:
            if new._node is None:
                if _ag.is_grad_enabled():  # overwritten by values without history (fill_, zero_, copy_ of a
                    self._node = _ag.Node(fill_backward, (before,), None, _runtime.current_signal())  # constant):
                # the old values get a zero gradient (PyTorch's FillBackward0); under no_grad the history is
                return  # kept and the gradient passes through the write, as PyTorch's
        if not self.is_leaf or new._node is not None:
            self._node = new._node
            self.requires_grad = self.requires_grad or new.requires_grad  # x.add_(w): x joins w's history

    def _assign_reshaped(self, new):
        """An in-place op that changes the shape (unsqueeze_, squeeze_, t_, transpose_): this
        tensor takes new's values, shape and history. It changes only this tensor, as PyTorch's
        changes a view's metadata only: a view stops writing back to what it was read from."""
        if self.requires_grad and self.is_leaf and _ag.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation "
                               "(wrap the update in `with gt.no_grad():`)")
        self._view_of = None
        self._take_history(new)
        self.shape = new.shape
        self._h = new._h
        self._writes = self._version + 1
        return self

    def _rebind(self, h):
        """This tensor takes handle `h`'s values (an in-place op's result): the write is counted
        (`_version`, as PyTorch's), and a view read from another tensor (`x[key]` with basic
        indices, `select`, `narrow`, iterating over x) writes its new values back into that
        tensor, as a view sharing PyTorch's memory would: `x[0][1] = 5`, `x[0].add_(1)` and
        `for row in x: row[0] = 0` change x. The other direction is not kept: a view read
        before x changed keeps the values it was read with until it is written (then it is
        read again first, see _fresh)."""
        node = getattr(self, "_node", None)
        if node is not None and getattr(self, "_made", None) is None:
            # new values under the same node (x.data's in-place op; an in-place op resets this when it
            # gives x a node): the node's place among the writes stays the old values' id, which the
            # backward pass orders inputs' states by (python/src/module.cpp, inputsOf)
            self._made = getattr(self._h, "id", None)  # (a complex tensor's parts keep their own)
        self._h = h
        self._writes = getattr(self, "_writes", 0) + 1
        view = getattr(self, "_view_of", None)
        if view is not None:
            view.write_back(self)

    @property
    def _version(self):
        """How many in-place writes this tensor has had (PyTorch's version counter)."""
        return getattr(self, "_writes", 0)

    def _fresh(self):
        """A view about to be written reads its values from its base again if the base was
        written since the view was read (PyTorch's view would see those writes)."""
        view = getattr(self, "_view_of", None)
        if view is not None:
            view.refresh(self)

    def _before(self):
        """A new Tensor with this one's values and history, for an in-place op to read: its result
        rebinds this object, so the op's autograd node must hold the old state, not `self`
        (which would then be its own input)."""
        self._fresh()
        t = Tensor(self._h, self.shape, self.dtype, self.requires_grad)
        t._node = self._node
        return t

    def _in_place(self, fn, *args, **kwargs):
        """self rebound to fn(self, *args, **kwargs), computed from self's state before (in `args`
        too: x *= x squares the old x)."""
        before = self._before()
        return self._assign(fn(before, *[before if a is self else a for a in args], **kwargs))

    def __iadd__(self, o): return self._in_place(add, o)
    def __isub__(self, o): return self._in_place(sub, o)
    def __imul__(self, o): return self._in_place(lambda a, b: _op("mul", a, b), o)
    def __itruediv__(self, o): return self._in_place(div, o)

    def zero_(self):
        """In place: x = 0 (x's old values get a zero gradient; a leaf that requires grad raises
        outside no_grad, as PyTorch's)."""
        return self._assign(zeros(self.shape, dtype=self.dtype))

    # ------------------------------------------------------------ methods
    # (the methods that are gt functions, x.sum(dim) for gt.sum(x, dim), are registered by the
    # modules defining them: here with @_method, gt._ops, gt._functions and gt._indexing)
    def expand_as(self, other): return _op("broadcast_to", self, shape=other.shape) if self.shape != other.shape else self
    def contiguous(self, memory_format=None): return self
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
        """x.to(dtype), x.to(device), x.to(device, dtype), x.to(other) (its dtype), as PyTorch: a
        cast when the dtype differs, else x itself (a copy with copy=True). A device is checked
        and moves nothing: x stays on its session's workers (see gt.device)."""
        for a in args:
            if a is None:  # x.to(None): no dtype, no device (x itself), as PyTorch's
                continue
            if isinstance(a, Tensor):
                dtype = a.dtype if dtype is None else dtype
            elif _device.is_device(a) or (isinstance(a, builtins.int) and not isinstance(a, builtins.bool)):
                device = a
            else:
                dtype = _device.dtype_or_device(a)
        meta = self.is_meta
        if device is not None and (_device.check(device).type == "meta") != meta:
            if meta:
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            with _device.meta_scope():  # x.to("meta"): a tensor of x's type without values
                out = zeros(self.shape, dtype=dtype or self.dtype)
            return _leaf(out, self.requires_grad and out.dtype.is_floating_point)
        if dtype is not None:
            dtype = _dt.resolve(dtype)
        out = self if dtype is None or dtype == self.dtype else cast(self, dtype)
        return out.clone() if copy and out is self else out

    def cpu(self):
        """x itself: a tensor stays on its session's workers (see gt.device); .numpy() fetches it.
        NotImplementedError for a meta tensor (it has no values)."""
        if self.is_meta:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return self

    def cuda(self, device=None, non_blocking=False):
        """x itself (see gt.device): GPU workers, when the session has them, hold it already."""
        if device is not None:
            _device.check(device)
        return self.cpu()

    def share_memory_(self):
        """x itself, with a warning: another process gets a tensor's values, never its memory
        (gt.multiprocessing), so its changes stay its own."""
        import warnings
        warnings.warn("share_memory_(): GT processes share no tensor memory; a process this tensor is "
                      "passed to gets its values, and its changes stay its own (gt.multiprocessing)", stacklevel=2)
        return self

    def is_shared(self):
        """False: no process shares a GT tensor's memory (gt.multiprocessing)."""
        return False

    @property
    def device(self):
        """What the session's workers are: gt.device('cuda', 0) on GPU workers, else 'cpu';
        gt.device('meta') for a meta tensor (see gt._device)."""
        return _META if self.is_meta else _device.session_device()

    @property
    def is_meta(self):
        """Whether this is a meta tensor: a shape and a dtype without values (gt.device("meta"))."""
        return self._h.client.is_meta(self._h.id)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    # Devices GT has no workers for (scripts test them to pick a code path).
    is_xpu = is_mps = is_quantized = is_mkldnn = is_nested = property(lambda self: False)

    def type_as(self, other): return cast(self, other.dtype)
    def float(self): return cast(self, _dt.float32)
    def double(self): return cast(self, _dt.float64)
    def half(self): return cast(self, _dt.float16)
    def bfloat16(self): return cast(self, _dt.bfloat16)
    def long(self): return cast(self, _dt.int64)
    def int(self): return cast(self, _dt.int32)
    def byte(self): return cast(self, _dt.uint8)
    def char(self): return cast(self, _dt.int8)
    def short(self): return cast(self, _dt.int16)
    def bool(self): return cast(self, _dt.bool)
    def as_subclass(self, cls):
        """This tensor as an instance of `cls` (a subclass of Tensor), as PyTorch's: the same
        values, and attached to this tensor's autograd graph (gradients flow through to self).
        A view of self (gt._views): an in-place write to it writes self too."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass: expected a subclass of torch.Tensor, got {cls!r}")
        src = _same(self)
        out = Tensor.__new__(cls)
        Tensor.__init__(out, src._h, src.shape, src.dtype, src.requires_grad)
        out._node = src._node
        if not _complex.is_complex_tensor(self):
            from . import _views
            out._view_of = _views._link(self, _same, True)
        return out

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, **kwargs):
        """A `cls` instance holding data's values, detached, requiring grad as asked (PyTorch's
        private constructor of Parameter-like subclasses)."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"_make_subclass: expected a subclass of torch.Tensor, got {cls!r}")
        out = Tensor.__new__(cls)
        Tensor.__init__(out, data._h, data.shape, data.dtype, builtins.bool(require_grad))
        return out

    def __init_subclass__(cls, **kwargs):
        """A subclass takes part in the __torch_function__ protocol (gt.overrides) unless it sets
        `__torch_function__ = torch._C._disabled_torch_function_impl`."""
        super().__init_subclass__(**kwargs)
        from . import overrides
        overrides._on_subclass(cls)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """PyTorch's default: runs func(*args, **kwargs) with the protocol off for subclasses, and
        returns its tensors (also within tuples and lists) as `cls` instances; NotImplemented
        when a class in `types` is not a base of cls. See gt.overrides."""
        from . import overrides
        if kwargs is None:
            kwargs = {}
        if not builtins.all(issubclass(cls, t) for t in types):
            return NotImplemented
        with overrides.DisableTorchFunctionSubclass():
            ret = func(*args, **kwargs)
        return overrides.convert(ret, cls, args, kwargs)

    def new(self, *args, device=None):
        """The legacy constructor in x's dtype, as PyTorch's x.new: new(*sizes) or new(Size)
        zeros of that shape (PyTorch leaves them uninitialised), new(data) a tensor of a list or
        an array, new(tensor) that tensor (TypeError if its dtype is not x's), new() an empty
        tensor."""
        if device is not None:
            _device.check(device)
        if len(args) == 1 and isinstance(args[0], Size):
            return zeros(tuple(args[0]), dtype=self.dtype)
        if builtins.all(type(a) is builtins.int for a in args):
            return zeros(*(args or (0,)), dtype=self.dtype)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != self.dtype:
                raise TypeError(f"expected {self.dtype} (got {args[0].dtype})")
            return args[0]
        if len(args) == 1:
            return tensor(args[0], dtype=self.dtype)
        raise TypeError(f"new(): takes data (a list or an array) or sizes, got {args!r}")

    def resize_(self, *sizes, memory_format=None):
        """x reshaped in place to `sizes` (ints or one tuple), as PyTorch's: its first elements
        (in order) kept, new ones zero (PyTorch leaves them uninitialised). A tensor that
        requires grad raises RuntimeError, as PyTorch's."""
        shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        n, have = math.prod(shape), self.numel()
        flat = self.reshape(have)
        if n < have:
            flat = flat[:n]
        elif n > have:
            from . import _functions
            flat = _functions.cat([flat, zeros(n - have, dtype=self.dtype)], 0)
        return self._assign_reshaped(flat.reshape(shape))

    def resize_as_(self, other, memory_format=None):
        """x.resize_(other.shape)."""
        return self.resize_(tuple(other.shape))

    def new_zeros(self, *shape, dtype=None, device=None, requires_grad=False, size=None):
        shape = shape or ((size,) if size is not None else ())
        return zeros(*shape, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def new_ones(self, *shape, dtype=None, device=None, requires_grad=False, size=None):
        shape = shape or ((size,) if size is not None else ())
        return ones(*shape, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    def is_complex(self):
        """Whether the dtype is complex (complex64, complex128: gt._complex.ComplexTensor)."""
        return False

    @property
    def real(self):
        """x itself (a real tensor is its own real part), as PyTorch's."""
        return self

    @property
    def imag(self):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def conj(self):
        """x itself: a real tensor is its own conjugate."""
        return self

    conj_physical = resolve_conj = resolve_neg = conj

    def is_conj(self):
        return False

    def new_full(self, shape, value, dtype=None, device=None, requires_grad=False):
        return full(shape, value, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    @property
    def T(self):
        """The axes reversed (a 0-d or 1-d tensor is itself)."""
        return _transposed(self, list(reversed(range(self.ndim))))

    @property
    def mT(self):
        """The last two axes swapped. Raises gt.AxisError for fewer than two axes."""
        perm = list(range(self.ndim))
        d0, d1 = _dim(-2, self.ndim), _dim(-1, self.ndim)
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return _transposed(self, perm)

    def is_floating_point(self):
        return self.dtype.is_floating_point


# ---------------------------------------------------------------- emitting ops

def _client():
    return _runtime.client()


# Checks whose result the client reads at the next point it waits for values anyway (numpy(),
# item()), as CUDA's device-side asserts report at the next synchronization: gt.distributions'
# argument validation records them, so that making a distribution does not wait for the step.
_pending_checks = []  # (0-d bool tensor: all of a check held, message() -> str)
_MAX_PENDING = 256  # (then they are read at once: their tensors are freed)


def defer_check(ok, message):
    """Records that every element of bool tensor `ok` must be True; if not, the next wait for
    values raises ValueError(message())."""
    if ok.is_meta:  # (a meta tensor has no values to check)
        return
    from . import _functions
    with _ag.no_grad():
        _pending_checks.append((_functions.all(ok), message))
    if len(_pending_checks) >= _MAX_PENDING:
        run_pending_checks()


def run_pending_checks():
    """Reads every recorded check (one fetch) and raises ValueError for the first that failed."""
    from . import _functions
    checks = list(_pending_checks)
    _pending_checks.clear()
    if not checks:
        return
    with _ag.no_grad():
        flags = _functions.stack([ok for ok, _ in checks]).numpy()
    for (_, message), passed in zip(checks, flags):
        if not passed:
            raise ValueError(message())


def _make(result, inputs, backward=None, attrs=None):
    """Wraps a recorded (handle, shape, dtype) (_C.Client.op: the handle, a _C.Handle, frees the
    tensor when the last Tensor using it goes) and records it on the tape if it needs a gradient
    (a floating-point result of an op with a backward function and an input that requires grad).
    Runs once per op: written for speed (no generator, the client as emit left it)."""
    handle, shape, dtype = result
    t = Tensor(handle, shape, dtype)
    if backward is None or not t.dtype.is_floating_point:
        return t
    for i in inputs:
        if i.requires_grad:
            break
    else:
        return t
    if _ag.is_grad_enabled():
        t.requires_grad = True
        t._node = _ag.Node(backward, inputs, attrs, _runtime._signal_now)
    return t


# The client core records an op, makes its Tensor and hangs its autograd Node in one call
# (what _make does, for results of other calls); gt.autograd registers the types it makes.
_record = _C.record


def _op(name, *operands, backward=None, **attrs):
    """Records op `name` (ops/*.yaml) on `operands` with attributes by their spec names, and
    returns the new Tensor. Numbers among the operands become 0-d tensors like the first tensor
    operand. The op's derivative (its spec's `grad:` formulas) is its backward unless `backward`
    is given. Raises TypeError without a tensor operand, and what the op table raises for bad
    shapes or dtypes (gt.ShapeError, gt.DTypeError) at the user's line."""
    for o in operands:
        if not isinstance(o, Tensor):
            operands = _as_tensors(name, operands)
            break
    if attrs:
        _attr_codes(attrs)
    code = _codes.get(name)
    if code is None:
        code = _op_code(name)
    client = _runtime._client or _runtime.client()
    if _trace is None:
        try:
            return _record(client, code, operands, attrs, backward or _ag.formulas.get(name))
        except _C.DTypeError as refused:
            if name in _FLOAT_OF_INTS and not operands[0].dtype.is_floating_point:
                return _op(name, cast(operands[0], _dt.default_float()), backward=backward, **attrs)
            if name in _BOOL_AS_LOGICAL and len(operands) == 2 and builtins.all(t.dtype == _dt.bool for t in operands):
                return _op(_BOOL_AS_LOGICAL[name], *operands)
            if not _small_ints(operands, attrs):
                raise
            return _small_int_op(name, operands, backward, attrs, refused)
        except TypeError:
            if not _complex.involved(operands):
                raise
            return _complex.op(name, operands, attrs)
    if _complex.involved(operands):
        return _complex.op(name, operands, attrs)
    start = time.perf_counter_ns()
    try:
        out = _make(client.op(code, [t._h.id for t in operands], attrs), operands,
                    backward or _ag.formulas.get(name), attrs)
    except _C.DTypeError as refused:
        if name in _FLOAT_OF_INTS and not operands[0].dtype.is_floating_point:
            return _op(name, cast(operands[0], _dt.default_float()), backward=backward, **attrs)
        if name in _BOOL_AS_LOGICAL and len(operands) == 2 and builtins.all(t.dtype == _dt.bool for t in operands):
            return _op(_BOOL_AS_LOGICAL[name], *operands)
        if not _small_ints(operands, attrs):
            raise
        return _small_int_op(name, operands, backward, attrs, refused)
    _trace.op(name, start, out, inputs=operands)
    return out


def _derivative(code, g, result, inputs, attrs):
    """The gradients of the inputs of a recorded op (code `code`, `attrs` as recorded) given the
    gradient `g` of its `result`: its formulas from the derivative table, run by the client core
    (gt._C.Client.derivative). A plain backward pass records their ops straight into the
    session; with create_graph (grad mode on), gt.profiler or autocast they go through `_op`,
    which records them on the tape, traces and casts."""
    client = _runtime._client or _runtime.client()
    direct = _trace is None and _autocast_dtype is None and not _ag.is_grad_enabled()
    grads = client.derivative(code, g, result, inputs, attrs, direct)
    if direct or not _ag.is_grad_enabled():
        return grads
    return _linked_to_what_they_read(code, grads, result, inputs)  # (the client core's backward calls it too)


def _linked_to_what_they_read(code, grads, result, inputs):
    """With create_graph: a gradient that does not require grad although its formula reads a
    forward tensor that does (relu's reads its input through a comparison) is given a node with
    a zero derivative to those tensors, as PyTorch's graph has (threshold_backward): a second
    backward gives them zeros rather than leaving them without a gradient (gt._ops.READS)."""
    from ._ops import READS
    reads = READS.get(code)
    if reads is None:
        return grads
    out = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    for i, gi in enumerate(out):
        if i >= len(reads) or type(gi) is not Tensor or gi.requires_grad or not gi.dtype.is_floating_point:
            continue
        operands, reads_result = reads[i]
        sources = tuple(inputs[j] for j in operands if j < len(inputs) and isinstance(inputs[j], Tensor)
                        and inputs[j].requires_grad)
        if reads_result and isinstance(result, Tensor) and result.requires_grad:
            sources += (result,)
        if sources:
            linked = Tensor(gi._h, gi.shape, gi.dtype, True)
            linked._node = _ag.Node(_zero_gradients, sources, None, _runtime.current_signal())
            out[i] = linked
    return type(grads)(out) if isinstance(grads, (list, tuple)) else out[0]


def _zero_gradients(g, result, inputs, attrs):
    return tuple(zeros_like(t) for t in inputs)


_C.set_create_graph_link(_linked_to_what_they_read)


def _small_ints(operands, attrs):
    """Whether an op on `operands` (or making a `dtype` attribute's type) meets int8, int16 or uint8."""
    d = attrs.get("dtype")
    return builtins.any(t.dtype in _dt.SMALL_INTS for t in operands) or (
        d is not None and _dt.from_code(d) in _dt.SMALL_INTS)


# Unary ops of floats that PyTorch also takes on integer and bool tensors, computing in the
# default float dtype (torch.exp(torch.arange(3)) is float32): the op table refuses them, and
# `_op` casts first (only on that refusal: nothing on the path of float operands).
_FLOAT_OF_INTS = frozenset({"exp", "log", "sqrt", "sigmoid", "tanh", "log1p", "sin", "cos", "rsqrt", "erf", "atan",
                            "asin", "acos", "lgamma", "digamma"})

# Arithmetic of two bool tensors that PyTorch defines, as the logical op it is (bool * bool is
# and: transformers' generate multiplies two bool masks); the op table refuses it, and `_op`
# turns to these only on that refusal.
_BOOL_AS_LOGICAL = {"mul": "minimum", "add": "maximum"}  # (minimum and maximum of bools are and and or)

_INDEX_OPS = frozenset({"index_select", "gather", "scatter", "scatter_add", "index_add", "index_copy", "take",
                        "embedding"})  # ops whose int64 operands are indices


def _small_int_op(name, operands, backward, attrs, refused):
    """Op `name` on int8/int16/uint8 tensors, which workers only move and cast: computed on
    int32 casts of them, its int32 result cast back to PyTorch's result dtype (the operands'
    promoted small dtype; a bool, int64 or float result stays). The same values as PyTorch's,
    wrapping included: 8- and 16-bit arithmetic is 32-bit arithmetic truncated. An op that
    int32 does not take either (matmul) raises `refused`, the error naming the small dtype."""
    small = [t.dtype for t in operands if t.dtype in _dt.SMALL_INTS]
    wide = tuple(cast(t, _dt.int32) if t.dtype in _dt.SMALL_INTS else t for t in operands)
    try:
        if "dtype" in attrs and _dt.from_code(attrs["dtype"]) in _dt.SMALL_INTS:  # a creation op
            want = _dt.from_code(attrs["dtype"])
            return cast(_op(name, *wide, backward=backward, **dict(attrs, dtype=_dt.int32.code)), want)
        out = _op(name, *wide, backward=backward, **attrs)
    except _C.DTypeError:
        raise refused from None
    index_op = name in _INDEX_OPS  # its int64 operand is an index, not a value
    if out.dtype is _dt.int32 and builtins.all(t.dtype in _dt.SMALL_INTS or t.dtype is _dt.bool or t.ndim == 0
                                               or (index_op and t.dtype is _dt.int64) for t in operands):
        target = small[0]
        for d in small[1:]:
            target = _dt.promote_small(target, d)
        return cast(out, target)
    return out


def _foreach(name, *operands, **attrs):
    """Op `name` on the i-th element of each list among `operands`, for every i, as PyTorch's
    torch._foreach_* ops (its optimizers' default path): one call into the client core records
    them all, instead of one Python call per tensor. Each operand is a list of n Tensors or
    numbers, or one Tensor or number for every i (a number becomes a 0-d tensor like that
    element's first tensor, as in `_op`). Returns the n results, in order. Records no autograd
    history (an optimizer's update runs under no_grad). Raises ValueError for lists of
    different lengths, and what `_op` raises for the first element that fails."""
    lists = [o for o in operands if isinstance(o, (list, tuple))]
    n = max((len(o) for o in lists), default=0)
    if n == 0:
        return []
    tensors = next((o for o in lists if isinstance(o[0], Tensor)), None)
    if tensors is None:
        raise TypeError(f"{name}: foreach needs a list of gt.Tensors among its operands")
    ids = []
    for o in operands:
        if isinstance(o, Tensor):
            ids.append([o._h.id])
        elif isinstance(o, (list, tuple)):
            if len(o) != n:
                raise ValueError(f"{name}: foreach over lists of {len(o)} and {n} elements")
            ids.append([(x if isinstance(x, Tensor) else _scalar(x, tensors[i]))._h.id for i, x in enumerate(o)])
        else:
            ids.append([_scalar(o, t)._h.id for t in tensors])
    _attr_codes(attrs)
    code = _op_code(name)
    client = _runtime._client or _runtime.client()
    start = time.perf_counter_ns() if _trace is not None else 0
    out = [Tensor(*r) for r in client.op_foreach(code, ids, attrs)]
    if _trace is not None:  # the call's time shared out, so the trace's per-op totals stay true
        span = time.perf_counter_ns() - start
        for i, t in enumerate(out):
            _trace.op(name, start + span * i // n, t, end_ns=start + span * (i + 1) // n)
    return out


def _op_code(name):
    """The op table's code of op `name` (cached); ValueError for an unknown op."""
    code = _codes.get(name)
    if code is None:
        code = _codes[name] = _C.op_code(name)
    return code


def _attr_codes(attrs):
    """`attrs` with their gt.dtype values as dtype codes (in place), as the client core takes them."""
    for k, v in attrs.items():
        if isinstance(v, _dt.dtype):
            attrs[k] = v.code


def _as_tensors(name, operands):
    """`operands` with numbers as 0-d tensors like the first tensor among them."""
    ref = None
    for o in operands:
        if isinstance(o, Tensor):
            ref = o
            break
    if ref is None and operands:
        if len(operands) == 1:
            raise TypeError(f"{name}: expected a gt.Tensor, got {type(operands[0]).__name__}")
        raise TypeError(f"{name}: at least one operand must be a gt.Tensor")
    return tuple([o if isinstance(o, Tensor) else _scalar(o, ref) for o in operands])


_codes = {}  # op name -> op code, as _op first meets them
_trace = None  # gt.profiler's recorder while a trace is on (profiler.py sets it)


def _method(*names):
    """Decorator: the function is also a Tensor method (under its own name, or `names`), as
    torch.exp is Tensor.exp; `x.f(*args)` calls f(x, *args). The modules that define gt's
    functions register their methods with it."""
    def register(fn):
        for n in names or (fn.__name__,):
            setattr(Tensor, n, fn)
        return fn
    return register


_scalars = {}          # (value, dtype, type, signal) -> its 0-d tensor
_scalars_used = set()  # the keys looked up since the cache last made room
_MAX_SCALARS = 4096     # 0-d tensors on a worker: a few hundred KiB at most


def _evict_scalars():
    """Makes room in the scalar cache: the scalars no op used since the last time go, so a
    training step's constants (used every step) stay. (Clearing the whole cache at 512, as
    before, freed them in the middle of a step and recreated them, which changed that step's
    batch and cost a dispatcher plan-cache miss; any eviction still puts frees into one
    batch.)"""
    global _scalars_used
    for k in [k for k in _scalars if k not in _scalars_used]:
        del _scalars[k]
    if len(_scalars) >= _MAX_SCALARS:  # every one was used: start over
        _scalars.clear()
    _scalars_used = set()


def _scalar(value, like):
    """A 0-d tensor for a Python number in an op with tensor `like` (cached: scalars are immutable).
    int tensor with a float scalar -> float32, as PyTorch."""
    if type(value) is builtins.float and like is not None and like.dtype.is_floating_point:
        d = like.dtype  # the common case (x * 0.5), first
    elif isinstance(value, Tensor):
        return value
    elif isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) > 0:
        return from_numpy(np.asarray(value, order="C"))
    elif isinstance(value, (builtins.complex, np.complexfloating)):  # a complex tensor (gt._complex)
        return _complex.as_complex(value, _dt.complex_of(like.dtype) if like is not None else None)
    else:
        value = value.item() if isinstance(value, np.generic) else value
        d = _scalar_dtype(value, like)
    return _scalar_as(value, d)


def _scalar_as(value, d):
    """The cached 0-d tensor of Python number `value` in dtype `d` (the client core's backward
    formulas take their constants from here too)."""
    key = (value, d.code, type(value), _runtime._signal_now[0])  # a scalar lives where its signal says
    t = _scalars.get(key)
    if t is None or t._h.client is not _runtime._client:
        if len(_scalars) > _MAX_SCALARS:
            _evict_scalars()
        with _ag.no_grad(), _device.meta_scope(False):  # an ordinary tensor, also when first used in a meta op
            t = _op("full", value=builtins.float(value), dtype=d, shape=())
        _scalars[key] = t
    _scalars_used.add(key)
    return t


def _scalar_dtype(value, like):
    """The dtype a Python number takes in an op with tensor `like` (PyTorch's rules; for a
    complex `like`, that of its parts)."""
    if like is not None and like.dtype.is_complex:
        like = like._h.re
    if isinstance(value, builtins.bool):
        d = like.dtype if like is not None else _dt.bool
    elif isinstance(value, builtins.int):
        d = like.dtype if like is not None and like.dtype != _dt.bool else _dt.int64
    elif isinstance(value, builtins.float):
        d = like.dtype if like is not None and like.dtype.is_floating_point else _dt.default_float()
    else:
        raise NotAnOperand(f"expected a Tensor or a number, got {type(value).__name__}")
    return d


class NotAnOperand(TypeError):
    """An operand no op takes (None, a string, another library's object): Tensor's binary
    operators return NotImplemented for it, so Python tries the other operand's reflected
    method (`x * nested` calls nested.__rmul__(x)), as PyTorch's do."""


def _pair(a, b):
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a, b
    if isinstance(a, Tensor):
        return a, _scalar(b, a)
    if isinstance(b, Tensor):
        return _scalar(a, b), b
    raise TypeError("at least one operand must be a gt.Tensor")


def _shape_args(shape):
    """A shape given as ints or one sequence of them (zeros(2, 3), zeros((2, 3))); NumPy integers
    and 0-d integer tensors count as ints. Raises TypeError for a float (out_channels / 4), as
    PyTorch does."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if builtins.all(type(s) is builtins.int for s in shape):
        return tuple(shape)
    return tuple(_size(s, i) for i, s in enumerate(shape))


def _size(s, position):
    if isinstance(s, (builtins.float, np.floating)) or (isinstance(s, Tensor) and s.dtype.is_floating_point):
        raise TypeError(f"size must be a tuple of ints, but found element of type {type(s).__name__} at pos {position}")
    return builtins.int(s)



def _bitwise(op, a, b):
    """a & b, a | b, a ^ b: the logical op when both are bool (a Python bool counts as one),
    else gt.bitwise_<op> (integers; floating point raises gt.DTypeError)."""
    def is_bool(v):
        return v.dtype == _dt.bool if isinstance(v, Tensor) else isinstance(v, builtins.bool)
    if is_bool(a) and is_bool(b):
        return {"and": logical_and, "or": logical_or, "xor": logical_xor}[op](a, b)
    return _op("bitwise_" + op, a, b)


# ---------------------------------------------------------------- creation

_seed = [0, 0]  # [seed, counter]: random call n uses stream hash(seed, n)


def manual_seed(seed):
    """Makes gt.randn/gt.rand (and so every layer's initialisation and dropout) reproducible.
    Returns gt.default_generator, as torch.manual_seed."""
    _seed[0], _seed[1] = builtins.int(seed), 0
    return default_generator


def _next_seed():
    _seed[1] += 1
    return (_seed[0] * 1_000_003 + _seed[1]) & 0x7FFFFFFFFFFFFFFF


def _rng_state(state):
    return tensor([builtins.int(state[0]), builtins.int(state[1])], dtype="int64")


def _set_state(target, new_state, what):
    values = new_state.tolist() if isinstance(new_state, Tensor) else list(new_state)
    if len(values) != 2:  # (a PyTorch state is 5056 bytes: named by its size, not printed)
        raise ValueError(f"{what}: expected a state from GT's get_rng_state / get_state (2 integers), got "
                         f"{values if len(values) <= 8 else f'{len(values)} values'} (PyTorch's generator states "
                         "are not GT's: its draws differ)")
    target[0], target[1] = builtins.int(values[0]), builtins.int(values[1])


def get_rng_state():
    """The default generator's state (what gt.manual_seed set and how many draws followed), as
    an int64 tensor of 2 elements to give back to set_rng_state (torch.get_rng_state's bytes
    differ; scripts only hand the value back)."""
    return _rng_state(_seed)


def set_rng_state(new_state):
    """Restores the default generator to a get_rng_state() value: later draws repeat."""
    _set_state(_seed, new_state, "set_rng_state")


class Generator:
    """A source of random draws for what takes `generator=` (gt.randperm, gt.utils.data's
    RandomSampler, DataLoader and random_split), as torch.Generator: `manual_seed(seed)` (returns
    the generator), `initial_seed()`, `seed()` (a fresh random seed, returned). Its draws are a
    counter-based stream like gt.manual_seed's; the default seed is PyTorch's, 67280421310721.
    `device` is accepted and ignored."""

    def __init__(self, device="cpu"):
        self._state = [67280421310721, 0]
        self.device = _device.device(device) if not isinstance(device, _device.device) else device

    def manual_seed(self, seed):
        self._state[:] = [builtins.int(seed), 0]
        return self

    def initial_seed(self):
        return self._state[0]

    def seed(self):
        self._state[:] = [builtins.int.from_bytes(os.urandom(8), "little") >> 1, 0]
        return self._state[0]

    def get_state(self):
        """This generator's state, an int64 tensor of 2 elements for set_state."""
        return _rng_state(self._state)

    def set_state(self, new_state):
        """Restores a get_state() value (returns the generator)."""
        _set_state(self._state, new_state, "Generator.set_state")
        return self

    def _next_seed(self):
        self._state[1] += 1
        return (self._state[0] * 1_000_003 + self._state[1]) & 0x7FFFFFFFFFFFFFFF


default_generator = Generator()
default_generator._state = _seed  # the stream gt.manual_seed seeds: one list, changed in place


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0 .. n-1 (int64 unless `dtype`), drawn on the client from
    `generator` (a gt.Generator) or gt.manual_seed's stream and uploaded (`device` is
    accepted for PyTorch's signature; see gt.device)."""
    _device.check(device)
    seed = generator._next_seed() if generator is not None else _next_seed()
    order = np.random.default_rng(seed).permutation(builtins.int(n))
    return tensor(order, dtype=dtype or "int64", requires_grad=requires_grad)


def _leaf(t, requires_grad):
    if requires_grad and not t.dtype.is_floating_point:
        raise RuntimeError(f"only floating-point tensors can require gradients, got {t.dtype}")
    t.requires_grad = builtins.bool(requires_grad)
    return t


_warned_float = [False]  # float(x) of a tensor that requires grad warned already (PyTorch warns once)


def fill_backward(g, result, inputs, attrs):
    """The node of a tensor overwritten in place by values without history: zero to the old ones."""
    return (zeros_like(inputs[0]),)


def _rebuild_tensor(cls, data, dtype, shape, requires_grad):
    """The tensor Tensor.__reduce_ex__ describes: `data` (bytes) of gt dtype name `dtype` and
    `shape`, uploaded; a Parameter (cls) wraps it again."""
    d = _dt.resolve(dtype)
    t = from_numpy(np.frombuffer(data, dtype=_dt.numpy_dtype(d)).reshape(shape).copy())
    if cls is not Tensor and cls is not _complex.ComplexTensor:
        return cls(t, requires_grad=requires_grad)
    t.requires_grad = builtins.bool(requires_grad) and (d.is_floating_point or d.is_complex)
    return t


def _rebuild_meta(cls, dtype, shape, requires_grad):
    """The meta tensor Tensor.__reduce_ex__ describes (a Parameter when cls is one)."""
    t = zeros(shape, dtype=_dt.resolve(dtype), device="meta")
    if cls is not Tensor:
        return cls(t, requires_grad=requires_grad)
    t.requires_grad = builtins.bool(requires_grad)
    return t


def _legacy_constructor(*args):
    """(handle, shape, dtype) of the legacy constructor, as torch.Tensor: gt.Tensor(data), a
    float32 tensor of a list or an array; gt.Tensor(n, m, ...), float32 zeros of that shape
    (torch.Tensor leaves them uninitialised, GT never hands out uninitialised memory)."""
    args = [a for a in args if a is not None]
    if len(args) == 1 and isinstance(args[0], Size):  # torch.Tensor(x.shape): a shape, not data
        t = zeros(tuple(args[0]))
    elif builtins.all(type(a) is builtins.int for a in args):  # (torch.Tensor(): an empty float tensor)
        t = zeros(*(args or (0,)))
    elif len(args) == 1:
        t = tensor(args[0], dtype=_dt.default_float())
    else:
        raise TypeError(f"gt.Tensor() takes data (a list or an array) or sizes, got {args!r}")
    return t._h, t.shape, t.dtype


_h_slot = Tensor.__dict__["_h"]


def _same(t):
    """t's values as a new node of its autograd graph when it requires grad (as_subclass's)."""
    return _op("reshape", t, shape=t.shape) if t.requires_grad else t


def _convert(ret, cls):
    """torch._tensor._convert: ret's plain tensors (also within tuples and lists) as cls instances."""
    from . import overrides
    return overrides.convert(ret, cls)


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """torch._C._disabled_torch_function_impl: what a subclass sets as __torch_function__ to take
    no part in the protocol (nn.Parameter's: ops on it give plain tensors). Called, it runs func
    with the protocol off for subclasses."""
    from . import overrides
    with overrides.DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _TypedTensorMeta(type):
    """The metaclass of the legacy tensor types (gt.FloatTensor, ...): isinstance(x,
    gt.FloatTensor) is whether x is a float32 tensor, as PyTorch's, and being classes they
    go in annotations (`gt.FloatTensor | None`: transformers' signatures)."""

    def __instancecheck__(cls, x):  # (torch.cuda.FloatTensor: a float32 tensor on GPU workers)
        return isinstance(x, Tensor) and x.dtype == cls.dtype and x.is_cuda == (cls._where == "cuda.")

    def __repr__(cls):  # <class 'torch.FloatTensor'> under gt.as_torch, as PyTorch prints it
        return f"<class '{_dt.package[0]}.{cls._where}{cls.__name__}'>"


def _typed_constructor(name, d, where=""):
    def make(cls, *args, device=None):
        if device is not None:
            _device.check(device)
        args = [a for a in args if a is not None]
        if args and builtins.all(type(a) is builtins.int for a in args):
            return zeros(*args, dtype=d)
        if len(args) == 1:
            return tensor(args[0], dtype=d)
        if not args:
            return zeros(0, dtype=d)
        raise TypeError(f"gt.{name}() takes data (a list or an array) or sizes, got {args!r}")
    doc = (f"torch.{name}'s legacy constructor: {name}(data), a {d.name} tensor of a list or an array, or "
           f"{name}(*sizes), {d.name} zeros (torch leaves them uninitialised); isinstance(x, {name}) is whether "
           f"x is a {d.name} tensor.")
    return _TypedTensorMeta(name, (), {"__new__": make, "__doc__": doc, "dtype": d, "__module__": "gt",
                                       "_where": where})


FloatTensor = _typed_constructor("FloatTensor", _dt.float32)
DoubleTensor = _typed_constructor("DoubleTensor", _dt.float64)
HalfTensor = _typed_constructor("HalfTensor", _dt.float16)
BFloat16Tensor = _typed_constructor("BFloat16Tensor", _dt.bfloat16)
LongTensor = _typed_constructor("LongTensor", _dt.int64)
IntTensor = _typed_constructor("IntTensor", _dt.int32)
BoolTensor = _typed_constructor("BoolTensor", _dt.bool)
ShortTensor = _typed_constructor("ShortTensor", _dt.int16)
CharTensor = _typed_constructor("CharTensor", _dt.int8)
ByteTensor = _typed_constructor("ByteTensor", _dt.uint8)


def _takes_device(fn):
    """`fn` also takes PyTorch's `device=` (checked: gt.device raises for a name that is not a
    device), `layout=`, `pin_memory=` and `memory_format=` (see gt.memory_format), which place nothing: a tensor lives on its session's
    workers (see gt._device); and a function of `*shape` also takes it as `size=` (torch.empty(size=(2, 3)))."""
    shaped = next(iter(inspect.signature(fn).parameters.values())).kind is inspect.Parameter.VAR_POSITIONAL

    @functools.wraps(fn)
    def with_device(*args, device=None, layout=None, pin_memory=False, memory_format=None, **kwargs):
        if device is not None:
            meta = _device.check(device).type == "meta"
        elif args and isinstance(args[0], Tensor):  # zeros_like(x): x's device
            meta = args[0].is_meta
        else:
            meta = _device.meta_default()
        if shaped and "size" in kwargs:
            if args:
                raise TypeError(f"{fn.__name__}() got the shape both as arguments and as size=")
            args = (kwargs.pop("size"),)
        if meta:
            with _device.meta_scope():
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)
    return with_device


def from_numpy(array, requires_grad=False):
    """Uploads a NumPy array (its dtype kept: float32, float64, float16, ml_dtypes.bfloat16,
    int32, int64, int16, int8, uint8 or bool; other integer types (uint16, uint32, uint64) become
    int64). Raises TypeError for other dtypes and for anything but an ndarray (a NumPy scalar,
    a list: as torch.from_numpy; gt.tensor takes those)."""
    if not isinstance(array, np.ndarray):
        kind = type(array)
        name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
        raise TypeError(f"expected np.ndarray (got {name})")
    if array.dtype.kind == "c":
        return _complex.from_numpy(array, requires_grad)
    if array.dtype.kind in "iu" and array.dtype not in (np.int32, np.int64, np.int16, np.int8, np.uint8):
        array = array.astype(np.int64)
    array = np.asarray(array, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    d = _dt.resolve(array.dtype)
    raw = array.view(np.uint16) if d is _dt.bfloat16 else array  # the buffer protocol has no bfloat16
    if _trace is None:
        return _leaf(_make(_client().upload_tensor(raw, list(array.shape), d.code), ()), requires_grad)
    start = time.perf_counter_ns()
    out = _leaf(_make(_client().upload_tensor(raw, list(array.shape), d.code), ()), requires_grad)
    _trace.op("upload", start, out)
    return out


@_takes_device
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
    elif a.dtype.kind == "c" and not isinstance(data, (np.ndarray, np.generic)):  # Python complex numbers
        a = a.astype(_dt.complex_of(_dt.default_float()).numpy)
    elif a.dtype == np.float64 and not isinstance(data, (np.ndarray, np.generic)):  # Python floats
        default = _dt.default_float()
        if default is not _dt.float64:
            a = a.astype(np.float32)
            if default is not _dt.float32:  # float16 / bfloat16: rounded once from float32
                t = cast(from_numpy(a), default)
                return _leaf(t, requires_grad) if requires_grad else t
    return from_numpy(a, requires_grad=requires_grad)


@_takes_device
def as_tensor(data, dtype=None):
    """`data` itself when it is a tensor (cast to `dtype` when one is given, its gradient
    flowing through), else tensor(data, dtype), as torch.as_tensor."""
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    return tensor(data, dtype)


@_takes_device
def asarray(obj, dtype=None, copy=None, requires_grad=False):
    """torch.asarray: `obj` itself when it is a tensor of `dtype` (copy=True: a clone), else
    a tensor of obj's values (a number, nested lists, a NumPy array). requires_grad makes a new
    leaf that requires grad. Raises ValueError for copy=False when a copy is needed."""
    if isinstance(obj, Tensor):
        out = obj if dtype is None else obj.to(dtype)
        if copy is False and out is not obj:
            raise ValueError("asarray: copy=False, but casting to another dtype needs a copy")
        if copy and out is obj:
            out = obj.clone()
        if requires_grad and not out.requires_grad:
            out = _leaf(out.detach(), True)
        return out
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError(f"asarray: copy=False, but a {type(obj).__name__} must be copied to make a tensor")
    return tensor(obj, dtype, requires_grad)


def _default_dtype(value, dtype):
    if dtype is not None:
        return _dt.resolve(dtype)
    if isinstance(value, builtins.bool):
        return _dt.bool
    if isinstance(value, builtins.int):
        return _dt.int64
    if isinstance(value, builtins.complex):
        return _dt.complex_of(_dt.default_float())
    return _dt.default_float()


@_takes_device
def full(shape, value, dtype=None, requires_grad=False):
    """A tensor of `shape` filled with `value` (dtype from the value: float32, int64 or bool)."""
    d = _default_dtype(value, dtype)
    if d.is_complex:
        return _complex.full(_shape_args((shape,) if isinstance(shape, builtins.int) else shape), value, d,
                             requires_grad)
    t = _op("full", shape=_shape_args((shape,) if isinstance(shape, builtins.int) else shape),
            value=builtins.float(value), dtype=d)
    return _leaf(t, requires_grad)


@_takes_device
def zeros(*shape, dtype=None, requires_grad=False):
    """A tensor of `shape` (ints or one tuple) filled with 0 (float32 unless `dtype`)."""
    return full(_shape_args(shape), 0.0, dtype or _dt.default_float(), requires_grad)


@_takes_device
def ones(*shape, dtype=None, requires_grad=False):
    """A tensor of `shape` (ints or one tuple) filled with 1 (float32 unless `dtype`)."""
    return full(_shape_args(shape), 1.0, dtype or _dt.default_float(), requires_grad)


@_takes_device
def empty(*shape, dtype=None, requires_grad=False):
    """Zeros (GT never hands out uninitialised memory)."""
    return zeros(*shape, dtype=dtype, requires_grad=requires_grad)


@_takes_device
def zeros_like(t, dtype=None, requires_grad=False):
    return zeros(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


@_takes_device
def ones_like(t, dtype=None, requires_grad=False):
    return ones(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


@_takes_device
def full_like(t, value, dtype=None, requires_grad=False):
    """A tensor of t's shape (and dtype unless `dtype`) filled with `value`."""
    return full(t.shape, value, dtype=dtype or t.dtype, requires_grad=requires_grad)


empty_like = zeros_like


def _random(op, shape, dtype, requires_grad, generator=None):
    d = _dt.resolve(dtype or _dt.default_float())
    if d.is_complex:
        return _complex.random(op, shape, d, requires_grad, generator)
    if not d.is_floating_point:
        raise TypeError(f"{op} needs a floating-point dtype, got {d}")
    shape = _shape_args(shape)
    seed = generator._next_seed() if generator is not None else _next_seed()
    if op == "rand" and d in (_dt.float32, _dt.float64) and math.prod(shape) <= _HOST_RANDOM_MAX:
        return _leaf(_held_upload(_host_rand(seed, shape, d)), requires_grad)
    return _leaf(_op(op, shape=shape, seed=seed, dtype=d), requires_grad)


# A uniform draw of at most this many elements is made on the client, bit for bit what the
# worker's kernel makes from the same seed, and uploaded with its values kept (Tensor._host):
# `ix = torch.randint(n, (batch,))` then `data[i] for i in ix` (nanoGPT's get_batch) reads them
# without waiting for the work queued before (a sync would serialize the step).
_HOST_RANDOM_MAX = 1 << 16


def _splitmix64(z):
    """splitmix64 (Steele, Lea & Flood 2014) of uint64 array z, as the worker's lowering
    (lib/Dialect/Transforms/LowerToLinalg.cpp, lowerRandom) computes it."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _host_rand(seed, shape, d):
    """gt.rand's values for `seed`: element i = the top mantissa-many bits of
    splitmix64(splitmix64(seed) + 2i) as a fraction of 2^mantissa (float32: 24, float64: 53)."""
    mantissa = 24 if d is _dt.float32 else 53
    with np.errstate(over="ignore"):
        mixed = _splitmix64(np.array([seed], dtype=np.int64).view(np.uint64))
        counters = mixed + np.arange(math.prod(shape), dtype=np.uint64) * np.uint64(2)
        bits = _splitmix64(counters) >> np.uint64(64 - mantissa)
    return (bits.astype(np.float64) * 2.0 ** -mantissa).astype(_dt.numpy_dtype(d)).reshape(shape)


def _held_upload(values):
    """An upload of NumPy `values` that keeps them (reading them back waits for nothing)."""
    t = from_numpy(values)
    if values.nbytes <= _HOLD_BYTES and not t.is_meta:
        t._host = (t._h, values)
    return t


@_takes_device
def randn(*shape, dtype=None, requires_grad=False, generator=None):
    """Standard normal samples (counter-based generator on the worker; see gt.manual_seed; its
    seed drawn from `generator`, a gt.Generator, when given)."""
    return _random("randn", shape, dtype, requires_grad, generator)


@_takes_device
def rand(*shape, dtype=None, requires_grad=False, generator=None):
    """Uniform samples in [0, 1) (counter-based generator on the worker; see gt.manual_seed; its
    seed drawn from `generator`, a gt.Generator, when given)."""
    return _random("rand", shape, dtype, requires_grad, generator)


@_takes_device
def randn_like(t, dtype=None, requires_grad=False):
    """randn of t's shape and (float) dtype."""
    return randn(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


@_takes_device
def rand_like(t, dtype=None, requires_grad=False):
    """rand of t's shape and (float) dtype."""
    return rand(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


@_takes_device
def randint(low, high=None, size=None, dtype=None, generator=None, requires_grad=False):
    """Integers uniform in [low, high) (torch.randint(low, high, size) or randint(high, size)),
    int64 unless `dtype` says otherwise, drawn from `generator` when given (see rand);
    requires_grad=True needs a floating dtype (RuntimeError otherwise, as PyTorch)."""
    if requires_grad:
        if dtype is None or not _dt.resolve(dtype).is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return randint(low, high, size, dtype, generator).requires_grad_(True)
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=size)
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing its size argument")
    u = rand(_shape_args(size), dtype=_dt.float64, generator=generator)
    held = _held(u)
    if held is not None and (dtype is None or _dt.resolve(dtype) in (_dt.int64, _dt.int32)):
        # the same arithmetic as below, on the client (float64 IEEE, then a cast): kept values
        values = np.asarray(np.floor(held * np.float64(high - low)) + np.float64(low))  # (size (): a 0-d array)
        return _held_upload(values.astype(_dt.numpy_dtype(_dt.resolve(dtype or _dt.int64))))
    return cast(_op("floor", u * (high - low)) + low, dtype or _dt.int64)


@_takes_device
def arange(start=0, end=None, step=1, dtype=None, requires_grad=False):
    """[start, end) by step, as torch.arange (int64 for integer arguments, else float32). The
    values are computed on the client and uploaded."""
    if end is None:
        start, end = 0, start
    ints = builtins.all(isinstance(v, builtins.int) for v in (start, end, step))
    d = _dt.resolve(dtype) if dtype is not None else (_dt.int64 if ints else _dt.default_float())
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    values = np.arange(start, end, step, dtype=np.float64 if not ints else np.int64)
    return from_numpy(values.astype(_dt.numpy_dtype(d)), requires_grad=requires_grad)


def _np_fma(x, y, z):
    """x * y + z (float64 arrays) rounded once, as C's fma: the product split exactly into
    p + e (Dekker's TwoProduct with Veltkamp's split), p + z into s + t (Knuth's TwoSum),
    then s + (t + e). (Knuth, TAOCP vol. 2, 4.2.2; Dekker 1971.)"""
    def split(a):
        c = 134217729.0 * a  # 2^27 + 1
        hi = c - (c - a)
        return hi, a - hi
    p = x * y
    (xh, xl), (yh, yl) = split(x), split(y)
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    b = s - p
    t = (p - (s - b)) + (z - b)
    return s + (t + e)


def _linspace_values(start, end, steps, d):
    """PyTorch's CPU linspace (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp) in NumPy: step
    = (end - start) / (steps - 1) in the dtype (float64 for integers, float32 for 16-bit floats),
    value i = start + step * i for the first half and end - step * (steps - 1 - i) for the rest,
    each one fma-rounded as the compiled kernel is. Checked equal to PyTorch 2.15's float32,
    float64 and integer values (DDPM's betas, integrated-gradient alphas); 16-bit floats equal
    but for rare double roundings (1 value in 12345)."""
    np_d = np.dtype(_dt.numpy_dtype(d))
    half = steps // 2
    if d.is_floating_point and np_d.itemsize == 2:  # float16, bfloat16: the ends in the dtype, the rest in float32
        calc = np.float32
        a, b = calc(np_d.type(start)), calc(np_d.type(end))
    elif d.is_floating_point:
        calc = np_d.type
        a, b = calc(start), calc(end)
    else:  # integers: the ends as integers, step and values in float64, truncated
        calc = np.float64
        a, b = calc(int(start)), calc(int(end))
    if steps == 1:
        return np.array([a]).astype(np_d)
    step = np.float64(calc((b - a) / calc(steps - 1)))
    i = np.arange(steps, dtype=np.float64)
    values = np.where(i < half, _np_fma(step, i, np.float64(a)), _np_fma(-step, steps - 1 - i, np.float64(b)))
    return values.astype(calc).astype(np_d)


@_takes_device
def linspace(start, end, steps, dtype=None, requires_grad=False):
    """`steps` evenly spaced values from start to end inclusive (float32 unless `dtype` says
    otherwise; computed on the client as PyTorch's CPU kernel computes them, and uploaded)."""
    if isinstance(start, Tensor) or isinstance(end, Tensor):
        start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    d = _dt.resolve(dtype or _dt.default_float())
    return from_numpy(_linspace_values(start, end, steps, d), requires_grad=requires_grad)


@_takes_device
def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False):
    """`steps` values base ** linspace(start, end, steps), as torch.logspace (float32; uploaded)."""
    values = np.logspace(start, end, steps, base=base).astype(_dt.numpy_dtype(_dt.resolve(dtype or _dt.default_float())))
    return from_numpy(values, requires_grad=requires_grad)


@_takes_device
def eye(n, m=None, dtype=None, requires_grad=False):
    """The n x m identity (uploaded from the client)."""
    values = np.eye(n, m, dtype=_dt.numpy_dtype(_dt.resolve(dtype or _dt.default_float())))
    return from_numpy(values, requires_grad=requires_grad)


# ---------------------------------------------------------------- elementwise

_GT_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_gt(frame):
    """(the first frame from `frame` outward whose code is not in the gt package: the user's
    line, how many frames out it is); (None, n) when every frame is GT's."""
    steps = 0
    while frame is not None and frame.f_code.co_filename.startswith(_GT_DIR):
        frame, steps = frame.f_back, steps + 1
    return frame, steps


def warn_at_user_line(message, category=UserWarning):
    """warnings.warn pointing at the first caller outside the gt package (the user's line),
    however deep in GT the warning is raised."""
    import warnings
    _, steps = outside_gt(sys._getframe(1))
    warnings.warn(message, category, stacklevel=steps + 2)


def _legacy_alpha(name, b, other, alpha):
    """PyTorch's deprecated add(x, alpha, other) / x.add_(alpha, other) spelling: (other, alpha)."""
    warn_at_user_line(f"This overload of {name} is deprecated: {name}(Number alpha, Tensor other); use "
                      f"{name}(Tensor other, *, Number alpha)")
    return other, b


def add(a, b=None, other=None, *, alpha=1):
    """a + alpha * b with broadcasting and type promotion (b also as other=, PyTorch's name);
    raises gt.ShapeError if the shapes do not broadcast. (add(a, alpha, other), PyTorch's
    deprecated order, works with its warning.)"""
    if b is None:
        b, other = other, None
    if other is not None:
        b, alpha = _legacy_alpha("add", b, other, alpha)
    if alpha != 1:
        b = _op("mul", *_pair(b, alpha))
    return _op("add", a, b)


def sub(a, b=None, other=None, *, alpha=1):
    """a - alpha * b (rules of add)."""
    if b is None:
        b, other = other, None
    if other is not None:
        b, alpha = _legacy_alpha("sub", b, other, alpha)
    if alpha != 1:
        b = _op("mul", *_pair(b, alpha))
    return _op("sub", a, b)


def div(a, b, *, rounding_mode=None):
    """True division (ints give float32, as PyTorch); rounding_mode='floor' is floor_divide,
    'trunc' rounds toward zero (in the operands' dtype, as PyTorch's)."""
    if rounding_mode == "floor":
        return _op("floor_divide", *_pair(a, b))
    if rounding_mode == "trunc":
        a, b = _pair(a, b)
        if a.dtype.is_floating_point or b.dtype.is_floating_point:
            from ._composites import trunc
            return trunc(_op("div", a, b))
        q = _op("floor_divide", a, b)  # (rounded down: one more where the exact quotient is a negative non-integer)
        return where((q * b != a) & ((a < 0) != (b < 0)), q + 1, q)
    if rounding_mode is not None:
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    a, b = _pair(a, b)
    if not a.dtype.is_floating_point and not b.dtype.is_floating_point and not (a.dtype.is_complex or b.dtype.is_complex):
        a = cast(a, _dt.default_float())
    return _op("div", a, b)


true_divide = divide = div
subtract = sub


@_method()
def pow(a, b):
    """a ** b; an integer tensor to a float power gives float32, integers to integer powers
    stay integers (computed in float64: exact up to 2^53), as PyTorch's. RuntimeError for an
    integer tensor to a negative integer number."""
    if isinstance(a, Tensor) and isinstance(b, (builtins.int, builtins.float)) and not isinstance(b, builtins.bool):
        if b == 1:
            return a
        if b == 2:
            return _op("mul", a, a)
        if not a.dtype.is_floating_point and not a.dtype.is_complex:
            if type(b) is builtins.int and a.dtype != _dt.bool:
                if b < 0:
                    raise RuntimeError("Integers to negative integer powers are not allowed.")
                return cast(_op("pow", cast(a, _dt.float64), _scalar(builtins.float(b), cast(a, _dt.float64))), a.dtype)
            a = cast(a, _dt.default_float())
    a, b = _pair(a, b)
    if not (a.dtype.is_floating_point or a.dtype.is_complex) and not (b.dtype.is_floating_point or b.dtype.is_complex):
        if a.dtype != _dt.bool or b.dtype != _dt.bool:  # integers: an integer result
            out = _dt.promote_types(a.dtype, b.dtype)
            return cast(_op("pow", cast(a, _dt.float64), cast(b, _dt.float64)), out)
        a = cast(a, _dt.default_float())
    return _op("pow", a, b)



def _as_bool(x):
    return x if x.dtype == _dt.bool else x != 0


@_method()
def logical_not(x):
    return _as_bool(x) == False  # noqa: E712 (an elementwise comparison)


def logical_and(a, b):
    """Elementwise and of truth values (nonzero is True); bool result, broadcasting."""
    a, b = _pair(a, b)
    return _op("minimum", _as_bool(a), _as_bool(b))


def logical_or(a, b):
    a, b = _pair(a, b)
    return _op("maximum", _as_bool(a), _as_bool(b))


def logical_xor(a, b):
    a, b = _pair(a, b)
    return _as_bool(a) != _as_bool(b)


def where(condition, a=None, b=None):
    """condition ? a : b, elementwise with broadcasting; `condition` must be bool. where(condition)
    alone is nonzero(condition, as_tuple=True), as torch.where."""
    if a is None and b is None:
        from ._shaping import nonzero
        return nonzero(condition, as_tuple=True)
    ref = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else None
    a, b = _scalar(a, ref), _scalar(b, ref)
    if not isinstance(condition, Tensor):
        condition = tensor(condition)
    if condition.dtype is _dt.uint8:  # (PyTorch's deprecated form: a warning, then as a bool mask)
        import warnings
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                      "future version of PyTorch. Use a boolean condition instead.", UserWarning, stacklevel=2)
        condition = cast(condition, _dt.bool)
    return _op("where", condition, a, b)


def cast(x, dtype):
    """x converted to `dtype` (to bool: x != 0; float to int truncates toward zero)."""
    d = _dt.resolve(dtype)
    if d is x.dtype:
        return x
    if d.is_complex or x.dtype.is_complex:
        return _complex.cast(x, d)
    return _op("cast", x, dtype=d)


# ---------------------------------------------------------------- matmul and axes

_autocast_dtype = None  # gt.amp.autocast's dtype while one is active: matmul operands are cast to it


def autocast_operand(t):
    """t cast to gt.amp.autocast's dtype (a recorded cast) when one is active and t is a
    float32/float64 tensor, else t: for the added operand of addmm, linear's bias and the like,
    which PyTorch's autocast casts with the product's operands."""
    if _autocast_dtype is not None and isinstance(t, Tensor) and t.dtype in (_dt.float32, _dt.float64):
        return _op("cast", t, dtype=_autocast_dtype)
    return t


def matmul(a, b):
    """NumPy/PyTorch matmul: (..., m, k) @ (..., k, n) -> (..., m, n), batch axes broadcast.
    Inside gt.amp.autocast, float32/float64 operands are cast to its dtype first."""
    if _autocast_dtype is not None:
        if a.dtype in (_dt.float32, _dt.float64):
            a = _op("cast", a, dtype=_autocast_dtype)
        if b.dtype in (_dt.float32, _dt.float64):
            b = _op("cast", b, dtype=_autocast_dtype)
    if a.ndim == 1 and b.ndim == 1:
        return _op("reshape", matmul(_op("reshape", a, shape=(1, a.shape[0])), b), shape=())
    if a.ndim == 1:
        return _op("reshape", matmul(_op("reshape", a, shape=(1, a.shape[0])), b), shape=b.shape[:-2] + b.shape[-1:])
    if b.ndim == 1:
        return _op("reshape", matmul(a, _op("reshape", b, shape=(b.shape[0], 1))), shape=a.shape[:-1])
    if not (a.dtype.is_floating_point or a.dtype.is_complex) and not (b.dtype.is_floating_point or b.dtype.is_complex) \
            and a.dtype != _dt.bool:  # integers: in float64 (exact while the sums stay under 2^53), as PyTorch's int64 result
        out = _dt.promote_types(a.dtype, b.dtype)
        return cast(_op("matmul", cast(a, _dt.float64), cast(b, _dt.float64)), out)
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


def _transposed(x, perm):
    """The gt.transpose op with permutation `perm`, or x when it is the identity."""
    return x if perm == list(range(x.ndim)) else _op("transpose", x, perm=perm)


from . import _complex  # noqa: E402 (complex tensors: built on this module)
