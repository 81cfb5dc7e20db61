"""PyTorch functions built from other ops (issue 24): values against NumPy (float64 references)
and gradients against central differences, in-place forms, finfo / iinfo."""
import os

import numpy as np
import pytest

import gt
from conftest import check
from test_api import check_grad, data

NAN_INF = np.array([1.5, np.nan, np.inf, -np.inf, -2.0, 0.0])


def test_nan_and_inf_tests_and_any_all():
    x = gt.tensor(NAN_INF)
    check(x.isnan(), np.isnan(NAN_INF))
    check(gt.isinf(x), np.isinf(NAN_INF))
    check(gt.isfinite(x), np.isfinite(NAN_INF))
    check(gt.sign(x), np.sign(NAN_INF))
    ints = gt.tensor([3, -1, 0])
    assert not gt.isnan(ints).numpy().any() and gt.isfinite(ints).numpy().all()
    check(gt.sign(ints), [1, -1, 0])
    m = np.array([[0, 1, 0], [0, 0, 0]])
    for dim, keepdim in ((None, False), (0, False), (1, True), (-1, False)):
        check(gt.any(gt.tensor(m), dim, keepdim), np.any(m, axis=dim, keepdims=keepdim if dim is not None else False))
        check(gt.tensor(m).all(dim, keepdim), np.all(m, axis=dim, keepdims=keepdim if dim is not None else False))
    assert gt.tensor([True, True]).all().item() and not gt.tensor([False]).any().item()
    assert gt.equal(gt.tensor([1, 2]), gt.tensor([1, 2])) and not gt.equal(gt.tensor([1, 2]), gt.tensor([1, 3]))
    assert not gt.equal(gt.ones(2), gt.ones(3))


@pytest.mark.parametrize("name,fn,ref,shapes", [
    ("outer", gt.outer, np.outer, [(4,), (3,)]),
    ("addmm", lambda i, a, b: gt.addmm(i, a, b, beta=0.5, alpha=2.0), lambda i, a, b: 0.5 * i + 2.0 * a @ b,
     [(3, 1), (3, 4), (4, 2)]),
    ("addmm-default", gt.addmm, lambda i, a, b: i + a @ b, [(2,), (3, 4), (4, 2)]),
    ("baddbmm", lambda i, a, b: gt.baddbmm(i, a, b, alpha=-1.0), lambda i, a, b: i - a @ b, [(2, 3, 2), (2, 3, 4), (2, 4, 2)]),
    ("addbmm", gt.addbmm, lambda i, a, b: i + (a @ b).sum(0), [(3, 2), (2, 3, 4), (2, 4, 2)]),
    ("lerp", gt.lerp, lambda a, b, w: a + w * (b - a), [(3, 4), (3, 4), (4,)]),
    ("lerp-number", lambda a, b: gt.lerp(a, b, 0.25), lambda a, b: a + 0.25 * (b - a), [(5,), (5,)]),
    ("clamp_min", lambda x: gt.clamp_min(x, 0.1), lambda x: np.maximum(x, 0.1), [(7,)]),
    ("clamp_max", lambda x: x.clamp_max(-0.1), lambda x: np.minimum(x, -0.1), [(2, 3)]),
    ("repeat", lambda x: x.repeat(2, 1, 3), lambda x: np.tile(x, (2, 1, 3)), [(2, 3)]),
    ("repeat-same-rank", lambda x: gt.repeat(x, 1, 2), lambda x: np.tile(x, (1, 2)), [(3, 2)]),
    ("roll", lambda x: x.roll(2, 1), lambda x: np.roll(x, 2, 1), [(3, 5)]),
    ("roll-dims", lambda x: gt.roll(x, (-1, 4), (0, 1)), lambda x: np.roll(x, (-1, 4), (0, 1)), [(3, 5)]),
    ("roll-flat", lambda x: gt.roll(x, 3), lambda x: np.roll(x, 3), [(2, 3)]),
])
def test_composite_values_and_gradients(name, fn, ref, shapes):
    arrays = [data(s, np.float64) for s in shapes]
    check(fn(*[gt.tensor(a) for a in arrays]), ref(*arrays), atol=1e-10)
    check_grad(fn, ref, *arrays)


