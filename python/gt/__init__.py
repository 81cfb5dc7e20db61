"""GT: eager, PyTorch-like tensors whose compute runs on a GT dispatcher's workers.

    import gt
    a = gt.tensor([1.0, 2.0, 3.0])
    print((a * 2 + 1).numpy())

The first op starts a local dispatcher and worker (see gt.gpu_workers); gt.connect("host:port")
(or "unix:PATH") uses a running one instead.
"""
import math as _math
import os as _os
import sys as _sys
import time as _time

from . import _C
from ._runtime import connect, gpu_workers, load_config
from .dtypes import (dtype, float32, float64, float16, bfloat16, int32, int64, bool, float, double, half, long, int,  # noqa
                     int8, int16, uint8, short, memory_format, contiguous_format, channels_last, channels_last_3d, preserve_format, legacy_contiguous_format,
                     promote_types, result_type, can_cast, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
                     float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32, uint64, qint8, quint8, qint32,
                     quint4x2, quint2x4)
from ._functions import (
    Tensor, tensor, as_tensor, asarray, from_numpy, zeros, ones, full, empty, zeros_like, ones_like, full_like, empty_like,
    randn, rand, randn_like, rand_like, randint, arange, linspace, logspace, eye, manual_seed, get_rng_state, set_rng_state,
    add, sub, subtract, mul, multiply, div, divide, true_divide, pow, maximum, minimum, floor_divide, remainder,
    eq, ne, lt, le, gt, ge, logical_not, logical_and, logical_or, logical_xor, where, masked_fill,
    neg, negative, exp, log, log1p, sqrt, rsqrt, sin, cos, erf, relu, sigmoid, tanh, abs, floor, gelu, silu,
    clamp, clip, cast, clone, detach,
    matmul, mm, bmm, transpose, swapaxes, swapdims, permute, reshape, view, flatten, squeeze, unsqueeze, broadcast_to, expand,
    broadcast_tensors, narrow, cat, concat, concatenate, stack, split, chunk, unbind,
    index_select, gather, take_along_dim, one_hot, embedding,
    sum, mean, max, min, amax, amin, argmax, argmin, var, std, logsumexp, log_softmax, softmax, norm, allclose,
    isnan, isinf, isfinite, isposinf, isneginf, any, all, equal, outer, ger, addmm, baddbmm, addbmm, lerp, clamp_min, clamp_max, sign,
    repeat, roll, finfo, iinfo)
from ._ops import *  # noqa: E402,F401,F403 (every function generated from ops/*.yaml: `python: generated`)
from .autograd import _keep_nodes_that_save_nothing  # noqa: E402
_keep_nodes_that_save_nothing()
from . import _indexing  # noqa: F401 (registers Tensor.__getitem__ / __setitem__)
from .autograd import no_grad, enable_grad, set_grad_enabled, is_grad_enabled, inference_mode, is_inference_mode_enabled
from ._tensor import set_printoptions  # noqa: E402  (torch._tensor_str holds get_printoptions, printoptions)
from ._tensor import (Generator, default_generator, Size, randperm, FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor,  # noqa
                      IntTensor, BoolTensor, ShortTensor, CharTensor, ByteTensor)
from ._device import device
from . import nn, optim, debug, signal, profiler, utils, cuda, accelerator, onnx
from .serialization import save, load
from ._compile import compile  # noqa: A001 (torch.compile's name)
from . import amp, backends, distributed  # noqa: E402
from ._composites import (reciprocal, square, trunc, fix, frac, ceil, fmod, expm1, exp2, log2, log10, sinh,  # noqa
                          cosh, tan, hypot, logaddexp, xlogy, deg2rad, rad2deg, heaviside, sinc, nan_to_num, addcmul,
                          addcdiv, nansum, nanmean, count_nonzero, var_mean, std_mean, tile, tensor_split, scatter,
                          searchsorted, bucketize, cdist, dist, meshgrid, cartesian_prod, tril_indices, triu_indices,
                          bincount, unique, unique_consecutive, as_strided, bernoulli, normal, randint_like, dot,
                          inner, vdot, mv, index_add, scatter_add, scatter_reduce, index_put, index_fill, index_copy,
                          select, cumprod, cross, renorm, sgn, flipud, fliplr, masked_scatter, multiply, subtract, divide,
                          greater, less, greater_equal, less_equal, not_equal, absolute, asinh, acosh, atanh,
                          arcsinh, arccosh, arctanh, erfinv, histc, histogram, polygamma, mvlgamma, i0, kaiser_window,
                          isin, is_floating_point, is_complex)
