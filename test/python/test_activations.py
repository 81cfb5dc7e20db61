"""Activations, interpolate/Upsample, clip_grad_value_, orthogonal_ and inference_mode
(issue 24), against NumPy float64 forms of their definitions."""
import numpy as np
import pytest

import gt

nn, F = gt.nn, gt.nn.functional
rng = np.random.default_rng(0)
X = (rng.standard_normal((4, 6)) * 3).astype(np.float32)
x64 = X.astype(np.float64)
softplus = np.log1p(np.exp(-np.abs(x64))) + np.maximum(x64, 0)
ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805
REFERENCES = {
    "elu": np.where(x64 > 0, x64, np.expm1(np.minimum(x64, 0))),
    "selu": SCALE * np.where(x64 > 0, x64, ALPHA * np.expm1(np.minimum(x64, 0))),
    "celu": np.maximum(x64, 0) + np.minimum(np.expm1(np.minimum(x64, 0)), 0),
    "mish": x64 * np.tanh(softplus),
    "hardtanh": np.clip(x64, -1, 1),
    "relu6": np.clip(x64, 0, 6),
    "hardsigmoid": np.clip(x64 + 3, 0, 6) / 6,
    "hardswish": x64 * np.clip(x64 + 3, 0, 6) / 6,
    "logsigmoid": -np.log1p(np.exp(-x64)),
    "softsign": x64 / (1 + np.abs(x64)),
}
MODULES = {"elu": "ELU", "selu": "SELU", "celu": "CELU", "mish": "Mish", "hardtanh": "Hardtanh", "relu6": "ReLU6",
           "hardsigmoid": "Hardsigmoid", "hardswish": "Hardswish", "logsigmoid": "LogSigmoid", "softsign": "Softsign"}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_activation_function_and_module(name):
    want = REFERENCES[name]
    np.testing.assert_allclose(getattr(F, name)(gt.tensor(X)).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(getattr(nn, MODULES[name])()(gt.tensor(X)).numpy(), want, rtol=1e-5, atol=1e-6)


INPLACE = {"relu": np.maximum(x64, 0), "silu": x64 / (1 + np.exp(-x64)), "leaky_relu": np.where(x64 > 0, x64, 0.01 * x64),
           **{k: v for k, v in REFERENCES.items() if k not in ("logsigmoid", "softsign")}}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_rebinds_the_input_as_pytorch_mutates_it(name):
    # nn.ReLU(True) and F.relu(x, inplace=True) (pytorch/examples' dcgan): the input tensor
    # takes the result and is returned
    for how in ("keyword", "positional", "module"):
        t = gt.tensor(X)
        if how == "keyword":
            out = getattr(F, name)(t, inplace=True)
        elif how == "positional":  # inplace after the function's own arguments
            defaults = {"leaky_relu": (0.01,), "elu": (1.0,), "celu": (1.0,), "hardtanh": (-1.0, 1.0)}.get(name, ())
            out = getattr(F, name)(t, *defaults, True)
        else:
            module = getattr(nn, {**MODULES, "relu": "ReLU", "silu": "SiLU", "leaky_relu": "LeakyReLU"}[name])(inplace=True)
            out = module(t)
        assert out is t, how
        np.testing.assert_allclose(t.numpy(), INPLACE[name], rtol=1e-5, atol=1e-6)
    assert repr(nn.ReLU(True)) == "ReLU(inplace=True)" and repr(nn.ReLU()) == "ReLU()"


def test_inplace_keeps_the_graph_and_refuses_a_leaf():
    w = gt.tensor([-1.0, 2.0], requires_grad=True)
    h = w * 3.0
    F.relu(h, inplace=True)
    (h * h).sum().backward()  # d/dw relu(3w)^2 = 18 w where w > 0
    np.testing.assert_allclose(w.grad.numpy(), [0.0, 36.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.relu(w, inplace=True)
    x = gt.ones(4000)
    assert F.dropout(x, 0.5, True, True) is x and set(np.unique(x.numpy())) <= {0.0, 2.0}
    x = gt.ones(4000)
    assert nn.Dropout(0.5, inplace=True).eval()(x) is x and np.all(x.numpy() == 1.0)


def test_prelu_softplus_module():
    p = nn.PReLU(3, init=0.1)
    x = rng.standard_normal((2, 3, 4))
    want = np.where(x > 0, x, 0.1 * x)
    np.testing.assert_allclose(p(gt.tensor(x, dtype=gt.float32)).numpy(), want, rtol=1e-6, atol=1e-7)
    assert [n for n, _ in p.named_parameters()] == ["weight"]
    np.testing.assert_allclose(nn.Softplus()(gt.tensor(X)).numpy(), softplus, rtol=1e-5, atol=1e-6)


def interp_linear_ref(x, axis, out, align_corners):
    n = x.shape[axis]
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        pos = dst * ((n - 1) / (out - 1)) if out > 1 else np.zeros(out)
    else:
        pos = np.maximum((dst + 0.5) * n / out - 0.5, 0)
    lo = np.minimum(np.floor(pos).astype(int), n - 1)
    hi = np.minimum(lo + 1, n - 1)
    w = pos - lo
    shape = [1] * x.ndim
    shape[axis] = out
    return np.take(x, lo, axis) * (1 - w.reshape(shape)) + np.take(x, hi, axis) * w.reshape(shape)


@pytest.mark.parametrize("size,align", [((9, 3), False), ((9, 3), True), ((2, 14), False)])
def test_bilinear_interpolate(size, align):
    x = rng.standard_normal((2, 3, 5, 7))
    want = interp_linear_ref(interp_linear_ref(x, 2, size[0], align), 3, size[1], align)
    got = F.interpolate(gt.tensor(x, dtype=gt.float32), size=size, mode="bilinear", align_corners=align)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_nearest_interpolate_upsample_and_errors():
    x = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(F.interpolate(gt.tensor(x), scale_factor=2).numpy(),
                                  x.repeat(2, 2).repeat(2, 3))
    got = nn.Upsample(size=(2, 6), mode="nearest")(gt.tensor(x)).numpy()
    np.testing.assert_array_equal(got, x[:, :, np.floor(np.arange(2) * 1.5).astype(int)][..., np.floor(
        np.arange(6) * 4 / 6).astype(int)])
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(gt.tensor(x))
    with pytest.raises(ValueError, match="expects 3-D input"):
        F.interpolate(gt.tensor(x), scale_factor=2, mode="linear")
    with pytest.raises(ValueError, match="align_corners option"):
        F.interpolate(gt.tensor(x), scale_factor=2, align_corners=True)


def bicubic_ref(x, out, align_corners):
    """PyTorch's upsample_bicubic2d written directly: per output pixel, the 4 x 4 taps around
    floor of its source position (clamped to the image), Keys' weights with A = -0.75."""
    def weights(t, A=-0.75):
        near = lambda d: ((A + 2) * d - (A + 3)) * d * d + 1
        far = lambda d: ((A * d - 5 * A) * d + 8 * A) * d - 4 * A
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]

    def source(i, n, o):
        if align_corners:
            return i * (n - 1) / (o - 1) if o > 1 else 0.0
        return (i + 0.5) * n / o - 0.5
    N, C, H, W = x.shape
    y = np.zeros((N, C) + out)
    for i in range(out[0]):
        for j in range(out[1]):
            sy, sx = source(i, H, out[0]), source(j, W, out[1])
            fy, fx = int(np.floor(sy)), int(np.floor(sx))
            wy, wx = weights(sy - fy), weights(sx - fx)
            for a in range(4):
                for b in range(4):
                    yy, xx = min(max(fy - 1 + a, 0), H - 1), min(max(fx - 1 + b, 0), W - 1)
                    y[:, :, i, j] += wy[a] * wx[b] * x[:, :, yy, xx]
    return y


@pytest.mark.parametrize("size,align", [((9, 3), False), ((9, 3), True), ((2, 14), False), ((11, 13), True)])
def test_bicubic_interpolate(size, align):
    x = rng.standard_normal((2, 3, 5, 7))
    got = F.interpolate(gt.tensor(x), size=size, mode="bicubic", align_corners=align)
    np.testing.assert_allclose(got.numpy(), bicubic_ref(x, size, align), rtol=1e-12, atol=1e-12)


def test_area_and_antialiased_interpolate():
    x = rng.standard_normal((2, 3, 8, 12))
    blocks = x.reshape(2, 3, 4, 2, 4, 3).mean((3, 5))
    np.testing.assert_allclose(F.interpolate(gt.tensor(x), size=(4, 4), mode="area").numpy(), blocks, rtol=1e-12)
    # Halving with antialias: the triangle filter stretched to 4 taps, (1, 3, 3, 1) / 8 inside
    # (PyTorch's and Pillow's), renormalized where it meets the edge.
    row = rng.standard_normal((1, 1, 1, 10))
    half = F.interpolate(gt.tensor(row), size=(1, 5), mode="bilinear", antialias=True).numpy()[0, 0, 0]
    r = row[0, 0, 0]
    np.testing.assert_allclose(half[1:4], [(r[2 * i - 1] + 3 * r[2 * i] + 3 * r[2 * i + 1] + r[2 * i + 2]) / 8
                                           for i in range(1, 4)], rtol=1e-12)
    np.testing.assert_allclose(half[0], (3 * r[0] + 3 * r[1] + r[2]) / 7, rtol=1e-12)
    plain = F.interpolate(gt.tensor(row), size=(1, 5), mode="bilinear").numpy()[0, 0, 0]
    np.testing.assert_allclose(plain, (r[0::2] + r[1::2]) / 2, rtol=1e-12)  # (without: 2 taps)
    # The weights of each output sum to 1 (a constant image stays constant), for bicubic too,
    # and the gradient is the resampling matrix's transpose applied to the output's gradient.
    for mode in ("bilinear", "bicubic"):
        ones = F.interpolate(gt.ones(1, 1, 9, 13, dtype=gt.float64), size=(4, 5), mode=mode, antialias=True)
        np.testing.assert_allclose(ones.numpy(), np.ones((1, 1, 4, 5)), rtol=1e-12)
    xt = gt.tensor(x, requires_grad=True)
    y = F.interpolate(xt, scale_factor=0.3, mode="bicubic", antialias=True)
    g = rng.standard_normal(y.shape)
    (y * gt.tensor(g)).sum().backward()
    probe = rng.standard_normal(x.shape)  # <J probe, g> = <probe, J^T g> (the map is linear)
    lhs = (F.interpolate(gt.tensor(probe), scale_factor=0.3, mode="bicubic", antialias=True).numpy() * g).sum()
    np.testing.assert_allclose(lhs, (probe * xt.grad.numpy()).sum(), rtol=1e-10)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(gt.tensor(x), scale_factor=0.5, mode="nearest", antialias=True)


def test_clip_grad_value_orthogonal_and_inference_mode():
    w = gt.tensor(np.ones(4, np.float32), requires_grad=True)
    (w * gt.tensor([-5.0, -0.5, 0.5, 5.0])).sum().backward()
    nn.utils.clip_grad_value_([w], 1.0)
    np.testing.assert_array_equal(w.grad.numpy(), [-1.0, -0.5, 0.5, 1.0])
    q = nn.init.orthogonal_(gt.zeros(6, 3), gain=2.0).numpy()
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(3), atol=1e-5)
    wide = nn.init.orthogonal_(gt.zeros(2, 3, 2)).numpy().reshape(2, 6)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)
    with gt.inference_mode():
        assert not (gt.ones(2, requires_grad=True) * 2).requires_grad
    with gt.inference_mode(False):
        assert (gt.ones(2, requires_grad=True) * 2).requires_grad


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_scales_every_gradient_by_the_total_norm(norm_type, max_norm):
    # Gradients of ranks 0-3 (the 2-norm sums each rank's squares with one call for all of
    # them), one parameter without a gradient, and the parameters as a generator.
    shapes = [(), (5,), (3, 4), (2, 3, 2)]
    grads = [(rng.standard_normal(s) * 3).astype(np.float32) for s in shapes]
    params = [gt.zeros(*s, requires_grad=True) for s in shapes] + [gt.zeros(2, requires_grad=True)]
    for p, g in zip(params, grads):
        p.grad = gt.tensor(g)
    flat = np.concatenate([g.astype(np.float64).reshape(-1) for g in grads])
    want = np.abs(flat).max() if norm_type == float("inf") else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = nn.utils.clip_grad_norm_((p for p in params), max_norm, norm_type=norm_type)
    np.testing.assert_allclose(total.item(), want, rtol=1e-5)
    coef = min(1.0, max_norm / (want + 1e-6))
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5, atol=1e-7)
    assert params[-1].grad is None
    # float64 gradients: the norm and the scaling in float64 (they were computed in float32)
    g64 = rng.standard_normal(7) * 3
    p = gt.zeros(7, dtype=gt.float64, requires_grad=True)
    p.grad = gt.tensor(g64)
    total = nn.utils.clip_grad_norm_([p], 0.5, norm_type=norm_type)
    want = np.abs(g64).max() if norm_type == float("inf") else (np.abs(g64) ** norm_type).sum() ** (1 / norm_type)
    assert total.dtype == gt.float64 and total.item() == pytest.approx(want, rel=1e-13)
    np.testing.assert_allclose(p.grad.numpy(), g64 * min(1.0, 0.5 / (want + 1e-6)), rtol=1e-13)


