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
    deadline = time.monotonic() + 180  # (a fresh kernel cache compiles earlier tests' regions first)
    while time.monotonic() < deadline:  # until the region, compiling in the background, has replayed
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
    with pytest.raises(ValueError, match="non-negative int"):
        gt.polygamma(-1, x)


def test_polygamma_of_every_order_and_its_gradient():
    zeta3 = 1.2020569031595942  # Apery's constant
    x = gt.tensor([1.0, 0.5], dtype=gt.float64)
    np.testing.assert_allclose(gt.polygamma(2, x).numpy(), [-2 * zeta3, -14 * zeta3], rtol=1e-14)
    np.testing.assert_allclose(gt.polygamma(3, x).numpy(), [math.pi ** 4 / 15, math.pi ** 4], rtol=1e-14)
    # the recurrence psi_n(x + 1) = psi_n(x) + (-1)^n n! / x^(n+1), negative x included
    t = np.array([0.3, 2.7, 11.0, -0.4, -5.6, -7.3])
    for n in (2, 3, 6):
        lhs = gt.polygamma(n, gt.tensor(t + 1)).numpy()
        rhs = gt.polygamma(n, gt.tensor(t)).numpy() + (-1) ** n * math.factorial(n) / t ** (n + 1)
        np.testing.assert_allclose(lhs, rhs, rtol=1e-11)
    assert gt.polygamma(2, gt.tensor([0.0, -3.0], dtype=gt.float64)).numpy().tolist() == [-np.inf, -np.inf]
    assert gt.polygamma(2, gt.tensor([2.0])).dtype == gt.float32 and x.polygamma(2).shape == (2,)
    # gradients: polygamma(n)' = polygamma(n + 1), also twice (create_graph)
    v = np.array([0.7, 3.0, -1.5])
    xv = gt.tensor(v, requires_grad=True)
    y = gt.polygamma(1, xv)
    np.testing.assert_allclose(y.detach().numpy(), gt.polygamma(1, gt.tensor(v)).numpy())
    (g,) = gt.autograd.grad(y.sum(), xv, create_graph=True)
    eps = 1e-6
    numeric = (gt.polygamma(1, gt.tensor(v + eps)).numpy() - gt.polygamma(1, gt.tensor(v - eps)).numpy()) / (2 * eps)
    np.testing.assert_allclose(g.detach().numpy(), numeric, rtol=1e-6)
    (g2,) = gt.autograd.grad(g.sum(), xv)
    np.testing.assert_allclose(g2.numpy(), gt.polygamma(3, gt.tensor(v)).numpy(), rtol=1e-14)


def test_hurwitz_zeta():
    S = gt.special
    got = S.zeta(gt.tensor([2.0, 4.0, 2.0, 3.0]), gt.tensor([1.0, 1.0, 0.5, 2.0], dtype=gt.float64)).numpy()
    np.testing.assert_allclose(got, [math.pi ** 2 / 6, math.pi ** 4 / 90, math.pi ** 2 / 2, 1.2020569031595942 - 1],
                               rtol=1e-14)
    # zeta(s, q) - zeta(s, q + 1) = q^-s, for real s
    s, q = np.array([1.5, 2.5, 7.0]), np.array([0.3, 4.0, 0.9])
    diff = S.zeta(gt.tensor(s), gt.tensor(q)).numpy() - S.zeta(gt.tensor(s), gt.tensor(q + 1)).numpy()
    np.testing.assert_allclose(diff, q ** -s, rtol=1e-12)
    edge = S.zeta(gt.tensor([1.0, 0.5, 2.0, 2.0]), gt.tensor([1.0, 1.0, -1.0, -0.5])).numpy()
    assert np.isinf(edge[0]) and np.isnan(edge[1]) and np.isinf(edge[2]) and np.isnan(edge[3])
    assert S.zeta(2.0, gt.tensor([1.0])).dtype == gt.float32


