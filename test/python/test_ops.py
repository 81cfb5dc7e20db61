"""Every op's forward against NumPy (float64 reference) and its gradient against a float64
central-difference gradient of the NumPy reference."""
import numpy as np
import pytest

import gt
from conftest import check

rng = np.random.default_rng(0)


def rand(*shape, positive=False):
    x = rng.standard_normal(shape)
    return np.abs(x) + 0.5 if positive else x


UNARY = [  # (gt function, NumPy reference, input needs to be positive)
    (gt.neg, np.negative, False),
    (gt.exp, np.exp, False),
    (gt.log, np.log, True),
    (gt.sqrt, np.sqrt, True),
    (gt.relu, lambda x: np.maximum(x, 0), False),
    (gt.sigmoid, lambda x: 1 / (1 + np.exp(-x)), False),
    (gt.tanh, np.tanh, False),
]

BINARY = [
    (lambda a, b: a + b, np.add),
    (lambda a, b: a - b, np.subtract),
    (lambda a, b: a * b, np.multiply),
    (lambda a, b: a / b, np.divide),
    (gt.maximum, np.maximum),
]

SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((1,), (2, 3))]


@pytest.mark.parametrize("fn,ref,positive", UNARY, ids=lambda v: getattr(v, "__name__", ""))
def test_unary_forward(fn, ref, positive):
    x = rand(4, 5, positive=positive).astype(np.float32)
    check(fn(gt.tensor(x)), ref(x.astype(np.float64)), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fn,ref", BINARY)
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_binary_forward_broadcasting(fn, ref, sa, sb):
    a, b = rand(*sa).astype(np.float32), rand(*sb, positive=True).astype(np.float32)
    check(fn(gt.tensor(a), gt.tensor(b)), ref(a.astype(np.float64), b.astype(np.float64)), atol=1e-5, rtol=1e-5)


def test_scalars_and_reflected_forms():
    x = rand(3, 2).astype(np.float32)
    t = gt.tensor(x)
    check(t + 2, x + 2)
    check(2 + t, 2 + x)
    check(1.5 - t, 1.5 - x)
    check(t * 3, x * 3)
    check(3 / (t * t + 1), 3 / (x * x + 1))
    check(t ** 2, x ** 2)
    check(-t, -x)


def test_int_and_bool_dtypes():
    i = gt.tensor([1, 2, 3])
    assert i.dtype == gt.int64
    check(i + 1, np.array([2, 3, 4]))
    check(i * i, np.array([1, 4, 9]))
    f = i / 2  # true division gives float32, as PyTorch
    assert f.dtype == gt.float32
    check(f, np.array([0.5, 1.0, 1.5]))
    m = i > 1
    assert m.dtype == gt.bool
    check(m, np.array([False, True, True]))
    check(m.sum(), np.array(2))
    check(i.float() * 0.5, np.array([0.5, 1.0, 1.5]))


@pytest.mark.parametrize("op,ref", [("gt", np.greater), ("lt", np.less), ("ge", np.greater_equal),
                                    ("le", np.less_equal), ("eq", np.equal), ("ne", np.not_equal)])
def test_comparisons(op, ref):
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], dtype=np.float32)
    b = np.array([2.0, 2.0, 2.0], dtype=np.float32)
    ta, tb = gt.tensor(a), gt.tensor(b)
    result = {"gt": ta > tb, "lt": ta < tb, "ge": ta >= tb, "le": ta <= tb, "eq": ta == tb, "ne": ta != tb}[op]
    check(result, ref(a, b))


def test_where():
    a, b = rand(3, 4), rand(4)
    c = a > 0
    check(gt.where(gt.tensor(c), gt.tensor(a.astype(np.float32)), gt.tensor(b.astype(np.float32))), np.where(c, a, b))
    check(gt.where(gt.tensor(c), gt.tensor(a.astype(np.float32)), 0.0), np.where(c, a, 0.0))


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                   ((1, 3, 4), (2, 4, 2)), ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,))])
def test_matmul(sa, sb):
    a, b = rand(*sa).astype(np.float32), rand(*sb).astype(np.float32)
    check(gt.tensor(a) @ gt.tensor(b), np.matmul(a.astype(np.float64), b.astype(np.float64)), atol=1e-4)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), (-1, False), ((0, 2), True)])