def test_gradients_at_kinks_and_zero_are_pytorchs():
    # PyTorch 2.15's gradients at the points where these are not differentiable (or where GT's
    # composite form was not: softplus was 0 at 0 through its abs and relu, elu 0.5 through a
    # tied minimum). Values printed by PyTorch 2.15 (float64) for x in pts.
    F = gt.nn.functional
    pts = [-6.0, -3.0, -1.0, 0.0, 1.0, 3.0, 6.0]
    s = 1.0 / 6
    expected = {
        "relu6": (F.relu6, [0, 0, 0, 0, 1, 1, 0]),
        "hardtanh": (F.hardtanh, [0, 0, 0, 1, 0, 0, 0]),
        "clamp(-1, 1)": (lambda x: gt.clamp(x, -1.0, 1.0), [0, 0, 0, 1, 0, 0, 0]),
        "clamp(min=0)": (lambda x: x.clamp(min=0.0), [0, 0, 0, 0, 1, 1, 1]),
        "clamp(max=0)": (lambda x: x.clamp(max=0.0), [1, 1, 1, 0, 0, 0, 0]),
        "hardswish": (F.hardswish, [0, 0, 1 / 6, 0.5, 5 / 6, 1, 1]),
        "hardsigmoid": (F.hardsigmoid, [0, 0, s, s, s, 0, 0]),
        "rrelu(training=False)": (lambda x: F.rrelu(x, training=False), [11 / 48] * 4 + [1, 1, 1]),
        "elu": (F.elu, [np.exp(-6), np.exp(-3), np.exp(-1), 1, 1, 1, 1]),
        "celu": (F.celu, [np.exp(-6), np.exp(-3), np.exp(-1), 1, 1, 1, 1]),
        "softplus": (F.softplus, 1 / (1 + np.exp(-np.array(pts)))),
        "logsigmoid": (F.logsigmoid, 1 / (1 + np.exp(np.array(pts)))),
        "sign": (gt.sign, [0] * 7),
    }
    scale, alpha = 1.0507009873554805, 1.6732632423543772
    expected["selu"] = (F.selu, [scale * alpha * np.exp(v) if v <= 0 else scale for v in pts])
    for name, (f, want) in expected.items():
        x = gt.tensor(pts, dtype=gt.float64, requires_grad=True)
        f(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=name)
    # a tensor bound equal to x splits the gradient with it, as maximum/minimum do
    x, lo = gt.tensor([-1.0, 0.0, 1.0], requires_grad=True), gt.tensor(-1.0, requires_grad=True)
    gt.clamp(x, lo, gt.tensor(1.0)).sum().backward()
    assert x.grad.tolist() == [0.5, 1.0, 0.5] and lo.grad.item() == 0.5
    # softplus above its threshold is x itself (gradient 1), as nn.Softplus(threshold=5)
    x = gt.tensor([4.0, 6.0], dtype=gt.float64, requires_grad=True)
    y = nn.Softplus(threshold=5)(x)
    y.sum().backward()
    assert y.tolist()[1] == 6.0 and x.grad.tolist() == [1 / (1 + np.exp(-4.0)), 1.0]
    assert F.softplus(x, beta=2, threshold=1).tolist()[1] == 6.0
    x = gt.tensor([0.5, -1.0, 0.0], dtype=gt.float64, requires_grad=True)  # twice: sigmoid'
    (g,) = gt.autograd.grad(F.softplus(x).sum(), x, create_graph=True)
    (h,) = gt.autograd.grad(g.sum(), x)
    s = 1 / (1 + np.exp(-np.array([0.5, -1.0, 0.0])))
    np.testing.assert_allclose(h.numpy(), s * (1 - s), rtol=1e-12)


