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
                                                  ((6, 2), "cayley"), ((4, 4), "cayley")])
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


def test_orthogonal_refuses_what_it_cannot_do():
    with pytest.raises(NotImplementedError, match="householder"):
        P.orthogonal(gt.nn.Linear(3, 2), orthogonal_map="householder")
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        P.orthogonal(gt.nn.Linear(3, 2), name="bias")
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        P.orthogonal(gt.nn.Linear(3, 3), use_trivialization=False)
