"""`tg.custom_vjp` against `jax.custom_vjp`: values, grad, vmap and jit of the same rules, the
rule really called, pytrees and nondiff arguments; and beyond JAX, forward mode (jvp, jacfwd,
hessian) by transposing bwd, against analytic derivatives of what the rule describes.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tests.custom import rules

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

X = np.array([0.3, -1.2, 2.0])


def _close(got, want, rtol=1e-12):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=1e-14)


# -- against JAX --------------------------------------------------------------------------------


@pytest.mark.parametrize("jit_inside", [False, True])
def test_safe_norm_matches_jax_under_grad_jit_and_vmap(jit_inside):
    f, fj = rules.safe_norm_vjp(tg, np), rules.safe_norm_vjp(jax, jnp)
    g = tg.grad(tg.jit(f) if jit_inside else f)
    _close(f(X), fj(X))
    _close(g(X), jax.grad(fj)(X))
    _close(tg.jit(tg.grad(f))(X), jax.grad(fj)(X))
    batch = np.stack([X, 2 * X, np.zeros(3)])
    _close(tg.vmap(g)(batch), jax.vmap(jax.grad(fj))(batch))
    _close(tg.vmap(f)(batch), jax.vmap(fj)(batch))


def test_safe_norm_gradient_at_zero_is_finite_where_the_naive_one_is_nan():
    zero = np.zeros(3)
    with np.errstate(invalid="ignore", divide="ignore"):
        naive = tg.grad(lambda x: np.sqrt(np.sum(x * x)))(zero)
    assert np.isnan(naive).all()
    safe = tg.grad(rules.safe_norm_vjp(tg, np))(zero)
    np.testing.assert_array_equal(safe, np.zeros(3))
    np.testing.assert_array_equal(safe, jax.grad(rules.safe_norm_vjp(jax, jnp))(zero))


def test_clip_gradient_with_nondiff_argnums_matches_jax():
    f, fj = rules.clip_gradient(tg, np), rules.clip_gradient(jax, jnp)

    def loss(lib_f, m):
        return lambda x: m.sum(lib_f(-0.5, 0.5, x) * np.array([3.0, -0.1, -2.0]))

    _close(tg.grad(loss(f, np))(X), jax.grad(loss(fj, jnp))(X))
    np.testing.assert_array_equal(tg.grad(loss(f, np))(X), [0.5, -0.1, -0.5])
    _close(tg.jit(tg.grad(loss(f, np)))(X), jax.grad(loss(fj, jnp))(X))
    batch = np.stack([X, -X])
    _close(tg.vmap(tg.grad(loss(f, np)))(batch), jax.vmap(jax.grad(loss(fj, jnp)))(batch))


def test_pytree_arguments_and_results_match_jax():
    f, fj = rules.pytree_vjp(tg, np), rules.pytree_vjp(jax, jnp)
    d = {"a": np.array([0.3, 0.5]), "b": np.array([1.5, 2.0])}
    t = (np.array(0.7),)

    def loss(h, m):
        return lambda d, t: m.sum(h(d, t)["s"]) + m.sum(h(d, t)["p"][0] ** 2)

    _close(f(d, t), fj(d, t))
    want = jax.grad(loss(fj, jnp), argnums=(0, 1))(d, t)
    _close(tg.grad(loss(f, np), argnums=(0, 1))(d, t), want)
    _close(tg.jit(tg.grad(loss(f, np), argnums=(0, 1)))(d, t), want)


def test_the_custom_bwd_is_really_called():
    calls = []
    f = rules.clip_gradient(tg, np, calls)
    assert f(0.0, 1.0, X) is X  # outside any transform the function simply runs
    assert calls == []
    tg.grad(lambda x: np.sum(f(0.0, 1.0, x)))(X)
    assert calls == ["bwd"]
    tg.jit(tg.grad(lambda x: np.sum(f(0.0, 1.0, x))))(X)
    assert calls == ["bwd", "bwd"]  # traced once; the compiled graph holds its derivative
    tg.vmap(tg.grad(lambda x: np.sum(f(0.0, 1.0, x))))(np.stack([X, X]))
    assert calls == ["bwd"] * 3  # batched: bwd traced once under vmap


def test_a_keyword_argument_is_resolved_to_its_position():
    f = rules.clip_gradient(tg, np)
    got = tg.grad(lambda x: np.sum(f(-0.5, 0.5, x=x) * 3.0))(X)
    np.testing.assert_array_equal(got, np.full(3, 0.5))


# -- beyond JAX: forward mode by transposing bwd -------------------------------------------------


def test_jax_refuses_forward_mode_of_a_custom_vjp_function():
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        jax.jvp(rules.sin_vjp(jax, jnp), (X,), (X,))


def test_jvp_jacfwd_and_hessian_of_a_custom_vjp_function_are_analytic():
    calls = []
    f = rules.sin_vjp(tg, np, calls)
    out, t = tg.jvp(f, (X,), (np.array([1.0, 2.0, 3.0]),))
    np.testing.assert_allclose(t, np.cos(X) * [1.0, 2.0, 3.0], rtol=1e-15)
    assert calls == ["bwd"]  # traced once, then transposed
    np.testing.assert_allclose(tg.jacfwd(f)(X), np.diag(np.cos(X)), rtol=1e-15)
    # the residual cos(x) depends on x: second derivatives come through it
    hess = tg.hessian(lambda x: np.sum(f(x)))(X)
    np.testing.assert_allclose(hess, np.diag(-np.sin(X)), rtol=1e-15)
    np.testing.assert_allclose(tg.grad(tg.grad(lambda x: f(x)))(0.4), -np.sin(0.4), rtol=1e-15)
    np.testing.assert_allclose(tg.jit(tg.hessian(lambda x: np.sum(f(x))))(X), hess, rtol=1e-15)


def test_forward_mode_of_the_safe_norm_is_its_analytic_derivative():
    f = rules.safe_norm_vjp(tg, np)
    n = np.linalg.norm(X)
    np.testing.assert_allclose(tg.jacfwd(f)(X), X / n, rtol=1e-14)
    want = (np.eye(3) - np.outer(X, X) / n**2) / n
    np.testing.assert_allclose(tg.hessian(f)(X), want, rtol=1e-13)
    np.testing.assert_allclose(tg.jacfwd(tg.grad(f))(X), want, rtol=1e-13)
    np.testing.assert_array_equal(tg.jvp(f, (np.zeros(3),), (X,))[1], 0.0)


def test_forward_mode_of_pytrees_agrees_with_reverse_mode():
    f = rules.pytree_vjp(tg, np)
    d = {"a": np.array([0.3, 0.5]), "b": np.array([1.5, 2.0])}
    t = (np.array(0.7),)
    fwd = tg.jacfwd(lambda d, t: f(d, t)["s"], argnums=(0, 1))(d, t)
    rev = tg.jacrev(lambda d, t: f(d, t)["s"], argnums=(0, 1))(d, t)
    _close(fwd, rev, rtol=1e-14)


def test_forward_mode_refuses_a_bwd_that_is_not_linear_in_g():
    f = tg.custom_vjp(np.sin)
    f.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, g: (c * g * g,))
    assert np.isfinite(tg.grad(lambda x: np.sum(f(x)))(X)).all()  # reverse mode runs bwd as is
    with pytest.raises(TypeError, match="bwd rule of sin is not linear in its cotangents as far"):
        tg.jvp(f, (X,), (X,))


def test_forward_mode_refuses_a_bwd_that_cannot_be_traced():
    f = tg.custom_vjp(np.sin)
    f.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda c, g: (c * np.asarray(g),))
    with pytest.raises(TypeError, match="transposes its bwd rule, which must then be traceable"):
        tg.jvp(f, (X,), (X,))


# -- errors -------------------------------------------------------------------------------------


def _with_bwd(bwd, fwd=None):
    @tg.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(fwd or (lambda x, y: (x * y, (x, y))), bwd)
    return lambda x, y: np.sum(f(x, y))


def test_a_bwd_returning_the_wrong_number_of_cotangents_is_an_error():
    loss = _with_bwd(lambda res, g: (g * res[1],))
    with pytest.raises(TypeError, match="must produce a tuple of length equal to the number"):
        tg.grad(loss)(X, X)


def test_a_bwd_returning_a_cotangent_of_the_wrong_shape_is_an_error():
    loss = _with_bwd(lambda res, g: (g * res[1], np.sum(g)))
    with pytest.raises(ValueError, match=r"at output\[1\] the bwd rule produced an output of type"):
        tg.grad(loss, argnums=1)(X, X)


def test_a_bwd_returning_a_cotangent_of_the_wrong_dtype_is_an_error():
    loss = _with_bwd(lambda res, g: ((g * res[1]).astype(np.float32), g * res[0]))
    with pytest.raises(ValueError, match=r"output\[0\] .* type f32\[3\] corresponding to an input"):
        tg.grad(loss)(X, X)


def test_a_bwd_returning_the_wrong_pytree_structure_is_an_error():
    loss = _with_bwd(lambda res, g: ({"x": g * res[1]}, g * res[0]))
    with pytest.raises(TypeError, match="same container \\(pytree\\) structure as the args"):
        tg.grad(loss)(X, X)


def test_pytorch_style_tensors_go_through_the_same_rule():
    torch = tg.torch
    calls = []
    f = rules.sin_vjp(tg, np, calls)
    x = torch.tensor(X, requires_grad=True)
    y = f(x)
    assert y.grad_fn.name() == "CustomVjpCallBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(X), rtol=1e-15)
    assert calls == ["bwd"]


def test_a_bwd_may_return_none_for_an_argument():
    loss = _with_bwd(lambda res, g: (g * res[1], None))
    x_bar, y_bar = tg.grad(loss, argnums=(0, 1))(X, 2 * X)
    np.testing.assert_array_equal(x_bar, 2 * X)
    np.testing.assert_array_equal(y_bar, 0.0)


def test_defvjp_never_called_is_an_error():
    f = tg.custom_vjp(np.sin)
    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function sin"):
        f(X)


def test_a_fwd_that_does_not_return_a_pair_is_an_error():
    loss = _with_bwd(lambda res, g: (g, g), fwd=lambda x, y: x * y)
    with pytest.raises(TypeError, match="must produce a pair .* instead of a pair the fwd rule"):
        tg.grad(loss)(X, X)


def test_a_fwd_whose_output_differs_from_the_function_is_an_error():
    loss = _with_bwd(lambda res, g: (g, g), fwd=lambda x, y: ((x * y)[:2], None))
    with pytest.raises(TypeError, match="fwd rule output's first element had shapes/dtypes"):
        tg.grad(loss)(X, X)


def test_a_traced_nondiff_argument_is_an_error():
    f = rules.clip_gradient(tg, np)
    with pytest.raises(TypeError, match="Tracers cannot be passed as non-differentiable"):
        tg.grad(lambda x: np.sum(f(x[0], 1.0, x)))(X)


def test_differentiating_a_closed_over_value_is_an_error():
    def outer(c):
        @tg.custom_vjp
        def f(x):
            return x * c

        f.defvjp(lambda x: (x * c, None), lambda _, g: (g,))
        return np.sum(f(X))

    assert tg.jit(outer)(2.0) == np.sum(X * 2.0)  # no derivative asked: fine
    with pytest.raises(TypeError, match="differentiation of a custom_vjp function with respect"):
        tg.grad(outer)(2.0)


# -- graphs: printing, serialization, generated code ---------------------------------------------


def test_the_graph_prints_runs_as_code_and_refuses_json():
    f = rules.safe_norm_vjp(tg, np)
    g = tg.make_graph(tg.grad(f))(X)
    text = str(g)
    assert "custom_vjp_call[call={safe_norm}" in text
    assert "vjp_rules=custom_vjp(safe_norm, fwd=fwd, bwd=bwd)" in str(tg.make_graph(f)(X))
    with pytest.raises(ValueError, match="custom_vjp_call.*'vjp_rules' has type VjpRules, which"):
        tg.ir.dumps(tg.make_graph(f)(X))
    np.testing.assert_array_equal(tg.jit(tg.grad(f))(X), tg.grad(f)(X))
    np.testing.assert_array_equal(g(X), tg.grad(f)(X))


def test_symbolic_zeros_give_fwd_its_primals_wrapped():
    seen = []

    @tg.custom_vjp
    def f(x, n):
        return x * n

    def fwd(x, n):
        seen.append((type(x).__name__, x.perturbed, n.perturbed))
        return x.value * n.value, n.value

    f.defvjp(fwd, lambda n, g: (g * n, None), symbolic_zeros=True)
    got = tg.grad(lambda x: np.sum(f(x, np.arange(3))))(X)
    np.testing.assert_array_equal(got, np.arange(3.0))
    assert seen == [("CustomVJPPrimal", True, False)]  # an integer argument is not perturbed


def test_inside_a_scan_in_both_modes():
    f = rules.sin_vjp(tg, np)

    def loss(x, g):
        return np.sum(tg.scan(lambda c, _: (g(c), None), x, None, length=3)[0])

    want = tg.grad(loss)(X, np.sin)
    np.testing.assert_allclose(tg.grad(loss)(X, f), want, rtol=1e-15)
    np.testing.assert_allclose(tg.jit(tg.grad(loss), static_argnums=1)(X, f), want, rtol=1e-15)
    np.testing.assert_allclose(tg.jacfwd(loss)(X, f), want, rtol=1e-15)


def test_symbolic_zeros_reach_bwd_for_an_unused_output():
    seen = []

    @tg.custom_vjp
    def f(x):
        return np.sin(x), np.cos(x)

    def bwd(res, g):
        seen.append(tuple(type(c).__name__ for c in g))
        zero = tg.custom_derivatives.SymbolicZero
        parts = [c * d(res) for c, d in zip(g, (np.cos, lambda r: -np.sin(r)))
                 if not isinstance(c, zero)]  # fmt: skip
        return (sum(parts[1:], parts[0]),)

    f.defvjp(lambda x: (f(x.value), x.value), bwd, symbolic_zeros=True)
    got = tg.grad(lambda x: np.sum(f(x)[0]))(X)
    np.testing.assert_allclose(got, np.cos(X), rtol=1e-15)
    assert seen == [("ndarray", "SymbolicZero")]
    np.testing.assert_allclose(
        tg.vmap(tg.grad(lambda x: f(x)[0]))(X), np.cos(X), rtol=1e-15
    )  # under vmap the zero is materialized
