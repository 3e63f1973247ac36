"""`tg.fixed_point`: implicit differentiation of x* = f(a, x*), against the analytic derivative
and JAX's documented fixed_point (a custom_vjp over `lax.while_loop`), in grad, jit, vmap and
jacrev; the iterations are never differentiated; forward mode refused clearly.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tracegrad as tg

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)

A = np.array([2.0, 9.0, 0.5])


def newton(a, x):
    """Newton's step for sqrt(a): its fixed point is sqrt(a)."""
    return 0.5 * (x + a / x)


def jax_fixed_point():
    """JAX's documentation example, verbatim but for the tolerance."""

    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, a, x_guess):
        def cond_fun(carry):
            x_prev, x = carry
            return jnp.max(jnp.abs(x_prev - x)) > 1e-12

        def body_fun(carry):
            _, x = carry
            return x, f(a, x)

        _, x_star = jax.lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
        return x_star

    def fixed_point_fwd(f, a, x_init):
        x_star = fixed_point(f, a, x_init)
        return x_star, (a, x_star)

    def rev_iter(f, packed, u):
        a, x_star, x_star_bar = packed
        _, vjp_x = jax.vjp(lambda x: f(a, x), x_star)
        return x_star_bar + vjp_x(u)[0]

    def fixed_point_rev(f, res, x_star_bar):
        a, x_star = res
        _, vjp_a = jax.vjp(lambda a: f(a, x_star), a)
        packed = (a, x_star, x_star_bar)
        (a_bar,) = vjp_a(fixed_point(functools.partial(rev_iter, f), packed, x_star_bar))
        return a_bar, jnp.zeros_like(x_star)

    fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)
    return fixed_point


def test_the_solution_and_its_gradient_are_sqrt_and_its_derivative():
    x = tg.fixed_point(newton, A, np.ones(3))
    np.testing.assert_allclose(x, np.sqrt(A), rtol=1e-15)
    g = tg.grad(lambda a: np.sum(tg.fixed_point(newton, a, np.ones(3))))
    np.testing.assert_allclose(g(A), 0.5 / np.sqrt(A), rtol=1e-12)
    np.testing.assert_allclose(tg.jit(g)(A), 0.5 / np.sqrt(A), rtol=1e-12)
    per_example = tg.vmap(tg.grad(lambda a: tg.fixed_point(newton, a, 1.0)))(A)
    np.testing.assert_allclose(per_example, 0.5 / np.sqrt(A), rtol=1e-12)


def test_matches_jax_documented_fixed_point():
    def f(a, x):  # a contraction coupling the coordinates, with parameters in a pytree
        return np.tanh(a["w"] @ x) * 0.5 + a["b"]

    def fj(a, x):
        return jnp.tanh(a["w"] @ x) * 0.5 + a["b"]

    rng = np.random.default_rng(3)
    a = {"w": rng.standard_normal((3, 3)) * 0.4, "b": rng.standard_normal(3)}
    ours = tg.jacrev(lambda a: tg.fixed_point(f, a, np.zeros(3)))(a)
    theirs = jax.jacrev(lambda a: jax_fixed_point()(fj, a, jnp.zeros(3)))(a)
    for key in ("w", "b"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-9, atol=1e-12)


def test_the_iterations_are_not_differentiated():
    graph = tg.make_graph(tg.grad(lambda a: np.sum(tg.fixed_point(newton, a, np.ones(3)))))(A)
    top = [n.prim.name for n in graph.nodes]
    # the forward solve is one custom_vjp node; the backward solve is one while_loop, not a scan
    assert "custom_vjp_call" in top and "scan" not in top


def test_forward_mode_is_refused_clearly():
    with pytest.raises(TypeError, match="applies 'while_loop' to them"):
        tg.jvp(lambda a: tg.fixed_point(newton, a, np.ones(3)), (A,), (A,))


def test_bad_arguments():
    with pytest.raises(TypeError, match="fixed_point: f must be callable, got float"):
        tg.fixed_point(1.0, A, A)
    with pytest.raises(ValueError, match="max_iter must be a positive int, got 0"):
        tg.fixed_point(newton, A, A, max_iter=0)
    with pytest.raises(ValueError, match="tol must be a non-negative number, got nan"):
        tg.fixed_point(newton, A, A, tol=float("nan"))


# -- custom_root --------------------------------------------------------------------------------


def newton_solve(lib, m):
    """Newton's method for a root, a fixed number of steps (the same operations on both sides;
    the derivative of f along ones: f is elementwise here)."""

    def solve(f, x0):
        def step(i, x):
            return x - f(x) / lib.jvp(f, (x,), (m.ones_like(x),))[1]

        return (tg.fori_loop if lib is tg else jax.lax.fori_loop)(0, 30, step, x0)

    return solve


def root_sqrt(lib, m, custom_root):
    def sqrt(a):
        f = lambda x: x * x - a  # noqa: E731 - closes over the parameter a
        # f is elementwise: its linearization is diagonal, read off along ones
        diagonal = lambda g, y: y / g(m.ones_like(y))  # noqa: E731
        return custom_root(f, m.ones_like(a), newton_solve(lib, m), diagonal)

    return sqrt


def test_custom_root_matches_jax_in_both_modes():
    ours = root_sqrt(tg, np, tg.custom_root)
    theirs = root_sqrt(jax, jnp, jax.lax.custom_root)
    np.testing.assert_allclose(ours(A), np.sqrt(A), rtol=1e-15)
    loss, loss_j = (lambda a: np.sum(ours(a))), (lambda a: jnp.sum(theirs(a)))
    np.testing.assert_allclose(tg.grad(loss)(A), jax.grad(loss_j)(A), rtol=1e-12)
    np.testing.assert_allclose(tg.grad(loss)(A), 0.5 / np.sqrt(A), rtol=1e-12)
    np.testing.assert_allclose(tg.jvp(ours, (A,), (A,))[1], jax.jvp(theirs, (A,), (A,))[1])
    np.testing.assert_allclose(tg.jit(tg.grad(loss))(A), 0.5 / np.sqrt(A), rtol=1e-12)
    scalar = root_sqrt(tg, np, tg.custom_root)
    np.testing.assert_allclose(tg.grad(tg.grad(scalar))(2.0), -0.25 * 2.0**-1.5, rtol=1e-12)
    np.testing.assert_allclose(tg.vmap(tg.grad(scalar))(A), 0.5 / np.sqrt(A), rtol=1e-12)


def test_custom_root_errors():
    with pytest.raises(NotImplementedError, match="custom_root: has_aux=True is not supported"):
        tg.custom_root(np.sin, 1.0, lambda f, x: x, lambda g, y: y, has_aux=True)
    with pytest.raises(TypeError, match="f must return a value of the same structure"):
        tg.grad(lambda a: tg.custom_root(lambda x: (x, x), a, lambda f, x: x, None))(1.0)
