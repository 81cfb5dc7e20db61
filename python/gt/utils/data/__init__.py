"""gt.utils.data: torch.utils.data's datasets, samplers and DataLoader for GT tensors.

    from gt.utils.data import TensorDataset, DataLoader, random_split
    train, val = random_split(TensorDataset(x, y), [0.9, 0.1], generator=gt.Generator().manual_seed(0))
    for xb, yb in DataLoader(train, batch_size=64, shuffle=True, drop_last=True):
        ...

As in PyTorch: a map-style `Dataset` has `__getitem__` and `__len__`, an `IterableDataset`
has `__iter__`; the DataLoader draws indices from a sampler (`SequentialSampler`, or
`RandomSampler` with shuffle=True), groups them into batches (`BatchSampler`) and makes each
batch with `collate_fn` (`default_collate`: NumPy arrays and numbers are stacked on the client
and uploaded as one tensor, gt Tensors are stacked with gt.stack, tuples, lists and dicts are
collated field by field).

Where GT differs:
- A batch of a `TensorDataset` (or of a `Subset` of one) under the default collate is one
  indexing op per tensor (`t[indices]`, a slice when the indices are consecutive), not one op
  per sample and a stack: the tensors stay on the workers and only the indices travel.
- Shuffling happens on the client (NumPy's PCG64 seeded from `generator`, or without one from
  the stream gt.manual_seed starts), so the order differs from PyTorch's for the same seed.
- `num_workers`, `pin_memory`, `timeout`, `prefetch_factor`, `persistent_workers` and
  `worker_init_fn` are accepted and ignored: batches are made in the calling process (its ops
  are asynchronous already; a forked worker process would need its own GT session).
"""
import bisect
import builtins
import collections.abc
import copy
import math
import numbers

import numpy as np

from ... import _functions as _T
from ... import _tensor
from ..._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "StackDataset",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "random_split", "get_worker_info"]  # (collate's names: torch.utils.data._utils.collate)


def _rng(generator):
    """A NumPy generator for one draw: from `generator` (a gt.Generator), else from the seed
    stream of gt.manual_seed."""
    seed = generator._next_seed() if generator is not None else _tensor._next_seed()
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- datasets

class Dataset:
    """A map-style dataset: `dataset[i]` is sample i, `len(dataset)` their number. Subclasses
    define both; `a + b` concatenates two datasets."""
    __class_getitem__ = classmethod(lambda cls, item: cls)  # (Sampler[int], Dataset[T]: typing.Generic's use)

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclasses define `__iter__`. A DataLoader batches what it
    yields, in order (no sampler, no shuffle)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples are the i-th rows of `tensors` (gt Tensors or NumPy arrays, all with the same
    first dimension): `dataset[i] == tuple(t[i] for t in tensors)`. Raises ValueError when
    their first dimensions differ."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = len(tensors[0])
        if any(len(t) != n for t in tensors):
            raise ValueError(f"Size mismatch between tensors: first dimensions {[len(t) for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of `datasets`, one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))

    def __len__(self):
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for a dataset of {len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"index {index} is out of range for a dataset of {len(self)}")
        start = int(self.cumulative_sizes[which - 1]) if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """The samples of the IterableDatasets `datasets`, one after another (chained as they are
    iterated, as torch.utils.data.ChainDataset); len() is the sum of theirs."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class StackDataset(Dataset):
    """Sample i of several datasets of one length together: StackDataset(a, b)[i] is
    (a[i], b[i]) and StackDataset(image=a, text=b)[i] is {"image": a[i], "text": b[i]}, as
    torch.utils.data.StackDataset. Raises ValueError for both kinds of arguments at once, or
    datasets of different lengths."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/"
                             "output, but both types are given.")
        self.datasets = args if args else kwargs
        sizes = {len(d) for d in (args or kwargs.values())}
        if len(sizes) > 1:
            raise ValueError("Size mismatch between datasets")
        self._length = sizes.pop() if sizes else 0

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


