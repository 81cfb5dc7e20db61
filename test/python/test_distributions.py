"""gt.distributions (issue 24): log_prob, entropy, KL and moments against NumPy forms of
PyTorch's formulas; samples' shapes, dtypes and frequencies; gradients through log_prob (the
REINFORCE loss) and through rsample (the reparameterization trick)."""
import math

import numpy as np
import pytest

import gt
from gt import distributions as D
from gt.distributions import Bernoulli, Categorical, Normal, Uniform, kl_divergence


def test_categorical_log_prob_entropy_samples_and_reinforce_gradient():
    gt.manual_seed(0)
    logits = gt.tensor([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0]], requires_grad=True)
    d = Categorical(logits=logits)
    assert d.batch_shape == (2,) and d.event_shape == ()
    lp = logits.detach().numpy() - np.log(np.exp(logits.detach().numpy()).sum(-1, keepdims=True))
    np.testing.assert_allclose(d.log_prob(gt.tensor([2, 1])).detach().numpy(), [lp[0, 2], lp[1, 1]], rtol=1e-5)
    np.testing.assert_allclose(d.entropy().detach().numpy(), -(np.exp(lp) * lp).sum(-1), rtol=1e-5)
    s = d.sample((500,))
    assert s.shape == (500, 2) and s.dtype == gt.int64 and not s.requires_grad
    freq = np.bincount(s.numpy()[:, 0], minlength=3) / 500
    np.testing.assert_allclose(freq, np.exp(lp[0]), atol=0.07)
    (-d.log_prob(gt.tensor([2, 0])).sum()).backward()  # REINFORCE with advantage 1
    want = np.exp(lp)
    want[0, 2] -= 1
    want[1, 0] -= 1
    np.testing.assert_allclose(logits.grad.numpy(), want, rtol=1e-5, atol=1e-6)
    p = Categorical(probs=gt.tensor([1.0, 3.0]))
    np.testing.assert_allclose(p.probs.numpy(), [0.25, 0.75])
    with pytest.raises(ValueError, match="not both"):
        Categorical(probs=gt.ones(2), logits=gt.ones(2))


def test_normal_log_prob_rsample_gradients_and_kl():
    gt.manual_seed(1)
    loc = gt.tensor([0.0, 1.0], requires_grad=True)
    scale = gt.tensor([1.0, 2.0], requires_grad=True)
    d = Normal(loc, scale)
    x = np.array([0.5, -1.0])
    want = -((x - [0, 1]) ** 2) / (2 * np.array([1, 4.0])) - np.log([1, 2.0]) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(d.log_prob(gt.tensor(x, dtype=gt.float32)).detach().numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(d.entropy().detach().numpy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log([1, 2.0]),
                               rtol=1e-6)
    r = d.rsample((1000,))
    assert r.shape == (1000, 2) and r.requires_grad and not d.sample((3,)).requires_grad
    r.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1000, 1000])  # d(loc + scale * eps)/dloc
    assert abs(r.detach().numpy()[:, 1].std() - 2.0) < 0.2 and abs(r.detach().numpy()[:, 1].mean() - 1.0) < 0.2
    np.testing.assert_allclose(d.icdf(d.cdf(gt.tensor([0.3, 2.5]))).detach().numpy(), [0.3, 2.5], rtol=1e-4)
    q = Normal(1.0, 3.0)
    kl = kl_divergence(Normal(0.0, 1.0), q).item()
    assert kl == pytest.approx(math.log(3) + (1 + 1) / (2 * 9) - 0.5, rel=1e-5)
    assert Normal(0.0, gt.ones(3)).batch_shape == (3,)


