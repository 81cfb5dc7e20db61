"""Convolution, pooling, padding and channel normalization (issue 24): values and gradients
against NumPy float64 references written another way (a sum over kernel taps with einsum,
np.pad, sliding windows), the layers' parameters and buffers, and the errors raised."""
import itertools
import math

import numpy as np
import pytest

import gt

nn, F = gt.nn, gt.nn.functional
rng = np.random.default_rng(0)


def t(a, grad=False):
    return gt.tensor(np.asarray(a, dtype=np.float32), requires_grad=grad)


def conv_ref(x, w, b, stride, padding, dilation, groups):
    """N-d cross-correlation in float64: out = sum over kernel taps of einsum(window, w[..., tap])."""
    n = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in padding])
    O, Cg = w.shape[:2]
    out_sz = [(xp.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    out = np.zeros((x.shape[0], O, *out_sz))
    Og = O // groups
    for tap in itertools.product(*[range(k) for k in w.shape[2:]]):
        window = (slice(None), slice(None)) + tuple(
            slice(tap[i] * dilation[i], tap[i] * dilation[i] + stride[i] * (out_sz[i] - 1) + 1, stride[i]) for i in range(n))
        patch = xp[window]
        for g in range(groups):
            out[:, g * Og:(g + 1) * Og] += np.einsum("nc...,oc->no...", patch[:, g * Cg:(g + 1) * Cg],
                                                     w[(slice(g * Og, (g + 1) * Og), slice(None)) + tap])
    if b is not None:
        out += b.reshape((1, O) + (1,) * n)
    return out


def conv_grads_ref(x, w, r, stride, padding, dilation, groups):
    """d sum(conv(x, w) * r) / dx and / dw: the adjoint of each tap's einsum."""
    n = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in padding])
    gxp, gw = np.zeros_like(xp), np.zeros(w.shape)
    O, Cg = w.shape[:2]
    Og, out_sz = O // groups, r.shape[2:]
    for tap in itertools.product(*[range(k) for k in w.shape[2:]]):
        window = (slice(None), slice(None)) + tuple(
            slice(tap[i] * dilation[i], tap[i] * dilation[i] + stride[i] * (out_sz[i] - 1) + 1, stride[i]) for i in range(n))
        for g in range(groups):
            og, cg = slice(g * Og, (g + 1) * Og), slice(g * Cg, (g + 1) * Cg)
            sp = "hwd"[:n]  # the spatial axes, summed
            gw[(og, slice(None)) + tap] += np.einsum(f"no{sp},nc{sp}->oc", r[:, og], xp[window][:, cg])
            sub = gxp[window]
            sub[:, cg] += np.einsum("no...,oc->nc...", r[:, og], w[(og, slice(None)) + tap])
    crop = (slice(None), slice(None)) + tuple(slice(p, p + x.shape[2 + i]) for i, p in enumerate(padding))
    return gxp[crop], gw


@pytest.mark.parametrize("kw", [
    dict(), dict(stride=2), dict(padding=1), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
    dict(groups=2), dict(groups=4, padding=1),
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "plain")
def test_conv2d_values_and_gradients(kw):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 9, 8)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    stride = F._ntuple(kw.get("stride", 1), 2, "stride")
    padding = F._ntuple(kw.get("padding", 0), 2, "padding")
    dilation = F._ntuple(kw.get("dilation", 1), 2, "dilation")
    want = conv_ref(x, w, b, stride, padding, dilation, groups)
    gx, gw, gb = t(x, True), t(w, True), t(b, True)
    y = F.conv2d(gx, gw, gb, **kw)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
    r = rng.standard_normal(want.shape)
    (y * t(r)).sum().backward()
    want_gx, want_gw = conv_grads_ref(x, w, r, stride, padding, dilation, groups)
    np.testing.assert_allclose(gx.grad.numpy(), want_gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw.grad.numpy(), want_gw, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb.grad.numpy(), r.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)


def test_conv1d_conv3d_same_padding_and_unbatched_input():
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    w = rng.standard_normal((5, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(F.conv1d(t(x), t(w), stride=2, padding=2).numpy(),
                               conv_ref(x, w, None, (2,), (2,), (1,), 1), rtol=1e-4, atol=1e-4)
    # 'same' with an even kernel pads one more on the right (as PyTorch)
    same = F.conv1d(t(x), t(w), padding="same").numpy()
    want = conv_ref(np.pad(x, [(0, 0), (0, 0), (0, 1)]), w, None, (1,), (1,), (1,), 1)
    assert same.shape == (2, 5, 11)
    np.testing.assert_allclose(same, want, rtol=1e-4, atol=1e-4)
    x3 = rng.standard_normal((1, 2, 4, 5, 6)).astype(np.float32)
    w3 = rng.standard_normal((3, 2, 2, 3, 2)).astype(np.float32)
    np.testing.assert_allclose(F.conv3d(t(x3), t(w3), padding=1).numpy(),
                               conv_ref(x3, w3, None, (1, 1, 1), (1, 1, 1), (1, 1, 1), 1), rtol=1e-4, atol=1e-4)
    x2 = rng.standard_normal((3, 6, 6)).astype(np.float32)  # (C, H, W)
    w2 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = F.conv2d(t(x2), t(w2))
    assert y.shape == (4, 4, 4)
    np.testing.assert_allclose(y.numpy(), conv_ref(x2[None], w2, None, (1, 1), (0, 0), (1, 1), 1)[0], rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes_match_numpy_pad(mode, np_mode):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    got = F.pad(t(x), (1, 2, 3, 0), mode=mode).numpy()
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (0, 0), (3, 0), (1, 2)], mode=np_mode))


def test_pad_value_cropping_and_gradient():
    x = rng.standard_normal((2, 5, 6)).astype(np.float32)
    got = F.pad(t(x), (-1, 2, 1, -2), value=7.0).numpy()
    want = np.pad(x[:, :3, 1:], [(0, 0), (1, 0), (0, 2)], constant_values=7.0)
    np.testing.assert_array_equal(got, want)
    gx = t(x, True)
    F.pad(gx, (2, 2), mode="reflect").sum().backward()
    # each element's gradient counts how often reflection copies it
    counts = np.ones(6)
    counts[[1, 2, 4, 3]] += 1
    np.testing.assert_array_equal(gx.grad.numpy(), np.broadcast_to(counts, x.shape))


