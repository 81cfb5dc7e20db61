"""torch.sparse's COO tensors, stored densely.

GT has no sparse storage: `gt.sparse_coo_tensor(indices, values, size)` builds the dense tensor
those entries describe (repeated indices add up, as coalescing does), `Tensor.to_sparse()` and
`to_dense()` return the tensor itself, and `gt.sparse.mm` / `gt.spmm` are matmul. Scripts that
use sparse tensors for their algebra (a graph's normalized adjacency matrix, as in pytorch/
examples' gcn) get the same values and gradients as with PyTorch; memory and time are those of
the dense tensor (a 2708-node graph's adjacency is 29 MB of float32). `Tensor.is_sparse` is
False: the storage is dense. Functions whose result depends on which entries are specified
(torch.sparse.softmax treats the others as -inf) are not provided.
"""
import builtins
import math

import numpy as np

from . import dtypes as _dt
from . import _functions as T
from ._tensor import Tensor

__all__ = ["mm", "addmm", "sum", "sparse_coo_tensor", "spmm"]


def _as_tensor(x, dtype=None):
    if isinstance(x, Tensor):
        return x if dtype is None else T.cast(x, dtype)
    return T.tensor(np.asarray(x), dtype=dtype)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """The dense tensor whose entries at `indices` ([sparse_dims, nnz], integers) are `values`
    ([nnz] or [nnz, *dense_shape]) and zero elsewhere, as torch.sparse_coo_tensor followed by
    to_dense(); repeated indices add up. `size` defaults to the largest index + 1 along each
    sparse dim, followed by values' dense shape. The indices are read on the client (a wait when
    they are a gt.Tensor) to infer the size and check the bounds. Gradients reach `values`.
    Raises RuntimeError for indices that are not 2-D, values whose first dim is not nnz, a
    `size` that does not fit them, or an index outside `size`."""
    idx = _as_tensor(indices, _dt.int64)
    vals = _as_tensor(values, _dt.resolve(dtype) if dtype is not None else None)
    if idx.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be a 2-D [sparse_dims, nnz] tensor, got shape {list(idx.shape)}")
    sparse_dims, nnz = idx.shape
    if vals.ndim == 0 or vals.shape[0] != nnz:
        raise RuntimeError(f"sparse_coo_tensor: values must have nnz = {nnz} rows (indices' second dim), "
                           f"got shape {list(vals.shape)}")
    dense_shape = tuple(vals.shape[1:])
    host = idx.numpy() if (size is None or nnz) else None
    if size is None:
        size = tuple(int(m) + 1 for m in host.max(1)) if nnz else (0,) * sparse_dims
        size = size + dense_shape
    size = tuple(builtins.int(s) for s in size)
    if len(size) != sparse_dims + len(dense_shape) or size[sparse_dims:] != dense_shape:
        raise RuntimeError(f"sparse_coo_tensor: size {list(size)} does not fit {sparse_dims} sparse dims and values of "
                           f"shape {list(vals.shape)}")
    if nnz and ((host < 0).any() or (host >= np.asarray(size[:sparse_dims])[:, None]).any()):
        raise RuntimeError(f"sparse_coo_tensor: an index lies outside size {list(size[:sparse_dims])}")
    strides = [math.prod(size[d + 1:sparse_dims]) for d in range(sparse_dims)]
    flat = T.sum(idx * T.tensor(np.asarray(strides, dtype=np.int64).reshape(sparse_dims, 1)), 0)
    rows = T.zeros(math.prod(size[:sparse_dims]), *dense_shape, dtype=vals.dtype)
    from ._composites import index_add
    out = T.reshape(index_add(rows, 0, flat, vals), *size)
    if requires_grad:
        out.requires_grad_(True)
    return out


def mm(mat1, mat2):
    """mat1 @ mat2 (torch.sparse.mm; both dense in GT)."""
    return T.matmul(mat1, mat2)


spmm = mm


def addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0):
    """beta * input + alpha * (mat1 @ mat2) (torch.sparse.addmm)."""
    return beta * input + alpha * T.matmul(mat1, mat2)


def sum(input, dim=None, dtype=None):  # noqa: A001 (torch.sparse.sum's name)
    """The sum of all elements, or over `dim` (an int or a sequence), as torch.sparse.sum."""
    x = T.cast(input, _dt.resolve(dtype)) if dtype is not None else input
    return T.sum(x) if dim is None else T.sum(x, dim)


def _same(x, *args, **kwargs):
    return x


for _name in ("to_sparse", "to_sparse_coo", "to_dense", "coalesce"):
    setattr(Tensor, _name, _same)
Tensor.is_sparse = property(lambda self: False)
Tensor.is_coalesced = lambda self: True


def _nnz(x):
    """The number of nonzero elements (a dense tensor's specified entries); reads the values."""
    return builtins.int(T.sum(x != 0).item())


def _indices(x):
    """[ndim, nnz] int64: where x is nonzero (a coalesced COO tensor's indices, row-major order)."""
    return T.tensor(np.stack(np.nonzero(x.numpy())).astype(np.int64).reshape(x.ndim, -1))


def _values(x):
    """[nnz]: x's nonzero elements in row-major order (the gradient reaches x)."""
    return T.reshape(x, -1)[T.tensor(np.flatnonzero(x.numpy()).astype(np.int64))]


Tensor._nnz = _nnz
Tensor.indices = Tensor._indices = _indices
Tensor.values = Tensor._values = _values
