"""gt.linalg: torch.linalg's norms (on the workers) and its factorizations and solvers (inv,
solve, det, slogdet, cholesky, qr, eigh, svd, pinv, ...: on the client through NumPy's LAPACK,
with closed-form gradients). The general eigendecomposition (eig, complex results) is not in GT."""
import builtins
import collections

import numpy as np

from . import _C, _derivatives
from . import _functions as T
from . import autograd as _ag
from ._aliases import _write_out
from . import dtypes as _dt


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ord-norm of x's elements over `dim` (all elements when None), as
    torch.linalg.vector_norm: sum(|x|^ord)^(1/ord); ord inf / -inf is max / min |x|; ord 0
    counts the non-zeros."""
    if dtype is not None:
        x = T.cast(x, dtype)
    if x.dtype in (_dt.bfloat16, _dt.float16):  # (computed in float32 and rounded once, as PyTorch's)
        return T.cast(vector_norm(T.cast(x, _dt.float32), ord, dim, keepdim), x.dtype)
    a = T.abs(x)
    if x.dtype.is_complex:  # (of the magnitudes: a real result)
        x = a
    if ord == float("inf"):
        return T.amax(a, dim, keepdim)
    if ord == float("-inf"):
        return T.amin(a, dim, keepdim)
    if ord == 0:
        return T.sum(T.cast(a != 0, x.dtype), dim, keepdim)
    if ord == 1:
        return T.sum(a, dim, keepdim)
    if ord == 2:
        return T._l2(T.sum(x * x, dim, keepdim))
    return T.pow(T.sum(T.pow(a, ord), dim, keepdim), 1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The Frobenius norm ('fro') of the matrices over the two axes `dim`, or ord 1 / -1 (max /
    min column sum of |A|), inf / -inf (max / min row sum), 'nuc' (the sum of the singular
    values), 2 / -2 (the largest / smallest), as torch.linalg.matrix_norm; RuntimeError for
    another ord."""
    if dtype is not None:
        A = T.cast(A, dtype)
    d0, d1 = (T._dim(d, A.ndim) for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in (1, -1, float("inf"), float("-inf")):
        inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = T.sum(T.abs(A), inner, True)
        red = T.amax if ord in (1, float("inf")) else T.amin
        out = red(sums, outer, True)
        return out if keepdim else T.squeeze(T.squeeze(out, builtins.max(d0, d1)), builtins.min(d0, d1))
    if ord in ("nuc", 2, -2):  # the sum, max or min of the singular values
        s = svdvals(T.permute(A, *[i for i in range(A.ndim) if i not in (d0, d1)], d0, d1))
        out = T.sum(s, -1) if ord == "nuc" else T.amax(s, -1) if ord == 2 else T.amin(s, -1)
        return T.unsqueeze(T.unsqueeze(out, builtins.min(d0, d1)), builtins.max(d0, d1)) if keepdim else out
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: vector_norm (ord 2 by default) when dim is an int or x is 1-D or ord is
    None with dim None (the 2-norm of all elements), else matrix_norm ('fro' by default)."""
    if isinstance(dim, int) or (dim is None and (ord is None or A.ndim == 1)):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return matrix_norm(A, "fro" if ord is None else ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)


# ---------------------------------------------------------------- factorizations and solvers
# GT's workers have no LAPACK kernels: these run on the client's CPU through NumPy's LAPACK
# (each reads its input, a wait, and uploads its result), in the input's dtype, batched over
# leading axes as NumPy and PyTorch batch them. Their gradients are autograd Functions with
# the closed forms cited at each one; those that run on the workers (inv, solve, pinv, det and
# slogdet of an invertible matrix) need no wait, the others read the incoming gradient.


# Results readable by position and by name, as torch.return_types
_Slogdet = collections.namedtuple("slogdet", ["sign", "logabsdet"])
_EighResult = collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])
_QRResult = collections.namedtuple("qr", ["Q", "R"])
_SVDResult = collections.namedtuple("svd", ["U", "S", "Vh"])
_SVDV = collections.namedtuple("svd", ["U", "S", "V"])  # torch.svd's older interface


class LinAlgError(RuntimeError):
    """A matrix the factorization cannot handle (singular, not positive-definite, no
    convergence), as torch.linalg.LinAlgError."""


def _matrices(A, name, square=True):
    """A as a float32/float64 Tensor of (..., m, n) matrices; TypeError for a non-tensor,
    gt.DTypeError for another dtype, gt.ShapeError for fewer than 2 axes or (square) m != n."""
    if not isinstance(A, T.Tensor):
        raise TypeError(f"{name}: expected a gt.Tensor, got {type(A).__name__}")
    if A.dtype not in (_dt.float32, _dt.float64):
        raise _C.DTypeError(f"{name}: expects a float32 or float64 tensor, got {A.dtype}")
    if A.ndim < 2:
        raise _C.ShapeError(f"{name}: the input must have at least 2 dimensions, got shape {list(A.shape)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise _C.ShapeError(f"{name}: A must be batches of square matrices, but they are "
                            f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _np(t):
    """t's values as float64 NumPy (a wait)."""
    return t.numpy().astype(np.float64)


def _up(a, like):
    """NumPy `a` uploaded as a tensor of `like`'s dtype."""
    a = np.asarray(a)
    return T.tensor(np.ascontiguousarray(a) if a.ndim else a, dtype=like.dtype)  # (ascontiguousarray makes 0-d 1-d)


def _lapack(name, fn, *args):
    try:
        return fn(*args)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"{name}: {e}") from None


