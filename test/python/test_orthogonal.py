"""gt.linalg.matrix_exp and the orthogonal parametrization (torch.nn.utils.parametrizations.orthogonal)."""
import numpy as np
import pytest

import gt
from gt.nn.utils import parametrizations as P

RNG = np.random.default_rng(0)


def expm_np(a):
    """exp of a diagonalizable real matrix through its eigendecomposition (float64)."""
    w, v = np.linalg.eig(a)
    return np.real(v @ (np.exp(w)[..., None] * np.linalg.inv(v)))


@pytest.mark.parametrize("scale", [0.1, 1.0, 20.0])  # no squaring, a few, many
def test_matrix_exp_matches_the_eigendecomposition(scale):
    a = RNG.standard_normal((3, 5, 5)) * scale / 5
    np.testing.assert_allclose(gt.linalg.matrix_exp(gt.tensor(a)).numpy(), expm_np(a), rtol=1e-9, atol=1e-12)
    f = gt.linalg.matrix_exp(gt.tensor(a.astype(np.float32))).numpy()
    np.testing.assert_allclose(f, expm_np(a), rtol=2e-4, atol=1e-5)
    assert gt.matrix_exp is gt.linalg.matrix_exp


def test_matrix_exp_of_a_skew_symmetric_matrix_is_orthogonal_and_differentiable():
    a = RNG.standard_normal((4, 4))
    q = gt.linalg.matrix_exp(gt.tensor(a - a.T)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-12)
    w = RNG.standard_normal((4, 4))
    A = gt.tensor(a, requires_grad=True)
    (gt.linalg.matrix_exp(A) * gt.tensor(w)).sum().backward()
    eps, numeric = 1e-6, np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        numeric[i] = ((expm_np(a + d) - expm_np(a - d)) * w).sum() / (2 * eps)
    np.testing.assert_allclose(A.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape,orthogonal_map", [((4, 4), "matrix_exp"), ((3, 5), "matrix_exp"),
                                                  ((6, 2), "cayley"), ((4, 4), "cayley"), ((6, 3), "householder"),
                                                  ((2, 5), "householder"), ((4, 4), "householder")])
def test_an_orthogonal_weight_starts_orthogonalized_and_stays_orthogonal(shape, orthogonal_map):
    gt.manual_seed(0)
    m = gt.nn.Linear(shape[1], shape[0], bias=False)
    w0 = m.weight.numpy().astype(np.float64)
    P.orthogonal(m, orthogonal_map=orthogonal_map)

    def gram(w):
        return w @ w.T if shape[0] <= shape[1] else w.T @ w
    w = m.weight.numpy()
    np.testing.assert_allclose(gram(w), np.eye(min(shape)), atol=1e-5)
    if shape[0] == shape[1]:  # the QR of the original, diagonal of R made positive
        q, r = np.linalg.qr(w0)
        np.testing.assert_allclose(w, q * np.sign(np.diag(r)), atol=1e-5)
    assert list(m.state_dict()) == ["parametrizations.weight.original", "parametrizations.weight.0.base"]
    opt = gt.optim.SGD(m.parameters(), lr=0.1)
    x, target = gt.randn(16, shape[1]), gt.randn(16, shape[0])
    for _ in range(3):
        loss = ((m(x) - target) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    w2 = m.weight.numpy()
    assert np.abs(w2 - w).max() > 1e-3  # it trained
    np.testing.assert_allclose(gram(w2), np.eye(min(shape)), atol=1e-5)  # and stayed orthogonal


def test_householder_product_is_qrs_q_and_differentiable():
    for shape in ((5, 3), (4, 4), (2, 6, 2)):
        a = RNG.standard_normal(shape)
        h, tau = gt.geqrf(gt.tensor(a))
        q, r = np.linalg.qr(a)
        np.testing.assert_allclose(gt.linalg.householder_product(h, tau).numpy(), q, atol=1e-13)
        np.testing.assert_allclose(np.triu(h.numpy())[..., :shape[-1], :], r, atol=1e-13)
        assert gt.orgqr is gt.linalg.householder_product
    # gradient in A and tau against central differences of the same product in NumPy
    a, t = RNG.standard_normal((4, 3)), RNG.uniform(0.5, 1.5, 2)

    def product(a, t):
        v = np.tril(a, -1) + np.eye(4, 3)
        q = np.eye(4)[:, :3]
        for i in reversed(range(2)):
            q = q - t[i] * np.outer(v[:, i], v[:, i] @ q)
        return q
    w = RNG.standard_normal((4, 3))
    A, T = gt.tensor(a, requires_grad=True), gt.tensor(t, requires_grad=True)
    (gt.linalg.householder_product(A, T) * gt.tensor(w)).sum().backward()
    for x, g, f in ((a, A.grad, lambda d: product(a + d, t)), (t, T.grad, lambda d: product(a, t + d))):
        numeric = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            d = np.zeros_like(x)
            d[i] = 1e-6
            numeric[i] = ((f(d) - f(-d)) * w).sum() / 2e-6
        np.testing.assert_allclose(g.numpy(), numeric, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="k <= n <= m"):
        gt.linalg.householder_product(gt.zeros(2, 3), gt.zeros(1))


def test_householder_is_the_default_for_a_non_square_weight_and_assigns_without_trivialization():
    m = P.orthogonal(gt.nn.Linear(3, 5))
    assert m.parametrizations.weight[0].orthogonal_map == "householder"
    assert P.orthogonal(gt.nn.Linear(4, 4)).parametrizations.weight[0].orthogonal_map == "matrix_exp"
    gt.manual_seed(0)
    m = gt.nn.Linear(3, 6, bias=False)
    w0 = m.weight.numpy().astype(np.float64)
    P.orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    w = m.weight.numpy()
    q, r = np.linalg.qr(w0)  # the original's own Q, columns signed so that R's diagonal is positive
    np.testing.assert_allclose(w, q * np.sign(np.diag(r)), atol=1e-5)
    assert list(m.state_dict()) == ["parametrizations.weight.original"]


def test_orthogonal_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        P.orthogonal(gt.nn.Linear(3, 2), name="bias")
    # without trivialization the weight cannot be assigned (PyTorch's NotImplementedError); at
    # registration the original starts as the weight itself, as PyTorch's
    lin = P.orthogonal(gt.nn.Linear(3, 3), use_trivialization=False)
    q = lin.weight.detach().numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(3), atol=1e-5)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        lin.weight = gt.eye(3)