def test_bernoulli_uniform_and_categorical_kl():
    gt.manual_seed(2)
    b = Bernoulli(probs=gt.tensor([0.2, 0.9]))
    v = np.array([1.0, 0.0])
    np.testing.assert_allclose(b.log_prob(gt.tensor(v, dtype=gt.float32)).numpy(), np.log([0.2, 0.1]), rtol=1e-5)
    s = b.sample((200,))
    assert s.shape == (200, 2) and set(np.unique(s.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(b.entropy().numpy(), -(np.array([.2, .9]) * np.log([.2, .9]) +
                                                      np.array([.8, .1]) * np.log([.8, .1])), rtol=1e-5)
    u = Uniform(0.0, 2.0, validate_args=False)  # (validated, 3.0 outside the support raises, as PyTorch's)
    np.testing.assert_allclose(u.log_prob(gt.tensor([1.0, 3.0])).numpy(), [-math.log(2), -np.inf])
    assert u.rsample((100,)).numpy().max() < 2.0 and u.mean.item() == 1.0
    p, q = np.array([0.1, 0.6, 0.3]), np.array([0.3, 0.3, 0.4])
    kl = kl_divergence(Categorical(probs=gt.tensor(p, dtype=gt.float32)), Categorical(probs=gt.tensor(q, dtype=gt.float32)))
    assert kl.item() == pytest.approx(float((p * np.log(p / q)).sum()), rel=1e-5)
    with pytest.raises(NotImplementedError):
        kl_divergence(Normal(0.0, 1.0), u)


def _np_mvn_log_prob(x, mean, cov):
    k = mean.shape[-1]
    d = x - mean
    sol = np.linalg.solve(cov, d[..., None])[..., 0]
    return -0.5 * (k * np.log(2 * np.pi) + (d * sol).sum(-1) + np.linalg.slogdet(cov)[1])


def test_multivariate_normal_from_each_parametrization():
    rng = np.random.default_rng(5)
    loc = rng.standard_normal((2, 3))
    a = rng.standard_normal((2, 3, 3))
    cov = a @ a.transpose(0, 2, 1) + np.eye(3)
    x = rng.standard_normal((4, 2, 3))
    for kwargs in ({"covariance_matrix": gt.tensor(cov)}, {"precision_matrix": gt.tensor(np.linalg.inv(cov))},
                   {"scale_tril": gt.tensor(np.linalg.cholesky(cov))}):
        d = D.MultivariateNormal(gt.tensor(loc), **kwargs)
        assert d.batch_shape == (2,) and d.event_shape == (3,)
        np.testing.assert_allclose(d.log_prob(gt.tensor(x)).numpy(), _np_mvn_log_prob(x, loc, cov), rtol=1e-8)
        np.testing.assert_allclose(d.entropy().numpy(), 0.5 * (3 * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1]),
                                   rtol=1e-10)
        np.testing.assert_allclose(d.covariance_matrix.numpy(), cov, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(d.variance.numpy(), np.diagonal(cov, 0, -2, -1), rtol=1e-8)
    q_loc, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3, 3))
    q_cov = b @ b.transpose(0, 2, 1) + np.eye(3)
    p, q = D.MultivariateNormal(gt.tensor(loc), gt.tensor(cov)), D.MultivariateNormal(gt.tensor(q_loc), gt.tensor(q_cov))
    qi = np.linalg.inv(q_cov)
    dm = q_loc - loc
    expected = 0.5 * (np.trace(qi @ cov, axis1=-2, axis2=-1) + np.einsum("bi,bij,bj->b", dm, qi, dm) - 3
                      + np.linalg.slogdet(q_cov)[1] - np.linalg.slogdet(cov)[1])
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), expected, rtol=1e-8)
    with pytest.raises(ValueError, match="Exactly one"):
        D.MultivariateNormal(gt.tensor(loc))


def test_multivariate_normal_samples_and_reparameterized_gradient():
    gt.manual_seed(0)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]], np.float32)
    loc = gt.tensor([1.0, -1.0], requires_grad=True)
    d = D.MultivariateNormal(loc, covariance_matrix=gt.tensor(cov))
    s = d.rsample((20000,))
    assert s.shape == (20000, 2)
    a = s.detach().numpy()
    np.testing.assert_allclose(a.mean(0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(a.T), cov, atol=0.08)
    s.mean(0).sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0], rtol=1e-3)  # (a float32 mean of 20000 ones)


