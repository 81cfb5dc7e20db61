"""The tensor API harness: every op against NumPy, over dtypes, broadcasting pairs, 0-d and
empty tensors and odd sizes; gradients against float64 central differences of the NumPy
reference; bad input raising PyTorch's exception types at the user's line.

Tolerances: float32 results within rtol 2e-5 / atol 1e-5 of the float64 reference (1e-4 for
transcendental functions of larger arguments), float64 within 1e-10; float16 within 4e-3 and
bfloat16 within 3e-2 (8 units in the last place: each op rounds once, composite ops a few
times), the reference computed from the 16-bit inputs; integers and bools exact.
Gradients (float64 inputs) within rtol 1e-5 / atol 1e-6 of central differences (eps 1e-6).
"""
import json
import math
import os

import ml_dtypes
import numpy as np
import pytest

import gt
import gt.nn.functional as F
from conftest import check

rng = np.random.default_rng(1234)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
np_erf = np.vectorize(math.erf, otypes=[np.float64])
np_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])


def _polygamma_ref(x, order):
    """digamma (order 0) or trigamma (order 1) of x > 0 in Python floats: 30 steps of the
    recurrence, then the asymptotic series with terms to w^-16 (a longer shift and series than
    GT's six steps and w^-11)."""
    steps = sum(1.0 / (x + k) ** (order + 1) for k in range(30))
    w = x + 30
    if order == 0:
        bernoulli = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510]
        series = math.log(w) - 0.5 / w - sum(b / (2 * n * w ** (2 * n)) for n, b in enumerate(bernoulli, 1))
        return series - steps
    bernoulli = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6]
    series = 1 / w + 0.5 / w ** 2 + sum(b / w ** (2 * n + 1) for n, b in enumerate(bernoulli, 1))
    return series + steps


np_digamma = np.vectorize(lambda x: _polygamma_ref(x, 0), otypes=[np.float64])
np_trigamma = np.vectorize(lambda x: _polygamma_ref(x, 1), otypes=[np.float64])


def data(shape, dtype, domain="real"):
    """Random inputs of `shape`; `domain` keeps them where the op is smooth and defined."""
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(-9, 10, shape).astype(dtype)
        return np.where(x == 0, 3, x).astype(dtype) if domain == "nonzero" else x
    x = rng.standard_normal(shape)
    if domain == "positive":
        x = np.abs(x) + 0.5
    elif domain == "gt-1":
        x = np.abs(x) * 0.8 - 0.7
    elif domain == "nonzero":
        x = np.where(np.abs(x) < 0.3, 0.7, x)
    elif domain == "unit":  # inside (-1, 1), away from its ends (asin, acos)
        x = np.tanh(x) * 0.9
    elif domain == "smooth":  # away from kinks (relu, abs) and ties
        x = np.where(np.abs(x) < 0.05, 0.5, x)
    return x.astype(dtype)


def is_float(dtype):
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == bfloat16


def tol(dtype, loose=False):
    if np.dtype(dtype) == np.float16:
        return dict(atol=4e-3, rtol=4e-3)
    if np.dtype(dtype) == bfloat16:
        return dict(atol=3e-2, rtol=3e-2)
    if np.dtype(dtype) == np.float64:
        return dict(atol=1e-10, rtol=1e-10)
    if np.dtype(dtype) == np.float32:
        return dict(atol=1e-4, rtol=1e-4) if loose else dict(atol=1e-5, rtol=2e-5)
    return dict(atol=0, rtol=0)


def numerical_grad(f, xs, i, weight, eps=1e-6):
    """d sum(weight * f(xs)) / d xs[i] by central differences in float64."""
    x = xs[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        hi = (weight * f(*xs)).sum()
        x[idx] = old - eps
        lo = (weight * f(*xs)).sum()
        x[idx] = old
        g[idx] = (hi - lo) / (2 * eps)
    return g


def check_grad(gt_fn, np_fn, *arrays, atol=1e-6, rtol=1e-5):
    """Backward of sum(w * gt_fn(x...)) with random w against numerical differentiation."""
    xs = [np.array(a, dtype=np.float64) for a in arrays]
    ts = [gt.tensor(x, requires_grad=True) for x in xs]
    out = gt_fn(*ts)
    w = rng.standard_normal(out.shape)
    (out * gt.tensor(w)).sum().backward()
    for i, t in enumerate(ts):
        expected = numerical_grad(np_fn, xs, i, w)
        assert t.grad is not None, f"input {i} got no gradient"
        check(t.grad, expected, atol=atol, rtol=rtol, label=f"grad of input {i}")


# ---------------------------------------------------------------- elementwise

def np_gelu(x):
    return 0.5 * x * (1 + np_erf(x / math.sqrt(2)))


UNARY = {  # name: (gt fn, NumPy fn, domain, dtypes, differentiable, loose float32 tolerance)
    "neg": (gt.neg, np.negative, "real", "fi", True, False),
    "abs": (gt.abs, np.abs, "smooth", "fi", True, False),
    "exp": (gt.exp, np.exp, "real", "f", True, True),
    "log": (gt.log, np.log, "positive", "f", True, True),
    "log1p": (gt.log1p, np.log1p, "gt-1", "f", True, True),
    "sqrt": (gt.sqrt, np.sqrt, "positive", "f", True, False),
    "rsqrt": (gt.rsqrt, lambda x: 1 / np.sqrt(x), "positive", "f", True, False),
    "sin": (gt.sin, np.sin, "real", "f", True, True),
    "cos": (gt.cos, np.cos, "real", "f", True, True),
    "tanh": (gt.tanh, np.tanh, "real", "f", True, True),
    "sigmoid": (gt.sigmoid, lambda x: 1 / (1 + np.exp(-x)), "real", "f", True, True),
    "relu": (gt.relu, lambda x: np.maximum(x, 0), "smooth", "fi", True, False),
    "erf": (gt.erf, np_erf, "real", "f", True, True),
    "gelu": (gt.gelu, np_gelu, "real", "f", True, True),
    "gelu_tanh": (lambda x: gt.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), "real", "f",
                  True, True),
    "silu": (gt.silu, lambda x: x / (1 + np.exp(-x)), "real", "f", True, True),
    "atan": (gt.atan, np.arctan, "real", "f", True, False),
    "asin": (gt.asin, np.arcsin, "unit", "f", True, False),
    "acos": (gt.acos, np.arccos, "unit", "f", True, False),
    "lgamma": (gt.lgamma, np_lgamma, "positive", "f", True, False),
    "digamma": (gt.digamma, np_digamma, "positive", "f", True, False),
    "trigamma": (lambda x: gt.polygamma(1, x), np_trigamma, "positive", "f", False, False),
    "floor": (gt.floor, np.floor, "real", "fi", False, False),
    "clamp": (lambda x: gt.clamp(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), "smooth", "f", True, False),
    "square": (lambda x: x ** 2, np.square, "real", "fi", True, False),
    "pow3": (lambda x: x ** 3.0, lambda x: x ** 3.0, "real", "f", True, False),
    "bitwise_not": (lambda x: ~x, np.invert, "real", "i", False, False),
}
DTYPES = {"f": [np.float32, np.float64, np.float16, bfloat16], "i": [np.int32, np.int64]}
UNARY_SHAPES = [(), (0,), (7,), (3, 5), (2, 1, 3)]


def unary_cases():
    for name, (_, _, _, kinds, _, _) in UNARY.items():
        for k in kinds:
            for dt in DTYPES[k]:
                yield pytest.param(name, dt, id=f"{name}-{np.dtype(dt).name}")


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=str)
@pytest.mark.parametrize("name,dtype", list(unary_cases()))
def test_unary_forward(name, dtype, shape):
    fn, ref, domain, _, _, loose = UNARY[name]
    x = data(shape, dtype, domain)
    out = fn(gt.tensor(x))
    expected = ref(x.astype(np.float64) if is_float(dtype) else x)
    assert out.shape == expected.shape
    assert out.dtype.numpy == np.dtype(dtype), f"{name} changed the dtype to {out.dtype}"
    check(out, expected, **tol(dtype, loose))


@pytest.mark.parametrize("name", [n for n, v in UNARY.items() if v[4]])
def test_unary_grad(name):
    fn, ref, domain, _, _, _ = UNARY[name]
    check_grad(fn, ref, data((3, 4), np.float64, domain))


BINARY = {  # name: (gt fn, NumPy fn, domain of b, dtypes, differentiable)
    "add": (lambda a, b: a + b, np.add, "real", "fi", True),
    "sub": (lambda a, b: a - b, np.subtract, "real", "fi", True),
    "mul": (lambda a, b: a * b, np.multiply, "real", "fi", True),
    "div": (lambda a, b: a / b, np.divide, "nonzero", "f", True),
    "pow": (lambda a, b: gt.abs(a) ** b, lambda a, b: np.abs(a) ** b, "real", "f", True),
    "maximum": (gt.maximum, np.maximum, "real", "fi", True),
    "minimum": (gt.minimum, np.minimum, "real", "fi", True),
    "remainder": (lambda a, b: a % b, np.mod, "nonzero", "fi", True),
    "floor_divide": (lambda a, b: a // b, np.floor_divide, "nonzero", "fi", False),
    "atan2_like": (lambda a, b: (a * b) / (1.0 + b * b), lambda a, b: (a * b) / (1.0 + b * b), "real", "f", True),
    "atan2": (gt.atan2, np.arctan2, "nonzero", "f", True),
    "bitwise_and": (lambda a, b: a & b, np.bitwise_and, "real", "i", False),
    "bitwise_or": (gt.bitwise_or, np.bitwise_or, "real", "i", False),
    "bitwise_xor": (lambda a, b: a ^ b, np.bitwise_xor, "real", "i", False),
}
PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((1,), (2, 3)), ((0, 3), (3,)),
         ((5,), (0, 1)), ((7,), ())]


