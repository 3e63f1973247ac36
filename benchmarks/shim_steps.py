"""What the shim's training-step benchmarks share (shim_mlp_step, shim_cnn_step,
shim_lstm_step): the check that every system takes the same steps, the step's phases timed
inside running steps, and a cProfile summary.

A step object is callable (one training step) and has `params()` (the parameters as NumPy
arrays by name); the shim's step also has `model`, `loss_fn`, `optimizer`, `x` and `y`.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time

import numpy as np

from benchmarks.harness import Table, compare, fmt_time, quartiles
from benchmarks.report import optional, skipped


def check_same_numbers(steps, n=3, rtol=1e-4, atol=1e-6) -> None:
    """Every implementation takes the same `n` steps from the same start (float32 rounding)."""
    ref = None
    for step in steps:
        for _ in range(n):
            step()
        got = step.params()
        if ref is None:
            ref = got
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=rtol, atol=atol, err_msg=k)


def phases(shim, n: int) -> dict[str, float]:
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


def profile(step, n: int, top=12) -> str:
    """cProfile's `top` entries by own time over `n` steps."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        step()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return "\n".join(lines[start : start + top + 1])


def torch_step(torch, model, loss_fn, lr, params, x, y):
    """PyTorch's SGD training step of `model` from the NumPy `params`, on the data (x, y)."""
    model.load_state_dict({k: torch.tensor(v) for k, v in params.items()})
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    tx, ty = torch.tensor(x), torch.tensor(y)

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(tx), ty)
        loss.backward()
        optimizer.step()
        return loss

    step.params = lambda: {k: v.detach().numpy() for k, v in model.state_dict().items()}
    return step


def report_steps(opts, title: str, systems: dict, reference: str, goal: float | None):
    """The alternating comparison of `systems` (name -> step; "tracegrad shim" among them),
    the shim's time over PyTorch's per round against `goal`, then where the shim's step goes."""
    result = compare(title, systems, reference, quick=opts.quick)
    if "PyTorch eager" in systems:
        q25, q50, q75 = quartiles(result.ratios("tracegrad shim", "PyTorch eager"))
        verdict = (
            "" if goal is None else f"; goal {goal:g}x: " + ("met" if q50 <= goal else "not met")
        )
        result.notes.append(
            f"tracegrad shim / PyTorch eager, per round: median {q50:.2f} "
            f"(quartiles {q25:.2f} - {q75:.2f}){verdict}"
        )
    yield result.table()
    shim = systems["tracegrad shim"]
    n = 30 if opts.quick else 100
    rows = [[name, fmt_time(t)] for name, t in phases(shim, n).items()]
    yield Table(f"where the shim's step goes (median of {n} steps)", ["phase", "time"], rows)
    yield f"cProfile, {n} shim steps, top entries by own time:\n\n```\n{profile(shim, n)}\n```"


def run_against_handwritten(opts, title: str, module, goal: float | None):
    """A benchmark `run` for a module holding `init()`, `data()`, the step classes
    `Handwritten` and `Shim` and `torch_step(torch, params, x, y)`: the three take the same
    steps, then `report_steps` with the handwritten step as the reference."""
    torch = optional("torch")
    if note := skipped("torch"):
        yield note
    params = module.init()
    x, y = module.data()
    makers = {"handwritten NumPy": module.Handwritten, "tracegrad shim": module.Shim}
    if torch is not None:
        makers["PyTorch eager"] = lambda *a: module.torch_step(torch, *a)
    check_same_numbers([make(params, x, y) for make in makers.values()])
    systems = {name: make(params, x, y) for name, make in makers.items()}
    yield from report_steps(opts, title, systems, "handwritten NumPy", goal)
