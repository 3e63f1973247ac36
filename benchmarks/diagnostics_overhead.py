"""The cost of provenance diagnostics (issue 27): per operation, off, recording lines, checking.

Run: python -m benchmarks.diagnostics_overhead [--quick]
- the 1,000-op scalar chain of grad_overhead.py (sin, *0.9, *0.3, +), forward + backward,
  per op, through `tg.grad`, the PyTorch-style tensors and `tg.jit(tg.grad(f))`, each with
  diagnostics off (the reference of its table), with `tg.config.provenance` (every node
  records the user's line; backward nodes their forward primitive) and inside
  `tg.debug_nans()` (provenance plus a NaN check of every result; jit then runs its graph
  node by node);
- the same per op for the jitted MLP training step is left to benchmarks.mlp_step: with the
  switches off, jit's call path reads two module attributes more per call, nothing per node.
The cost when off (three module-attribute reads per operation) is what every user pays; the
rest only in debug mode. Systems alternate in rounds in one process (benchmarks/harness.py).
"""

from __future__ import annotations

import numpy as np

import tracegrad as tg
import tracegrad.torch as torch
from benchmarks.grad_overhead import N_OPS, chain
from benchmarks.harness import compare
from benchmarks.report import cli

MODES = ("off", "provenance", "debug_nans")


def _in_mode(mode: str, fn):
    """`fn` run with the diagnostics switch `mode` on (the previous value restored)."""
    if mode == "off":
        return fn

    def run():
        old = getattr(tg.config, mode)
        setattr(tg.config, mode, True)
        try:
            return fn()
        finally:
            setattr(tg.config, mode, old)

    return run


def grad_chain():
    return lambda: tg.grad(chain(np))(0.3)


def shim_chain():
    def run():
        x = torch.tensor(0.3, dtype=np.float64, requires_grad=True)
        chain(torch)(x).backward()
        return x.grad

    return run


def jit_chain():
    g = tg.jit(tg.grad(chain(np)))
    return lambda: g(0.3)


def systems(make, label: str) -> dict:
    fn = make()
    fn()  # jit: compile the "off" signature before timing
    return {f"{label}, {mode}": _in_mode(mode, fn) for mode in MODES}


def run(opts):
    for make, label in ((grad_chain, "tg.grad"), (shim_chain, "tensors"), (jit_chain, "jit")):
        title = f"1,000-op chain through {label}, forward + backward, per op, float64"
        yield compare(
            title,
            systems(make, label),
            f"{label}, off",
            quick=opts.quick,
            per=N_OPS,
            unit="op",
        ).table()


if __name__ == "__main__":
    cli(run, __doc__)
