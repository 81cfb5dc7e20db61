"""gt.utils: the data-loading utilities of torch.utils (gt.utils.data) and its checkpoint API
(gt.utils.checkpoint)."""
from . import checkpoint, data, hooks  # noqa: F401
