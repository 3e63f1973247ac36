"""`tg.jet` through control flow and custom rules, against the same function without them.

Oracles: the function written as plain Python (the branch taken by an `if`, the loop unrolled)
under `tg.jet`, whose series runs only through the elementwise and linear rules
(tests/primitives/test_taylor_rules.py checks those), and, independently of every Taylor rule,
JAX's `jax.experimental.jet` on the unrolled function written with jax.numpy, and nested
`tg.jvp` along a line (the k-th derivative of f(x + t v) at 0 is k nested jvps). JAX's jet has
no rules for its loops and branches, so the unrolled form is the only JAX oracle there; for
custom_jvp and custom_vjp functions JAX's jet runs the primal function, ignoring the rules,
and so does tracegrad's.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tests.custom import rules

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jet_module = pytest.importorskip("jax.experimental.jet")
jax.config.update("jax_enable_x64", True)

RNG = np.random.default_rng(26)
X = np.array([0.3, -0.7, 1.1])
Y = np.array([0.9, 1.4, -0.4])
ORDERS = [1, 2, 3, 4, 5]


def _terms(order: int, like=X, dtype=np.float64) -> list:
    """A curved input series (every term nonzero), of `like`'s shape."""
    return [RNG.standard_normal(np.shape(like)).astype(dtype) for _ in range(order)]


def _close(got, want, rtol=1e-10, atol=1e-11):
    got, want = tg.tree.leaves(got), tg.tree.leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _nested(f, x, v, order: int) -> list:
    """[d^k/dt^k f(x + t v) at t = 0 for k = 1..order], by nested jvps."""
    fns = [lambda t: f(x + t * v)]
    for _ in range(order):
        fns.append(lambda t, _p=fns[-1]: tg.jvp(_p, (t,), (1.0,))[1])
    return [np.asarray(g(0.0)) for g in fns[1:]]


# -- cond and switch --------------------------------------------------------------------------


def _left(a, b):
    return np.sin(a) * b + a**3


def _right(a, b):
    return np.exp(a) / b - np.tanh(a * b)


def cond_fn(x, y):
    return tg.cond(np.sum(x) > 0, _left, _right, x, y)


def python_cond(x, y):
    return _left(x, y) if np.sum(x) > 0 else _right(x, y)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["true", "false"])
def test_cond_series_is_the_branch_takens_series(order, sign):
    x, sx, sy = sign * X, _terms(order), _terms(order)
    _close(tg.jet(cond_fn, (x, Y), (sx, sy)), tg.jet(python_cond, (x, Y), (sx, sy)))


def test_cond_series_in_float32():
    x, y = X.astype(np.float32), Y.astype(np.float32)
    sx, sy = _terms(3, dtype=np.float32), _terms(3, dtype=np.float32)
    got = tg.jet(cond_fn, (x, y), (sx, sy))
    want = tg.jet(python_cond, (x, y), (sx, sy))
    assert all(np.asarray(t).dtype == np.float32 for t in tg.tree.leaves(got))
    _close(got, want, rtol=1e-5, atol=1e-5)


def test_cond_where_only_one_branch_moves_an_output():
    # branch 0 returns a constant, branch 1 a moving value: the union of both is carried
    def f(x):
        return tg.cond(x[0] > 0, lambda a: np.ones_like(a), lambda a: np.cos(a), x)

    for x in (X, -X):
        s = _terms(3)
        want = tg.jet(lambda a: np.ones_like(a) if a[0] > 0 else np.cos(a), (x,), (s,))
        _close(tg.jet(f, (x,), (s,)), want)


SWITCH = [
    lambda a: np.sin(a) * a,
    lambda a: np.log1p(a * a),
    lambda a: np.sqrt(a * a + 1.0) ** 3,
]


@pytest.mark.parametrize("index", [-1, 0, 1, 2, 5])  # clamped into range, as jax.lax.switch
def test_switch_series_is_the_chosen_branchs_series(index):
    s = _terms(4)
    got = tg.jet(lambda a: tg.switch(index, SWITCH, a), (X,), (s,))
    want = tg.jet(SWITCH[min(max(index, 0), 2)], (X,), (s,))
    _close(got, want)