def binary_cases():
    for name, (_, _, _, kinds, _) in BINARY.items():
        for k in kinds:
            for dt in DTYPES[k]:
                yield pytest.param(name, dt, id=f"{name}-{np.dtype(dt).name}")


@pytest.mark.parametrize("sa,sb", PAIRS, ids=str)
@pytest.mark.parametrize("name,dtype", list(binary_cases()))
def test_binary_forward_broadcasting(name, dtype, sa, sb):
    fn, ref, domain, _, _ = BINARY[name]
    a, b = data(sa, dtype), data(sb, dtype, domain)
    if name == "pow":
        b = np.abs(b)  # real results only
    out = fn(gt.tensor(a), gt.tensor(b))
    if is_float(dtype):
        a, b = a.astype(np.float64), b.astype(np.float64)
    check(out, ref(a, b), **tol(dtype, loose=name == "pow"))


@pytest.mark.parametrize("sa,sb", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 2))], ids=str)
@pytest.mark.parametrize("name", [n for n, v in BINARY.items() if v[4]])
def test_binary_grad_reduces_broadcasting(name, sa, sb):
    fn, ref, domain, _, _ = BINARY[name]
    a, b = data(sa, np.float64, "smooth"), data(sb, np.float64, domain)
    if name in ("maximum", "minimum"):
        b = b + 0.01  # no ties
    if name == "remainder":  # away from the jumps of a % b
        a = np.where(np.abs(np.mod(a, b) / b) < 0.05, a + 0.1 * b, a)
        a = np.where(np.abs(np.mod(a, b) / b) > 0.95, a - 0.1 * b, a)
    check_grad(fn, ref, a, b)


def test_reflected_and_inplace_forms():
    x = data((3, 2), np.float32)
    t = gt.tensor(x)
    check(2 + t, 2 + x.astype(np.float64))
    check(1.5 - t, 1.5 - x.astype(np.float64))
    check(3 / (t * t + 1), 3 / (x.astype(np.float64) ** 2 + 1), rtol=1e-5)
    check(2 ** t, 2.0 ** x.astype(np.float64), rtol=1e-5)
    check(7 // gt.tensor([2, -3]), np.array([3, -3]))
    check(7 % gt.tensor([2, -3]), np.array([1, -2]))
    u = gt.tensor(x)
    u += 1
    u -= gt.ones(2)
    u *= 3
    u /= 2
    check(u, x.astype(np.float64) * 1.5, rtol=1e-6)


COMPARE = {"eq": (lambda a, b: a == b, np.equal), "ne": (lambda a, b: a != b, np.not_equal),
           "lt": (lambda a, b: a < b, np.less), "le": (lambda a, b: a <= b, np.less_equal),
           "gt": (lambda a, b: a > b, np.greater), "ge": (lambda a, b: a >= b, np.greater_equal)}


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32])
@pytest.mark.parametrize("name", list(COMPARE))
def test_comparisons(name, dtype):
    fn, ref = COMPARE[name]
    a, b = data((4, 5), dtype), data((5,), dtype)
    b[0] = a[0, 0]  # some ties
    out = fn(gt.tensor(a), gt.tensor(b))
    assert out.dtype == gt.bool
    check(out, ref(a, b))


def test_logical_ops_and_where():
    a, b = data((3, 4), np.bool_), data((4,), np.bool_)
    ta, tb = gt.tensor(a), gt.tensor(b)
    check(gt.logical_and(ta, tb), a & b)
    check(ta | tb, a | b)
    check(ta ^ tb, a ^ b)
    check(~ta, ~a)
    check(gt.logical_not(gt.tensor([0.0, 2.0])), np.array([True, False]))
    x, y = data((3, 4), np.float32), data((3, 1), np.float32)
    check(gt.where(ta, gt.tensor(x), gt.tensor(y)), np.where(a, x, y))
    check(gt.where(ta, gt.tensor(x), 0.0), np.where(a, x, 0.0))
    check(gt.tensor(x).masked_fill(tb, -1.0), np.where(b, -1.0, x))
    check_grad(lambda p, q: gt.where(gt.tensor(a), p, q), lambda p, q: np.where(a, p, q), x, y)


def test_type_promotion_follows_pytorch():
    i32, i64 = gt.tensor([1, 2], dtype=gt.int32), gt.tensor([1, 2])
    f32, f64 = gt.tensor([1.0, 2.0]), gt.tensor([1.0, 2.0], dtype=gt.float64)
    b = gt.tensor([True, False])
    assert (i32 + i64).dtype == gt.int64
    assert (i64 + f32).dtype == gt.float32
    assert (f32 + f64).dtype == gt.float64
    assert (b + i32).dtype == gt.int32
    assert (i64 * 2.5).dtype == gt.float32  # a Python float makes an int tensor float32
    assert (f64 * 2).dtype == gt.float64  # a Python number keeps a float tensor's dtype
    assert (i64 / i64).dtype == gt.float32  # true division
    assert b.sum().dtype == gt.int64 and i32.sum().dtype == gt.int64
    assert gt.tensor(3.5).to(gt.int64).item() == 3 and f32.long().dtype == gt.int64
    assert i64.float().dtype == gt.float32 and i64.double().dtype == gt.float64 and f32.bool().dtype == gt.bool
    # A 0-d tensor widens a dimensioned one only from a higher category (torch.result_type).
    h = gt.ones(3, dtype=gt.float16)
    assert (i32 + gt.tensor(1)).dtype == gt.int32 and (i32 + gt.tensor(1.5)).dtype == gt.float32
    assert (h * gt.tensor(0.5)).dtype == gt.float16 and (f32 + gt.tensor(1.0, dtype=gt.float64)).dtype == gt.float32
    assert gt.where(h > gt.tensor(0.5), h, gt.tensor(0.0)).dtype == gt.float16
    assert (gt.tensor(1) + gt.tensor(2.0)).dtype == gt.float32 and (gt.tensor(1) + gt.tensor(2)).dtype == gt.int64
    assert (h > gt.tensor(1.0001)).tolist() == [False] * 3  # compared in float16, as PyTorch: 1.0001 is 1.0


# ---------------------------------------------------------------- reductions

AXES = [None, 0, -1, (0, 2), (1,)]
REDUCE = {  # name: (gt fn(x, axis, keepdim), NumPy fn(x, axis, keepdims), differentiable)
    "sum": (lambda t, a, k: t.sum(a, k), lambda x, a, k: x.sum(axis=a, keepdims=k), True),
    "mean": (lambda t, a, k: t.mean(a, k), lambda x, a, k: x.mean(axis=a, keepdims=k), True),
    "amax": (lambda t, a, k: gt.amax(t, a, k), lambda x, a, k: x.max(axis=a, keepdims=k), True),
    "amin": (lambda t, a, k: gt.amin(t, a, k), lambda x, a, k: x.min(axis=a, keepdims=k), True),
    "var": (lambda t, a, k: t.var(a, k), lambda x, a, k: x.var(axis=a, keepdims=k, ddof=1), True),
    "std": (lambda t, a, k: t.std(a, k, unbiased=False), lambda x, a, k: x.std(axis=a, keepdims=k), True),
    "logsumexp": (lambda t, a, k: gt.logsumexp(t, a if a is not None else (0, 1, 2), k),
                  lambda x, a, k: np.log(np.exp(x).sum(axis=a, keepdims=k)), True),
}


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", list(REDUCE))
def test_reductions(name, axis, keepdim):
    fn, ref, grad = REDUCE[name]
    x = data((3, 4, 5), np.float32)
    check(fn(gt.tensor(x), axis, keepdim), ref(x.astype(np.float64), axis, keepdim), atol=1e-5, rtol=1e-4)
    if grad:
        check_grad(lambda t: fn(t, axis, keepdim), lambda a: ref(a, axis, keepdim), data((2, 3, 4), np.float64))


def test_reductions_of_odd_zero_d_and_empty_tensors():
    check(gt.tensor(2.5).sum(), np.float64(2.5))
    check(gt.zeros(0, 4).sum(0), np.zeros(4))
    check(gt.zeros(0, 4).sum(), np.float64(0.0))
    x = data((7, 3), np.int32)
    check(gt.tensor(x).sum(0), x.sum(0))
    check(gt.amax(gt.tensor(x), 1), x.max(1))
    with pytest.raises(gt.ShapeError, match="empty axis"):
        gt.amax(gt.zeros(0, 3), 0)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_argmax_argmin_and_max_with_dim(dtype):
    x = data((4, 6), dtype)
    x[1, 2] = x[1, 4] = 100  # ties: the first index wins, as PyTorch
    t = gt.tensor(x)
    check(t.argmax(1), x.argmax(1))
    check(t.argmin(0), x.argmin(0))
    check(gt.argmax(t), np.int64(x.argmax()))
    check(t.argmax(-1, keepdim=True), x.argmax(-1)[:, None])
    values, indices = t.max(1)
    check(values, x.max(1))
    check(indices, x.argmax(1))
    r = gt.min(t, 0, keepdim=True)
    check(r.values, x.min(0, keepdims=True))
    check(r.indices, x.argmin(0)[None])


