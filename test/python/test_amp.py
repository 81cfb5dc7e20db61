"""gt.amp (issue 24): autocast casts matrix products, GradScaler scales, unscales, skips and
adapts like torch.amp.GradScaler; gt.backends' switches are accepted."""
from contextlib import nullcontext

import numpy as np
import pytest

import gt

nn = gt.nn
rng = np.random.default_rng(0)


def test_autocast_casts_matrix_products_and_gradients_reach_float32_parameters():
    x = gt.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    m = nn.Linear(4, 3, bias=False)
    with gt.autocast(device_type="cpu"):
        assert (x @ x.T).dtype == gt.bfloat16 and m(x).dtype == gt.bfloat16
        with gt.autocast("cpu", enabled=False):
            assert (x @ x.T).dtype == gt.float32
        assert gt.matmul(x.to(gt.float16), x.T.to(gt.float16)).dtype == gt.float16  # already half: kept
    assert (x @ x.T).dtype == gt.float32
    half = gt.float16 if gt.cuda.is_available() else gt.float32  # (no GPU workers: "cuda" autocast is off, as PyTorch's)
    with pytest.warns(UserWarning, match="CUDA is not available") if half == gt.float32 else nullcontext():
        with gt.autocast("cuda"):
            assert (x @ x.T).dtype == half
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
        with gt.cuda.amp.autocast():
            assert (x @ x.T).dtype == half

    @gt.autocast("cpu", dtype=gt.bfloat16)
    def product(a):
        return a @ a.T

    assert product(x).dtype == gt.bfloat16
    with gt.autocast("cpu"):
        loss = m(x).float().pow(2).sum()
    loss.backward()
    assert m.weight.grad.dtype == gt.float32
    w = m.weight.detach().numpy().astype(np.float64)
    xv = x.numpy().astype(np.float64)
    want = 2 * (xv @ w.T).T @ xv  # d sum((x W^T)^2) / dW
    np.testing.assert_allclose(m.weight.grad.numpy(), want, rtol=3e-2, atol=3e-2)  # bfloat16 products
    for dtype in (gt.int64, gt.float32, gt.float64):  # PyTorch's warning, and autocast off
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
            with gt.autocast("cpu", dtype=dtype):
                assert (x @ x.T).dtype == gt.float32


def test_autocast_casts_biases_and_added_operands_with_the_products():
    # As PyTorch's autocast (the amp recipe asserts it): layers with a bias, the convolutions
    # and addmm-style ops give the low dtype, and the bias's gradient arrives in float32.
    x = gt.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    lin, conv = nn.Linear(4, 3), nn.Conv2d(2, 3, 3)
    with gt.autocast("cpu", dtype=gt.bfloat16):
        assert lin(x).dtype == conv(gt.randn(1, 2, 5, 5)).dtype == gt.bfloat16
        assert nn.ConvTranspose2d(2, 3, 3)(gt.randn(1, 2, 4, 4)).dtype == gt.bfloat16
        assert gt.addmm(gt.ones(3), x, gt.ones(4, 3)).dtype == gt.bfloat16
        assert gt.baddbmm(gt.ones(2, 5, 3), gt.ones(2, 5, 4), gt.ones(2, 4, 3)).dtype == gt.bfloat16
        assert nn.Bilinear(4, 4, 2)(x, x).dtype == gt.bfloat16
        loss = lin(x).float().sum()
    assert lin(x).dtype == gt.addmm(gt.ones(3), x, gt.ones(4, 3)).dtype == gt.float32
    loss.backward()
    assert lin.bias.grad.dtype == gt.float32 and lin.bias.grad.tolist() == [5.0, 5.0, 5.0]


