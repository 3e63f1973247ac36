"""`tracegrad.torch.utils`: PyTorch's `torch.utils` where training loops need it, `data`
(datasets, samplers and `DataLoader`)."""

from tracegrad.torch.utils import data

__all__ = ["data"]
