"""torch.nn.parameter: Parameter and the lazy modules' UninitializedParameter / UninitializedBuffer."""
from .modules import Parameter, UninitializedParameter, UninitializedBuffer

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer"]