def test_a_gradient_arrives_in_its_tensors_dtype_under_autocast():
    # A bfloat16 product plus a float32 tensor is float32 (type promotion), so the gradient
    # reaching the product is float32; it is cast to bfloat16 there, as PyTorch's engine casts
    # (it used to reach the product's backward as float32 and fail: "operands must have the
    # same dtype"). GPT-2's head and llm.c-style models hit this.
    x = gt.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    m = nn.Linear(4, 3, bias=False)
    b = gt.zeros(3, requires_grad=True)
    with gt.autocast("cpu"):
        y = m(x)
        out = y + b
    assert y.dtype == gt.bfloat16 and out.dtype == gt.float32
    y.retain_grad()
    out.pow(2).sum().backward()
    assert y.grad.dtype == gt.bfloat16
    assert m.weight.grad.dtype == gt.float32 and b.grad.dtype == gt.float32
    w = m.weight.detach().numpy().astype(np.float64)
    xv = x.numpy().astype(np.float64)
    np.testing.assert_allclose(m.weight.grad.numpy(), 2 * (xv @ w.T).T @ xv, rtol=3e-2, atol=3e-2)


def _model_and_data():
    gt.manual_seed(0)
    m = nn.Linear(3, 1)
    x = gt.tensor(rng.standard_normal((8, 3)).astype(np.float32))
    return m, x


def test_grad_scaler_matches_unscaled_training_and_skips_non_finite_steps():
    m, x = _model_and_data()
    ref = nn.Linear(3, 1)
    ref.load_state_dict(m.state_dict())
    scaler = gt.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    opt, ref_opt = gt.optim.SGD(m.parameters(), lr=0.1), gt.optim.SGD(ref.parameters(), lr=0.1)
    for _ in range(3):
        scaler.scale((m(x) ** 2).mean()).backward()
        assert scaler.step(opt) is None and True  # SGD.step returns None
        scaler.update()
        opt.zero_grad()
        (ref(x) ** 2).mean().backward()
        ref_opt.step()
        ref_opt.zero_grad()
    np.testing.assert_allclose(m.weight.numpy(), ref.weight.numpy(), rtol=1e-5, atol=1e-6)
    assert scaler.get_scale() == 2048.0  # grown once, after growth_interval (2) finite steps
    before = m.weight.numpy().copy()
    (m(x).sum() * float("inf")).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(m.weight.numpy(), before)  # skipped
    assert scaler.get_scale() == 1024.0  # backed off
    state = scaler.state_dict()
    other = gt.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 1024.0 and other.state_dict() == state


def test_a_cuda_grad_scaler_without_gpu_workers_disables_itself_as_pytorchs():
    # nanoGPT makes GradScaler(enabled=(dtype == 'float16')) on CPU too; PyTorch disables it
    if gt.cuda.is_available():
        pytest.skip("the session's workers are GPUs: the scaler stays on")
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        scaler = gt.cuda.amp.GradScaler()  # (with PyTorch's FutureWarning)
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


