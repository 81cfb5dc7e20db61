"""Complex tensors (gt.complex64/complex128 as pairs of real tensors, gt._complex), torch.fft
(products with the DFT matrix, gt.fft) and torch.stft/istft, against NumPy in float64 and
against what PyTorch 2.15 prints and raises. The scripts they come from: Meta's Llama
(torch.polar, view_as_complex rotary embeddings), the Fourier Neural Operator (complex
parameters, rfft2/irfft2, einsum), Autoformer/TimesNet (rfft/irfft), Whisper (stft)."""
import copy
import io
import math
import pickle
import warnings

import numpy as np
import pytest

import gt
import gt.nn as nn

R = np.random.RandomState(0)


def crandn(*shape, dtype=np.complex128):
    return (R.randn(*shape) + 1j * R.randn(*shape)).astype(dtype)


def close(t, expected, tol=1e-10):
    a = t.numpy() if isinstance(t, gt.Tensor) else np.asarray(t)
    expected = np.asarray(expected)
    assert a.shape == expected.shape, (a.shape, expected.shape)
    assert np.abs(a - expected).max(initial=0) <= tol * max(1.0, np.abs(expected).max(initial=0)), \
        np.abs(a - expected).max()


def test_dtypes_creation_and_printing_as_pytorch():
    z = gt.tensor([1 + 2j, 3 - 1j])
    assert z.dtype == gt.complex64 == gt.cfloat == "complex64" and gt.complex128 is gt.cdouble
    assert z.is_complex() and gt.is_complex(z) and not z.is_floating_point() and z.element_size() == 8
    assert not gt.ones(2).is_complex() and gt.float32.is_complex is False and gt.complex64.is_complex
    assert gt.promote_types(gt.complex64, gt.float64) == gt.complex128
    # PyTorch 2.15's printing: each part with the real rules, the imaginary part's own width
    assert repr(z) == "tensor([1.+2.j, 3.-1.j])"
    assert repr(gt.tensor(2 + 0.5j)) == "tensor(2.+0.5000j)"
    assert repr(gt.tensor([1 + 2j, 0.5 - 1j])) == "tensor([1.0000+2.j, 0.5000-1.j])"
    assert repr(gt.zeros(2, dtype=gt.complex128)) == "tensor([0.+0.j, 0.+0.j], dtype=gt.complex128)"
    assert repr(gt.complex(gt.ones(2), gt.zeros(2))) == "tensor([1.+0.j, 1.+0.j])"
    assert z.real.dtype == gt.float32 and z.shape == (2,) and len(z) == 2
    assert z.tolist() == [1 + 2j, 3 - 1j] and z[1].item() == 3 - 1j and complex(z[0]) == 1 + 2j
    assert f"{z[0]:.1f}" == "1.0+2.0j"
    assert gt.tensor(np.array([1 + 1j]), dtype=gt.cdouble).dtype == gt.complex128
    assert gt.from_numpy(np.zeros(3, np.complex128)).dtype == gt.complex128
    assert gt.full((2,), 1 + 1j).dtype == gt.complex64 and gt.ones(2, dtype=gt.cfloat).numpy().tolist() == [1, 1]
    r = gt.randn(20000, dtype=gt.cfloat).numpy()  # standard complex normal: each part variance 1/2
    assert abs(r.real.var() - 0.5) < 0.03 and abs(r.imag.var() - 0.5) < 0.03 and r.dtype == np.complex64
    u = gt.rand(1000, dtype=gt.cdouble).numpy()
    assert u.dtype == np.complex128 and 0 <= u.real.min() and u.imag.max() < 1
    assert gt.randn_like(z).dtype == gt.complex64 and gt.zeros_like(z).dtype == gt.complex64