def test_exponential_laplace_lognormal_and_independent():
    rng = np.random.default_rng(6)
    rate, loc, scale = rng.random(3) + 0.5, rng.standard_normal(3), rng.random(3) + 0.5
    x = rng.random(3) * 2 + 0.1
    e = D.Exponential(gt.tensor(rate))
    np.testing.assert_allclose(e.log_prob(gt.tensor(x)).numpy(), np.log(rate) - rate * x, rtol=1e-10)
    np.testing.assert_allclose(e.cdf(gt.tensor(x)).numpy(), 1 - np.exp(-rate * x), rtol=1e-10)
    np.testing.assert_allclose(e.entropy().numpy(), 1 - np.log(rate), rtol=1e-10)
    lap = D.Laplace(gt.tensor(loc), gt.tensor(scale))
    np.testing.assert_allclose(lap.log_prob(gt.tensor(x)).numpy(), -np.log(2 * scale) - np.abs(x - loc) / scale,
                               rtol=1e-10)
    np.testing.assert_allclose(lap.cdf(gt.tensor(x)).numpy(),
                               np.where(x < loc, 0.5 * np.exp((x - loc) / scale), 1 - 0.5 * np.exp(-(x - loc) / scale)),
                               rtol=1e-10)
    ln = D.LogNormal(gt.tensor(loc), gt.tensor(scale))
    np.testing.assert_allclose(ln.log_prob(gt.tensor(x)).numpy(),
                               -np.log(x * scale * np.sqrt(2 * np.pi)) - (np.log(x) - loc) ** 2 / (2 * scale ** 2),
                               rtol=1e-10)
    np.testing.assert_allclose(ln.mean.numpy(), np.exp(loc + scale ** 2 / 2), rtol=1e-10)
    gt.manual_seed(1)
    for dist, mean, var in ((e, 1 / rate, rate ** -2), (lap, loc, 2 * scale ** 2)):
        a = dist.sample((40000,)).numpy()
        np.testing.assert_allclose(a.mean(0), mean, atol=0.05 * np.sqrt(var).max() + 0.02)
        np.testing.assert_allclose(a.var(0), var, rtol=0.1)
    kl = D.kl_divergence(D.Exponential(gt.tensor(rate)), D.Exponential(gt.tensor(2 * rate)))
    np.testing.assert_allclose(kl.numpy(), np.full(3, 2 - 1 - np.log(2)), rtol=1e-10)
    ind = D.Independent(D.Normal(gt.tensor(np.zeros((4, 3))), gt.tensor(np.ones((4, 3)))), 1)
    assert ind.batch_shape == (4,) and ind.event_shape == (3,)
    v = rng.standard_normal((4, 3))
    np.testing.assert_allclose(ind.log_prob(gt.tensor(v)).numpy(), (-v ** 2 / 2 - 0.5 * np.log(2 * np.pi)).sum(-1),
                               rtol=1e-10)
    other = D.Independent(D.Normal(gt.tensor(np.ones((4, 3))), gt.tensor(np.ones((4, 3)))), 1)
    np.testing.assert_allclose(D.kl_divergence(ind, other).numpy(), np.full(4, 1.5), rtol=1e-10)


lg = np.vectorize(math.lgamma)


def _digamma(x, h=1e-5):  # lgamma's slope, for the references below
    return (lg(x + h) - lg(x - h)) / (2 * h)


def test_gamma_chi2_log_prob_entropy_moments_and_kl_are_pytorchs_formulas():
    a, b = np.array([0.5, 2.0, 9.0]), np.array([1.0, 3.0, 0.5])
    g = D.Gamma(gt.tensor(a), gt.tensor(b))
    x = np.array([0.3, 0.5, 20.0])
    np.testing.assert_allclose(g.log_prob(gt.tensor(x)).numpy(), a * np.log(b) + (a - 1) * np.log(x) - b * x - lg(a),
                               rtol=1e-12)
    np.testing.assert_allclose(g.entropy().numpy(), a - np.log(b) + lg(a) + (1 - a) * _digamma(a), rtol=1e-8)
    np.testing.assert_allclose(g.mean.numpy(), a / b)
    np.testing.assert_allclose(g.variance.numpy(), a / b ** 2)
    q = D.Gamma(gt.tensor([1.0, 1.5, 2.0], dtype=gt.float64), gt.tensor([1.0, 1.0, 2.0], dtype=gt.float64))
    aq, bq = np.array([1.0, 1.5, 2.0]), np.array([1.0, 1.0, 2.0])
    want = (a - aq) * _digamma(a) - lg(a) + lg(aq) + aq * (np.log(b) - np.log(bq)) + a * (bq - b) / b
    np.testing.assert_allclose(kl_divergence(g, q).numpy(), want, rtol=1e-8)
    c = D.Chi2(gt.tensor([3.0]))
    np.testing.assert_allclose(c.mean.numpy(), [3.0])
    np.testing.assert_allclose(c.log_prob(gt.tensor([2.0])).numpy(),
                               [0.5 * math.log(2.0) - 1.0 - 0.5 * math.log(2) * 3 - math.lgamma(1.5)], rtol=1e-6)
    # the CDF: gammainc(a, b x); Gamma(2, 3) has the closed form 1 - e^(-3x) (1 + 3x)
    np.testing.assert_allclose(g.cdf(gt.tensor(x)).numpy(), gt.special.gammainc(gt.tensor(a), gt.tensor(b * x)).numpy(),
                               rtol=1e-12)
    v = np.array([0.1, 1.0, 4.0])
    np.testing.assert_allclose(D.Gamma(gt.tensor(2.0, dtype=gt.float64), 3.0).cdf(gt.tensor(v)).numpy(),
                               1 - np.exp(-3 * v) * (1 + 3 * v), rtol=1e-12)


