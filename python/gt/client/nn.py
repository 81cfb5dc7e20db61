"""gt.client.nn: the original GT's nn module: gt.nn plus its loss and activation names.

    nn.mse_loss, nn.binary_cross_entropy, nn.cross_entropy_loss (logits, class indices),
    nn.relu, nn.sigmoid, nn.tanh, nn.SGD

A model of the original may assign `self._parameters = [...]` (a list); GT's Module accepts it.
"""
from ..nn import *  # noqa: F401,F403
from ..nn import Module, Parameter, Linear, functional as _F  # noqa: F401
from ..optim import SGD, Adam  # noqa: F401

mse_loss = _F.mse_loss
binary_cross_entropy = _F.binary_cross_entropy
cross_entropy_loss = _F.cross_entropy
cross_entropy = _F.cross_entropy
relu = _F.relu
sigmoid = _F.sigmoid
tanh = _F.tanh
