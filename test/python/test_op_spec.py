"""The op spec (ops/*.yaml) against the running system.

Plan-key collisions: for every attribute a client op declares, two batches that differ only in
that attribute run one after the other (the first twice, so its plan is cached); the second
must give its own result, not the first's. They run in a sharded session (a config loaded:
its cached plans hold the per-worker programs with their attributes, so a false hit returns the
first batch's result) and in a plain one. A new attribute in the spec without a case here
fails `test_every_declared_attribute_has_a_collision_case`.
"""
import inspect

import numpy as np
import pytest

import gt
from gt import _C, _ops
from gt._tensor import _op
from conftest import Daemons

F32, F64, I64 = gt.float32, gt.float64, gt.int64
A = np.arange(6, dtype=np.float32).reshape(2, 3)
B3 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
SQ = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
IDX = np.array([1, 0], dtype=np.int64)
IDX2 = np.array([[1, 0], [0, 0]], dtype=np.int64)
CX = np.linspace(-1, 1, 10, dtype=np.float32).reshape(1, 2, 5)  # a convolution's input, weight and output gradient
CW = np.linspace(-0.5, 1, 24, dtype=np.float32).reshape(4, 2, 3)
CG = np.linspace(1, -1, 8, dtype=np.float32).reshape(1, 4, 2)
PX = np.array([[[3, 1, 3, 0, -2, 5, 5], [-1, -1, -1, 2, 2, 0, -3]]], dtype=np.float32)  # a max pool's input
PG = np.linspace(1, 2, 6, dtype=np.float32).reshape(1, 2, 3)


def _index_add(shape, axis, idx, src):
    out = np.zeros(shape, np.float32)
    for k, i in enumerate(idx):
        if axis == 0:
            out[i] += src[k]
        else:
            out[:, i] += src[:, k]
    return out


def _scatter_add(shape, axis, idx, src):
    out = np.zeros(shape, np.float32)
    for i in range(idx.shape[0]):
        for j in range(idx.shape[1]):
            if axis == 0:
                out[idx[i, j], j] += src[i, j]
            else:
                out[i, idx[i, j]] += src[i, j]
    return out


def _im2col(x, shape, padding, stride, dilation):
    """(N, C, *spatial) -> (N, *out, C, *kernel): tap k of window o reads o * stride - padding + k * dilation."""
    n = x.ndim - 2
    out = np.zeros(shape, np.float32)
    for idx in np.ndindex(*shape):
        o, c, k = idx[1:1 + n], idx[1 + n], idx[2 + n:]
        pos = [o[i] * stride[i] - padding[i] + k[i] * dilation[i] for i in range(n)]
        if all(0 <= p < x.shape[2 + i] for i, p in enumerate(pos)):
            out[idx] = x[(idx[0], c, *pos)]
    return out


def _col2im(cols, shape, padding, stride, dilation):
    """The adjoint of _im2col: each window element added at the position it was read from."""
    n = len(shape) - 2
    out = np.zeros(shape, np.float32)
    for idx in np.ndindex(*cols.shape):
        o, c, k = idx[1:1 + n], idx[1 + n], idx[2 + n:]
        pos = [o[i] * stride[i] - padding[i] + k[i] * dilation[i] for i in range(n)]
        if all(0 <= p < shape[2 + i] for i, p in enumerate(pos)):
            out[(idx[0], c, *pos)] += cols[idx]
    return out


