"""GT: eager, PyTorch-like tensors whose compute runs on a GT dispatcher's workers.

    import gt
    a = gt.tensor([1.0, 2.0, 3.0])
    print((a * 2 + 1).numpy())

The first op starts a local dispatcher and worker (see gt.gpu_workers); gt.connect("host:port")
uses a running one instead.
"""
from . import _C
from ._runtime import connect, gpu_workers
from .dtypes import dtype, float32, float64, int32, int64, bool, float, double, long
from ._tensor import (Tensor, tensor, from_numpy, zeros, ones, full, zeros_like, ones_like, randn, manual_seed,
                     add, sub, mul, div, pow, maximum, where, neg, exp, log, sqrt, relu, sigmoid, tanh, cast,
                     matmul, transpose, permute, reshape, broadcast_to, sum, mean, max, logsumexp, log_softmax,
                     softmax, one_hot)
from .autograd import no_grad, enable_grad, is_grad_enabled
from . import nn, optim, debug

RemoteError = _C.RemoteError


def synchronize():
    """Waits until every op issued so far has run on the workers."""
    from ._runtime import client
    client().sync()
