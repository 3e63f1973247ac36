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

import cProfile
import io
import pstats
import time

import numpy as np

import tracegrad as tg
import tracegrad.torch.nn as nn
import tracegrad.torch.optim as optim
from benchmarks.harness import Table, compare, fmt_time, quartiles
from benchmarks.report import cli, optional, skipped

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
    model = torch.nn.Sequential(
        torch.nn.Linear(D_IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, D_OUT)
    )
    model.load_state_dict({k: torch.tensor(v) for k, v in params.items()})
    loss_fn = torch.nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    tx, ty = torch.tensor(x), torch.tensor(y)

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(tx), ty)
        loss.backward()
        optimizer.step()
        return loss

    step.params = lambda: {k: v.detach().numpy() for k, v in model.state_dict().items()}
    return step


def check_same_numbers(steps, n=3) -> None:
    """Every implementation takes the same steps from the same start (float32 rounding)."""
    ref = None
    for step in steps:
        for _ in range(n):
            step()
        got = step.params()
        if ref is None:
            ref = got
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-4, atol=1e-6)


def phases(shim: Shim, n=400) -> dict[str, float]:
    """Median seconds of each phase of the shim's step, timed inside running steps."""
    model, loss_fn, opt, x, y = shim.model, shim.loss_fn, shim.optimizer, shim.x, shim.y
    times = {"zero_grad": [], "forward + loss (recording)": [], "backward": [], "step": []}
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        opt.zero_grad()
        t1 = clock()
        loss = loss_fn(model(x), y)
        t2 = clock()
        loss.backward()
        t3 = clock()
        opt.step()
        t4 = clock()
        for name, t in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            times[name].append(t)
    return {name: float(np.median(ts)) for name, ts in times.items()}


def profile(shim: Shim, n=300, top=12) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        shim()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return "\n".join(lines[start : start + top + 1])


def run(opts):
    torch = optional("torch")
    if note := skipped("torch"):
        yield note
    params = init()
    x, y = data()
    steps = [Handwritten(params, x, y), Shim(params, x, y)]
    if torch is not None:
        steps.append(torch_step(torch, params, x, y))
    check_same_numbers(steps)

    shim = Shim(params, x, y)
    systems = {"handwritten NumPy": Handwritten(params, x, y), "tracegrad shim": shim}
    if torch is not None:
        systems["PyTorch eager"] = torch_step(torch, params, x, y)
    title = (
        f"MLP {D_IN}-{HIDDEN}-{D_OUT}, batch {BATCH}, float32, one SGD step "
        "(zero_grad, forward, loss, backward, step)"
    )
    result = compare(title, systems, "handwritten NumPy", quick=opts.quick)
    if torch is not None:
        q25, q50, q75 = quartiles(result.ratios("tracegrad shim", "PyTorch eager"))
        result.notes.append(
            f"tracegrad shim / PyTorch eager, per round: median {q50:.2f} "
            f"(quartiles {q25:.2f} - {q75:.2f})"
        )
    yield result.table()
    n = 100 if opts.quick else 400
    rows = [[name, fmt_time(t)] for name, t in phases(shim, n).items()]
    yield Table(f"where the shim's step goes (median of {n} steps)", ["phase", "time"], rows)
    n = 100 if opts.quick else 300
    yield f"cProfile, {n} shim steps, top entries by own time:\n\n```\n{profile(shim, n)}\n```"


if __name__ == "__main__":
    cli(run, __doc__)