from ._composites import gammainc as igamma, gammaincc as igammac  # noqa: E402
arctan, arcsin, arccos, arctan2 = atan, asin, acos, atan2  # noqa: F821 (NumPy's names, as torch has them)
from .amp import autocast, is_autocast_enabled, get_autocast_dtype  # noqa: E402
from ._sorting import sort, argsort, msort, topk, kthvalue, median, multinomial, quantile, nanquantile  # noqa: E402,E501
from ._shaping import (round, diag, diagonal, repeat_interleave, einsum, nonzero, argwhere,  # noqa: A001,E402
                       masked_select)

try:
    from importlib.metadata import version as _version
    __version__ = _version("gt")
except Exception:  # not installed as a package (PYTHONPATH): the version pyproject.toml gives
    __version__ = "0.1.0"

RemoteError = _C.RemoteError
OutOfMemoryError = _C.OutOfMemoryError
ShapeError, AxisError, DTypeError = _C.ShapeError, _C.AxisError, _C.DTypeError


def synchronize():
    """Waits until every op issued so far has run on the workers."""
    from . import _runtime, _tensor
    if _tensor._pending_checks:
        _tensor.run_pending_checks()
    start = _time.perf_counter_ns()
    _runtime.client().sync()
    if _tensor._trace is not None:
        _tensor._trace.sync(start, 0)
    _runtime.after_wait((_time.perf_counter_ns() - start) * 1e-9)


from ._compat import (is_tensor, numel, get_default_dtype, set_default_dtype, set_default_tensor_type,  # noqa
                      set_default_device, get_default_device,
                      set_float32_matmul_precision,
                      get_float32_matmul_precision, set_num_threads, get_num_threads, seed, initial_seed,
                      movedim, moveaxis, isclose, diff, logit, erfc, take, tensordot, aminmax, unflatten,
                      use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                      is_deterministic_algorithms_warn_only_enabled)
from ._array_functions import (cummax, cummin, logcumsumexp, atleast_1d, atleast_2d, atleast_3d, hstack,  # noqa
                               vstack, row_stack, dstack, column_stack, hsplit, vsplit, dsplit, broadcast_shapes,
                               kron, block_diag, rot90, diag_embed, trace, vander, addmv, chain_matmul, cov,
                               corrcoef, trapezoid, trapz, cumulative_trapezoid, fmax, fmin, signbit, copysign, ldexp, float_power, rsub)
from . import distributions, linalg, testing, jit, sparse  # noqa: E402
from . import random, version, special  # noqa: E402  (torch.random, torch.version, torch.special)
from . import func  # noqa: E402  (torch.func)
from . import compiler, cpu, fx, _logging, _inductor  # noqa: E402  (torch.compiler, torch.cpu, ...)
from . import library  # noqa: E402  (torch.library)
from .library import ops  # noqa: E402  (torch.ops.<library>.<op>: custom ops)
from . import hub  # noqa: E402  (torch.hub)
from .func import vmap  # noqa: E402  (torch.vmap)
from .autograd import functional as _autograd_functional  # noqa: E402,F401 (torch.autograd.functional)
from .linalg import _TOP_LEVEL as _linalg_top  # torch.inverse, torch.det, torch.svd, ...  # noqa: E402
globals().update(_linalg_top)
from .sparse import sparse_coo_tensor, spmm  # noqa: E402
from .dtypes import complex64, complex128, cfloat, cdouble, complex32, chalf  # noqa: E402
from ._complex import real, imag, conj, complex, polar, view_as_real, view_as_complex, angle  # noqa: E402,A001
conj_physical = resolve_conj = resolve_neg = conj
from . import fft  # noqa: E402  (torch.fft)
from . import _torch_c, overrides  # noqa: E402,F401  (torch._C's names libraries call; torch.overrides)
Stream, Event = cuda.Stream, cuda.Event  # noqa: E402  (torch.Stream / torch.Event: the device-generic names)


