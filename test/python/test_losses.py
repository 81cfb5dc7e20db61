"""Losses and norms added for PyTorch scripts (issue 24): values against NumPy float64 forms of
the formulas PyTorch documents, and the errors raised."""
import numpy as np
import pytest

import gt

nn, F = gt.nn, gt.nn.functional
rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5)).astype(np.float32)
Y = rng.standard_normal((4, 5)).astype(np.float32)
P = rng.random((4, 5)).astype(np.float32)
Q = (P / P.sum(1, keepdims=True)).astype(np.float32)
t = gt.tensor


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


@pytest.mark.parametrize("beta", [0.5, 1.0, 0.0])
def test_smooth_l1_and_huber(beta):
    d = np.abs(X.astype(np.float64) - Y)
    want = np.where(d < beta, 0.5 * d * d / beta if beta else 0, d - 0.5 * beta).mean() if beta else d.mean()
    assert nn.SmoothL1Loss(beta=beta)(t(X), t(Y)).item() == pytest.approx(want, rel=1e-5)
    huber = np.where(d < 0.7, 0.5 * d * d, 0.7 * (d - 0.35)).sum()
    assert F.huber_loss(t(X), t(Y), reduction="sum", delta=0.7).item() == pytest.approx(huber, rel=1e-5)
    with pytest.raises(ValueError, match="beta"):
        F.smooth_l1_loss(t(X), t(Y), beta=-1.0)


def test_loss_modules_call_their_functional_forms():
    target = np.array([0, 1, 4, 2])
    lp = log_softmax(X)
    assert nn.L1Loss(reduction="sum")(t(X), t(Y)).item() == pytest.approx(np.abs(X - Y).sum(), rel=1e-5)
    assert nn.NLLLoss()(t(lp.astype(np.float32)), t(target)).item() == pytest.approx(
        -lp[np.arange(4), target].mean(), rel=1e-5)
    bce = -(Q * np.log(P) + (1 - Q) * np.log(1 - P)).mean()
    assert nn.BCELoss()(t(P), t(Q)).item() == pytest.approx(bce, rel=1e-5)
    sig = 1 / (1 + np.exp(-X.astype(np.float64)))
    bcel = -(2.0 * Q * np.log(sig) + (1 - Q) * np.log(1 - sig)).mean()
    got = nn.BCEWithLogitsLoss(pos_weight=t(np.full(5, 2.0, np.float32)))(t(X), t(Q)).item()
    assert got == pytest.approx(bcel, rel=1e-5)
    assert repr(nn.L1Loss(reduction="sum")) == "L1Loss()"  # as PyTorch's: losses print no arguments


def test_kl_div_reductions_and_log_target():
    lp = log_softmax(X)
    pointwise = Q * (np.log(Q) - lp)
    for reduction, want in [("mean", pointwise.mean()), ("batchmean", pointwise.sum() / 4), ("sum", pointwise.sum())]:
        assert nn.KLDivLoss(reduction=reduction)(t(lp.astype(np.float32)), t(Q)).item() == pytest.approx(want, rel=1e-4)
    got = F.kl_div(t(lp.astype(np.float32)), t(np.log(Q)), reduction="batchmean", log_target=True).item()
    assert got == pytest.approx(pointwise.sum() / 4, rel=1e-4)
    sparse = np.where(Q > 0.2, Q, 0).astype(np.float32)  # 0 log 0 counts as 0, not nan
    want = np.where(sparse > 0, sparse * (np.log(np.where(sparse > 0, sparse, 1)) - lp), 0).sum()
    assert F.kl_div(t(lp.astype(np.float32)), t(sparse), reduction="sum").item() == pytest.approx(want, rel=1e-4)


def test_cross_entropy_with_class_probabilities_and_its_gradient():
    lp = log_softmax(X)
    assert F.cross_entropy(t(X), t(Q)).item() == pytest.approx(-(Q * lp).sum(1).mean(), rel=1e-5)
    w = np.arange(1, 6, dtype=np.float32)
    smoothed = Q * 0.9 + 0.1 / 5
    got = F.cross_entropy(t(X), t(Q), weight=t(w), label_smoothing=0.1, reduction="sum").item()
    assert got == pytest.approx(-(smoothed * lp * w).sum(), rel=1e-5)
    x = gt.tensor(X, requires_grad=True)
    F.cross_entropy(x, t(Q)).backward()
    np.testing.assert_allclose(x.grad.numpy(), (np.exp(lp) - Q) / 4, atol=1e-6)  # (softmax - target) / N


def test_normalize_cosine_similarity_and_rms_norm():
    x = X.astype(np.float64)
    np.testing.assert_allclose(F.normalize(t(X), dim=1).numpy(), x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(F.normalize(t(X), p=1.0, dim=0).numpy(), x / np.abs(x).sum(0), rtol=1e-5)
    cos = (x * Y).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(Y, axis=1))
    np.testing.assert_allclose(F.cosine_similarity(t(X), t(Y)).numpy(), cos, rtol=1e-5)
    rms = x / np.sqrt((x * x).mean(1, keepdims=True) + np.finfo(np.float32).eps)
    norm = nn.RMSNorm(5)
    np.testing.assert_allclose(norm(t(X)).numpy(), rms, rtol=1e-5)
    assert [n for n, _ in norm.named_parameters()] == ["weight"]
    np.testing.assert_allclose(F.rms_norm(t(X), 5, eps=0.1).numpy(), x / np.sqrt((x * x).mean(1, keepdims=True) + 0.1),
                               rtol=1e-5)
    with pytest.raises(gt.ShapeError, match="normalized_shape"):
        F.rms_norm(t(X), (4,))


def test_bce_of_a_saturated_probability_has_pytorchs_finite_gradient():
    # A sigmoid saturates to exactly 0 or 1 in float32 (a GAN's discriminator): the gradient is
    # g (p - t) / max(p (1 - p), 1e-12), as PyTorch's, not NaN.
    x = gt.tensor([1.0, 0.0, 0.5], requires_grad=True)
    loss = gt.nn.BCELoss()(x, gt.tensor([0.0, 1.0, 1.0]))
    loss.backward()
    assert loss.item() == pytest.approx((100 + 100 + np.log(2)) / 3, rel=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3 / 1e-12, -1 / 3 / 1e-12, -2 / 3], rtol=1e-5)
    z = gt.tensor([40.0, -40.0], requires_grad=True)
    gt.nn.BCELoss()(gt.sigmoid(z), gt.tensor([0.0, 1.0])).backward()
    assert np.isfinite(z.grad.numpy()).all() and z.grad.numpy()[0] == 0.0
    # The target's gradient, and second derivatives through the formula.
    p = gt.tensor([0.2, 0.7], dtype=gt.float64, requires_grad=True)
    t = gt.tensor([0.0, 1.0], dtype=gt.float64, requires_grad=True)
    assert gt.autograd.gradcheck(lambda p, t: gt.nn.functional.binary_cross_entropy(p, t), (p, t))
    assert gt.autograd.gradgradcheck(lambda p: gt.nn.functional.binary_cross_entropy(p, t.detach()), (p,))
