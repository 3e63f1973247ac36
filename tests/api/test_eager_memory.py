"""Eager memory: a call of `tg.grad` holds what a handwritten gradient holds, and nothing a
caller writes into its arrays afterwards changes a result it got (issue 20, item 2).

Memory oracle: the same chain's gradient written by hand in NumPy, keeping a forward value
only if the backward pass reads it and dropping it once read; both peaks are measured with
tracemalloc around one call after a warm-up call. Before, `tg.grad` kept every intermediate
to the end (2-3 arrays per layer here, where the oracle keeps 0-1) and copied every constant
array on every call. The slack allowed is a few arrays (temporaries of one rule, the
cotangent of one layer) and the graph's Python objects, never a number per layer.

Mutation oracle: the result before the write, compared bit for bit after it.
"""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.torch as tt

LAYERS = 30
SHAPE = (256, 256)
ONE = 8 * SHAPE[0] * SHAPE[1]  # bytes in one array (512 KiB)
SLACK = 4 * ONE


def _peak(fn):
    """(fn(), the tracemalloc peak of that call above what was allocated before it)."""
    fn()  # warm-up: lazily imported modules, caches
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return result, peak


def _data(n_weights: int = 0):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE) * 0.5
    ws = [1.0 + 0.01 * rng.standard_normal(SHAPE) for _ in range(n_weights)]
    return x, ws


# -- freed at their last use ------------------------------------------------------------------


def test_a_chain_whose_rules_read_no_values_holds_a_few_arrays():
    # multiply by a number and add one: no rule reads a forward value, so a handwritten
    # gradient holds only the cotangent, and so must tg.grad (it held every intermediate)
    x, _ = _data()

    def f(y):
        for _ in range(LAYERS):
            y = y * 1.01 + 0.5
        return np.sum(y)

    def by_hand():
        y = x
        for _ in range(LAYERS):
            y = y * 1.01 + 0.5
        g = np.ones_like(y)
        for _ in range(LAYERS):
            g = g * 1.01
        return g

    want, hand = _peak(by_hand)
    got, peak = _peak(lambda: tg.grad(f)(x))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert hand <= 4 * ONE
    assert peak <= hand + SLACK, (peak / ONE, hand / ONE)


def test_a_tanh_chain_keeps_only_what_tanhs_rule_reads():
    # tanh's rule reads its output: one array per layer, as by hand; the inputs of each tanh
    # (and of each add) are dropped with their tracers during the forward pass
    x, _ = _data()

    def f(y):
        for _ in range(LAYERS):
            y = np.tanh(y * 1.5 + 0.1)
        return np.sum(y)

    def by_hand():
        outs = [x]
        for _ in range(LAYERS):
            outs.append(np.tanh(outs[-1] * 1.5 + 0.1))
        g = np.ones_like(x)
        for _ in range(LAYERS):
            out = outs.pop()
            g = g * (1.0 - out * out) * 1.5
            del out
        return g

    want, hand = _peak(by_hand)
    got, peak = _peak(lambda: tg.grad(f)(x))
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert hand >= (LAYERS - 1) * ONE  # the oracle holds one value per layer
    assert peak <= hand + SLACK, (peak / ONE, hand / ONE)


def test_forward_values_are_freed_as_the_weights_gradients_arrive():
    # the gradient with respect to every layer's weights grows by one array per layer while
    # the backward pass goes: only if each forward value is freed after its last reader
    # does the peak stay at one layer's worth of arrays, as by hand (not two)
    x, ws = _data(LAYERS)

    def f(ws, y):
        for w in ws:
            y = np.tanh(y * w)
        return np.sum(y)

    def by_hand():
        outs = [x]
        for w in ws:
            outs.append(np.tanh(outs[-1] * w))
        g = np.ones_like(x)
        bars = [None] * len(ws)
        for i in reversed(range(len(ws))):
            out = outs.pop()
            g = g * (1.0 - out * out)
            del out
            bars[i] = g * outs[-1]
            g = g * ws[i]
        return bars

    want, hand = _peak(by_hand)
    got, peak = _peak(lambda: tg.grad(f)(ws, x))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    assert (LAYERS - 1) * ONE <= hand <= (LAYERS + 4) * ONE
    assert peak <= hand + SLACK, (peak / ONE, hand / ONE)


def test_constants_are_not_copied_on_each_call():
    # the weights are constants (not differentiated): borrowed for the call, not copied
    x, ws = _data(LAYERS)

    def f(y):
        for w in ws:
            y = y @ w * 0.1
        return np.sum(y)

    _, peak = _peak(lambda: tg.grad(f)(x))
    assert peak <= 2 * SLACK, peak / ONE  # a copy of the weights alone is LAYERS arrays


def test_tensors_keep_what_pytorch_keeps():
    # tanh saves its result, not its input; x @ W with a constant W saves W, not x: one
    # array per layer, as by hand (the tensors saved two)
    x, ws = _data(LAYERS)
    tw = [tt.tensor(w) for w in ws]

    def by_hand():
        outs = [x]
        for w in ws:
            outs.append(np.tanh(outs[-1] @ w * 0.05))
        g = np.ones_like(x)
        for w in reversed(ws):
            out = outs.pop()
            g = (g * (1.0 - out * out)) @ w.T * 0.05
            del out
        return g

    def with_tensors():
        tx = tt.tensor(x, requires_grad=True)
        y = tx
        for w in tw:
            y = (y @ w * 0.05).tanh()
        y.sum().backward()
        return tx.grad.numpy()

    want, hand = _peak(by_hand)
    got, peak = _peak(with_tensors)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert peak <= hand + SLACK, (peak / ONE, hand / ONE)


