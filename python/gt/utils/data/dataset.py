"""torch.utils.data.dataset's names (the datasets live in gt.utils.data)."""
from . import ChainDataset, ConcatDataset, Dataset, StackDataset, IterableDataset, Subset, TensorDataset, random_split  # noqa: F401