def test_methods_that_were_functions_only():
    x = gt.tensor(np.arange(12.0).reshape(3, 4))
    check(x.norm(), np.linalg.norm(np.arange(12.0)))
    check(x.narrow(1, 1, 2), np.arange(12.0).reshape(3, 4)[:, 1:3])
    assert [t.shape for t in x.unbind(1)] == [(3,)] * 4
    check(x.where(x > 5, -1.0), np.where(np.arange(12.0).reshape(3, 4) > 5, np.arange(12.0).reshape(3, 4), -1.0))
    with pytest.raises(RuntimeError, match="expected 1-D"):
        gt.outer(gt.ones(2, 2), gt.ones(2))
    with pytest.raises(RuntimeError, match="can not be smaller"):
        gt.ones(2, 2).repeat(2)


def test_in_place_forms():
    x = gt.tensor([1.0, 2.0, 3.0])
    same = x
    x.add_(1).mul_(2).sub_(gt.tensor([1.0, 1.0, 1.0]), alpha=2).div_(2)
    assert same is x  # rebound in place: the same Python object, new values
    check(x, [1.0, 2.0, 3.0])
    x.clamp_(1.5, 2.5)
    check(x, [1.5, 2.0, 2.5])
    x.masked_fill_(gt.tensor([True, False, False]), 9.0)
    check(x, [9.0, 2.0, 2.5])
    x.fill_(4)
    check(x, [4.0, 4.0, 4.0])
    x.copy_(gt.tensor([7, 8, 9]))  # the dtype stays float32
    assert x.dtype == gt.float32
    check(x, [7.0, 8.0, 9.0])
    x.copy_(gt.tensor(0.5))  # broadcast
    check(x, [0.5, 0.5, 0.5])
    x.lerp_(gt.tensor([1.5, 1.5, 1.5]), 0.5)
    check(x, [1.0, 1.0, 1.0])
    gt.manual_seed(0)
    w = gt.zeros(1000)
    w.normal_(2.0, 0.5)
    assert abs(float(w.mean()) - 2.0) < 0.1 and abs(float(w.std()) - 0.5) < 0.1
    w.uniform_(-1.0, 3.0)
    assert float(w.amin()) >= -1.0 and float(w.amax()) < 3.0
    leaf = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.add_(1)
    with gt.no_grad():
        leaf.mul_(3)
    check(leaf, [3.0, 3.0])
    # On a tensor with history, an in-place op is part of it.
    a = gt.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1.0
    b.mul_(3).add_(1)
    b.sum().backward()
    check(a.grad, [3.0, 3.0])
    a.grad = None
    b = a * 2.0
    b += 1
    b *= b  # the old b times the old b: (2a + 1)^2
    b.sum().backward()
    check(a.grad, 4 * (2 * np.array([1.0, 2.0]) + 1))


def test_finfo_and_iinfo():
    f = gt.finfo(gt.float32)
    assert f.eps == float(np.finfo(np.float32).eps) and f.bits == 32 and f.max == float(np.finfo(np.float32).max)
    assert gt.finfo().dtype == "float32" and gt.finfo(gt.float16).max == 65504.0
    assert gt.finfo(gt.bfloat16).eps == 2.0 ** -7
    assert gt.iinfo(gt.int64).max == 2 ** 63 - 1 and gt.iinfo(gt.int32).min == -2 ** 31
    with pytest.raises(TypeError, match="floating-point"):
        gt.finfo(gt.int64)
    with pytest.raises(TypeError, match="integer"):
        gt.iinfo(gt.float32)


