"""gt.linalg's factorizations and solvers: values against NumPy in float64, gradients against
central differences of NumPy float64 functions, errors as PyTorch raises them, the torch.*
spellings and Tensor methods."""
import numpy as np
import pytest

import gt

rng = np.random.default_rng(7)


def numeric_grad(f, a, eps=1e-6):
    """d f / d a by central differences (f: a float64 array -> a number)."""
    out = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        out[i] = (f(hi) - f(lo)) / (2 * eps)
    return out


def check(gt_fn, np_fn, a, rtol=1e-6, atol=1e-8):
    """gt_fn(A) (a tensor or tuple of tensors) equals np_fn(a); the gradient of a random
    weighting of the outputs matches central differences of the same weighting of np_fn."""
    A = gt.tensor(a, requires_grad=True)
    outs = gt_fn(A)
    outs = tuple(outs) if isinstance(outs, tuple) else (outs,)
    expected = np_fn(a)
    expected = tuple(expected) if isinstance(expected, tuple) else (expected,)
    weights = [rng.standard_normal(np.shape(e)) for e in expected]
    loss = 0.0
    for o, e, w in zip(outs, expected, weights):
        np.testing.assert_allclose(o.detach().numpy(), e, rtol=rtol, atol=atol)
        loss = loss + (o * gt.tensor(w)).sum()
    loss.backward()
    f = lambda x: sum(float((np.asarray(e) * w).sum()) for e, w in zip(
        (lambda r: tuple(r) if isinstance(r, tuple) else (r,))(np_fn(x)), weights))
    np.testing.assert_allclose(A.grad.numpy(), numeric_grad(f, a), rtol=1e-5, atol=1e-6)


A = rng.standard_normal((2, 4, 4))
SPD = A @ A.transpose(0, 2, 1) + 4 * np.eye(4)
TALL = rng.standard_normal((2, 5, 3))


def test_inv_det_slogdet_and_solve_match_numpy_with_gradients():
    check(gt.linalg.inv, np.linalg.inv, A)
    check(gt.linalg.det, np.linalg.det, A)
    check(lambda x: gt.linalg.slogdet(x)[1], lambda x: np.linalg.slogdet(x)[1], A)
    B = rng.standard_normal((2, 4, 3))
    check(lambda x: gt.linalg.solve(x, gt.tensor(B)), lambda x: np.linalg.solve(x, B), A)
    b = rng.standard_normal((2, 4))
    check(lambda x: gt.linalg.solve(x, gt.tensor(b)), lambda x: np.linalg.solve(x, b[..., None])[..., 0], A)
    Bt = rng.standard_normal((2, 3, 4))  # X A = B
    check(lambda x: gt.linalg.solve(x, gt.tensor(Bt), left=False),
          lambda x: np.swapaxes(np.linalg.solve(np.swapaxes(x, -1, -2), np.swapaxes(Bt, -1, -2)), -1, -2), A)


def test_solve_gradient_reaches_b_and_broadcast_a():
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((3, 4, 2))  # one A for a batch of right-hand sides
    Aa, Bb = gt.tensor(a, requires_grad=True), gt.tensor(b, requires_grad=True)
    w = rng.standard_normal((3, 4, 2))
    (gt.linalg.solve(Aa, Bb) * gt.tensor(w)).sum().backward()
    f_a = lambda x: float((np.linalg.solve(x, b) * w).sum())
    f_b = lambda y: float((np.linalg.solve(a, y) * w).sum())
    np.testing.assert_allclose(Aa.grad.numpy(), numeric_grad(f_a, a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(Bb.grad.numpy(), numeric_grad(f_b, b), rtol=1e-5, atol=1e-6)


def test_solve_gradient_reaches_a_b_broadcast_over_a_batch_of_a():
    a = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 2))  # one B for a batch of A
    Aa, Bb = gt.tensor(a, requires_grad=True), gt.tensor(b, requires_grad=True)
    w = rng.standard_normal((3, 4, 2))
    (gt.linalg.solve(Aa, Bb) * gt.tensor(w)).sum().backward()
    f_b = lambda y: float((np.linalg.solve(a, y) * w).sum())
    np.testing.assert_allclose(Bb.grad.numpy(), numeric_grad(f_b, b), rtol=1e-5, atol=1e-6)
    u = np.triu(a)
    Uu, Bt = gt.tensor(u, requires_grad=True), gt.tensor(b, requires_grad=True)
    (gt.linalg.solve_triangular(Uu, Bt, upper=True) * gt.tensor(w)).sum().backward()
    np.testing.assert_allclose(Bt.grad.numpy(), numeric_grad(lambda y: float((np.linalg.solve(u, y) * w).sum()), b),
                               rtol=1e-5, atol=1e-6)


