"""Per-operation overhead of the PyTorch-style shim, against PyTorch eager and HIPS autograd.

Run: python -m benchmarks.shim_chain [--quick]
- forward + backward of a 1,000-op chain on tiny (0-d) float64 tensors, microseconds per
  operation, and the same run with only its recording (forward) or only its backward pass on
  the clock; ratios are to the shim's forward + backward;
- the same chain through the functional `tg.grad` (tracing, no shim);
- a 10^6-node chain (quick: 10^5) recorded, differentiated and freed (the scale requirement),
  timed once.
One thread per library; the systems alternate in rounds in one process (benchmarks/harness.py).
"""

from __future__ import annotations

import gc
import time

import numpy as np

import tracegrad as tg
import tracegrad.torch as ttorch
from benchmarks.grad_overhead import N_OPS, chain
from benchmarks.harness import Table, Timed, compare, fmt_time
from benchmarks.report import cli, optional, skipped


def _forward_backward(make_leaf, lib):
    def run():
        x = make_leaf()
        chain(lib)(x).backward()
        return x.grad

    return run


def _half(leaf, part: str) -> Timed:
    """The shim's forward + backward with only `part` ("forward" or "backward") timed."""

    def timer(n: int) -> float:
        total = 0.0
        for _ in range(n):
            x = leaf()
            t0 = time.perf_counter()
            y = chain(ttorch)(x)
            t1 = time.perf_counter()
            y.backward()
            del y  # freeing the recorded graph belongs to the backward half
            t2 = time.perf_counter()
            total += t1 - t0 if part == "forward" else t2 - t1
        return total

    return Timed(timer)


def long_chain(n: int) -> Table:
    x = ttorch.tensor(1.0, dtype=ttorch.float64, requires_grad=True)
    gc.collect()
    t0 = time.perf_counter()
    y = x
    for _ in range(n):
        y = y + 1e-9
    t1 = time.perf_counter()
    y.backward()
    t2 = time.perf_counter()
    del y
    t3 = time.perf_counter()
    row = [f"{n:,}"] + [fmt_time(dt / n) for dt in (t1 - t0, t2 - t1, t3 - t2)]
    row.append(str(x.grad.item()))
    columns = ["nodes", "record per node", "backward per node", "free per node", "x.grad"]
    return Table(f"a {n:,}-node chain of y = y + 1e-9, timed once", columns, [row])


def run(opts):
    torch, autograd = optional("torch"), optional("autograd")
    if note := skipped("torch", "autograd"):
        yield note
    leaf = lambda: ttorch.tensor(0.3, dtype=ttorch.float64, requires_grad=True)
    systems = {
        "tracegrad shim, forward + backward": _forward_backward(leaf, ttorch),
        "shim, only the recording (forward) timed": _half(leaf, "forward"),
        "shim, only the backward (and freeing) timed": _half(leaf, "backward"),
        "tracegrad tg.grad (functional)": lambda: tg.grad(chain(np))(0.3),
    }
    if torch is not None:
        t_leaf = lambda: torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
        systems["PyTorch eager, forward + backward"] = _forward_backward(t_leaf, torch)
    if autograd is not None:
        import autograd.numpy as anp

        systems["HIPS autograd grad"] = lambda: autograd.grad(chain(anp))(0.3)
    title = "1,000-op chain (sin, *0.9, *0.3, +) of 0-d float64 tensors, forward + backward"
    reference = "tracegrad shim, forward + backward"
    yield compare(title, systems, reference, quick=opts.quick, per=N_OPS, unit="op").table()
    yield long_chain(10**5 if opts.quick else 10**6)


if __name__ == "__main__":
    cli(run, __doc__)
