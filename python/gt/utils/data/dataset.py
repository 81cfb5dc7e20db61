"""torch.utils.data.dataset's names (the datasets live in gt.utils.data)."""
from . import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split  # noqa: F401
