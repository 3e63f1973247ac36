"""Tracing and interpreting a chain of n nodes: cost per node must stay flat as n grows.

Run: python -m benchmarks.chain_scaling [max_exponent]   (default 6: up to 10^6 nodes)
Prints microseconds per node for make_graph (tracing), str (printing), verify, the
interpreter, and garbage collection, at n = 10^4 .. 10^max.
"""

from __future__ import annotations

import gc
import sys
import time

import numpy as np

import tracegrad as tg
from tracegrad.ir import verify


def chain(n):
    def f(x):
        for _ in range(n):
            x = -x
        return x

    return f


def main(max_exp: int = 6) -> None:
    print(f"{'n':>9} {'trace':>9} {'print':>9} {'verify':>9} {'run':>9} {'free':>9}  (us/node)")
    x = np.float64(1.0)
    for e in range(4, max_exp + 1):
        n = 10**e
        gc.collect()
        gc.disable()
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
        gc.enable()
        assert out == (x if n % 2 == 0 else -x)
        per = [(b - a) / n * 1e6 for a, b in ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5))]
        print(f"{n:>9} " + " ".join(f"{p:9.2f}" for p in per))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