def windows_ref(x, k, s, p, fill, ceil_mode=False):
    """(N, C, OH, OW, kH*kW) windows of x padded with `fill` (PyTorch's output size rule)."""
    H, W = x.shape[2:]
    out = []
    for size, ki, si, pi in ((H, k[0], s[0], p[0]), (W, k[1], s[1], p[1])):
        span = size + 2 * pi - ki
        o = (-(-span // si) if ceil_mode else span // si) + 1
        if ceil_mode and (o - 1) * si >= size + pi:
            o -= 1
        out.append(o)
    need = [max(0, (out[i] - 1) * s[i] + k[i] - x.shape[2 + i] - p[i]) for i in range(2)]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (p[0], max(p[0], need[0])), (p[1], max(p[1], need[1]))],
                constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(2, 3))[:, :, ::s[0], ::s[1]][:, :, :out[0], :out[1]]
    return win.reshape(*win.shape[:4], -1), out


@pytest.mark.parametrize("k,s,p,ceil", [((2, 2), (2, 2), (0, 0), False), ((3, 3), (2, 2), (1, 1), False),
                                        ((3, 3), (2, 2), (0, 0), True), ((2, 3), (1, 2), (1, 1), False)])
def test_max_pool2d_values_indices_and_gradient(k, s, p, ceil):
    x = rng.standard_normal((2, 3, 11, 10)).astype(np.float32)
    win, out = windows_ref(x, k, s, p, -np.inf, ceil)
    gx = t(x, True)
    y, idx = F.max_pool2d(gx, k, s, p, ceil_mode=ceil, return_indices=True)
    np.testing.assert_array_equal(y.numpy(), win.max(-1))
    tap = win.argmax(-1)  # the index into H * W of each window's maximum
    oh = np.arange(out[0])[:, None] * s[0] - p[0] + tap // k[1]
    ow = np.arange(out[1])[None, :] * s[1] - p[1] + tap % k[1]
    np.testing.assert_array_equal(idx.numpy(), oh * x.shape[3] + ow)
    assert idx.dtype == gt.int64
    r = rng.standard_normal(y.shape)
    (y * t(r)).sum().backward()
    want = np.zeros(x.shape).reshape(2, 3, -1)
    for n, c in itertools.product(range(2), range(3)):
        np.add.at(want[n, c], (oh * x.shape[3] + ow)[n, c].ravel(), r[n, c].ravel())
    np.testing.assert_allclose(gx.grad.numpy(), want.reshape(x.shape), rtol=1e-5, atol=1e-6)
    assert F.max_pool2d(t(x), k, s, p, ceil_mode=ceil).shape == y.shape  # without indices too


@pytest.mark.parametrize("k,s,p,ceil,include", [((2, 2), (2, 2), (0, 0), False, True),
                                                ((3, 3), (2, 2), (1, 1), False, True),
                                                ((3, 3), (2, 2), (1, 1), False, False),
                                                ((3, 3), (2, 2), (1, 1), True, False),
                                                ((3, 2), (2, 2), (0, 0), True, True)])
def test_avg_pool2d_divisors(k, s, p, ceil, include):
    x = rng.standard_normal((2, 3, 11, 10)).astype(np.float32)
    win, out = windows_ref(x, k, s, p, 0.0, ceil)
    # PyTorch's divisor: the window clipped to the padded input, or to the input itself
    div = np.ones(out)
    for axis, size in ((0, 11), (1, 10)):
        start = np.arange(out[axis]) * s[axis] - p[axis]
        end = np.minimum(start + k[axis], size + p[axis])
        if not include:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        div = div * ((end - start)[:, None] if axis == 0 else (end - start)[None, :])
    got = F.avg_pool2d(t(x), k, s, p, ceil_mode=ceil, count_include_pad=include).numpy()
    np.testing.assert_allclose(got, win.sum(-1) / div, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [1, (2, 3), (4, 5), (3, None), 7])
