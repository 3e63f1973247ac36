"""`hessian` of f(x) = sum(tanh(A x)^2) + (x.x)^2 against the analytic NumPy Hessian.

Run: python -m benchmarks.hessian
The limit is the closed form (one n^3 product): with t = tanh(A x), w = 2(1-t^2)(1-3t^2),
H = A^T (w[:, None] * A) + 4 (x.x) I + 8 x x^T. Peers, when installed, run in the same process
with one thread each: jax.jit(jax.hessian), jax.hessian without jit, torch.func.hessian and
HIPS autograd. Ratios are time / analytic time.
"""

from __future__ import annotations

import numpy as np

import tracegrad as tg
from benchmarks.common import best_time, optional


def analytic(a, x):
    t = np.tanh(a @ x)
    w = 2 * (1 - t * t) * (1 - 3 * t * t)
    h = a.T @ (w[:, None] * a)
    h += 8.0 * np.outer(x, x)
    h[np.diag_indices_from(h)] += 4.0 * (x @ x)
    return h


def main(sizes=(10, 100, 500)) -> None:
    jax = optional("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    print(f"{'n':>5} {'analytic us':>12}  ratios (time / analytic)")
    for n in sizes:
        t_ref, ratios = measure(n, jax, optional("torch"), optional("autograd"))
        text = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
        print(f"{n:>5} {t_ref * 1e6:12.1f}  {text}")


def measure(n, jax, torch, autograd):
    """(analytic seconds, {name: time / analytic}) for one size."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)

    def f(x):
        return np.sum(np.tanh(a @ x) ** 2) + (x @ x) ** 2

    ref = analytic(a, x)
    np.testing.assert_allclose(tg.hessian(f)(x), ref, rtol=1e-9, atol=1e-9)
    t_ref = best_time(lambda: analytic(a, x))
    ratios = {"tracegrad hessian": best_time(lambda: tg.hessian(f)(x)) / t_ref}
    if jax is not None:
        import jax.numpy as jnp

        ja = jnp.asarray(a)
        jf = lambda x: jnp.sum(jnp.tanh(ja @ x) ** 2) + (x @ x) ** 2
        jh = jax.jit(jax.hessian(jf))
        jx = jnp.asarray(x)
        ratios["jax.jit(jax.hessian)"] = best_time(lambda: jh(jx).block_until_ready()) / t_ref
        jh_nojit = jax.hessian(jf)
        ratios["jax.hessian (no jit)"] = (
            best_time(lambda: jh_nojit(jx).block_until_ready(), repeat=3) / t_ref
        )
    if torch is not None:
        ta = torch.tensor(a)
        tf = lambda x: torch.sum(torch.tanh(ta @ x) ** 2) + (x @ x) ** 2
        tx = torch.tensor(x)
        ratios["torch.func.hessian"] = (
            best_time(lambda: torch.func.hessian(tf)(tx), repeat=3) / t_ref
        )
    if autograd is not None:
        import autograd.numpy as anp

        af = lambda x: anp.sum(anp.tanh(anp.dot(a, x)) ** 2) + anp.dot(x, x) ** 2
        ah = autograd.hessian(af)
        ratios["HIPS autograd"] = best_time(lambda: ah(x), repeat=3) / t_ref
    return t_ref, ratios


if __name__ == "__main__":
    main()
