"""A chain of 10^5 nodes: traced, printed, verified, dumped and loaded, run, and freed by
reference counting alone, with no RecursionError anywhere. Per-node costs are printed
(`pytest -s`) so a slowdown shows up as a number, not as a silently smaller test."""

from __future__ import annotations

import gc
import time
import weakref

import numpy as np

import tracegrad as tg
from tracegrad.ir.dot import to_dot
from tracegrad.ir.serialize import dumps, loads
from tracegrad.ir.verify import verify

N = 100_000


def _chain(x):
    for _ in range(N):
        x = x + 1.0
    return x


def _timed(costs: dict, label: str, fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    costs[label] = time.perf_counter() - t
    return out


def _exercise(costs: dict) -> list[weakref.ref]:
    """Everything on one chain; returns weak references to a few of its nodes."""
    x = np.zeros(2)
    g = _timed(costs, "trace", tg.make_graph(_chain), x)
    assert len(g.nodes) == N + 1  # the adds and the one constant 1.0 they share

    text = _timed(costs, "print", str, g)
    lines = text.splitlines()
    assert len(lines) == N + 3  # provenance, signature, one line per add, return
    assert lines[2] == "  b: f64[2] = add a 1.0"
    assert lines[-1].startswith("  return ") and lines[-2].endswith(" 1.0")

    assert _timed(costs, "verify", verify, g) is g
    dot = _timed(costs, "to_dot", to_dot, g)
    assert dot.count("\n  n") >= 2 * N

    doc = _timed(costs, "dumps", dumps, g)
    g2 = _timed(costs, "loads", loads, doc)
    assert str(g2) == text

    out = _timed(costs, "run", g, x)
    assert out.tolist() == [float(N), float(N)]
    assert g2(x).tolist() == [float(N), float(N)]
    return [weakref.ref(g.nodes[1]), weakref.ref(g.nodes[-1]), weakref.ref(g2.nodes[1])]


def test_a_chain_of_100k_nodes():
    costs: dict[str, float] = {}
    start = time.perf_counter()
    gc.collect()
    gc.disable()  # everything must go by reference counting: no cycles, no recursion
    try:
        refs = _exercise(costs)
        t = time.perf_counter()
        dead = [r() is None for r in refs]
        costs["free"] = time.perf_counter() - t
    finally:
        gc.enable()
    assert dead == [True, True, True]
    per_node = ", ".join(f"{k} {v / N * 1e6:.1f}" for k, v in costs.items())
    print(f"\n{N} nodes in {time.perf_counter() - start:.1f} s; us per node: {per_node}")