def test_adaptive_pools(size):
    x = rng.standard_normal((2, 3, 11, 10)).astype(np.float64)
    oh, ow = (size, size) if isinstance(size, int) else (size[0], size[1] or 10)
    want_avg, want_max = np.zeros((2, 3, oh, ow)), np.zeros((2, 3, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        rows = slice(i * 11 // oh, -(-(i + 1) * 11 // oh))
        cols = slice(j * 10 // ow, -(-(j + 1) * 10 // ow))
        want_avg[:, :, i, j] = x[:, :, rows, cols].mean((2, 3))
        want_max[:, :, i, j] = x[:, :, rows, cols].max((2, 3))
    np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x), size).numpy(), want_avg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.adaptive_max_pool2d(t(x), size).numpy(), want_max, rtol=1e-6, atol=1e-6)
    assert nn.AdaptiveAvgPool2d(size)(t(x)).shape == (2, 3, oh, ow)


def test_batch_norm_training_updates_running_stats_and_eval_uses_them():
    x = (rng.standard_normal((8, 3, 4, 5)) * 2 + 1).astype(np.float32)
    bn = nn.BatchNorm2d(3)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert sorted(bn.state_dict()) == ["bias", "num_batches_tracked", "running_mean", "running_var", "weight"]
    gx = t(x, True)
    y = bn(gx)
    x64 = x.astype(np.float64)
    mean, var = x64.mean((0, 2, 3)), x64.var((0, 2, 3))
    want = (x64 - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
    n = x.size // 3
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    # the gradient of sum(y * r) through the batch statistics (Ioffe & Szegedy 2015, section 3)
    r = rng.standard_normal(x.shape)
    (y * t(r)).sum().backward()
    xhat = want
    rm = r.mean((0, 2, 3), keepdims=True)
    rxm = (r * xhat).mean((0, 2, 3), keepdims=True)
    want_gx = (r - rm - xhat * rxm) / np.sqrt(var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(gx.grad.numpy(), want_gx, rtol=1e-3, atol=1e-4)
    bn.eval()
    z = bn(t(x)).numpy()
    rmean, rvar = bn.running_mean.numpy(), bn.running_var.numpy()
    np.testing.assert_allclose(z, (x64 - rmean[None, :, None, None]) / np.sqrt(rvar[None, :, None, None] + 1e-5),
                               rtol=1e-4, atol=1e-4)
    assert bn.num_batches_tracked.item() == 1  # eval leaves the statistics alone


def test_batch_norm_statistics_are_accurate_in_float32():
    # A channel of one value normalizes to exact zeros (its float32 mean came out 6 ulp off
    # before the corrected two-pass mean), and an offset channel's output is within a few
    # float32 ulps of the float64 computation (PyTorch's own error here: 7.4e-6).
    x = np.full((4, 3, 4, 4), 123.456, np.float32)
    assert not nn.BatchNorm2d(3)(gt.tensor(x)).numpy().any()
    x64 = np.random.default_rng(0).standard_normal((4, 8, 4, 4)) * 0.5 + 100.0
    y32 = nn.BatchNorm2d(8)(gt.tensor(x64.astype(np.float32))).numpy()
    y64 = (x64 - x64.mean((0, 2, 3), keepdims=True)) / np.sqrt(x64.var((0, 2, 3), keepdims=True) + 1e-5)
    assert np.abs(y32 - y64).max() / np.abs(y64).max() < 5e-6


def test_batch_norm_cumulative_average_and_without_running_stats():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [rng.standard_normal((6, 2)).astype(np.float32) for _ in range(3)]
    for x in xs:
        bn(t(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0), rtol=1e-5, atol=1e-6)
    free = nn.BatchNorm1d(2, affine=False, track_running_stats=False).eval()
    assert free.state_dict() == {} and free.running_mean is None
    x = xs[0].astype(np.float64)
    np.testing.assert_allclose(free(t(xs[0])).numpy(), (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5), rtol=1e-4,
                               atol=1e-4)


def test_group_norm_and_instance_norm():
    x = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)
    w, b = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    g = x.astype(np.float64).reshape(2, 3, -1)
    want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    gn = nn.GroupNorm(3, 6)
    gn.load_state_dict({"weight": w, "bias": b})
    np.testing.assert_allclose(gn(t(x)).numpy(), want * w[:, None, None] + b[:, None, None], rtol=1e-4, atol=1e-4)
    p = x.astype(np.float64)
    inst = (p - p.mean((2, 3), keepdims=True)) / np.sqrt(p.var((2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(F.instance_norm(t(x)).numpy(), inst, rtol=1e-4, atol=1e-4)


def test_conv_modules_parameters_init_and_padding_modes():
    conv = nn.Conv2d(4, 6, (3, 5), stride=2, padding=1, groups=2)
    assert conv.weight.shape == (6, 2, 3, 5) and conv.bias.shape == (6,)
    bound = 1 / np.sqrt(2 * 3 * 5)
    assert np.abs(conv.weight.numpy()).max() <= bound and np.abs(conv.bias.numpy()).max() <= bound
    assert nn.Conv1d(3, 4, 2, bias=False).bias is None
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    circ = nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular")
    want = conv_ref(np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="wrap"), circ.weight.numpy(), circ.bias.numpy(),
                    (1, 1), (0, 0), (1, 1), 1)
    np.testing.assert_allclose(circ(t(x)).numpy(), want, rtol=1e-4, atol=1e-4)
    net = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.AvgPool2d(2, ceil_mode=True), nn.Dropout2d(0.5), nn.Flatten(), nn.Linear(4, 3))
    assert net(t(x)).shape == (1, 3)
    assert "Conv2d(2, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))" in repr(net)


def test_dropout2d_zeroes_whole_channels():
    gt.manual_seed(3)
    y = F.dropout2d(gt.ones(4, 16, 3, 3), 0.5).numpy()
    per_channel = y.reshape(4, 16, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0 < (per_channel == 0).all(-1).sum() < 64
    assert F.dropout2d(gt.ones(2, 3, 2, 2), 0.5, training=False).numpy().min() == 1


def test_dropout2d_of_other_ranks_draws_per_batch_and_channel_as_pytorch():
    # (N, C) input (a recipe puts Dropout2d after a Linear): element by element, with PyTorch's
    # warning, never the whole batch at once; (N, C, L): whole rows.
    gt.manual_seed(0)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = gt.nn.Dropout2d(0.5)(gt.ones(64, 128)).numpy()
    assert 0.4 < (y == 0).mean() < 0.6 and set(np.unique(y)) == {0.0, 2.0}
    with pytest.warns(UserWarning, match="interpreted as shape \\(N, C, L\\)"):
        rows = F.dropout2d(gt.ones(8, 16, 5), 0.5).numpy()
    assert np.all((rows == 0).all(-1) | (rows == 2).all(-1)) and 0 < (rows == 0).all(-1).sum() < 128
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        F.dropout1d(gt.ones(2, 3, 4, 5))


def test_errors_name_the_problem():
    x = t(rng.standard_normal((1, 3, 5, 5)))
    with pytest.raises(gt.ShapeError, match="expected input .* to have 4 channels, but got 3"):
        F.conv2d(x, t(np.ones((2, 4, 3, 3))))
    with pytest.raises(gt.ShapeError, match="larger than the padded input"):
        F.conv2d(x, t(np.ones((2, 3, 7, 7))))
    with pytest.raises(gt.ShapeError, match="expected 3-D \\(unbatched\\) or 4-D"):
        F.conv2d(t(np.ones((5, 5))), t(np.ones((2, 3, 3, 3))))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        F.conv2d(x, t(np.ones((2, 3, 3, 3))), stride=2, padding="same")
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="pad should be at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="even"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="must be smaller"):
        F.pad(x, (5, 0), mode="reflect")
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(3)(t(np.ones((2, 3, 4))))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(t(np.ones((1, 3))))
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(4, 6)


def conv_transpose_ref(x, w, b, stride, padding, output_padding, dilation, groups):
    """Transposed convolution by its definition, in float64: every input element scatters
    x[n, c, i] * w[c, o, k] to output position i s + k d - p."""
    n = x.ndim - 2
    C, Og = w.shape[:2]
    kernel = w.shape[2:]
    out_sz = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + output_padding[i] + 1
              for i in range(n)]
    full = [s + 2 * p for s, p in zip(out_sz, padding)]
    out = np.zeros((x.shape[0], Og * groups, *full))
    Cg = C // groups
    for g in range(groups):
        xs = x[:, g * Cg:(g + 1) * Cg].astype(np.float64)
        for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
            for tap in itertools.product(*[range(k) for k in kernel]):
                at = tuple(pos[i] * stride[i] + tap[i] * dilation[i] for i in range(n))
                contrib = np.einsum("nc,co->no", xs[(slice(None), slice(None)) + pos],
                                    w[g * Cg:(g + 1) * Cg][(slice(None), slice(None)) + tap])
                out[(slice(None), slice(g * Og, (g + 1) * Og)) + at] += contrib
    out = out[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, out_sz))]
    return out + (b.reshape((1, -1) + (1,) * n) if b is not None else 0)


@pytest.mark.parametrize("n, stride, padding, output_padding, dilation, groups", [
    (1, 2, 1, 1, 1, 1), (2, 2, 1, 1, 1, 1), (2, 1, 0, 0, 2, 2), (2, (2, 3), (0, 2), (1, 0), 1, 1), (3, 2, 1, 0, 1, 1),
    (2, 3, 4, 2, 1, 1),  # padding larger than d (k - 1): the spread input is cropped
])
def test_conv_transpose_matches_its_definition_and_its_gradient(n, stride, padding, output_padding, dilation, groups):
    C, O, k = 4, 6, 3
    x = rng.standard_normal((2, C) + (5,) * n).astype(np.float32)
    w = rng.standard_normal((C, O // groups) + (k,) * n).astype(np.float32)
    b = rng.standard_normal(O).astype(np.float32)
    tup = lambda v: (v,) * n if isinstance(v, int) else v  # noqa: E731
    want = conv_transpose_ref(x, w, b, tup(stride), tup(padding), tup(output_padding), tup(dilation), groups)
    fn = getattr(F, f"conv_transpose{n}d")
    xt, wt = t(x, True), t(w, True)
    y = fn(xt, wt, t(b), stride, padding, output_padding, groups, dilation)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
    # its gradient with respect to the input is a convolution with the same weight
    g = rng.standard_normal(want.shape).astype(np.float32)
    (y * t(g)).sum().backward()
    conv = getattr(F, f"conv{n}d")
    gx = conv(t(g), t(w), None, stride, padding, dilation, groups)  # weight (C, O / groups, *k) as (out, in)
    np.testing.assert_allclose(xt.grad.numpy(), gx.numpy(), rtol=1e-4, atol=1e-4)
    assert wt.grad.shape == w.shape


def test_conv_transpose_modules():
    m = nn.ConvTranspose2d(3, 8, 4, stride=2, padding=1)
    assert m.weight.shape == (3, 8, 4, 4) and m.bias.shape == (8,)
    x = t(rng.standard_normal((2, 3, 7, 7)))
    assert m(x).shape == (2, 8, 14, 14)  # DCGAN's doubling layer
    assert m(x, output_size=(15, 15)).shape == (2, 8, 15, 15)
    with pytest.raises(ValueError, match="output size"):
        m(x, output_size=(20, 20))
    assert nn.ConvTranspose1d(2, 4, 3)(t(rng.standard_normal((1, 2, 5)))).shape == (1, 4, 7)
    assert nn.ConvTranspose3d(2, 2, 2, stride=2)(t(rng.standard_normal((2, 2, 2, 2)))).shape == (2, 4, 4, 4)
    with pytest.raises(ValueError, match="output padding must be smaller"):
        F.conv_transpose2d(x, m.weight, stride=1, output_padding=1)


def test_instance_norm_tracks_running_statistics():
    # PyTorch's rule: the batch mean of the planes' means and unbiased variances, with momentum;
    # eval mode normalizes by them; num_batches_tracked stays 0; not a _BatchNorm (SWA's
    # update_bn and SyncBatchNorm conversion leave it alone).
    m = nn.InstanceNorm2d(3, momentum=0.25, track_running_stats=True).double()
    assert sorted(m.state_dict()) == ["num_batches_tracked", "running_mean", "running_var"]
    mean, var = np.zeros(3), np.ones(3)
    for _ in range(2):
        x = rng.standard_normal((4, 3, 5, 6)) * 3 + 2
        y = m(gt.tensor(x)).numpy()
        np.testing.assert_allclose(y, (x - x.mean((2, 3), keepdims=True)) /
                                   np.sqrt(x.var((2, 3), keepdims=True) + 1e-5), rtol=1e-10, atol=1e-10)
        mean = 0.75 * mean + 0.25 * x.mean((2, 3)).mean(0)
        var = 0.75 * var + 0.25 * x.var((2, 3), ddof=1).mean(0)
    np.testing.assert_allclose(m.running_mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(), var, rtol=1e-12)
    assert m.num_batches_tracked.item() == 0
    x = rng.standard_normal((2, 3, 5, 6))
    want = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    np.testing.assert_allclose(m.eval()(gt.tensor(x)).numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m(gt.tensor(x[0])).numpy(), want[0], rtol=1e-10, atol=1e-12)  # unbatched
    assert not isinstance(m, nn.modules._BatchNorm) and nn.SyncBatchNorm.convert_sync_batchnorm(m) is m
    with pytest.raises(ValueError, match="running_mean and running_var"):
        F.instance_norm(gt.tensor(x), use_input_stats=False)
    lazy = nn.LazyInstanceNorm2d()  # (affine and tracking by default, as PyTorch's lazy ones)
    lazy(gt.tensor(x))
    assert lazy.num_features == 3 and lazy.weight.shape == (3,) and lazy.running_mean.shape == (3,)


def test_pixel_shuffle_instance_norm_and_3d_pooling():
    x = rng.standard_normal((2, 8, 3, 5)).astype(np.float32)
    y = F.pixel_shuffle(t(x), 2)
    want = x.reshape(2, 2, 2, 2, 3, 5).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 6, 10)
    np.testing.assert_array_equal(y.numpy(), want)
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(y).numpy(), x)
    m = nn.InstanceNorm2d(8, affine=True)
    z = m(t(x)).numpy()
    np.testing.assert_allclose(z, (x - x.mean((2, 3), keepdims=True)) / np.sqrt(x.var((2, 3), keepdims=True) + 1e-5),
                               rtol=1e-4, atol=1e-4)
    assert [p.shape for p in m.parameters()] == [(8,), (8,)]
    v = rng.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(nn.MaxPool3d(2)(t(v)).numpy(), v.reshape(1, 2, 2, 2, 2, 2, 2, 2).max((3, 5, 7)))
    np.testing.assert_allclose(nn.AvgPool3d(2)(t(v)).numpy(), v.reshape(1, 2, 2, 2, 2, 2, 2, 2).mean((3, 5, 7)),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.AdaptiveAvgPool3d(1)(t(v)).numpy(), v.mean((2, 3, 4), keepdims=True), rtol=1e-5)
    assert nn.ZeroPad3d(1)(t(v)).shape == (1, 2, 6, 6, 6) and nn.CircularPad1d((1, 2))(t(x[0])).shape == (8, 3, 8)


def test_small_layers_and_losses_against_their_formulas():
    x = rng.standard_normal((4, 6))
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    check = lambda got, want: np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)  # noqa: E731
    check(nn.Softmin(1)(t(x)), np.exp(-x) / np.exp(-x).sum(1, keepdims=True))
    check(nn.Threshold(0.1, 20.0)(t(x)), np.where(x > 0.1, x, 20.0))
    check(nn.GLU()(t(x)), x[:, :3] / (1 + np.exp(-x[:, 3:])))
    check(nn.Hardshrink()(t(x)), np.where(np.abs(x) > 0.5, x, 0))
    check(nn.Softshrink(0.3)(t(x)), np.sign(x) * np.maximum(np.abs(x) - 0.3, 0))
    check(nn.Tanhshrink()(t(x)), x - np.tanh(x))
    check(nn.PairwiseDistance()(t(a), t(b)), np.linalg.norm(a - b + 1e-6, axis=-1))
    check(nn.CosineSimilarity()(t(a), t(b)), (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))
    s1, s2 = rng.standard_normal(4), rng.standard_normal(4)
    check(nn.MarginRankingLoss(0.2)(t(s1), t(s2), t(y)), np.maximum(0, -y * (s1 - s2) + 0.2).mean())
    check(nn.HingeEmbeddingLoss()(t(s1), t(y)), np.where(y == 1, s1, np.maximum(0, 1 - s1)).mean())
    check(nn.SoftMarginLoss()(t(s1), t(y)), np.log1p(np.exp(-y * s1)).mean())
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    check(nn.CosineEmbeddingLoss(0.1)(t(a), t(b), t(y)), np.where(y == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean())
    lab = (rng.random((4, 6)) > 0.5).astype(np.float64)
    sig = 1 / (1 + np.exp(-x))
    check(nn.MultiLabelSoftMarginLoss()(t(x), t(lab)), (-(lab * np.log(sig) + (1 - lab) * np.log(1 - sig))).mean())
    c = rng.standard_normal((4, 6))
    d_ap, d_an = np.linalg.norm(a - b + 1e-6, axis=1), np.linalg.norm(a - c + 1e-6, axis=1)
    check(nn.TripletMarginLoss()(t(a), t(b), t(c)), np.maximum(d_ap - d_an + 1, 0).mean())
    counts = rng.poisson(2.0, (4, 6)).astype(np.float64)
    check(nn.PoissonNLLLoss()(t(x), t(counts)), (np.exp(x) - counts * x).mean())
    var = np.abs(b) + 0.1
    check(nn.GaussianNLLLoss()(t(x), t(a), t(var)), (0.5 * (np.log(var) + (x - a) ** 2 / var)).mean())
    assert nn.Dropout1d(0.5).eval()(t(x)).shape == (4, 6)


def test_unfold_and_fold_are_im2col_and_its_adjoint():
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    cols = F.unfold(t(x), (2, 3), dilation=1, padding=1, stride=(2, 1))
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    oh, ow = (8 - 2) // 2 + 1, (9 - 3) // 1 + 1
    want = np.stack([xp[:, :, i * 2:i * 2 + 2, j:j + 3].reshape(2, -1) for i in range(oh) for j in range(ow)], -1)
    np.testing.assert_allclose(cols.numpy(), want, rtol=1e-6)
    assert nn.Unfold(2)(t(x)).shape == (2, 12, 30)
    # fold is unfold's adjoint: <unfold(x), c> == <x, fold(c)>
    c = rng.standard_normal(cols.shape).astype(np.float32)
    back = F.fold(t(c), (6, 7), (2, 3), padding=1, stride=(2, 1))
    np.testing.assert_allclose((cols.numpy() * c).sum(), (x * back.numpy()).sum(), rtol=1e-4)
    assert nn.Fold((6, 7), (2, 3), padding=1, stride=(2, 1))(t(c)).shape == (2, 3, 6, 7)


def test_affine_grid_and_grid_sample():
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    identity = np.tile(np.array([[1.0, 0, 0], [0, 1.0, 0]], dtype=np.float32), (2, 1, 1))
    for align in (False, True):
        grid = F.affine_grid(t(identity), (2, 3, 5, 4), align_corners=align)
        assert grid.shape == (2, 5, 4, 2)
        for mode in ("bilinear", "nearest"):
            np.testing.assert_allclose(F.grid_sample(t(x), grid, mode=mode, align_corners=align).numpy(), x, atol=1e-5)
    # a shift by half a pixel to the right (align_corners=True: pixel i at -1 + 2 i / (W - 1))
    shift = identity.copy()
    shift[:, 0, 2] = 1.0 / 3  # half of 2 / (W - 1)
    g = F.affine_grid(t(shift), (2, 3, 5, 4), align_corners=True)
    xt = t(x, True)
    y = F.grid_sample(xt, g, align_corners=True)
    right = np.concatenate([x[..., 1:], np.zeros_like(x[..., :1])], -1)
    np.testing.assert_allclose(y.numpy(), 0.5 * (x + right), atol=1e-5)  # zeros padding past the edge
    y.sum().backward()
    assert xt.grad.shape == x.shape
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(t(x), g, padding_mode="mirror")


def grid_sample_ref(x, grid, mode, padding_mode, align_corners):
    """PyTorch's 2-D grid sampler (GridSampler.h, grid_sampler_2d_cpu) pixel by pixel."""
    N, C, H, W = x.shape

    def reflect(c, twice_low, twice_high):
        if twice_low == twice_high:
            return 0.0
        low, span = twice_low / 2, (twice_high - twice_low) / 2
        c = abs(c - low)
        extra, flips = math.fmod(c, span), math.floor(c / span)
        return extra + low if flips % 2 == 0 else span - extra + low

    def coordinate(c, n):
        if padding_mode == "border":
            c = min(max(c, 0), n - 1)
        elif padding_mode == "reflection":
            c = reflect(c, 0, 2 * (n - 1)) if align_corners else reflect(c, -1, 2 * n - 1)
            c = min(max(c, 0), n - 1)
        return c

    def value(b, yy, xx):
        return x[b, :, yy, xx] if 0 <= yy < H and 0 <= xx < W else np.zeros(C)

    def cubic(t, A=-0.75):
        near = lambda d: ((A + 2) * d - (A + 3)) * d * d + 1
        far = lambda d: ((A * d - 5 * A) * d + 8 * A) * d - 4 * A
        return [far(t + 1), near(t), near(1 - t), far(2 - t)]
    out = np.zeros((N, C) + grid.shape[1:3])
    for b in range(N):
        for i in range(grid.shape[1]):
            for j in range(grid.shape[2]):
                gx, gy = grid[b, i, j]
                ux = (gx + 1) / 2 * (W - 1) if align_corners else ((gx + 1) * W - 1) / 2
                uy = (gy + 1) / 2 * (H - 1) if align_corners else ((gy + 1) * H - 1) / 2
                if mode == "bicubic":
                    fx, fy = math.floor(ux), math.floor(uy)
                    wx, wy = cubic(ux - fx), cubic(uy - fy)
                    for a in range(4):
                        for c in range(4):
                            xx, yy = coordinate(fx - 1 + c, W), coordinate(fy - 1 + a, H)
                            out[b, :, i, j] += wy[a] * wx[c] * value(b, int(yy), int(xx))
                    continue
                sx, sy = coordinate(ux, W), coordinate(uy, H)
                if mode == "nearest":
                    out[b, :, i, j] = value(b, int(np.rint(sy)), int(np.rint(sx)))
                    continue
                x0, y0 = math.floor(sx), math.floor(sy)
                tx, ty = sx - x0, sy - y0
                out[b, :, i, j] = ((1 - tx) * (1 - ty) * value(b, y0, x0) + tx * (1 - ty) * value(b, y0, x0 + 1) +
                                   (1 - tx) * ty * value(b, y0 + 1, x0) + tx * ty * value(b, y0 + 1, x0 + 1))
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_modes_and_padding(mode, padding_mode):
    x = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.8, 1.8, (2, 4, 3, 2))  # reaching past the image on every side
    for align in (False, True):
        got = F.grid_sample(gt.tensor(x), gt.tensor(grid), mode=mode, padding_mode=padding_mode,
                            align_corners=align)
        np.testing.assert_allclose(got.numpy(), grid_sample_ref(x, grid, mode, padding_mode, align), rtol=1e-12,
                                   atol=1e-12)
    if mode == "nearest":
        return
    # The gradient reaches the grid through the weights and the reflections: a central difference.
    gx = gt.tensor(grid, requires_grad=True)
    w = rng.standard_normal((2, 3, 4, 3))
    (F.grid_sample(gt.tensor(x), gx, mode=mode, padding_mode=padding_mode) * gt.tensor(w)).sum().backward()
    e = np.zeros_like(grid)
    e[1, 2, 1, 0] = 1e-6
    f = lambda g: (grid_sample_ref(x, g, mode, padding_mode, False) * w).sum()
    np.testing.assert_allclose(gx.grad.numpy()[1, 2, 1, 0], (f(grid + e) - f(grid - e)) / 2e-6, rtol=1e-5, atol=1e-8)