def test_modified_bessel_functions_and_the_kaiser_window():
    x = np.array([-30.0, -21.0, -5.5, -0.3, 0.0, 0.7, 3.0, 12.0, 19.9, 20.1, 45.0, 300.0])
    np.testing.assert_allclose(gt.i0(gt.tensor(x)).numpy(), np.i0(x), rtol=1e-14)  # both sides of |x| = 20
    np.testing.assert_allclose(gt.special.i0e(gt.tensor(x)).numpy(), np.exp(-np.abs(x)) * np.i0(x), rtol=1e-14)
    # I1 = I0': against central differences of NumPy's i0, and as autograd's gradient of i0
    eps = 1e-5
    d = (np.i0(x + eps) - np.i0(x - eps)) / (2 * eps)
    i1 = gt.special.i1(gt.tensor(x)).numpy()
    np.testing.assert_allclose(i1, d, rtol=1e-8, atol=1e-12)
    t = gt.tensor(x, requires_grad=True)
    gt.i0(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), i1, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(gt.special.i1e(gt.tensor(x)).numpy(), np.exp(-np.abs(x)) * i1, rtol=1e-13)
    assert gt.special.i1(gt.tensor([-2.0])).item() < 0 and gt.tensor([0.5]).i0().dtype == gt.float32
    np.testing.assert_allclose(gt.kaiser_window(8, beta=5.0).numpy(), np.kaiser(9, 5.0)[:8], rtol=1e-6)
    np.testing.assert_allclose(gt.kaiser_window(7, periodic=False, beta=8.6, dtype=gt.float64).numpy(),
                               np.kaiser(7, 8.6), rtol=1e-13)
    assert gt.kaiser_window(1).numpy().tolist() == [1.0]


# Zeros of J0 (Abramowitz & Stegun, Table 9.5) and values at 1 (A&S Tables 9.1 and 9.8).
_J0_ZEROS = [2.404825557695773, 5.520078110286311, 8.653727912911013, 14.930917708487787, 30.634606468431976]


def test_bessel_functions_of_the_first_and_second_kind():
    S = gt.special
    x = np.array([1e-3, 0.3, 1.0, 2.5, 7.0, 11.99, 12.01, 17.5, 40.0, 250.0])  # both sides of 12
    j0, j1 = S.bessel_j0(gt.tensor(x)).numpy(), S.bessel_j1(gt.tensor(x)).numpy()
    y0, y1 = S.bessel_y0(gt.tensor(x)).numpy(), S.bessel_y1(gt.tensor(x)).numpy()
    # the Wronskian J1 Y0 - J0 Y1 = 2 / (pi x) (A&S 9.1.16)
    np.testing.assert_allclose(j1 * y0 - j0 * y1, 2 / (np.pi * x), rtol=1e-10)
    np.testing.assert_allclose([j0[2], y0[2], j1[2], y1[2]],
                               [0.7651976865579666, 0.08825696421567696, 0.44005058574493355, -0.7812128213002887],
                               rtol=1e-12)
    assert np.abs(S.bessel_j0(gt.tensor(_J0_ZEROS, dtype=gt.float64)).numpy()).max() < 1e-11
    # J0' = -J1 and Y0' = -Y1 (A&S 9.1.28), as autograd's gradients of the series and expansions
    for f, g in ((S.bessel_j0, -j1), (S.bessel_y0, -y1)):
        t = gt.tensor(x, requires_grad=True)
        f(t).sum().backward()
        np.testing.assert_allclose(t.grad.numpy(), g, rtol=1e-8, atol=1e-12)
    # parity and edges: J0 even, J1 odd; Y -inf at 0 and NaN below; float32 in, float32 out
    got = [f(gt.tensor([-2.5, 0.0, float("nan")])).numpy() for f in (S.bessel_j0, S.bessel_j1, S.bessel_y0)]
    np.testing.assert_allclose(got[0][:2], [S.bessel_j0(gt.tensor([2.5])).item(), 1.0], rtol=1e-6)
    np.testing.assert_allclose(got[1][:2], [-S.bessel_j1(gt.tensor([2.5])).item(), 0.0], rtol=1e-6)
    assert np.isnan(got[2][0]) and got[2][1] == -np.inf and all(np.isnan(g[2]) for g in got)
    assert S.bessel_y1(gt.tensor([1.0])).dtype == gt.float32
    np.testing.assert_allclose(S.spherical_bessel_j0(gt.tensor([0.0, 0.5, 4.0])).numpy(),
                               [1.0, np.sin(0.5) / 0.5, np.sin(4.0) / 4.0], rtol=1e-6)