def _no_double_backward(name):
    if _ag.is_grad_enabled():
        raise NotImplementedError(f"{name}: second derivatives (create_graph=True) are not supported")


def _mT(a):
    return np.swapaxes(a, -1, -2)


class _Inv(_ag.Function):
    @staticmethod
    def forward(ctx, A):
        try:
            y = np.linalg.inv(A.numpy())
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.inv: the inversion could not be completed because the input matrix is "
                              "singular") from None
        Y = _up(y, A)
        ctx.save_for_backward(Y)
        return Y

    @staticmethod
    def backward(ctx, g):
        # d(A^-1) = -A^-1 dA A^-1, so gA = -A^-T g A^-T (Giles 2008, "Collected matrix derivative
        # results", 3.1); Y is this Function's output, so a second derivative flows through it.
        (Y,) = ctx.saved_tensors
        return -(Y.mT @ g @ Y.mT)


def inv(A):
    """The inverse of each square matrix in A (..., n, n), as torch.linalg.inv. Raises
    gt.linalg.LinAlgError for a singular matrix, gt.ShapeError for non-square input,
    gt.DTypeError unless float32/float64."""
    return _Inv.apply(_matrices(A, "linalg.inv"))


def _vector_rhs(A, B):
    """Whether B is a (batch of) vector(s) rather than matrices, by PyTorch's rule."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


class _Solve(_ag.Function):
    @staticmethod
    def forward(ctx, A, B):
        a, b = A.numpy(), B.numpy()
        vector = _vector_rhs(A, B)
        x = _lapack("linalg.solve", np.linalg.solve, a, b[..., None] if vector else b)
        X = _up(x[..., 0] if vector else x, A)
        ctx.save_for_backward(A, X)
        ctx.vector, ctx.b_shape = vector, tuple(B.shape)
        return X

    @staticmethod
    def backward(ctx, g):
        # X = A^-1 B: gB = A^-T g, gA = -gB X^T (Giles 2008, 3.1), as PyTorch's linalg_solve backward.
        A, X = ctx.saved_tensors
        gB = _Solve.apply(A.mT, g)
        if ctx.vector:
            gA = -(T.unsqueeze(gB, -1) @ T.unsqueeze(X, -2))
        else:
            gA = -(gB @ X.mT)
        return _derivatives.unbroadcast(gA, A.shape), _derivatives.unbroadcast(gB, ctx.b_shape)


def solve(A, B, *, left=True):
    """X with A X = B (left=True) or X A = B, for square invertible A (..., n, n) and B
    (..., n, k) or a vector (..., n), as torch.linalg.solve (batch axes broadcast). Raises
    gt.linalg.LinAlgError for a singular A."""
    A = _matrices(A, "linalg.solve")
    if not isinstance(B, T.Tensor) or B.dtype != A.dtype:
        raise _C.DTypeError(f"linalg.solve: B must be a gt.Tensor of A's dtype ({A.dtype})")
    if not left:
        return _Solve.apply(A.mT, B.mT).mT
    n = A.shape[-1]
    if (B.shape[-1] if _vector_rhs(A, B) else B.shape[-2]) != n:
        raise _C.ShapeError(f"linalg.solve: incompatible shapes of A {list(A.shape)} and B {list(B.shape)}")
    return _Solve.apply(A, B)


def _cofactors(a):
    """The cofactor matrices of float64 square matrices a (..., n, n): det(A) A^-T where A is
    invertible, and through the SVD where it is not (adj(A) = det(U V^T) V adj(S) U^T)."""
    u, s, vt = np.linalg.svd(a)
    n = s.shape[-1]
    left = np.concatenate([np.ones(s.shape[:-1] + (1,)), np.cumprod(s, -1)[..., :-1]], -1)
    right = np.concatenate([np.cumprod(s[..., ::-1], -1)[..., -2::-1], np.ones(s.shape[:-1] + (1,))], -1) \
        if n > 1 else np.ones_like(s)
    others = left * right  # the product of every singular value but the i-th
    adj = np.linalg.det(u @ vt)[..., None, None] * (_mT(vt) * others[..., None, :]) @ _mT(u)
    return _mT(adj)


class _Det(_ag.Function):
    @staticmethod
    def forward(ctx, A):
        a = A.numpy()
        d = _up(np.linalg.det(a), A)
        ctx.save_for_backward(_up(_cofactors(a.astype(np.float64)), A))
        return d

    @staticmethod
    def backward(ctx, g):
        # d det(A) = tr(adj(A) dA), so gA = g * cofactor(A) (Jacobi's formula; Giles 2008, 3.1),
        # which stays finite for a singular A (PyTorch's det backward also goes through the SVD).
        _no_double_backward("linalg.det")
        (C,) = ctx.saved_tensors
        return T.unsqueeze(T.unsqueeze(g, -1), -1) * C


def det(A):
    """The determinant of each square matrix in A (..., n, n) -> (...), as torch.linalg.det."""
    return _Det.apply(_matrices(A, "linalg.det"))


class _LogAbsDet(_ag.Function):
    @staticmethod
    def forward(ctx, A):
        sign, logabs = np.linalg.slogdet(A.numpy())
        ctx.save_for_backward(_up(_mT(_lapack("linalg.slogdet", np.linalg.pinv, A.numpy().astype(np.float64))), A))
        ctx.sign = _up(sign, A)
        ctx.mark_non_differentiable(ctx.sign)
        return ctx.sign, _up(logabs, A)

    @staticmethod
    def backward(ctx, g_sign, g_log):
        # d log|det A| = tr(A^-1 dA), so gA = g A^-T (Giles 2008, 3.1).
        _no_double_backward("linalg.slogdet")
        (inv_t,) = ctx.saved_tensors
        return T.unsqueeze(T.unsqueeze(g_log, -1), -1) * inv_t


def slogdet(A):
    """(sign, log|det A|) of each square matrix in A (..., n, n), as torch.linalg.slogdet
    (sign 0 and logabsdet -inf for a singular matrix). The gradient flows through logabsdet."""
    sign, logabsdet = _LogAbsDet.apply(_matrices(A, "linalg.slogdet"))
    return _Slogdet(sign, logabsdet)


def logdet(A):
    """log(det A) of each square matrix (NaN where det A < 0), as torch.logdet."""
    sign, logabsdet = slogdet(A)
    return T.where(sign < 0, float("nan"), logabsdet)


class _Cholesky(_ag.Function):
    @staticmethod
    def forward(ctx, A, upper):
        a = A.numpy()
        try:
            l = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.cholesky: The factorization could not be completed because the input is "
                              "not positive-definite") from None
        L = _up(l, A)
        ctx.save_for_backward(L)
        ctx.upper = upper
        return L.mT if upper else L

    @staticmethod
    def backward(ctx, g):
        # A = L L^T: gA = L^-T Phi(L^T gL) L^-1, symmetrized, Phi taking the lower triangle with
        # half the diagonal (Murray 2016, "Differentiation of the Cholesky decomposition", eq. 10;
        # PyTorch's cholesky_backward).
        _no_double_backward("linalg.cholesky")
        (L,) = ctx.saved_tensors
        l, gl = _np(L), _np(g)
        if ctx.upper:
            gl = _mT(gl)
        p = np.tril(_mT(l) @ gl)
        p = 0.5 * (p + _mT(np.tril(p, -1)))
        linv = np.linalg.inv(l)
        return _up(_mT(linv) @ p @ linv, L), None


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor of each symmetric positive-definite matrix in A (..., n, n): lower L
    with A = L L^T (upper=True: L^T), as torch.linalg.cholesky (the lower triangle of A is
    read); written into `out` too when given. Raises gt.linalg.LinAlgError when a matrix is not
    positive-definite."""
    L = _Cholesky.apply(_matrices(A, "linalg.cholesky"), upper)
    return L if out is None else _write_out("linalg.cholesky", L, out, T.Tensor)


