"""torch.utils.tensorboard.writer: SummaryWriter (gt.utils.tensorboard)."""
from . import SummaryWriter  # noqa: F401

__all__ = ["SummaryWriter"]
