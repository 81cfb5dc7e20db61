"""torch.utils.data.sampler's names (the samplers live in gt.utils.data)."""
from . import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler  # noqa: F401
