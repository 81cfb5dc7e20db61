"""The original GT's import paths, kept so that its scripts run unchanged:

    from gt.client import nn             # Module, Linear, mse_loss, cross_entropy_loss, SGD ...
    from gt.client.tensor import randn, zeros, from_numpy

Everything here is the same object as in `gt` / `gt.nn`; where the original and PyTorch disagree,
GT follows PyTorch (docs/api.md, "Scripts written for the original GT").
"""
from .. import Tensor, tensor, from_numpy, randn, zeros, ones  # noqa: F401
from . import nn, tensor as tensor_module  # noqa: F401