def test_adaptive_max_pool_gives_a_tied_windows_gradient_to_its_first_maximum():
    # as PyTorch's (and GT's max_pool): the first maximum in row-major order, not shared
    F = gt.nn.functional
    x = gt.tensor([[[1.0, 3.0, 3.0, 0.0]]], requires_grad=True)
    F.adaptive_max_pool1d(x, 1).sum().backward()
    assert x.grad.tolist() == [[[0.0, 1.0, 0.0, 0.0]]]
    x = gt.tensor([[[[0.0, 5.0], [5.0, 1.0]]]], requires_grad=True)
    F.adaptive_max_pool2d(x, 1).sum().backward()
    assert x.grad.flatten().tolist() == [0.0, 1.0, 0.0, 0.0]
    x = gt.tensor([[[[0.0, 5.0, 5.0], [5.0, 1.0, 5.0], [2.0, 5.0, 0.0]]]], requires_grad=True)
    y = F.adaptive_max_pool2d(x, (2, 2))
    y.sum().backward()
    assert y.flatten().tolist() == [5.0] * 4 and x.grad.flatten().tolist() == [0, 2, 0, 1, 0, 1, 0, 0, 0]


@pytest.mark.parametrize("size", [(3, 4), (2, 3), (5, 2), (7, 9), (1, 1)])
def test_adaptive_max_pool_return_indices(size):
    # Each window's first maximum in row-major order, as a position h * W + w in its plane
    # (ties are many: values 0..3), found here window by window.
    x = rng.integers(0, 4, (2, 3, 7, 9)).astype(np.float32)
    values, indices = F.adaptive_max_pool2d(gt.tensor(x), size, return_indices=True)
    assert indices.dtype == gt.int64 and indices.shape == (2, 3) + size
    bounds = lambda n, o: [((i * n) // o, -(-((i + 1) * n) // o)) for i in range(o)]
    for i, (h0, h1) in enumerate(bounds(7, size[0])):
        for j, (w0, w1) in enumerate(bounds(9, size[1])):
            window = x[:, :, h0:h1, w0:w1].reshape(2, 3, -1)
            first = window.argmax(-1)
            want = (h0 + first // (w1 - w0)) * 9 + w0 + first % (w1 - w0)
            np.testing.assert_array_equal(indices.numpy()[:, :, i, j], want)
            np.testing.assert_array_equal(values.numpy()[:, :, i, j], window.max(-1))
    _, row_indices = nn.AdaptiveMaxPool1d(size[1], return_indices=True)(gt.tensor(x[0]))  # (3, 7, 9): rows
    want = [[[w0 + x[0, c, r, w0:w1].argmax() for w0, w1 in bounds(9, size[1])] for r in range(7)] for c in range(3)]
    np.testing.assert_array_equal(row_indices.numpy(), want)