class _Eigh(_ag.Function):
    @staticmethod
    def forward(ctx, A, uplo):
        w, v = _lapack("linalg.eigh", np.linalg.eigh, A.numpy(), uplo)
        W, V = _up(w, A), _up(v, A)
        ctx.save_for_backward(W, V)
        ctx.set_materialize_grads(False)
        return W, V

    @staticmethod
    def backward(ctx, gw, gv):
        # A = V diag(w) V^T: gA = V (diag(gw) + F o skew(V^T gV)) V^T with F_ij = 1 / (w_j - w_i)
        # off the diagonal (Giles 2008, 3.1; PyTorch's linalg_eig_backward for Hermitian input).
        _no_double_backward("linalg.eigh")
        W, V = ctx.saved_tensors
        w, v = _np(W), _np(V)
        inner = np.zeros(v.shape) if gv is None else _mT(v) @ _np(gv)
        inner = 0.5 * (inner - _mT(inner))  # its skew part: what a change of A can move (as PyTorch)
        diff = w[..., None, :] - w[..., :, None]
        with np.errstate(divide="ignore"):
            f = np.where(np.eye(w.shape[-1], dtype=bool), 0.0, 1.0 / diff)
        middle = f * inner
        if gw is not None:
            middle = middle + np.eye(w.shape[-1]) * _np(gw)[..., None, :]
        return _up(v @ middle @ _mT(v), W), None


def eigh(A, UPLO="L"):
    """(eigenvalues (..., n) ascending, eigenvectors (..., n, n) as columns) of each symmetric
    matrix in A, reading its lower (UPLO='L') or upper triangle, as torch.linalg.eigh. The
    gradient assumes distinct eigenvalues (as PyTorch's)."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    w, v = _Eigh.apply(_matrices(A, "linalg.eigh"), UPLO)
    return _EighResult(w, v)


def eigvalsh(A, UPLO="L"):
    """The eigenvalues (..., n), ascending, of each symmetric matrix in A, as torch.linalg.eigvalsh."""
    return eigh(A, UPLO)[0]


class _QR(_ag.Function):
    @staticmethod
    def forward(ctx, A, mode):
        q, r = np.linalg.qr(A.numpy(), mode="complete" if mode == "complete" else "reduced")
        Q, R = _up(q, A), _up(r, A)
        ctx.save_for_backward(Q, R)
        ctx.mode = mode
        ctx.set_materialize_grads(False)
        return Q, R

    @staticmethod
    def backward(ctx, gq, gr):
        # A = QR with m >= n (reduced): M = R gR^T - gQ^T Q, gA = (gQ + Q copyltu(M)) R^-T, where
        # copyltu copies the lower triangle onto the upper (Liao, Liu, Wang & Xiang 2019,
        # "Differentiable programming tensor networks", eq. 7; PyTorch's linalg_qr_backward).
        _no_double_backward("linalg.qr")
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "complete" and m > n or m < n:
            raise NotImplementedError("linalg.qr: the gradient is implemented for mode='reduced' with m >= n "
                                      "(and square matrices in mode='complete')")
        q, r = _np(Q), _np(R)
        gq = np.zeros(q.shape) if gq is None else _np(gq)
        gr = np.zeros(r.shape) if gr is None else _np(gr)
        mm = r @ _mT(gr) - _mT(gq) @ q
        copyltu = np.tril(mm) + _mT(np.tril(mm, -1))
        ga = _mT(np.linalg.solve(r, _mT(gq + q @ copyltu)))  # (...) R^-T
        return _up(ga, Q), None


def qr(A, mode="reduced"):
    """(Q, R) of each matrix in A (..., m, n) with A = Q R, Q's columns orthonormal, R upper
    triangular, as torch.linalg.qr: mode 'reduced' (Q (..., m, k), R (..., k, n), k = min(m,
    n)), 'complete' (Q (..., m, m)) or 'r' (an empty Q; no gradient). Gradients for m >= n."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    A = _matrices(A, "linalg.qr", square=False)
    if mode == "r":
        r = np.linalg.qr(A.numpy(), mode="r")
        return _QRResult(T.zeros(0, dtype=A.dtype), _up(r, A))
    Q, R = _QR.apply(A, mode)
    return _QRResult(Q, R)


