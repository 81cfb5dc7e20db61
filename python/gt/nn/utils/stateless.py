"""torch.nn.utils.stateless: functional_call, the same function as gt.func.functional_call."""
from ...func import functional_call

__all__ = ["functional_call"]