def test_arithmetic_and_elementwise_functions_match_numpy():
    a, b = crandn(3, 4), crandn(3, 4)
    x, y = gt.tensor(a), gt.tensor(b)
    r = R.randn(3, 4)
    t = gt.tensor(r)
    close(x + y, a + b), close(x - y, a - b), close(x * y, a * b), close(x / y, a / b)
    close(x + t, a + r), close(t - x, r - a), close(t * x, r * a), close(x / t, a / r), close(t / x, r / a)
    close(x * 2, a * 2), close(2.5 - x, 2.5 - a), close(x * 1j, a * 1j), close(1j * t, 1j * r)
    close(gt.exp(1j * t), np.exp(1j * r)), close(-x, -a)
    close(x.exp(), np.exp(a)), close(x.log(), np.log(a)), close(x.sqrt(), np.sqrt(a)), close(x ** 0.5, a ** 0.5)
    close(x ** 3, a ** 3, 1e-9), close(x.conj(), a.conj()), close(gt.conj(x), a.conj())
    close(x.abs(), np.abs(a)), close(abs(x), np.abs(a)), close(x.angle(), np.angle(a)), close(gt.angle(t), np.angle(r))
    close(x.sgn(), a / np.abs(a))
    close(x.sum(), a.sum()), close(x.sum(1), a.sum(1)), close(x.mean(0), a.mean(0)), close(x.cumsum(1), a.cumsum(1))
    close(x.real, a.real), close(x.imag, a.imag), close(gt.real(x), a.real), close(gt.real(t), r)
    close(gt.view_as_real(x), np.stack([a.real, a.imag], -1))
    close(gt.view_as_complex(gt.tensor(r.reshape(3, 2, 2))), r.reshape(3, 2, 2)[..., 0] + 1j * r.reshape(3, 2, 2)[..., 1])
    close(gt.polar(gt.tensor(np.abs(r)), t), np.abs(r) * np.exp(1j * r))
    assert (x == x).numpy().all() and not (x != x).numpy().any() and (x == gt.tensor(b)).numpy().sum() == 0
    close((x.to(gt.complex64) - gt.tensor(a.astype(np.complex64))).abs(), np.zeros((3, 4)))


def test_shapes_indexing_and_joins():
    a = crandn(2, 3, 4)
    x = gt.tensor(a)
    close(x.reshape(6, 4), a.reshape(6, 4)), close(x.permute(2, 0, 1), a.transpose(2, 0, 1))
    close(x.transpose(0, 1), a.swapaxes(0, 1)), close(x.flatten(1), a.reshape(2, 12)), close(x.mT, a.swapaxes(1, 2))
    close(x.unsqueeze(1).expand(2, 5, 3, 4), np.broadcast_to(a[:, None], (2, 5, 3, 4)))
    close(x[1, :, ::2], a[1, :, ::2]), close(x[..., -1], a[..., -1]), close(x[:, [2, 0]], a[:, [2, 0]])
    close(x.flip(2), a[:, :, ::-1]), close(x.roll(1, 2), np.roll(a, 1, 2)), close(x.narrow(1, 1, 2), a[:, 1:3])
    close(gt.cat([x, x], 1), np.concatenate([a, a], 1)), close(gt.stack([x, x]), np.stack([a, a]))
    close(gt.cat([x, gt.ones(2, 3, 4, dtype=gt.float64)]), np.concatenate([a, np.ones((2, 3, 4))]))
    close(gt.where(gt.tensor(a.real > 0), x, 0), np.where(a.real > 0, a, 0))
    assert [p.shape for p in x.chunk(2, 2)] == [(2, 3, 2)] * 2 and len(list(x)) == 2
    close(x.H if x.ndim == 2 else x[0].H, a[0].conj().T)
    # writes: a slice of a complex zeros tensor (the FNO's out_ft), ints, views
    z = gt.zeros(2, 3, 8, 5, dtype=gt.cfloat)
    v = crandn(2, 3, 2, 3, dtype=np.complex64)
    z[:, :, :2, :3] = gt.tensor(v)
    z[:, :, -2:, :3] = 1j
    e = np.zeros((2, 3, 8, 5), np.complex64)
    e[:, :, :2, :3], e[:, :, -2:, :3] = v, 1j
    close(z, e, 1e-6)
    row = z[0, 0]
    row[0, 0] = 5
    assert z[0, 0, 0, 0].item() == 5  # a view's write reaches its base, as PyTorch's
    z.real[1] = 0.0  # .real is the tensor's own real part
    assert (z.real[1] == 0).numpy().all()
    z += 1
    z *= 2j
    e[0, 0, 0, 0], e.real[1] = 5, 0
    close(z, (e + 1) * 2j, 1e-6)


