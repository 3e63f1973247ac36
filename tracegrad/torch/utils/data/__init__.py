"""`tracegrad.torch.utils.data`: PyTorch's data loading (`torch.utils.data`): datasets,
samplers, default collation and a main-process `DataLoader`, giving torch's batches (and,
with a seeded `torch.Generator`, torch's shuffles)."""

from tracegrad.torch.utils.data._collate import default_collate, default_convert
from tracegrad.torch.utils.data.dataloader import DataLoader, _DatasetKind, get_worker_info
from tracegrad.torch.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tracegrad.torch.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "_DatasetKind",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