def test_det_gradient_of_a_singular_matrix_is_its_cofactor_matrix():
    s = A[0].copy()
    s[3] = s[2]  # rank 3: det 0, yet the gradient (the cofactors) is not
    S = gt.tensor(s, requires_grad=True)
    gt.linalg.det(S).backward()
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(s, i, 0), j, 1)) for j in range(4)]
                    for i in range(4)])
    np.testing.assert_allclose(S.grad.numpy(), cof, rtol=1e-6, atol=1e-9)
    assert np.abs(cof).max() > 0.1


def test_cholesky_lower_and_upper():
    # Its gradient is the symmetric one (as PyTorch's), so it is checked through a symmetric
    # input built from any matrix: (X + X^T) / 2.
    sym = lambda x: (x + np.swapaxes(x, -1, -2)) / 2
    check(lambda x: gt.linalg.cholesky((x + x.mT) / 2), lambda x: np.linalg.cholesky(sym(x)), SPD)
    check(lambda x: gt.linalg.cholesky((x + x.mT) / 2, upper=True),
          lambda x: np.swapaxes(np.linalg.cholesky(sym(x)), -1, -2), SPD)


def test_eigh_values_and_sign_free_uses_of_vectors():
    sym = lambda x: (x + np.swapaxes(x, -1, -2)) / 2  # a symmetric input built from any matrix
    X = rng.standard_normal((2, 4, 4))
    check(lambda x: gt.linalg.eigvalsh((x + x.mT) / 2), lambda x: np.linalg.eigh(sym(x))[0], X)

    def projector(lib_eigh, x, mul):  # v_i v_i^T for each eigenvector: its sign does not matter
        w, v = lib_eigh(x)
        return w, mul(v[..., :, :2], np.swapaxes(v[..., :, :2], -1, -2) if mul is np.matmul else v[..., :, :2].mT)
    check(lambda x: projector(gt.linalg.eigh, (x + x.mT) / 2, lambda p, q: p @ q),
          lambda x: projector(np.linalg.eigh, sym(x), np.matmul), X)


def test_qr_reduced_and_complete():
    # Q Q^T and R^2 do not depend on the signs the factorization chooses
    check(lambda x: (lambda q, r: (q @ q.mT, r * r))(*gt.linalg.qr(x)),
          lambda x: (lambda q, r: (q @ np.swapaxes(q, -1, -2), r * r))(*np.linalg.qr(x)), TALL)
    q, r = gt.linalg.qr(gt.tensor(TALL), mode="complete")
    assert q.shape == (2, 5, 5) and r.shape == (2, 5, 3)
    np.testing.assert_allclose((q @ r).numpy(), TALL, atol=1e-12)
    assert gt.linalg.qr(gt.tensor(TALL), mode="r").R.shape == (2, 3, 3)


def test_svd_thin_full_and_values():
    def parts(lib_svd, x, full):
        u, s, vh = lib_svd(x, full_matrices=full) if lib_svd is not np.linalg.svd else np.linalg.svd(x, full)
        t = (lambda m: np.swapaxes(m, -1, -2)) if isinstance(u, np.ndarray) else (lambda m: m.mT)
        k = s.shape[-1]
        return s, u[..., :k] @ t(u[..., :k]), t(vh[..., :k, :]) @ vh[..., :k, :]
    for m in (TALL, np.swapaxes(TALL, -1, -2).copy()):
        check(lambda x: parts(gt.linalg.svd, x, False), lambda x: parts(np.linalg.svd, x, False), m)
        check(lambda x: parts(gt.linalg.svd, x, True), lambda x: parts(np.linalg.svd, x, True), m)
        check(gt.linalg.svdvals, lambda x: np.linalg.svd(x, compute_uv=False), m)
    u, s, v = gt.svd(gt.tensor(TALL))  # torch.svd: V, not Vh
    np.testing.assert_allclose((u @ gt.diag_embed(s) @ v.mT).numpy(), TALL, atol=1e-12)