def test_a_disabled_grad_scaler_passes_through():
    m, x = _model_and_data()
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.GradScaler\(args...\)` is deprecated"):
        scaler = gt.cuda.amp.GradScaler(enabled=False)
    loss = (m(x) ** 2).mean()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    opt = gt.optim.SGD(m.parameters(), lr=0.1)
    loss.backward()
    before = m.weight.numpy().copy()
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(m.weight.numpy(), before)


def test_backends_switches_are_accepted():
    gt.backends.cudnn.benchmark = True
    gt.backends.cuda.matmul.allow_tf32 = True
    assert gt.backends.cudnn.benchmark and not gt.backends.mps.is_available()
    import gt.backends.cudnn as cudnn  # pytorch/examples' dcgan: import torch.backends.cudnn as cudnn
    assert cudnn is gt.backends.cudnn and not cudnn.is_available()
    x = gt.ones(2)
    assert x.is_cpu and not (x.is_xpu or x.is_mps or x.is_meta or x.is_quantized or x.is_sparse)


def test_autocast_runs_losses_in_float32_and_on_cuda_also_reductions_and_normalizations(monkeypatch):
    # PyTorch's lists of ops that autocast to float32: a bfloat16 loss printed 5.781250 where
    # PyTorch's float32 one printed 5.792760 (build-nanogpt under autocast("cpu")).
    F = gt.nn.functional
    lin = gt.nn.Linear(16, 50)
    x, y = gt.randn(8, 16), gt.arange(8) * 5
    with gt.autocast(device_type="cpu", dtype=gt.bfloat16):
        logits = lin(x)
        losses = [F.cross_entropy(logits, y), F.nll_loss(F.log_softmax(logits, -1), y),
                  F.mse_loss(logits, gt.zeros(8, 50)), F.l1_loss(logits, gt.zeros(8, 50)), logits.prod(-1),
                  F.binary_cross_entropy_with_logits(logits, gt.ones(8, 50)), gt.cdist(logits, logits)]
        kept = [F.softmax(logits, -1), logits.sum(), logits.exp()]  # not on the CPU list
    assert logits.dtype == gt.bfloat16
    assert [t.dtype for t in losses] == [gt.float32] * len(losses)
    assert [t.dtype for t in kept] == [gt.bfloat16] * len(kept)
    # the loss of the bfloat16 logits, computed in float32 (not rounded to bfloat16)
    expected = F.cross_entropy(logits.float(), y).item()
    assert losses[0].item() == pytest.approx(expected, rel=1e-6)
    monkeypatch.setattr(gt.cuda, "is_available", lambda: True)  # (the CUDA lists, checked on any workers)
    with gt.autocast(device_type="cuda", dtype=gt.bfloat16):
        logits = lin(x)
        on_cuda = [F.softmax(logits, -1), F.log_softmax(logits, -1), logits.sum(), logits.exp(), logits ** 2,
                   F.layer_norm(logits, (50,)), logits.norm(), F.cross_entropy(logits, y)]
    assert logits.dtype == gt.bfloat16 and [t.dtype for t in on_cuda] == [gt.float32] * len(on_cuda)
    assert F.cross_entropy(logits, y).dtype == gt.bfloat16  # outside autocast: type promotion again


def test_half_precision_composites_round_once():
    # softmax, log_softmax, tanh-gelu and a linear layer with a bias, of bfloat16 inputs, give the
    # bfloat16 rounding of the exact result (each op of the composite rounding to bfloat16 left
    # 27-45 % of the outputs an ulp off); also under autocast.
    import ml_dtypes
    F = gt.nn.functional
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 256)).astype(bf16)
    w = (rng.standard_normal((128, 256)) * 0.05).astype(bf16)
    b = rng.standard_normal(128).astype(bf16)
    X, W, B = (gt.from_numpy(a) for a in (x, w, b))
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))

    def off(got, exact):  # the fraction of outputs that are not exact's bfloat16 rounding
        assert got.dtype == gt.bfloat16
        return np.mean(got.float().numpy() != exact.astype(bf16).astype(np.float32))

    e = np.exp(x64 - x64.max(-1, keepdims=True))
    assert off(F.softmax(X, -1), e / e.sum(-1, keepdims=True)) < 0.01
    assert off(F.log_softmax(X, -1), np.log(e / e.sum(-1, keepdims=True))) < 0.01
    tanh_gelu = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
    assert off(F.gelu(X, approximate="tanh"), tanh_gelu) < 0.01
    assert off(F.linear(X, W, B), x64 @ w64.T + b64) < 0.01
    with gt.autocast(device_type="cpu", dtype=gt.bfloat16):
        assert off(F.linear(X.float(), W.float(), B.float()), x64 @ w64.T + b64) < 0.01
    # the gradient still reaches a bfloat16 leaf, in its dtype
    Xg = gt.from_numpy(x).requires_grad_()
    F.softmax(Xg, -1)[:, 0].sum().backward()
    assert Xg.grad.dtype == gt.bfloat16 and F.softmax(Xg, -1).grad_fn.name() == "SoftmaxBackward0"
