"""The 8th derivative of f(x) = sin(x) exp(-x^2) by Taylor mode, against a handwritten NumPy
Taylor recurrence, SymPy's closed form, nested grad and JAX.

Run: python -m benchmarks.taylor_derivatives [--quick]   (a scalar x, and 10^4 points)
The limit is the recurrence a person would write (`recurrence`): with u = x + t, sin and cos
of u together (s_k = c_(k-1) / k, c_k = -s_(k-1) / k), exp(-u^2) from w = -u^2 = -x^2 - 2x t
- t^2 (k e_k = sum_j j w_j e_(k-j), two terms), and their product's coefficients by
convolution: every derivative 0..8 in 40-odd array operations. The rows:
`tg.jit(tg.derivatives(f, 8))` (one Taylor pass, all 9 values), SymPy's 8th derivative
lambdified with NumPy (`cse=True`; one value), `tg.jit` and `jax.jit` of 8 nested grads (of
sum(f) at an array: f is elementwise), and `jax.jit` of `jax.experimental.jet.jet` along
[1, 0, ..., 0]. Every row's 8th derivative is checked against SymPy's first. Goals (issue 26):
the Taylor row within 2x of the recurrence and 3x of SymPy, ahead of both JAX rows. Notes
under each table give the graph sizes and, at the scalar point, the cost of a call of a
jitted function that does nothing (x + 1): the floor of any `tg.jit` row there.
"""

from __future__ import annotations

import math

import numpy as np
import sympy

import tracegrad as tg
from benchmarks.harness import compare
from benchmarks.peers import ahead_note, goal_note
from benchmarks.report import cli, optional, skipped

ORDER = 8
LIMIT = "NumPy Taylor recurrence"
TAYLOR = "tracegrad jit(derivatives)"
SYMPY = "SymPy closed form (lambdify)"
NESTED = "tracegrad jit(nested grad)"
JAX_NESTED = "jax.jit(nested grad)"
JAX_JET = "jax.jit(jet)"
NOOP = "tracegrad jit(x + 1)"
FACTORIALS = [float(math.factorial(k)) for k in range(ORDER + 1)]


def f(x):
    return np.sin(x) * np.exp(-(x**2))


def recurrence(x, order=ORDER):
    """[f(x), f'(x), ..., f^(order)(x)] by the Taylor recurrences of sin, cos, exp and the
    product, along u = x + t (coefficients derivative / k!, scaled by k! at the end)."""
    s, c = [np.sin(x)], [np.cos(x)]
    e = [np.exp(-(x**2))]
    w1 = -2.0 * x  # w = -u^2: w_1 = -2x, w_2 = -1, nothing beyond
    for k in range(1, order + 1):
        s.append(c[k - 1] / k)
        c.append(s[k - 1] / -k)
        ek = w1 * e[k - 1]
        if k >= 2:
            ek = ek - 2.0 * e[k - 2]
        e.append(ek / k)
    out = []
    for k in range(order + 1):
        acc = s[0] * e[k]
        for i in range(1, k + 1):
            acc = acc + s[i] * e[k - i]
        out.append(acc * FACTORIALS[k])
    return out


def closed_form(order=ORDER):
    t = sympy.Symbol("t")
    return sympy.lambdify(t, sympy.diff(sympy.sin(t) * sympy.exp(-(t**2)), t, order), "numpy",
                          cse=True)  # fmt: skip


def nested(grad, fn, order, total):
    """The order-th derivative of an elementwise fn by nested grads of total(fn(x))."""
    d = fn
    for _ in range(order):
        d = grad(lambda x, d=d: total(d(x)))
    return d


def systems(x, jax, notes):
    """name -> the 8th derivative at x, each checked against SymPy's closed form first."""
    sym = closed_form()
    want = sym(x)

    def check(got, name):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.max(np.abs(want)),
                                   err_msg=name)  # fmt: skip

    taylor = tg.jit(tg.derivatives(f, ORDER))
    nested_tg = tg.jit(nested(tg.grad, f, ORDER, np.sum))
    noop = tg.jit(lambda x: x + 1.0)
    check(recurrence(x)[ORDER], LIMIT)
    check(taylor(x)[ORDER], TAYLOR)
    check(nested_tg(x), NESTED)
    out = {
        LIMIT: lambda: recurrence(x),
        TAYLOR: lambda: taylor(x),
        SYMPY: lambda: sym(x),
        NESTED: lambda: nested_tg(x),
    }
    sizes = {
        TAYLOR: len(tg.make_graph(tg.derivatives(f, ORDER))(x).nodes),
        NESTED: len(tg.make_graph(nested(tg.grad, f, ORDER, np.sum))(x).nodes),
    }
    if np.ndim(x) == 0:
        noop(x)
        out[NOOP] = lambda: noop(x)
    if jax is not None:
        import jax.numpy as jnp
        from jax.experimental.jet import jet

        def jf(x):
            return jnp.sin(x) * jnp.exp(-(x**2))

        jx = jnp.asarray(x)
        jn = jax.jit(nested(jax.grad, jf, ORDER, jnp.sum))
        line = [jnp.ones_like(jx)] + [jnp.zeros_like(jx)] * (ORDER - 1)
        jj = jax.jit(lambda x: jet(jf, (x,), (line,))[1][ORDER - 1])
        check(np.asarray(jn(jx)), JAX_NESTED)
        check(np.asarray(jj(jx)), JAX_JET)
        out[JAX_NESTED] = lambda: jn(jx).block_until_ready()
        out[JAX_JET] = lambda: jj(jx).block_until_ready()
        sizes[JAX_JET] = len(jax.make_jaxpr(lambda x: jet(jf, (x,), (line,)))(jx).eqns)
        sizes[JAX_NESTED] = len(jax.make_jaxpr(nested(jax.grad, jf, ORDER, jnp.sum))(jx).eqns)
    notes.append(
        "graph sizes (tracegrad: nodes; JAX: jaxpr equations): "
        + ", ".join(f"{name} {n:,}" for name, n in sizes.items())
    )
    return out


def run(opts):
    jax = optional("jax")
    if note := skipped("jax"):
        yield note
    points = {"a scalar x = 0.7": np.float64(0.7), "10^4 points": np.linspace(-3.0, 3.0, 10**4)}
    for label, x in points.items():
        notes: list[str] = []
        title = f"8th derivative of sin(x) exp(-x^2), {label}, float64"
        cmp = compare(title, systems(x, jax, notes), LIMIT, quick=opts.quick)
        cmp.notes += notes + [
            goal_note(cmp, TAYLOR, 2.0, "the NumPy recurrence"),
            f"goal: {TAYLOR} within 3.0x of SymPy: "
            f"{float(np.median(cmp.ratios(TAYLOR, SYMPY))):.2f}x, "
            + ("met" if np.median(cmp.ratios(TAYLOR, SYMPY)) <= 3.0 else "NOT met"),
            *ahead_note(cmp, TAYLOR, (JAX_NESTED, JAX_JET)),
        ]
        yield cmp.table()


if __name__ == "__main__":
    cli(run, __doc__)
