"""torch.fft: discrete Fourier transforms of real and complex tensors (gt._complex).

Each 1-D transform of length n along a dimension is a product with the n-point DFT matrix
(X_k = sum_j x_j exp(-2 pi i j k / n); the inverse with +i and 1/n), cos and sin parts built
in float64 on the client (angles reduced mod n first) and rounded once to the tensor's
precision, so the workers need no FFT kernel and gradients are those of a matmul. That costs
O(n^2) per transformed vector, so a length over 1024 with a factor n1 of at least 16 (n = n1 n2,
n1 <= n2) takes Cooley and Tukey's four-step split instead (Bailey 1990, "FFTs in external or
hierarchical memory"): n2 DFTs of length n1, a twiddle product exp(-+2 pi i j2 k1 / n), n1 DFTs
of length n2, each again split when long: O(n (n1 + n2)) (a second of audio, 16000 points:
125 x 128). A length over `MAX_LENGTH` that does not split raises NotImplementedError rather
than build a huge matrix. The multi-dimensional
transforms apply the 1-D ones dimension by dimension. `norm` is PyTorch's: "backward" (default:
no scaling forward, 1/n inverse), "ortho" (1/sqrt(n) both ways), "forward" (1/n forward).
Results match PyTorch's (pocketfft) to rounding: the real-input inverse transforms ignore the
imaginary parts of the zero- and Nyquist-frequency terms, as pocketfft does.
"""
import functools
import math

import numpy as np

from . import _complex
from . import _functions as _F
from . import _tensor as _T
from . import dtypes as _dt

MAX_LENGTH = 16384  # longest transform (its DFT matrix: 2 x 16384^2 / 2 floats, 1 GiB in float32)

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _scale(n, norm, inverse):
    if norm is None or norm == "backward":
        return 1.0 / n if inverse else 1.0
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return 1.0 if inverse else 1.0 / n
    raise ValueError(f'Invalid normalization mode: "{norm}"')


