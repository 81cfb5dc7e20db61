"""torch.sparse's COO tensors, stored densely (gt.sparse): the entries, repeated indices adding
up, gradients to the values, sparse matmul, and the errors for malformed indices."""
import numpy as np
import pytest

import gt
from conftest import check


def test_coo_tensor_is_the_dense_tensor_of_its_entries():
    idx = np.array([[0, 1, 1, 2], [2, 0, 0, 1]])
    a = gt.sparse_coo_tensor(idx, gt.tensor([3.0, 4.0, 5.0, 6.0]), (3, 3))
    check(a, [[0, 0, 3], [9, 0, 0], [0, 6, 0]])  # (1, 0) twice: 4 + 5, as coalescing adds
    assert a.dtype == gt.float32 and not a.is_sparse
    ints = gt.sparse_coo_tensor(idx.tolist(), gt.ones(4), (3, 3), dtype=gt.int64)
    assert ints.dtype == gt.int64
    check(gt.eye(3) + ints, np.eye(3) + [[0, 0, 1], [2, 0, 0], [0, 1, 0]])
    inferred = gt.sparse_coo_tensor([[0, 4]], [1.0, 2.0])  # size: the largest index + 1
    assert inferred.shape == (5,)
    hybrid = gt.sparse_coo_tensor([[0, 2]], gt.ones(2, 3), (4, 3))  # values with a dense dim
    check(hybrid, [[1, 1, 1], [0, 0, 0], [1, 1, 1], [0, 0, 0]])
    assert a.to_sparse() is a and a.to_dense() is a and a.coalesce() is a and a.is_coalesced()
    check(a.indices(), [[0, 1, 2], [2, 0, 1]])
    check(a.values(), [3, 9, 6])
    assert a._nnz() == 3


def test_gradients_reach_the_values_and_sparse_matmul():
    v = gt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = gt.sparse_coo_tensor([[0, 1, 1], [2, 0, 0]], v, (2, 3))
    w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    (a * gt.tensor(w)).sum().backward()
    check(v.grad, [3.0, 4.0, 4.0])
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    expect = a.detach().numpy() @ x
    check(gt.spmm(a, gt.tensor(x)), expect)
    check(gt.sparse.mm(a, gt.tensor(x)), expect)
    check(gt.sparse.addmm(gt.ones(2, 2), a, gt.tensor(x), beta=2.0), 2 + expect)
    check(gt.sparse.sum(a, 1), a.detach().numpy().sum(1))
    assert gt.sparse_coo_tensor([[0]], [1.0], (2,), requires_grad=True).requires_grad


def test_malformed_coo_tensors_raise():
    with pytest.raises(RuntimeError, match="2-D"):
        gt.sparse_coo_tensor([0, 1], [1.0, 2.0], (2,))
    with pytest.raises(RuntimeError, match="nnz = 2"):
        gt.sparse_coo_tensor([[0, 1]], [1.0, 2.0, 3.0], (2,))
    with pytest.raises(RuntimeError, match="outside size"):
        gt.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))
    with pytest.raises(RuntimeError, match="does not fit"):
        gt.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3, 3))


def test_creation_functions_take_size_as_a_keyword():
    assert gt.empty(size=(2, 3)).shape == (2, 3)
    assert gt.zeros(size=[4]).shape == (4,)
    assert gt.randn(size=(2, 2), dtype=gt.float64).dtype == gt.float64
    with pytest.raises(TypeError, match="both"):
        gt.ones(2, size=(2,))
    assert gt.randint(0, 5, size=(3,)).shape == (3,)
