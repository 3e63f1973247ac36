"""`tracegrad.torch.optim.lr_scheduler`: PyTorch's learning-rate schedulers, as torch 2.13's
(torch/optim/lr_scheduler.py): the same rates step by step, chainable, the same state dicts and
the same warnings (a scheduler stepped before its optimizer, `get_lr()` called directly)."""

from tracegrad.torch.optim.lr_scheduler.base import LRScheduler, _LRScheduler
from tracegrad.torch.optim.lr_scheduler.combined import ChainedScheduler, SequentialLR
from tracegrad.torch.optim.lr_scheduler.cyclic import (
    CosineAnnealingWarmRestarts,
    CyclicLR,
    OneCycleLR,
)
from tracegrad.torch.optim.lr_scheduler.decay import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from tracegrad.torch.optim.lr_scheduler.plateau import ReduceLROnPlateau

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
    "_LRScheduler",
]