# -- writes after a call change no result -------------------------------------------------------


def _problem():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3))
    w = rng.standard_normal((3, 3))
    v = rng.standard_normal((4, 3))  # closed over
    return x, w, v


def _scribble(*arrays):
    for a in arrays:
        a[...] = 7.0


def test_writing_into_arrays_after_grad_returns_changes_neither_result_nor_later_calls():
    x, w, v = _problem()

    def f(x, w):
        return np.sum(np.tanh(x @ w) * v)

    (value, (gx, gw)) = tg.value_and_grad(f, argnums=(0, 1))(x, w)
    kept = (value, gx.copy(), gw.copy())
    g_w_only = tg.grad(f, argnums=1)(x, w)  # x and v are constants: borrowed, not copied
    kept_w = g_w_only.copy()
    assert x.flags.writeable and w.flags.writeable and v.flags.writeable  # given back
    _scribble(x, w, v)
    assert value == kept[0]
    np.testing.assert_array_equal(gx, kept[1])
    np.testing.assert_array_equal(gw, kept[2])
    np.testing.assert_array_equal(g_w_only, kept_w)
    # a later call reads the new values (nothing was cached), as NumPy would
    again = tg.grad(f, argnums=1)(x, w)
    d = (1.0 - np.tanh(x @ w) ** 2) * v
    np.testing.assert_allclose(again, x.T @ d, rtol=1e-12)


def test_writing_into_arrays_after_vjp_returns_does_not_change_vjp_fn():
    # vjp_fn outlives the call: its residuals include the primal itself (x * x) and views of
    # it (x.T for matmul's rule), which must not be the caller's memory
    x, w, v = _problem()

    def f(x, w):
        return np.tanh(x @ w) * v + x * x

    out, vjp_fn = tg.vjp(f, x, w)
    ct = np.ones_like(out)
    before = [b.copy() for b in vjp_fn(ct)]
    _scribble(x, w, v)
    after = vjp_fn(ct)
    for a, b in zip(after, before):
        np.testing.assert_array_equal(a, b)


def test_writing_into_arrays_after_linearize_returns_does_not_change_jvp_fn():
    x, w, v = _problem()

    def f(x, w):
        return np.tanh(x @ w) * v + x * x

    _, jvp_fn = tg.linearize(f, x, w)
    tangents = (np.ones_like(x), np.ones_like(w))
    before = jvp_fn(*tangents).copy()
    _scribble(x, w, v)
    np.testing.assert_array_equal(jvp_fn(*tangents), before)


def test_graphs_that_outlive_a_grad_call_copy_what_it_borrowed():
    # jit and make_graph traced inside an eager grad meet an array the grad has borrowed
    # (read-only for the call): they keep a copy, as they would of any writeable array
    x, w, v = _problem()
    scale = tg.jit(lambda y: np.sum(y * v))
    graphs = []

    def f(y):
        first = np.sum(y * v)  # borrows v
        graphs.append(tg.make_graph(lambda z: z * v)(np.zeros_like(v)))
        return first + scale(y)

    tg.grad(f)(x)
    jit_before = scale(x)
    graph_before = graphs[0](x)
    _scribble(v)
    assert scale(x) == jit_before
    np.testing.assert_array_equal(graphs[0](x), graph_before)


def test_a_function_writing_into_an_array_it_used_raises_and_gives_it_back():
    # writing into a borrowed constant after its use would change the gradient: it raises
    # at the write instead, saying why; the array is writeable again after the call
    x, w, _ = _problem()

    def f(x):
        y = np.sum(x @ w)
        w[0, 0] = 1.0
        return y

    with pytest.raises(ValueError, match="read-only") as info:
        tg.grad(f)(x)
    assert any("read-only until the call returns" in n for n in info.value.__notes__)
    assert w.flags.writeable


def test_nested_eager_calls_give_back_only_at_the_end_of_the_outermost():
    x = np.array([0.3, -0.2])
    w = np.array([1.5, 2.0])
    seen = []

    def f(x):
        return np.sum(np.sin(x * w))

    def outer(x):
        g = tg.grad(f)(x)
        seen.append(w.flags.writeable)  # the inner call has returned; this one still reads w
        return np.sum(g)

    hess_diag = tg.grad(outer)(x)
    np.testing.assert_allclose(hess_diag, -np.sin(x * w) * w * w, rtol=1e-12)
    assert seen == [False] and w.flags.writeable


def test_a_callers_read_only_array_stays_read_only():
    x, w, _ = _problem()
    w.flags.writeable = False
    tg.grad(lambda x: np.sum(x @ w))(x)
    assert not w.flags.writeable


def test_tensors_keep_a_copy_of_a_numpy_operand_they_save():
    x = tt.tensor(np.ones(3), requires_grad=True)
    c = np.arange(3.0)
    y = x * c  # multiply's rule reads c for x's gradient
    c[...] = 100.0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 2.0])