def test_gamma_beta_dirichlet_rsample_gradients_match_the_moments():
    # Implicit reparameterization: d/da of a Monte Carlo moment through rsample approaches the
    # moment's derivative: E[z] = a / b, E[z^2] = a (a + 1) / b^2; Beta's mean a / (a + b);
    # Dirichlet's mean a_i / sum(a).
    gt.manual_seed(0)
    n = 40000
    a = gt.tensor([0.4, 2.0, 9.0], requires_grad=True)
    b = gt.tensor([1.0, 2.0, 0.5], requires_grad=True)
    g = D.Gamma(a, b)
    assert g.has_rsample
    z = g.rsample((n,))
    assert z.shape == (n, 3) and z.requires_grad
    ((z * z).mean(0)).sum().backward()
    av, bv = np.array([0.4, 2.0, 9.0]), np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose(a.grad.numpy(), (2 * av + 1) / bv ** 2, rtol=0.05)
    np.testing.assert_allclose(b.grad.numpy(), -2 * av * (av + 1) / bv ** 3, rtol=0.05)
    c1, c0 = gt.tensor([0.7, 3.0], requires_grad=True), gt.tensor([1.5, 2.0], requires_grad=True)
    D.Beta(c1, c0).rsample((n,)).mean(0).sum().backward()
    x1, x0 = np.array([0.7, 3.0]), np.array([1.5, 2.0])
    np.testing.assert_allclose(c1.grad.numpy(), x0 / (x1 + x0) ** 2, rtol=0.05)
    np.testing.assert_allclose(c0.grad.numpy(), -x1 / (x1 + x0) ** 2, rtol=0.05)
    alpha = gt.tensor([0.5, 1.0, 2.5], requires_grad=True)
    D.Dirichlet(alpha).rsample((n,))[:, 0].mean().backward()
    al = np.array([0.5, 1.0, 2.5])
    want = -al[0] / al.sum() ** 2 * np.ones(3)
    want[0] += 1 / al.sum()
    np.testing.assert_allclose(alpha.grad.numpy(), want, rtol=0.05, atol=0.005)
    with gt.no_grad():
        assert not D.Gamma(a, b).rsample((2,)).requires_grad


def test_gamma_samples_have_the_moments_on_both_sides_of_concentration_one():
    gt.manual_seed(0)
    a, b = np.array([0.3, 1.0, 2.5, 40.0]), np.array([1.0, 2.0, 0.5, 4.0])
    s = D.Gamma(gt.tensor(a), gt.tensor(b)).sample((40000,))
    assert s.shape == (40000, 4) and not s.requires_grad
    v = s.numpy().astype(np.float64)
    assert (v > 0).all()
    mean, var = a / b, a / b ** 2
    assert (np.abs(v.mean(0) - mean) <= 5 * np.sqrt(var / 40000)).all(), (v.mean(0), mean)  # 5 standard errors
    np.testing.assert_allclose(v.var(0), var, rtol=0.05)
    # Another seed, other samples; the same seed, the same samples.
    gt.manual_seed(0)
    np.testing.assert_array_equal(D.Gamma(gt.tensor(a), gt.tensor(b)).sample((40000,)).numpy(), s.numpy())


