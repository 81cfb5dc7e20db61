"""gt.nn.utils.rnn: variable-length sequences in one batch (torch.nn.utils.rnn).

pad_sequence / unpad_sequence pad and unpad a list of sequences; pack_padded_sequence,
pad_packed_sequence, pack_sequence and unpack_sequence convert to and from PackedSequence, which
GT's RNN, LSTM and GRU take as PyTorch's do: each sequence's steps past its length are skipped
(its hidden state stays the last real step's, its outputs are left out of the packed output,
and the reverse direction starts at its own last step).

A PackedSequence holds `data` (the time-major concatenation of the sequences' real steps, sorted
by decreasing length: sum(lengths) x *), `batch_sizes` (how many sequences each time step has;
an int64 tensor), and `sorted_indices` / `unsorted_indices` (the sort, or None when the input was
sorted already). The lengths are read on the client (a sync when they are a GT tensor).
"""
from collections import namedtuple

import numpy as np

from ... import _functions as T
from ... import dtypes as _dt


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """See the module's docstring. Also `.to(...)` (of its data), as PyTorch's."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = T.tensor(np.argsort(np.asarray(sorted_indices.tolist())))
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        return self._replace(data=self.data.to(*args, **kwargs))

    # its data's dtype and device conversions, as PyTorch's PackedSequence methods
    def cpu(self, *args, **kwargs): return self._replace(data=self.data.cpu(*args, **kwargs))
    def cuda(self, *args, **kwargs): return self._replace(data=self.data.cuda(*args, **kwargs))
    def double(self): return self._replace(data=self.data.double())
    def float(self): return self._replace(data=self.data.float())
    def half(self): return self._replace(data=self.data.half())
    def long(self): return self._replace(data=self.data.long())
    def int(self): return self._replace(data=self.data.int())
    def short(self): return self._replace(data=self.data.short())
    def char(self): return self._replace(data=self.data.char())
    def byte(self): return self._replace(data=self.data.byte())
    def is_pinned(self): return False

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def _sizes(self):
        return [int(b) for b in self.batch_sizes.tolist()]

    def _order(self):
        """The original batch index of each sorted position."""
        if self.sorted_indices is None:
            return list(range(self._sizes()[0]))
        return [int(i) for i in self.sorted_indices.tolist()]


def _lengths(lengths):
    values = lengths.tolist() if isinstance(lengths, T.Tensor) else np.asarray(lengths).tolist()
    values = [int(v) for v in values]
    if any(v <= 0 for v in values):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    return values


def _pack(x, lengths, order):
    """Packs time-major x (T, B, *) whose batch element order[i] has lengths[order[i]] steps,
    sorted so (lengths decreasing along `order`)."""
    B = x.shape[1]
    sorted_lengths = [lengths[i] for i in order]
    steps = sorted_lengths[0]
    if steps > x.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length of {steps} is longer than the {x.shape[0]} steps given")
    batch_sizes = [sum(1 for n in sorted_lengths if n > t) for t in range(steps)]
    rows = [t * B + order[i] for t in range(steps) for i in range(batch_sizes[t])]
    flat = T.reshape(x, x.shape[0] * B, *x.shape[2:])
    data = T.index_select(flat, 0, T.tensor(rows))
    return data, T.tensor(batch_sizes)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """A PackedSequence of the padded batch `input` ((T, B, *), or (B, T, *) with batch_first)
    whose sequence b has lengths[b] steps (a list, an array or an int64 tensor). With
    enforce_sorted the lengths must be decreasing (RuntimeError otherwise); without, they are
    sorted first and the PackedSequence remembers how."""
    lengths = _lengths(lengths)
    x = T.transpose(input, 0, 1) if batch_first else input
    if len(lengths) != x.shape[1]:
        raise ValueError(f"pack_padded_sequence: {len(lengths)} lengths for a batch of {x.shape[1]}")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        order, sorted_indices = list(range(len(lengths))), None
    else:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])  # stable: ties keep their order
        sorted_indices = T.tensor(order)
    data, batch_sizes = _pack(x, lengths, order)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _packed_lengths(sizes):
    """Each sorted position's length, from the batch sizes."""
    return [sum(1 for b in sizes if b > i) for i in range(sizes[0])]


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded, lengths): the inverse of pack_padded_sequence, in the original batch order;
    padded is (T, B, *) (or (B, T, *)) with T the longest length or `total_length` (ValueError
    when shorter), the missing steps `padding_value`; lengths an int64 tensor."""
    padded, lengths = _unpack(sequence, sequence._sizes(), sequence._order(), padding_value, total_length)
    return (T.transpose(padded, 0, 1) if batch_first else padded), T.tensor(lengths, dtype=_dt.int64)


def _unpack(sequence, sizes, order, padding_value=0.0, total_length=None):
    """pad_packed_sequence's time-major padded tensor and its lengths as a list, from the batch
    sizes and the sort (lists the caller has read once)."""
    B, steps = sizes[0], len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence ({steps}), "
                             f"got {total_length}")
        steps = total_length
    data = sequence.data
    rest = tuple(data.shape[1:])
    padded_row = T.full((1,) + rest, padding_value, dtype=data.dtype)
    source = T.cat([data, padded_row], 0)
    n = data.shape[0]
    at = {}  # (t, original b) -> row of data
    row = 0
    for t, size in enumerate(sizes):
        for i in range(size):
            at[(t, order[i])] = row
            row += 1
    rows = [at.get((t, b), n) for t in range(steps) for b in range(B)]
    padded = T.reshape(T.index_select(source, 0, T.tensor(rows)), steps, B, *rest)
    sorted_lengths = _packed_lengths(sizes)
    lengths = [0] * B
    for i, b in enumerate(order):
        lengths[b] = sorted_lengths[i]
    return padded, lengths


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence of pad_sequence(sequences) with their lengths."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences pack_sequence packed."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths.tolist(), batch_first=True)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shapes (L_i, *) into (L_max, B, *) (or (B, L_max, *) with batch_first),
    filling the missing steps with `padding_value`, after each sequence ("right") or before it
    ("left"), as torch.nn.utils.rnn.pad_sequence. Raises ValueError for an empty list or
    sequences whose trailing shapes differ."""
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: expected a non-empty list of tensors")
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    rest = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != rest:
            raise ValueError(f"pad_sequence: every sequence must have trailing shape {rest}, got {tuple(s.shape[1:])}")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            pad = T.full((missing,) + rest, padding_value, dtype=s.dtype)
            s = T.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return T.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences pad_sequence padded (right padding): sequence i is its first
    lengths[i] steps."""
    x = padded_sequences if batch_first else T.transpose(padded_sequences, 0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lengths)]


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None for None), as
    torch.nn.utils.rnn.invert_permutation."""
    if permutation is None:
        return None
    import gt
    return gt.empty_like(permutation).scatter_(0, permutation, gt.arange(permutation.numel(), dtype=permutation.dtype))