def test_products_and_einsum():
    a, b = crandn(3, 4), crandn(4, 5)
    close(gt.tensor(a) @ gt.tensor(b), a @ b), close(gt.matmul(gt.tensor(a), gt.tensor(b)), a @ b)
    p, q = crandn(2, 3, 4, 4), crandn(3, 5, 4, 4)
    close(gt.einsum("bixy,ioxy->boxy", gt.tensor(p), gt.tensor(q)), np.einsum("bixy,ioxy->boxy", p, q))
    with pytest.raises(RuntimeError, match="same dtype"):  # PyTorch promotes nothing in a product
        gt.tensor(a) @ gt.tensor(b.real)
    lin = nn.Linear(4, 2, bias=False).to(gt.cdouble)  # Module.to(complex) makes its parameters complex
    assert lin.weight.dtype == gt.complex128 and isinstance(lin.weight, nn.Parameter)
    x = gt.tensor(crandn(3, 4))
    lin(x).abs().sum().backward()
    w, xa = lin.weight.detach().numpy(), x.numpy()
    y = xa @ w.T
    close(lin.weight.grad, (y / np.abs(y)).T @ xa.conj(), 1e-9)  # d|y|/dW in PyTorch's convention (checked on 2.15)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        lin.to(gt.float64)
    assert lin.weight.dtype == gt.float64 and type(lin.weight) is nn.Parameter and lin.weight.requires_grad


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_fft_functions_match_numpy(norm):
    z = crandn(3, 6)
    r = R.randn(3, 6)
    f = gt.fft
    x, t = gt.tensor(z), gt.tensor(r)
    close(f.fft(x, norm=norm), np.fft.fft(z, norm=norm)), close(f.fft(t, norm=norm), np.fft.fft(r, norm=norm))
    close(f.ifft(x, n=8, norm=norm), np.fft.ifft(z, n=8, norm=norm)), close(f.fft(x, n=4, dim=0, norm=norm),
                                                                             np.fft.fft(z, n=4, axis=0, norm=norm))
    close(f.rfft(t, norm=norm), np.fft.rfft(r, norm=norm)), close(f.rfft(t, n=5, norm=norm), np.fft.rfft(r, n=5, norm=norm))
    close(f.irfft(x, norm=norm), np.fft.irfft(z, norm=norm)), close(f.irfft(x, n=9, norm=norm), np.fft.irfft(z, n=9, norm=norm))
    close(f.hfft(x, norm=norm), np.fft.hfft(z, norm=norm)), close(f.ihfft(t, norm=norm), np.fft.ihfft(r, norm=norm))
    close(f.fft2(x, norm=norm), np.fft.fft2(z, norm=norm)), close(f.ifft2(x, norm=norm), np.fft.ifft2(z, norm=norm))
    close(f.fftn(x, s=(4, 7), norm=norm), np.fft.fftn(z, s=(4, 7), axes=(0, 1), norm=norm))
    close(f.rfft2(t, norm=norm), np.fft.rfft2(r, norm=norm)), close(f.rfftn(t, s=(4, 6), norm=norm),
                                                                     np.fft.rfftn(r, s=(4, 6), axes=(0, 1), norm=norm))
    close(f.irfft2(x, s=(3, 10), norm=norm), np.fft.irfft2(z, s=(3, 10), norm=norm))
    close(f.irfftn(x, norm=norm), np.fft.irfftn(z, norm=norm))


