"""gt.client.tensor: the original GT's tensor constructors (the same functions as gt.*)."""
from .._functions import Tensor, tensor, from_numpy, randn, rand, zeros, ones, full, arange  # noqa: F401
