"""lgamma, digamma and trigamma (polygamma(1, x)) beyond the op harness' positive inputs: the
reflection below 1/2, the poles, infinities and NaN as PyTorch gives them, the identities that tie
them together, fused regions equal to eager kernels, and the Python functions built on them
(gt.special.gammaln / digamma / psi / polygamma / multigammaln, gt.mvlgamma)."""
import math
import time

import numpy as np
import pytest

import gt
import gt.special as S

NEG = np.array([-0.5, -1.5, -2.3, -7.9, -0.01, 0.2, 0.49, 0.51])  # reflection side, non-integers
EULER = 0.57721566490153286


def test_lgamma_matches_libm_on_both_sides_of_one_half_in_both_float_types():
    x = np.concatenate([NEG, [1e-8, 0.5, 1.0, 2.0, 3.7, 10.0, 171.3, 1e5]])
    want = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(gt.tensor(x).lgamma().numpy(), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(gt.tensor(x.astype(np.float32)).lgamma().numpy(), want, rtol=2e-6, atol=2e-6)


def test_poles_infinities_and_nan_are_pytorchs():
    x = gt.tensor([0.0, -1.0, -3.0, float("inf"), float("-inf"), float("nan")], dtype=gt.float64)
    np.testing.assert_array_equal(x.lgamma().numpy(), [np.inf, np.inf, np.inf, np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(x.digamma().numpy(), [-np.inf, np.nan, np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(gt.polygamma(1, x).numpy(), [np.inf, np.inf, np.inf, 0.0, np.inf, np.nan])


def test_known_values_and_reflection_identities():
    x = gt.tensor([0.5, 1.0, 4.0], dtype=gt.float64)
    np.testing.assert_allclose(x.digamma().numpy(), [-EULER - 2 * math.log(2), -EULER, 1 + 1 / 2 + 1 / 3 - EULER],
                               rtol=1e-12)
    np.testing.assert_allclose(gt.polygamma(1, x).numpy(),
                               [math.pi ** 2 / 2, math.pi ** 2 / 6, math.pi ** 2 / 6 - 1 - 1 / 4 - 1 / 9], rtol=1e-12)
    # psi(1 - x) - psi(x) = pi cot(pi x); psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)
    t = gt.tensor(NEG)
    np.testing.assert_allclose((gt.digamma(1 - t) - gt.digamma(t)).numpy(), math.pi / np.tan(math.pi * NEG),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose((gt.polygamma(1, 1 - t) + gt.polygamma(1, t)).numpy(),
                               math.pi ** 2 / np.sin(math.pi * NEG) ** 2, rtol=1e-10)
    # Gamma(x + 1) = x Gamma(x): lgamma(x + 1) - lgamma(x) = log |x|
    np.testing.assert_allclose((gt.lgamma(t + 1) - gt.lgamma(t)).numpy(), np.log(np.abs(NEG)), rtol=1e-11, atol=1e-11)


def test_gradients_are_digamma_and_trigamma_to_a_second_derivative():
    x = gt.tensor(NEG, requires_grad=True)
    (g,) = gt.autograd.grad(x.lgamma().sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gt.digamma(gt.tensor(NEG)).numpy(), rtol=1e-12)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), gt.polygamma(1, gt.tensor(NEG)).numpy(), rtol=1e-12)
    h = 1e-6  # and digamma's values are lgamma's slope
    np.testing.assert_allclose(g.detach().numpy(), [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in NEG],
                               rtol=1e-6, atol=1e-6)


def test_in_a_fused_region_they_equal_the_eager_kernels():
    x = np.linspace(-3.3, 6.1, 40).reshape(4, 10)

    def f(t):
        return (t.lgamma() * 0.5 + t.digamma() - gt.polygamma(1, t * 0.25 + 2.0)).exp().sum(1)
    eager = f(gt.tensor(x)).numpy()
    fused = gt.compile(f)
    replays = gt.debug.stats()["region_replays"]
    for _ in range(200):  # until the region, compiling in the background, has replayed
        out = fused(gt.tensor(x)).numpy()
        if gt.debug.stats()["region_replays"] > replays:
            break
        time.sleep(0.05)
    assert gt.debug.stats()["region_replays"] > replays  # (a fused kernel ran)
    np.testing.assert_allclose(out, eager, rtol=1e-13)


def test_special_names_mvlgamma_and_their_errors():
    x = gt.tensor([2.5, 3.0, 7.25], dtype=gt.float64)
    for fn in (S.gammaln, S.digamma, S.psi, lambda t: S.polygamma(1, t), lambda t: t.polygamma(0)):
        assert fn(x).shape == (3,)
    np.testing.assert_array_equal(S.gammaln(x).numpy(), x.lgamma().numpy())
    want = [3 * 2 / 4 * math.log(math.pi) + sum(math.lgamma(v - i / 2) for i in range(3)) for v in (2.5, 3.0, 7.25)]
    np.testing.assert_allclose(S.multigammaln(x, 3).numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(x.mvlgamma(3).numpy(), want, rtol=1e-13)
    with pytest.raises(ValueError, match=r"greater than \(p-1\)/2"):
        gt.mvlgamma(x, 6)
    with pytest.raises(NotImplementedError, match="order 2"):
        gt.polygamma(2, x)
    with pytest.raises(ValueError, match="non-negative int"):
        gt.polygamma(-1, x)


def test_a_backward_pass_through_trigamma_raises_instead_of_dropping_its_gradient():
    x = gt.tensor([0.5, 2.0], dtype=gt.float64, requires_grad=True)
    y = gt.polygamma(1, x)
    assert y.requires_grad
    np.testing.assert_allclose(y.detach().numpy(), [math.pi ** 2 / 2, math.pi ** 2 / 6 - 1], rtol=1e-12)
    with pytest.raises(NotImplementedError, match="polygamma"):
        (x.lgamma() + y).sum().backward()