def test_fft_helpers_round_trips_and_errors():
    close(gt.fft.fftfreq(7, 0.5), np.fft.fftfreq(7, 0.5), 1e-7), close(gt.fft.rfftfreq(8), np.fft.rfftfreq(8))
    a = np.arange(10).reshape(2, 5)
    close(gt.fft.fftshift(gt.tensor(a)), np.fft.fftshift(a)), close(gt.fft.ifftshift(gt.tensor(a), dim=1),
                                                                    np.fft.ifftshift(a, axes=1))
    x = gt.randn(4, 16)
    close(gt.fft.irfft(gt.fft.rfft(x), n=16), x.numpy(), 1e-6)
    close(gt.fft.ifft(gt.fft.fft(x)).real, x.numpy(), 1e-6)
    assert gt.fft.rfft(x).dtype == gt.complex64 and gt.fft.rfft(x.double()).dtype == gt.complex128
    assert gt.fft.rfft(gt.arange(4)).dtype == gt.complex64  # an integer input is transformed as float32
    with pytest.raises(RuntimeError, match="rfft expects a real input"):
        gt.fft.rfft(gt.fft.fft(x))
    with pytest.raises(ValueError, match="Invalid normalization mode"):
        gt.fft.fft(x, norm="both")
    with pytest.raises(NotImplementedError, match="length 100003"):  # (a prime: no split, and too long a matrix)
        gt.fft.fft(gt.zeros(100003))


@pytest.mark.parametrize("n", [2048, 4097, 16000])
def test_long_transforms_split_four_step_and_match_numpy(n):
    # lengths over 1024 with a factor >= 16 take the four-step split (16000 = 125 x 128): a
    # second of audio filtered by rfft -> mask -> irfft took minutes as one DFT matrix
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal((2, n)), rng.standard_normal((2, n))
    z = gt.complex(gt.tensor(x), gt.tensor(y))
    np.testing.assert_allclose(gt.fft.fft(z).numpy(), np.fft.fft(x + 1j * y), rtol=0, atol=1e-9 * n)
    np.testing.assert_allclose(gt.fft.ifft(z, norm="ortho").numpy(), np.fft.ifft(x + 1j * y, norm="ortho"), atol=1e-12)
    spectrum = np.fft.rfft(x)
    np.testing.assert_allclose(gt.fft.rfft(gt.tensor(x)).numpy(), spectrum, atol=1e-9 * n)
    half = gt.complex(gt.tensor(spectrum.real), gt.tensor(spectrum.imag))
    np.testing.assert_allclose(gt.fft.irfft(half, n=n).numpy(), np.fft.irfft(spectrum, n=n), atol=1e-12)
    np.testing.assert_allclose(gt.fft.hfft(half, n=n).numpy(), np.fft.hfft(spectrum, n=n), atol=1e-9 * n)
    signal = gt.tensor(x[:1].astype(np.float32), requires_grad=True)
    out = gt.fft.irfft(gt.fft.rfft(signal) * 0.5, n=n)
    (out * out).sum().backward()  # d/dx sum((x/2)^2) = x/2
    np.testing.assert_allclose(signal.grad.numpy(), 0.5 * x[:1], atol=1e-5)


def test_fft_matrices_are_uploaded_once_and_bounded(monkeypatch):
    f = gt.fft
    x = gt.randn(2, 24)
    first = f._dft(24, 13, 24, "r2c", 1.0, x)
    assert all(a is b for a, b in zip(f._dft(24, 13, 24, "r2c", 1.0, x), first))  # a second call: the same tensors
    assert f._dft(24, 13, 24, "r2c", 1.0, x.double())[0].dtype == gt.float64  # one entry per dtype
    close(f.rfft(x), np.fft.rfft(x.numpy()), 1e-5), close(f.rfft(x), np.fft.rfft(x.numpy()), 1e-5)
    monkeypatch.setattr(f, "_uploaded", {}), monkeypatch.setattr(f, "_uploaded_bytes", [0])
    monkeypatch.setattr(f, "_MAX_UPLOADED_BYTES", 4 * 2 * 8 * 8 * 4)  # room for 4 float32 8x8 pairs
    for n in range(2, 10):
        f._dft(8, 8, n, "c2c", 1.0, x)
    assert len(f._uploaded) == 4 and f._uploaded_bytes[0] == 4 * 2 * 8 * 8 * 4  # the 4 most recent stay
    assert sorted(k[2] for k in f._uploaded) == [6, 7, 8, 9]
    big = f._dft(16, 16, 16, "c2c", 1.0, x)  # over a quarter of the budget: uploaded, not kept
    assert len(f._uploaded) == 4 and big[0].shape == (16, 16)


