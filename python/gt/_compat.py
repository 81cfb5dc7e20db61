"""Small functions and process settings that PyTorch scripts call early, answered for GT:
type checks, default dtype, matmul precision, thread counts, and a few functions built from
other ops (movedim, isclose, diff, logit, erfc, take, tensordot, aminmax; their gradients follow
from those ops'). Also Tensor methods where PyTorch has them."""
import builtins
import collections
import math
import os
import random

from . import _device as _device_module
from . import _functions as T
from . import _tensor
from . import dtypes as _dt
from ._tensor import Tensor, _method


def is_tensor(obj):
    """Whether obj is a gt.Tensor (torch.is_tensor)."""
    return isinstance(obj, Tensor)


def numel(input):
    """input's number of elements."""
    return input.numel()


def get_default_dtype():
    """The dtype of floating-point tensors made without a dtype (gt.float32 unless
    set_default_dtype changed it)."""
    return _dt.default_float()


_default_device = _device_module.default  # (one list: `with gt.device(...)` sets it too)


def set_default_device(device):
    """torch.set_default_device: checked (gt.device raises for a name that is not a device) and
    read back by get_default_device; "meta" makes creation functions make meta tensors, other
    devices place nothing, as `device=` does not (gt.device)."""
    from . import _device
    if device is not None:
        _device.check(device)
        device = _device.device(device) if not isinstance(device, _device.device) else device
    _default_device[0] = device


def get_default_device():
    """The device set_default_device named, else the session's kind of worker ("cpu" or "cuda")."""
    from . import _device
    return _default_device[0] or _device.device(_device.session_device_type())


def set_default_dtype(d):
    """Floating-point tensors made without a dtype from now on have dtype `d` (float32,
    float64, float16 or bfloat16), as torch.set_default_dtype: creation functions (zeros, ones,
    full with a float, rand/randn, arange/linspace of floats, eye, tensor of Python floats,
    gt.Tensor), modules' parameters, true division and float powers of integer tensors, and a
    Python float with an integer tensor. NumPy arrays keep their dtype; Tensor.float() stays
    float32. TypeError for an integer or bool dtype."""
    d = _dt.resolve(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _dt._default_float[0] = d


def set_default_tensor_type(t):
    """The older spelling: set_default_dtype of a tensor type's dtype (gt.DoubleTensor,
    "torch.DoubleTensor", gt.FloatTensor, ...)."""
    names = {"FloatTensor": _dt.float32, "DoubleTensor": _dt.float64, "HalfTensor": _dt.float16,
             "BFloat16Tensor": _dt.bfloat16}
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    key = name.rsplit(".", 1)[-1]
    if key not in names:
        raise TypeError(f"set_default_tensor_type: expected a floating-point tensor type, got {t!r}")
    set_default_dtype(names[key])


_matmul_precision = "highest"


def set_float32_matmul_precision(precision):
    """"highest", "high" or "medium", as torch.set_float32_matmul_precision: "high" and "medium"
    let the CUDA workers GT starts after this call multiply float32 with TF32 tensor cores
    (GT_ALLOW_TF32=1), "highest" not; a session already running keeps its workers' setting. CPU
    workers multiply float32 in float32 either way. ValueError for another value."""
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"invalid precision {precision!r}: expected 'highest', 'high' or 'medium'")
    _matmul_precision = precision
    os.environ["GT_ALLOW_TF32"] = "0" if precision == "highest" else "1"


def get_float32_matmul_precision():
    return _matmul_precision


def set_num_threads(n):
    """Threads of each CPU worker GT starts after this call (GT_WORKER_THREADS): this process
    computes nothing itself, so a session already running keeps its workers' threads."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    os.environ["GT_WORKER_THREADS"] = str(n)


def get_num_threads():
    """GT_WORKER_THREADS if set, else the cores this process may use."""
    if os.environ.get("GT_WORKER_THREADS", "").isdigit():
        return int(os.environ["GT_WORKER_THREADS"])
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def seed():
    """Seeds GT's default generator with a random 63-bit number and returns it (torch.seed)."""
    s = random.SystemRandom().getrandbits(63)
    T.manual_seed(s)
    return s


def initial_seed():
    """The default generator's seed: the last gt.manual_seed's or gt.seed's (0 if neither ran)."""
    return _tensor._seed[0]


