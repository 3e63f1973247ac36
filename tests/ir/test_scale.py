"""A chain of 10^5 nodes: traced, printed, verified, dumped and loaded, run, and freed by
reference counting alone, with no RecursionError anywhere. Per-node costs are measured by
`python -m benchmarks.chain_scaling` (speed belongs in benchmarks, not tests)."""

from __future__ import annotations

import gc
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


def _exercise() -> list[weakref.ref]:
    """Everything on one chain; returns weak references to a few of its nodes."""
    x = np.zeros(2)
    g = tg.make_graph(_chain)(x)
    assert len(g.nodes) == N + 1  # the adds and the one constant 1.0 they share

    text = str(g)
    lines = text.splitlines()
    assert len(lines) == N + 3  # provenance, signature, one line per add, return
    assert lines[2] == "  b: f64[2] = add a 1.0"
    assert lines[-1].startswith("  return ") and lines[-2].endswith(" 1.0")

    assert verify(g) is g
    dot = to_dot(g)
    assert dot.count("\n  n") >= 2 * N

    doc = dumps(g)
    g2 = loads(doc)
    assert str(g2) == text

    out = g(x)
    assert out.tolist() == [float(N), float(N)]
    assert g2(x).tolist() == [float(N), float(N)]
    return [weakref.ref(g.nodes[1]), weakref.ref(g.nodes[-1]), weakref.ref(g2.nodes[1])]


def test_a_chain_of_100k_nodes():
    gc.collect()
    gc.disable()  # everything must go by reference counting: no cycles, no recursion
    try:
        refs = _exercise()
        dead = [r() is None for r in refs]
    finally:
        gc.enable()
    assert dead == [True, True, True]  # (per-node costs: python -m benchmarks.chain_scaling)
