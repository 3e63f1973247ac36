"""An RNN forward and backward over 1,000 steps: `tg.scan` under jit against the unrolled
Python loop under jit and against `jax.jit` of `jax.lax.scan` (issue 18).

Run: python -m benchmarks.rnn_scan [--quick]
- the first call (trace, simplify, generate code, compile, run once) of `jit(value_and_grad)`
  of the loss, for each system, the median over fresh `jit` objects, with the node count of
  the compiled graph: a scan is one node whatever its length, the unrolled loop one per
  operation per step;
- the steady state: one call of the compiled step, the systems alternating in rounds
  (benchmarks/harness.py); ratios to tracegrad's scan.
The cell: h' = tanh(W h + U x_t + b), loss = mean of (V h_t)^2 over the steps; hidden size 32,
input size 8, float64, one thread each.
"""

from __future__ import annotations

import time

import numpy as np

import tracegrad as tg
from benchmarks.harness import Table, compare, fmt_time
from benchmarks.report import cli, optional, skipped

STEPS, HIDDEN, INPUT = 1000, 32, 8


def params(seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.3 / np.sqrt(HIDDEN), (HIDDEN, HIDDEN))
    u = rng.normal(0, 0.3, (INPUT, HIDDEN))
    b = rng.normal(0, 0.1, HIDDEN)
    v = rng.normal(0, 0.3, (HIDDEN, 1))
    return w, u, b, v


def data(steps, seed=1):
    return np.random.default_rng(seed).normal(0, 1, (steps, INPUT))


def scan_loss(m, lax):
    def loss(w, u, b, v, xs):
        def step(h, x):
            h = m.tanh(h @ w + x @ u + b)
            return h, h @ v

        _, ys = lax.scan(step, m.zeros(HIDDEN), xs)
        return m.mean(ys * ys)

    return loss


def unrolled_loss(w, u, b, v, xs):
    h, ys = np.zeros(HIDDEN), []
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t] @ u + b)
        ys.append(h @ v)
    ys = tg.numpy.stack(ys)
    return np.mean(ys * ys)


def first_call(make, args, repeats) -> tuple[float, float]:
    """Median seconds of the first call of a fresh compiled function, and the fastest of its
    next three calls (the difference is the cost of tracing and compiling)."""
    first, steady = [], []
    for _ in range(repeats):
        f = make()
        times = []
        for _ in range(4):
            t0 = time.perf_counter()
            _block(f(*args))
            times.append(time.perf_counter() - t0)
        first.append(times[0])
        steady.append(min(times[1:]))
    return float(np.median(first)), float(np.median(steady))


def _block(out):
    for leaf in tg.tree.leaves(out):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def _first_row(name, make, args, repeats, nodes) -> list[str]:
    first, later = first_call(make, args, repeats)
    shown = "-" if nodes is None else str(nodes)
    return [name, fmt_time(first), fmt_time(later), fmt_time(first - later), shown]


def fori(n):
    def f(x):
        return tg.fori_loop(0, n, lambda i, v: np.sin(v) * 0.5 + v, x)

    return f


def fori_table(repeats) -> Table:
    """The first call of a jitted fori_loop's gradient, 1 and 10^4 steps: the loop is traced
    and compiled once as one node, so only running it costs more."""
    x, rows = np.linspace(0.1, 0.5, 4), []
    for n in (1, 10**4):
        make = lambda n=n: tg.jit(tg.grad(lambda v: np.sum(fori(n)(v))))  # noqa: E731
        rows.append(_first_row(f"{n} steps", make, (x,), repeats, _nodes(make(), (x,))))
    notes = [
        "difference = first call - fastest later call: tracing, simplifying, generating code "
        "and compiling"
    ]
    return Table("first call of jit(grad(fori_loop)), f64[4] carry", ["loop", "first call",
                 "later call", "difference", "nodes"], rows, notes)  # fmt: skip


def _nodes(jitted, args) -> int:
    return len(jitted.lower(*args).graph.nodes)


def run(opts):
    jax = optional("jax")
    steps = STEPS
    args = (*params(), data(steps))
    makers = {
        "tracegrad scan, jit": lambda: tg.jit(
            tg.value_and_grad(scan_loss(np, tg), argnums=(0, 1, 2, 3))
        ),
        "tracegrad unrolled loop, jit": lambda: tg.jit(
            tg.value_and_grad(unrolled_loss, argnums=(0, 1, 2, 3))
        ),
    }
    if jax is not None:
        import jax.numpy as jnp

        makers["jax.jit, lax.scan"] = lambda: jax.jit(
            jax.value_and_grad(scan_loss(jnp, jax.lax), argnums=(0, 1, 2, 3))
        )
    compiled = {name: make() for name, make in makers.items()}
    want = compiled["tracegrad scan, jit"](*args)
    for f in compiled.values():
        got = f(*args)
        np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=1e-10)
        for g, w in zip(got[1], want[1]):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-8, atol=1e-14)

    rows = []
    repeats = 1 if opts.quick else 3
    for name, make in makers.items():
        nodes = _nodes(compiled[name], args) if name.startswith("tracegrad") else None
        rows.append(_first_row(name, make, args, repeats, nodes))
    one = (*params(), data(1))
    name = "tracegrad scan, jit, 1 step"
    nodes = _nodes(compiled["tracegrad scan, jit"], one)
    rows.append(_first_row(name, makers["tracegrad scan, jit"], one, repeats, nodes))
    notes = [
        f"{steps} steps; median over {repeats} fresh jit objects; nodes of tracegrad's compiled "
        "graph (the scan's sub-graphs count as one node each)",
        "the 1-step scan: a loop's first call costs what its body does, whatever its length",
    ]
    if jax is None:
        notes.append(skipped("jax"))
    yield Table(
        "RNN forward + backward, first call of jit(value_and_grad)",
        ["system", "first call", "later call", "difference", "nodes"],
        rows,
        notes,
    )

    yield fori_table(repeats)

    systems = {name: (lambda f=f: _block(f(*args))) for name, f in compiled.items()}
    yield compare(
        f"RNN forward + backward over {steps} steps, steady state",
        systems,
        "tracegrad scan, jit",
        quick=opts.quick,
        per=steps,
        unit="step",
        notes=[f"hidden {HIDDEN}, input {INPUT}, float64, one thread"],
    ).table()


if __name__ == "__main__":
    cli(run, __doc__)
