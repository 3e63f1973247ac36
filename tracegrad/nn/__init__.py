"""`tracegrad.nn`: PyTorch's `Module`, `Parameter` and small layers over tracegrad tensors."""

from tracegrad.nn import functional, init
from tracegrad.nn.layers import (
    CrossEntropyLoss,
    Flatten,
    Identity,
    Linear,
    LogSoftmax,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from tracegrad.nn.module import Module, Parameter

__all__ = [
    "CrossEntropyLoss",
    "Flatten",
    "Identity",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "Module",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "functional",
    "init",
]
