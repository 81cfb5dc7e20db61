"""torch.utils.data.distributed: DistributedSampler, for scripts written for one process per
device. GT runs one process for all its workers (gt.distributed), so by default a script here is
rank 0 of 1 and the sampler yields every index; with num_replicas and rank given it yields that
replica's share, as PyTorch's does."""
import math

import numpy as np

from . import Sampler
from ... import distributed as _dist


class DistributedSampler(Sampler):
    """The indices of `dataset` that replica `rank` of `num_replicas` reads this epoch.

    With shuffle=True the indices are permuted by a NumPy PCG64 stream seeded with
    seed + epoch (call set_epoch(epoch) each epoch for a new order, as in PyTorch; the order
    differs from PyTorch's, which draws from torch.randperm). The list is padded by repeating
    its start (drop_last=False) or cut (drop_last=True) to a multiple of num_replicas, then
    replica r takes every num_replicas-th index from r. num_replicas / rank default to
    gt.distributed's world size and rank (1 and 0). Raises ValueError for a rank outside
    [0, num_replicas)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        num_replicas = _dist.get_world_size() if num_replicas is None else num_replicas
        rank = _dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        indices = (np.random.Generator(np.random.PCG64(self.seed + self.epoch)).permutation(n) if self.shuffle
                   else np.arange(n)).tolist()
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose order __iter__ gives (with shuffle=True)."""
        self.epoch = epoch