def test_multinomial_frequencies_and_without_replacement():
    p = np.array([0.1, 0.0, 0.6, 0.3])
    gt.manual_seed(0)
    draws = gt.multinomial(gt.tensor(p, dtype=gt.float32), 20000, replacement=True)
    assert draws.dtype == gt.int64 and draws.shape == (20000,)
    freq = np.bincount(draws.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, p, atol=0.02)  # 5 standard deviations of a 0.6 share: 0.017
    assert freq[1] == 0  # a zero weight is never drawn
    rows = gt.multinomial(gt.tensor(np.tile(p * 7, (50, 1))), 3).numpy()  # weights need not sum to 1
    assert rows.shape == (50, 3) and all(len(set(r)) == 3 and 1 not in r for r in rows)
    g = gt.Generator().manual_seed(5)
    a = gt.multinomial(gt.tensor(p), 10, True, generator=g).numpy()
    b = gt.multinomial(gt.tensor(p), 10, True, generator=gt.Generator().manual_seed(5)).numpy()
    np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="without replacement"):
        gt.multinomial(gt.tensor(p), 5)


def test_round_half_to_even_diag_and_diagonal():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, 1e9 + 1, 3.0])
    check(gt.round(gt.tensor(x)), np.round(x), atol=0, rtol=0)
    check(gt.tensor(np.float32(x)).round(), np.round(np.float32(x)), atol=0, rtol=0)
    check(gt.round(gt.tensor([1.234, -5.678], dtype=gt.float64), decimals=2), [1.23, -5.68])
    t = gt.tensor(x, requires_grad=True)
    gt.round(t).sum().backward()
    assert not t.grad.numpy().any()  # the gradient of round is 0, as PyTorch's
    v, m = data((3,), np.float64), data((3, 4), np.float64)
    for k in (0, 2, -1):
        check(gt.diag(gt.tensor(v), k), np.diag(v, k))
        check(gt.tensor(m).diag(k), np.diag(m, k))
    b = data((2, 3, 4), np.float64)
    check(gt.diagonal(gt.tensor(b), 1, 1, 2), np.diagonal(b, 1, 1, 2))
    check(gt.diagonal(gt.tensor(b), -1, 0, 2), np.diagonal(b, -1, 0, 2))
    check_grad(lambda a: gt.diagonal(a, 1, 1, 2) * 3, lambda a: np.diagonal(a, 1, 1, 2) * 3, b)


def test_repeat_interleave_nonzero_masked_select():
    m = data((3, 4), np.float64)
    check(gt.repeat_interleave(gt.tensor(m), 2, dim=1), np.repeat(m, 2, 1))
    check(gt.tensor(m).repeat_interleave(gt.tensor([1, 0, 2]), dim=0), np.repeat(m, [1, 0, 2], 0))
    check(gt.repeat_interleave(gt.tensor(m), 2), np.repeat(m, 2))
    check(gt.repeat_interleave(gt.tensor([2, 1])), [0, 0, 1])
    with pytest.raises(RuntimeError, match="same size as input"):
        gt.repeat_interleave(gt.tensor(m), [1, 2], dim=0)
    mask = m > 0
    check(gt.nonzero(gt.tensor(mask)), np.argwhere(mask))
    rows, cols = gt.tensor(mask).nonzero(as_tuple=True)
    check(rows, np.nonzero(mask)[0])
    check(cols, np.nonzero(mask)[1])
    check(gt.masked_select(gt.tensor(m), gt.tensor(mask)), m[mask])
    check(gt.masked_select(gt.tensor(m), gt.tensor(mask[0])), m[np.broadcast_to(mask[0], m.shape)])
    check_grad(lambda a: gt.masked_select(a, gt.tensor(mask)) ** 2, lambda a: a[mask] ** 2, m)


