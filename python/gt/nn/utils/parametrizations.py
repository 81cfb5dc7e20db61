"""gt.nn.utils.parametrizations, as torch.nn.utils.parametrizations: weight normalization and
spectral normalization as parametrizations (gt.nn.utils.parametrize)."""
from ... import _functions as T
from ... import dtypes as _dt
from ...autograd import no_grad
from .. import functional as F
from ..modules import Module
from . import parametrize


def _norm_except_dim(v, dim):
    """The 2-norm of v over every axis but `dim`, keeping them; over all axes (0-d) when dim is
    None or -1, as PyTorch's norm_except_dim (weight_norm(dim=None) stores dim -1)."""
    if dim is None or dim == -1:
        return T.sqrt(T.sum(v * v))
    dim = dim % v.ndim
    axes = tuple(a for a in range(v.ndim) if a != dim)
    return T.sqrt(T.sum(v * v, axes, keepdim=True)) if axes else T.abs(v)


class _WeightNorm(Module):
    """weight = g * v / ||v|| (Salimans & Kingma 2016), the norm over every axis but `dim`."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrizes `module.<name>` as g * v / ||v|| (Salimans & Kingma 2016, "Weight
    Normalization"), the norm over every axis but `dim` (0: per output channel), as
    torch.nn.utils.parametrizations.weight_norm: the originals are
    `module.parametrizations.<name>.original0` (g) and `original1` (v). Returns module."""
    return parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value of the weight as a matrix (axis `dim`
    first, the rest flattened), estimated by power iteration (Miyato et al. 2018): each forward
    in training mode runs n_power_iterations steps on the buffers _u and _v."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim if ndim else 0
        self.eps = eps
        self.n_power_iterations = n_power_iterations
        if ndim > 1:
            w = self._matrix(weight)
            h, wd = w.shape
            u = F.normalize(T.randn(h, dtype=weight.dtype), dim=0, eps=eps)
            v = F.normalize(T.randn(wd, dtype=weight.dtype), dim=0, eps=eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(w, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = T.permute(weight, self.dim, *[d for d in range(weight.ndim) if d != self.dim])
        return T.reshape(weight, weight.shape[0], -1)

    def _power_method(self, w, iterations):
        with no_grad():
            for _ in range(iterations):
                self._u = F.normalize(T.matmul(w, self._v), dim=0, eps=self.eps)
                self._v = F.normalize(T.matmul(T.transpose(w, 0, 1), self._u), dim=0, eps=self.eps)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        w = self._matrix(weight)
        if self.training:
            self._power_method(w.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = T.sum(u * T.matmul(w, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrizes `module.<name>` as weight / sigma(weight) (Miyato et al. 2018, "Spectral
    Normalization for GANs"), sigma estimated by power iteration on the buffers
    `module.parametrizations.<name>[0]._u` / `_v`, updated on each forward in training mode,
    as torch.nn.utils.parametrizations.spectral_norm. dim defaults to 1 for transposed
    convolutions, else 0. Returns module; ValueError if it has no such tensor."""
    weight = getattr(module, name, None)
    if not isinstance(weight, T.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    return parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))


class _Orthogonal(Module):
    """Q with orthonormal columns (rows, for a wide matrix) from an unconstrained X of the same
    shape (..., n, k), n >= k after transposing a wide one: the strictly lower triangle of X,
    padded to n x n, gives a skew-symmetric A = X - X^T, and Q is the first k columns of
    exp(A) ("matrix_exp") or of the Cayley transform (I - A/2)^-1 (I + A/2) ("cayley"), both
    orthogonal for any X; or ("householder") the product of the reflectors whose vectors are
    X's columns below the diagonal (unit diagonal, tau = 2 / (1 + |v|^2), which makes each an
    exact reflection), its columns' signs from X's diagonal (kept at +-1, no gradient). With
    use_trivialization (the default), Q = base @ Q(X), `base` (a buffer) the orthogonal matrix
    set by right_inverse (Lezcano-Casado 2019, "Trivializations for gradient-based optimization
    on manifolds"), as PyTorch's."""

    def __init__(self, weight, orthogonal_map, use_trivialization):
        super().__init__()
        if weight.ndim < 2:
            raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        from ... import linalg
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X, (n, k) = X.mT, (k, n)
        if self.orthogonal_map == "householder":
            A = T.tril(X, -1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = linalg.householder_product(A, tau)
            signs = T.cast(T.cast(X.detach().diagonal(0, -2, -1), _dt.int32), Q.dtype)  # +-1 (PyTorch's .int())
            Q = Q * signs.unsqueeze(-2)
            if self.__dict__.get("_buffers", {}).get("base") is not None:
                Q = self.base @ Q
            return Q.mT if transposed else Q
        X = T.tril(X)
        if n != k:
            X = T.cat([X, T.zeros(tuple(X.shape[:-2]) + (n, n - k), dtype=X.dtype)], -1)
        A = X - X.mT
        if self.orthogonal_map == "matrix_exp":
            Q = linalg.matrix_exp(A)
        else:
            eye = T.broadcast_to(T.eye(n, dtype=A.dtype), A.shape)
            Q = linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
        if n != k:
            Q = Q[..., :k]
        if self.__dict__.get("_buffers", {}).get("base") is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                             f"{tuple(Q.shape)}.")
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                          "parametrizations when use_trivialization=False.")
            # X whose reflectors give Q's own QR factor: geqrf's, its diagonal R's signs, flipped
            # where a reflector is the identity (tau = 0), as PyTorch's.
            from ... import linalg
            transposed = Q.shape[-2] < Q.shape[-1]
            A, tau = linalg.geqrf(Q.mT if transposed else Q)
            diag = T.sign(A.diagonal(0, -2, -1))
            diag = T.where(tau == 0, -diag, diag)
            k = diag.shape[-1]
            eye = T.eye(A.shape[-2], A.shape[-1], dtype=A.dtype)
            A = A * (1.0 - eye) + eye * T.cat([diag, T.zeros(tuple(diag.shape[:-1]) + (A.shape[-1] - k,), dtype=A.dtype)], -1).unsqueeze(-2)
            return A.mT if transposed else A
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        if n < k:
            Q, (n, k) = Q.mT, (k, n)
        if n != k:  # complete the columns to an n x n matrix, then orthogonalize it
            Q = T.cat([Q, T.randn(tuple(Q.shape[:-2]) + (n, n - k), dtype=Q.dtype)], -1)
        self.base = _make_orthogonal(Q)
        # -I: its padded strictly-lower part is 0, so forward gives base's first k columns.
        rows, cols = Q_init.shape[-2], Q_init.shape[-1]
        return -T.broadcast_to(T.eye(rows, cols, dtype=Q_init.dtype), Q_init.shape)


def _make_orthogonal(A):
    """The Q of A = Q R with R's diagonal made non-negative (the orthogonal matrix nearest to
    A's Gram-Schmidt), for square A (..., n, n)."""
    from ... import linalg
    Q, R = linalg.qr(A)
    signs = T.sign(R.diagonal(0, -2, -1))
    signs = T.where(signs == 0, 1.0, signs)
    return Q * T.unsqueeze(signs, -2)


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrains `module.<name>` (a matrix or a batch, (..., n, k)) to orthonormal columns
    (rows if n < k), as torch.nn.utils.parametrizations.orthogonal: the weight starts as the
    orthogonalized original (QR) and stays orthogonal under any optimizer step on
    `module.parametrizations.<name>.original`. orthogonal_map "matrix_exp", "cayley" or
    "householder" (see _Orthogonal); by default, as PyTorch's, "matrix_exp" for a square
    matrix and "householder" otherwise. Returns module; ValueError for a tensor of fewer than
    2 dimensions or an unknown map."""
    weight = getattr(module, name, None)
    if not isinstance(weight, T.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}')
    return parametrize.register_parametrization(module, name, _Orthogonal(weight, orthogonal_map, use_trivialization),
                                                unsafe=True)
