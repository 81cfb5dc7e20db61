"""torch.optim.optimizer: where PyTorch defines Optimizer (libraries import it from here)."""
from . import Optimizer  # noqa: F401

required = object()  # (PyTorch's marker for a hyper-parameter without a default)