def get_device_module(device=None):
    """The module of a device type (gt.cuda for "cuda", gt.cpu for "cpu"); without one, that of
    the session's workers, as torch.get_device_module."""
    kind = (device.type if isinstance(device, _device_cls) else str(device).split(":")[0]) if device is not None \
        else ("cuda" if cuda.is_available() else "cpu")
    if kind not in ("cuda", "cpu"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.")
    return cuda if kind == "cuda" else cpu


from ._device import device as _device_cls  # noqa: E402
from . import _foreach_api  # noqa: E402
_foreach_api._install(globals())  # torch._foreach_add_, _foreach_lerp_, ...
from .storage import UntypedStorage, TypedStorage, PyTorchFileReader, PyTorchFileWriter  # noqa: E402
storage._install(Tensor)  # (Tensor.untyped_storage(), Tensor.storage())
ScriptModule, ScriptFunction = jit.ScriptModule, jit.ScriptFunction  # noqa: E402 (torch.ScriptModule)
from ._spectral import stft, istft, hann_window, hamming_window, blackman_window, bartlett_window  # noqa: E402
# Reductions and scans take dim 0 / -1 of a 0-d tensor (its one element), as PyTorch's
for _name in ("sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "softmax",
              "log_softmax", "logsumexp", "var", "std", "all", "any", "nansum", "nanmean", "logcumsumexp", "cummax",
              "cummin", "count_nonzero", "var_mean", "std_mean", "median"):
    _fn = globals()[_name]
    globals()[_name] = _functions._scalar_dims(_fn)
    if getattr(Tensor, _name, None) is _fn:
        setattr(Tensor, _name, globals()[_name])
from . import _aliases  # noqa: E402
_aliases.install([_sys.modules[__name__], nn.functional], Tensor,  # axis= / keepdims= beside dim= / keepdim=
                 out_namespace=_sys.modules[__name__])  # and out= on gt's functions


def ravel(input):
    """input flattened to 1-D, as torch.ravel."""
    return _functions.reshape(input, -1)


def adjoint(input):
    """The conjugate transpose of the last two axes, as torch.adjoint (a real tensor: its mT)."""
    return input.mT.conj()


t = Tensor.t  # torch.t
Tensor.ravel, Tensor.adjoint = ravel, adjoint
from . import _views  # noqa: E402
_views.install(globals())  # view, reshape, transpose, diagonal, ...: in-place writes reach what they were read from



def _in_place_function(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"input.{name}(...): torch.{name}'s in-place form as a function (returns input)."
    return fn


# x.sin_(), x.atan2_(y), ...: PyTorch's in-place methods of these functions (gt._composites has the rest)
_composites._add_inplace_forms([(n + "_", globals()[n]) for n in (
    "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "arcsinh", "arccosh", "arctanh", "log2", "log10", "log1p", "expm1", "exp2", "rsqrt", "erf", "erfc",
    "frac", "fix", "logit", "digamma", "lgamma", "sinc", "deg2rad", "rad2deg", "i0", "atan2", "arctan2", "hypot",
    "xlogy", "copysign", "ldexp", "float_power", "heaviside", "logaddexp", "fmax", "fmin", "addmm", "baddbmm",
    "addbmm", "addmv", "tril", "triu", "clip", "maximum", "minimum", "mvlgamma", "polygamma", "negative",
    "absolute", "multiply", "subtract", "divide", "true_divide", "floor_divide", "where", "logical_not",
    "logical_and", "logical_or", "logical_xor", "square", "sgn", "nextafter", "gcd", "lcm", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not") if n in globals()])

# torch.relu_(x), torch.sin_(x), ...: each in-place method whose out-of-place function gt has
for _name in [n for n in dir(Tensor) if n.endswith("_") and not n.startswith("_")]:
    if _name[:-1] in globals() and _name not in globals():
        globals()[_name] = _in_place_function(_name)
del _name

# PyTorch's grad_fn names for functions GT composes from other ops (cross_entropy: NllLossBackward0)
autograd._names.install()
# ... and autocast's float32 ops (losses; on CUDA also softmax, norms, sums, ...), outside those
amp._install()

# names libraries import (kornia, PyG, captum, opacus, gpytorch, pyro, ...: see the module)
from . import _library_names  # noqa: E402
_library_names.install(_sys.modules[__name__])

# torch's constants (math's floats; newaxis is None, as in NumPy indexing)
inf, nan, pi, e, newaxis = _math.inf, _math.nan, _math.pi, _math.e, None

if _os.environ.get("GT_TRACE"):  # the whole run's timeline (gt.profiler), written at exit
    profiler._trace_whole_run(_os.environ["GT_TRACE"])
