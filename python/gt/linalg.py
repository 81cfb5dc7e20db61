"""gt.linalg: the norms of torch.linalg (what gradient-norm and normalization code calls).

Factorizations and solvers (inv, det, solve, svd, qr, cholesky, eig) are not in GT."""
import builtins

from . import _functions as T


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ord-norm of x's elements over `dim` (all elements when None), as
    torch.linalg.vector_norm: sum(|x|^ord)^(1/ord); ord inf / -inf is max / min |x|; ord 0
    counts the non-zeros."""
    if dtype is not None:
        x = T.cast(x, dtype)
    a = T.abs(x)
    if ord == float("inf"):
        return T.amax(a, dim, keepdim)
    if ord == float("-inf"):
        return T.amin(a, dim, keepdim)
    if ord == 0:
        return T.sum(T.cast(a != 0, x.dtype), dim, keepdim)
    if ord == 1:
        return T.sum(a, dim, keepdim)
    if ord == 2:
        return T.sqrt(T.sum(x * x, dim, keepdim))
    return T.pow(T.sum(T.pow(a, ord), dim, keepdim), 1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The Frobenius norm ('fro') of the matrices over the two axes `dim`, or ord 1 / -1 (max /
    min column sum of |A|) and inf / -inf (max / min row sum). The nuclear and spectral norms
    (singular values) are not in GT: NotImplementedError."""
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
    raise NotImplementedError(f"gt.linalg.matrix_norm: ord={ord!r} needs singular values, which GT does not compute")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: vector_norm (ord 2 by default) when dim is an int or x is 1-D or ord is
    None with dim None (the 2-norm of all elements), else matrix_norm ('fro' by default)."""
    if isinstance(dim, int) or (dim is None and (ord is None or A.ndim == 1)):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return matrix_norm(A, "fro" if ord is None else ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