def test_max_gradients_split_ties_and_dim_goes_to_the_index():
    t = gt.tensor([1.0, 3.0, 3.0], requires_grad=True)
    t.max().backward()  # ties share the gradient (PyTorch's max() and amax)
    check(t.grad, [0.0, 0.5, 0.5])
    u = gt.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    u.max(1).values.sum().backward()  # max(dim) gives it to the index it returns
    check(u.grad, [[0.0, 1.0, 0.0]])
    v = gt.tensor([2.0, 1.0, 1.0], requires_grad=True)
    gt.amin(v, 0).backward()
    check(v.grad, [0.0, 0.5, 0.5])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(dim):
    x = data((3, 5), np.float32) * 4
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(dim, keepdims=True))
    sm = e / e.sum(dim, keepdims=True)
    check(gt.tensor(x).softmax(dim), sm, atol=1e-6)
    check(gt.tensor(x).log_softmax(dim), np.log(sm), atol=1e-5)
    check_grad(lambda t: t.log_softmax(dim), lambda a: a - np.log(np.exp(a).sum(dim, keepdims=True)),
               data((3, 5), np.float64))


# ---------------------------------------------------------------- shapes

SHAPE_OPS = {  # name: (gt fn, NumPy fn) on a (2, 3, 4) input
    "reshape": (lambda t: t.reshape(4, -1), lambda x: x.reshape(4, -1)),
    "view": (lambda t: t.view(-1), lambda x: x.reshape(-1)),
    "flatten": (lambda t: t.flatten(1), lambda x: x.reshape(2, 12)),
    "unsqueeze": (lambda t: t.unsqueeze(-2), lambda x: x[:, :, None, :]),
    "squeeze": (lambda t: t.unsqueeze(0).squeeze(0), lambda x: x),
    "squeeze_dim": (lambda t: t[:, :1].squeeze(1), lambda x: x[:, 0]),
    "transpose": (lambda t: t.transpose(0, 2), lambda x: x.transpose(2, 1, 0)),
    "T": (lambda t: t.T, lambda x: x.T),
    "mT": (lambda t: t.mT, lambda x: x.swapaxes(-1, -2)),
    "permute": (lambda t: t.permute(1, 2, 0), lambda x: x.transpose(1, 2, 0)),
    "expand": (lambda t: t[:, :1].expand(2, 5, 4), lambda x: np.broadcast_to(x[:, :1], (2, 5, 4))),
    "expand_new": (lambda t: t.expand(3, -1, -1, -1), lambda x: np.broadcast_to(x, (3, 2, 3, 4))),
    "broadcast_to": (lambda t: t[0].broadcast_to((2, 3, 4)), lambda x: np.broadcast_to(x[0], (2, 3, 4))),
    "contiguous": (lambda t: t.transpose(0, 1).contiguous(), lambda x: x.transpose(1, 0, 2)),
    "cat": (lambda t: gt.cat([t, t * 2, t[:, :1]], 1), lambda x: np.concatenate([x, x * 2, x[:, :1]], 1)),
    "cat_last": (lambda t: gt.cat([t, t[..., :2]], -1), lambda x: np.concatenate([x, x[..., :2]], -1)),
    "stack": (lambda t: gt.stack([t, -t], 1), lambda x: np.stack([x, -x], 1)),
    "split": (lambda t: t.split(3, 2)[1], lambda x: x[:, :, 3:]),
    "split_sizes": (lambda t: t.split([1, 2], 1)[1], lambda x: x[:, 1:]),
    "chunk": (lambda t: t.chunk(2, -1)[0], lambda x: x[..., :2]),
    "narrow": (lambda t: gt.narrow(t, 1, 1, 2), lambda x: x[:, 1:3]),
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_ops_forward_and_grad(name):
    fn, ref = SHAPE_OPS[name]
    x = data((2, 3, 4), np.float32)
    check(fn(gt.tensor(x)), ref(x.astype(np.float64)))
    check_grad(fn, ref, data((2, 3, 4), np.float64))


def test_permute_of_a_0d_tensor_is_a_copy():
    # The empty permutation once crashed the worker's compiler (linalg.transpose cannot hold it).
    t = gt.tensor(2.5)
    assert t.permute().item() == 2.5 and (t.permute() * 2).item() == 5.0


def test_split_and_size_methods():
    t = gt.zeros(5, 7)
    assert [p.shape for p in t.split(2)] == [(2, 7), (2, 7), (1, 7)]
    assert [p.shape for p in t.chunk(3, 1)] == [(5, 3), (5, 3), (5, 1)]
    assert t.size() == (5, 7) and t.size(1) == 7 and t.ndim == 2 and t.numel() == 35 and len(t) == 5
    assert [u.shape for u in gt.unbind(t, 1)][:2] == [(5,), (5,)]


def _ops_of_backward(loss):
    tape = gt.debug.get_tape()  # the last 10000 instructions
    last = tape[-1]["time"] if tape else -1.0
    loss.backward()
    return [e["op"] for e in gt.debug.get_tape() if e["time"] > last]


@pytest.mark.parametrize("used", ["qkv", "qv", "k"])
def test_split_gradients_join_into_one_concat(used):
    # As PyTorch's split backward: the pieces' gradients are concatenated (zeros where a piece
    # got none), not each written into zeros and added up.
    x0 = np.random.default_rng(0).standard_normal((2, 3, 12)).astype(np.float32)
    x = gt.tensor(x0, requires_grad=True)
    pieces = dict(zip("qkv", x.split(4, dim=2)))
    weights = {"q": 1.0, "k": 2.0, "v": 3.0}
    loss = sum((pieces[n] * pieces[n] * weights[n]).sum() for n in used)
    ops = _ops_of_backward(loss)
    assert ops.count("concat") == 1 and "slice_scatter" not in ops, ops
    want = np.zeros_like(x0)
    for i, n in enumerate("qkv"):
        if n in used:
            want[..., 4 * i:4 * i + 4] = 2 * weights[n] * x0[..., 4 * i:4 * i + 4]
    check(x.grad.numpy(), want)


def test_gradients_of_overlapping_and_strided_slices_add_up():
    y = gt.tensor(np.ones((5, 4), np.float32), requires_grad=True)
    (y[1:3].sum() + y[0:2, 1:].sum() * 2 + y[3:, ::3].sum() * 4).backward()
    check(y.grad.numpy(), [[0, 2, 2, 2], [1, 3, 3, 3], [1, 1, 1, 1], [4, 0, 0, 4], [4, 0, 0, 4]])
    z = gt.tensor(np.ones(6, np.float32), requires_grad=True)
    (z[::2].sum() + z[1:2].sum() * 5 + z[5:].sum() * 7).backward()  # interleaved windows
    check(z.grad.numpy(), [1, 5, 1, 0, 1, 7])
    w = gt.tensor(np.ones((2, 4), np.float32), requires_grad=True)
    (w[:, :2].sum() + w.sum() * 3 + w[:, 2:].sum()).backward()  # a slice's gradient meets a whole one
    check(w.grad.numpy(), np.full((2, 4), 4.0))


# ---------------------------------------------------------------- indexing

INDEX_KEYS = [
    (1,), (-1,), (slice(1, None),), (slice(None, None, 2),), (slice(-3, -1),), (slice(4, 1),),
    (Ellipsis, 1), (None, 0), (1, None, slice(None, None, 3)), (slice(None), [0, 2, 2]), ([1, -1],),
    (np.array([[0, 1], [1, 0]]),), ([0, 1], slice(None), [2, 0]), ([0, 1], [1, 2]),
    (slice(None), slice(1, 3), -2), (Ellipsis, None),
]


@pytest.mark.parametrize("key", INDEX_KEYS, ids=str)
def test_getitem_like_numpy_with_gradient(key):
    x = data((2, 3, 4), np.float32)
    check(gt.tensor(x)[key], x.astype(np.float64)[key])
    check_grad(lambda t: t[key], lambda a: a[key], data((2, 3, 4), np.float64))


def test_bool_mask_and_index_tensors():
    x = data((3, 4), np.float32)
    t = gt.tensor(x)
    check(t[t > 0], x[x > 0])
    check(t[gt.tensor([True, False, True])], x[[True, False, True]])
    idx = gt.tensor([2, 0, 2])
    check(t[idx], x[[2, 0, 2]])
    check(t[:, gt.tensor([[3], [1]])], x[:, np.array([[3], [1]])])
    check_grad(lambda a: a[gt.tensor(np.array([1, 1, 0]))], lambda a: a[[1, 1, 0]], data((3, 4), np.float64))


def test_gather_index_select_embedding_one_hot():
    x = data((3, 5), np.float32)
    idx = np.array([[0, 4], [2, 2], [1, 0]])
    check(gt.gather(gt.tensor(x), 1, gt.tensor(idx)), np.take_along_axis(x, idx, 1))
    check_grad(lambda a: gt.gather(a, 1, gt.tensor(idx)), lambda a: np.take_along_axis(a, idx, 1),
               data((3, 5), np.float64))
    check(gt.index_select(gt.tensor(x), 1, gt.tensor([4, 0, 4])), x[:, [4, 0, 4]])
    check_grad(lambda a: a.index_select(0, gt.tensor([2, 2, 0])), lambda a: a[[2, 2, 0]], data((3, 5), np.float64))
    w = data((6, 3), np.float64)
    tokens = np.array([[1, 5], [5, 0]])
    check(F.embedding(gt.tensor(tokens), gt.tensor(w)), w[tokens])
    check_grad(lambda a: F.embedding(gt.tensor(tokens), a), lambda a: a[tokens], w)
    check(gt.one_hot(gt.tensor([0, 2]), 3), np.eye(3, dtype=np.int64)[[0, 2]])
    assert gt.one_hot(gt.tensor([1]), 4, dtype=gt.float32).dtype == gt.float32
    # A 0-d index gives one row: the worker's lowering once built a null affine map for it and
    # crashed (found by the worker-program fuzzer).
    check(gt.one_hot(gt.tensor(2), 5), np.eye(5, dtype=np.int64)[2])
    # 65536 labels and more: the labels' range check, a loop large enough for the worker's
    # threads, failed to compile (makemore's bigram notebook one-hot encodes 228146 labels).
    labels = np.arange(70000) % 27
    assert F.one_hot(gt.tensor(labels), 27).sum(0).tolist() == np.bincount(labels).tolist()


def test_setitem_on_tensors_without_grad():
    x = np.zeros((3, 4), dtype=np.float32)
    t = gt.zeros(3, 4)
    t[1] = 5.0
    x[1] = 5.0
    t[:, ::3] = gt.tensor([1.0, 2.0, 3.0]).reshape(3, 1)
    x[:, ::3] = np.array([1.0, 2.0, 3.0]).reshape(3, 1)
    t[t > 4] = -1.0
    x[x > 4] = -1.0
    t[[0, 2]] = 7.0
    x[[0, 2]] = 7.0
    t[..., -1] = gt.arange(3).float()
    x[..., -1] = np.arange(3)
    check(t, x)
    p = gt.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        p[0] = 1.0
    with gt.no_grad():  # PyTorch's way to set a parameter's entries
        p[0] = 1.0
    check(p, np.array([1.0, 0.0], dtype=np.float32))
    assert p.is_leaf and p.requires_grad


def test_setitem_with_an_integer_index_on_each_leading_axis():
    # pytorch/examples' forward-forward: x_[range(x.shape[0]), y] = x.max() (index_put_)
    x = np.zeros((3, 4, 2), dtype=np.float32)
    t = gt.zeros(3, 4, 2)
    rows, cols = [0, 1, 2], gt.tensor([3, 0, -1])
    t[range(3), cols] = 5.0
    x[range(3), np.array([3, 0, -1])] = 5.0
    t[[0, 2], [1, 1]] = gt.tensor([1.0, 2.0])
    x[[0, 2], [1, 1]] = np.array([1.0, 2.0])
    t[gt.tensor([1]), gt.tensor([2]), gt.tensor([0])] = -3.0
    x[1, 2, 0] = -3.0
    t[range(3), 2] = 4.0  # an int beside an index array is an index too
    x[range(3), 2] = 4.0
    check(t, x)
    check(t[rows, cols], x[rows, [3, 0, -1]])
    with pytest.raises(IndexError, match="out of bounds"):
        t[[0, 1], [1, 4]] = 1.0
    with pytest.raises(IndexError, match="must be long or int"):
        t[gt.tensor([0.0, 1.0])] = 1.0
    t[[0, 1], gt.tensor([1, 4])] = 1.0  # a Tensor's values are checked on the worker
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension with size 4"):
        t.numpy()


@pytest.mark.parametrize("key", [
    (slice(None), slice(None), [2, 3]),  # gpt-fast's KV cache: k_out[:, :, input_pos] = k_val
    (slice(None), [0, 2]),
    (slice(1, 3), slice(None), [0, 4]),  # a window cut by a slice, indices inside it
    ([0, 3], slice(None), [1, 6]),  # not consecutive: the index's shape comes first in the value
    (slice(None), [[0], [2]], [1, 6]),  # indices broadcast together
    (Ellipsis, [2]),
    (slice(None), 1, [0, 5]),
    (slice(None, None, 2), slice(None), [1], slice(1, 3)),
])
def test_setitem_with_integer_indices_beside_slices(key):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 8, 3))
    npkey = tuple(np.array(k) if isinstance(k, list) else k for k in key)
    v = rng.standard_normal(x[npkey].shape)
    want = x.copy()
    want[npkey] = v
    for k in (key, tuple(gt.tensor(a) if isinstance(a, list) else a for a in key)):
        t = gt.tensor(x)
        t[k] = gt.tensor(v)
        check(t, want)
    t = gt.tensor(x)
    t[key] = 7.0
    want = x.copy()
    want[npkey] = 7.0
    check(t, want)