def _conv_terms(x_shape, w_shape, out_shape, padding, stride, dilation, groups):
    """The products a convolution sums: (n, o, out position, c, input position, tap) for every
    tap of every window that reads inside the input (c the input channel of o's group)."""
    n = len(x_shape) - 2
    og, cg = w_shape[0] // groups, w_shape[1]
    for b, o in np.ndindex(out_shape[0], out_shape[1]):
        for p in np.ndindex(*out_shape[2:]):
            for j, k in ((j, k) for j in range(cg) for k in np.ndindex(*w_shape[2:])):
                pos = tuple(p[i] * stride[i] - padding[i] + k[i] * dilation[i] for i in range(n))
                if all(0 <= q < x_shape[2 + i] for i, q in enumerate(pos)):
                    yield b, o, p, (o // og) * cg + j, pos, j, k


def _conv(x, w, shape, padding, stride, dilation, groups):
    out = np.zeros(shape, np.float64)
    for b, o, p, c, pos, j, k in _conv_terms(x.shape, w.shape, shape, padding, stride, dilation, groups):
        out[(b, o, *p)] += x[(b, c, *pos)] * w[(o, j, *k)]
    return out


def _conv_input_grad(g, w, shape, padding, stride, dilation, groups):
    out = np.zeros(shape, np.float64)
    for b, o, p, c, pos, j, k in _conv_terms(shape, w.shape, g.shape, padding, stride, dilation, groups):
        out[(b, c, *pos)] += g[(b, o, *p)] * w[(o, j, *k)]
    return out


def _conv_weight_grad(g, x, shape, padding, stride, dilation, groups):
    out = np.zeros(shape, np.float64)
    for b, o, p, c, pos, j, k in _conv_terms(x.shape, shape, g.shape, padding, stride, dilation, groups):
        out[(o, j, *k)] += g[(b, o, *p)] * x[(b, c, *pos)]
    return out


def _pool_windows(x_shape, out_shape, kernel, padding, stride):
    """(n, c, window p, [(tap's input position, flat tap index)] inside the input) of a max pool."""
    n = len(x_shape) - 2
    for b, c in np.ndindex(*out_shape[:2]):
        for p in np.ndindex(*out_shape[2:]):
            taps = []
            for t, k in enumerate(np.ndindex(*kernel)):
                pos = tuple(p[i] * stride[i] - padding[i] + k[i] for i in range(n))
                if all(0 <= q < x_shape[2 + i] for i, q in enumerate(pos)):
                    taps.append(pos)
            yield b, c, p, taps


def _max_pool(x, shape, kernel, padding, stride):
    out = np.full(shape, -np.inf, np.float32)
    for b, c, p, taps in _pool_windows(x.shape, shape, kernel, padding, stride):
        out[(b, c, *p)] = max(x[(b, c, *q)] for q in taps)
    return out


def _max_pool_backward(g, x, shape, kernel, padding, stride):
    """Each window's gradient to its first tap holding the maximum (PyTorch's rule)."""
    out = np.zeros(shape, np.float32)
    for b, c, p, taps in _pool_windows(x.shape, g.shape, kernel, padding, stride):
        first = max(taps, key=lambda q: (x[(b, c, *q)], -taps.index(q)))
        out[(b, c, *first)] += g[(b, c, *p)]
    return out


def _reduce(np_fn):
    return lambda x, axes, keepdims: np_fn(x, axis=tuple(axes), keepdims=keepdims)


def _arg(np_fn):
    def f(x, axes, keepdims):
        r = np_fn(x, axis=axes[0])
        return np.expand_dims(r, axes[0]) if keepdims else r
    return f


# op -> (operands as numpy arrays, base attributes, numpy oracle(*operands, **attrs)),
# and attribute -> the value that replaces the base one.
CASES = {
    "full": ((), dict(shape=[2, 3], dtype=F32, value=1.0),
             lambda shape, dtype, value: np.full(shape, value, gt.dtypes.numpy_dtype(dtype)),
             dict(shape=[2, 4], dtype=F64, value=2.0)),
    "cast": ((A,), dict(dtype=F64), lambda x, dtype: x.astype(gt.dtypes.numpy_dtype(dtype)), dict(dtype=I64)),
    "transpose": ((B3,), dict(perm=[1, 0, 2]), lambda x, perm: x.transpose(perm), dict(perm=[0, 2, 1])),
    "reshape": ((A,), dict(shape=[6]), lambda x, shape: x.reshape(shape), dict(shape=[3, 2])),
    "broadcast_to": ((A[:1],), dict(shape=[2, 3]), lambda x, shape: np.broadcast_to(x, shape), dict(shape=[4, 3])),
    "slice": ((np.arange(8, dtype=np.float32),), dict(shape=[3], starts=[0], steps=[2]),
              lambda x, shape, starts, steps: x[starts[0]::steps[0]][:shape[0]],
              dict(shape=[2], starts=[1], steps=[3])),
    "slice_scatter": ((np.zeros(8, np.float32), np.ones(2, np.float32)), dict(starts=[0], steps=[2]),
                      lambda b, s, starts, steps: _put(b, s, starts[0], steps[0]), dict(starts=[1], steps=[3])),
    "im2col": ((np.arange(10, dtype=np.float32).reshape(1, 2, 5),),
               dict(shape=[1, 5, 2, 3], padding=[1], stride=[1], dilation=[1]), _im2col,
               dict(shape=[1, 3, 2, 3], padding=[0], stride=[2], dilation=[2])),
    "col2im": ((np.arange(30, dtype=np.float32).reshape(1, 5, 2, 3),),
               dict(shape=[1, 2, 5], padding=[1], stride=[1], dilation=[1]), _col2im,
               dict(shape=[1, 2, 6], padding=[0], stride=[2], dilation=[2])),
    # x (1, 2, 5) by w (4, 2, 3) into 2 windows: each changed attribute keeps them valid
    "convolution": ((CX, CW), dict(shape=[1, 4, 2], padding=[0], stride=[2], dilation=[1], groups=1), _conv,
                    dict(shape=[1, 4, 3], padding=[1], stride=[3], dilation=[2], groups=2)),
    "convolution_backward_input": ((CG, CW), dict(shape=[1, 2, 5], padding=[0], stride=[2], dilation=[1], groups=1),
                                   _conv_input_grad,
                                   dict(shape=[1, 2, 6], padding=[1], stride=[3], dilation=[2], groups=2)),
    "convolution_backward_weight": ((CG, CX), dict(shape=[4, 2, 3], padding=[0], stride=[2], dilation=[1], groups=1),
                                    _conv_weight_grad,
                                    dict(shape=[4, 2, 2], padding=[1], stride=[3], dilation=[2], groups=2)),
    # x (1, 2, 7) into 3 windows of 3, padding 1, stride 2 (ties: the rounded values repeat)
    "max_pool": ((PX,), dict(shape=[1, 2, 3], kernel=[3], padding=[1], stride=[2]), _max_pool,
                 dict(shape=[1, 2, 4], kernel=[4], padding=[0], stride=[3])),
    "max_pool_backward": ((PG, PX), dict(shape=[1, 2, 7], kernel=[3], padding=[1], stride=[2]), _max_pool_backward,
                          dict(shape=[1, 2, 6], kernel=[4], padding=[0], stride=[3])),
    "concat": ((SQ, SQ + 10), dict(axis=0), lambda a, b, axis: np.concatenate([a, b], axis), dict(axis=1)),
    "sum": ((A,), dict(axes=[0], keepdims=False), _reduce(np.sum), dict(axes=[1], keepdims=True)),
    "mean": ((A,), dict(axes=[0], keepdims=False), _reduce(np.mean), dict(axes=[1], keepdims=True)),
    "max": ((A,), dict(axes=[0], keepdims=False), _reduce(np.max), dict(axes=[1], keepdims=True)),
    "min": ((A,), dict(axes=[0], keepdims=False), _reduce(np.min), dict(axes=[1], keepdims=True)),
    "argmax": ((A,), dict(axes=[0], keepdims=False), _arg(np.argmax), dict(axes=[1], keepdims=True)),
    "argmin": ((A,), dict(axes=[0], keepdims=False), _arg(np.argmin), dict(axes=[1], keepdims=True)),
    "one_hot": ((np.array([0, 2], np.int64),), dict(num_classes=3, dtype=I64),
                lambda x, num_classes, dtype: np.eye(num_classes, dtype=gt.dtypes.numpy_dtype(dtype))[x],
                dict(num_classes=4, dtype=F32)),
    "index_select": ((SQ, IDX), dict(axis=0), lambda x, i, axis: np.take(x, i, axis), dict(axis=1)),
    "index_add": ((IDX, SQ), dict(shape=[2, 2], axis=0), lambda i, s, shape, axis: _index_add(shape, axis, i, s),
                  dict(shape=[3, 2], axis=1)),
    "gather": ((SQ, IDX2), dict(axis=0), lambda x, i, axis: np.take_along_axis(x, i, axis), dict(axis=1)),
    "scatter_add": ((IDX2, SQ), dict(shape=[2, 2], axis=0), lambda i, s, shape, axis: _scatter_add(shape, axis, i, s),
                    dict(shape=[3, 2], axis=1)),
    "tril": ((B3,), dict(diagonal=0), lambda x, diagonal: np.tril(x, diagonal), dict(diagonal=-1)),
    "triu": ((B3,), dict(diagonal=0), lambda x, diagonal: np.triu(x, diagonal), dict(diagonal=2)),
    "flip": ((B3,), dict(dims=[0]), lambda x, dims: np.flip(x, dims), dict(dims=[1, 2])),
    "cumsum": ((B3,), dict(axis=0), lambda x, axis: np.cumsum(x, axis), dict(axis=2)),
    "prod": ((A / 4 + 1,), dict(axes=[0], keepdims=False), _reduce(np.prod), dict(axes=[1], keepdims=True)),
    "argsort": ((B3,), dict(axis=0, descending=False),
                lambda x, axis, descending: np.argsort(-x if descending else x, axis, kind="stable"),
                dict(axis=2, descending=True)),
}
# A changed axis of index_add/scatter_add needs a shape that fits it: the pairs to run.
TOGETHER = {("index_add", "axis"): dict(shape=[2, 2]), ("scatter_add", "axis"): dict(shape=[2, 2])}
# A convolution's groups follow from its operands' channel counts (C = C / groups * groups): other
# groups need other operands (so no plan could be shared; the run checks the value).
OTHER_OPERANDS = {("convolution", "groups"): (np.concatenate([CX, CX + 1], 1), CW),
                  ("convolution_backward_input", "groups"): (CG, CW),
                  ("convolution_backward_weight", "groups"): (CG, np.concatenate([CX, CX + 1], 1)),
                  ("max_pool_backward", "shape"): (PG, np.ascontiguousarray(PX[:, :, :6]))}


def _put(base, source, start, step):
    out = base.copy()
    out[start::step][:len(source)] = source
    return out


# Ops a client cannot send (the dispatcher's passes make them), and ops whose attributes are
# data rather than structure (upload's bytes; random streams are checked below).
NOT_CLIENT = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "all_slice", "move", "send", "recv"}


