"""`tracegrad.torch.optim`: PyTorch's optimizers and learning-rate schedulers over tensors.
Each optimizer is torch 2.13's single-tensor algorithm, operation for operation, in in-place
tensor methods under `no_grad`: an update rebinds the parameter and bumps its version, so a graph
that saved the old value raises PyTorch's version error. `SparseAdam` is refused (no sparse
gradients in tracegrad)."""

from tracegrad.torch.optim import lr_scheduler
from tracegrad.torch.optim.adam import Adam, Adamax, AdamW, NAdam, RAdam, SparseAdam
from tracegrad.torch.optim.lbfgs import LBFGS
from tracegrad.torch.optim.optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from tracegrad.torch.optim.rmsprop import Adadelta, Adagrad, RMSprop
from tracegrad.torch.optim.sgd import ASGD, SGD, Rprop

__all__ = [
    "ASGD",
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "SparseAdam",
    "lr_scheduler",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
]