def test_setitem_beside_slices_records_gradients():
    w = gt.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    x = gt.ones(3, 5, requires_grad=True)
    y = x * 1.0
    y[:, [1, 3]] = w
    (y * gt.arange(15.0).reshape(3, 5)).sum().backward()
    check(x.grad, np.where(np.isin(np.arange(5), [1, 3]), 0.0, np.arange(15.0).reshape(3, 5)))
    check(w.grad, np.arange(15.0).reshape(3, 5)[:, [1, 3]])


def test_a_merged_tensor_index_out_of_range_raises_instead_of_reading_another_row():
    t = gt.arange(12.0).reshape(3, 4)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension with size 4"):
        t[[0, 1], gt.tensor([1, 5])].numpy()  # was row 2's element 1
    check(t[[0, 1], gt.tensor([1, -1])], np.array([1.0, 7.0]))


def test_index_errors():
    t = gt.zeros(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        t[3]
    with pytest.raises(IndexError, match="out of bounds"):
        t[:, [0, 4]]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="mask"):
        t[gt.tensor([True, False])]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]


# ---------------------------------------------------------------- creation, methods, dtypes

def test_creation_functions():
    check(gt.arange(5), np.arange(5))
    check(gt.arange(1, 2, 0.25), np.arange(1, 2, 0.25))
    assert gt.arange(3).dtype == gt.int64 and gt.arange(0.0, 1.0, 0.5).dtype == gt.float32
    check(gt.eye(3, 2), np.eye(3, 2))
    check(gt.full((2, 2), 7), np.full((2, 2), 7))
    assert gt.full((1,), 7).dtype == gt.int64 and gt.full((1,), True).dtype == gt.bool
    check(gt.zeros_like(gt.ones(2, 3, dtype=gt.int32)), np.zeros((2, 3), np.int32))
    check(gt.ones_like(gt.zeros(2)), np.ones(2))
    check(gt.full_like(gt.zeros(2), 3.5), np.full(2, 3.5))
    check(gt.linspace(0, 1, 5), np.linspace(0, 1, 5))
    assert gt.tensor([1, 2]).dtype == gt.int64 and gt.tensor([1.0]).dtype == gt.float32
    assert gt.tensor(np.array([1.0])).dtype == gt.float64 and gt.tensor([True]).dtype == gt.bool
    t = gt.zeros(2, 3, dtype=gt.float64, requires_grad=True)
    assert t.requires_grad and t.dtype == gt.float64
    with pytest.raises(RuntimeError, match="floating-point"):
        gt.zeros(2, dtype=gt.int64, requires_grad=True)


def test_random_functions_are_seeded_and_distributed():
    gt.manual_seed(7)
    a = gt.randn(2000).numpy()
    u = gt.rand(2000).numpy()
    gt.manual_seed(7)
    assert np.array_equal(gt.randn(2000).numpy(), a) and np.array_equal(gt.rand(2000).numpy(), u)
    assert abs(a.mean()) < 0.1 and abs(a.std() - 1) < 0.1
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    assert gt.randint(5, size=(3,)).shape == (3,) and gt.randint(5, (3,)).max().item() < 5  # randint(high, size)
    with pytest.raises(TypeError, match="size"):
        gt.randint(5)
    r = gt.randint(3, 7, (1000,)).numpy()
    assert r.dtype == np.int64 and r.min() == 3 and r.max() == 6
    assert gt.randn_like(gt.zeros(2, 3, dtype=gt.float64)).dtype == gt.float64


@pytest.mark.parametrize("dtype", [gt.float32, gt.float64])
def test_a_small_rand_made_on_the_client_is_the_workers_bit_for_bit(dtype):
    # the worker's kernel makes rand of more than 65536 elements; element i depends on i only
    for seed in (0, 7, 2**40 + 3):
        gt.manual_seed(seed)
        big = gt.rand(70000, dtype=dtype).numpy()
        gt.manual_seed(seed)
        small = gt.rand(3, 100, dtype=dtype)
        assert small._host is not None  # made on the client, its values kept
        assert np.array_equal(small.numpy().reshape(-1), big[:300])
        gt.manual_seed(seed)
        big = gt.randint(-5, 1000, (70000,)).numpy()
        gt.manual_seed(seed)
        assert np.array_equal(gt.randint(-5, 1000, (300,)).numpy(), big[:300])


