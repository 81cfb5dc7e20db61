"""gt.nn.utils.rnn: padding variable-length sequences into one batch (torch.nn.utils.rnn).

pad_sequence and unpad_sequence only. PyTorch's PackedSequence (pack_padded_sequence,
pad_packed_sequence), which its RNNs read without the padded steps, is not in GT: run the
padded batch through the RNN and mask the padded positions (or take each sequence's last real
output with its length) instead.
"""
from ... import _functions as T


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
