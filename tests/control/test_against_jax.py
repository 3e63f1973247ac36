"""Each construct against JAX on random programs: values, grad, jvp, vmap and jit agree.

A program mixes smooth operations with drawn weights (`mix`), so JAX and tracegrad compute the
same function with the same operations; it is built twice, with NumPy and tracegrad's control
flow, and with jax.numpy and jax.lax. The JAX side is compiled once per test (the weights,
values, trip counts and indices are arguments; only `reverse` is static), because compiling a
new JAX program per example costs a second. Shapes, lengths and zero-length loops vary in
tests/control/test_loops.py, which checks tracegrad against the plain Python loops.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests import strategies as S
from tracegrad.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

SHAPE, LENGTH = (3,), 4


def _close(got, want, rtol=1e-10):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-12)


def mix(m, v, w):
    """A smooth function of `v` chosen by the weights `w` (5 of them)."""
    return w[0] * m.sin(v) + w[1] * m.tanh(v) + w[2] * v + w[3] * m.cos(v) * v + w[4] * v * v


weights = st.lists(st.sampled_from([0.0, 0.5, -1.0, 1.25]), min_size=5, max_size=5).map(np.asarray)


def _array(data, shape=SHAPE, lo=-1.0, hi=1.0):
    return S.array(data, shape, np.float64, lo, hi)


# -- scan -------------------------------------------------------------------------------------


def scan_loss(m, lax, reverse):
    def loss(w, k, init, xs):
        def step(carry, x):
            h, s = carry
            h2 = mix(m, h, w[0]) * x + k * mix(m, x, w[1])
            return (h2, s + m.sum(h2)), (mix(m, h, w[2]), x * h2)

        (h, s), (y1, y2) = lax.scan(step, init, xs, reverse=reverse)
        return m.sum(h * h) + s + m.sum(y1) + m.sum(y2 * y2)

    return loss


@functools.cache
def jax_scan(reverse):
    loss = scan_loss(jnp, jax.lax, reverse)
    grad = jax.grad(loss, argnums=(1, 2, 3))
    return (
        jax.jit(loss),
        jax.jit(grad),
        jax.jit(lambda w, p, t: jax.jvp(lambda *q: loss(w, *q), p, t)),
        jax.jit(jax.vmap(loss, in_axes=(None, None, None, 1))),
    )


@given(data=st.data(), w=st.tuples(weights, weights, weights), reverse=st.booleans())
def test_scan_values_grad_jvp_vmap_jit_agree_with_jax(data, w, reverse):
    w = np.stack(w)
    k, h, xs = _array(data), _array(data), _array(data, (LENGTH, *SHAPE))
    init = (h, np.float64(0.0))
    t = scan_loss(np, tg, reverse)
    j_val, j_grad, j_jvp, j_vmap = jax_scan(reverse)
    _close(t(w, k, init, xs), j_val(w, k, init, xs))
    tg_grad = tg.grad(t, argnums=(1, 2, 3))
    _close(tg_grad(w, k, init, xs), j_grad(w, k, init, xs))
    _close(tg.jit(tg_grad)(w, k, init, xs), j_grad(w, k, init, xs))
    tangents = (k, (h * 0.5, np.float64(1.0)), xs * 0.5)
    got = tg.jvp(lambda *q: t(w, *q), (k, init, xs), tangents)
    _close(got, j_jvp(w, (k, init, xs), tangents))
    batch = np.stack([xs, xs * 0.5, -xs], axis=1)  # batched along the xs' axis 1
    _close(tg.vmap(t, in_axes=(None, None, None, 1))(w, k, init, batch), j_vmap(w, k, init, batch))
    ks = np.stack([k, 2 * k])  # (JAX's batched gradients: test_nested_scan_inside_...)
    vgrad = tg.jit(tg.vmap(tg.grad(t, argnums=(1, 2, 3)), in_axes=(None, 0, None, None)))
    for b, kb in enumerate(ks):
        _close(tg.tree.map(lambda v, b=b: v[b], vgrad(w, ks, init, xs)), j_grad(w, kb, init, xs))


# -- fori_loop and while_loop -----------------------------------------------------------------


def fori_loss(m, lax):
    def loss(w, x, n):
        return m.sum(lax.fori_loop(1, n + 1, lambda i, c: mix(m, c, w) * (1.0 / i) + c, x))

    return loss


@functools.cache
def jax_fori(n):
    loss = functools.partial(fori_loss(jnp, jax.lax), n=n)
    return (
        jax.jit(loss),
        jax.jit(jax.grad(loss, argnums=1)),
        jax.jit(lambda w, x, t: jax.jvp(lambda v: loss(w, v), (x,), (t,))),
        jax.jit(jax.hessian(loss, argnums=1)),
        jax.jit(jax.vmap(loss, in_axes=(None, 0))),
    )


@given(data=st.data(), w=weights, n=st.sampled_from([0, 1, 5]))
def test_fori_loop_agrees_with_jax(data, w, n):
    x = _array(data)
    t = functools.partial(fori_loss(np, tg), n=n)
    j_val, j_grad, j_jvp, j_hess, j_vmap = jax_fori(n)
    _close(t(w, x), j_val(w, x))
    _close(tg.grad(t, argnums=1)(w, x), j_grad(w, x))
    _close(tg.jit(tg.grad(t, argnums=1))(w, x), j_grad(w, x))
    _close(tg.jvp(lambda v: t(w, v), (x,), (x,)), j_jvp(w, x, x))
    # five steps of a quadratic map: near x = 1 the second derivative (~-3.6e6) is a sum of
    # far larger terms, and both JAX's and tracegrad's float64 hessians are ~1e-7 (relative)
    # off its 50-digit value there (w = [1.25, 0.5, 0.5, -1, 1.25]): 1e-9 is not float64's
    _close(tg.hessian(t, argnums=1)(w, x), j_hess(w, x), rtol=1e-6)
    xs = np.stack([x, 0.5 * x])
    _close(tg.vmap(t, in_axes=(None, 0))(w, xs), j_vmap(w, xs))


def growing(m, lax):
    """A loop whose trip count depends on the values: grow until the norm passes a bound."""

    def f(w, x):
        def body(c):
            i, v = c
            return i + 1, m.tanh(mix(m, v, w)) * 0.05 + v * 1.5 + 0.1  # (always grows)

        return lax.while_loop(lambda c: m.sum(c[1] * c[1]) < 40.0, body, (0, x))

    return f


@functools.cache
def jax_while():
    f = growing(jnp, jax.lax)
    return (
        jax.jit(f),
        jax.jit(lambda w, x, t: jax.jvp(lambda v: f(w, v), (x,), (t,))),
        jax.jit(jax.vmap(f, in_axes=(None, 0))),
    )


@given(data=st.data(), w=weights)
def test_while_loop_agrees_with_jax_forward_jvp_vmap_jit(data, w):
    x, tx = _array(data, lo=0.1, hi=1.0), _array(data)
    t = growing(np, tg)
    j_val, j_jvp, j_vmap = jax_while()
    _close(t(w, x), j_val(w, x))
    _close(tg.jit(t)(w, x), j_val(w, x))
    _close(tg.jvp(lambda v: t(w, v), (x,), (tx,))[1][1], j_jvp(w, x, tx)[1][1])
    jitted_jvp = tg.jit(lambda a, b: tg.jvp(lambda v: t(w, v), (a,), (b,)))
    _close(jitted_jvp(x, tx)[1][1], j_jvp(w, x, tx)[1][1])
    # lanes stop at different steps: the batched loop runs until every lane is done
    xs = np.stack([x, x * 0.3, x * 3.0])
    _close(tg.vmap(t, in_axes=(None, 0))(w, xs), j_vmap(w, xs))
    _close(tg.jit(tg.vmap(t, in_axes=(None, 0)))(w, xs), j_vmap(w, xs))


@given(data=st.data(), w=weights)
def test_reverse_mode_of_an_eager_while_loop_is_the_python_loops_gradient(data, w):
    """Beyond JAX (which refuses): run on concrete values, the loop's trip count is known, and
    its gradient is that of the same loop written in plain Python, under tg.grad."""
    x = _array(data, lo=0.1, hi=1.0)

    def loop(x):
        return growing(np, tg)(w, x)[1]

    def python(x):
        i, v = 0, x
        while np.sum(v * v) < 40.0:
            i, v = i + 1, np.tanh(mix(np, v, w)) * 0.05 + v * 1.5 + 0.1
        return v

    def loss(f):
        return lambda x: np.sum(np.cos(f(x)))

    np.testing.assert_allclose(tg.grad(loss(loop))(x), tg.grad(loss(python))(x), rtol=1e-12)
    ct = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(tg.vjp(loop, x)[1](ct), tg.vjp(python, x)[1](ct), rtol=1e-12)
    np.testing.assert_allclose(tg.jacrev(loop)(x), tg.jacfwd(python)(x), rtol=1e-12)
    np.testing.assert_allclose(tg.hessian(loss(loop))(x), tg.hessian(loss(python))(x), rtol=1e-9)


def test_jax_refuses_reverse_mode_of_a_while_loop():
    w, x = np.array([1.0, -0.5, 0.25, 0.0, 0.5]), np.array([0.3, 0.7, 0.2])
    with pytest.raises(Exception, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda v: jnp.sum(growing(jnp, jax.lax)(w, v)[1]))(x)


# -- cond and switch --------------------------------------------------------------------------


def switch_loss(m, lax):
    def loss(w, i, x, y):
        fns = [lambda x, y, k=k: mix(m, x, w[k]) * y + k for k in range(3)]
        return m.sum(lax.switch(i, fns, x, y) ** 2)

    return loss


@functools.cache
def jax_switch():
    loss = switch_loss(jnp, jax.lax)
    grad = jax.grad(loss, argnums=(2, 3))
    return (
        jax.jit(loss),
        jax.jit(grad),
        jax.jit(lambda w, i, p, t: jax.jvp(lambda x, y: loss(w, i, x, y), p, t)),
        jax.jit(jax.vmap(loss, in_axes=(None, 0, None, None))),
        jax.jit(jax.vmap(grad, in_axes=(None, 0, None, None))),
        jax.jit(jax.vmap(loss, in_axes=(None, None, None, 0))),
    )


@given(data=st.data(), w=st.tuples(weights, weights, weights), index=st.integers(-2, 5))
def test_switch_agrees_with_jax_on_every_index_including_clamped_ones(data, w, index):
    w = np.stack(w)
    x, y = _array(data), _array(data)
    t = switch_loss(np, tg)
    j_val, j_grad, j_jvp, j_vmap, j_vgrad, j_vmap_y = jax_switch()
    i = np.int64(index)
    _close(t(w, index, x, y), j_val(w, i, x, y))
    _close(tg.grad(t, argnums=(2, 3))(w, index, x, y), j_grad(w, i, x, y))
    _close(tg.jit(tg.grad(t, argnums=(2, 3)))(w, i, x, y), j_grad(w, i, x, y))
    got = tg.jvp(lambda x, y: t(w, index, x, y), (x, y), (y, x))
    _close(got, j_jvp(w, i, (x, y), (y, x)))
    idx = np.array([index, 0, 2, -1, 7])  # each lane its own branch: all run, each selects
    _close(tg.vmap(t, in_axes=(None, 0, None, None))(w, idx, x, y), j_vmap(w, idx, x, y))
    _close(tg.vmap(tg.grad(t, argnums=(2, 3)), in_axes=(None, 0, None, None))(w, idx, x, y),
           j_vgrad(w, idx, x, y))  # fmt: skip
    ys = np.stack([y, -y])
    _close(tg.vmap(t, in_axes=(None, None, None, 0))(w, i, x, ys), j_vmap_y(w, i, x, ys))


def cond_loss(m, lax):
    def loss(w, x, y):
        out = lax.cond(
            m.sum(x) > 0, lambda a, b: mix(m, a, w[0]) * b, lambda a, b: mix(m, b, w[1]) - a, x, y
        )
        return m.sum(out * out)

    return loss


@functools.cache
def jax_cond():
    loss = cond_loss(jnp, jax.lax)
    grad = jax.grad(loss, argnums=(1, 2))
    return (
        jax.jit(loss),
        jax.jit(grad),
        jax.jit(jax.vmap(loss, in_axes=(None, 0, None))),
        jax.jit(jax.vmap(grad, in_axes=(None, 0, None))),
        jax.jit(lambda w, p, t: jax.jvp(lambda a, b: loss(w, a, b), p, t)),
    )


@given(data=st.data(), w=st.tuples(weights, weights))
def test_cond_agrees_with_jax_and_a_batched_predicate_selects(data, w):
    w = np.stack(w)
    x, y = _array(data), _array(data)
    t = cond_loss(np, tg)
    j_val, j_grad, j_vmap, j_vgrad, j_jvp = jax_cond()
    for sign in (1.0, -1.0):
        _close(t(w, sign * x, y), j_val(w, sign * x, y))
        _close(tg.jit(t)(w, sign * x, y), j_val(w, sign * x, y))
        _close(tg.grad(t, argnums=(1, 2))(w, sign * x, y), j_grad(w, sign * x, y))
        _close(tg.jit(tg.grad(t, argnums=(1, 2)))(w, sign * x, y), j_grad(w, sign * x, y))
        primals, tangents = (sign * x, y), (y, x)
        got = tg.jvp(lambda a, b: t(w, a, b), primals, tangents)
        _close(got, j_jvp(w, primals, tangents))
    xs = np.stack([x, -x, 0.5 * x])
    _close(tg.vmap(t, in_axes=(None, 0, None))(w, xs, y), j_vmap(w, xs, y))
    got = tg.vmap(tg.grad(t, argnums=(1, 2)), in_axes=(None, 0, None))(w, xs, y)
    _close(got, j_vgrad(w, xs, y))


# -- map, nesting, second order ---------------------------------------------------------------


def map_loss(m, lax, batch_size=None):
    def loss(w, v):
        ys = lax.map(lambda x: mix(m, x, w) ** 2, v, batch_size=batch_size)
        return m.sum(ys * m.cos(v))

    return loss


@functools.cache
def jax_map():
    loss = map_loss(jnp, jax.lax)
    return (
        jax.jit(lambda w, v: jax.lax.map(lambda x: mix(jnp, x, w) * 2.0, v)),
        jax.jit(jax.grad(loss, argnums=1)),
        jax.jit(lambda w, v, t: jax.jvp(lambda u: loss(w, u), (v,), (t,))),
        jax.jit(jax.vmap(loss, in_axes=(None, 1))),
    )


@given(data=st.data(), w=weights, batch_size=st.sampled_from([None, 1, 2, 3, 7]))
def test_map_agrees_with_jax(data, w, batch_size):
    xs = _array(data, (5, *SHAPE))
    j_val, j_grad, j_jvp, j_vmap = jax_map()
    _close(tg.map(lambda x: mix(np, x, w) * 2.0, xs, batch_size=batch_size), j_val(w, xs))
    t = map_loss(np, tg, batch_size)
    _close(tg.grad(t, argnums=1)(w, xs), j_grad(w, xs))
    _close(tg.jit(tg.grad(t, argnums=1))(w, xs), j_grad(w, xs))
    _close(tg.jvp(lambda u: t(w, u), (xs,), (xs * 0.5,)), j_jvp(w, xs, xs * 0.5))
    batch = np.stack([xs, -xs], axis=1)
    _close(tg.vmap(t, in_axes=(None, 1))(w, batch), j_vmap(w, batch))
    _close(tg.jit(tg.vmap(t, in_axes=(None, 1)))(w, batch), j_vmap(w, batch))


def _nested(m, lax, grad, vmap, jit):
    """A scan inside grad inside vmap inside jit, with a cond and a fori_loop in the body."""

    def inner(w, xs):
        def step(h, x):
            h = lax.cond(m.sum(h) > 0, lambda h: m.tanh(h * w + x), lambda h: m.sin(h) + x * w, h)
            h = lax.fori_loop(0, 2, lambda i, v: v * 0.9 + m.cos(v) * 0.05, h)
            return h, m.sum(h * x)

        h, ys = lax.scan(step, m.ones_like(w) * 0.1, xs)
        return m.sum(h) + m.sum(ys)

    return jit(vmap(grad(inner), in_axes=(0, None)))


def test_nested_scan_inside_grad_inside_vmap_inside_jit():
    rng = np.random.default_rng(7)
    ws = rng.uniform(-1, 1, (4, 3))
    xs = rng.uniform(-1, 1, (6, 3))
    t = _nested(np, tg, tg.grad, tg.vmap, tg.jit)(ws, xs)
    j = _nested(jnp, jax.lax, jax.grad, jax.vmap, jax.jit)(ws, xs)
    _close(t, j)
    assert_bitwise_equal(t, _nested(np, tg, tg.grad, tg.vmap, tg.jit)(ws, xs))


def test_second_order_through_scan_agrees_with_jax():
    x = np.array([0.3, -0.4, 0.8])
    xs = np.linspace(-1, 1, 12).reshape(4, 3)

    def make(m, lax):
        def f(x):
            c, ys = lax.scan(lambda c, v: (m.sin(c) * v + c, c * c), x, xs)
            return m.sum(c) + m.sum(ys)

        return f

    t, j = make(np, tg), make(jnp, jax.lax)
    want = jax.hessian(j)(x)
    _close(tg.hessian(t)(x), want)
    _close(tg.jit(tg.hessian(t))(x), want)
    _close(tg.jacfwd(tg.grad(t))(x), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_of_a_loop_whose_index_reaches_a_cond_branch_agrees_with_jax(dtype):
    # the index is a weak Python int in the body; its residual comes back strong from the
    # stacked array and must be weak again where the branch was traced with it weak
    w = np.linspace(0.5, 1.5, 3).astype(dtype)

    def loss(m, lax):
        def f(x):
            def body(i, v):
                return lax.cond(m.sum(v) > 0, lambda v: m.sin(v) * w, lambda v: v * i, v)

            return m.sum(lax.fori_loop(1, 4, body, x))

        return f

    x = np.array([1.0, -2.0, 0.3], dtype)
    want = jax.grad(loss(jnp, jax.lax))(x)
    for got in (tg.grad(loss(np, tg))(x), tg.jit(tg.grad(loss(np, tg)))(x)):
        assert got.dtype == want.dtype
        _close(got, want, rtol=1e-6 if dtype == np.float32 else 1e-10)