def test_indices_drawn_with_randint_are_read_without_waiting(tmp_path):
    # nanoGPT's get_batch: ix = torch.randint(n, (batch,)); data[i:i + T] for i in ix
    gt.manual_seed(1)
    slow = (gt.randn(300, 300) @ gt.randn(300, 300)).sum()  # queued work a sync would wait for
    with gt.profiler.trace(str(tmp_path / "t.json")):
        ix = gt.randint(1000, (12,))
        starts = [(int(i), int(i + 64), int(2 * i - 1)) for i in ix]
    events = json.load(open(tmp_path / "t.json"))["traceEvents"]
    assert not [e for e in events if e.get("cat") == "sync"]
    values = ix.tolist()
    assert starts == [(v, v + 64, 2 * v - 1) for v in values] and 0 <= min(values) and max(values) < 1000
    assert np.isfinite(slow.item())


def test_tensor_methods():
    t = gt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]] and t[1, 0].item() == 3.0
    d = t.detach()
    assert not d.requires_grad and d.is_leaf
    c = t.clone()
    assert c.requires_grad and not c.is_leaf
    (c * 2).sum().backward()
    check(t.grad, np.full((2, 2), 2.0))
    z = gt.ones(3)
    z.zero_()
    check(z, np.zeros(3))
    r = gt.zeros(2).requires_grad_()
    assert r.requires_grad
    assert isinstance(t.numpy(), np.ndarray) and np.asarray(t).shape == (2, 2)
    assert float(gt.tensor(2.5)) == 2.5 and int(gt.tensor(3)) == 3 and bool(gt.tensor(True))


# ---------------------------------------------------------------- linear algebra

MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((1, 4), (3, 4, 1)), ((2, 3, 2, 4), (4, 5)), ((2, 3, 4), (1, 4, 5))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
def test_batched_matmul_with_broadcasting(sa, sb):
    a, b = data(sa, np.float32), data(sb, np.float32)
    check(gt.tensor(a) @ gt.tensor(b), np.matmul(a.astype(np.float64), b.astype(np.float64)), atol=1e-5)
    check_grad(gt.matmul, np.matmul, data(sa, np.float64), data(sb, np.float64))


def test_the_gradient_of_a_matrix_every_batch_element_multiplied_is_one_product():
    # (B, T, k) @ (k, n), as a tied output head: rhs's gradient is one (k, B*T) @ (B*T, n)
    # product, as PyTorch's matmul backward, not B products of T rows summed afterwards.
    a0, b0 = data((3, 5, 4), np.float64), data((4, 6), np.float64)
    a, b = gt.tensor(a0, requires_grad=True), gt.tensor(b0, requires_grad=True)
    ops = _ops_of_backward(((a @ b) ** 2).sum())
    assert ops.count("matmul") == 2 and "sum" not in ops, ops
    g = 2 * (a0 @ b0)
    check(b.grad, a0.reshape(15, 4).T @ g.reshape(15, 6), atol=1e-10)
    check(a.grad, g @ b0.T, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=lambda d: np.dtype(d).name)
def test_matmul_of_transposed_operands_and_every_other_read_of_a_transpose(dtype):
    # CPU workers defer x.mT and read it as a transposed GEMM operand; every other use (a
    # fetch, an elementwise op, a reshape, a slice, a second transpose) must still see x.mT.
    a, b = data((5, 3), dtype), data((5, 4), dtype)
    c, d, e = data((2, 3, 4), dtype), data((2, 5, 4), dtype), data((2, 4, 3), dtype)
    ta, tb, tc, td, te = (gt.tensor(v) for v in (a, b, c, d, e))
    atol = 2e-2 if dtype == np.float16 else 1e-4
    wide = lambda v: v.astype(np.float64)
    check(ta.T @ tb, wide(a).T @ wide(b), atol=atol)
    check(tb.T @ ta, wide(b).T @ wide(a), atol=atol)
    check(ta.T @ ta, wide(a).T @ wide(a), atol=atol)
    check(ta.T.T.T @ tb.T.T, wide(a).T @ wide(b), atol=atol)
    check(tc @ td.mT, wide(c) @ np.swapaxes(wide(d), -1, -2), atol=atol)
    check(te.mT @ td.mT.mT.mT, np.swapaxes(wide(e), -1, -2) @ np.swapaxes(wide(d), -1, -2), atol=atol)
    t = ta.T
    check(t, a.T)
    check(t + 1, a.T + 1)
    check(t.reshape(15), a.T.reshape(15))
    check(t[1:, ::2], a.T[1:, ::2])
    check(t.T, a)
    check(tc.transpose(0, 1) @ tb[:4, :], np.swapaxes(wide(c), 0, 1) @ wide(b)[:4, :], atol=atol)


def test_gradients_through_a_linear_layer_with_a_transposed_weight():
    # y = x @ w.T + b (nn.Linear): the backward multiplies by the transposes of x, w.T and g.
    x, w, bias = data((6, 4), np.float64), data((3, 4), np.float64), data((3,), np.float64)
    check_grad(lambda x, w, bias: ((x @ w.T + bias) * (x @ w.T + bias)).sum(),
               lambda x, w, bias: ((x @ w.T + bias) * (x @ w.T + bias)).sum(), x, w, bias)


# ---------------------------------------------------------------- autograd semantics

def test_gradients_accumulate_on_leaves_only():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    (y * y).sum().backward()
    (x * 2).sum().backward()
    check(x.grad, 18 * np.array([1.0, 2.0]) + 2)
    assert y.grad is None  # not a leaf


def test_backward_with_gradient_retain_graph_and_release():
    x = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(gt.tensor([1.0, 0.0, 2.0]), retain_graph=True)
    check(x.grad, [2.0, 0.0, 12.0])
    y.backward(gt.tensor([1.0, 1.0, 1.0]))
    check(x.grad, [4.0, 4.0, 18.0])
    with pytest.raises(RuntimeError, match="second time"):
        y.backward(gt.ones(3))
    with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
        (x * 2).backward()


def test_no_grad_and_enable_grad():
    x = gt.tensor([1.0], requires_grad=True)
    with gt.no_grad():
        assert not (x * 2).requires_grad
        with gt.enable_grad():
            assert (x * 2).requires_grad
    with gt.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert (x + 1).requires_grad
    gt.set_grad_enabled(False)  # called alone, as PyTorch: set at once, and it stays
    try:
        assert not gt.is_grad_enabled() and not (x + 1).requires_grad
    finally:
        gt.set_grad_enabled(True)
    assert gt.is_grad_enabled()

    @gt.set_grad_enabled(False)
    def g(t):
        return t * 2
    assert gt.is_grad_enabled() and not g(x).requires_grad and gt.is_grad_enabled()

    @gt.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    assert gt.is_grad_enabled()


# ---------------------------------------------------------------- errors: PyTorch's types, the user's line

def raises_here(exc, fn, match=None):
    with pytest.raises(exc, match=match) as info:
        fn()
    assert any(str(f.path) == __file__ for f in info.traceback), "the traceback should include this file's line"
    return info


@pytest.mark.parametrize("case", [
    ("add", lambda: gt.ones(4, 3) + gt.ones(4), RuntimeError),
    ("matmul", lambda: gt.ones(2, 3) @ gt.ones(2, 3), RuntimeError),
    ("reshape", lambda: gt.ones(2, 3).reshape(4, 2), RuntimeError),
    ("cat", lambda: gt.cat([gt.ones(2, 3), gt.ones(2, 4)]), RuntimeError),
    ("stack", lambda: gt.stack([gt.ones(2), gt.ones(3)]), RuntimeError),
    ("where", lambda: gt.where(gt.ones(3) > 0, gt.ones(2), 0.0), RuntimeError),
    ("gather", lambda: gt.gather(gt.ones(3, 4), 1, gt.zeros(2, 1, dtype=gt.int64)), RuntimeError),
    ("expand", lambda: gt.ones(3).expand(2, 4), RuntimeError),
    ("dim", lambda: gt.ones(3).sum(2), IndexError),
    ("transpose", lambda: gt.ones(3).transpose(0, 1), IndexError),
    ("mean-int", lambda: gt.mean(gt.ones(2, dtype=gt.int64)), RuntimeError),
    ("neg-bool", lambda: -gt.tensor([True]), RuntimeError),
    ("where-cond", lambda: gt.where(gt.ones(2), gt.ones(2), gt.ones(2)), RuntimeError),
    ("index_select-float", lambda: gt.index_select(gt.ones(3), 0, gt.ones(2)), IndexError),
    ("cross_entropy-float-target", lambda: F.cross_entropy(gt.ones(2, 3), gt.ones(2)), RuntimeError),
    ("cross_entropy-shape", lambda: F.cross_entropy(gt.ones(2, 3), gt.zeros(3, dtype=gt.int64)), RuntimeError),
    ("item", lambda: gt.ones(2).item(), RuntimeError),
    ("dtype", lambda: gt.zeros(2, dtype="float7"), TypeError),
], ids=lambda c: c[0])
def test_bad_input_raises_pytorchs_exception_type_at_the_users_line(case):
    name, fn, exc = case
    raises_here(exc, fn)


def test_shape_errors_are_also_value_errors_for_numpy_users():
    raises_here(ValueError, lambda: gt.ones(4, 3) + gt.ones(4), match=r"\[4, 3\] and \[4\] cannot be broadcast")
    raises_here(TypeError, lambda: gt.mean(gt.ones(2, dtype=gt.int64)), match="floating-point")


# ---------------------------------------------------------------- state dicts

