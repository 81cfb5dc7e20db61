"""torch.stft, torch.istft and the window functions (hann, hamming, blackman, bartlett).

The short-time Fourier transform frames the signal (Tensor.unfold), multiplies each frame by
the window and takes its fft (gt.fft: a product with the DFT matrix); istft inverts it by
overlap-add (nn.functional.fold) divided by the summed squared window, as PyTorch's (which
follows Griffin & Lim, "Signal estimation from modified short-time Fourier transform", IEEE
TASSP 1984). Windows are computed in float64 on the client and rounded once to `dtype`.
"""
import math
import warnings

import numpy as np

from . import _complex
from . import _functions as T
from . import dtypes as _dt
from . import fft as _fft


def _window(values, dtype, requires_grad):
    d = _dt.resolve(dtype or _dt.default_float())
    return T.tensor(np.asarray(values).astype(_dt.numpy_dtype(d)), requires_grad=requires_grad)


def _cosine_window(window_length, periodic, coefficients, dtype, requires_grad):
    """sum_k (-1)^k c_k cos(2 pi k n / (N - 1)) for n < N (N = window_length + 1 when periodic,
    its last value dropped), as PyTorch's generalized cosine windows."""
    if window_length < 0:
        raise RuntimeError(f"window_length must be non-negative, got {window_length}")
    if window_length <= 1:
        return _window(np.ones(window_length), dtype, requires_grad)
    n_points = window_length + 1 if periodic else window_length
    n = np.arange(window_length, dtype=np.float64)
    w = sum((-1) ** k * c * np.cos(2 * math.pi * k * n / (n_points - 1)) for k, c in enumerate(coefficients))
    return _window(w, dtype, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)) (periodic: the first window_length of N = window_length + 1)."""
    return _cosine_window(window_length, periodic, (0.5, 0.5), dtype, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1)) (periodic as hann_window)."""
    return _cosine_window(window_length, periodic, (alpha, beta), dtype, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)) (periodic as hann_window)."""
    return _cosine_window(window_length, periodic, (0.42, 0.5, 0.08), dtype, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangle 1 - |2 n / (N - 1) - 1| (periodic as hann_window)."""
    if window_length <= 1:
        return _window(np.ones(max(window_length, 0)), dtype, requires_grad)
    n_points = window_length + 1 if periodic else window_length
    n = np.arange(window_length, dtype=np.float64)
    return _window(1 - np.abs(2 * n / (n_points - 1) - 1), dtype, requires_grad)


def _full_window(window, win_length, n_fft, like):
    """The window (default: ones) zero-padded on both sides to n_fft, centered."""
    if window is None:
        window = T.ones(win_length, dtype=like)
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {tuple(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = T.cat([T.zeros(left, dtype=window.dtype), window,
                        T.zeros(n_fft - win_length - left, dtype=window.dtype)])
    return window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform of `input` (L,) or (B, L): a complex tensor (B?, n_fft // 2
    + 1, frames) (n_fft frequencies when onesided=False or the input is complex), frame t the
    fft of input[t * hop_length : t * hop_length + n_fft] * window (after padding n_fft // 2 on
    both sides with `pad_mode` when `center`). hop_length defaults to n_fft // 4, win_length to
    n_fft; normalized multiplies by n_fft^-1/2. return_complex must be given for a real input
    (RuntimeError otherwise, as PyTorch); False returns view_as_real of the result."""
    is_complex = input.dtype.is_complex
    if return_complex is None:
        if not is_complex and not (window is not None and window.dtype.is_complex):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    batched = input.ndim == 2
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    x = input if batched else input.unsqueeze(0)
    if center:
        from .nn import functional as F
        pad = n_fft // 2
        if is_complex:
            re, im = _complex.parts(x)
            x = _complex.ComplexTensor(F.pad(re.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1),
                                       F.pad(im.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1))
        else:
            x = F.pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    if x.shape[-1] < n_fft:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    real_dtype = _dt.float64 if x.dtype in (_dt.float64, _dt.complex128) else _dt.float32
    if window is None:
        _warn_window(", which is known to cause spectral leakage. Other windows such as torch.hann_window or "
                     "torch.hamming_window are recommended to reduce spectral leakage")
    w = _full_window(window, win_length, n_fft, real_dtype)
    frames = x.unfold(-1, n_fft, hop_length) * w  # (B, frames, n_fft)
    onesided = (not is_complex) if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    spectrum = _fft.rfft(frames, dim=-1, norm=norm) if onesided else _fft.fft(frames, dim=-1, norm=norm)
    out = spectrum.transpose(-1, -2)  # (B, freq, frames)
    if not batched:
        out = out.squeeze(0)
    return out if return_complex else _complex.view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of stft: input (B?, freq, frames) complex -> the signal (B?, L), by the
    inverse fft of each frame times the window, overlap-added and divided by the overlap-added
    squared window. L is `length` when given, else (frames - 1) * hop_length (+ n_fft -
    2 * (n_fft // 2) without center); a complex signal with onesided=False and
    return_complex=True. RuntimeError where the squared window sums to ~0 (under 1e-11), as
    PyTorch's."""
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    batched = input.ndim == 3
    z = input if batched else input.unsqueeze(0)
    n_frames = z.shape[-1]
    onesided = (z.shape[-2] != n_fft) if onesided is None else onesided
    real_dtype = _dt.float64 if z.dtype is _dt.complex128 else _dt.float32
    if window is None:
        _warn_window(". Please provide the same window used by stft to make the inversion lossless")
    w = _full_window(window, win_length, n_fft, real_dtype)
    norm = "ortho" if normalized else "backward"
    spectra = z.transpose(-1, -2)  # (B, frames, freq)
    if onesided:
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        return _overlap_add(_fft.irfft(spectra, n=n_fft, dim=-1, norm=norm), w, hop_length, center, length, batched)
    frames = _fft.ifft(spectra, n=n_fft, dim=-1, norm=norm)
    if return_complex:  # the real and imaginary parts overlap-added alike
        from . import _complex
        return _complex.complex(_overlap_add(frames.real, w, hop_length, center, length, batched),
                                _overlap_add(frames.imag, w, hop_length, center, length, batched))
    return _overlap_add(frames.real, w, hop_length, center, length, batched)


def _overlap_add(frames, w, hop_length, center, length, batched):
    """istft's signal from real frames (B, frames, n_fft): windowed, overlap-added and divided by
    the overlap-added squared window, cut to `length`."""
    n_frames, n_fft = frames.shape[-2:]
    frames = frames * w  # (B, frames, n_fft)
    from .nn import functional as F
    total = n_fft + hop_length * (n_frames - 1)
    fold = dict(output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop_length))
    y = F.fold(frames.transpose(-1, -2), **fold).reshape(frames.shape[0], total)
    envelope = F.fold((w * w).reshape(1, n_fft, 1).expand(1, n_fft, n_frames), **fold).reshape(total)
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    y, envelope = y[:, start:min(end, total)], envelope[start:min(end, total)]
    small = envelope.abs() < 1e-11
    if bool(small.any()):
        raise RuntimeError("istft: window overlap add min: the window's squared sum is zero somewhere (NOLA "
                           "condition failed)")
    y = y / envelope
    if length is not None and y.shape[-1] < length:
        y = T.cat([y, T.zeros(y.shape[0], length - y.shape[-1], dtype=y.dtype)], -1)
    return y if batched else y.squeeze(0)


def _warn_window(what):
    warnings.warn(f"A window was not provided. A rectangular window will be applied{what}. To suppress this "
                  "warning and use a rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                  UserWarning, stacklevel=3)