def test_jit_of_jet_through_cond_with_a_traced_predicate():
    s, sy = _terms(3), _terms(3)
    for x in (X, -X):
        got = tg.jit(lambda a, b: tg.jet(cond_fn, (a, b), (s, sy)))(x, Y)
        _close(got, tg.jet(python_cond, (x, Y), (s, sy)))


def test_vmap_of_jet_through_cond_with_a_batched_predicate():
    xs = np.stack([X, -X, 0.5 * X, -2.0 * X])
    s = [np.stack(t) for t in zip(*(_terms(3) for _ in range(len(xs))))]

    def per_example(fn):
        return lambda x, a, b, c: tg.jet(lambda v: fn(v, Y), (x,), ([a, b, c],))

    got = tg.vmap(per_example(cond_fn))(xs, *s)
    for i, x in enumerate(xs):
        want = per_example(python_cond)(x, *(t[i] for t in s))
        _close(tg.tree.map(lambda v, i=i: v[i], got), want)


# -- scan, fori_loop, while_loop --------------------------------------------------------------


def _step(m, k, carry, x):
    h, n = carry
    h2 = m.sin(h) * x + k * m.cos(x * h)
    return (h2, n + 1), h * x + m.exp(-h2)


def scan_fn(k, h, xs, reverse=False):
    (h, _), ys = tg.scan(lambda c, x: _step(np, k, c, x), (h, 0), xs, reverse=reverse)
    return h, ys


def python_scan(k, h, xs, reverse=False, m=np):
    carry, ys = (h, 0), [None] * len(xs)
    for i in range(len(xs) - 1, -1, -1) if reverse else range(len(xs)):
        carry, ys[i] = _step(m, k, carry, xs[i])
    return carry[0], m.stack(ys)


XS = RNG.standard_normal((4, 3))


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_series_of_consts_carry_and_xs(order, reverse):
    primals = (Y, X, XS)
    series = (_terms(order), _terms(order), _terms(order, XS))
    got = tg.jet(lambda *a: scan_fn(*a, reverse=reverse), primals, series)
    _close(got, tg.jet(lambda *a: python_scan(*a, reverse=reverse), primals, series))


def test_scan_series_against_jaxs_jet_of_the_unrolled_loop():
    # independent of every tracegrad Taylor rule (one order: JAX's jet runs op by op, slowly)
    primals = (Y, X, XS)
    series = (_terms(4), _terms(4), _terms(4, XS))
    want = jet_module.jet(lambda *a: python_scan(*a, m=jnp), primals, series)
    _close(tg.jet(scan_fn, primals, series), want)


def test_scan_series_when_only_the_xs_move():
    # the carry takes a series the body gives it (the fixpoint), zeros at the start
    s = _terms(3, XS)
    got = tg.jet(lambda xs: scan_fn(Y, X, xs), (XS,), (s,))
    _close(got, tg.jet(lambda xs: python_scan(Y, X, xs), (XS,), (s,)))


def test_scan_series_in_float32():
    k, h, xs = (a.astype(np.float32) for a in (Y, X, XS))
    series = (_terms(3, dtype=np.float32), _terms(3, dtype=np.float32), _terms(3, XS, np.float32))
    got = tg.jet(scan_fn, (k, h, xs), series)
    assert all(np.asarray(t).dtype == np.float32 for t in tg.tree.leaves(got))
    _close(got, tg.jet(python_scan, (k, h, xs), series), rtol=2e-4, atol=2e-4)


def test_jet_of_a_scan_is_one_scan_node():
    def f(x):
        return tg.jet(lambda h: scan_fn(Y, h, XS)[0], (x,), (_terms(5),))[1][4]

    graph = tg.make_graph(f)(X)
    assert [n.prim.name for n in graph.nodes].count("scan") == 1


def _loss(fn):
    return lambda h: np.sum(fn(Y, h, XS)[0] ** 2) + np.sum(fn(Y, h, XS)[1])


def test_jet_of_grad_through_scan():
    s = _terms(4)
    got = tg.jet(tg.grad(_loss(scan_fn)), (X,), (s,))
    _close(got, tg.jet(tg.grad(_loss(python_scan)), (X,), (s,)), rtol=1e-9)