def test_beta_and_dirichlet_samples_log_prob_entropy_and_kl():
    gt.manual_seed(1)
    beta = D.Beta(gt.tensor([2.0, 0.5], dtype=gt.float64), gt.tensor([5.0, 0.5], dtype=gt.float64))
    x = beta.sample((30000,)).numpy()
    assert x.shape == (30000, 2) and ((x > 0) & (x < 1)).all()
    a, b = np.array([2.0, 0.5]), np.array([5.0, 0.5])
    np.testing.assert_allclose(x.mean(0), a / (a + b), atol=0.01)
    np.testing.assert_allclose(beta.variance.numpy(), a * b / ((a + b) ** 2 * (a + b + 1)))
    lbeta = lg(a) + lg(b) - lg(a + b)
    np.testing.assert_allclose(beta.log_prob(gt.tensor([0.3, 0.9], dtype=gt.float64)).numpy(),
                               (a - 1) * np.log([0.3, 0.9]) + (b - 1) * np.log([0.7, 0.1]) - lbeta, rtol=1e-12)
    np.testing.assert_allclose(beta.entropy().numpy(), lbeta - (a - 1) * _digamma(a) - (b - 1) * _digamma(b)
                               + (a + b - 2) * _digamma(a + b), rtol=1e-7)
    alpha = np.array([[1.0, 2.0, 3.0], [0.4, 0.4, 5.0]])
    d = D.Dirichlet(gt.tensor(alpha))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    s = d.sample((20000,)).numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(s.mean(0), alpha / alpha.sum(-1, keepdims=True), atol=0.01)
    p = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    a0 = alpha.sum(-1)
    np.testing.assert_allclose(d.log_prob(gt.tensor(p)).numpy(),
                               ((alpha - 1) * np.log(p)).sum(-1) + lg(a0) - lg(alpha).sum(-1), rtol=1e-12)
    flat = D.Dirichlet(gt.tensor(np.ones((2, 3))))
    want = (lg(a0) - lg(alpha).sum(-1) - lg(3.0) + lg(np.ones(3)).sum()
            + ((alpha - 1) * (_digamma(alpha) - _digamma(a0)[:, None])).sum(-1))
    np.testing.assert_allclose(kl_divergence(d, flat).numpy(), want, rtol=1e-7)


def test_poisson_log_prob_and_samples():
    gt.manual_seed(2)
    rate = gt.tensor([0.5, 3.0, 40.0], dtype=gt.float64)
    p = D.Poisson(rate)
    k = np.array([0.0, 2.0, 37.0])
    np.testing.assert_allclose(p.log_prob(gt.tensor(k)).numpy(),
                               k * np.log([0.5, 3.0, 40.0]) - np.array([0.5, 3.0, 40.0]) - lg(k + 1), rtol=1e-12)
    s = p.sample((20000,)).numpy()
    assert s.shape == (20000, 3) and (s == np.round(s)).all() and (s >= 0).all()
    np.testing.assert_allclose(s.mean(0), [0.5, 3.0, 40.0], rtol=0.03)


def test_arguments_are_validated_at_the_next_wait_naming_the_parameter():
    # PyTorch checks at once (a device sync); GT records the check and reads it with the next value
    d = Categorical(logits=gt.tensor([[float("nan"), 0.0]]))
    with pytest.raises(ValueError, match=r"Expected parameter logits \(Tensor of shape \(1, 2\)\) of distribution "
                                         r"Categorical\(logits: torch.Size\(\[1, 2\]\)\)|Categorical\(logits: gt.Size"):
        gt.ones(1).item()
    with pytest.raises(ValueError, match=r"(?s)parameter scale .* GreaterThan\(lower_bound=0.0\).*checked at .*test_distr"):
        Normal(0.0, -1.0).sample().numpy()
    with pytest.raises(ValueError, match=r"within the support \(IntegerInterval\(lower_bound=0, upper_bound=3\)\)"):
        Categorical(logits=gt.zeros(4)).log_prob(gt.tensor(4)).item()
    with pytest.raises(ValueError, match=r"support \(Boolean\(\)\)"):
        Bernoulli(probs=gt.tensor([0.3])).log_prob(gt.tensor([0.5])).item()
    with pytest.raises(ValueError, match="must match event_shape"):  # shapes: at once, as PyTorch
        D.Dirichlet(gt.ones(3)).log_prob(gt.ones(4))
    Normal(0.0, -1.0, validate_args=False).log_prob(gt.tensor(0.0)).item()  # no check asked: no error
    D.Distribution.set_default_validate_args(False)
    try:
        Normal(0.0, -1.0).log_prob(gt.tensor(0.0)).item()
    finally:
        D.Distribution.set_default_validate_args(True)
    assert math.isnan(Normal(gt.tensor([0.0]), 1.0, validate_args=False).log_prob(gt.tensor([float("nan")])).item())