def test_modified_bessel_functions_of_the_second_kind():
    S = gt.special
    x = np.array([1e-5, 0.2, 1.0, 1.99, 2.01, 7.5, 24.9, 25.1, 80.0, 600.0])  # every branch's sides
    t = gt.tensor(x)
    k0, k1 = S.modified_bessel_k0(t).numpy(), S.modified_bessel_k1(t).numpy()
    i0, i1 = S.modified_bessel_i0(t).numpy(), S.modified_bessel_i1(t).numpy()
    # the Wronskian I0 K1 + I1 K0 = 1 / x (A&S 9.6.15), on the scaled forms where e^x overflows
    k0e, k1e = S.scaled_modified_bessel_k0(t).numpy(), S.scaled_modified_bessel_k1(t).numpy()
    i0e, i1e = S.i0e(t).numpy(), S.i1e(t).numpy()
    np.testing.assert_allclose(i0e * k1e + i1e * k0e, 1 / x, rtol=1e-12)
    np.testing.assert_allclose(k0e[:6], np.exp(x[:6]) * k0[:6], rtol=1e-13)
    np.testing.assert_allclose(i0[:4] * k1[:4] + i1[:4] * k0[:4], 1 / x[:4], rtol=1e-12)
    np.testing.assert_allclose([k0[2], k1[2]], [0.42102443824070834, 0.6019072301972346], rtol=1e-13)
    # K0' = -K1 (A&S 9.6.27)
    g = gt.tensor(x[:8], requires_grad=True)
    S.modified_bessel_k0(g).sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), -k1[:8], rtol=1e-8)
    edge = S.modified_bessel_k1(gt.tensor([0.0, -1.0])).numpy()
    assert edge[0] == np.inf and np.isnan(edge[1])


def test_regularized_incomplete_gamma():
    S = gt.special
    x = np.array([1e-4, 0.3, 1.0, 2.5, 6.0, 20.0, 60.0])
    # closed forms (DLMF 8.4.4, 8.4.10): P(1, x) = 1 - e^-x, P(1/2, x) = erf(sqrt(x)),
    # Q(n, x) = e^-x sum_{k<n} x^k / k! for integer n: both the series (x < a + 1) and the
    # continued fraction
    np.testing.assert_allclose(S.gammainc(gt.tensor(1.0, dtype=gt.float64), gt.tensor(x)).numpy(), -np.expm1(-x),
                               rtol=1e-13)
    np.testing.assert_allclose(S.gammainc(0.5, gt.tensor(x)).numpy(),
                               [math.erf(math.sqrt(v)) for v in x], rtol=1e-13)
    for n, xs in ((5, x), (50, np.array([30.0, 49.0, 51.0, 75.0]))):
        want = [math.exp(-v) * sum(v ** k / math.factorial(k) for k in range(n)) for v in xs]
        np.testing.assert_allclose(S.gammaincc(gt.tensor(float(n), dtype=gt.float64), gt.tensor(xs)).numpy(), want,
                                   rtol=1e-11)
    a = gt.tensor(np.array([[0.3], [4.0], [150.0]]))  # broadcast against x
    p, q = S.gammainc(a, gt.tensor(x)).numpy(), S.gammaincc(a, gt.tensor(x)).numpy()
    assert p.shape == (3, 7)
    np.testing.assert_allclose(p + q, 1.0, rtol=1e-13)
    assert np.all(np.diff(p, axis=1) > -1e-15) and np.all((p >= 0) & (p <= 1))  # a CDF in x
    # PyTorch's edge cases: a = 0 gives P = 1 for x > 0; x = 0 gives 0; x = inf 1; negatives NaN
    edge = S.gammainc(gt.tensor([0.0, 2.0, 2.0, -1.0, 2.0]), gt.tensor([1.0, 0.0, float("inf"), 1.0, -1.0])).numpy()
    np.testing.assert_array_equal(edge[:3], [1.0, 0.0, 1.0])
    assert np.isnan(edge[3]) and np.isnan(edge[4])
    # the gradient in x is the gamma density x^(a-1) e^-x / Gamma(a) (Q's its negative); in a,
    # NotImplementedError (as PyTorch's)
    t = gt.tensor(x, requires_grad=True)
    S.gammainc(gt.tensor(2.5, dtype=gt.float64), t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), x ** 1.5 * np.exp(-x) / math.gamma(2.5), rtol=1e-12)
    t = gt.tensor([1.0, 2.0], requires_grad=True)
    gt.igammac(gt.tensor([[3.0], [1.0]]), t).sum().backward()  # broadcast: the gradient sums over a's rows
    want = -(np.array([1.0, 2.0]) ** 2 * np.exp(-np.array([1.0, 2.0])) / 2 + np.exp(-np.array([1.0, 2.0])))
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="first argument"):
        S.gammainc(gt.tensor([2.0], requires_grad=True), gt.tensor([1.0]))
    assert gt.tensor([2.0]).igamma(gt.tensor([1.0])).dtype == gt.float32


