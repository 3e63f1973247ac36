"""`hessian` of f(x) = sum(tanh(A x)^2) + (x.x)^2 against the analytic NumPy Hessian.

Run: python -m benchmarks.hessian [--quick]
The limit is the closed form (one n^3 product): with t = tanh(A x), w = 2(1-t^2)(1-3t^2),
H = A^T (w[:, None] * A) + 4 (x.x) I + 8 x x^T. Peers, when installed, alternate with it in
rounds in the same process (benchmarks/harness.py), one thread each: jax.jit(jax.hessian),
jax.hessian without jit, torch.func.hessian and HIPS autograd. Ratios are time / analytic.
"""

from __future__ import annotations

import numpy as np

import tracegrad as tg
from benchmarks.harness import compare
from benchmarks.report import cli, optional, skipped


def analytic(a, x):
    t = np.tanh(a @ x)
    w = 2 * (1 - t * t) * (1 - 3 * t * t)
    h = a.T @ (w[:, None] * a)
    h += 8.0 * np.outer(x, x)
    h[np.diag_indices_from(h)] += 4.0 * (x @ x)
    return h


def systems(n, jax, torch, autograd):
    """name -> one Hessian of size n, checked against the closed form where it is ours."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)

    def f(x):
        return np.sum(np.tanh(a @ x) ** 2) + (x @ x) ** 2

    np.testing.assert_allclose(tg.hessian(f)(x), analytic(a, x), rtol=1e-9, atol=1e-9)
    out = {"analytic NumPy": lambda: analytic(a, x), "tracegrad hessian": lambda: tg.hessian(f)(x)}
    if jax is not None:
        import jax.numpy as jnp

        ja, jx = jnp.asarray(a), jnp.asarray(x)
        jf = lambda x: jnp.sum(jnp.tanh(ja @ x) ** 2) + (x @ x) ** 2
        jh, jh_nojit = jax.jit(jax.hessian(jf)), jax.hessian(jf)
        out["jax.jit(jax.hessian)"] = lambda: jh(jx).block_until_ready()
        out["jax.hessian (no jit)"] = lambda: jh_nojit(jx).block_until_ready()
    if torch is not None:
        ta, tx = torch.tensor(a), torch.tensor(x)
        tf = lambda x: torch.sum(torch.tanh(ta @ x) ** 2) + (x @ x) ** 2
        out["torch.func.hessian"] = lambda: torch.func.hessian(tf)(tx)
    if autograd is not None:
        import autograd.numpy as anp

        af = lambda x: anp.sum(anp.tanh(anp.dot(a, x)) ** 2) + anp.dot(x, x) ** 2
        ah = autograd.hessian(af)
        out["HIPS autograd"] = lambda: ah(x)
    return out


def run(opts):
    jax, torch, autograd = optional("jax"), optional("torch"), optional("autograd")
    if note := skipped("jax", "torch", "autograd"):
        yield note
    for n in (10, 100, 500):
        title = f"Hessian, n = {n}, float64"
        hessians = systems(n, jax, torch, autograd)
        yield compare(title, hessians, "analytic NumPy", quick=opts.quick).table()


if __name__ == "__main__":
    cli(run, __doc__)
