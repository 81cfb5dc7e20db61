"""The functions and Tensor methods of gt._composites (issue 24) against NumPy float64, their
gradients against central differences, and the ones that read values."""
import math

import numpy as np
import pytest

import gt
from conftest import check
from test_api import check_grad

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)) * 2
Y = rng.standard_normal((3, 4)) * 2 + 0.1
P = np.abs(X) + 0.5

UNARY = {
    "reciprocal": (P, lambda a: 1 / a), "square": (X, np.square), "trunc": (X, np.trunc), "frac": (X, lambda a: a - np.trunc(a)),
    "ceil": (X, np.ceil), "expm1": (X, np.expm1), "exp2": (X, np.exp2), "log2": (P, np.log2), "log10": (P, np.log10),
    "sinh": (X, np.sinh), "cosh": (X, np.cosh), "tan": (X / 3, np.tan), "deg2rad": (X, np.deg2rad),
    "rad2deg": (X, np.rad2deg), "sinc": (X, np.sinc),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    a, ref = UNARY[name]
    check(getattr(gt, name)(gt.tensor(a)), ref(a))
    check(getattr(gt.tensor(a), name)(), ref(a))


def test_binary_and_ternary():
    check(gt.fmod(gt.tensor(X), 1.5), np.fmod(X, 1.5))
    check(gt.fmod(gt.tensor([-7, 7, -7, 5]), gt.tensor([3, -3, -3, 5])), np.fmod([-7, 7, -7, 5], [3, -3, -3, 5]))
    check(gt.hypot(gt.tensor(X), gt.tensor(Y)), np.hypot(X, Y))
    check(gt.logaddexp(gt.tensor(X * 50), gt.tensor(Y)), np.logaddexp(X * 50, Y))
    check(gt.xlogy(gt.tensor([0.0, 2.0]), gt.tensor([0.0, 3.0])), [0.0, 2 * math.log(3)])
    check(gt.heaviside(gt.tensor([-1.0, 0.0, 2.0]), gt.tensor(0.5)), [0.0, 0.5, 1.0])
    check(gt.addcmul(gt.tensor(X), gt.tensor(Y), gt.tensor(P), value=0.5), X + 0.5 * Y * P)
    check(gt.tensor(X).addcdiv(gt.tensor(Y), gt.tensor(P), value=2), X + 2 * Y / P)
    z = np.array([1.0, np.nan, np.inf, -np.inf])
    check(gt.nan_to_num(gt.tensor(z)), np.nan_to_num(z))
    check(gt.nan_to_num(gt.tensor(z, dtype=gt.float32), nan=-1.0, posinf=9.0), [1.0, -1.0, 9.0, np.finfo(np.float32).min])
    check_grad(lambda t: gt.sinh(t) + gt.tan(t / 3) + gt.log2(t * t + 1), lambda a: np.sinh(a) + np.tan(a / 3)
               + np.log2(a * a + 1), X)


def test_reductions():
    z = X.copy()
    z[0, 1] = z[2, 3] = np.nan
    check(gt.nansum(gt.tensor(z)), np.nansum(z))
    check(gt.nanmean(gt.tensor(z), 1), np.nanmean(z, 1))
    check(gt.count_nonzero(gt.tensor([[0, 1], [2, 0]]), 0), [1, 1])
    v, m = gt.var_mean(gt.tensor(X), 1)
    check(v, X.var(1, ddof=1))
    check(m, X.mean(1))
    s, _ = gt.std_mean(gt.tensor(X), 0, correction=0)
    check(s, X.std(0))


def test_shapes_indices_and_search():
    check(gt.tile(gt.tensor(X), (2,)), np.tile(X, 2))
    check(gt.tile(gt.tensor(X), (2, 1, 3)), np.tile(X, (2, 1, 3)))
    parts = gt.tensor_split(gt.tensor(np.arange(10.0)), 3)
    assert [p.numpy().tolist() for p in parts] == [a.tolist() for a in np.array_split(np.arange(10.0), 3)]
    parts = gt.tensor(X).tensor_split([1, 3], dim=1)
    assert [p.shape for p in parts] == [(3, 1), (3, 2), (3, 1)]
    idx = np.array([[0, 2], [1, 0], [3, 1]])  # no repeats within a row (PyTorch leaves those undefined)
    got = gt.scatter(gt.tensor(X), 1, gt.tensor(idx), gt.tensor(Y[:, :2]))
    want = X.copy()
    np.put_along_axis(want, idx, Y[:, :2], 1)
    check(got, want)
    zeroed = X.copy()
    np.put_along_axis(zeroed, idx, 0.0, 1)
    check(gt.tensor(X).scatter(1, gt.tensor(idx), 0.0), zeroed)
    check(gt.scatter(gt.tensor(X), 1, gt.tensor(idx), gt.tensor(Y[:, :2]), reduce="add"),
          X + np.stack([np.bincount(r, w, 4) for r, w in zip(idx, Y[:, :2])]))
    b = np.array([1.0, 3.0, 5.0, 7.0])
    v = np.array([[0.5, 3.0, 9.0], [5.0, 5.5, 1.0]])
    check(gt.searchsorted(gt.tensor(b), gt.tensor(v)), np.searchsorted(b, v))
    check(gt.searchsorted(gt.tensor(b), gt.tensor(v), right=True), np.searchsorted(b, v, side="right"))
    check(gt.bucketize(gt.tensor(v), gt.tensor(b)), np.searchsorted(b, v))
    a, c = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    dist = np.sqrt(((a[:, None] - c[None]) ** 2).sum(-1))
    check(gt.cdist(gt.tensor(a), gt.tensor(c)), dist, atol=1e-6)
    check(gt.cdist(gt.tensor(a), gt.tensor(c), p=1.0), np.abs(a[:, None] - c[None]).sum(-1))
    gi, gj = gt.meshgrid(gt.arange(3), gt.arange(4), indexing="ij")
    ni, nj = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    check(gi, ni)
    check(gj, nj)
    gx, gy = gt.meshgrid(gt.arange(3), gt.arange(4), indexing="xy")
    nx, ny = np.meshgrid(np.arange(3), np.arange(4), indexing="xy")
    check(gx, nx)
    check(gy, ny)
    check(gt.cartesian_prod(gt.tensor([1, 2]), gt.tensor([3, 4, 5])), [[1, 3], [1, 4], [1, 5], [2, 3], [2, 4], [2, 5]])
    check(gt.tril_indices(3, 4, 1), np.stack(np.tril_indices(3, 1, 4)))
    check(gt.triu_indices(4, 3), np.stack(np.triu_indices(4, 0, 3)))
    x = np.array([1, 3, 3, 0, 1, 3])
    check(gt.bincount(gt.tensor(x)), np.bincount(x))
    check(gt.bincount(gt.tensor(x), gt.tensor(np.arange(6.0)), minlength=6), np.bincount(x, np.arange(6.0), 6))
    values, inverse, counts = gt.unique(gt.tensor(x), return_inverse=True, return_counts=True)
    nv, ni_, nc = np.unique(x, return_inverse=True, return_counts=True)
    check(values, nv)
    check(inverse, ni_)
    check(counts, nc)


def test_random():
    gt.manual_seed(0)
    draws = gt.bernoulli(gt.full((20000,), 0.3)).numpy()
    assert set(np.unique(draws)) == {0.0, 1.0} and abs(draws.mean() - 0.3) < 0.02
    z = gt.zeros(20000).bernoulli_(0.7).numpy()
    assert abs(z.mean() - 0.7) < 0.02
    n = gt.normal(2.0, 3.0, size=(20000,)).numpy()
    assert abs(n.mean() - 2.0) < 0.1 and abs(n.std() - 3.0) < 0.1
    m = gt.normal(gt.tensor([0.0, 10.0]), 0.01).numpy()
    assert abs(m[0]) < 0.1 and abs(m[1] - 10) < 0.1
    r = gt.randint_like(gt.zeros(1000, dtype=gt.int64), 3, 7).numpy()
    assert r.min() >= 3 and r.max() < 7


def test_tensor_methods():
    x = gt.tensor(X, dtype=gt.float32)
    assert x.new_tensor([1, 2]).dtype == gt.float32 and x.new_empty(2, 3).shape == (2, 3)
    assert x.view_as(gt.zeros(4, 3)).shape == (4, 3) and x.reshape_as(gt.zeros(12)).shape == (12,)
    assert x.element_size() == 4 and x.nelement() == 12 and x.nbytes == 48 and x.itemsize == 4
    assert x.is_contiguous() and x.stride() == (4, 1) and x.stride(0) == 4 and x.storage_offset() == 0
    check(x.t(), X.T.astype(np.float32))
    check(x.mH, X.T.astype(np.float32))
    assert x.type() == "torch.FloatTensor" and x.type(gt.float64).dtype == gt.float64
    assert x.type("torch.LongTensor").dtype == gt.int64
    y = gt.tensor(X)
    y.abs_().sqrt_()
    check(y, np.sqrt(np.abs(X)))
    y.clamp_min_(1.0)
    check(y, np.maximum(np.sqrt(np.abs(X)), 1.0))
    w = gt.tensor(X, requires_grad=True)
    h = w * 2
    h.detach_()
    assert h.is_leaf and not h.requires_grad
    with pytest.raises(RuntimeError, match="<= 2 dimensions"):
        gt.zeros(2, 2, 2).t()