def grid_sample_3d_ref(x, grid, mode, padding_mode, align_corners):
    """PyTorch's 3-D grid sampler (grid_sampler_3d_cpu) point by point: grid's last axis is
    (x, y, z) for input's (W, H, D)."""
    N, C = x.shape[:2]
    sizes = x.shape[2:]  # D, H, W

    def coordinate(c, n):
        if padding_mode == "border":
            return min(max(c, 0), n - 1)
        if padding_mode == "reflection":
            low, high = (0, 2 * (n - 1)) if align_corners else (-1, 2 * n - 1)
            if low != high:
                lo, span = low / 2, (high - low) / 2
                c = abs(c - lo)
                extra, flips = math.fmod(c, span), math.floor(c / span)
                c = extra + lo if flips % 2 == 0 else span - extra + lo
            else:
                c = 0.0
            return min(max(c, 0), n - 1)
        return c

    def value(b, idx):
        return x[(b, slice(None)) + idx] if all(0 <= i < n for i, n in zip(idx, sizes)) else np.zeros(C)
    out = np.zeros((N, C) + grid.shape[1:4])
    for b in range(N):
        for pos in np.ndindex(*grid.shape[1:4]):
            g = grid[(b,) + pos][::-1]  # (z, y, x): input's axis order
            u = [(gi + 1) / 2 * (n - 1) if align_corners else ((gi + 1) * n - 1) / 2 for gi, n in zip(g, sizes)]
            s = [coordinate(ui, n) for ui, n in zip(u, sizes)]
            if mode == "nearest":
                out[(b, slice(None)) + pos] = value(b, tuple(int(np.rint(si)) for si in s))
                continue
            low = [math.floor(si) for si in s]
            for corner in np.ndindex(2, 2, 2):
                w = np.prod([si - lo if bit else 1 - (si - lo) for si, lo, bit in zip(s, low, corner)])
                out[(b, slice(None)) + pos] += w * value(b, tuple(lo + bit for lo, bit in zip(low, corner)))
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d(mode, padding_mode):
    """Volumetric input (N, C, D, H, W) at a grid (N, Do, Ho, Wo, 3), as PyTorch's (MONAI's 3-D
    Spacing and Affine resample through affine_grid + grid_sample)."""
    x = rng.standard_normal((2, 2, 3, 4, 5))
    grid = rng.uniform(-1.6, 1.6, (2, 2, 3, 2, 3))
    for align in (False, True):
        got = F.grid_sample(gt.tensor(x), gt.tensor(grid), mode=mode, padding_mode=padding_mode,
                            align_corners=align)
        assert got.shape == (2, 2, 2, 3, 2)
        np.testing.assert_allclose(got.numpy(), grid_sample_3d_ref(x, grid, mode, padding_mode, align), rtol=1e-12,
                                   atol=1e-12)
    gx = gt.tensor(grid, requires_grad=True)
    w = rng.standard_normal((2, 2, 2, 3, 2))
    (F.grid_sample(gt.tensor(x), gx, mode=mode, padding_mode=padding_mode) * gt.tensor(w)).sum().backward()
    if mode == "nearest":  # a zero gradient, as PyTorch's (not none)
        np.testing.assert_array_equal(gx.grad.numpy(), np.zeros_like(grid))
        return
    e = np.zeros_like(grid)
    e[1, 0, 2, 1, 2] = 1e-6  # the z coordinate of one point
    f = lambda g: (grid_sample_3d_ref(x, g, mode, padding_mode, False) * w).sum()
    np.testing.assert_allclose(gx.grad.numpy()[1, 0, 2, 1, 2], (f(grid + e) - f(grid - e)) / 2e-6, rtol=1e-5,
                               atol=1e-8)