def test_gradients_follow_pytorchs_convention():
    # z.grad = dL/dRe + i dL/dIm: for L = sum |z|^2 it is 2z (PyTorch's documented example)
    a = crandn(4)
    z = gt.tensor(a, requires_grad=True)
    assert z.requires_grad and z.is_leaf and z.grad is None
    (z * z.conj()).real.sum().backward()
    close(z.grad, 2 * a)
    z.grad = None
    z.abs().sum().backward()
    close(z.grad, a / np.abs(a))
    zero = gt.zeros(2, dtype=gt.cdouble, requires_grad=True)
    zero.abs().sum().backward()
    close(zero.grad, np.zeros(2))  # |z| at 0: gradient 0, as PyTorch's (not nan)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        gt.tensor(a, requires_grad=True).sum().backward()
    # a loss through rfft / irfft: the gradient against central differences (float64)
    r = R.randn(2, 12)
    w = crandn(2, 7)

    def loss_of(values):
        x = gt.tensor(values, requires_grad=True)
        spectrum = gt.fft.rfft(x) * gt.tensor(w)
        loss = (gt.fft.irfft(spectrum, n=12) ** 2).sum() + spectrum.abs().sum()
        return x, loss
    x, loss = loss_of(r)
    loss.backward()
    numeric = np.zeros_like(r)
    for i in np.ndindex(r.shape):
        d = np.zeros_like(r)
        d[i] = 1e-6
        numeric[i] = (loss_of(r + d)[1].item() - loss_of(r - d)[1].item()) / 2e-6
    close(x.grad, numeric, 1e-6)