@pytest.mark.parametrize("suffix", [".npz", ".safetensors", ".pt"])
def test_state_dict_save_load_reproduces_outputs_bit_for_bit(tmp_path, suffix):
    gt.manual_seed(3)
    model = gt.nn.Sequential(gt.nn.Linear(5, 8), gt.nn.GELU(), gt.nn.LayerNorm(8), gt.nn.Linear(8, 2))
    x = gt.randn(4, 5)
    before = model(x).numpy()
    path = str(tmp_path / ("model" + suffix))
    gt.save(model.state_dict(), path)
    gt.manual_seed(99)
    other = gt.nn.Sequential(gt.nn.Linear(5, 8), gt.nn.GELU(), gt.nn.LayerNorm(8), gt.nn.Linear(8, 2))
    assert not np.array_equal(other(x).numpy(), before)
    other.load_state_dict(gt.load(path))
    assert np.array_equal(other(x).numpy(), before)
    assert sorted(gt.load(path)) == sorted(model.state_dict())


# ---------------------------------------------------------------- printing and in-place updates

def test_tensor_surface():
    t = gt.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.dtype == gt.float32 and t.ndim == 2 and t.numel() == 4
    assert t.sum().item() == 10.0
    assert isinstance(t.data.numpy(), np.ndarray)
    assert repr(t) == "tensor([[1., 2.],\n        [3., 4.]])"
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_inplace_update_reuses_memory():
    p = gt.tensor([1.0, 2.0], requires_grad=True)
    with gt.no_grad():
        for _ in range(10):
            p -= 0.5 * gt.ones(2)
    check(p, [-4.0, -3.0])
    with pytest.raises(RuntimeError, match="in-place"):
        p -= 1.0


def test_a_worker_tensor_is_freed_when_the_last_tensor_using_it_goes():
    def live():
        return gt.debug.stats()["live_tensors"]  # syncs: queued frees have run

    x = gt.full((1000,), 3.0)
    y, z = x.detach(), x * 2  # y shares x's worker tensor (one handle)
    made = live()
    assert type(x._h).__name__ == "Handle" and x._h is y._h and x._h.id != z._h.id
    del x
    assert live() == made  # y still holds it
    assert y.sum().item() == 3000.0
    del y
    assert live() == made - 1
    del z
    assert live() == made - 2


# ---------------------------------------------------------------- float16 and bfloat16

HALVES = [pytest.param(gt.float16, np.float16, 4e-3, id="float16"), pytest.param(gt.bfloat16, bfloat16, 3e-2, id="bfloat16")]


def test_half_conversions_round_like_numpy_and_ml_dtypes():
    # round to nearest even, overflow to inf, subnormals, NaN; the reference is NumPy's cast
    x = np.array([1.0, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504.0, 65519.0, 65520.0, 1e5, -1e5, 6e-8, 2.9e-8,
                  3e-8, 1e-4, -2.5e-6, 0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, 1.00390625, 1.01171875],
                 np.float32)
    for d, nd in ((gt.float16, np.float16), (gt.bfloat16, bfloat16)):
        with np.errstate(over="ignore"):
            expected = x.astype(nd)
        got = gt.tensor(x).to(d).numpy()
        assert got.dtype == nd
        assert np.array_equal(got.view(np.uint16)[~np.isnan(x)], expected.view(np.uint16)[~np.isnan(x)]), d
        assert np.isnan(got.astype(np.float32)[np.isnan(x)]).all()
        back = gt.tensor(expected).float().numpy()  # widening is exact
        assert np.array_equal(back, expected.astype(np.float32), equal_nan=True)
    i = gt.tensor([3, -7, 70000]).half().numpy()
    assert np.array_equal(i, np.array([3, -7, np.inf], np.float16))
    assert gt.tensor([2.7, -2.7, 0.0], dtype=gt.bfloat16).long().tolist() == [2, -2, 0]
    assert gt.tensor([0.5, 0.0], dtype=gt.float16).bool().tolist() == [True, False]


def test_half_promotion_follows_pytorch():
    h, b = gt.ones(2, dtype=gt.float16), gt.ones(2, dtype=gt.bfloat16)
    f, i = gt.ones(2), gt.ones(2, dtype=gt.int64)
    assert (h + b).dtype == gt.float32  # PyTorch: half with bfloat16 gives float32
    assert (h + f).dtype == gt.float32 and (b * gt.ones(2, dtype=gt.float64)).dtype == gt.float64
    assert (i + h).dtype == gt.float16 and (b - i).dtype == gt.bfloat16
    assert (h * 2.5).dtype == gt.float16 and (3 + b).dtype == gt.bfloat16  # Python numbers keep the dtype
    assert (h < 1).dtype == gt.bool and gt.where(h > 0, h, 0.0).dtype == gt.float16
    assert gt.half is gt.float16 and gt.tensor([1.0]).half().dtype == gt.float16
    assert gt.tensor([1.0]).bfloat16().dtype == gt.bfloat16 and gt.bfloat16.is_floating_point
    assert gt.dtypes.resolve("bf16") is gt.bfloat16 and gt.dtypes.resolve(np.float16) is gt.float16


@pytest.mark.parametrize("d,nd,rtol", HALVES)
def test_half_reductions_accumulate_in_float32(d, nd, rtol):
    # 4096 ones: a float16 accumulator would stop at 2048, a bfloat16 one at 256
    assert gt.ones(4096, dtype=d).sum().item() == 4096.0
    assert gt.ones(64, 64, dtype=d).mean().item() == 1.0
    x = data((5, 33), nd)
    x64 = x.astype(np.float64)
    t = gt.tensor(x)
    for got, want in ((t.sum(1), x64.sum(1)), (t.mean(0), x64.mean(0)), (gt.amax(t, 1), x64.max(1)),
                      (t.softmax(-1), np.exp(x64) / np.exp(x64).sum(-1, keepdims=True)),
                      (t.var(1), x64.var(1, ddof=1))):
        assert got.dtype == d
        check(got, want, atol=rtol, rtol=rtol)
    check(t.argmax(1), x64.argmax(1))
    check(t.argmin(0), x64.argmin(0))


@pytest.mark.parametrize("sa,sb", [((3, 40), (40, 5)), ((2, 3, 64), (64, 7)), ((64,), (64,))], ids=str)
@pytest.mark.parametrize("d,nd,rtol", HALVES)
def test_half_matmul_sums_products_in_float32(d, nd, rtol, sa, sb):
    a, b = data(sa, nd), data(sb, nd)
    out = gt.tensor(a) @ gt.tensor(b)
    assert out.dtype == d
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    # the float32 sum is rounded once: error within a unit or two of the result's last place
    check(out, expected, atol=rtol * 2, rtol=rtol)


@pytest.mark.parametrize("d,nd,rtol", HALVES)
def test_half_creation_indexing_and_layout(d, nd, rtol):
    check(gt.zeros(2, 3, dtype=d), np.zeros((2, 3)))
    check(gt.full((2,), 1.5, dtype=d), np.full(2, 1.5))
    check(gt.arange(0, 3, dtype=d), np.arange(3.0))
    check(gt.eye(3, dtype=d), np.eye(3))
    gt.manual_seed(5)
    r, u = gt.randn(1000, dtype=d), gt.rand(1000, dtype=d)
    assert r.dtype == d and abs(r.float().mean().item()) < 0.1 and 0 <= u.float().numpy().min()
    assert u.float().numpy().max() < 1
    x = data((4, 6), nd)
    t = gt.tensor(x)
    check(t[1:, ::2], x[1:, ::2].astype(np.float64), atol=0, rtol=0)
    check(t.T.reshape(3, 8), x.T.reshape(3, 8).astype(np.float64), atol=0, rtol=0)
    check(gt.cat([t, t], 1), np.concatenate([x, x], 1).astype(np.float64), atol=0, rtol=0)
    idx = np.array([3, 0, 0, 2])
    check(t[gt.tensor(idx)], x[idx].astype(np.float64), atol=0, rtol=0)
    check(t.index_select(1, gt.tensor([5, 1])), x[:, [5, 1]].astype(np.float64), atol=0, rtol=0)
    emb = gt.tensor(x, requires_grad=True)
    gt.nn.functional.embedding(gt.tensor([1, 1, 3]), emb).sum().backward()
    expected = np.zeros((4, 6))
    expected[1] = 2
    expected[3] = 1
    assert emb.grad.dtype == d
    check(emb.grad, expected, atol=0, rtol=0)
    check(gt.nn.functional.one_hot(gt.tensor([2, 0]), 3).to(d), np.eye(3)[[2, 0]])
    y = gt.zeros(3, dtype=d)
    y[1] = 2.5
    check(y, [0, 2.5, 0])


@pytest.mark.parametrize("d,nd,rtol", HALVES)
def test_half_gradients_match_float64(d, nd, rtol):
    x, w = data((4, 8), nd), data((8, 3), nd)
    tx, tw = gt.tensor(x, requires_grad=True), gt.tensor(w, requires_grad=True)
    (gt.tanh(tx @ tw) * 2).sum().backward()
    assert tx.grad.dtype == d and tw.grad.dtype == d
    x64, w64 = gt.tensor(x.astype(np.float64), requires_grad=True), gt.tensor(w.astype(np.float64), requires_grad=True)
    (gt.tanh(x64 @ w64) * 2).sum().backward()
    check(tx.grad, x64.grad.numpy(), atol=4 * rtol, rtol=4 * rtol)
    check(tw.grad, w64.grad.numpy(), atol=4 * rtol, rtol=4 * rtol)