def test_affine_grid_3d():
    theta = rng.standard_normal((2, 3, 4))
    for align in (False, True):
        grid = F.affine_grid(gt.tensor(theta), (2, 1, 3, 4, 5), align_corners=align).numpy()
        assert grid.shape == (2, 3, 4, 5, 3)
        axis = lambda n: np.linspace(-1, 1, n) * (1 if align else (n - 1) / n)
        z, y, x = np.meshgrid(axis(3), axis(4), axis(5), indexing="ij")
        base = np.stack([x, y, z, np.ones_like(x)], -1)
        np.testing.assert_allclose(grid, np.einsum("dhwk,nik->ndhwi", base, theta), rtol=1e-12, atol=1e-12)
    v = rng.standard_normal((1, 2, 3, 4, 5))
    identity = gt.tensor(np.eye(3, 4)[None])
    g = F.affine_grid(identity, (1, 2, 3, 4, 5), align_corners=False)
    np.testing.assert_allclose(F.grid_sample(gt.tensor(v), g, align_corners=False).numpy(), v, atol=1e-12)
    with pytest.raises(ValueError, match="Nx3x4"):
        F.affine_grid(gt.tensor(theta[:, :2, :3]), (2, 1, 3, 4, 5))
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(gt.tensor(v), g, mode="bicubic")


