"""gt.nn.utils.parametrizations, as torch.nn.utils.parametrizations: weight normalization and
spectral normalization as parametrizations (gt.nn.utils.parametrize)."""
from ... import _functions as T
from ...autograd import no_grad
from .. import functional as F
from ..modules import Module
from . import parametrize


def _norm_except_dim(v, dim):
    """The 2-norm of v over every axis but `dim` (all axes when dim is None), keeping them."""
    if dim is None:
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