class _SVD(_ag.Function):
    @staticmethod
    def forward(ctx, A, full_matrices):
        u, s, vh = _lapack("linalg.svd", np.linalg.svd, A.numpy(), full_matrices)
        U, S, Vh = _up(u, A), _up(s, A), _up(vh, A)
        ctx.save_for_backward(U, S, Vh)
        ctx.shape = tuple(A.shape)
        ctx.set_materialize_grads(False)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        # A = U S V^T (thin): gA = U [(F o (U^T gU - gU^T U)) S + diag(gS) + S (F o (V^T gV - gV^T V))] V^T
        #                         + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T),
        # F_ij = 1 / (s_j^2 - s_i^2) off the diagonal (Townsend 2016, "Differentiating the singular
        # value decomposition"; PyTorch's svd_backward). Distinct, nonzero singular values.
        _no_double_backward("linalg.svd")
        U, S, Vh = ctx.saved_tensors
        u, s, vh = _np(U), _np(S), _np(Vh)
        k = s.shape[-1]
        m, n = ctx.shape[-2:]
        if u.shape[-1] != k or vh.shape[-2] != k:  # full_matrices: the columns past k get no gradient (as PyTorch)
            u, vh = u[..., :k], vh[..., :k, :]
            gu = None if gu is None else _np(gu)[..., :k]
            gvh = None if gvh is None else _np(gvh)[..., :k, :]
        else:
            gu = None if gu is None else _np(gu)
            gvh = None if gvh is None else _np(gvh)
        v = _mT(vh)
        eye = np.eye(k, dtype=bool)
        with np.errstate(divide="ignore"):
            f = np.where(eye, 0.0, 1.0 / (s[..., None, :] ** 2 - s[..., :, None] ** 2))
        middle = np.zeros(s.shape[:-1] + (k, k))
        if gs is not None:
            middle = middle + eye * _np(gs)[..., None, :]
        sdiag = s[..., None, :]  # X * sdiag = X @ diag(s); sdiag^T * X = diag(s) @ X
        ga = 0.0
        if gu is not None:
            j = _mT(u) @ gu
            middle = middle + (f * (j - _mT(j))) * sdiag
            if m > k:
                ga = ga + ((gu - u @ j) / sdiag) @ vh
        if gvh is not None:
            gv = _mT(gvh)
            kk = v.swapaxes(-1, -2) @ gv
            middle = middle + _mT(sdiag) * (f * (kk - _mT(kk)))
            if n > k:
                ga = ga + (u / sdiag) @ _mT(gv - v @ kk)
        ga = ga + u @ middle @ vh
        return _up(ga, U), None