def test_bilinear_and_gumbel_softmax():
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    m = nn.Bilinear(3, 5, 2)
    want = np.einsum("ni,kij,nj->nk", a, m.weight.numpy(), b) + m.bias.numpy()
    np.testing.assert_allclose(m(t(a), t(b)).numpy(), want, rtol=1e-4, atol=1e-5)
    logits = t(rng.standard_normal((6, 4)), True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.numpy().sum(-1), np.ones(6), rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(np.unique(hard.numpy())) <= {0.0, 1.0} and (hard.numpy().sum(-1) == 1).all()
    hard.sum().backward()
    assert logits.grad is not None


def test_lp_pool_local_response_norm_channel_shuffle_rrelu_and_alpha_dropout():
    x = np.abs(rng.standard_normal((2, 6, 4, 4))).astype(np.float32) + 0.1
    want = (x ** 2).reshape(2, 6, 2, 2, 2, 2).sum((3, 5)) ** 0.5
    np.testing.assert_allclose(nn.LPPool2d(2, 2)(t(x)).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(F.lp_pool1d(t(x[:, :, 0]), 3, 2).numpy(),
                               ((x[:, :, 0] ** 3).reshape(2, 6, 2, 2).sum(-1)) ** (1 / 3), rtol=1e-5)
    size, alpha, beta, k = 3, 1e-2, 0.75, 2.0
    sq = np.pad(x ** 2, [(0, 0), (1, 1), (0, 0), (0, 0)])
    div = (k + alpha / size * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** beta
    np.testing.assert_allclose(nn.LocalResponseNorm(size, alpha, beta, k)(t(x)).numpy(), x / div, rtol=1e-5)
    shuffled = nn.ChannelShuffle(2)(t(x)).numpy()
    np.testing.assert_array_equal(shuffled, x.reshape(2, 2, 3, 4, 4).transpose(0, 2, 1, 3, 4).reshape(2, 6, 4, 4))
    m = nn.RReLU(0.1, 0.3).eval()
    v = rng.standard_normal(50).astype(np.float32)
    np.testing.assert_allclose(m(t(v)).numpy(), np.where(v >= 0, v, v * 0.2), rtol=1e-6)
    y = nn.RReLU(0.1, 0.3).train()(t(v)).numpy()
    ratio = y[v < 0] / v[v < 0]
    assert ((ratio >= 0.1 - 1e-6) & (ratio <= 0.3 + 1e-6)).all() and (y[v >= 0] == v[v >= 0]).all()
    z = rng.standard_normal(200000).astype(np.float32)
    d = nn.AlphaDropout(0.2).train()(t(z)).numpy()
    assert abs(d.mean()) < 0.01 and abs(d.std() - 1) < 0.01  # keeps zero mean, unit variance


def test_multi_margin_loss_and_embedding_bag():
    x = rng.standard_normal((4, 5))
    y = np.array([0, 3, 4, 1])
    m = np.maximum(0, 1 - x[np.arange(4), y][:, None] + x)
    m[np.arange(4), y] = 0
    np.testing.assert_allclose(nn.MultiMarginLoss()(t(x), gt.tensor(y)).numpy(), (m.sum(1) / 5).mean(), rtol=1e-5)
    bag = nn.EmbeddingBag(10, 3, mode="sum")
    w = bag.weight.numpy()
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = np.array([0, 4])
    want = np.stack([w[idx[:4]].sum(0), w[idx[4:]].sum(0)])
    np.testing.assert_allclose(bag(gt.tensor(idx), gt.tensor(offsets)).numpy(), want, rtol=1e-5)
    mean = F.embedding_bag(gt.tensor(idx), bag.weight, gt.tensor(offsets), mode="mean").numpy()
    np.testing.assert_allclose(mean, want / 4, rtol=1e-5)
    mx = F.embedding_bag(gt.tensor(idx.reshape(2, 4)), bag.weight, mode="max").numpy()
    np.testing.assert_allclose(mx, np.stack([w[idx[:4]].max(0), w[idx[4:]].max(0)]), rtol=1e-6)
    weighted = bag(gt.tensor(idx), gt.tensor(offsets), per_sample_weights=gt.tensor(np.full(8, 2.0, np.float32)))
    np.testing.assert_allclose(weighted.numpy(), 2 * want, rtol=1e-5)


def test_float32_convolutions_on_cpu_workers_are_one_library_op_each(tmp_path):
    # A float32 convolution on CPU workers is one gt.convolution (oneDNN on the worker) and its
    # gradients one op each, with the same values; float64 takes im2col and a matrix product.
    import json
    x, w = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 3))
    path = tmp_path / "trace.json"
    for dtype in (gt.float32, gt.float64):
        xt = gt.tensor(x, dtype=dtype, requires_grad=True)
        wt = gt.tensor(w, dtype=dtype, requires_grad=True)
        with gt.profiler.trace(str(path)):
            y = F.conv2d(xt, wt, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
            y.sum().backward()
            grads = xt.grad.numpy(), wt.grad.numpy()
        ops = [e["name"] for e in json.load(open(path))["traceEvents"] if e.get("cat") == "op"]
        library = [n for n in ops if n.startswith("convolution")]
        if dtype == gt.float32:
            assert sorted(library) == ["convolution", "convolution_backward_input", "convolution_backward_weight"]
            assert "im2col" not in ops and "col2im" not in ops
        else:
            assert not library and "im2col" in ops and "col2im" in ops
        want = conv_ref(x, w, None, (2, 1), (1, 1), (1, 2), 2)
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
        xg = gt.tensor(x, dtype=gt.float64, requires_grad=True)
        wg = gt.tensor(w, dtype=gt.float64, requires_grad=True)
        F.conv2d(xg, wg, stride=(2, 1), padding=1, dilation=(1, 2), groups=2).sum().backward()
        np.testing.assert_allclose(grads[0], xg.grad.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(grads[1], wg.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_second_derivatives_through_library_convolutions():
    # The gradient ops have gradients too (create_graph): d/dw of |d loss/dx|^2 against the same
    # computed in float64 through im2col.
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    out = []
    for dtype in (gt.float32, gt.float64):
        xt = gt.tensor(x, dtype=dtype, requires_grad=True)
        wt = gt.tensor(w, dtype=dtype, requires_grad=True)
        loss = (F.conv2d(xt, wt, padding=1, stride=2) ** 2).sum()
        (gx,) = gt.autograd.grad(loss, [xt], create_graph=True)
        (gw,) = gt.autograd.grad((gx ** 2).sum(), [wt])
        out.append(gw.numpy().astype(np.float64))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-4, atol=1e-4 * np.abs(out[1]).max())


def test_overlapping_max_pools_on_cpu_workers_are_one_library_op_with_pytorchs_gradient(tmp_path):
    # A float32 max pool with overlapping, padded windows is one gt.max_pool (oneDNN) and its
    # gradient one gt.max_pool_backward, which gives each window's gradient to its first maximum
    # (row-major over the kernel), as PyTorch: checked on an input full of ties.
    import json
    x = np.floor(rng.standard_normal((2, 3, 9, 8)) * 1.5).astype(np.float32)
    g = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    xt = t(x, grad=True)
    path = tmp_path / "trace.json"
    with gt.profiler.trace(str(path)):
        y = F.max_pool2d(xt, 3, stride=2, padding=1, ceil_mode=True)
        (y * t(g)).sum().backward()
        got = xt.grad.numpy()
    ops = [e["name"] for e in json.load(open(path))["traceEvents"] if e.get("cat") == "op"]
    assert "max_pool" in ops and "max_pool_backward" in ops
    want_y = np.full((2, 3, 5, 5), -np.inf, np.float32)
    want_g = np.zeros_like(x)
    for n, c, i, j in np.ndindex(2, 3, 5, 5):
        taps = [(a, b) for a in range(2 * i - 1, 2 * i + 2) for b in range(2 * j - 1, 2 * j + 2)
                if 0 <= a < 9 and 0 <= b < 8]
        best = max(taps, key=lambda p: (x[n, c, p[0], p[1]], -taps.index(p)))  # the first maximum
        want_y[n, c, i, j] = x[n, c, best[0], best[1]]
        want_g[n, c, best[0], best[1]] += g[n, c, i, j]
    np.testing.assert_array_equal(y.numpy(), want_y)
    np.testing.assert_allclose(got, want_g, rtol=1e-6, atol=1e-6)
    # No second derivative through it: refused, not silently zero.
    xt = t(x, grad=True)
    (gx,) = gt.autograd.grad(F.max_pool2d(xt, 3, 2, 1).sum(), [xt])  # a first derivative is fine
    with pytest.raises(NotImplementedError, match="max_pool2d: second derivatives"):
        gt.autograd.grad(F.max_pool2d(xt, 3, 2, 1).sum(), [xt], create_graph=True)


@pytest.mark.parametrize("kernel,stride,dtype", [(2, 2, np.float32), (2, 2, np.float64), (3, 2, np.float64),
                                                 (2, 1, np.float64)])
def test_max_pool_gradients_go_to_each_windows_first_maximum(kernel, stride, dtype):
    # The pools GT builds from other ops (non-overlapping windows: one amax; others and float64:
    # the maximum over the taps) give a tie's gradient to the window's first maximum, as
    # PyTorch; they shared it (fgsm_tutorial's LeNet: conv outputs tie on MNIST's background).
    x = np.floor(rng.standard_normal((2, 2, 6, 6)) * 1.2).astype(dtype)
    out = (6 - kernel) // stride + 1
    g = rng.standard_normal((2, 2, out, out)).astype(dtype)
    xt = t(x, grad=True)
    (F.max_pool2d(xt, kernel, stride) * t(g)).sum().backward()
    want = np.zeros_like(x)
    for n, c, i, j in np.ndindex(2, 2, out, out):
        taps = [(a, b) for a in range(i * stride, i * stride + kernel) for b in range(j * stride, j * stride + kernel)]
        best = max(taps, key=lambda p: (x[n, c, p[0], p[1]], -taps.index(p)))
        want[n, c, best[0], best[1]] += g[n, c, i, j]
    np.testing.assert_allclose(xt.grad.numpy(), want, rtol=1e-6, atol=1e-6)


def test_avg_pool_whose_windows_tile_the_input_is_one_reduction():
    # SENet's global pool avg_pool2d(x, x.size(2)) was one op per kernel position (1024 here),
    # forward and backward; windows that tile the input are now a reshape and a mean.
    x = gt.tensor(rng.standard_normal((2, 4, 32, 32)).astype(np.float32), requires_grad=True)
    gt.synchronize()
    before = gt.debug.stats()["instructions"]
    y = F.avg_pool2d(x, 32)
    y.sum().backward()
    gt.synchronize()
    assert gt.debug.stats()["instructions"] - before < 40
    np.testing.assert_allclose(y.numpy().reshape(2, 4), x.detach().numpy().mean((2, 3)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 4, 32, 32), 1 / 1024), rtol=1e-6)
    odd = rng.standard_normal((1, 2, 9, 7)).astype(np.float32)  # floor mode drops the last row and column
    want = odd[:, :, :8, :6].reshape(1, 2, 4, 2, 3, 2).mean((3, 5))
    np.testing.assert_allclose(F.avg_pool2d(gt.tensor(odd), 2).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(F.avg_pool2d(gt.tensor(odd), 2, divisor_override=3).numpy(), want * 4 / 3, rtol=1e-6)


def test_operands_of_different_dtypes_raise_pytorchs_error():
    conv = nn.Conv2d(1, 2, 3).double()
    with pytest.raises(RuntimeError, match=r"Input type \(gt.float32\) and weight type \(gt.float64\) should be the same"):
        conv(gt.ones(1, 1, 5, 5))
    with pytest.raises(RuntimeError, match="should be the same"):
        nn.ConvTranspose1d(1, 2, 3)(gt.ones(1, 1, 5, dtype=gt.float64))
    with pytest.raises(ValueError, match="5056 values"):
        gt.set_rng_state(gt.zeros(5056, dtype=gt.uint8))  # (a PyTorch state: named by its size)


def test_grid_sample_of_non_finite_coordinates_is_pytorchs():
    # PyTorch makes a NaN, infinite or huge coordinate -100 (outside: 0), and its border/reflection
    # clip sends NaN to the last pixel; GT gathered at INT64_MIN and raised, or gave NaN
    x = gt.arange(16.0).view(1, 1, 4, 4)
    bad = gt.tensor([[[[float("nan"), 0.0], [0.25, 0.5]]]])  # (1, 1, 2, 2): a NaN point and a finite one
    inf = gt.tensor([[[[float("inf"), 0.0], [float("-inf"), 0.5]]]])
    for mode in ("bilinear", "nearest"):
        z = F.grid_sample(x, bad, mode=mode, padding_mode="zeros", align_corners=False)
        assert z[0, 0, 0, 0].item() == 0.0 and np.isfinite(z.numpy()).all()
        border = F.grid_sample(x, bad, mode=mode, padding_mode="border", align_corners=False)[0, 0, 0, 0].item()
        assert border == (9.0 if mode == "bilinear" else 11.0)  # (x at column 3, y 1.5 between rows 1 and 2)
        for pad in ("zeros", "border", "reflection"):
            assert np.isfinite(F.grid_sample(x, inf, mode=mode, padding_mode=pad, align_corners=False).numpy()).all()
