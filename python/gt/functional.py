"""torch.functional: the module PyTorch's top-level tensor functions come from, which scripts
import as `import torch.functional as F` or `from torch.functional import F` (it imports
torch.nn.functional as F). Here F is gt.nn.functional, and the functions PyTorch defines in
this module are gt's."""
from .nn import functional as F  # noqa: F401
from ._functions import broadcast_tensors, split  # noqa: F401
from . import (atleast_1d, atleast_2d, atleast_3d, block_diag, cartesian_prod, cdist, chain_matmul,  # noqa: F401
               einsum, meshgrid, norm, tensordot, unique)

__all__ = ["F", "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_tensors", "cartesian_prod",
           "cdist", "chain_matmul", "einsum", "meshgrid", "norm", "split", "tensordot", "unique"]