def random_split(dataset, lengths, generator=None):
    """`dataset` split into non-overlapping Subsets of `lengths` (counts that add up to its
    length, or fractions that add up to 1: the remainder of their floors goes one by one to the
    first subsets, as PyTorch), from a random permutation. Raises ValueError otherwise."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(builtins.sum(lengths), 1) and builtins.sum(lengths) <= 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - builtins.sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if builtins.sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _rng(generator).permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


# ---------------------------------------------------------------- samplers

class Sampler:
    """Yields indices of a map-style dataset."""
    __class_getitem__ = classmethod(lambda cls, item: cls)  # (Sampler[int], Dataset[T]: typing.Generic's use)

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new random permutation of the indices each epoch (with replacement=True, num_samples
    independent draws), from `generator` or gt.manual_seed's stream."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        """Draws as it goes (1024 indices, or one permutation, at a time), so num_samples may be
        practically endless (minGPT's trainer asks for 1e10)."""
        rng, n, left = _rng(self.generator), len(self.data_source), self.num_samples
        while left > 0:
            chunk = rng.integers(0, n, builtins.min(left, 1024)) if self.replacement else rng.permutation(n)[:left]
            yield from chunk.tolist()
            left -= len(chunk)

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = list(indices)
        self.generator = generator

    def __iter__(self):
        return iter([self.indices[i] for i in _rng(self.generator).permutation(len(self.indices))])

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of `batch_size` indices from `sampler`; the last one shorter unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ---------------------------------------------------------------- collation

def collate_tensor_fn(batch, *, collate_fn_map=None):
    """gt Tensors of one shape [*S] as one [len(batch), *S] tensor (gt.stack; a subclass's
    __torch_function__ sees the call)."""
    import gt
    return gt.stack(list(batch))


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays of one shape stacked on the client and uploaded as one tensor, their dtype
    kept. Raises RuntimeError for arrays of different shapes and TypeError for arrays of
    strings or objects."""
    first = batch[0]
    if first.dtype.kind in "SUaO":
        raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                        f"found {first.dtype}")
    if any(b.shape != first.shape for b in batch):
        raise RuntimeError(f"stack expects each array to be equal size, got {[b.shape for b in batch]}")
    return _T.from_numpy(np.ascontiguousarray(np.stack(batch)))


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars as a [len(batch)] tensor of their dtype."""
    return _T.from_numpy(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats as a float64 tensor."""
    return _T.tensor(list(batch), dtype="float64")


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints as an int64 tensor (bools, a subclass of int, as a bool tensor)."""
    if all(isinstance(b, bool) for b in batch):
        return _T.tensor(list(batch))
    return _T.tensor(list(batch), dtype="int64")


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings (and bytes) stay as they came: a list at the top, a tuple within tuples and lists
    (zip's), as PyTorch's."""
    return batch


# type -> collate function, as torch.utils.data._utils.collate.default_collate_fn_map: add a
# type to make `default_collate` batch it your way (MONAI registers its MetaTensor here).
default_collate_fn_map = {Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
                          (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
                          float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
                          bytes: collate_str_fn}


def collate(batch, *, collate_fn_map=None):
    """A list of samples as one batch, by the functions of `collate_fn_map` (a dict from a type,
    or a tuple of types, to `fn(batch, *, collate_fn_map)`): the first sample's exact type
    first, then the first entry it is an instance of. Mappings, namedtuples and other
    sequences without an entry are collated field by field (a tuple of fields gives a list of
    batches, as PyTorch's: batch[0] = batch[0].cuda() works). As
    torch.utils.data._utils.collate.collate. Raises TypeError for a sample of no known type
    and RuntimeError for sequences of different lengths."""
    first = batch[0]
    kind = type(first)
    if collate_fn_map is not None:
        if kind in collate_fn_map:
            return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)
        for key, fn in collate_fn_map.items():
            if isinstance(first, key):
                return fn(batch, collate_fn_map=collate_fn_map)
    if first is None:  # (PyTorch raises TypeError; GT keeps the Nones, as it always has)
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        fields = {k: collate([b[k] for b in batch], collate_fn_map=collate_fn_map) for k in first}
        if isinstance(first, collections.abc.MutableMapping):
            out = copy.copy(first)  # (keeps an OrderedDict, a BatchEncoding, ...)
            out.update(fields)
            return out
        try:
            return kind(fields)
        except TypeError:
            return fields
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
        return kind(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(first, tuple):
            return fields  # (a list for tuples too, as PyTorch's)
        try:
            return kind(fields)
        except TypeError:
            return fields
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {kind}")


def default_collate(batch):
    """A list of samples as one batch (PyTorch's default_collate): `collate` with
    `default_collate_fn_map`. gt Tensors are stacked (gt.stack), NumPy arrays stacked on the
    client and uploaded as one tensor (their dtype kept), Python floats give a float64 tensor,
    ints int64 and bools bool, strings stay a list (a tuple within a sample's tuple: zip's),
    Nones a list, and mappings, namedtuples and sequences are collated field by field. Raises TypeError for anything else and RuntimeError
    for samples of different sizes."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def _tensor_rows(dataset):
    """(tensors, indices map or None) when `dataset` is a TensorDataset or a Subset of one:
    its batches are then one indexing op per tensor. Else None."""
    index = None
    while isinstance(dataset, Subset):  # the outermost first: map the loader's indices through each
        index = dataset.indices if index is None else [dataset.indices[i] for i in index]
        dataset = dataset.dataset
    if isinstance(dataset, TensorDataset) and all(isinstance(t, (Tensor, np.ndarray)) for t in dataset.tensors):
        return dataset.tensors, index
    return None


def _rows(tensors, indices):
    """t[indices] for each t of `tensors`: slices when the indices are consecutive, else one
    upload of the indices (the sampler's, known to be in range) and an index_select per tensor."""
    first = indices[0]
    if indices == list(range(first, first + len(indices))):
        return [t[first:first + len(indices)] for t in tensors]
    index = None
    out = []
    for t in tensors:
        if isinstance(t, np.ndarray):
            out.append(t[indices])
            continue
        if index is None:
            index = _T.tensor(indices, dtype="int64")
        out.append(_T.index_select(t, 0, index))
    return out


def get_worker_info():
    """None: GT's DataLoader makes its batches in the calling process."""
    return None


# ---------------------------------------------------------------- the loader

class _BaseDataLoaderIter:
    """torch.utils.data.dataloader._BaseDataLoaderIter: the base of a loader's iterators."""


class _DatasetKind:
    """torch.utils.data.dataloader._DatasetKind: a map-style or an iterable dataset."""
    Map, Iterable = 0, 1


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """iter(loader), as PyTorch's (its name, len(), next()): batches are made in this process
    whatever num_workers says (see the module's docstring). Made as PyTorch's with the loader
    alone (fastai drives it so), it reads the loader's attributes as PyTorch's iterator does:
    `_index_sampler`, `_auto_collation`, `_dataset_kind`, `dataset`, `collate_fn`."""

    def __init__(self, loader, samples=None):
        if samples is None:
            samples = self._from_attributes(loader)
        self._loader, self._samples = loader, samples

    @staticmethod
    def _from_attributes(loader):
        dataset, collate = loader.dataset, loader.collate_fn
        auto = getattr(loader, "_auto_collation", True)
        if getattr(loader, "_dataset_kind", _DatasetKind.Map) == _DatasetKind.Iterable:
            items = iter(dataset)
            if not auto:
                return (collate(x) for x in items)
            return (collate([next(items) for _ in batch]) for batch in loader._index_sampler)
        return (collate([dataset[i] for i in index]) if auto else collate(dataset[index])
                for index in loader._index_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._samples)

    def __len__(self):
        return len(self._loader)


class DataLoader:
    """Batches of `dataset` (torch.utils.data.DataLoader's arguments): `batch_size` samples
    each (None: samples one by one, uncollated), in order or, with shuffle=True, in a new random
    order each epoch (from `generator`, a gt.Generator, else gt.manual_seed's stream); the last
    short batch dropped with drop_last=True; `sampler` or `batch_sampler` to choose the indices
    yourself; `collate_fn` to make a batch from a list of samples (default_collate). Raises
    ValueError for arguments that contradict each other, as PyTorch."""
    __class_getitem__ = classmethod(lambda cls, item: cls)  # (Sampler[int], Dataset[T]: typing.Generic's use)

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        self.dataset, self.num_workers, self.pin_memory, self.timeout = dataset, num_workers, pin_memory, timeout
        self.generator = generator
        # Kept as PyTorch's attributes (libraries rebuild a loader from them); the batches are
        # made in this process whatever they say (see the module's docstring).
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler and batch_sampler options")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self._auto_collate = collate_fn is None
        self.collate_fn = default_collate if collate_fn is None else collate_fn

    def __iter__(self):
        return _SingleProcessDataLoaderIter(self, self._samples())

    def _samples(self):
        if isinstance(self.dataset, IterableDataset):
            return self._iterable()
        if self.batch_sampler is None:  # batch_size=None: sample by sample, as they are
            return (self.dataset[i] for i in self.sampler)
        return self._batches()

    def _batches(self):
        rows = _tensor_rows(self.dataset) if self._auto_collate else None
        for indices in self.batch_sampler:
            indices = list(indices)
            if rows is not None:
                tensors, index = rows
                picked = indices if index is None else [index[i] for i in indices]
                n = len(tensors[0])
                if builtins.min(picked) < -n or builtins.max(picked) >= n:
                    bad = next(i for i in picked if not -n <= i < n)
                    raise IndexError(f"index {bad} is out of range for a dataset of {n} samples")
                picked = [i + n if i < 0 else i for i in picked]
                yield [_as_tensor(r) for r in _rows(tensors, picked)]  # (default_collate's list)
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def _iterable(self):
        if self.batch_size is None:
            yield from self.dataset
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError when the stream has no length, as PyTorch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)


def _as_tensor(rows):
    """A batch of TensorDataset rows as a gt Tensor (a NumPy array's rows are uploaded)."""
    return _T.from_numpy(np.ascontiguousarray(rows)) if isinstance(rows, np.ndarray) else rows


from .distributed import DistributedSampler  # noqa: E402 (torch.utils.data.DistributedSampler)