def test_every_declared_attribute_has_a_collision_case():
    missing = []
    for name in _ops.CODES:
        if name in NOT_CLIENT or name in ("upload", "randn", "rand", "shard"):
            continue
        for attr in _C.op_attrs(name):
            if name not in CASES or attr not in CASES[name][3]:
                missing.append(f"{name}.{attr}")
    assert not missing, f"attributes without a plan-key collision case: {missing}"


@pytest.fixture(scope="module")
def sessions():
    """A plain session and a sharded one (a config loaded) on daemons of their own."""
    d = Daemons()
    plain, sharded = d.client(), d.client()
    sharded.load_config("data:\n  shard: {axis: 0}\n", "data.yaml")
    yield {"plain": plain, "sharded": sharded}
    del plain, sharded
    d.stop()


def _run(c, name, operands, attrs):
    """One batch: upload the operands, run the op, fetch its result (raw client calls)."""
    ids = [c.upload(o, list(o.shape), gt.dtypes.resolve(o.dtype).code)[0] for o in operands]
    wire = {k: (v.code if isinstance(v, gt.dtype) else v) for k, v in attrs.items()}
    result = c.emit(_C.op_code(name), ids, wire)[0]
    data, shape, code = c.fetch(result)
    for i in ids + [result]:
        c.release(i)
    return np.frombuffer(data, gt.dtypes.numpy_dtype(gt.dtypes.from_code(code))).reshape(shape)


