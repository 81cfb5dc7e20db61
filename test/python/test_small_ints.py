"""int8, int16 and uint8 tensors (issue 24): PyTorch's dtypes and results, wrapping included,
against NumPy (whose 8- and 16-bit integer arithmetic wraps as PyTorch's does). Workers only
move and cast these types; every other op computes through int32 (gt._tensor._small_int_op)."""
import numpy as np
import pytest

import gt
from conftest import check

SMALL = [(gt.uint8, np.uint8), (gt.int8, np.int8), (gt.int16, np.int16)]
rng = np.random.default_rng(0)


def values(np_type, shape):
    info = np.iinfo(np_type)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(np_type)


@pytest.mark.parametrize("dtype,np_type", SMALL, ids=lambda v: getattr(v, "name", None) or str(v))
def test_arithmetic_wraps_and_keeps_the_dtype(dtype, np_type):
    a, b = values(np_type, (4, 5)), values(np_type, (5,))
    ta, tb = gt.tensor(a), gt.tensor(b)
    assert ta.dtype == dtype and ta.numpy().dtype == np_type and ta.element_size() == np.dtype(np_type).itemsize
    for name, got, want in [("add", ta + tb, a + b), ("sub", ta - tb, a - b), ("mul", ta * tb, a * b),
                            ("scalar", ta + 3, a + np_type(3)), ("maximum", gt.maximum(ta, tb), np.maximum(a, b)),
                            ("where", gt.where(ta > tb, ta, tb), np.where(a > b, a, b))]:
        assert got.dtype == dtype, name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
    nonzero = np.where(b == 0, np_type(1), b)
    tz = gt.tensor(nonzero)
    np.testing.assert_array_equal((ta // tz).numpy(), a // nonzero)
    np.testing.assert_array_equal((ta % tz).numpy(), a % nonzero)
    check(ta / tz, a.astype(np.float64) / nonzero, rtol=1e-6)  # true division: float32
    assert (ta / tz).dtype == gt.float32 and (ta + 1.5).dtype == gt.float32
    np.testing.assert_array_equal((ta < tb).numpy(), a < b)
    assert ta.sum().dtype == gt.int64 and ta.sum().item() == int(a.astype(np.int64).sum())
    assert ta.max().dtype == dtype and ta.max().item() == a.max() and ta.argmax().item() == a.argmax()
    np.testing.assert_array_equal(ta.amin(1).numpy(), a.min(1))


def test_promotion_follows_pytorch():
    u, i8, i16 = gt.tensor([250], dtype=gt.uint8), gt.tensor([-100], dtype=gt.int8), gt.tensor([1000], dtype=gt.int16)
    assert (u + i8).dtype == gt.int16 and (u + i8).item() == 150
    assert (i8 + i16).dtype == gt.int16 and (u + gt.tensor([1])).dtype == gt.int64
    assert (u + gt.tensor([0.5])).dtype == gt.float32 and (u + 1).dtype == gt.uint8 and (u + 1).item() == 251
    assert (u > 200).dtype == gt.bool and (-i8).item() == 100 and abs(i8).item() == 100
    product = u.reshape(1, 1) @ u.reshape(1, 1)  # integers multiply as PyTorch's CPU kernels: 62500 wraps to 36
    assert product.dtype == gt.uint8 and product.item() == 36


def test_moves_casts_and_creation():
    a = values(np.uint8, (3, 4))
    t = gt.from_numpy(a)
    np.testing.assert_array_equal(t.T.numpy(), a.T)
    np.testing.assert_array_equal(t[1:, ::2].numpy(), a[1:, ::2])
    np.testing.assert_array_equal(gt.cat([t, t], 1).numpy(), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(t[gt.tensor([2, 0])].numpy(), a[[2, 0]])
    np.testing.assert_array_equal(t.flip(0).reshape(-1).numpy(), a[::-1].reshape(-1))
    assert t.float().dtype == gt.float32 and t.float().numpy().tolist() == a.astype(np.float32).tolist()
    assert gt.tensor([200.0, -3.0, 1.7]).byte().tolist() == [200, 253, 1]
    assert gt.tensor([-1, 300]).char().tolist() == [-1, 44] and gt.tensor([70000]).short().tolist() == [4464]
    assert gt.zeros(2, dtype=gt.uint8).tolist() == [0, 0] and gt.full((2,), 7, dtype=gt.int8).tolist() == [7, 7]
    assert gt.arange(3, dtype=gt.int16).dtype == gt.int16 and gt.ones(1, dtype="uint8").dtype == gt.uint8
    assert gt.randint(0, 256, (100,), dtype=gt.uint8).dtype == gt.uint8
    assert gt.iinfo(gt.uint8).max == 255 and gt.iinfo(gt.int8).min == -128 and gt.short is gt.int16
    assert gt.uint8 == "uint8" and gt.tensor(np.arange(3, dtype=np.uint16)).dtype == gt.int64


def test_save_and_load_keep_small_integers(tmp_path):
    a = values(np.uint8, (5,))
    gt.save({"img": gt.tensor(a), "lab": gt.tensor([1, -2], dtype=gt.int8)}, tmp_path / "x.pt")
    back = gt.load(tmp_path / "x.pt")
    assert back["img"].dtype == gt.uint8 and back["img"].tolist() == a.tolist() and back["lab"].tolist() == [1, -2]


@pytest.mark.parametrize("dtype,np_type", SMALL, ids=lambda v: getattr(v, "name", None) or str(v))
def test_indexing_and_gathering_keep_the_dtype(dtype, np_type):
    # (tensorboardyt: a uint8 dataset indexed by a permutation came back int32.)
    a = values(np_type, (4, 2, 3))
    d = gt.tensor(a)
    perm = np.array([2, 0, 3])
    idx = np.zeros((1, 2, 3), np.int64)
    for name, got, want in [("tensor index", d[gt.tensor(perm)], a[perm]), ("list index", d[[1, 2]], a[[1, 2]]),
                            ("mask", d[gt.tensor([True, False, True, True])], a[[True, False, True, True]]),
                            ("gather", gt.gather(d, 0, gt.tensor(idx)), np.take_along_axis(a, idx, 0)),
                            ("index_select", d.index_select(1, gt.tensor([1])), a[:, [1]]),
                            ("take", gt.take(d, gt.tensor([1, 5])), a.reshape(-1)[[1, 5]]),
                            ("masked_select", d.masked_select(d > 3), a[a > 3])]:
        assert got.dtype == dtype, name
        np.testing.assert_array_equal(got.numpy(), want, err_msg=name)