def test_orthogonal_polynomials_ndtri_and_erfcx():
    S = gt.special
    x = np.linspace(-0.95, 0.95, 9)
    t = gt.tensor(x)
    theta = np.arccos(x)
    # closed forms on [-1, 1] (DLMF 18.5.1): T_n = cos(n t), U_n = sin((n+1) t) / sin t,
    # V_n = cos((n + 1/2) t) / cos(t/2), W_n = sin((n + 1/2) t) / sin(t/2), x = cos t
    for n in (0, 1, 2, 7):
        np.testing.assert_allclose(S.chebyshev_polynomial_t(t, n).numpy(), np.cos(n * theta), atol=1e-12)
        np.testing.assert_allclose(S.chebyshev_polynomial_u(t, n).numpy(), np.sin((n + 1) * theta) / np.sin(theta),
                                   atol=1e-11)
        np.testing.assert_allclose(S.chebyshev_polynomial_v(t, n).numpy(),
                                   np.cos((n + 0.5) * theta) / np.cos(theta / 2), atol=1e-11)
        np.testing.assert_allclose(S.chebyshev_polynomial_w(t, n).numpy(),
                                   np.sin((n + 0.5) * theta) / np.sin(theta / 2), atol=1e-11)
    u = np.linspace(0.02, 0.98, 7)  # the shifted ones: p*(u) = p(2u - 1)
    np.testing.assert_allclose(S.shifted_chebyshev_polynomial_t(gt.tensor(u), 4).numpy(),
                               np.cos(4 * np.arccos(2 * u - 1)), atol=1e-12)
    # explicit low degrees (DLMF Table 18.3.1 and 18.5.17-18.5.18)
    np.testing.assert_allclose(S.hermite_polynomial_h(t, 3).numpy(), 8 * x ** 3 - 12 * x, atol=1e-12)
    np.testing.assert_allclose(S.hermite_polynomial_he(t, 4).numpy(), x ** 4 - 6 * x ** 2 + 3, atol=1e-12)
    np.testing.assert_allclose(S.laguerre_polynomial_l(t, 3).numpy(), (-x ** 3 + 9 * x ** 2 - 18 * x + 6) / 6,
                               atol=1e-12)
    np.testing.assert_allclose(S.legendre_polynomial_p(t, 4).numpy(), (35 * x ** 4 - 30 * x ** 2 + 3) / 8, atol=1e-12)
    # a tensor of degrees (broadcast against x), negative degrees give 0 (as PyTorch's)
    n = gt.tensor([[0], [2], [5], [-1]])
    got = S.legendre_polynomial_p(t, n).numpy()
    assert got.shape == (4, 9)
    np.testing.assert_allclose(got[1], (3 * x ** 2 - 1) / 2, atol=1e-12)
    np.testing.assert_allclose(got[2], (63 * x ** 5 - 70 * x ** 3 + 15 * x) / 8, atol=1e-12)
    assert (got[0] == 1).all() and (got[3] == 0).all()
    # ndtri inverts ndtr; erfcx = exp(x^2) erfc(x) on both sides of its switch at 2, 1/(x sqrt(pi)) far out
    p = np.array([1e-6, 0.1, 0.5, 0.975])
    np.testing.assert_allclose(S.ndtr(S.ndtri(gt.tensor(p))).numpy(), p, rtol=1e-9)  # (ndtr's 1 + erf cancels)
    quantiles = [-4.753424308822899, 1.959963984540054]  # the normal's, at 1e-6 and 0.975
    np.testing.assert_allclose(S.ndtri(gt.tensor([1e-6, 0.975], dtype=gt.float64)).numpy(), quantiles, rtol=1e-12)
    np.testing.assert_allclose(S.ndtri(gt.tensor([1e-6, 0.975])).numpy(), quantiles, rtol=1e-6)  # float32 too
    assert S.ndtri(gt.tensor([0.0, 1.0])).numpy().tolist() == [-np.inf, np.inf]
    xs = np.array([-3.0, 0.0, 1.0, 1.999, 2.001, 4.0])
    np.testing.assert_allclose(S.erfcx(gt.tensor(xs)).numpy(),
                               [math.exp(v * v) * math.erfc(v) for v in xs], rtol=1e-12)
    big = 1e4  # erfcx(x) = (1 - 1/(2x^2) + ...) / (x sqrt(pi)) (DLMF 7.12.1)
    np.testing.assert_allclose(S.erfcx(gt.tensor([big], dtype=gt.float64)).numpy(),
                               [(1 - 0.5 / big ** 2) / (big * math.sqrt(math.pi))], rtol=1e-12)
    assert S.erfcx(gt.tensor([1.0])).dtype == gt.float32
