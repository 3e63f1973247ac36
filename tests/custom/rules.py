"""The custom rules the tests share, built twice: with tracegrad (`lib=tg`, `m=np`) and with JAX
(`lib=jax`, `m=jnp`), so both sides run the same rule written with the same operations.

Each builder also takes `calls`, a list the rule appends to whenever it runs (so a test can
see that the custom rule, not the function's own derivative, was used).
"""

from __future__ import annotations

import functools


def safe_norm_vjp(lib, m, calls=None):
    """`|x|` whose gradient at 0 is 0, not NaN (the naive one divides by the norm)."""

    @lib.custom_vjp
    def safe_norm(x):
        return m.sqrt(m.sum(x * x))

    def fwd(x):
        n = m.sqrt(m.sum(x * x))
        return n, (x, n)

    def bwd(res, g):
        if calls is not None:
            calls.append("bwd")
        x, n = res
        return (g * m.where(n == 0, 0.0, x / m.where(n == 0, 1.0, n)),)

    safe_norm.defvjp(fwd, bwd)
    return safe_norm


def safe_norm_jvp(lib, m, calls=None):
    """The same safe norm with a forward-mode rule (its tangent map is linear)."""

    @lib.custom_jvp
    def safe_norm(x):
        return m.sqrt(m.sum(x * x))

    @safe_norm.defjvp
    def safe_norm_rule(primals, tangents):
        if calls is not None:
            calls.append("jvp")
        (x,), (x_dot,) = primals, tangents
        n = m.sqrt(m.sum(x * x))
        return n, m.sum(m.where(n == 0, 0.0, x / m.where(n == 0, 1.0, n)) * x_dot)

    return safe_norm


def log1pexp(lib, m, calls=None):
    """JAX's example: log(1 + e^x), whose naive derivative is NaN for large x."""

    @lib.custom_jvp
    def f(x):
        return m.log(1.0 + m.exp(x))

    @f.defjvp
    def f_jvp(primals, tangents):
        if calls is not None:
            calls.append("jvp")
        (x,), (x_dot,) = primals, tangents
        return f(x), (1.0 - 1.0 / (1.0 + m.exp(x))) * x_dot

    return f


def clip_gradient(lib, m, calls=None):
    """JAX's example: the identity, whose cotangent is clipped to [lo, hi] (nondiff args)."""

    @functools.partial(lib.custom_vjp, nondiff_argnums=(0, 1))
    def clip(lo, hi, x):
        return x

    def fwd(lo, hi, x):
        return x, None

    def bwd(lo, hi, _, g):
        if calls is not None:
            calls.append("bwd")
        return (m.clip(g, lo, hi),)

    clip.defvjp(fwd, bwd)
    return clip


def sin_vjp(lib, m, calls=None):
    """sin with its derivative given by hand (residual cos x): forward mode of it is the
    transpose of bwd (beyond JAX)."""

    @lib.custom_vjp
    def f(x):
        return m.sin(x)

    def fwd(x):
        return m.sin(x), m.cos(x)

    def bwd(c, g):
        if calls is not None:
            calls.append("bwd")
        return (c * g,)

    f.defvjp(fwd, bwd)
    return f


def pytree_vjp(lib, m, calls=None):
    """Pytree arguments and results: f({'a': a, 'b': b}, (c,)) -> {'s': .., 'p': (..,)}."""

    @lib.custom_vjp
    def f(d, t):
        return {"s": m.sin(d["a"]) * t[0], "p": (d["b"] * d["a"],)}

    def fwd(d, t):
        return f(d, t), (d["a"], d["b"], t[0])

    def bwd(res, g):
        a, b, c = res
        a_bar = g["s"] * m.cos(a) * c + g["p"][0] * b
        return {"a": a_bar, "b": g["p"][0] * a}, (m.sum(g["s"] * m.sin(a), axis=0),)

    f.defvjp(fwd, bwd)
    return f
