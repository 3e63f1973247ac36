"""Datasets as torch's (torch/utils/data/dataset.py): `Dataset` (indexable) and
`IterableDataset` (a stream), `TensorDataset`, `StackDataset`, `ConcatDataset`,
`ChainDataset`, `Subset` and `random_split`, which draws torch's permutation from a seeded
`torch.Generator` or, by default, from the global stream (`torch.manual_seed`)."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable
from typing import Generic, TypeVar

import numpy as np

from tracegrad.torch.generator import default_generator
from tracegrad.torch.tensor import Tensor

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map from keys (usually 0..len-1) to samples: subclasses define `__getitem__` and,
    for the default samplers, `__len__`. `a + b` concatenates."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable):
    """A stream of samples: subclasses define `__iter__`. `a + b` chains."""

    def __add__(self, other: Dataset):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample `i` is `tuple(t[i] for t in tensors)`; the tensors share their first size."""

    def __init__(self, *tensors) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(_sample(t, index) for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


def _sample(t, index):
    """`t[index]`; a plain read of the array where nothing is recorded (no grad, a slice or an
    index in range for a key), as a loader reads thousands of samples an epoch."""
    if isinstance(t, Tensor) and not t.requires_grad and t.ndim > 0:
        in_range = isinstance(index, int | np.integer) and -len(t) <= index < len(t)
        if isinstance(index, slice) or (in_range and not isinstance(index, bool)):
            return Tensor._wrap(np.asarray(t._cell.value[index]))
    return t[index]


class StackDataset(Dataset):
    """Sample `i` is the tuple (positional datasets) or dict (keyword ones) of their `i`-th."""

    def __init__(self, *args, **kwargs) -> None:
        if args:
            if kwargs:
                raise ValueError(
                    "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                    "input/output, but both types are given."
                )
            datasets = args
        elif kwargs:
            datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")
        values = list(datasets.values()) if isinstance(datasets, dict) else datasets
        self._length = len(values[0])
        if any(self._length != len(d) for d in values):
            raise ValueError("Size mismatch between datasets")
        self.datasets = datasets

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list):
        """A batch at once, through the datasets' own `__getitems__` where they have one."""
        named = isinstance(self.datasets, dict)
        items = self.datasets.items() if named else enumerate(self.datasets)
        columns = {}
        for k, dataset in items:
            if callable(getattr(dataset, "__getitems__", None)):
                column = dataset.__getitems__(indices)
                if len(column) != len(indices):
                    raise ValueError(
                        "Nested dataset's output size mismatch. Expected "
                        f"{len(indices)}, got {len(column)}"
                    )
            else:
                column = [dataset[idx] for idx in indices]
            columns[k] = column
        if named:
            return [{k: c[i] for k, c in columns.items()} for i in range(len(indices))]
        return [tuple(c[i] for c in columns.values()) for i in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """The datasets one after the other (indexable ones only)."""

    @staticmethod
    def cumsum(sequence) -> list[int]:
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """The streams one after the other (iterable datasets only)."""

    def __init__(self, datasets) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """`dataset` at `indices`: sample `i` is `dataset[indices[i]]`."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices
        if (
            type(self).__getitem__ is not Subset.__getitem__
            and type(self).__getitems__ is Subset.__getitems__
        ):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When "
                "subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. A "
                "simple implementation:\n\ndef __getitems__(self, indices):\n    return "
                "[self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=default_generator) -> list[Subset]:
    """Splits into `Subset`s of the given lengths (or fractions summing to 1, the remainder
    spread round-robin) of one random permutation, torch's for a seeded `torch.Generator`."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(math.floor(len(dataset) * frac))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.",
                    stacklevel=2,
                )
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = (generator or default_generator)._randperm(sum(lengths)).tolist()
    return [
        Subset(dataset, indices[offset - length : offset])
        for offset, length in zip(itertools.accumulate(lengths), lengths, strict=True)
    ]
