"""gt.special, as torch.special: the special functions GT's ops express, each differentiable
through them (zeta is not, as PyTorch's; gammainc and gammaincc only in their second argument,
as PyTorch's). Bessel functions J, Y, I and K of orders 0 and 1 and the regularized incomplete
gamma functions are composites of GT ops in float64 (series, asymptotic expansions, a
continued fraction: see gt._composites), the orthogonal polynomials their recurrences.
Functions not here (airy_ai) raise AttributeError, as for any missing name."""
import functools
import math

import gt as T  # the package (its functions are looked up when called)

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "log1p", "expm1", "exp2", "xlogy", "xlog1py", "logsumexp",
           "softmax", "log_softmax", "sinc", "round", "entr", "ndtr", "log_ndtr", "gammaln", "digamma", "psi",
           "polygamma", "multigammaln", "zeta", "i0", "i0e", "i1", "i1e", "modified_bessel_i0",
           "modified_bessel_i1", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
           "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
           "gammainc", "gammaincc", "ndtri", "erfcx", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
           "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
           "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]


def gammaln(input):
    """log |Gamma(x)| (torch.special.gammaln, torch.lgamma)."""
    return T.lgamma(input)


def digamma(input):
    """d/dx log Gamma(x) (torch.special.digamma; -inf at 0, NaN at negative integers)."""
    return T.digamma(input)


psi = digamma


def polygamma(n, input):
    """The n-th derivative of digamma (torch.special.polygamma; see gt.polygamma)."""
    return T.polygamma(n, input)


def zeta(input, other):
    """The Hurwitz zeta function zeta(input, other) (torch.special.zeta; see gt._composites.zeta)."""
    from ._composites import zeta as _zeta
    return _zeta(input, other)


def multigammaln(input, p):
    """The multivariate log-gamma function of dimension p (torch.special.multigammaln)."""
    return T.mvlgamma(input, p)


def expit(input):
    """1 / (1 + e^-x): the logistic sigmoid (torch.special.expit)."""
    return T.sigmoid(input)


def logit(input, eps=None):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given (torch.special.logit)."""
    return T.logit(input, eps)


def erf(input):
    """The error function 2 / sqrt(pi) * integral of e^(-t^2) from 0 to x."""
    return T.erf(input)


def erfc(input):
    """1 - erf(x)."""
    return T.erfc(input)


def erfinv(input):
    """The inverse of erf on (-1, 1)."""
    return T.erfinv(input)


def log1p(input):
    """log(1 + x)."""
    return T.log1p(input)


def expm1(input):
    """e^x - 1."""
    return T.expm1(input)


def exp2(input):
    """2^x."""
    return T.exp2(input)


def xlogy(input, other):
    """x * log(y), 0 where x == 0 (torch.special.xlogy)."""
    return T.xlogy(input, other)


def xlog1py(input, other):
    """x * log1p(y), 0 where x == 0 (torch.special.xlog1py)."""
    x = input if isinstance(input, T.Tensor) else T.tensor(input)
    return T.where(x == 0, T.zeros_like(x * other), x * T.log1p(other))


def logsumexp(input, dim, keepdim=False):
    """log(sum(e^x)) over dim, computed stably."""
    return T.logsumexp(input, dim, keepdim)


def softmax(input, dim, dtype=None):
    """e^x / sum(e^x) over dim (input cast to dtype first, when given)."""
    return T.nn.functional.softmax(input if dtype is None else input.to(dtype), dim)


def log_softmax(input, dim, dtype=None):
    """x - logsumexp(x) over dim (input cast to dtype first, when given)."""
    return T.nn.functional.log_softmax(input if dtype is None else input.to(dtype), dim)


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (the normalized sinc)."""
    return T.sinc(input)


def round(input, decimals=0):
    """Rounds half to even (to `decimals` decimal places)."""
    return T.round(input, decimals=decimals)


def entr(input):
    """-x log(x) for x > 0, 0 at 0, -inf for x < 0 (torch.special.entr)."""
    x = input
    return T.where(x > 0, -x * T.log(T.where(x > 0, x, T.ones_like(x))),
                   T.where(x == 0, T.zeros_like(x), T.full_like(x, float("-inf"))))


def ndtr(input):
    """The standard normal's cumulative distribution: erfc(-x / sqrt(2)) / 2 (precise in the left
    tail, where (1 + erf(x / sqrt(2))) / 2 is 0)."""
    return 0.5 * T.erfc(-input * (1.0 / math.sqrt(2.0)))