def test_kl_is_inf_where_q_gives_no_probability_and_register_kl_adds_pairs():
    p = Categorical(probs=gt.tensor([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]))
    q = Categorical(probs=gt.tensor([[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]]))
    kl = kl_divergence(p, q).tolist()
    assert kl[0] == float("inf") and abs(kl[1]) < 1e-6
    assert kl_divergence(Bernoulli(probs=gt.tensor([0.3, 0.3, 0.0, 1.0])),
                         Bernoulli(probs=gt.tensor([0.0, 1.0, 0.0, 1.0]))).tolist() == [float("inf")] * 2 + [0.0] * 2
    rate_p, rate_q = gt.tensor([1.0, 3.0]), gt.tensor([2.0, 3.0])
    expected = [1.0 * math.log(0.5) + 1.0, 0.0]
    np.testing.assert_allclose(kl_divergence(D.Poisson(rate_p), D.Poisson(rate_q)).numpy(), expected, atol=1e-6)
    with pytest.raises(NotImplementedError, match="No KL"):
        kl_divergence(Normal(0.0, 1.0), D.Laplace(0.0, 1.0))

    @D.register_kl(Normal, D.Laplace)
    def _kl_normal_laplace(p, q):
        return p.loc * 0 + 42.0
    try:
        assert kl_divergence(Normal(0.0, 1.0), D.Laplace(0.0, 1.0)).item() == 42.0
    finally:
        D._KL_REGISTRY.clear()
    from gt.distributions.kl import kl_divergence as kl_from_file  # torch.distributions.<file> imports
    from gt.distributions.categorical import Categorical as C2
    from gt.distributions.normal import Normal as N2
    assert kl_from_file is kl_divergence and C2 is Categorical and N2 is Normal


def test_pytorch_attributes_repr_mode_expand_and_enumerate_support():
    d = Normal(gt.zeros(5, 3), gt.ones(5, 3))
    assert repr(d) == "Normal(loc: gt.Size([5, 3]), scale: gt.Size([5, 3]))" and d.mode.shape == (5, 3)
    assert isinstance(d.batch_shape, gt.Size) and d.event_shape == ()
    assert repr(Categorical(logits=gt.zeros(2, 4))) == "Categorical(logits: gt.Size([2, 4]))"
    assert repr(D.Independent(d, 1)).startswith("Independent(Normal(loc: gt.Size([5, 3])") and d.support is not None
    assert Normal(gt.tensor(0.1, dtype=gt.float64), 1.0).scale.dtype == gt.float64
    assert Normal(0.1, gt.tensor(1.0, dtype=gt.float64)).loc.dtype == gt.float64  # numbers take a tensor's dtype
    c = Categorical(probs=gt.tensor([[0.2, 0.5, 0.3]]))
    assert c.mode.tolist() == [1] and c.enumerate_support().tolist() == [[0], [1], [2]]
    assert c.expand((4, 1)).batch_shape == (4, 1)
    np.testing.assert_allclose(c.perplexity().numpy(), np.exp(c.entropy().numpy()), rtol=1e-6)
    b = Bernoulli(probs=gt.tensor([0.2, 0.5, 0.7]))
    mode = b.mode.tolist()
    assert mode[0] == 0.0 and math.isnan(mode[1]) and mode[2] == 1.0
    e = Normal(gt.zeros(3), 1.0).expand((2, 3))
    assert e.batch_shape == (2, 3) and e.sample().shape == (2, 3)
    assert D.Independent(Normal(gt.zeros(3), 1.0), 1).expand((4,)).batch_shape == (4,)
    with pytest.raises(NotImplementedError):
        D.Poisson(gt.ones(2)).entropy()
    u = Uniform(gt.tensor([0.0]), gt.tensor([4.0]))
    assert u.cdf(gt.tensor([1.0])).tolist() == [0.25] and u.icdf(gt.tensor([0.5])).tolist() == [2.0]