def test_llama_rotary_embedding_equals_the_real_rotation():
    # Meta's llama/model.py: freqs_cis = polar(1, t * theta_i); xq_ = view_as_complex(pairs)
    dim, T = 8, 6
    freqs = 1.0 / (10000.0 ** (gt.arange(0, dim, 2)[: dim // 2].float() / dim))
    angles = gt.outer(gt.arange(T), freqs).float()
    freqs_cis = gt.polar(gt.ones_like(angles), angles)
    xq = gt.randn(2, T, 3, dim, requires_grad=True)
    xq_ = gt.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    out = gt.view_as_real(xq_ * freqs_cis.view(1, T, 1, dim // 2)).flatten(3).type_as(xq)
    x = xq.detach().numpy().reshape(2, T, 3, dim // 2, 2)
    th = angles.numpy()[None, :, None, :]
    expected = np.stack([x[..., 0] * np.cos(th) - x[..., 1] * np.sin(th),
                         x[..., 0] * np.sin(th) + x[..., 1] * np.cos(th)], -1).reshape(2, T, 3, dim)
    assert out.dtype == gt.float32 and out.shape == (2, T, 3, dim)
    close(out, expected, 1e-6)
    out.sum().backward()
    g = np.stack([np.cos(th) + np.sin(th), -np.sin(th) + np.cos(th)], -1).reshape(1, T, 1, dim)
    close(xq.grad, np.broadcast_to(g, (2, T, 3, dim)), 1e-6)


def test_complex_parameters_train_as_their_real_parts():
    # Adam on a complex parameter is Adam on its two real parts (PyTorch steps view_as_real(p))
    w0, x0 = crandn(3, 4), R.randn(5, 3)
    p = nn.Parameter(gt.tensor(w0))
    re, im = nn.Parameter(gt.tensor(w0.real)), nn.Parameter(gt.tensor(w0.imag))
    assert isinstance(p, nn.Parameter) and p.dtype == gt.complex128 and p.requires_grad
    opt, ref = gt.optim.Adam([p], lr=0.1), gt.optim.Adam([re, im], lr=0.1)
    x = gt.tensor(x0)
    for _ in range(3):
        y = x.to(gt.cdouble) @ p
        (y.abs() ** 2).mean().backward()
        opt.step(), opt.zero_grad()
        yr, yi = x @ re, x @ im
        (yr ** 2 + yi ** 2).mean().backward()
        ref.step(), ref.zero_grad()
    close(p.detach(), re.detach().numpy() + 1j * im.detach().numpy())
    # its state is complex, as PyTorch's; a loaded state steps on the same way
    state = opt.state_dict()["state"][0]
    assert state["exp_avg"].dtype == gt.complex128 and state["step"].item() == 3
    close(state["exp_avg_sq"].real, ref.state_dict()["state"][0]["exp_avg_sq"].numpy())
    buf = io.BytesIO()
    gt.save({"model": {"w": p}, "opt": opt.state_dict()}, buf)
    buf.seek(0)
    saved = gt.load(buf)
    q = nn.Parameter(gt.zeros(3, 4, dtype=gt.cdouble))
    with gt.no_grad():
        q.copy_(saved["model"]["w"])
    opt2 = gt.optim.Adam([q], lr=0.1)
    opt2.load_state_dict(saved["opt"])
    for o, param in ((opt, p), (opt2, q)):
        (x.to(gt.cdouble) @ param).abs().sum().backward()
        o.step()
    close(q.detach(), p.detach().numpy())
    assert sum(t.numel() for t in [p]) == 12  # a complex element counts once, as PyTorch's


def test_modules_buffers_save_load_pickle_and_deepcopy():
    class Spectral(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(gt.randn(2, 3, dtype=gt.cfloat))
            self.register_buffer("freqs", gt.polar(gt.ones(3), gt.arange(3.0)))

    m = Spectral()
    assert [n for n, _ in m.named_parameters()] == ["weight"] and m.freqs.dtype == gt.complex64
    buf = io.BytesIO()
    gt.save(m.state_dict(), buf)
    buf.seek(0)
    m2 = Spectral()
    m2.load_state_dict(gt.load(buf))
    close(m2.weight.detach(), m.weight.detach().numpy()), close(m2.freqs, m.freqs.numpy())
    m.double()  # float() / double() leave complex tensors alone, as PyTorch's
    assert m.weight.dtype == gt.complex64
    z = gt.tensor([1 + 2j, 3 - 1j])
    for copied in (copy.deepcopy(z), pickle.loads(pickle.dumps(z)), copy.deepcopy(m).weight.detach()):
        assert copied.dtype == gt.complex64
    assert copy.deepcopy(z).tolist() == z.tolist()
    assert type(copy.deepcopy(m).weight) is type(m.weight)


def test_unsupported_ops_raise_clearly():
    z = gt.tensor([1 + 2j, 3 - 1j])
    with pytest.raises(TypeError, match="sigmoid: GT's complex tensors do not support this op"):
        z.sigmoid()
    with pytest.raises(TypeError, match="max: GT's complex tensors"):
        z.max()
    with pytest.raises(RuntimeError, match="comparison is not supported"):
        z < z
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        gt.ones(2).imag
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        gt.view_as_complex(gt.ones(3))
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex"):
        gt.view_as_real(gt.ones(2))
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex"):
        nn.Linear(2, 2).to(gt.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="discards the imaginary part"):
            z.float()


def test_stft_and_istft_match_numpy_and_invert():
    x = R.randn(2, 200)
    w = gt.hann_window(32, dtype=gt.float64)
    n = np.arange(32)
    close(w, 0.5 - 0.5 * np.cos(2 * math.pi * n / 32))
    close(gt.hann_window(5, periodic=False), [0, 0.5, 1, 0.5, 0], 1e-7)
    close(gt.hamming_window(4, dtype=gt.float64), 0.54 - 0.46 * np.cos(2 * math.pi * np.arange(4) / 4))
    close(gt.blackman_window(3, periodic=False, dtype=gt.float64), [0, 1, 0], 1e-15)
    close(gt.bartlett_window(5, periodic=False), [0, 0.5, 1, 0.5, 0])
    s = gt.stft(gt.tensor(x), 32, hop_length=8, window=w, return_complex=True)
    padded = np.pad(x, ((0, 0), (16, 16)), mode="reflect")
    frames = np.stack([padded[:, i * 8:i * 8 + 32] for i in range(1 + (padded.shape[1] - 32) // 8)], 1)
    expected = np.fft.rfft(frames * w.numpy(), axis=-1).transpose(0, 2, 1)
    assert s.shape == (2, 17, 26) and s.dtype == gt.complex128
    close(s, expected)
    close(gt.istft(s, 32, hop_length=8, window=w, length=200), x)
    with pytest.raises(RuntimeError, match="return_complex parameter be given"):
        gt.stft(gt.tensor(x), 32, window=w)
    with pytest.warns(UserWarning, match="A window was not provided"):
        gt.stft(gt.tensor(x[0]), 16, return_complex=True)


def test_istft_of_a_complex_signal_and_ctc_of_half_log_probs():
    rng = np.random.default_rng(0)
    x = gt.complex(gt.tensor(rng.standard_normal(200)), gt.tensor(rng.standard_normal(200)))
    w = gt.hann_window(32, dtype=gt.float64)
    S = gt.stft(x, 32, 8, window=w, return_complex=True)
    y = gt.istft(S, 32, 8, window=w, onesided=False, return_complex=True, length=200)
    assert y.dtype == gt.complex128 and np.allclose(y.numpy(), x.numpy(), atol=1e-12)
    lp = gt.tensor(rng.standard_normal((6, 1, 4)).astype(np.float32)).log_softmax(-1)
    full = gt.nn.functional.ctc_loss(lp, gt.tensor([[2, 1]]), [6], [2]).item()
    for dtype in (gt.float16, gt.bfloat16):  # computed in float32 (half's range lacks the -1e30 of impossible paths)
        half = gt.nn.functional.ctc_loss(lp.to(dtype), gt.tensor([[2, 1]]), [6], [2])
        assert half.dtype == dtype and abs(half.float().item() - full) < 0.01


def test_backward_of_a_complex_result_with_one_part_on_the_graph():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    z = gt.complex(x, gt.tensor([0.0, 1.0])) * 2  # (the imaginary part requires no grad)
    z.backward(gt.complex(gt.ones(2), gt.ones(2)))
    assert x.grad.tolist() == [2.0, 2.0]


def test_complex_ops_that_dropped_the_imaginary_part():
    # S4's DPLR kernel (z ** arange), bilinear discretization (reciprocal), vdot, p.data casts:
    # each gave a real result of the real part, silently. Expected values: NumPy's.
    zn = np.array([1 + 2j, -0.5 + 0.25j], dtype=np.complex64)
    z = gt.tensor(zn)
    k = gt.arange(3)
    np.testing.assert_allclose((z ** k.unsqueeze(-1)).numpy(), zn ** np.arange(3)[:, None], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gt.pow(z, gt.tensor(2)).numpy(), zn ** 2, rtol=1e-5)
    np.testing.assert_allclose((z ** (1 + 1j)).numpy(), zn ** (1 + 1j), rtol=1e-4, atol=1e-6)
    for fn, ref in ((gt.reciprocal, lambda a: 1 / a), (gt.expm1, np.expm1), (gt.exp2, np.exp2), (gt.log2, np.log2),
                    (gt.log10, np.log10), (gt.sinh, np.sinh), (gt.cosh, np.cosh)):
        got = fn(z)
        assert got.dtype == gt.complex64, fn
        np.testing.assert_allclose(got.numpy(), ref(zn), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gt.trapezoid(z).numpy(), np.trapezoid(zn) if hasattr(np, "trapezoid") else np.trapz(zn),
                               rtol=1e-6)
    assert abs(gt.vdot(z, z).item() - np.vdot(zn, zn)) < 1e-5  # (conjugates its first argument)
    with pytest.raises((TypeError, NotImplementedError)):  # (PyTorch: NotImplementedError)
        gt.copysign(z, gt.ones(2))
    p = gt.nn.Parameter(gt.tensor(zn))
    p.data = p.data.to(gt.complex128)
    assert p.dtype == gt.complex128 and p.requires_grad
    t = gt.tensor(zn)
    t.data = gt.tensor([3.0])
    assert t.dtype == gt.float32 and t.tolist() == [3.0]


def test_inner_of_matrices():
    a, b = np.arange(4.0).reshape(2, 2), np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(gt.inner(gt.tensor(a), gt.tensor(b)).numpy(), np.inner(a, b))
    assert gt.tensor(a).inner(gt.tensor(b)).shape == (2, 3)
