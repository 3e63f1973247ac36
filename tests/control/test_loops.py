"""tracegrad's control flow against the plain Python it stands for, on drawn shapes.

Forward values equal the Python loop or branch bit for bit, eagerly, in the interpreter and in
generated code; derivatives equal those of the Python version under tracegrad's own transforms
(concrete tracing unrolls it); vmap equals a loop over examples. Shapes include 0-d values and
size-1 axes, loops include zero steps. A loop is one node whatever its trip count.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests import strategies as S
from tracegrad.codegen import source
from tracegrad.testing import assert_bitwise_equal


def _shape(data):
    return S.shapes(data, max_dims=2, max_side=3)


def _leaves(x):
    return tg.tree.leaves(x)


def _close(a, b, rtol=1e-11):
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-12)


def _step(k, carry, x):
    h, n = carry
    h2 = np.sin(h) * x + k * np.cos(x)
    return (h2, n + 1), (h * x, np.sum(h2))


def scanned(k, h, xs, reverse):
    return tg.scan(lambda c, x: _step(k, c, x), (h, 0), xs, reverse=reverse)


def python_scan(k, h, xs, reverse):
    carry, ys = (h, 0), [None] * len(xs)
    for i in range(len(xs) - 1, -1, -1) if reverse else range(len(xs)):
        carry, ys[i] = _step(k, carry, xs[i])
    y1 = np.stack([y[0] for y in ys]) if ys else np.zeros((0, *np.shape(h)))
    y2 = np.stack([y[1] for y in ys]) if ys else np.zeros((0,))
    return carry, (y1, y2)


@given(data=st.data(), reverse=st.booleans())
def test_scan_matches_its_python_loop_bit_for_bit_and_in_every_transform(data, reverse):
    shape = _shape(data)
    length = data.draw(st.integers(0, 4), label="length")
    k, h, xs = S.array(data, shape), S.array(data, shape), S.array(data, (length, *shape))
    want = python_scan(k, h, xs, reverse)
    for got in (
        scanned(k, h, xs, reverse),
        tg.jit(scanned, static_argnums=3)(k, h, xs, reverse),
        tg.jit(scanned, static_argnums=3, backend="interpret")(k, h, xs, reverse),
    ):
        assert_bitwise_equal(_leaves(got), _leaves(want))

    def loss(f):
        def fn(k, h, xs):
            (c, _), (y1, y2) = f(k, h, xs, reverse)
            return np.sum(c * c) + np.sum(y1) + np.sum(np.sin(y2))

        return fn

    grads = tg.grad(loss(scanned), argnums=(0, 1, 2))
    want_grads = tg.grad(loss(python_scan), argnums=(0, 1, 2))(k, h, xs)
    _close(grads(k, h, xs), want_grads)
    _close(tg.jit(grads)(k, h, xs), want_grads)
    t = (S.array(data, shape), S.array(data, shape), S.array(data, (length, *shape)))
    _close(tg.jvp(loss(scanned), (k, h, xs), t), tg.jvp(loss(python_scan), (k, h, xs), t))
    hs = np.stack([h, h * 0.5])
    batched = tg.vmap(loss(scanned), in_axes=(None, 0, None))(k, hs, xs)
    _close(batched, np.stack([loss(python_scan)(k, v, xs) for v in hs]))


def _body(i, v):
    return np.tanh(v) * 0.5 + v * (i * 0.125)


@given(data=st.data(), lower=st.integers(-2, 2), n=st.integers(-1, 4))
def test_fori_loop_matches_the_python_for_loop(data, lower, n):
    x = S.array(data, _shape(data))
    upper = lower + n

    def python(x):
        for i in range(lower, upper):
            x = _body(i, x)
        return x

    def looped(x):
        return tg.fori_loop(lower, upper, _body, x)

    assert_bitwise_equal(looped(x), python(x))
    assert_bitwise_equal(tg.jit(looped)(x), python(x))
    _close(tg.grad(lambda v: np.sum(looped(v)))(x), tg.grad(lambda v: np.sum(python(v)))(x))
    # traced bounds make it a while_loop: forward mode and values still work under jit
    traced = tg.jit(lambda lo, hi, x: tg.fori_loop(lo, hi, _body, x))
    assert_bitwise_equal(traced(np.int64(lower), np.int64(upper), x), python(x))


@given(data=st.data(), bound=st.floats(0.5, 30.0))
def test_while_loop_matches_the_python_while_loop(data, bound):
    shape = S.shapes(data, max_dims=2, min_side=1, max_side=3)  # (empty values never grow)
    x = S.array(data, shape, lo=0.1, hi=1.0)

    def body(c):
        return c[0] + 1, c[1] * 1.25 + 0.05

    def cond(c):
        return np.sum(c[1]) < bound

    def python(x):
        c = (0, x)
        while cond(c):
            c = body(c)
        return c

    looped = lambda v: tg.while_loop(cond, body, (0, v))  # noqa: E731
    assert_bitwise_equal(_leaves(looped(x)), _leaves(python(x)))
    assert_bitwise_equal(_leaves(tg.jit(looped)(x)), _leaves(python(x)))
    # eagerly the trip count is recorded: reverse mode works, and equals the Python loop's
    _close(
        tg.grad(lambda v: np.sum(looped(v)[1] ** 2))(x),
        tg.grad(lambda v: np.sum(python(v)[1] ** 2))(x),
    )
    xs = np.stack([x, x * 2.0, x * 0.5])
    batched = tg.vmap(looped)(xs)
    for b, v in enumerate(xs):  # each lane stops on its own
        assert_bitwise_equal(_leaves(tg.tree.map(lambda a, b=b: a[b], batched)), _leaves(python(v)))


@given(data=st.data(), index=st.integers(-3, 4))
def test_switch_and_cond_match_python_branches(data, index):
    shape = _shape(data)
    x, y = S.array(data, shape), S.array(data, shape)
    branches = [lambda a, b: np.sin(a) * b, lambda a, b: a + b * 2.0, lambda a, b: np.cos(a - b)]
    clamped = min(max(index, 0), 2)
    for f in (
        lambda *a: tg.switch(index, branches, *a),
        tg.jit(lambda *a: tg.switch(index, branches, *a)),
    ):
        assert_bitwise_equal(f(x, y), branches[clamped](x, y))
    g = tg.grad(lambda a, b: np.sum(tg.switch(index, branches, a, b) ** 2), argnums=(0, 1))
    want = tg.grad(lambda a, b: np.sum(branches[clamped](a, b) ** 2), argnums=(0, 1))
    _close(g(x, y), want(x, y))
    pred = data.draw(st.booleans(), label="pred")
    got = tg.jit(lambda p, a, b: tg.cond(p, branches[1], branches[0], a, b))(pred, x, y)
    assert_bitwise_equal(got, branches[1 if pred else 0](x, y))


# -- one node, whatever the trip count ---------------------------------------------------------


def _fori(n):
    return lambda x: tg.fori_loop(0, n, lambda i, v: np.sin(v) * 0.5 + v, x)


def test_a_loop_is_one_node_whatever_its_trip_count():
    x = np.ones(3)
    small, large = tg.make_graph(_fori(10))(x), tg.make_graph(_fori(10**4))(x)
    assert len(small.nodes) == len(large.nodes)
    assert [n.prim.name for n in small.nodes] == [n.prim.name for n in large.nodes]
    # the generated code too: one nested function and one `for`, not 10^4 copies of the body
    text_small, text_large = source(small), source(large)
    assert len(text_small.splitlines()) == len(text_large.splitlines())
    assert "for _Li in range(10000):" in text_large
    # and its gradient, under jit: a forward and a backward loop, nothing unrolled
    g_small = tg.jit(tg.grad(lambda v: np.sum(_fori(10)(v)))).lower(x).graph
    g_large = tg.jit(tg.grad(lambda v: np.sum(_fori(10**4)(v)))).lower(x).graph
    assert len(g_small.nodes) == len(g_large.nodes)
    assert sum(n.prim.name == "scan" for n in g_large.nodes) == 2
    np.testing.assert_allclose(tg.jit(_fori(10**4))(x), _python_fori(x, 10**4))


def _python_fori(x, n):
    for _ in range(n):
        x = np.sin(x) * 0.5 + x
    return x


def test_disable_jit_runs_the_constructs_as_plain_python():
    calls = []

    def body(i, v):
        calls.append(i)
        return v * 2.0

    f = tg.jit(lambda x: tg.fori_loop(0, 3, body, x))
    with tg.disable_jit():
        assert f(1.0) == 8.0
        assert calls == [0, 1, 2]  # the body ran once per step, on values
        assert tg.cond(np.float64(2.0) > 1, lambda: "yes", lambda: "no") == "yes"
        assert tg.while_loop(lambda c: c < 5, lambda c: c + 2, 0) == 6
        c, ys = tg.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(3.0))
        assert c == 3.0 and ys.tolist() == [0.0, 0.0, 2.0]
        assert calls == [0, 1, 2]
    calls.clear()
    assert f(1.0) == 8.0 and len(calls) == 1  # jitted again: traced once, run as a loop
    with tg.disable_jit(), tg.disable_jit(False):
        assert f(1.0) == 8.0 and len(calls) == 1  # re-enabled inside: the cached code runs