def test_reductions(axis, keepdims):
    x = rand(3, 4, 5).astype(np.float32)
    t = gt.tensor(x)
    x64 = x.astype(np.float64)
    check(t.sum(axis, keepdims), x64.sum(axis=axis, keepdims=keepdims), atol=1e-4)
    check(t.mean(axis, keepdims), x64.mean(axis=axis, keepdims=keepdims))
    check(t.amax(axis, keepdims), x64.max(axis=axis, keepdims=keepdims))
    check(gt.sum(t, dim=axis, keepdim=keepdims), x64.sum(axis=axis, keepdims=keepdims), atol=1e-4)


def test_layout():
    x = rand(2, 3, 4).astype(np.float32)
    t = gt.tensor(x)
    check(t.reshape(6, 4), x.reshape(6, 4))
    check(t.reshape(-1), x.reshape(-1))
    check(t.transpose(0, 2), x.transpose(2, 1, 0))
    check(t.permute(1, 0, 2), x.transpose(1, 0, 2))
    check(t.T, x.T)
    check(gt.tensor(x[0, 0]).broadcast_to((3, 4)), np.broadcast_to(x[0, 0], (3, 4)))
    assert t.reshape(4, -1).shape == (4, 6)


def test_log_softmax_and_one_hot():
    x = rand(4, 6).astype(np.float32) * 10
    x64 = x.astype(np.float64)
    ref = x64 - np.log(np.exp(x64 - x64.max(1, keepdims=True)).sum(1, keepdims=True)) - x64.max(1, keepdims=True)
    check(gt.tensor(x).log_softmax(dim=1), ref, atol=1e-5)
    check(gt.tensor(x).softmax(-1), np.exp(ref), atol=1e-6)
    y = np.array([0, 5, 2, 2])
    check(gt.one_hot(gt.tensor(y), 6), np.eye(6)[y])


def test_creation():
    check(gt.zeros(2, 3), np.zeros((2, 3)))
    check(gt.ones((2,), dtype=gt.int64), np.ones(2, dtype=np.int64))
    check(gt.full((2, 2), 7.5), np.full((2, 2), 7.5))
    gt.manual_seed(1)
    a = gt.randn(1000).numpy()
    gt.manual_seed(1)
    b = gt.randn(1000).numpy()
    assert np.array_equal(a, b)
    assert abs(a.mean()) < 0.15 and 0.8 < a.std() < 1.2
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = gt.from_numpy(x)
    assert t.dtype == gt.float64 and t.shape == (2, 3)
    check(t, x)


def test_tensor_surface():
    t = gt.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.dtype == gt.float32 and t.ndim == 2 and t.numel() == 4
    assert t.sum().item() == 10.0
    assert isinstance(t.data.numpy(), np.ndarray)
    assert repr(t) == "tensor([[1., 2.],\n        [3., 4.]])"
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]


# ---------------------------------------------------------------- gradients