@pytest.mark.parametrize("d,nd,rtol", HALVES)
def test_half_model_trains_and_saves(tmp_path, d, nd, rtol):
    gt.manual_seed(0)
    model = gt.nn.Sequential(gt.nn.Linear(6, 16), gt.nn.GELU(), gt.nn.LayerNorm(16), gt.nn.Linear(16, 3)).to(d)
    assert all(p.dtype == d for p in model.parameters())
    x, y = gt.randn(32, 6, dtype=d), gt.randint(0, 3, (32,))
    # Adam's default eps (1e-8) is 0 in float16, so pure-float16 Adam divides by zero, in PyTorch
    # too; SGD has no such constant
    opt = gt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = gt.nn.functional.cross_entropy(model(x), y)
        assert loss.dtype == d
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses
    for suffix in (".npz", ".safetensors"):
        path = str(tmp_path / ("half" + suffix))
        gt.save(model.state_dict(), path)
        loaded = gt.load(path)
        assert all(v.dtype == d for v in loaded.values())
        other = gt.nn.Sequential(gt.nn.Linear(6, 16), gt.nn.GELU(), gt.nn.LayerNorm(16), gt.nn.Linear(16, 3)).to(d)
        other.load_state_dict(loaded)
        assert np.array_equal(other(x).numpy().view(np.uint16), model(x).numpy().view(np.uint16))


# ---------------------------------------------------------------- ops added through the spec alone
# (ops/*.yaml, their lowering, these tests: see docs/architecture.md, "Adding an op")

MATRIX_SHAPES = [(3, 3), (2, 4, 5), (5, 2), (0, 3), (2, 0, 4)]
EXACT_DTYPES = [pytest.param(d, id=np.dtype(d).name) for d in (np.float32, np.float64, np.float16, np.int32, np.int64,
                                                                  np.bool_)]


@pytest.mark.parametrize("dtype", EXACT_DTYPES)
@pytest.mark.parametrize("shape", MATRIX_SHAPES, ids=str)
@pytest.mark.parametrize("diagonal", [0, 1, -1, 7, -7])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu_keep_a_triangle_of_the_last_two_axes(name, diagonal, shape, dtype):
    x = data(shape, dtype)
    out = getattr(gt, name)(gt.tensor(x), diagonal)
    assert out.dtype.numpy == np.dtype(dtype)
    check(out, getattr(np, name)(x, diagonal), atol=0, rtol=0)
    check(getattr(gt.tensor(x), name)(diagonal=diagonal), getattr(np, name)(x, diagonal), atol=0, rtol=0)


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_tril_triu_gradients_and_errors(name):
    f, ref = getattr(gt, name), getattr(np, name)
    check_grad(lambda t: f(t, 1), lambda x: ref(x, 1), data((2, 3, 4), np.float64))
    check_grad(lambda t: getattr(t, name)(), ref, data((4, 4), np.float64))
    with pytest.raises(gt.ShapeError, match=name + r": expects a tensor of at least 2 dimensions, got shape \[3\]"):
        f(gt.ones(3))


FLIPS = [((5,), 0), ((5,), -1), ((3, 4), 1), ((3, 4), (0, 1)), ((2, 3, 4), (0, 2)), ((2, 3, 4), [-1, 1]), ((0, 3), 0),
         ((), ()), ((3, 4), ())]


@pytest.mark.parametrize("dtype", EXACT_DTYPES)
@pytest.mark.parametrize("shape,dims", FLIPS, ids=str)
def test_flip_reverses_the_given_axes(shape, dims, dtype):
    x = data(shape, dtype)
    want = np.flip(x, dims) if dims != () else x
    out = gt.flip(gt.tensor(x), dims)
    assert out.dtype.numpy == np.dtype(dtype)
    check(out, want, atol=0, rtol=0)
    check(gt.tensor(x).flip(dims), want, atol=0, rtol=0)


def test_flip_gradient_and_errors():
    check_grad(lambda t: gt.flip(t, (0, 2)) * gt.tensor(np.arange(24.0).reshape(2, 3, 4)),
               lambda x: np.flip(x, (0, 2)) * np.arange(24.0).reshape(2, 3, 4), data((2, 3, 4), np.float64))
    with pytest.raises(IndexError, match="axis 2 for a tensor of rank 2"):
        gt.flip(gt.ones(2, 3), 2)
    with pytest.raises(gt.ShapeError, match=r"axis 1 is repeated in \[1, -1\]"):
        gt.flip(gt.ones(2, 3), (1, -1))


SCAN_DTYPES = [pytest.param(d, id=np.dtype(d).name) for d in (np.float32, np.float64, np.float16, bfloat16, np.int32,
                                                                 np.int64, np.bool_)]


@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2), ((0, 3), 0), ((3, 0), 1),
                                       ((), 0)], ids=str)
def test_cumsum_sums_prefixes_like_numpy(shape, dim, dtype):
    x = data(shape, dtype)
    want = np.cumsum(x.astype(np.float64) if is_float(dtype) else x, axis=dim if shape else None).reshape(shape)
    want_dtype = np.int64 if dtype in (np.int32, np.bool_) else dtype  # as torch.cumsum
    out = gt.cumsum(gt.tensor(x), dim)
    assert out.dtype.numpy == np.dtype(want_dtype)
    check(out, want.astype(np.float64) if is_float(dtype) else want, **tol(dtype))
    check(gt.tensor(x).cumsum(dim), out.numpy(), atol=0, rtol=0)


def test_cumsum_gradient_and_errors():
    check_grad(lambda t: gt.cumsum(t, 1), lambda x: np.cumsum(x, 1), data((3, 4, 2), np.float64))
    check_grad(lambda t: t.cumsum(-1) ** 2, lambda x: np.cumsum(x, -1) ** 2, data((2, 5), np.float64))
    with pytest.raises(IndexError, match="axis 2 for a tensor of rank 2"):
        gt.cumsum(gt.ones(2, 3), 2)


@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 33, 4), -2), ((0, 3), 0), ((3, 0), 1),
                                       ((1000,), 0), ((), 0)], ids=str)
@pytest.mark.parametrize("descending", [False, True], ids=["up", "down"])
def test_argsort_and_sort_are_numpys_stable_sort(shape, dim, dtype, descending):
    # Few distinct values (ties) and, in floats, NaN: stable order, NaN as the largest value.
    x = data(shape, dtype)
    if is_float(dtype) and x.size:
        x = (np.round(x.astype(np.float64) * 2) / 2).astype(x.dtype)
        x.flat[::5] = np.nan
    key = x.astype(np.float64)
    if descending:  # NumPy's stable sort of the negated keys, NaN (largest) first
        key = np.where(np.isnan(key), -np.inf, -key)
    want = np.argsort(key, axis=dim if shape else None, kind="stable").reshape(shape)
    idx = gt.argsort(gt.tensor(x), dim, descending=descending)
    assert idx.dtype == gt.int64
    check(idx, want, atol=0, rtol=0)
    values, indices = gt.tensor(x).sort(dim, descending=descending)
    check(indices, want, atol=0, rtol=0)
    sorted_x = np.take_along_axis(x, want, dim) if shape else x
    np.testing.assert_array_equal(values.numpy().astype(np.float64), sorted_x.astype(np.float64))