def log_ndtr(input):
    """log(ndtr(x)): for x < -1 as log(erfcx(t) / 2) - t^2 with t = -x / sqrt(2) (no underflow:
    log_ndtr(-40) = -804.6), else log1p(-erfc(x / sqrt(2)) / 2); finite gradients everywhere."""
    x = input if input.dtype.is_floating_point else input.float()
    t = T.clamp(-x, min=1.0) * (1.0 / math.sqrt(2.0))
    left = T.log(0.5 * erfcx(t)) - t * t
    right = T.log1p(-0.5 * T.erfc(T.clamp(x, min=-1.0) * (1.0 / math.sqrt(2.0))))
    return T.where(x < -1.0, left, right)


def i0(input):
    """The modified Bessel function I0 (torch.special.i0)."""
    from ._composites import i0 as f
    return f(input)


def i0e(input):
    """exp(-|x|) I0(x) (torch.special.i0e)."""
    from ._composites import i0e as f
    return f(input)


def i1(input):
    """The modified Bessel function I1 (torch.special.i1)."""
    from ._composites import i1 as f
    return f(input)


def i1e(input):
    """exp(-|x|) I1(x) (torch.special.i1e)."""
    from ._composites import i1e as f
    return f(input)


def modified_bessel_i0(input):
    """I0 (torch.special.modified_bessel_i0; the same function as i0)."""
    return i0(input)


def modified_bessel_i1(input):
    """I1 (torch.special.modified_bessel_i1; the same function as i1)."""
    return i1(input)


def _composite(name):
    """gt._composites' function `name`, looked up when called (that module imports the package)."""
    from . import _composites

    @functools.wraps(getattr(_composites, name))  # its name, docstring and signature
    def fn(*args):
        from . import _composites
        return getattr(_composites, name)(*args)
    return fn


bessel_j0, bessel_j1, bessel_y0, bessel_y1 = (_composite(n) for n in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1"))
modified_bessel_k0, modified_bessel_k1 = _composite("modified_bessel_k0"), _composite("modified_bessel_k1")
scaled_modified_bessel_k0 = _composite("scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _composite("scaled_modified_bessel_k1")


def spherical_bessel_j0(input):
    """The spherical Bessel function j0(x) = sin(x) / x, 1 at 0 (torch.special.spherical_bessel_j0)."""
    x = input if isinstance(input, T.Tensor) and input.dtype.is_floating_point else T.as_tensor(input).float()
    zero = x == 0
    safe = T.where(zero, 1.0, x)
    return T.where(zero, 1.0, T.sin(safe) / safe)


gammainc, gammaincc = _composite("gammainc"), _composite("gammaincc")


def ndtri(input):
    """The standard normal's quantile function, ndtr's inverse on (0, 1): sqrt(2) erfinv(2p - 1)
    in float64 (2p - 1 in float32 would lose the tails: p = 1e-6 would be off by 3e-3), -inf
    at 0, inf at 1, NaN outside (torch.special.ndtri)."""
    from ._composites import erfinv
    from . import dtypes as _dt
    p = input if isinstance(input, T.Tensor) and input.dtype.is_floating_point else T.as_tensor(input).float()
    return (math.sqrt(2.0) * erfinv(2.0 * p.to(_dt.float64) - 1.0)).to(p.dtype)


def erfcx(input):
    """The scaled complementary error function exp(x^2) erfc(x) (torch.special.erfcx), in
    float64: as written for x < 2 (relative error below 1e-14 there); above, where
    exp(x^2) erfc(x) loses erfc's tail, by the continued fraction erfcx(x) = (1/sqrt(pi)) /
    (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))) (DLMF 7.9.2), 100 levels evaluated from the
    bottom (1e-15 from x = 1.5 on)."""
    from . import dtypes as _dt
    x = input if isinstance(input, T.Tensor) and input.dtype.is_floating_point else T.as_tensor(input).float()
    x64 = x.to(_dt.float64)
    small = T.clamp(x64, max=2.0)
    direct = T.exp(small * small) * T.erfc(small)
    large = T.clamp(x64, min=2.0)
    tail = large
    for k in range(100, 0, -1):
        tail = large + (0.5 * k) / tail
    fraction = 1.0 / (math.sqrt(math.pi) * tail)
    return T.where(x64 < 2.0, direct, fraction).to(x.dtype)


(chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w,
 shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
 shifted_chebyshev_polynomial_w, hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l,
 legendre_polynomial_p) = (_composite(n) for n in (
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p"))
