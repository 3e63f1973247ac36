"""jit on scalar chains: run time per operation against straight-line NumPy, and the cost
of the first call (trace, simplify, generate code, compile) per node.

Run: python -m benchmarks.jit_overhead [--quick]
- a chain of 1,000 scalar operations, forward and backward (`jit(value_and_grad(f))`), per
  operation, against the same chain written as straight-line NumPy on 0-d values (forward and
  a handwritten backward: the limit), alternating in rounds (benchmarks/harness.py);
- the first call of `jit(grad(f))` for chains of 10^2, 10^3, 10^4 operations (quick: up to
  10^3), per node of the graph it compiles, the median over a few fresh `jit` objects, each
  with an empty cache (`jax.jit`'s first call costs about 1,100 us per node here).
"""

from __future__ import annotations

import time

import numpy as np

import tracegrad as tg
from benchmarks.harness import Table, compare, fmt_time
from benchmarks.report import cli, optional

N_OPS = 1000


def chain(n):
    # four operations per step: sin, multiply, multiply, add
    def f(x):
        for _ in range(n // 4):
            x = np.sin(x) * 0.9 + x * 0.3
        return x

    return f


def straight_line(x, n=N_OPS):
    """Forward and backward by hand on 0-d values: the limit."""
    xs = []
    for _ in range(n // 4):
        xs.append(x)
        x = np.sin(x) * 0.9 + x * 0.3
    g = np.float64(1.0)
    for x_i in reversed(xs):
        g = g * (np.cos(x_i) * 0.9 + 0.3)
    return x, g


def first_call(n: int, repeats: int) -> tuple[int, float]:
    """(nodes compiled, median seconds of a fresh jit's first call) for a chain of n ops."""
    x = np.float64(0.3)
    times = []
    for _ in range(repeats):
        g = tg.jit(tg.grad(chain(n)))
        t0 = time.perf_counter()
        g(x)
        times.append(time.perf_counter() - t0)
    return len(g.lower(x).graph.nodes), float(np.median(times))


def jax_first_call(jax, n: int, repeats: int) -> float:
    """Median seconds of a fresh `jax.jit(jax.grad(chain))`'s first call (trace, lower,
    compile, run), each with a fresh function so no cache is hit."""
    import jax.numpy as jnp

    times = []
    for _ in range(repeats):

        def f(x):
            for _ in range(n // 4):
                x = jnp.sin(x) * 0.9 + x * 0.3
            return x

        g = jax.jit(jax.grad(f))
        t0 = time.perf_counter()
        g(jnp.float64(0.3)).block_until_ready()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def run(opts):
    x = np.float64(0.3)
    f = chain(N_OPS)
    jf = tg.jit(tg.value_and_grad(f))
    v, g = jf(x)
    v_ref, g_ref = straight_line(x)
    np.testing.assert_allclose([v, g], [v_ref, g_ref], rtol=1e-12)
    systems = {
        "straight-line NumPy": lambda: straight_line(x),
        "tracegrad jit": lambda: jf(x),
        "tracegrad no jit": lambda: tg.value_and_grad(f)(x),
    }
    title = "1,000-op scalar chain (sin, *0.9, *0.3, +), forward + backward, 0-d float64"
    yield compare(
        title, systems, "straight-line NumPy", quick=opts.quick, per=N_OPS, unit="op"
    ).table()
    jax = optional("jax")
    rows = []
    for n in (100, 1000) if opts.quick else (100, 1000, 10000):
        repeats = 3 if n <= 1000 else 2
        nodes, seconds = first_call(n, repeats)
        row = [str(n), str(nodes), fmt_time(seconds), fmt_time(seconds / nodes)]
        if jax is not None:
            jax_seconds = jax_first_call(jax, n, repeats)
            row += [fmt_time(jax_seconds), fmt_time(jax_seconds / nodes)]
        rows.append(row)
    columns = ["ops", "nodes", "first call", "per node"]
    if jax is not None:
        columns += ["jax.jit first call", "jax.jit per node"]
    notes = [
        "trace + simplify + generate code + compile; median over fresh jit objects",
        "per node: divided by the number of nodes of tracegrad's compiled graph, for both",
        "10^6 ops: python -m benchmarks.jit_large_graphs --million",
    ]
    yield Table("first call of jit(grad(chain))", columns, rows, notes)


if __name__ == "__main__":
    cli(run, __doc__)
