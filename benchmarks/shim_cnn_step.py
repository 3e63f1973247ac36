"""One SGD training step of a small CNN through the PyTorch-style shim, against PyTorch eager,
one thread each, alternating in one process; then where tracegrad's step goes.

Run: python -m benchmarks.shim_cnn_step [--quick]
The step is PyTorch's training loop, `optimizer.zero_grad(); loss = loss_fn(model(x), y);
loss.backward(); optimizer.step()`, for Conv2d(1, 16, 3) -> ReLU -> MaxPool2d(2) ->
Conv2d(16, 16, 3) -> ReLU -> MaxPool2d(2) -> Flatten -> Linear(400, 10), cross entropy, SGD
(lr 0.01), batch 32 of 1 x 28 x 28 images, float32. Issue 24's goal: the shim within 3x of
PyTorch eager. The convolutions run as im2col (strided slices, one copy) and one BLAS matmul;
the profile part times each phase of the shim's step and lists cProfile's top entries.
"""

from __future__ import annotations

import numpy as np

import tracegrad as tg
import tracegrad.torch.nn as nn
import tracegrad.torch.optim as optim
from benchmarks import shim_steps
from benchmarks.report import cli, optional, skipped
from benchmarks.shim_steps import check_same_numbers, report_steps
from tracegrad.torch.nn import conv_layers

BATCH, CHANNELS, SIDE, CLASSES = 32, 16, 28, 10
LR = 0.01
GOAL = 3.0


def init(seed=0):
    """PyTorch's default initialisation bounds, as float32 arrays in PyTorch's layouts."""
    rng = np.random.default_rng(seed)

    def uniform(shape, fan_in):
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {
        "0.weight": uniform((CHANNELS, 1, 3, 3), 9),
        "0.bias": uniform((CHANNELS,), 9),
        "3.weight": uniform((CHANNELS, CHANNELS, 3, 3), CHANNELS * 9),
        "3.bias": uniform((CHANNELS,), CHANNELS * 9),
        "7.weight": uniform((CLASSES, CHANNELS * 25), CHANNELS * 25),
        "7.bias": uniform((CLASSES,), CHANNELS * 25),
    }


def data(seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, 1, SIDE, SIDE)).astype(np.float32)
    y = rng.integers(0, CLASSES, BATCH)
    return x, y


def model(lib, conv2d, max_pool2d):
    """The same Sequential in either library (`lib` is `torch.nn` or tracegrad's `nn`)."""
    return lib.Sequential(
        conv2d(1, CHANNELS, 3),
        lib.ReLU(),
        max_pool2d(2),
        conv2d(CHANNELS, CHANNELS, 3),
        lib.ReLU(),
        max_pool2d(2),
        lib.Flatten(),
        lib.Linear(CHANNELS * 25, CLASSES),
    )


class Shim:
    """The training step as a PyTorch user writes it, on tracegrad."""

    def __init__(self, params, x, y):
        self.model = model(nn, conv_layers.Conv2d, conv_layers.MaxPool2d)
        self.model.load_state_dict(params)
        self.loss_fn = nn.CrossEntropyLoss()
        self.optimizer = optim.SGD(self.model.parameters(), lr=LR)
        self.x, self.y = tg.torch.tensor(x), tg.torch.tensor(y)

    def __call__(self):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(self.x), self.y)
        loss.backward()
        self.optimizer.step()
        return loss

    def params(self):
        return {k: v.numpy() for k, v in self.model.state_dict().items()}


def torch_step(torch, params, x, y):
    net = model(torch.nn, torch.nn.Conv2d, torch.nn.MaxPool2d)
    return shim_steps.torch_step(torch, net, torch.nn.CrossEntropyLoss(), LR, params, x, y)


def run(opts):
    torch = optional("torch")
    if torch is None:
        yield skipped("torch") + " (PyTorch eager is this benchmark's reference)"
        return
    params = init()
    x, y = data()
    check_same_numbers([Shim(params, x, y), torch_step(torch, params, x, y)], atol=1e-5)

    shim = Shim(params, x, y)
    systems = {"PyTorch eager": torch_step(torch, params, x, y), "tracegrad shim": shim}
    title = (
        f"CNN conv({CHANNELS}, 3x3) -> relu -> maxpool 2 -> conv({CHANNELS}, 3x3) -> relu -> "
        f"maxpool 2 -> linear {CLASSES}, batch {BATCH} of 1x{SIDE}x{SIDE}, float32, one SGD step"
    )
    yield from report_steps(opts, title, systems, "PyTorch eager", goal=GOAL)


if __name__ == "__main__":
    cli(run, __doc__)