def test_topk_kthvalue_median_and_their_gradient():
    x = data((4, 9), np.float64)
    values, indices = gt.topk(gt.tensor(x), 3)
    want = np.argsort(-x, 1, kind="stable")[:, :3]
    check(indices, want, atol=0, rtol=0)
    check(values, np.take_along_axis(x, want, 1))
    check(gt.topk(gt.tensor(x), 2, dim=0, largest=False).values, np.sort(x, 0)[:2])
    check(gt.kthvalue(gt.tensor(x), 4, 1).values, np.sort(x, 1)[:, 3])
    check(gt.median(gt.tensor(x)), np.sort(x.ravel())[(x.size - 1) // 2])
    check(gt.tensor(x).median(0).values, np.sort(x, 0)[(4 - 1) // 2])
    check_grad(lambda t: gt.topk(t, 3).values * 2, lambda a: np.sort(a, 1)[:, ::-1][:, :3] * 2, x)
    check_grad(lambda t: t.sort(0).values ** 2, lambda a: np.sort(a, 0) ** 2, x)
    with pytest.raises(RuntimeError, match="selected index k \\(10\\) out of range"):
        gt.topk(gt.tensor(x), 10)
    with pytest.raises(gt.DTypeError):
        gt._ops._T._op("argsort", gt.tensor([True, False]), axis=0, descending=False)


@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("shape,dim,keepdim", [((5,), None, False), ((3, 4), 1, False), ((3, 4), 0, True),
                                               ((2, 3, 4), (0, 2), False), ((2, 3, 4), -1, True), ((0, 3), 0, False),
                                               ((3, 0), None, False), ((), None, False)], ids=str)
def test_prod_multiplies_like_numpy(shape, dim, keepdim, dtype):
    x = data(shape, dtype) if dtype == np.bool_ else (data(shape, np.float64) * 0.5 + 1.0).astype(dtype) \
        if is_float(dtype) else rng.integers(-3, 4, shape).astype(dtype)
    axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
    want = np.prod(x.astype(np.float64) if is_float(dtype) else x.astype(np.int64), axis=axis, keepdims=keepdim)
    want_dtype = np.int64 if dtype in (np.int32, np.bool_) else dtype  # as torch.prod
    out = gt.prod(gt.tensor(x), dim, keepdim)
    assert out.dtype.numpy == np.dtype(want_dtype)
    check(out, want, **tol(dtype))
    check(gt.tensor(x).prod(dim, keepdim=keepdim), out.numpy(), atol=0, rtol=0)


def test_prod_gradient_is_exact_at_zeros():
    check_grad(lambda t: gt.prod(t, 1), lambda x: np.prod(x, 1), data((3, 4), np.float64, "nonzero"))
    check_grad(lambda t: t.prod(), np.prod, data((2, 3), np.float64, "nonzero"))
    # rows with no zero, one zero and two zeros (PyTorch's exact rule; x / result would give nan)
    x = np.array([[1.5, -2.0, 0.5], [2.0, 0.0, 3.0], [0.0, 4.0, 0.0]])
    check_grad(lambda t: gt.prod(t, -1, keepdim=True), lambda x: np.prod(x, -1, keepdims=True), x)
    t = gt.tensor(x, requires_grad=True)
    t.prod(1).sum().backward()
    check(t.grad, [[-1.0, 0.75, -3.0], [0.0, 6.0, 0.0], [0.0, 0.0, 0.0]], atol=0, rtol=0)


def test_fetches_of_small_and_large_tensors_from_an_idle_worker():
    # An idle CPU worker answers a fetch of up to 1 MiB on its event loop, a larger one on its
    # scheduler's thread; both must give the values, also of a deferred transpose.
    import time
    for n in (3, 300_000):  # 24 bytes; 2.4 MB
        a = np.arange(2 * n, dtype=np.float32).reshape(2, n)
        t = gt.tensor(a)
        for view, expected in ((t, a), (t.T, a.T), (t[1], a[1])):
            gt.synchronize()
            time.sleep(0.02)  # the worker's scheduler parks
            check(view, expected)


def test_augmented_assignment_to_an_index_writes_once():
    # x[i, j] += 1: the view x[i, j] writes its new value into x (Tensor._rebind), so the
    # assignment Python makes next (x[i, j] = view) records nothing more (makemore's bigram
    # counts: 228146 of these took 190 us each, now 110)
    n = gt.zeros(3, 3, dtype=gt.int32)
    writes = lambda: sum(e["op"] == "slice_scatter" for e in gt.debug.get_tape())
    before = writes()
    n[1, 2] += 1
    assert writes() - before == 1
    n[1, 2] += 1
    n[0, 1] += 5
    r = n[2, 0]
    r += 3
    n[2, 1] = r  # another index: written
    r += 1       # r written back to n[2, 0] again
    check(n, np.array([[0, 5, 0], [0, 0, 2], [4, 3, 0]], dtype=np.int32))
    r = n[0]
    r += 1
    n.mul_(2)    # n changed after the view wrote back: n[0] = r writes r's (older) values again
    n[0] = r
    check(n, np.array([[1, 6, 1], [0, 0, 4], [8, 6, 0]], dtype=np.int32))


def test_writes_through_views_reach_their_base():
    # PyTorch's views share memory; GT's are copies that write their new values back
    a = gt.ones(2, 2)
    b = a
    a[0][1] = 561  # the blitz tutorial's example: b is a, and changed
    check(b, np.array([[1, 561], [1, 1]], dtype=np.float32))
    t = gt.zeros(4, 1, 5)  # the char-RNN tutorial's one-hot: tensor[li][0][letter] = 1
    for li, c in enumerate([1, 3, 0, 4]):
        t[li][0][c] = 1
    check(t.squeeze(1), np.eye(5, dtype=np.float32)[[1, 3, 0, 4]])
    x = gt.zeros(3, 4)
    for row in x:  # iteration gives views too
        row[0] = 1
    x[1].add_(2)
    x.narrow(1, 2, 2).fill_(7)
    x.select(1, 1).mul_(0).add_(-1)
    expect = np.zeros((3, 4), dtype=np.float32)
    expect[:, 0] = 1
    expect[1] += 2
    expect[:, 2:4] = 7
    expect[:, 1] = -1
    check(x, expect)
    # a view read before its base changed is read again when it is written
    a = gt.zeros(2, 3)
    r = a[0]
    a.fill_(5)
    r[1] = 9
    check(a, np.array([[5, 9, 5], [5, 5, 5]], dtype=np.float32))
    check(r, np.array([5, 9, 5], dtype=np.float32))
    # a base whose shape changed in place lets its views go (they keep their values)
    a = gt.zeros(2, 3)
    r = a[0]
    a.unsqueeze_(0)
    r[1] = 9
    check(r, np.array([0, 9, 0], dtype=np.float32))
    check(a, np.zeros((1, 2, 3), dtype=np.float32))
    # advanced indexing copies, as in PyTorch
    a = gt.zeros(3)
    a[[0, 1]].fill_(1)
    check(a, np.zeros(3, dtype=np.float32))
    assert a._version == 0  # PyTorch's version counter: no write reached a
    a[0] = 1
    assert a._version == 1


def test_bitwise_ops_on_bool_and_mixed_operands():
    a, b = np.array([True, False, True]), np.array([True, True, False])
    for fn, ref in ((gt.bitwise_and, np.bitwise_and), (gt.bitwise_or, np.bitwise_or), (gt.bitwise_xor, np.bitwise_xor)):
        out = fn(gt.tensor(a), gt.tensor(b))
        assert out.dtype == gt.bool
        check(out, ref(a, b))
    check(gt.bitwise_not(gt.tensor(a)), ~a)
    check(gt.tensor([1, 5, 11]) | 4, np.array([5, 5, 15]))  # a Python int, and reflected
    check(3 ^ gt.tensor([1, 5, 11]), np.array([2, 6, 8]))
    check(gt.tensor([7, 6], dtype=gt.int32) & gt.tensor([True, False]), np.array([1, 0], dtype=np.int32))
    x = gt.tensor([12, 10])
    x &= 6
    check(x, np.array([4, 2]))
    with pytest.raises(gt.DTypeError, match="integer and bool"):
        gt.ones(2) & gt.ones(2)
    with pytest.raises(gt.DTypeError, match="integer and bool"):
        ~gt.ones(2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sin_and_cos_stay_accurate_for_large_arguments(dtype):
    # Sinusoidal position encodings take sin/cos of thousands; the f32 polynomial alone reduced
    # its argument in f32 (sin(1e4) was off by 7.6e-4; PyTorch's is within an ulp).
    x = np.random.default_rng(1).uniform(-1e5, 1e5, 50_000).astype(dtype)
    x[:4] = [np.pi, np.pi / 2, 1e4, -100.0]
    for fn, ref in ((gt.sin, np.sin), (gt.cos, np.cos)):
        got = fn(gt.tensor(x)).numpy().astype(np.float64)
        np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=0, atol=3e-7)
    check(gt.sin(gt.tensor([np.inf, -np.inf, np.nan], dtype=gt.float32)), np.full(3, np.nan))
    # near a zero of the function the error stays relative (small negative reduced arguments were
    # sent near pi/2 by the polynomial's own f32 reduction: cos(45.553093) was 15% off, sin(-5.2e-7)
    # -4.4e-7), and every RoPE angle (positions < 4096) is within 2 ulp
    near = np.array([45.55309295654297, 455.5309143066406, -5.20509047e-07, 23.443307876586914], dtype=dtype)
    for fn, ref in ((gt.sin, np.sin), (gt.cos, np.cos)):
        want = ref(near.astype(np.float64))
        got = fn(gt.tensor(near)).numpy().astype(np.float64)
        assert (np.abs(got - want) <= 2 * np.spacing(np.abs(want).astype(dtype))).all(), (fn, got, want)
    theta = 1.0 / 10000 ** (np.arange(0, 64, 2, dtype=np.float32) / 64)
    angles = np.outer(np.arange(4096, dtype=np.float32), theta).ravel().astype(dtype)
    for fn, ref in ((gt.sin, np.sin), (gt.cos, np.cos)):
        want = ref(angles.astype(np.float64))
        got = fn(gt.tensor(angles)).numpy().astype(np.float64)
        assert (np.abs(got - want) <= 2 * np.spacing(np.abs(want).astype(dtype))).all()


def test_long_float32_sums_and_means_keep_float32_precision():
    # 4M values of 0.1 summed down a column, along a row and whole, and batch norm's mean over
    # (N, H, W): each within float32's rounding of the exact 0.1 (they were 4 %, 0.4 % and 1 % off).
    n = 1 << 22
    x = gt.full((n,), 0.1)
    for got in ((x.view(n, 1).sum(0) / n).item(), (x.view(1, n).sum(1) / n).item(), (x.sum() / n).item(),
                x.view(1, n).mean(1).item()):
        assert abs(got - 0.1) < 1e-7, got
    y = gt.full((64, 3, 128, 128), 0.1)
    np.testing.assert_allclose(y.mean(dim=(0, 2, 3)).numpy(), 0.1, rtol=1e-7)
    assert y.var(dim=(0, 2, 3)).numpy().max() < 1e-12
    bn = gt.nn.BatchNorm2d(3)
    bn(y + gt.arange(64.0).view(64, 1, 1, 1))
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.9 * 0 + 0.1 * 31.6, rtol=1e-6)
    assert (x.view(n, 1).sum(0)).dtype == gt.float32 and gt.full((n,), 0.5, dtype=gt.bfloat16).sum().dtype == gt.bfloat16
