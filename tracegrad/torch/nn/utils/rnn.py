"""PyTorch's packed sequences: `PackedSequence` and the functions that pack, pad and unpack.

A packed sequence stores the time steps of a batch of variable-length sequences one after
another, each step holding only the sequences still running (`batch_sizes[t]` rows, sorted by
length so those are the first rows). Packing and padding are each one gather (`index_select`)
through an index computed from the lengths in NumPy, so gradients flow back to the padded or
packed tensor through that one node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices), as PyTorch's: `data` is
    (sum(batch_sizes), *), `batch_sizes` an int64 tensor, `sorted_indices` the order of the
    batch by decreasing length (None when the input was sorted), `unsorted_indices` its
    inverse. Create it with `pack_padded_sequence` or `pack_sequence`."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, list | tuple) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def double(self) -> PackedSequence:
        return self.to(dtype=np.dtype(np.float64))

    def float(self) -> PackedSequence:  # noqa: A003 - PyTorch's name
        return self.to(dtype=np.dtype(np.float32))

    def cpu(self) -> PackedSequence:
        return self

    @property
    def is_cuda(self) -> bool:
        return False


def invert_permutation(permutation):
    """The inverse permutation (None stays None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation.numpy())
    inverse = np.empty_like(p)
    inverse[p] = np.arange(p.size, dtype=p.dtype)
    return Tensor(inverse)


def _lengths(lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        return np.asarray(lengths.numpy()).astype(np.int64)
    return np.asarray(lengths, dtype=np.int64)


def _packed_rows(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(batch_sizes, for each packed row its (t * B + b) row in the time-major padded input)."""
    batch = lengths.size
    batch_sizes = np.array([(lengths > t).sum() for t in range(int(lengths.max()))], np.int64)
    rows = np.concatenate([t * batch + np.arange(n) for t, n in enumerate(batch_sizes)])
    return batch_sizes, rows.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True):
    """Packs a padded batch (T, B, *) (or (B, T, *)) of sequences of the given lengths.
    With `enforce_sorted` the lengths must decrease; otherwise the batch is sorted first and
    the order is kept in `sorted_indices`."""
    lengths = _lengths(lengths)
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        sorted_indices = Tensor(order.astype(np.int64))
        input = ops.index_select(input, 0 if batch_first else 1, sorted_indices)
    x = ops.transpose(input, 0, 1) if batch_first else input
    steps, batch = x.shape[0], x.shape[1]
    if lengths.ndim != 1 or lengths.size != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} "
            f"(batch_size={batch})"
        )
    if enforce_sorted and np.any(np.diff(lengths) > 0):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability."
        )
    if lengths.size and lengths.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' "
            "that is <= 0"
        )
    batch_sizes, rows = _packed_rows(lengths)
    flat = ops.reshape(x, (steps * batch, *x.shape[2:]))
    data = ops.index_select(flat, 0, Tensor(rows))
    return PackedSequence(data, Tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(
    sequence, batch_first: bool = False, padding_value: float = 0.0, total_length=None
):
    """The inverse of `pack_padded_sequence`: (padded (T, B, *) or (B, T, *), lengths)."""
    batch_sizes = np.asarray(sequence.batch_sizes.numpy()).astype(np.int64)
    max_seq_length = batch_sizes.size
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_seq_length}"
            )
        max_seq_length = total_length
    data = sequence.data
    batch = int(batch_sizes[0])
    lengths = np.array([(batch_sizes > b).sum() for b in range(batch)], np.int64)
    # every padded slot (t, b) reads a packed row, or the padding row appended after them
    n = data.shape[0]
    source = np.full(max_seq_length * batch, n, np.int64)
    start = 0
    for t, size in enumerate(batch_sizes):
        source[t * batch : t * batch + size] = np.arange(start, start + size)
        start += size
    pad = ops.full((1, *data.shape[1:]), padding_value, dtype=data.dtype)
    padded = ops.index_select(ops.cat([data, pad], 0), 0, Tensor(source))
    padded = ops.reshape(padded, (max_seq_length, batch, *data.shape[1:]))
    if batch_first:
        padded = ops.transpose(padded, 0, 1)
    lengths_t = Tensor(lengths)
    if sequence.unsorted_indices is not None:
        order = np.asarray(sequence.unsorted_indices.numpy())
        padded = ops.index_select(padded, 0 if batch_first else 1, sequence.unsorted_indices)
        lengths_t = Tensor(lengths[order])
    return padded, lengths_t


def pad_sequence(
    sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"
):
    """Stacks sequences (L_i, *) into (max L, B, *) (or (B, max L, *)), padding each at
    the `padding_side` with `padding_value`."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(
            "pad_sequence: Expected iterable for input sequences, but got arg of type: "
            f"{type(sequences)}"
        )
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = ops.full((missing, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = ops.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return ops.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The sequences of a padded batch, each cut to its length."""
    x = padded_sequences if batch_first else ops.transpose(padded_sequences, 0, 1)
    return [x[b, : int(n)] for b, n in enumerate(_lengths(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True):
    """Packs a list of sequences (L_i, *) (by decreasing length unless not enforced)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences) -> list:
    """The list of sequences a packed sequence holds (in the original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
