"""One SGD training step of an LSTM through the PyTorch-style shim, against PyTorch eager and a
handwritten NumPy step (forward and backpropagation through time by hand), one thread each,
alternating in one process; then where tracegrad's step goes.

Run: python -m benchmarks.shim_lstm_step [--quick]
The step is PyTorch's training loop: `optimizer.zero_grad(); out, _ = lstm(x);
loss = loss_fn(head(out[-1]), y); loss.backward(); optimizer.step()` for LSTM(16, 64) (one
layer) and a Linear(64, 1) head on the last step, MSE loss, SGD (lr 0.01), sequence 20,
batch 32, float32. Ratios are time / handwritten, per round (benchmarks/harness.py), and
shim / PyTorch per round (the issue's goal: within 2x). PyTorch's CPU LSTM is one fused ATen
kernel per layer; the shim's is one node per layer-direction too (`LSTMSequence`: the input
projection of all steps in one matmul, the steps in NumPy, backpropagation through time by
hand), so its step is the handwritten one plus the recording of a few nodes.
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
from tracegrad.torch.nn.recurrent import LSTM

SEQ, BATCH, D_IN, HIDDEN = 20, 32, 16, 64
LR = 0.01


def init(seed=0):
    """PyTorch's LSTM and Linear initialisation, as float32 arrays under PyTorch's names."""
    rng = np.random.default_rng(seed)

    def uniform(shape, bound):
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    k = 1 / np.sqrt(HIDDEN)
    return {
        "lstm.weight_ih_l0": uniform((4 * HIDDEN, D_IN), k),
        "lstm.weight_hh_l0": uniform((4 * HIDDEN, HIDDEN), k),
        "lstm.bias_ih_l0": uniform((4 * HIDDEN,), k),
        "lstm.bias_hh_l0": uniform((4 * HIDDEN,), k),
        "head.weight": uniform((1, HIDDEN), k),
        "head.bias": uniform((1,), k),
    }


def data(seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((SEQ, BATCH, D_IN)).astype(np.float32)
    y = rng.standard_normal((BATCH, 1)).astype(np.float32)
    return x, y


def _model(lib_nn, lstm_cls):
    class Model(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lstm_cls(D_IN, HIDDEN)
            self.head = lib_nn.Linear(HIDDEN, 1)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[-1])

    return Model()


class Shim:
    """The training step as a PyTorch user writes it, on tracegrad."""

    def __init__(self, params, x, y):
        self.model = _model(nn, LSTM)
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


def _sigmoid(x):
    return 0.5 * np.tanh(0.5 * x) + 0.5


class Handwritten:
    """The limit: forward, backpropagation through time and update by hand in NumPy."""

    def __init__(self, params, x, y):
        self.p = {k: v.copy() for k, v in params.items()}
        self.x, self.y = x, y

    def __call__(self):
        p, x, h_dim = self.p, self.x, HIDDEN
        w_ih, w_hh = p["lstm.weight_ih_l0"], p["lstm.weight_hh_l0"]
        w_o, b_o = p["head.weight"], p["head.bias"]
        proj = (x.reshape(SEQ * BATCH, D_IN) @ w_ih.T).reshape(SEQ, BATCH, 4 * h_dim)
        proj += p["lstm.bias_ih_l0"] + p["lstm.bias_hh_l0"]
        h = np.zeros((BATCH, h_dim), np.float32)
        c = np.zeros((BATCH, h_dim), np.float32)
        hs, cs, acts, tcs = [h], [c], [], []
        for t in range(SEQ):
            g = proj[t] + h @ w_hh.T
            a = np.empty_like(g)
            a[:, : 2 * h_dim] = _sigmoid(g[:, : 2 * h_dim])
            a[:, 2 * h_dim : 3 * h_dim] = np.tanh(g[:, 2 * h_dim : 3 * h_dim])
            a[:, 3 * h_dim :] = _sigmoid(g[:, 3 * h_dim :])
            i, f, gg, o = np.split(a, 4, axis=1)
            c = f * c + i * gg
            tc = np.tanh(c)
            h = o * tc
            hs.append(h)
            cs.append(c)
            acts.append(a)
            tcs.append(tc)
        d = h @ w_o.T + b_o - self.y
        loss = np.mean(d * d)
        d_out = d * np.float32(2.0 / d.size)
        grads = {"head.weight": d_out.T @ h, "head.bias": d_out.sum(0)}
        dh = d_out @ w_o
        dc = np.zeros_like(c)
        d_gates = np.empty((SEQ, BATCH, 4 * h_dim), np.float32)
        for t in range(SEQ - 1, -1, -1):
            i, f, gg, o = np.split(acts[t], 4, axis=1)
            tc = tcs[t]
            dc = dc + dh * o * (1 - tc * tc)
            dg = d_gates[t]
            dg[:, :h_dim] = dc * gg * i * (1 - i)
            dg[:, h_dim : 2 * h_dim] = dc * cs[t] * f * (1 - f)
            dg[:, 2 * h_dim : 3 * h_dim] = dc * i * (1 - gg * gg)
            dg[:, 3 * h_dim :] = dh * tc * o * (1 - o)
            dc = dc * f
            dh = dg @ w_hh
        flat = d_gates.reshape(SEQ * BATCH, 4 * h_dim)
        grads["lstm.weight_ih_l0"] = flat.T @ x.reshape(SEQ * BATCH, D_IN)
        grads["lstm.weight_hh_l0"] = flat.T @ np.stack(hs[:-1]).reshape(SEQ * BATCH, h_dim)
        grads["lstm.bias_ih_l0"] = grads["lstm.bias_hh_l0"] = flat.sum(0)
        for k, g in grads.items():
            p[k] -= LR * g
        return loss

    def params(self):
        return self.p


def torch_step(torch, params, x, y):
    model = _model(torch.nn, torch.nn.LSTM)
    return shim_steps.torch_step(torch, model, torch.nn.MSELoss(), LR, params, x, y)


def run(opts):
    title = (
        f"LSTM({D_IN}, {HIDDEN}) + Linear({HIDDEN}, 1), sequence {SEQ}, batch {BATCH}, float32, "
        "one SGD step (zero_grad, forward, MSE loss, backward, step)"
    )
    yield from run_against_handwritten(opts, title, sys.modules[__name__], goal=2)


if __name__ == "__main__":
    cli(run, __doc__)
