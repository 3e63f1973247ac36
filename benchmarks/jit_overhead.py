"""jit on scalar chains: run time per operation against straight-line NumPy, and the cost
of the first call (trace, simplify, generate code, compile) per node.

Run: python -m benchmarks.jit_overhead
- a chain of 1,000 scalar operations, forward and backward (`jit(value_and_grad(f))`), per
  operation, against the same chain written as straight-line NumPy on 0-d values (forward and
  a handwritten backward);
- the first call of `jit(grad(f))` for chains of 10^2, 10^3, 10^4 operations, per node of the
  graph it compiles (`jax.jit`'s first call costs about 1,100 us per node here).
"""

from __future__ import annotations

import time

import numpy as np

import tracegrad as tg
from benchmarks.common import best_time

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


def main() -> None:
    x = np.float64(0.3)
    f = chain(N_OPS)
    jf = tg.jit(tg.value_and_grad(f))
    v, g = jf(x)
    v_ref, g_ref = straight_line(x)
    np.testing.assert_allclose([v, g], [v_ref, g_ref], rtol=1e-12)
    t_jit = best_time(lambda: jf(x))
    t_ref = best_time(lambda: straight_line(x))
    t_nojit = best_time(lambda: tg.value_and_grad(f)(x))
    print(
        f"1,000-op scalar chain, forward + backward, us per op: straight-line NumPy "
        f"{t_ref / N_OPS * 1e6:.2f}, tracegrad jit {t_jit / N_OPS * 1e6:.2f} "
        f"({t_jit / t_ref:.2f}x), tracegrad no jit {t_nojit / N_OPS * 1e6:.2f} "
        f"({t_nojit / t_ref:.2f}x)"
    )
    print(f"{'ops':>7} {'nodes':>7} {'first call us/node':>19} {'trace+simplify+codegen':>24}")
    for n in (100, 1000, 10000):
        g = tg.jit(tg.grad(chain(n)))
        t0 = time.perf_counter()
        g(x)
        first = time.perf_counter() - t0
        nodes = len(g.lower(x).graph.nodes)
        print(f"{n:>7} {nodes:>7} {first / nodes * 1e6:19.2f}")


if __name__ == "__main__":
    main()
