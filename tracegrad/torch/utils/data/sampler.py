"""Samplers as torch's (torch/utils/data/sampler.py): they yield dataset keys (or, batched,
lists of keys). The random ones draw from a `torch.Generator` as torch's do (`randperm`,
`randint`, `multinomial`), so a seeded generator gives torch's order; without one,
`RandomSampler` seeds a fresh generator with 63 bits of the global stream and the others draw
from the global stream itself, as torch's do, so after the same `torch.manual_seed` the order
is torch's too."""

from __future__ import annotations

import itertools
from typing import Generic, TypeVar

import numpy as np

from tracegrad.torch.generator import Generator, default_generator
from tracegrad.torch.tensor import Tensor

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

_T_co = TypeVar("_T_co", covariant=True)


class Sampler(Generic[_T_co]):
    """Subclasses define `__iter__` (and `__len__` where they know it: no default, as
    torch, so that `len()` of one that does not know raises `TypeError`)."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation (repeated, then cut, for `num_samples` beyond the length), or
    with `replacement` independent draws in chunks of 32, as torch draws them."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={self.replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        # the dataset's size may change between epochs
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(default_generator._random_int64())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from generator._randint(0, n, 32).tolist()
            yield from generator._randint(0, n, self.num_samples % 32).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from generator._randperm(n).tolist()
            yield from generator._randperm(n).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """`indices` in a random order."""

    def __init__(self, indices, generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in (self.generator or default_generator)._randperm(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """`num_samples` keys drawn with probabilities proportional to `weights` (torch's
    `multinomial`, with or without replacement)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights = np.asarray(weights.numpy() if isinstance(weights, Tensor) else weights, float)
        if len(weights.shape) != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {weights.shape}"
            )
        self.weights = Tensor._wrap(weights)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        generator = self.generator or default_generator
        weights = self.weights.numpy()
        yield from generator._multinomial(weights, self.num_samples, self.replacement)

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's keys into lists of `batch_size` (the last one shorter, or
    dropped with `drop_last`)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            yield from (list(batch) for batch in zip(*[sampler_iter] * self.batch_size))
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