def test_grad_of_jet_through_scan():
    s = _terms(4)

    def top(fn):
        return lambda h, v: np.sum(tg.jet(lambda a: fn(Y, a, XS)[0], (h,), ([v, *s[1:]],))[1][3])

    got = tg.grad(top(scan_fn), argnums=(0, 1))(X, s[0])
    _close(got, tg.grad(top(python_scan), argnums=(0, 1))(X, s[0]), rtol=1e-9)


def _fori_body(x):
    return lambda i, c: np.sin(c) * x + 0.1 * i * c


def fori_fn(x, n=4):
    return tg.fori_loop(0, n, _fori_body(x), x)


def python_fori(x, n=4):
    c = x
    for i in range(n):
        c = _fori_body(x)(i, c)
    return c


@pytest.mark.parametrize("order", ORDERS)
def test_fori_loop_derivatives_match_nested_jvp(order):
    want = _nested(python_fori, X, np.ones_like(X), order)
    _close(tg.derivatives(fori_fn, order)(X)[1:], want, rtol=1e-9)


def test_jit_of_derivatives_through_fori_loop_static_and_traced_bounds():
    want = tg.derivatives(python_fori, 5)(X)
    _close(tg.jit(tg.derivatives(fori_fn, 5))(X), want, rtol=1e-9)  # a scan
    # traced bounds: a while_loop (no trip count under jit), its carry's series through the body
    traced = tg.jit(lambda x, n: tg.derivatives(lambda v: fori_fn(v, n), 5)(x))
    _close(traced(X, 4), want, rtol=1e-9)


def _while_body(x):
    return lambda c: (c[0] + 1, np.sin(c[1]) * x + c[1] * c[1] * 0.3)


def while_fn(x):
    # the predicate reads the primal carry (its float part too): it carries no series
    return tg.while_loop(lambda c: (c[0] < 6) & (np.sum(c[1] ** 2) < 4.0), _while_body(x), (0, x))


def python_while(x):
    c = (0, x)
    while c[0] < 6 and np.sum(c[1] ** 2) < 4.0:
        c = _while_body(x)(c)
    return c


@pytest.mark.parametrize("order", ORDERS)
def test_while_loop_series_is_the_unrolled_loops(order):
    s = _terms(order)
    got = tg.jet(while_fn, (X,), (s,))
    _close(got, tg.jet(python_while, (X,), (s,)))
    assert int(got[0][0]) == python_while(X)[0]
    _close(tg.jit(lambda x: tg.jet(while_fn, (x,), (s,)))(X), got)


def test_grad_and_vmap_of_jet_through_while_loop():
    s = _terms(3)

    def top(fn):
        return lambda x: np.sum(tg.jet(fn, (x,), (s,))[1][1][2])

    # reverse mode through the loop's recorded trip count
    _close(tg.grad(top(while_fn))(X), tg.grad(top(python_while))(X))
    # a batched predicate: each lane stops on its own
    xs = np.stack([X, 0.5 * X, 2.0 * X])
    got = tg.vmap(lambda x: tg.jet(while_fn, (x,), (s,)))(xs)
    for i, x in enumerate(xs):
        _close(tg.tree.map(lambda v, i=i: v[i], got), tg.jet(python_while, (x,), (s,)))


def _nested_body(c, x):
    c2 = tg.cond(np.sum(c) > 0, lambda a: np.sin(a) * x, lambda a: np.cos(a) + x, c)
    return tg.fori_loop(0, 2, lambda i, d: d * np.tanh(d) + c2, c2)


def _python_nested_body(c, x):
    c2 = np.sin(c) * x if np.sum(c) > 0 else np.cos(c) + x
    d = c2
    for _ in range(2):
        d = d * np.tanh(d) + c2
    return d