@_method("movedim", "moveaxis")
def movedim(x, source, destination):
    """x with its axes `source` (an int or a sequence) moved to `destination`, the others
    keeping their order (torch.movedim)."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"movedim: source and destination must have the same number of dims, got {src} and {dst}")
    n = x.ndim
    src = [T._dim(s, n) for s in src]
    dst = [T._dim(d, n) for d in dst]
    order = [d for d in range(n) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return T.permute(x, *order)


moveaxis = movedim


@_method()
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (a bool tensor); NaNs are close
    only with equal_nan; equal infinities are close."""
    other = other if isinstance(other, Tensor) else T._scalar(other, input)
    close = (input == other) | (T.abs(input - other) <= atol + rtol * T.abs(other))
    if equal_nan:
        close = close | (T.isnan(input) & T.isnan(other))
    return close


@_method()
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along `dim` (torch.diff), after concatenating `prepend` and
    `append` there."""
    d = T._dim(dim, input.ndim)
    x = T.cat([t for t in (prepend, input, append) if t is not None], d) if (prepend is not None or
                                                                            append is not None) else input
    for _ in range(n):
        length = x.shape[d]
        x = T.narrow(x, d, 1, length - 1) - T.narrow(x, d, 0, length - 1)
    return x


@_method()
def logit(input, eps=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    p = T.clamp(input, eps, 1 - eps) if eps is not None else input
    return T.log(p) - T.log1p(-p)


@_method()
def erfc(input):
    """1 - erf(x), computed in float64: as written below x = 2 (relative error under 1e-13), and
    above as exp(-x^2) / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / ...)))), Laplace's
    continued fraction (DLMF 7.9.2), 50 levels from the bottom (1e-15 from x = 2 on), so the
    tail keeps its precision (1 - erf(6) is 0 in float64; erfc(6) is 2.2e-17)."""
    if input.dtype.is_complex:
        raise TypeError("erfc: GT's complex tensors do not support this op")
    x = input if input.dtype.is_floating_point else T.cast(input, _dt.default_float())
    x64 = T.cast(x, _dt.float64)
    large = T.clamp(x64, min=2.0)
    tail = large
    for k in range(50, 0, -1):
        tail = large + (0.5 * k) / tail
    fraction = T.exp(-large * large) / (math.sqrt(math.pi) * tail)
    return T.cast(T.where(x64 < 2.0, 1.0 - T.erf(x64), fraction), x.dtype)


@_method()
def take(input, index):
    """input's elements at flat (row-major) positions `index` (negative ones count from the
    end), in index's shape."""
    flat = T.reshape(index, -1)
    flat = T.where(flat < 0, flat + input.numel(), flat)
    return T.reshape(T.index_select(T.reshape(input, -1), 0, flat), *index.shape)


def tensordot(a, b, dims=2):
    """Sums products over a's last `dims` axes and b's first (an int), or over the axes listed
    (two sequences), as torch.tensordot: one matmul of the operands reshaped to matrices."""
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = [T._dim(d, a.ndim) for d in dims[0]], [T._dim(d, b.ndim) for d in dims[1]]
    if [a.shape[i] for i in da] != [b.shape[i] for i in db]:
        raise RuntimeError(f"tensordot: contracted dims of sizes {[a.shape[i] for i in da]} and "
                           f"{[b.shape[i] for i in db]} differ")
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [i for i in range(b.ndim) if i not in db]
    k = math.prod(a.shape[i] for i in da)
    am = T.reshape(T.permute(a, *fa, *da), -1, k)
    bm = T.reshape(T.permute(b, *db, *fb), k, -1)
    return T.reshape(T.matmul(am, bm), *[a.shape[i] for i in fa], *[b.shape[i] for i in fb])


_MinMax = collections.namedtuple("aminmax", ["min", "max"])


@_method()
def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over `dim` (all elements when None), as torch.aminmax."""
    return _MinMax(T.amin(input, dim, keepdim), T.amax(input, dim, keepdim))


@_method()
def unflatten(input, dim, sizes):
    """input with axis `dim` split into `sizes` (one may be -1), as Tensor.unflatten."""
    d = T._dim(dim, input.ndim)
    sizes = list(sizes)
    if -1 in sizes:
        known = math.prod(s for s in sizes if s != -1)
        sizes[sizes.index(-1)] = input.shape[d] // builtins.max(known, 1)
    return T.reshape(input, *input.shape[:d], *sizes, *input.shape[d + 1:])


_deterministic = [False, False]  # use_deterministic_algorithms(mode, warn_only)


def use_deterministic_algorithms(mode, *, warn_only=False):
    """torch.use_deterministic_algorithms: recorded and read back (are_deterministic_algorithms_
    enabled). GT's CPU kernels give the same bits on every run of the same program on the same
    worker configuration (fixed reduction orders, strict CNR GEMMs), with or without it."""
    _deterministic[:] = [bool(mode), bool(warn_only)]


def are_deterministic_algorithms_enabled():
    return _deterministic[0]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic[0] and _deterministic[1]

