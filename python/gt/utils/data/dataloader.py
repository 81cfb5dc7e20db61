"""torch.utils.data.dataloader's names (the loader itself lives in gt.utils.data)."""
from . import DataLoader, default_collate, get_worker_info  # noqa: F401