@pytest.mark.parametrize("session", ["plain", "sharded"])
@pytest.mark.parametrize("name,attr", [(n, a) for n in CASES for a in CASES[n][3]])
def test_no_false_plan_cache_hit(sessions, session, name, attr):
    operands, base, oracle, changes = CASES[name]
    other = dict(base, **{attr: changes[attr]}, **TOGETHER.get((name, attr), {}))
    if (name, attr) == ("convolution_backward_input", "groups"):
        other["shape"] = [1, 4, 5]
    if (name, attr) == ("convolution_backward_weight", "groups"):
        other["shape"] = [4, 2, 3]
    for attrs, ops in ((base, operands), (base, operands), (other, OTHER_OPERANDS.get((name, attr), operands))):
        got = _run(sessions[session], name, ops, attrs)
        want = oracle(*ops, **attrs)
        assert got.shape == want.shape, (name, attrs)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name} {attrs}")


def test_random_streams_follow_their_seed_through_the_plan_cache():
    # The seed is a runtime attribute: not in the plan key, yet every batch draws its own.
    draws = [_op("randn", shape=[64], seed=s, dtype=F32).numpy() for s in (1, 1, 2)]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[1], draws[2])
    assert _op("rand", shape=[3, 2], seed=5, dtype=F64).numpy().shape == (3, 2)
    assert _op("rand", shape=[3, 2], seed=5, dtype=F32).numpy().dtype == np.float32