@functools.lru_cache(maxsize=64)
def _matrices(n_in, n_out, n, kind, scale):
    """(cos, sin) matrices (n_in, n_out) in float64 of the transform `kind` of length n:
    "c2c"/"r2c" entries cos/sin(2 pi j k / n) * scale; "c2r" (k, j) with the Hermitian weights
    (1 for k = 0 and the Nyquist term, 2 for the others)."""
    if n_in > MAX_LENGTH or n_out > MAX_LENGTH:
        raise NotImplementedError(f"gt.fft: a transform of length {n} (GT computes transforms of a length with no "
                                  f"factor of at least 16 as products with the DFT matrix, up to length {MAX_LENGTH})")
    j = np.arange(n_in, dtype=np.int64)[:, None]
    k = np.arange(n_out, dtype=np.int64)[None, :]
    m = (j * k) % n
    angle = 2 * np.pi * m / n
    cos, sin = np.cos(angle), np.sin(angle)
    sin[(2 * m) % n == 0] = 0.0  # (angles 0 and pi: exactly 0, so the zero and Nyquist frequencies
    cos[(4 * m) % (2 * n) == n] = 0.0  # of a real signal have no imaginary part, as pocketfft's)
    cos, sin = cos * scale, sin * scale
    if kind == "c2r":  # rows are frequencies k (n_in = n // 2 + 1), columns samples j
        weight = np.full((n_in, 1), 2.0)
        weight[0] = 1.0
        if n % 2 == 0:
            weight[n // 2] = 1.0
        cos, sin = cos * weight, sin * weight
    cos.flags.writeable = sin.flags.writeable = False  # (shared by the cache)
    return cos, sin


_uploaded = {}  # (n_in, n_out, n, kind, scale, dtype) -> (cos, sin, bytes): tensors on the workers
_MAX_UPLOADED_BYTES = 64 << 20  # matrices kept on the workers, at most (bigger ones are uploaded per call)
_uploaded_bytes = [0]


def _dft(n_in, n_out, n, kind, scale, like):
    """The (cos, sin) matrices of _matrices as tensors of `like`'s dtype. Those of a transform
    used before are the tensors uploaded then (matrices are never written: ops make new
    tensors), so a model calling rfft each step sends them once; up to _MAX_UPLOADED_BYTES are
    kept, least recently used first to go."""
    key = (n_in, n_out, n, kind, scale, like.dtype)
    hit = _uploaded.pop(key, None)
    if hit is None:
        np_dtype = _dt.numpy_dtype(like.dtype)
        hit = tuple(_T.tensor(np.ascontiguousarray(m).astype(np_dtype)) for m in _matrices(n_in, n_out, n, kind, scale))
        size = 2 * n_in * n_out * np.dtype(np_dtype).itemsize
        if size > _MAX_UPLOADED_BYTES // 4:
            return hit
        while _uploaded and _uploaded_bytes[0] + size > _MAX_UPLOADED_BYTES:
            _uploaded_bytes[0] -= _uploaded.pop(next(iter(_uploaded)))[2]
        _uploaded_bytes[0] += size
        hit = hit + (size,)
    _uploaded[key] = hit  # (re-inserted: the dict's order is the order of last use)
    return hit[:2]


def _resize(x, n, dim):
    """x with dimension `dim` cut or zero-padded (at the end) to n."""
    size = x.shape[dim]
    if n == size:
        return x
    if n < size:
        return x.narrow(dim, 0, n)
    pad = list(x.shape)
    pad[dim] = n - size
    return _F.cat([x, _T.zeros(pad, dtype=x.dtype)], dim)


def _float_parts(x):
    a, b = _complex.parts(x)
    if not a.dtype.is_floating_point or a.dtype in (_dt.float16, _dt.bfloat16):
        a = _T.cast(a, _dt.float32 if a.dtype is not _dt.float64 else a.dtype)
        b = None if b is None else _T.cast(b, a.dtype)
    return a, b


def _last(t, dim):
    return t if dim in (-1, t.ndim - 1) else t.movedim(dim, -1)


def _back(t, dim):
    return t if dim in (-1, t.ndim - 1) else t.movedim(-1, dim)


_FOUR_STEP_ABOVE = 1024  # longer transforms split when they can (see the module's docstring)


def _split(n):
    """(n1, n2) with n1 n2 = n and n1 the largest divisor of n up to sqrt(n), or None when n is
    short or n1 < 16 (a prime, or twice one: the DFT matrix then)."""
    if n <= _FOUR_STEP_ABOVE:
        return None
    n1 = math.isqrt(n)
    while n % n1:
        n1 -= 1
    return (n1, n // n1) if n1 >= 16 else None


def _transform(a, b, n, inverse, scale):
    """(re, im) of the length-n DFT (inverse: with +i) of a + i b (b None: real) along the last
    axis, times scale: one product with the DFT matrix, or the four-step split."""
    split = _split(n)
    if split is None:
        C, S = _dft(n, n, n, "c2c", scale, a)
        if b is None:
            re, im = _T.matmul(a, C), _T.matmul(a, S)
            return re, (im if inverse else -im)
        if inverse:
            return _T.matmul(a, C) - _T.matmul(b, S), _T.matmul(a, S) + _T.matmul(b, C)
        return _T.matmul(a, C) + _T.matmul(b, S), _T.matmul(b, C) - _T.matmul(a, S)
    n1, n2 = split
    lead = tuple(a.shape[:-1])

    def columns(t):  # x[n2 j1 + j2] as (..., j2, j1)
        return None if t is None else _F.transpose(_F.reshape(t, lead + (n1, n2)), -1, -2)

    re, im = _transform(columns(a), columns(b), n1, inverse, 1.0)  # (..., j2, k1)
    tc, ts = _dft(n2, n1, n, "c2c", 1.0, re)  # the twiddles: cos, sin of 2 pi j2 k1 / n
    if inverse:
        re, im = re * tc - im * ts, re * ts + im * tc
    else:
        re, im = re * tc + im * ts, im * tc - re * ts
    re, im = _transform(_F.transpose(re, -1, -2), _F.transpose(im, -1, -2), n2, inverse, scale)  # (..., k1, k2)
    return (_F.reshape(_F.transpose(re, -1, -2), lead + (n,)),  # X[k1 + n1 k2]: (..., k2, k1) in order
            _F.reshape(_F.transpose(im, -1, -2), lead + (n,)))


def _c2c(x, n, dim, norm, inverse):
    if n is None:
        n = x.shape[dim]
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    x = _resize(x, n, dim)
    a, b = _float_parts(x)
    re, im = _transform(_last(a, dim), None if b is None else _last(b, dim), n, inverse, _scale(n, norm, inverse))
    return _complex.ComplexTensor(_back(re, dim), _back(im, dim))


def _r2c(x, n, dim, norm, inverse=False):
    if _complex.is_complex_tensor(x):
        raise RuntimeError(f"rfft expects a real input tensor, but got {x.dtype}")
    if n is None:
        n = x.shape[dim]
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    a, _ = _float_parts(_resize(x, n, dim))
    a = _last(a, dim)
    if _split(n) is not None:  # the whole transform, split, and its first n // 2 + 1 terms
        re, im = (t.narrow(-1, 0, n // 2 + 1) for t in _transform(a, None, n, inverse, _scale(n, norm, inverse)))
        return _complex.ComplexTensor(_back(re, dim), _back(im + 0.0, dim))
    C, S = _dft(n, n // 2 + 1, n, "r2c", _scale(n, norm, inverse), a)
    re, im = _T.matmul(a, C), _T.matmul(a, S)
    im = (im if inverse else -im) + 0.0  # (+ 0.0: the zero-frequency and Nyquist terms' imaginary parts +0, not -0)
    return _complex.ComplexTensor(_back(re, dim), _back(im, dim))


def _c2r(x, n, dim, norm, inverse=True):
    if n is None:
        n = 2 * (x.shape[dim] - 1)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    x = _resize(x, n // 2 + 1, dim)
    a, b = _float_parts(x)
    a = _last(a, dim)
    if _split(n) is not None:  # the Hermitian-symmetric spectrum in full, split: its real part
        b = _T.zeros(a.shape, dtype=a.dtype) if b is None else _last(b, dim)
        ends = [0] + ([n // 2] if n % 2 == 0 else [])  # (their imaginary parts ignored, as pocketfft's)
        keep = _T.tensor([0.0 if k in ends else 1.0 for k in range(n // 2 + 1)], dtype=a.dtype)
        b = b * keep
        tail = n - n // 2 - 1  # X[n - k] = conj(X[k]) for k = 1 .. tail
        full_a = _F.cat([a, _F.flip(a.narrow(-1, 1, tail), [-1])], -1)
        full_b = _F.cat([b, -_F.flip(b.narrow(-1, 1, tail), [-1])], -1)
        re, _ = _transform(full_a, full_b, n, inverse, _scale(n, norm, inverse))
        return _back(re, dim)
    C, S = _dft(n // 2 + 1, n, n, "c2r", _scale(n, norm, inverse), a)
    out = _T.matmul(a, C)
    if b is not None:
        b = _last(b, dim)
        out = out - _T.matmul(b, S) if inverse else out + _T.matmul(b, S)
    return _back(out, dim)


def fft(input, n=None, dim=-1, norm=None):
    """The 1-D discrete Fourier transform of `input` (real or complex) along `dim`, cut or
    zero-padded to n points: a complex tensor."""
    return _c2c(input, n, dim, norm, inverse=False)


def ifft(input, n=None, dim=-1, norm=None):
    """The inverse of fft (1/n scaling under the default norm): a complex tensor."""
    return _c2c(input, n, dim, norm, inverse=True)


def rfft(input, n=None, dim=-1, norm=None):
    """fft of a real `input`, keeping the n // 2 + 1 non-negative frequencies (the others are
    their conjugates). RuntimeError for a complex input."""
    return _r2c(input, n, dim, norm)


def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of rfft: a real tensor of n points (default 2 * (input.shape[dim] - 1))
    from the non-negative frequencies of a Hermitian-symmetric signal."""
    return _c2r(input, n, dim, norm)


_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def hfft(input, n=None, dim=-1, norm=None):
    """The 1-D transform of a one-sided Hermitian signal: a real tensor (irfft of its conjugate
    without irfft's 1/n under the default norm)."""
    _scale(1, norm, False)  # (ValueError for an unknown norm)
    return _c2r(_complex.conj(input), n, dim, _SWAP[norm])


def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of hfft for a real `input`: the conjugate of its rfft scaled by 1/n."""
    _scale(1, norm, False)
    return _complex.conj(_r2c(input, n, dim, _SWAP[norm]))


def _dims(input, s, dim):
    """The dimensions to transform (dim; default all, or the last len(s)) and their sizes."""
    if dim is None:
        dim = list(range(input.ndim)) if s is None else list(range(input.ndim - len(s), input.ndim))
    elif isinstance(dim, int):
        dim = [dim]
    dim = [d % input.ndim for d in dim]
    if s is not None and len(s) != len(dim):
        raise RuntimeError(f"When given, dim and shape arguments must have the same length (got {len(s)} and "
                           f"{len(dim)})")
    return dim, (list(s) if s is not None else [None] * len(dim))


def _c2c_n(input, s, dim, norm, inverse):
    dims, sizes = _dims(input, s, dim)
    out = input
    for d, n in zip(dims, sizes):
        out = _c2c(out, n, d, norm, inverse)
    return out


def fftn(input, s=None, dim=None, norm=None):
    """The N-D fft over `dim` (default: all dimensions, or the last len(s)), each cut or padded
    to s[i] points."""
    return _c2c_n(input, s, dim, norm, inverse=False)


def ifftn(input, s=None, dim=None, norm=None):
    """The inverse of fftn."""
    return _c2c_n(input, s, dim, norm, inverse=True)


def rfftn(input, s=None, dim=None, norm=None):
    """fftn of a real input, the last transformed dimension keeping its non-negative
    frequencies (rfft), the others full (fft)."""
    dims, sizes = _dims(input, s, dim)
    out = _r2c(input, sizes[-1], dims[-1], norm)
    for d, n in zip(dims[:-1], sizes[:-1]):
        out = _c2c(out, n, d, norm, inverse=False)
    return out


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of rfftn: a real tensor (the last dimension's length s[-1], default
    2 * (input.shape[dim[-1]] - 1))."""
    dims, sizes = _dims(input, s, dim)
    out = input
    for d, n in zip(dims[:-1], sizes[:-1]):
        out = _c2c(out, n, d, norm, inverse=True)
    return _c2r(out, sizes[-1], dims[-1], norm)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """fftn over the last two dimensions."""
    return fftn(input, s, dim, norm)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """ifftn over the last two dimensions."""
    return ifftn(input, s, dim, norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """rfftn over the last two dimensions."""
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """irfftn over the last two dimensions."""
    return irfftn(input, s, dim, norm)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point fft: [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d n)."""
    values = np.fft.fftfreq(n, d)
    return _T.tensor(values.astype(_dt.numpy_dtype(_dt.resolve(dtype or _dt.default_float()))),
                     requires_grad=requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of an n-point rfft: [0, 1, ..., n//2] / (d n)."""
    values = np.fft.rfftfreq(n, d)
    return _T.tensor(values.astype(_dt.numpy_dtype(_dt.resolve(dtype or _dt.default_float()))),
                     requires_grad=requires_grad)


def fftshift(input, dim=None):
    """input rolled so the zero frequency is in the middle of each dimension in `dim` (all by
    default), as numpy.fft.fftshift."""
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    return _F.roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    return _F.roll(input, [-(input.shape[d] // 2) for d in dims], dims)
