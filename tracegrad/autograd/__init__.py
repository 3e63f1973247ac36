"""PyTorch's `torch.autograd` surface for tracegrad tensors: `backward`, `grad`, grad modes."""

from tracegrad.autograd.custom import Function, FunctionCtx, once_differentiable
from tracegrad.autograd.engine import backward, grad
from tracegrad.autograd.function import AccumulateGrad, GradFn, RemovableHandle
from tracegrad.autograd.grad_mode import (
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
from tracegrad.autograd.gradcheck import GradcheckError, gradcheck

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
