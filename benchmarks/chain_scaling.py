"""Tracing and interpreting a chain of n nodes: cost per node must stay flat as n grows.

Run: python -m benchmarks.chain_scaling [--quick] [max_exponent]   (default 6: up to 10^6
nodes; quick: 5)
Prints microseconds per node for make_graph (tracing), str (printing), verify, the
interpreter, and garbage collection, at n = 10^4 .. 10^max: the median of three passes below
10^6 and one pass at 10^6 and above. One system with phases, so nothing alternates here; the
question is the shape of each column, not a ratio.
"""

from __future__ import annotations

import gc
import time

import numpy as np

import tracegrad as tg
from benchmarks.harness import Table, fmt_time
from benchmarks.report import cli
from tracegrad.ir import verify

PHASES = ("trace", "print", "verify", "run", "free")


def chain(n):
    def f(x):
        for _ in range(n):
            x = -x
        return x

    return f


def one_pass(n: int) -> list[float]:
    """Seconds of each phase for a chain of n nodes, with the collector off so a collection
    triggered by one phase's allocations is not charged to the next."""
    x = np.float64(1.0)
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        g = tg.make_graph(chain(n))(x)
        t1 = time.perf_counter()
        text = str(g)
        t2 = time.perf_counter()
        verify(g)
        t3 = time.perf_counter()
        out = g(x)
        t4 = time.perf_counter()
        del g, text
        t5 = time.perf_counter()
    finally:
        gc.enable()
    assert out == (x if n % 2 == 0 else -x)
    return [b - a for a, b in ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5))]


def add_arguments(parser) -> None:
    parser.add_argument("max_exponent", type=int, nargs="?", help="largest n is 10^this")


def run(opts):
    max_exp = opts.max_exponent or (5 if opts.quick else 6)
    rows = []
    for e in range(4, max_exp + 1):
        n = 10**e
        passes = [one_pass(n) for _ in range(3 if e < 6 else 1)]
        per_node = np.median(np.asarray(passes), axis=0) / n
        rows.append([f"{n:,}", *(fmt_time(t) for t in per_node)])
    yield Table("chain of n negations: time per node", ["n", *PHASES], rows)


if __name__ == "__main__":
    cli(run, __doc__, add_arguments)
