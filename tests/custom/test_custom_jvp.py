"""`tg.custom_jvp` against `jax.custom_jvp`: values, jvp, grad (the rule transposed), vmap, jit
and hessian of the same rules; the rule really called; symbolic zeros, `defjvps`, nondiff
arguments; JAX's errors; and graphs that print and run as code but refuse JSON.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tracegrad as tg
from tests.custom import rules

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

X = np.array([0.3, -1.2, 2.0, 40.0])


def _close(got, want, rtol=1e-12):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-14)


@pytest.mark.parametrize("build", [rules.log1pexp, rules.safe_norm_jvp], ids=lambda b: b.__name__)
def test_rules_match_jax_in_every_mode(build):
    f, fj = build(tg, np), build(jax, jnp)

    def loss(h, m):
        return lambda x: m.sum(h(x))

    t = np.linspace(-1.0, 1.0, X.size)
    _close(f(X), fj(X))
    _close(tg.jvp(f, (X,), (t,)), jax.jvp(fj, (X,), (t,)))
    _close(tg.grad(loss(f, np))(X), jax.grad(loss(fj, jnp))(X))
    _close(tg.jit(tg.grad(loss(f, np)))(X), jax.grad(loss(fj, jnp))(X))
    _close(tg.grad(tg.jit(loss(f, np)))(X), jax.grad(loss(fj, jnp))(X))
    _close(tg.hessian(loss(f, np))(X), jax.hessian(loss(fj, jnp))(X), rtol=1e-10)
    batch = np.stack([X, -X, np.zeros(X.size)])
    _close(tg.vmap(tg.grad(loss(f, np)))(batch), jax.vmap(jax.grad(loss(fj, jnp)))(batch))
    _close(tg.vmap(f)(batch), jax.vmap(fj)(batch))
    _close(tg.jacfwd(tg.vmap(f))(batch), jax.jacfwd(jax.vmap(fj))(batch))


def test_log1pexp_is_stable_where_the_naive_gradient_is_nan():
    big = np.array([1000.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = tg.grad(lambda x: np.sum(np.log(1.0 + np.exp(x))))(big)
        stable = tg.grad(lambda x: np.sum(rules.log1pexp(tg, np)(x)))(big)
    assert np.isnan(naive).all()
    np.testing.assert_array_equal(stable, [1.0])


def test_the_rule_is_really_called_in_both_modes():
    calls = []
    f = rules.log1pexp(tg, np, calls)
    f(X)
    assert calls == []
    tg.jvp(f, (X,), (X,))
    assert calls == ["jvp"]
    tg.grad(lambda x: np.sum(f(x)))(X)
    assert calls == ["jvp", "jvp"]  # reverse mode: the rule traced once and transposed


def test_symbolic_zeros_reach_the_rule():
    seen = []

    @tg.custom_jvp
    def f(x, y):
        return x * y

    def rule(primals, tangents):
        seen.append(tuple(type(t).__name__ for t in tangents))
        (x, y), (x_dot, y_dot) = primals, tangents
        t = tg.custom_derivatives.SymbolicZero
        parts = [d * o for d, o in ((x_dot, y), (y_dot, x)) if not isinstance(d, t)]
        return x * y, sum(parts[1:], parts[0]) if parts else t(tg.Aval((3,), np.float64))

    f.defjvp(rule, symbolic_zeros=True)
    out, t = tg.jvp(lambda x: f(x, X[:3]), (X[:3],), (np.ones(3),))
    np.testing.assert_array_equal(t, X[:3])
    assert seen == [("ndarray", "SymbolicZero")]


def test_defjvps_sums_one_rule_per_argument():
    f = tg.custom_jvp(lambda x, y: np.sin(x) * y)
    f.defjvps(lambda g, ans, x, y: np.cos(x) * g * y, lambda g, ans, x, y: np.sin(x) * g)
    fj = jax.custom_jvp(lambda x, y: jnp.sin(x) * y)
    fj.defjvps(lambda g, ans, x, y: jnp.cos(x) * g * y, lambda g, ans, x, y: jnp.sin(x) * g)
    args = (X, 2.0 * X)
    want = jax.grad(lambda x, y: jnp.sum(fj(x, y)), argnums=(0, 1))(*args)
    _close(tg.grad(lambda x, y: np.sum(f(x, y)), argnums=(0, 1))(*args), want)


def test_a_function_valued_nondiff_argument():
    def build(lib, m):
        @functools.partial(lib.custom_jvp, nondiff_argnums=(0,))
        def app(g, x):
            return g(x)

        @app.defjvp
        def app_jvp(g, primals, tangents):
            (x,), (x_dot,) = primals, tangents
            return g(x), 2.0 * x_dot

        return lambda x: m.sum(app(lambda v: m.sin(v) * v, x))

    _close(tg.grad(build(tg, np))(X), jax.grad(build(jax, jnp))(X))


# -- errors -------------------------------------------------------------------------------------


def _with_rule(rule):
    f = tg.custom_jvp(np.sin)
    f.defjvp(rule)
    return f


def test_defjvp_never_called_is_an_error():
    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function sin"):
        tg.custom_jvp(np.sin)(X)


def test_a_rule_that_does_not_return_a_pair_is_an_error():
    f = _with_rule(lambda p, t: t[0])
    with pytest.raises(TypeError, match="must produce a pair .* representing primal and tangent"):
        tg.jvp(f, (X,), (X,))


def test_a_tangent_of_the_wrong_dtype_is_an_error():
    f = _with_rule(lambda p, t: (np.sin(p[0]), (np.cos(p[0]) * t[0]).astype(np.float32)))
    with pytest.raises(TypeError, match=r"Expected f64\[4\] \(tangent type of f64\[4\]\) but"):
        tg.jvp(f, (X,), (X,))


def test_a_primal_output_of_the_wrong_structure_is_an_error():
    f = _with_rule(lambda p, t: ((np.sin(p[0]),), (t[0],)))
    with pytest.raises(TypeError, match="first element had container/pytree structure"):
        tg.jvp(f, (X,), (X,))


def test_reverse_mode_refuses_a_rule_not_linear_in_its_tangents():
    f = _with_rule(lambda p, t: (np.sin(p[0]), np.cos(p[0]) * t[0] * t[0]))
    tg.jvp(f, (X,), (X,))  # forward mode runs the rule as it is
    with pytest.raises(TypeError, match="rule of sin is not linear in its tangents"):
        tg.grad(lambda x: np.sum(f(x)))(X)


def test_differentiating_a_closed_over_value_is_an_error():
    def outer(c):
        f = tg.custom_jvp(lambda x: x * c)
        f.defjvp(lambda p, t: (p[0] * c, t[0] * c))
        return np.sum(f(X))

    with pytest.raises(TypeError, match="differentiation of a custom_jvp function with respect"):
        tg.grad(outer)(2.0)


# -- graphs -------------------------------------------------------------------------------------


def test_the_graph_prints_runs_as_code_and_refuses_json():
    f = rules.log1pexp(tg, np)
    g = tg.make_graph(lambda x: np.sum(f(x)))(X)
    assert "custom_jvp_call[call={f}, jvp_rule=<function f_jvp>, n_consts=0]" in str(g)
    with pytest.raises(ValueError, match="param 'jvp_rule' is a Python callable"):
        tg.ir.dumps(g)
    want = np.sum(np.log(1.0 + np.exp(X)))
    assert tg.jit(lambda x: np.sum(f(x)))(X) == want == g(X)
    np.testing.assert_array_equal(
        tg.jit(tg.grad(lambda x: np.sum(f(x))))(X), tg.grad(lambda x: np.sum(f(x)))(X)
    )


def test_pytorch_style_tensors_go_through_the_transposed_rule():
    torch = tg.torch
    f = rules.log1pexp(tg, np)
    x = torch.tensor(X, requires_grad=True)
    y = f(x)
    assert y.grad_fn.name() == "CustomJvpCallBackward0"
    (g,) = torch.autograd.grad(y.sum(), [x], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 1.0 - 1.0 / (1.0 + np.exp(X)), rtol=1e-15)
    (h,) = torch.autograd.grad(g.sum(), [x])  # the transposed rule differentiates again
    np.testing.assert_allclose(h.numpy(), np.exp(X) / (1.0 + np.exp(X)) ** 2, rtol=1e-12)