@pytest.mark.parametrize("eq,shapes", [
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]), ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]), ("...qd,...kd->...qk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("bij,bjk", [(2, 3, 4), (2, 4, 5)]), ("ij,ij->i", [(3, 4), (3, 4)]), ("ab,bc,cd->ad", [(3, 4), (4, 5), (5, 2)]),
    ("bi,i->b", [(3, 4), (4,)]),
    # a repeated letter within one operand: a diagonal (the NTK tutorial's "NMKK->NM" trace)
    ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("NMKK->NM", [(2, 4, 3, 3)]), ("ij,jj->i", [(3, 3), (3, 3)]),
    ("iij->j", [(3, 3, 2)]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_einsum_matches_numpy(eq, shapes):
    ops = [data(s, np.float64) for s in shapes]
    check(gt.einsum(eq, *[gt.tensor(o) for o in ops]), np.einsum(eq, *ops))
    if len(ops) == 2:
        check_grad(lambda a: gt.einsum(eq, a, gt.tensor(ops[1])), lambda a: np.einsum(eq, a, ops[1]), ops[0])


def test_einsum_errors():
    with pytest.raises(ValueError, match="2 operands in the equation, 1 given"):
        gt.einsum("ij,jk->ik", gt.ones(2, 2))
    with pytest.raises(ValueError, match="subscript 'i' is repeated for operand 0 but the sizes don't match"):
        gt.einsum("ii->i", gt.ones(2, 3))
    with pytest.raises(ValueError, match="letter 'j' has sizes 3 and 4"):
        gt.einsum("ij,jk->ik", gt.ones(2, 3), gt.ones(4, 2))


def test_dtype_compares_equal_to_its_name():
    x = gt.ones(2)
    assert x.dtype == "float32" and x.dtype == "torch.float32" and x.dtype == "float"
    assert x.dtype != "int64" and x.dtype != "nonsense" and gt.int64 == "long"
    assert {gt.float32: 1}[x.dtype] == 1


def test_axis_and_keepdims_are_aliases_of_dim_and_keepdim():
    x = gt.tensor(np.arange(6.0).reshape(2, 3))
    assert gt.cat([x, x], axis=0).shape == (4, 3) and gt.stack([x, x], axis=1).shape == (2, 2, 3)
    check(gt.softmax(x, axis=1), gt.softmax(x, dim=1).numpy())
    check(gt.nn.functional.log_softmax(x, axis=0), gt.log_softmax(x, 0).numpy())
    check(x.argmax(axis=1), [2, 2])
    check(x.var(axis=1, keepdims=True), np.var(np.arange(6.0).reshape(2, 3), 1, ddof=1, keepdims=True))
    check(gt.cumsum(x, axis=1), np.cumsum(np.arange(6.0).reshape(2, 3), 1))
    assert x.unsqueeze(axis=0).shape == (1, 2, 3) and gt.topk(x, 2, axis=1).values.shape == (2, 2)
    with pytest.raises(TypeError, match="both dim= and its alias axis="):
        gt.cat([x], dim=0, axis=0)


def test_integer_tensors_index_python_sequences():
    data = list(range(10))
    i = gt.tensor([2, 5])
    assert [data[k] for k in i] == [2, 5] and data[i[0]:i[1]] == [2, 3, 4]
    assert list(range(gt.tensor(3))) == [0, 1, 2]
    with pytest.raises(TypeError, match="integer tensors of a single element"):
        data[gt.tensor(1.0)]


def test_single_process_distributed_and_data_parallel_wrappers():
    assert not gt.distributed.is_available() and not gt.distributed.is_initialized()  # (no process groups)
    assert gt.distributed.get_rank() == 0 and gt.distributed.get_world_size() == 1
    with pytest.raises(RuntimeError, match="sharding config"):
        gt.distributed.init_process_group(backend="gloo")
    inner = gt.nn.Linear(3, 2)
    wrapped = gt.nn.parallel.DistributedDataParallel(inner, device_ids=[0])
    x = gt.randn(4, 3)
    np.testing.assert_array_equal(wrapped(x).numpy(), inner(x).numpy())
    assert wrapped.module is inner and sorted(wrapped.state_dict()) == ["module.bias", "module.weight"]
    with wrapped.no_sync():
        pass
    assert gt.nn.DataParallel(inner).module is inner


def test_movedim_isclose_diff_logit_take_tensordot_aminmax_unflatten():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = gt.tensor(a, dtype=gt.float32)
    assert gt.movedim(x, 0, -1).shape == (3, 4, 2) and x.movedim((0, 1), (2, 0)).shape == np.moveaxis(a, (0, 1), (2, 0)).shape
    np.testing.assert_array_equal(x.moveaxis(0, 2).numpy(), np.moveaxis(a, 0, 2))
    got = gt.isclose(gt.tensor([1.0, 2.0, float("nan"), float("inf")]), gt.tensor([1.0 + 1e-9, 2.1, float("nan"), float("inf")]))
    assert got.tolist() == [True, False, False, True]
    assert gt.isclose(gt.tensor([float("nan")]), gt.tensor([float("nan")]), equal_nan=True).tolist() == [True]
    assert gt.diff(gt.tensor([1, 4, 9, 16])).tolist() == [3, 5, 7] and gt.diff(gt.tensor([1, 4, 9, 16]), n=2).tolist() == [2, 2]
    np.testing.assert_array_equal(x.diff(dim=1, prepend=x[:, :1]).numpy(), np.diff(a, axis=1, prepend=a[:, :1]))
    np.testing.assert_allclose(gt.logit(gt.tensor([0.5, 0.25, 0.0]), eps=1e-6).numpy(),
                               np.log(np.array([0.5, 0.25, 1e-6]) / (1 - np.array([0.5, 0.25, 1e-6]))), rtol=1e-4)
    check(gt.erfc(gt.tensor([0.0, 1.0])), [1.0, 0.15729920705028513], rtol=1e-5)
    assert gt.take(x, gt.tensor([[0, 23], [5, 7]])).tolist() == [[0.0, 23.0], [5.0, 7.0]]
    b = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(gt.tensordot(x, gt.tensor(b, dtype=gt.float32), dims=([2], [0])).numpy(),
                               np.tensordot(a, b, axes=([2], [0])))
    np.testing.assert_allclose(gt.tensordot(x, gt.ones(3, 4), 2).numpy(), a.sum((1, 2)))
    lo, hi = x.aminmax(dim=1)
    np.testing.assert_array_equal(lo.numpy(), a.min(1))
    np.testing.assert_array_equal(hi.numpy(), a.max(1))
    assert x.unflatten(2, (2, -1)).shape == (2, 3, 2, 2) and gt.unflatten(x, 0, (1, 2)).shape == (1, 2, 3, 4)
    w = gt.tensor([0.2, 0.7], requires_grad=True)
    gt.logit(w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 1 / (np.array([0.2, 0.7]) * (1 - np.array([0.2, 0.7]))), rtol=1e-5)


def test_settings_scripts_call_and_the_torch_modules_gt_answers(monkeypatch):
    assert gt.is_tensor(gt.ones(1)) and not gt.is_tensor(np.ones(1)) and gt.numel(gt.ones(2, 3)) == 6
    assert gt.get_default_dtype() == gt.float32
    gt.set_default_dtype(gt.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        gt.set_default_dtype(gt.int64)
    monkeypatch.setenv("GT_ALLOW_TF32", "0")  # (so that the teardown restores what was there)
    gt.set_float32_matmul_precision("high")
    assert gt.get_float32_matmul_precision() == "high" and os.environ["GT_ALLOW_TF32"] == "1"
    gt.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError):
        gt.set_float32_matmul_precision("fast")
    monkeypatch.setenv("GT_WORKER_THREADS", "1")
    gt.set_num_threads(3)  # (for workers started later: this session's are running)
    assert gt.get_num_threads() == 3
    s = gt.seed()
    assert gt.initial_seed() == s
    gt.manual_seed(7)
    assert gt.initial_seed() == 7
    # torch.linalg's norms
    a = np.arange(12.0).reshape(3, 4) - 5
    m = gt.tensor(a, dtype=gt.float32)
    check(gt.linalg.norm(m), np.linalg.norm(a), rtol=1e-6)
    check(gt.linalg.vector_norm(m, 1, dim=-1), np.abs(a).sum(-1), rtol=1e-6)
    check(gt.linalg.vector_norm(m, float("inf")), np.abs(a).max(), rtol=1e-6)
    check(gt.linalg.matrix_norm(m, 1), np.linalg.norm(a, 1), rtol=1e-6)
    check(gt.linalg.matrix_norm(m, float("-inf")), np.linalg.norm(a, -np.inf), rtol=1e-6)
    check(gt.linalg.matrix_norm(m, "nuc"), np.linalg.norm(a, "nuc"), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        gt.linalg.matrix_norm(m, 3)
    # torch.testing, torch.jit, torch.utils.checkpoint
    gt.testing.assert_close(m, m.clone())
    with pytest.raises(AssertionError):
        gt.testing.assert_close(m, m + 1e-3)
    with pytest.raises(AssertionError, match="dtype"):
        gt.testing.assert_close(m, m.double())
    assert gt.jit.script(len) is len and not gt.jit.is_scripting()

    @gt.jit.ignore
    def f(v):
        return v

    assert f(3) == 3
    from gt.utils.checkpoint import checkpoint
    w = gt.ones(3, requires_grad=True)
    checkpoint(lambda v: (v * 2).sum(), w, use_reentrant=False).backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_pad_sequence():
    from gt.nn.utils.rnn import pad_sequence, unpad_sequence
    seqs = [gt.ones(2, 1), gt.ones(3, 1) * 2]
    out = pad_sequence(seqs, batch_first=True)
    assert out.squeeze(-1).tolist() == [[1.0, 1.0, 0.0], [2.0, 2.0, 2.0]]
    assert pad_sequence(seqs).shape == (3, 2, 1)
    assert pad_sequence([gt.ones(1), gt.ones(2)], padding_side="left", padding_value=-1).tolist() == [[-1.0, 1.0],
                                                                                                       [1.0, 1.0]]
    back = unpad_sequence(out, [2, 3], batch_first=True)
    assert [t.shape for t in back] == [(2, 1), (3, 1)]
    with pytest.raises(ValueError, match="trailing shape"):
        pad_sequence([gt.ones(2, 1), gt.ones(2, 2)])


def _block_diag_np(*arrays):
    blocks = [np.atleast_2d(a) for a in arrays]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


@pytest.mark.parametrize("name,fn,ref,shapes", [
    ("cummax", lambda x: gt.cummax(x, 1).values, lambda x: np.maximum.accumulate(x, 1), [(3, 9)]),
    ("cummin", lambda x: x.cummin(0)[0], lambda x: np.minimum.accumulate(x, 0), [(5, 2)]),
    ("logcumsumexp", lambda x: gt.logcumsumexp(x, -1), lambda x: np.logaddexp.accumulate(x, -1), [(2, 13)]),
    ("kron", gt.kron, np.kron, [(2, 3), (3, 2)]),
    ("kron-ranks", gt.kron, np.kron, [(3,), (2, 2)]),
    ("block_diag", gt.block_diag, _block_diag_np, [(2, 3), (3,), (1, 1)]),
    ("rot90", lambda x: gt.rot90(x), np.rot90, [(2, 3)]),
    ("rot90-k", lambda x: x.rot90(3, (2, 0)), lambda x: np.rot90(x, 3, (2, 0)), [(2, 3, 4)]),
    ("diag_embed", lambda x: gt.diag_embed(x), lambda x: np.stack([np.diag(r) for r in x]), [(2, 3)]),
    ("diag_embed-offset", lambda x: gt.diag_embed(x, -2), lambda x: np.stack([np.diag(r, -2) for r in x]), [(2, 3)]),
    ("diag_embed-dims", lambda x: gt.diag_embed(x, 1, 0, 2),
     lambda x: np.stack([np.diag(r, 1) for r in x]).transpose(1, 0, 2), [(2, 3)]),
    ("trace", gt.trace, np.trace, [(3, 4)]),
    ("vander", lambda x: gt.vander(x, 4), lambda x: np.vander(x, 4), [(3,)]),
    ("vander-increasing", lambda x: gt.vander(x, increasing=True), lambda x: np.vander(x, increasing=True), [(3,)]),
    ("addmv", lambda i, m, v: gt.addmv(i, m, v, beta=0.5, alpha=2.0), lambda i, m, v: 0.5 * i + 2.0 * m @ v,
     [(3,), (3, 4), (4,)]),
    ("chain_matmul", gt.chain_matmul, lambda a, b, c: a @ b @ c, [(2, 3), (3, 4), (4, 2)]),
    ("cov", gt.cov, np.cov, [(3, 7)]),
    ("cov-1d", gt.cov, np.cov, [(7,)]),
    ("corrcoef", gt.corrcoef, np.corrcoef, [(3, 7)]),
    ("trapezoid", gt.trapezoid, np.trapezoid, [(3, 5)]),
    ("trapezoid-x", lambda y, x: gt.trapezoid(y, x, dim=0), lambda y, x: np.trapezoid(y, x, axis=0), [(5, 2), (5,)]),
    ("trapezoid-dx", lambda y: gt.trapezoid(y, dx=0.5), lambda y: np.trapezoid(y, dx=0.5), [(6,)]),
    ("fmax", gt.fmax, np.fmax, [(4, 3), (3,)]),
    ("fmin", lambda a, b: a.fmin(b), np.fmin, [(4, 3), (4, 3)]),
    ("copysign", lambda x: gt.copysign(x, gt.tensor([1.0, -1.0, -0.0, 0.0, -2.0])),
     lambda x: np.copysign(x, [1.0, -1.0, -0.0, 0.0, -2.0]), [(5,)]),
    ("ldexp", lambda x: gt.ldexp(x, gt.tensor([1, -2, 3])), lambda x: x * 2.0 ** np.array([1, -2, 3]), [(2, 3)]),
    ("float_power", lambda x: gt.float_power(x, 3), lambda x: np.float_power(x, 3), [(4,)]),
    ("rsub", lambda x, y: gt.rsub(x, y, alpha=2), lambda x, y: y - 2 * x, [(3,), (3,)]),
    ("hstack", lambda a, b: gt.hstack([a, b]), lambda a, b: np.hstack([a, b]), [(2, 3), (2, 1)]),
    ("vstack", lambda a, b: gt.vstack((a, b)), lambda a, b: np.vstack([a, b]), [(3,), (2, 3)]),
    ("dstack", lambda a, b: gt.dstack([a, b]), lambda a, b: np.dstack([a, b]), [(2, 3), (2, 3)]),
    ("column_stack", lambda a, b: gt.column_stack([a, b]), lambda a, b: np.column_stack([a, b]), [(3,), (3, 2)]),
])
def test_array_functions_values_and_gradients(name, fn, ref, shapes):
    arrays = [data(s, np.float64) for s in shapes]
    check(fn(*[gt.tensor(a) for a in arrays]), ref(*arrays), atol=1e-10)
    check_grad(fn, ref, *arrays)


def test_scans_ties_nans_infinities_and_indices():
    x = gt.tensor([1.0, 3.0, 3.0, 2.0, np.nan, 5.0, np.nan])
    values, indices = gt.cummax(x, 0)
    check(values, [1, 3, 3, 3, np.nan, np.nan, np.nan])
    check(indices, [0, 1, 2, 2, 4, 4, 6])  # a tie takes the later index; NaN wins, as in PyTorch
    check(gt.cummin(gt.tensor([3, 1, 1, 2]), 0).indices, [0, 1, 2, 2])
    assert gt.cummin(gt.tensor([3, 1, 1, 2]), 0).values.dtype == gt.int64
    v = gt.tensor([-np.inf, 0.0, 1.0, -np.inf], requires_grad=True)
    out = gt.logcumsumexp(v, 0)
    check(out, np.logaddexp.accumulate([-np.inf, 0.0, 1.0, -np.inf]))
    out.sum().backward()
    assert np.isfinite(v.grad.numpy()).all(), v.grad.numpy()  # no NaN from exp(-inf) stand-ins
    big = gt.tensor([1000.0, 1000.0])
    check(gt.logcumsumexp(big, 0), [1000.0, 1000.0 + np.log(2.0)])  # no overflow
    g = gt.tensor([[1.0, 5.0, 2.0]], requires_grad=True)
    gt.cummax(g, 1).values.sum().backward()
    check(g.grad, [[1.0, 2.0, 0.0]])  # each running maximum's gradient goes where it came from


def test_stacking_splitting_and_shapes():
    a = gt.arange(12).reshape(3, 4)
    assert [t.shape for t in gt.hsplit(a, 2)] == [(3, 2), (3, 2)]
    assert [t.shape for t in a.vsplit([1])] == [(1, 4), (2, 4)]
    assert [t.shape for t in gt.dsplit(a.reshape(1, 3, 4), 4)] == [(1, 3, 1)] * 4
    with pytest.raises(RuntimeError, match="not divisible"):
        gt.hsplit(a, 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        gt.vsplit(gt.arange(3), 1)
    assert gt.atleast_1d(gt.tensor(1.0)).shape == (1,)
    assert [t.shape for t in gt.atleast_2d(gt.tensor(1.0), gt.ones(3))] == [(1, 1), (1, 3)]
    assert [t.shape for t in gt.atleast_3d([gt.ones(3), gt.ones(2, 3)])] == [(1, 3, 1), (2, 3, 1)]
    assert gt.row_stack([gt.ones(2), gt.zeros(2)]).shape == (2, 2)
    assert gt.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        gt.broadcast_shapes((2,), (3,))
    check(gt.take(gt.arange(6).reshape(2, 3), gt.tensor([[-1, 0], [2, -6]])), [[5, 0], [2, 0]])
    check(gt.signbit(gt.tensor([-0.0, 0.0, -1.0, 2.0])), [True, False, True, False])
    check(gt.copysign(gt.tensor([1.0, 2.0]), -0.0), [-1.0, -2.0])
    assert gt.float_power(gt.tensor([2, 3]), 2).dtype == gt.float64
    check(gt.block_diag(gt.tensor([[1, 2]]), gt.tensor([[3.5]])), [[1, 2, 0], [0, 0, 3.5]])
    with pytest.raises(NotImplementedError, match="fweights"):
        gt.cov(gt.ones(2, 3), fweights=gt.ones(3))
    with pytest.raises(RuntimeError, match="expected a matrix"):
        gt.trace(gt.ones(3))


@pytest.fixture
def default_float64():
    gt.set_default_dtype(gt.float64)
    yield
    gt.set_default_dtype(gt.float32)


def test_set_default_dtype_float64_reaches_every_creation_path(default_float64):
    assert gt.get_default_dtype() == gt.float64
    made = [gt.zeros(2), gt.ones(2), gt.full((2,), 1.5), gt.rand(2), gt.randn(2), gt.arange(0.0, 2.0),
            gt.linspace(0, 1, 3), gt.eye(2), gt.tensor([1.0, 2.0]), gt.Tensor([1, 2]), gt.tensor([1, 2]) / 2,
            gt.tensor([1, 2]) * 1.5, gt.tensor([1, 2]) ** 0.5, gt.nn.Linear(2, 3).weight, gt.nn.Linear(2, 3).bias,
            gt.nn.LayerNorm(3).weight]
    assert [t.dtype for t in made] == [gt.float64] * len(made)
    assert gt.tensor([1, 2]).dtype == gt.int64 and gt.tensor(np.zeros(2, np.float32)).dtype == gt.float32
    assert gt.ones(2).float().dtype == gt.float32
    # a float64 model trains in float64 end to end
    gt.manual_seed(0)
    model = gt.nn.Sequential(gt.nn.Linear(3, 8), gt.nn.Tanh(), gt.nn.Linear(8, 1))
    opt = gt.optim.Adam(model.parameters(), lr=1e-2)
    x = gt.tensor(np.linspace(-1, 1, 30).reshape(10, 3))
    for _ in range(3):
        loss = ((model(x) - 1.0) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.dtype == gt.float64 and all(p.dtype == gt.float64 for p in model.parameters())
    gt.set_default_tensor_type("torch.FloatTensor")
    assert gt.get_default_dtype() == gt.float32 and gt.zeros(1).dtype == gt.float32