def test_one_hot_categorical_and_tanh_squashed_normal():
    oh = D.OneHotCategorical(probs=gt.tensor([0.1, 0.6, 0.3]))
    s = oh.sample((200,))
    assert s.shape == (200, 3) and s.sum(-1).tolist() == [1.0] * 200 and oh.event_shape == (3,)
    np.testing.assert_allclose(oh.log_prob(gt.tensor([0.0, 1.0, 0.0])).item(), math.log(0.6), rtol=1e-6)
    assert oh.enumerate_support().shape == (3, 3)
    # SAC's policy: log pi(a) = log N(x) - sum log(1 - tanh(x)^2), a = tanh(x)
    from gt.distributions.transforms import TanhTransform, AffineTransform, ComposeTransform
    mu, std = gt.tensor([0.3, -1.2]), gt.tensor([0.5, 0.8])
    pi = D.TransformedDistribution(Normal(mu, std), [TanhTransform(cache_size=1)])
    x = gt.tensor([0.4, -2.5])
    a = TanhTransform()(x)
    base = Normal(mu, std).log_prob(x).numpy()
    expected = base - np.log(1 - np.tanh(x.numpy()) ** 2)
    np.testing.assert_allclose(pi.log_prob(a).numpy(), expected, rtol=1e-4)
    action = pi.rsample((3,))
    assert action.shape == (3, 2) and float(action.abs().max()) < 1
    affine = D.TransformedDistribution(Normal(0.0, 1.0), ComposeTransform([AffineTransform(1.0, 2.0)]))
    np.testing.assert_allclose(affine.log_prob(gt.tensor(3.0)).item(), Normal(1.0, 2.0).log_prob(gt.tensor(3.0)).item(),
                               rtol=1e-6)


def test_foreach_functions_soft_update():
    target, online = [gt.zeros(2), gt.ones(3)], [gt.ones(2), gt.full((3,), 3.0)]
    gt._foreach_lerp_(target, online, 0.5)  # a soft target-network update
    assert target[0].tolist() == [0.5, 0.5] and target[1].tolist() == [2.0] * 3
    gt._foreach_mul_(target, 2.0)
    gt._foreach_add_(target, online, alpha=-1.0)
    assert target[0].tolist() == [0.0, 0.0] and target[1].tolist() == [1.0] * 3
    assert [t.tolist() for t in gt._foreach_add(online, 1.0)] == [[2.0, 2.0], [4.0] * 3]
    gt._foreach_zero_(online)
    assert online[1].tolist() == [0.0] * 3


def test_distribution_protocol_libraries_subclass_and_mvn_repr():
    # gpytorch's MultivariateNormal sets _batch_shape / reads utils' private helpers
    d = gt.distributions.Normal(gt.zeros(3), 1.0)
    assert d._batch_shape == (3,) and d._event_shape == ()
    d._event_shape = (3,)
    assert d.event_shape == (3,) and type(d.event_shape) is gt.Size
    from gt.distributions import utils
    assert utils._sum_rightmost(gt.ones(2, 3, 4), 2).tolist() == [12.0, 12.0]
    assert utils._standard_normal((2, 3), dtype=gt.float64, device="cpu").dtype == gt.float64

    class Cached:
        calls = 0

        @utils.lazy_property
        def value(self):
            Cached.calls += 1
            return 5

    c = Cached()
    assert c.value == 5 and c.value == 5 and Cached.calls == 1
    mvn = gt.distributions.MultivariateNormal(gt.zeros(2), covariance_matrix=gt.eye(2))
    assert repr(mvn) == "MultivariateNormal(loc: gt.Size([2]), covariance_matrix: gt.Size([2, 2]))"
    assert "scale_tril: gt.Size([2, 2])" in repr(gt.distributions.MultivariateNormal(gt.zeros(2), scale_tril=gt.eye(2)))
    s = gt.tensor([3.0, 1.0, 2.0])
    assert gt.searchsorted(s, gt.tensor([1.5, 2.5]), sorter=gt.argsort(s)).tolist() == [1, 2]
