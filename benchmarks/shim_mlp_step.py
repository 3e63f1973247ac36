"""One SGD training step of an MLP through the PyTorch-style shim, against PyTorch eager and a
handwritten NumPy step, one thread each, alternating in one process; then where tracegrad's
step goes.

Run: python -m benchmarks.shim_mlp_step [--quick]
The step is PyTorch's training loop: `optimizer.zero_grad(); loss = loss_fn(model(x), y);
loss.backward(); optimizer.step()` for Linear(64, 256) -> ReLU -> Linear(256, 10), MSE loss,
SGD (lr 0.01), batch 32, float32 (PyTorch's default dtype). The handwritten step does the
forward pass, the backward pass and the update by hand. Ratios are time / handwritten, per
round (benchmarks/harness.py), and shim / PyTorch per round. The profile part times each phase
of the shim's step and lists cProfile's top entries.
"""

from __future__ import annotations

import sys

import numpy as np

import tracegrad as tg
import tracegrad.torch.nn as nn
import tracegrad.torch.optim as optim
from benchmarks import shim_steps
from benchmarks.report import cli
from benchmarks.shim_steps import run_against_handwritten

BATCH, D_IN, HIDDEN, D_OUT = 32, 64, 256, 10
LR = 0.01


def init(seed=0):
    """PyTorch's Linear initialisation, as float32 arrays in PyTorch's (out, in) layout."""
    rng = np.random.default_rng(seed)

    def uniform(shape, fan_in):
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    return {
        "0.weight": uniform((HIDDEN, D_IN), D_IN),
        "0.bias": uniform((HIDDEN,), D_IN),
        "2.weight": uniform((D_OUT, HIDDEN), HIDDEN),
        "2.bias": uniform((D_OUT,), HIDDEN),
    }


def data(seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, D_IN)).astype(np.float32)
    y = rng.standard_normal((BATCH, D_OUT)).astype(np.float32)
    return x, y


class Shim:
    """The training step as a PyTorch user writes it, on tracegrad."""

    def __init__(self, params, x, y):
        self.model = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, D_OUT))
        self.model.load_state_dict(params)
        self.loss_fn = nn.MSELoss()
        self.optimizer = optim.SGD(self.model.parameters(), lr=LR)
        self.x, self.y = tg.tensor(x), tg.tensor(y)

    def __call__(self):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(self.x), self.y)
        loss.backward()
        self.optimizer.step()
        return loss

    def params(self):
        return {k: v.numpy() for k, v in self.model.state_dict().items()}


class Handwritten:
    """The limit: forward, backward and update by hand in NumPy."""

    def __init__(self, params, x, y):
        self.p = {k: v.copy() for k, v in params.items()}
        self.x, self.y = x, y

    def __call__(self):
        p, x = self.p, self.x
        w1, b1, w2, b2 = p["0.weight"], p["0.bias"], p["2.weight"], p["2.bias"]
        h = x @ w1.T + b1
        a = np.maximum(h, 0)
        d = a @ w2.T + b2 - self.y
        loss = np.mean(d * d)
        d_out = d * np.float32(2.0 / d.size)
        d_h = (d_out @ w2) * (h > 0)
        grads = {
            "2.weight": d_out.T @ a,
            "2.bias": d_out.sum(0),
            "0.weight": d_h.T @ x,
            "0.bias": d_h.sum(0),
        }
        for k, g in grads.items():
            p[k] -= LR * g
        return loss

    def params(self):
        return self.p


def torch_step(torch, params, x, y):
    nn = torch.nn
    model = nn.Sequential(nn.Linear(D_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, D_OUT))
    return shim_steps.torch_step(torch, model, nn.MSELoss(), LR, params, x, y)


def run(opts):
    title = (
        f"MLP {D_IN}-{HIDDEN}-{D_OUT}, batch {BATCH}, float32, one SGD step "
        "(zero_grad, forward, loss, backward, step)"
    )
    yield from run_against_handwritten(opts, title, sys.modules[__name__], goal=None)


if __name__ == "__main__":
    cli(run, __doc__)