def test_nested_control_flow_a_cond_and_a_loop_inside_a_scan():
    steps = np.array([0.5, -1.0, 2.0])

    def scanned(h):
        return tg.scan(lambda c, x: (_nested_body(c, x),) * 2, h, steps)

    def unrolled(h):
        ys = []
        for x in steps:
            h = _python_nested_body(h, x)
            ys.append(h)
        return h, np.stack(ys)

    s = _terms(4)
    want = tg.jet(unrolled, (X,), (s,))
    _close(tg.jet(scanned, (X,), (s,)), want)
    _close(tg.jit(lambda x: tg.jet(scanned, (x,), (s,)))(X), want)


# -- checkpoint, custom_jvp, custom_vjp -------------------------------------------------------


def _block(x, y):
    return np.tanh(x @ np.outer(y, y)) * np.exp(-x)


@pytest.mark.parametrize(
    "policy", [None, tg.checkpoint_policies.dots_saveable], ids=["none", "dots"]
)
def test_checkpoint_series_and_grad_of_its_series(policy):
    s, sy = _terms(5), _terms(5)
    f = tg.checkpoint(_block, policy=policy)
    _close(tg.jet(f, (X, Y), (s, sy)), tg.jet(_block, (X, Y), (s, sy)))
    graph = tg.make_graph(lambda x: tg.jet(f, (x, Y), (s, sy))[1][4])(X)
    assert [n.prim.name for n in graph.nodes].count("checkpoint") == 1

    def top(fn):
        return lambda x: np.sum(tg.jet(fn, (x, Y), (s, sy))[1][2])

    _close(tg.grad(top(f))(X), tg.grad(top(_block))(X))


CUSTOM = [rules.log1pexp, rules.safe_norm_jvp, rules.safe_norm_vjp, rules.sin_vjp]


@pytest.mark.parametrize("build", CUSTOM, ids=lambda b: b.__name__)
def test_custom_rule_functions_take_the_functions_series_as_jax(build):
    # JAX's jet calls the primal function (`.fun`), ignoring the rules (its jet of the
    # decorated function leaks a tracer in this JAX version, so `.fun` is called directly)
    f, fj = build(tg, np), build(jax, jnp)
    s = _terms(4)
    _close(tg.jet(f, (X,), (s,)), jet_module.jet(fj.fun, (X,), (s,)))


@pytest.mark.parametrize("build", CUSTOM, ids=lambda b: b.__name__)
@pytest.mark.parametrize("order", ORDERS)
def test_custom_rule_functions_series_match_nested_jvp(build, order):
    # the rules are exact here, so nested forward mode (which calls them) agrees
    f = build(tg, np)
    v = np.array([0.5, -1.0, 2.0])
    got = tg.jet(f, (X,), ([v] + [np.zeros(3)] * (order - 1),))[1]
    _close(got, _nested(f, X, v, order), rtol=1e-8)


def test_a_custom_rule_that_departs_from_the_function_is_not_followed():
    # clip_gradient is the identity with a clipped cotangent: its series is the input's (JAX)
    clip, clip_j = rules.clip_gradient(tg, np), rules.clip_gradient(jax, jnp)
    s = [10.0 * t for t in _terms(3)]
    got = tg.jet(lambda x: clip(-0.1, 0.1, np.sin(x)), (X,), (s,))
    _close(got, jet_module.jet(lambda x: clip_j(-0.1, 0.1, jnp.sin(x)), (X,), (s,)))
    _close(got, tg.jet(np.sin, (X,), (s,)))


def test_custom_jvp_inside_a_scan_closing_over_a_moving_value():
    f = rules.log1pexp(tg, np)

    def scanned(x):
        return tg.scan(lambda c, _: (f(c * x), None), x, None, length=3)[0]

    def unrolled(x):
        c = x
        for _ in range(3):
            c = f(c * x)
        return c

    s = _terms(4)
    _close(tg.jet(scanned, (X,), (s,)), tg.jet(unrolled, (X,), (s,)))


# -- what has no rule -------------------------------------------------------------------------


def test_pure_callback_inside_a_loop_is_named_in_the_error():
    def body(c, _):
        return tg.pure_callback(np.sin, c, c), None

    with pytest.raises(NotImplementedError, match="jet: the primitive 'pure_callback' has no"):
        tg.jet(lambda x: tg.scan(body, x, None, length=2)[0], (X,), (_terms(2),))
