"""PyTorch's `torch.autograd` for tracegrad tensors: `backward`, `grad`, `Function`, grad modes.

A namespace: the parts live in `tracegrad.torch`'s modules (`engine`, `function`, `graph`,
`grad_mode`, `gradcheck`), which are also reachable here under PyTorch's module names
(`torch.autograd.function.once_differentiable`, `torch.autograd.graph`).
"""

from tracegrad.torch import function, grad_mode, graph  # noqa: F401 - PyTorch's module names
from tracegrad.torch.engine import backward, grad
from tracegrad.torch.function import Function, FunctionCtx, once_differentiable
from tracegrad.torch.grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from tracegrad.torch.gradcheck import GradcheckError, gradcheck
from tracegrad.torch.graph import AccumulateGrad, GradFn
from tracegrad.torch.hooks import RemovableHandle

__all__ = [
    "AccumulateGrad",
    "Function",
    "FunctionCtx",
    "GradFn",
    "GradcheckError",
    "RemovableHandle",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
]