def test_pinv_rank_triangular_solve_and_matrix_power():
    check(gt.linalg.pinv, np.linalg.pinv, TALL)
    assert gt.linalg.matrix_rank(gt.tensor(TALL @ np.swapaxes(TALL, -1, -2))).numpy().tolist() == [3, 3]
    U = np.triu(rng.standard_normal((2, 4, 4))) + 3 * np.eye(4)
    B = rng.standard_normal((2, 4, 2))
    check(lambda x: gt.linalg.solve_triangular(x, gt.tensor(B), upper=True),
          lambda x: np.linalg.solve(np.triu(x), B), U + np.tril(rng.standard_normal((2, 4, 4)), -1))
    unit = lambda x: np.tril(x, -1) + np.eye(4)
    check(lambda x: gt.linalg.solve_triangular(x, gt.tensor(B), upper=False, unitriangular=True),
          lambda x: np.linalg.solve(unit(x), B), np.swapaxes(U, -1, -2).copy())
    check(lambda x: gt.linalg.matrix_power(x, 3), lambda x: np.linalg.matrix_power(x, 3), A)
    check(lambda x: gt.linalg.matrix_power(x, -2), lambda x: np.linalg.matrix_power(x, -2), A)
    np.testing.assert_allclose(gt.linalg.matrix_power(gt.tensor(A), 0).numpy(), np.broadcast_to(np.eye(4), A.shape))


def test_float32_stays_float32():
    a = gt.tensor(A[0].astype(np.float32), requires_grad=True)
    y = gt.linalg.inv(a)
    assert y.dtype == gt.float32
    y.sum().backward()
    assert a.grad.dtype == gt.float32
    np.testing.assert_allclose(y.numpy(), np.linalg.inv(A[0]), rtol=1e-4, atol=1e-5)


def test_second_derivative_of_inv_and_solve():
    # their backwards are written with ops on the workers from their outputs, so create_graph works
    a = A[0] + 3 * np.eye(4)
    x = gt.tensor(a, requires_grad=True)
    (g,) = gt.autograd.grad(gt.linalg.inv(x).sum(), x, create_graph=True)
    (h,) = gt.autograd.grad((g * g).sum(), x)
    first = lambda m: -(np.linalg.inv(m).T @ np.ones((4, 4)) @ np.linalg.inv(m).T)
    np.testing.assert_allclose(h.numpy(), numeric_grad(lambda m: float((first(m) ** 2).sum()), a), rtol=1e-4, atol=1e-6)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        gt.autograd.grad(gt.autograd.grad(gt.linalg.det(x), x, create_graph=True)[0].sum(), x)


def test_errors_name_the_function_and_the_problem():
    with pytest.raises(gt.linalg.LinAlgError, match="linalg.inv: .*singular"):
        gt.linalg.inv(gt.zeros(3, 3, dtype=gt.float64))
    with pytest.raises(RuntimeError, match="not positive-definite"):
        gt.linalg.cholesky(-gt.eye(3))
    with pytest.raises(gt.ShapeError, match="square matrices, but they are 3 by 4"):
        gt.linalg.det(gt.zeros(3, 4))
    with pytest.raises(gt.DTypeError, match="float32 or float64"):
        gt.linalg.inv(gt.eye(3, dtype=gt.int64))
    with pytest.raises(gt.ShapeError, match="at least 2 dimensions"):
        gt.linalg.svd(gt.zeros(3))
    with pytest.raises(gt.ShapeError, match="incompatible shapes"):
        gt.linalg.solve(gt.eye(3), gt.zeros(4, 2))
    with pytest.raises(ValueError, match="UPLO"):
        gt.linalg.eigh(gt.eye(3), UPLO="X")


def test_torch_spellings_and_methods():
    a = gt.tensor(A[0])
    np.testing.assert_allclose(gt.inverse(a).numpy(), np.linalg.inv(A[0]), atol=1e-12)
    np.testing.assert_allclose(a.det().item(), np.linalg.det(A[0]), rtol=1e-12)
    sign, logabs = np.linalg.slogdet(A[0])
    assert gt.slogdet(a).sign.item() == sign and abs(a.slogdet().logabsdet.item() - logabs) < 1e-12
    assert np.isnan(a.logdet().item()) == (sign < 0) and a.logdet().shape == ()
    np.testing.assert_allclose(a.pinverse().numpy(), np.linalg.pinv(A[0]), atol=1e-12)
    np.testing.assert_allclose(a.matrix_power(2).numpy(), A[0] @ A[0], atol=1e-12)
    np.testing.assert_allclose(gt.tensor(SPD[0]).cholesky().numpy(), np.linalg.cholesky(SPD[0]), atol=1e-12)


def test_second_derivative_of_pinv():
    a = TALL[0]
    x = gt.tensor(a, requires_grad=True)
    (g,) = gt.autograd.grad(gt.linalg.pinv(x).sum(), x, create_graph=True)
    (h,) = gt.autograd.grad((g * g).sum(), x)
    first = lambda m: numeric_grad(lambda y: float(np.linalg.pinv(y).sum()), m, 1e-5)
    np.testing.assert_allclose(h.numpy(), numeric_grad(lambda m: float((first(m) ** 2).sum()), a, 1e-4),
                               rtol=1e-3, atol=1e-4)