def test_an_undeclared_attribute_is_refused_at_the_users_line():
    x = gt.ones(3)
    with pytest.raises(ValueError, match=r"exp has no attribute 'axes' \(it takes: none\)"):
        _op("exp", x, axes=[0])
    with pytest.raises(ValueError, match=r"transpose has no attribute 'axes' \(it takes: perm\)"):
        _op("transpose", x, axes=[0])


def test_spec_docstrings_reach_the_python_api():
    assert gt.exp.__doc__.startswith("e^x")
    # (gt.exp is the method wrapped once more, for out=, and both by autocast's float32 list; and
    # both by gt.overrides once a Tensor subclass exists)
    assert inspect.unwrap(gt.Tensor.exp) is inspect.unwrap(gt.exp)
    assert inspect.unwrap(gt.Tensor.sigmoid) is inspect.unwrap(gt.sigmoid)
    assert gt.Tensor.exp.__doc__ == gt.exp.__doc__
    assert "bool mask" in gt.lt.__doc__
    assert set(_ops.FUNCTIONS) <= set(dir(gt))


def test_workers_take_the_result_types_the_client_inferred(sessions):
    # The client infers each result type once and it is carried (docs/architecture.md, "Where
    # result types are computed"): a worker infers only for ops that use the type without a
    # kernel, such as reshape, and checks it there.
    c = sessions["plain"]
    x = c.upload(A, [2, 3], F32.code)[0]
    c.fetch(x)
    before = c.stats()
    y = x
    for _ in range(10):
        y = c.emit(_C.op_code("neg"), [c.emit(_C.op_code("exp"), [y])[0]])[0]
    c.fetch(y)
    mid = c.stats()
    ran = lambda s: s["eager_ops"] + s["fused_ops"]
    assert ran(mid) - ran(before) == 20
    assert mid["types_inferred"] == before["types_inferred"]
    z = c.emit(_C.op_code("reshape"), [y], {"shape": [3, 2]})[0]
    assert tuple(c.fetch(z)[1]) == (3, 2)
    assert c.stats()["types_inferred"] == before["types_inferred"] + 1
