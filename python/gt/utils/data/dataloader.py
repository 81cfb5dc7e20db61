"""torch.utils.data.dataloader's names (the loader itself lives in gt.utils.data)."""
from . import DataLoader, default_collate, get_worker_info, _BaseDataLoaderIter, _SingleProcessDataLoaderIter, _DatasetKind  # noqa: F401,E501

# PyTorch's iterator when num_workers > 0; GT's loader makes batches in this process anyway
_MultiProcessingDataLoaderIter = _SingleProcessDataLoaderIter
