"""torch.nn.parameter: Parameter, Buffer and the lazy modules' UninitializedParameter /
UninitializedBuffer (with UninitializedTensorMixin, their common base's name in PyTorch)."""
import abc

from .modules import Buffer, Parameter, UninitializedBuffer, UninitializedParameter


class UninitializedTensorMixin(abc.ABC):
    """PyTorch's base of UninitializedParameter and UninitializedBuffer: here a name for
    isinstance checks, both classes registered under it."""


UninitializedTensorMixin.register(UninitializedParameter)
UninitializedTensorMixin.register(UninitializedBuffer)

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin"]
