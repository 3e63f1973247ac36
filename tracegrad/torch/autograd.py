"""PyTorch's `torch.autograd` for tracegrad tensors: `backward`, `grad`, `Function`, grad modes.

A namespace: the parts live in `tracegrad.torch`'s modules (`engine`, `function`, `graph`,
`grad_mode`, `gradcheck`), which are also reachable here under PyTorch's module names
(`torch.autograd.function.once_differentiable`, `torch.autograd.graph`).
"""

from tracegrad.torch import autograd_functional as functional  # torch.autograd.functional
from tracegrad.torch import function, grad_mode, graph  # noqa: F401 - PyTorch's module names
from tracegrad.torch.engine import backward, grad
from tracegrad.torch.function import Function, FunctionCtx, once_differentiable
from tracegrad.torch.grad_mode import *  # noqa: F403 - the grad modes, in grad_mode.__all__
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
    "functional",
    "grad",
    "gradcheck",
    "once_differentiable",
    *grad_mode.__all__,
]
