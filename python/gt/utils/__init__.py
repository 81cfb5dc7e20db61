"""gt.utils: the data-loading utilities of torch.utils (gt.utils.data)."""
from . import data  # noqa: F401
