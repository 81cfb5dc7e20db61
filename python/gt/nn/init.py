"""gt.nn.init: fills a parameter in place (under no_grad), as torch.nn.init; the random ones
take `generator=` (a gt.Generator) as PyTorch's.

Fan-in/fan-out of a (out, in, *k) weight are in * prod(k) and out * prod(k). Gains follow
PyTorch's calculate_gain. Sources: Glorot & Bengio 2010 (xavier), He et al. 2015 (kaiming).
"""
import contextlib
import math

from .. import _functions as T
from .. import _device
from .. import dtypes as _dt
from .. import signal as _signal
from ..autograd import no_grad


def _fill(tensor, make):
    """Writes `make()` (cast to its dtype) into `tensor` in place, as PyTorch's initializers
    (nn.init.normal_(m.weight.data) changes m.weight), made under the signals the parameter was
    made under, so a sharded parameter stays sharded the same way."""
    signals = getattr(tensor, "_signals", None)
    with no_grad(), (_signal._restored(signals) if signals is not None else contextlib.nullcontext()), \
            (_device.meta_scope() if tensor.is_meta else contextlib.nullcontext()):  # a meta tensor stays one
        new = T.cast(make(), tensor.dtype)
        tensor._assign(new)  # (an in-place write: through p.data to p, through a view to its base)
    return tensor


def _fans(tensor):
    if tensor.ndim < 2:
        raise ValueError("fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d", "conv3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _fill(tensor, lambda: T.rand(tensor.shape, dtype=tensor.dtype, generator=generator) * (b - a) + a)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _fill(tensor, lambda: T.randn(tensor.shape, dtype=tensor.dtype, generator=generator) * std + mean)


def constant_(tensor, val):
    return _fill(tensor, lambda: T.full(tensor.shape, val, dtype=tensor.dtype))


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) conditioned on [a, b], by inverse transform sampling as PyTorch: a
    uniform in [Phi(alpha), Phi(beta)] (alpha, beta: a, b standardized) mapped through
    mean + std sqrt(2) erfinv(2 u - 1), then clamped to [a, b] (rounding only)."""
    from .._composites import erfinv

    def cdf(v):  # the standard normal's
        return (1.0 + math.erf(v / math.sqrt(2.0))) / 2.0
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)

    def make():
        u = T.rand(tensor.shape, dtype=_dt.float64, generator=generator) * (2 * hi - 2 * lo) + (2 * lo - 1)
        return T.clamp(erfinv(u) * (std * math.sqrt(2.0)) + mean, a, b)
    return _fill(tensor, make)


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix of the tensor's shape flattened to (rows, rest), times gain
    (Saxe et al. 2014): the Q of a QR decomposition of a Gaussian matrix, signs fixed by R's
    diagonal, computed on the client with NumPy and uploaded."""
    import numpy as np
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = math.prod(tensor.shape) // rows if rows else 0
    from .._tensor import _next_seed
    a = np.random.default_rng(generator._next_seed() if generator is not None else _next_seed()).standard_normal(
        (max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    values = (gain * q[:rows, :cols]).reshape(tensor.shape)
    wide = tensor.dtype == _dt.float64  # (a float64 tensor orthogonal to float64's precision, as PyTorch's)
    return _fill(tensor, lambda: T.tensor(values.astype(np.float64 if wide else np.float32)))


def eye_(tensor):
    """The identity matrix in a 2-D tensor (ones on the diagonal of a (rows, cols) one), as
    torch.nn.init.eye_. Raises ValueError for another rank."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, lambda: T.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    """A 3-, 4- or 5-D convolution weight (out, in, *k) that passes its input's channels
    through: weight[g * out_per_group + d, d, centre] = 1 for d < min(out_per_group, in) in each
    of `groups`, zeros elsewhere (torch.nn.init.dirac_). Raises ValueError for another rank or
    an out size not divisible by groups."""
    import numpy as np
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = tensor.shape[0] // groups
    values = np.zeros(tensor.shape, np.float64)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1.0
    return _fill(tensor, lambda: T.tensor(values))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor of N(0, std^2) samples with ceil(sparsity * rows) zeros in each column, at
    random rows (Martens 2010; torch.nn.init.sparse_). The zero rows are drawn on the client
    from the next seed of `generator` or the GT stream (not PyTorch's draws). Raises ValueError
    for another rank."""
    import numpy as np
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    from .._tensor import _next_seed
    rng = np.random.default_rng(generator._next_seed() if generator is not None else _next_seed())
    keep = np.ones((rows, cols), np.float32)
    for c in range(cols):
        keep[rng.permutation(rows)[:zeros], c] = 0.0
    return _fill(tensor, lambda: T.randn(tensor.shape, dtype=tensor.dtype) * std * T.tensor(keep))


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight (out, in, *k), as PyTorch's private helper that libraries
    import (timm). Raises ValueError for fewer than 2 dimensions."""
    return _fans(tensor)


def _calculate_correct_fan(tensor, mode):
    """fan_in or fan_out of a weight (mode "fan_in"/"fan_out"), as PyTorch's private helper
    (peft imports it). Raises ValueError for another mode."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _deprecated(new):
    """PyTorch's old name of an in-place initializer (nn.init.normal for normal_): warns, then
    calls it."""
    def old(*args, **kwargs):
        import warnings
        warnings.warn(f"`nn.init.{new.__name__[:-1]}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    old.__name__ = old.__qualname__ = new.__name__[:-1]
    return old


uniform, normal, constant, xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, orthogonal, sparse = (
    _deprecated(f) for f in (uniform_, normal_, constant_, xavier_uniform_, xavier_normal_, kaiming_uniform_,
                             kaiming_normal_, orthogonal_, sparse_))