def numerical_grad(f, xs, i, eps=1e-6):
    """d sum(f(xs)) / d xs[i] by central differences, float64."""
    x = xs[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        hi = f(*xs).sum()
        x[idx] = old - eps
        lo = f(*xs).sum()
        x[idx] = old
        g[idx] = (hi - lo) / (2 * eps)
    return g


def check_grad(gt_fn, np_fn, *arrays, atol=1e-6, rtol=1e-5):
    xs = [np.array(a, dtype=np.float64) for a in arrays]
    ts = [gt.tensor(x, requires_grad=True) for x in xs]
    out = gt_fn(*ts)
    out.sum().backward()
    for i, t in enumerate(ts):
        check(t.grad, numerical_grad(np_fn, xs, i), atol=atol, rtol=rtol, label=f"grad of input {i}")


@pytest.mark.parametrize("fn,ref,positive", UNARY, ids=lambda v: getattr(v, "__name__", ""))
def test_unary_grad(fn, ref, positive):
    x = rand(3, 4, positive=positive)
    if fn is gt.relu:
        x = np.where(np.abs(x) < 1e-3, 0.5, x)  # keep away from the kink
    check_grad(fn, ref, x)


@pytest.mark.parametrize("fn,ref", BINARY)
@pytest.mark.parametrize("sa,sb", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1))])
def test_binary_grad(fn, ref, sa, sb):
    a, b = rand(*sa), rand(*sb, positive=True)
    check_grad(fn, ref, a, b)


def test_pow_grad():
    check_grad(lambda a, b: a ** b, np.power, rand(3, positive=True), rand(3))


def test_matmul_grad():
    check_grad(lambda a, b: a @ b, np.matmul, rand(3, 4), rand(4, 2))
    check_grad(lambda a, b: a @ b, np.matmul, rand(2, 3, 4), rand(4, 2))
    check_grad(lambda a, b: a @ b, np.matmul, rand(4), rand(4, 2))


@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), ((0, 2), False)])
def test_reduction_grads(axis, keepdims):
    x = rand(2, 3, 4)
    check_grad(lambda t: t.sum(axis, keepdims), lambda a: a.sum(axis=axis, keepdims=keepdims), x)
    check_grad(lambda t: t.mean(axis, keepdims), lambda a: a.mean(axis=axis, keepdims=keepdims), x)
    check_grad(lambda t: t.amax(axis, keepdims) * 2, lambda a: a.max(axis=axis, keepdims=keepdims) * 2, x)


def test_max_ties_split_gradient():
    t = gt.tensor([1.0, 3.0, 3.0], requires_grad=True)
    t.max().backward()
    check(t.grad, [0.0, 0.5, 0.5])


def test_layout_grads():
    x = rand(2, 3, 4)
    w = rand(4, 3, 2)  # weights make the gradient position-dependent
    check_grad(lambda t: t.permute(2, 1, 0) * gt.tensor(w), lambda a: a.transpose(2, 1, 0) * w, x)
    check_grad(lambda t: t.reshape(6, 4) * gt.tensor(w.reshape(6, 4)), lambda a: a.reshape(6, 4) * w.reshape(6, 4), x)
    v = rand(4)
    m = rand(5, 4)
    check_grad(lambda t: t.broadcast_to((5, 4)) * gt.tensor(m), lambda a: np.broadcast_to(a, (5, 4)) * m, v)


def test_where_and_log_softmax_grads():
    c = rand(3, 4) > 0
    check_grad(lambda a, b: gt.where(gt.tensor(c), a, b), lambda a, b: np.where(c, a, b), rand(3, 4), rand(4))
    w = rand(3, 5)

    def ref(a):
        m = a.max(1, keepdims=True)
        return (a - m - np.log(np.exp(a - m).sum(1, keepdims=True))) * w
    check_grad(lambda t: t.log_softmax(dim=1) * gt.tensor(w), ref, rand(3, 5))


def test_grad_accumulates_and_no_grad():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    check(x.grad, [3 + 2, 3 + 4])
    with gt.no_grad():
        y = x * 2
    assert not y.requires_grad
    s = (x * 2).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="second time"):
        s.backward()  # the graph was released by the first call
    s = (x * 2).sum()
    s.backward(retain_graph=True)
    s.backward()


def test_inplace_update_reuses_memory():
    p = gt.tensor([1.0, 2.0], requires_grad=True)
    with gt.no_grad():
        for _ in range(10):
            p -= 0.5 * gt.ones(2)
    check(p, [-4.0, -3.0])
    with pytest.raises(RuntimeError, match="in-place"):
        p -= 1.0