def svd(A, full_matrices=True):
    """(U, S, Vh) of each matrix in A (..., m, n) with A = U diag(S) Vh, S (..., k) descending,
    k = min(m, n), as torch.linalg.svd (full_matrices=True: U (..., m, m), Vh (..., n, n)).
    Gradients assume distinct nonzero singular values (as PyTorch's); with full_matrices=True
    the columns of U and Vh past k get none (as PyTorch's)."""
    U, S, Vh = _SVD.apply(_matrices(A, "linalg.svd", square=False), full_matrices)
    return _SVDResult(U, S, Vh)


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) of the rank-q approximation of A - M (..., m, n): U (..., m, q), S (..., q),
    V (..., n, q), as torch.svd_lowrank. PyTorch draws a randomized approximation (Halko et al.
    2011, niter subspace iterations); GT truncates the exact SVD (the best rank-q one, so its
    values can differ from PyTorch's approximation), through linalg.svd."""
    B = A if M is None else A - M
    U, S, Vh = svd(B, full_matrices=False)
    q = min(q, S.shape[-1])
    return U[..., :q], S[..., :q], _mT(Vh[..., :q, :])


def pca_lowrank(A, q=None, center=True, niter=2):
    """svd_lowrank of A with its column means subtracted (center), q = min(6, m, n) by default,
    as torch.pca_lowrank."""
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    M = A.mean(-2, keepdim=True) if center else None
    return svd_lowrank(A, q, niter, M)


def svdvals(A):
    """The singular values (..., min(m, n)), descending, of each matrix in A, as torch.linalg.svdvals."""
    return svd(A, full_matrices=False)[1]


class _Pinv(_ag.Function):
    @staticmethod
    def forward(ctx, A, hermitian):
        P = _up(np.linalg.pinv(A.numpy(), hermitian=hermitian), A)
        ctx.save_for_backward(A, P)
        return P

    @staticmethod
    def backward(ctx, g):
        # dA+ = -A+ dA A+ + A+ A+^T dA^T (I - A A+) + (I - A+ A) dA^T A+^T A+ (Golub & Pereyra 1973,
        # Theorem 4.3), whose adjoint is what is returned.
        A, P = ctx.saved_tensors
        pt = P.mT
        return (-(pt @ g @ pt) + (g.mT - A @ (P @ g.mT)) @ (P @ pt) + (pt @ P) @ (g.mT - (g.mT @ P) @ A)), None


def pinv(A, *, hermitian=False):
    """The Moore-Penrose pseudo-inverse (..., n, m) of each matrix in A (..., m, n), singular
    values below max(m, n) * eps * the largest treated as zero, as torch.linalg.pinv."""
    return _Pinv.apply(_matrices(A, "linalg.pinv", square=False), hermitian)


def matrix_rank(A, *, hermitian=False):
    """The rank (int64, (...)) of each matrix in A: its singular values above max(m, n) * eps *
    the largest, as torch.linalg.matrix_rank."""
    A = _matrices(A, "linalg.matrix_rank", square=False)
    return T.tensor(np.asarray(np.linalg.matrix_rank(A.numpy(), hermitian=hermitian), dtype=np.int64))


class _SolveTriangular(_ag.Function):
    @staticmethod
    def forward(ctx, A, B, upper, unitriangular):
        a = A.numpy().astype(np.float64)
        a = np.triu(a) if upper else np.tril(a)
        if unitriangular:
            a = a - np.eye(a.shape[-1]) * np.diagonal(a, 0, -2, -1)[..., None, :] + np.eye(a.shape[-1])
        X = _up(_lapack("linalg.solve_triangular", np.linalg.solve, a, B.numpy().astype(np.float64)), A)
        ctx.save_for_backward(A, X)
        ctx.upper, ctx.unitriangular, ctx.b_shape = upper, unitriangular, tuple(B.shape)
        return X

    @staticmethod
    def backward(ctx, g):
        # As solve's (gB = A^-T g, gA = -gB X^T), kept to the triangle A's values were read from.
        A, X = ctx.saved_tensors
        gB = _SolveTriangular.apply(A.mT, g, not ctx.upper, ctx.unitriangular)
        gA = -(gB @ X.mT)
        gA = T.triu(gA, 1 if ctx.unitriangular else 0) if ctx.upper else T.tril(gA, -1 if ctx.unitriangular else 0)
        return _derivatives.unbroadcast(gA, A.shape), _derivatives.unbroadcast(gB, ctx.b_shape), None, None


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (left=True) or X A = B for triangular A (..., n, n) (only its upper or
    lower triangle is read; unitriangular: its diagonal is taken as ones) and B (..., n, k),
    as torch.linalg.solve_triangular. Raises gt.linalg.LinAlgError for a zero on the diagonal."""
    A = _matrices(A, "linalg.solve_triangular")
    if not isinstance(B, T.Tensor) or B.dtype != A.dtype or B.ndim < 2:
        raise _C.DTypeError("linalg.solve_triangular: B must be a gt.Tensor of A's dtype with at least 2 dimensions")
    if not left:
        return _SolveTriangular.apply(A.mT, B.mT, not upper, unitriangular).mT
    return _SolveTriangular.apply(A, B, upper, unitriangular)


def matrix_power(A, n):
    """A @ A @ ... (n times) for each square matrix in A (n = 0: identity; n < 0: powers of
    inv(A)), by repeated squaring on the workers, as torch.linalg.matrix_power."""
    A = _matrices(A, "linalg.matrix_power")
    if not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n < 0:
        A, n = inv(A), -n
    result = None
    while n:
        if n & 1:
            result = A if result is None else result @ A
        n >>= 1
        if n:
            A = A @ A
    return result if result is not None else T.broadcast_to(T.eye(A.shape[-1], dtype=A.dtype), A.shape)


def matrix_exp(A):
    """exp(A) = sum_k A^k / k! for each square matrix in A (..., n, n), as
    torch.linalg.matrix_exp. Scaling and squaring (Moler & Van Loan 2003, "Nineteen dubious
    ways to compute the exponential of a matrix", method 3; Higham 2005): X = A / 2^s with
    ||X||_1 <= 1/2, the Taylor polynomial of degree 18 (float64) or 10 (float32) in Horner form
    (truncation error below 0.5^19/19! resp. 0.5^11/11!, under each dtype's rounding), then
    squared s times. The 1-norm that picks s is read on the client (a wait); the rest is GT
    matmuls on the workers, so autograd differentiates the computation (second derivatives too)."""
    A = _matrices(A, "linalg.matrix_exp")
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A
    norm = float(T.amax(T.sum(T.abs(A), -2)).item())  # the largest 1-norm in the batch
    s = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0.5 else 0
    X = A * (0.5 ** s) if s else A
    eye = T.broadcast_to(T.eye(n, dtype=A.dtype), A.shape)
    degree = 18 if A.dtype == _dt.float64 else 10
    P = eye
    for k in range(degree, 0, -1):  # I + X/k (I + X/(k+1) (...))
        P = eye + (X @ P) * (1.0 / k)
    for _ in range(s):
        P = P @ P
    return P


# ---------------------------------------------------------------- torch.* spellings and methods
# (torch.inverse, torch.det, ... and x.inverse(), x.det(), ...; torch.svd's older interface)

def _svd_v(A, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with A = U diag(S) V^T (V, not Vh); some=True gives the thin
    factors. compute_uv=False: zero U and V (as PyTorch)."""
    U, S, Vh = svd(A, full_matrices=not some)
    if not compute_uv:
        return _SVDV(T.zeros_like(U), S, T.zeros_like(Vh))
    return _SVDV(U, S, Vh.mT)


def householder_product(A, tau):
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T, for A (..., m, n) and
    tau (..., k), k <= n <= m, v_i column i of A with its entries above the diagonal zero and a 1
    on it (torch.linalg.householder_product, LAPACK's orgqr: with geqrf's output it gives the Q
    of a QR decomposition). Computed on the workers from I, applying H_k first, each step
    Q - tau_i v_i (v_i^T Q); differentiable in A and tau. ValueError for shapes that break those
    rules."""
    if A.ndim < 2 or tau.ndim < 1 or tuple(A.shape[:-2]) != tuple(tau.shape[:-1]):
        raise ValueError(f"householder_product: expected A (..., m, n) and tau (..., k) with the same batch shape, "
                         f"got {tuple(A.shape)} and {tuple(tau.shape)}")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if not k <= n <= m:
        raise ValueError(f"householder_product: needs k <= n <= m, got m = {m}, n = {n}, k = {k}")
    eye = T.eye(m, n, dtype=A.dtype)
    V = T.tril(A, -1) + eye  # the reflectors' vectors, unit diagonal
    Q = T.broadcast_to(eye, tuple(A.shape))
    for i in reversed(range(k)):
        v = V[..., :, i:i + 1]  # (..., m, 1)
        w = (v * Q).sum(-2, keepdim=True)  # v^T Q: (..., 1, n)
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * v * w
    return Q


def geqrf(A):
    """(a, tau): LAPACK's geqrf of each matrix in A (..., m, n), as torch.geqrf: R on and above
    a's diagonal, below it the Householder vectors whose product with tau
    (householder_product(a, tau)) is the Q of A = Q R. Through NumPy's LAPACK on the client (a
    wait); not differentiable, as PyTorch's."""
    A = _matrices(A, "geqrf", square=False)
    a = A.numpy()
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    hs, taus = [], []
    for matrix in flat:
        h, tau = _lapack("geqrf", np.linalg.qr, matrix.astype(np.float64), "raw")
        hs.append(h.T)
        taus.append(tau)
    k = min(a.shape[-2], a.shape[-1])
    out = np.array(hs).reshape(batch + a.shape[-2:]) if hs else np.zeros(a.shape)
    tau = np.array(taus).reshape(batch + (k,)) if taus else np.zeros(batch + (k,))
    return _up(out, A), _up(tau, A)


orgqr = householder_product


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along `dim` (default the last axis), as
    torch.linalg.cross; input and other broadcast. Raises RuntimeError when that axis is not 3."""
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and "
                           f"{other.shape[dim]}")
    from ._composites import cross as _cross
    return _cross(input, other, dim=dim)


def matmul(input, other):
    """gt.matmul (torch.linalg.matmul is torch.matmul)."""
    return T.matmul(input, other)


def vecdot(x, y, *, dim=-1):
    """sum(x * y) along `dim` (x and y broadcast), as torch.linalg.vecdot for real tensors."""
    return T.sum(x * y, dim)


def multi_dot(tensors):
    """The product of the matrices in `tensors`, multiplied in the order that costs the fewest
    scalar multiplications (the matrix-chain dynamic program, Cormen et al., Introduction to
    Algorithms, 15.2), as torch.linalg.multi_dot: the first may be a 1-D row vector and the
    last a 1-D column vector (the result then loses that axis). Raises RuntimeError for fewer
    than two tensors or other ranks."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    if first_vec:
        tensors[0] = T.reshape(tensors[0], 1, -1)
    if last_vec:
        tensors[-1] = T.reshape(tensors[-1], -1, 1)
    for i, t in enumerate(tensors):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    dims = [tensors[0].shape[0]] + [t.shape[1] for t in tensors]
    n = len(tensors)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                          for k in range(i, j))

    def product(i, j):
        return tensors[i] if i == j else T.matmul(product(i, split[i][j]), product(split[i][j] + 1, j))
    out = product(0, n - 1)
    if first_vec and last_vec:
        return T.reshape(out, ())
    if first_vec or last_vec:
        return T.reshape(out, -1)
    return out


_LstsqResult = collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution X (..., n, k) minimizing ||A X - B|| for A (..., m, n) and B
    (..., m, k), as torch.linalg.lstsq with its CPU default (driver 'gelsy'): X = pinv(A) B (the
    minimum-norm solution; differentiable), rank (int64, the matrix_rank of each A), and
    residuals and singular_values empty (gelsy computes neither). Raises RuntimeError when A and
    B disagree on m."""
    A = _matrices(A, "linalg.lstsq", square=False)
    if B.ndim == A.ndim - 1 and B.shape[-1] == A.shape[-2]:  # a vector right-hand side (..., m): X (..., n)
        X, residuals, rank, values = lstsq(A, T.unsqueeze(B, -1), rcond, driver=driver)
        return _LstsqResult(T.squeeze(X, -1), residuals, rank, values)
    if B.ndim < 2 or B.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got A "
                           f"{list(A.shape)} and B {list(B.shape)}")
    X = T.matmul(pinv(A), B)
    empty = T.zeros(0, dtype=A.dtype)
    return _LstsqResult(X, empty, matrix_rank(A), empty)


# ---------------------------------------------------------------- the _ex forms, LU, Cholesky solves

_InvEx = collections.namedtuple("inv_ex", ["inverse", "info"])
_CholeskyEx = collections.namedtuple("cholesky_ex", ["L", "info"])
_SolveEx = collections.namedtuple("solve_ex", ["result", "info"])
_LUFactor = collections.namedtuple("lu_factor", ["LU", "pivots"])
_LUFactorEx = collections.namedtuple("lu_factor_ex", ["LU", "pivots", "info"])
_PLU = collections.namedtuple("lu", ["P", "L", "U"])
_TriangularSolve = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def _info(A, ok, name):
    """int32 info of each matrix of A, 0 where `ok` (a bool array of the batch shape), else
    LAPACK's: the order of the first leading minor that is not positive-definite (cholesky), the
    1-based index of the first zero pivot of U (inverse, solve)."""
    a = A.numpy().astype(np.float64).reshape(-1, *A.shape[-2:])
    info = np.zeros(a.shape[0], dtype=np.int32)
    for i in np.flatnonzero(~np.asarray(ok).reshape(-1)):
        if name == "cholesky_ex":
            info[i] = next((k for k in range(1, a.shape[-1] + 1) if not _positive_definite(a[i, :k, :k])), a.shape[-1])
        else:
            info[i] = max(int(_lu_numpy(a[i])[2]), 1)
    return T.tensor(info.reshape(A.shape[:-2]))


def _positive_definite(a):
    try:
        np.linalg.cholesky(np.tril(a) + np.tril(a, -1).T)
        return True
    except np.linalg.LinAlgError:
        return False


def _ex(name, fn, A, check_errors, *args):
    """(fn(A, *args), info): info 0 for each matrix fn succeeds on; where it fails (a
    LinAlgError; with check_errors=True it is raised) the result is NaN and info LAPACK's (_info)."""
    try:
        return fn(A, *args), T.zeros(A.shape[:-2], dtype=_dt.int32)
    except LinAlgError:
        if check_errors:
            raise
    batch = A.reshape(-1, *A.shape[-2:])
    outs, ok = [], []
    for i in range(batch.shape[0]):
        try:
            outs.append(fn(batch[i], *[a[i] if isinstance(a, T.Tensor) and a.ndim > 2 else a for a in args]))
            ok.append(True)
        except LinAlgError:
            outs.append(None)
            ok.append(False)
    like = next(o for o in outs if o is not None) if any(ok) else None
    shape = like.shape if like is not None else A.shape[-2:] if name != "solve_ex" else args[0].shape[-2:]
    outs = [o if o is not None else T.full(shape, float("nan"), dtype=A.dtype) for o in outs]
    return T.reshape(T.stack(outs), A.shape[:-2] + tuple(shape)), _info(A, np.array(ok), name)


def inv_ex(A, *, check_errors=False):
    """(inverse, info) as torch.linalg.inv_ex: info 0 for an invertible matrix, positive for a
    singular one (its inverse NaN here; PyTorch's holds what LAPACK left)."""
    return _InvEx(*_ex("inv_ex", inv, _matrices(A, "linalg.inv_ex"), check_errors))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info) as torch.linalg.cholesky_ex: info 0 where the matrix is positive-definite,
    positive where not (gpytorch's psd_safe_cholesky then adds jitter); L is NaN there. out:
    an (L, info) pair of tensors to write them into."""
    result = _CholeskyEx(*_ex("cholesky_ex", lambda a: cholesky(a, upper=upper), _matrices(A, "linalg.cholesky_ex"),
                              check_errors))
    if out is None:
        return result
    return _CholeskyEx(*_write_out("linalg.cholesky_ex", tuple(result), tuple(out), T.Tensor))


def solve_ex(A, B, *, left=True, check_errors=False):
    """(result, info) as torch.linalg.solve_ex (see solve)."""
    A = _matrices(A, "linalg.solve_ex")
    try:
        return _SolveEx(solve(A, B, left=left), T.zeros(A.shape[:-2], dtype=_dt.int32))
    except LinAlgError:
        if check_errors:
            raise
        return _SolveEx(T.full(tuple(B.shape), float("nan"), dtype=A.dtype),
                        _info(A, np.zeros(A.shape[:-2], dtype=bool), "solve_ex"))


def _lu_numpy(a):
    """(LU, pivots 1-based, info) of each matrix of float64 `a` (..., m, n) by LAPACK's dgetrf
    (SciPy's binding; GT's workers have no LAPACK kernels, as the module's other
    factorizations): partial pivoting, L's unit diagonal not stored, pivots[i] the row swapped
    with row i counted from 1, info > 0 the first zero on U's diagonal. Raises ImportError
    naming the package when SciPy is missing."""
    try:
        from scipy.linalg import lapack
    except ImportError:
        raise ImportError("gt.linalg's LU functions need SciPy (pip install scipy; `make deps` installs it)") from None
    a = np.asarray(a, dtype=np.float64)
    batch = a.reshape(-1, *a.shape[-2:])
    factored = [lapack.dgetrf(m) for m in batch]
    k = min(a.shape[-2:])
    lu = np.stack([f[0] for f in factored]) if factored else batch.copy()
    pivots = np.array([f[1] + 1 for f in factored], dtype=np.int32).reshape(a.shape[:-2] + (k,))
    info = np.array([f[2] for f in factored], dtype=np.int32).reshape(a.shape[:-2])
    return lu.reshape(a.shape), pivots, info


def _no_grad_of(name, A):
    if A.requires_grad and _ag.is_grad_enabled():
        raise NotImplementedError(f"{name}: GT has no gradient of the LU factorization (lu_solve's is there: "
                                  f"see gt.linalg.lu_solve)")


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info) as torch.linalg.lu_factor_ex: A = P L U with partial pivoting, L and
    U packed in LU (LAPACK's layout), pivots 1-based int32, info > 0 where U has a zero on its
    diagonal. No gradient (NotImplementedError for an input that requires grad)."""
    A = _matrices(A, "linalg.lu_factor_ex", square=False)
    if not pivot:
        raise NotImplementedError("linalg.lu_factor: GT factors with partial pivoting (pivot=True)")
    _no_grad_of("linalg.lu_factor", A)
    lu, piv, info = _lu_numpy(A.numpy())
    if check_errors and info.any():
        raise LinAlgError(f"linalg.lu_factor: U[{info.max()}, {info.max()}] is zero: the matrix is singular")
    return _LUFactorEx(_up(lu, A), T.tensor(piv), T.tensor(info))


def lu_factor(A, *, pivot=True):
    """(LU, pivots) as torch.linalg.lu_factor (see lu_factor_ex)."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    return _LUFactor(LU, pivots)


def _permutation(pivots, m):
    """The permutation matrices P (..., m, m) with A = P L U, of 1-based LAPACK pivots."""
    piv = np.asarray(pivots.numpy(), dtype=np.int64) - 1
    batch = piv.reshape(-1, piv.shape[-1])
    perms = np.tile(np.arange(m), (batch.shape[0], 1))
    for j in range(batch.shape[1]):
        p = batch[:, j]
        r = np.arange(batch.shape[0])
        perms[r, j], perms[r, p] = perms[r, p], perms[r, j].copy()
    P = np.zeros((batch.shape[0], m, m))
    P[np.arange(batch.shape[0])[:, None], perms, np.arange(m)[None, :]] = 1.0  # (row perms[i] of column i)
    return P.reshape(piv.shape[:-1] + (m, m))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) of lu_factor's packed result, as torch.lu_unpack: A = P @ L @ U."""
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    L = T.tril(LU_data[..., :, :k], -1) + T.eye(m, k, dtype=LU_data.dtype)
    U = T.triu(LU_data[..., :k, :])
    P = _up(_permutation(LU_pivots, m), LU_data) if unpack_pivots else T.zeros(0, dtype=LU_data.dtype)
    return _PLU(P, L if unpack_data else T.zeros(0, dtype=LU_data.dtype), U if unpack_data else T.zeros(0, dtype=LU_data.dtype))


def lu(A, *, pivot=True):
    """(P, L, U) with A = P @ L @ U, as torch.linalg.lu (no gradient; see lu_factor_ex)."""
    return lu_unpack(*lu_factor(A, pivot=pivot))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (A^T X = B with adjoint, X A = B with left=False) for A = P L U given by
    lu_factor, as torch.linalg.lu_solve: two triangular solves after the row permutation,
    differentiable in B and in LU (through the triangular solves)."""
    P, L, U = lu_unpack(LU, pivots)
    if not left:
        return lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT
    if adjoint:  # A^T = U^T L^T P^T: U^T y = B, L^T z = y, X = P z
        y = solve_triangular(U.mT, B, upper=False)
        return P @ solve_triangular(L.mT, y, upper=True, unitriangular=True)
    y = solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
    return solve_triangular(U, y, upper=True)


def cholesky_solve(B, L, upper=False):
    """X with A X = B for A = L L^T given its Cholesky factor L (upper: A = U^T U), as
    torch.cholesky_solve: two triangular solves (differentiable in B and L)."""
    if upper:
        y = solve_triangular(L.mT, B, upper=False)
        return solve_triangular(L, y, upper=True)
    y = solve_triangular(L, B, upper=False)
    return solve_triangular(L.mT, y, upper=True)


def cholesky_inverse(L, upper=False):
    """The inverse of A = L L^T (upper: U^T U) from its Cholesky factor, as torch.cholesky_inverse."""
    eye = T.eye(L.shape[-1], dtype=L.dtype)
    return cholesky_solve(T.broadcast_to(eye, L.shape), L, upper)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """(X, A) with A X = b (A^T X = b with transpose) for triangular A, as the deprecated
    torch.triangular_solve (its argument order: b first)."""
    X = solve_triangular(A.mT if transpose else A, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TriangularSolve(X, A.clone())


def _torch_lu(A, pivot=True, get_infos=False):
    """torch.lu (deprecated): (LU, pivots) or (LU, pivots, infos) with get_infos."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def _torch_lu_solve(b, LU_data, LU_pivots):
    """torch.lu_solve (deprecated argument order): X with A X = b."""
    return lu_solve(LU_data, LU_pivots, b)


def _method_alias(names, fn):
    for name in names:
        setattr(T.Tensor, name, fn)


_TOP_LEVEL = {"svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank, "inverse": inv, "det": det, "logdet": logdet, "slogdet": slogdet, "pinverse": pinv, "svd": _svd_v,
              "matrix_power": matrix_power, "matrix_exp": matrix_exp, "cholesky": lambda A, upper=False: cholesky(A, upper=upper),
              "qr": lambda A, some=True: qr(A, "reduced" if some else "complete"), "geqrf": geqrf, "orgqr": orgqr,
              "lu": _torch_lu, "lu_solve": _torch_lu_solve, "lu_unpack": lu_unpack, "cholesky_solve": cholesky_solve,
              "cholesky_inverse": cholesky_inverse, "triangular_solve": triangular_solve}
for _name, _fn in _TOP_LEVEL.items():
    _method_alias([_name], _fn)
