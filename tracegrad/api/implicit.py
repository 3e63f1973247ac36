"""Implicit differentiation: `fixed_point(f, a, x0)` and `custom_root` (JAX's).

Iterating a solver to convergence and differentiating the iterations would store every step
and differentiate the solver's path. The implicit function theorem gives the derivative at the
solution alone. `fixed_point` (x* = f(a, x*)) is JAX's documented `custom_vjp` example: the
cotangent of `a` is u @ df/da, where u solves the linear fixed point u = x*_bar + u @ df/dx;
reverse mode only (its backward rule holds a loop, which forward mode cannot transpose).
`custom_root` is `jax.lax.custom_root`, a `custom_jvp` whose rule solves the tangent system.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from tracegrad import tree
from tracegrad.api.control_flow import while_loop
from tracegrad.api.custom_derivatives import custom_jvp, custom_vjp
from tracegrad.api.forward import jvp, linearize
from tracegrad.api.reverse import stop_gradient, vjp
from tracegrad.api.subgraphs import leaf_aval, trace_subgraph
from tracegrad.interpret import eval_graph


def _iterate(step: Callable, x0, tol: float, max_iter: int):
    """x = step(x) from x0 until two iterates differ by at most `tol` (or `max_iter` steps)."""

    def cond(carry):
        i, prev, x = carry
        return np.logical_and(i < max_iter, np.max(np.abs(prev - x)) > tol)

    def body(carry):
        i, _, x = carry
        return i + 1, x, step(x)

    return while_loop(cond, body, (0, x0, step(x0)))[2]


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2))
def _fixed_point(f, tol, max_iter, a, x0):
    return _iterate(lambda x: f(a, x), x0, tol, max_iter)


def _fixed_point_fwd(f, tol, max_iter, a, x0):
    x_star = _fixed_point(f, tol, max_iter, a, x0)
    return x_star, (a, x_star)


def _fixed_point_bwd(f, tol, max_iter, res, x_star_bar):
    a, x_star = res
    _, vjp_a = vjp(lambda a: f(a, x_star), a)
    _, vjp_x = vjp(lambda x: f(a, x), x_star)
    u = _iterate(lambda u: x_star_bar + vjp_x(u)[0], x_star_bar, tol, max_iter)
    (a_bar,) = vjp_a(u)
    return a_bar, None  # the solution does not depend on the starting point


_fixed_point.defvjp(_fixed_point_fwd, _fixed_point_bwd)


def fixed_point(f: Callable, a, x0, *, tol: float = 1e-12, max_iter: int = 1000):
    """The fixed point x* = f(a, x*) reached by iterating from `x0`, with the implicit
    derivative with respect to `a` (as JAX's documented `fixed_point` example).

    Args:
      f: a function `f(a, x) -> x` (an array `x`; `a` may be a pytree) that is a contraction
        near the solution.
      a: the parameters (differentiable).
      x0: the starting point (it gets no derivative: the solution does not depend on it).
      tol: stop when two successive iterates differ by at most `tol` (max-abs).
      max_iter: stop after this many steps in any case.
    Returns:
      x*. Its gradient with respect to `a` is computed at x* by the implicit function theorem
      (another fixed-point iteration, of the linear map u -> x*_bar + u @ df/dx), never by
      differentiating the iterations. Reverse mode (grad, vjp, jacrev) only.
    """
    if not callable(f):
        raise TypeError(f"fixed_point: f must be callable, got {type(f).__name__}")
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f"fixed_point: max_iter must be a positive int, got {max_iter!r}")
    if not tol >= 0:
        raise ValueError(f"fixed_point: tol must be a non-negative number, got {tol!r}")
    return _fixed_point(f, float(tol), max_iter, a, x0)


# -- custom_root -------------------------------------------------------------------------------


@functools.partial(custom_jvp, nondiff_argnums=(0, 1, 2))
def _root(f_of, solve, tangent_solve, params, guess):
    # the solution does not depend on the starting point (JAX stops its gradient too)
    return solve(lambda x: f_of(params, x), tree.map(stop_gradient, guess))


@_root.defjvp
def _root_jvp(f_of, solve, tangent_solve, primals, tangents):
    # f(m, u*(m)) = 0, so du* = -(df/du)^-1 (df/dm dm): one tangent solve at the solution
    params, guess = primals
    params_dot, _ = tangents
    solution = _root(f_of, solve, tangent_solve, params, guess)
    _, rhs = jvp(lambda p: f_of(p, solution), (params,), (params_dot,))
    _, f_jvp = linearize(lambda x: f_of(params, x), solution)
    return solution, tree.map(np.negative, tangent_solve(f_jvp, rhs))


def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):  # fmt: skip
    """A root of `f` found by `solve(f, initial_guess)`, differentiated implicitly with respect
    to the values `f` closes over, as `jax.lax.custom_root`.

    `tangent_solve(g, y)` solves the linear system g(x) = y, where g is `f` linearized at the
    root (`lambda g, y: y / g(1.0)` for a scalar). Forward and reverse mode both work (reverse
    mode transposes the tangent solve, which must then be linear in `y`: divisions by `g`'s
    values, products, sums).
    """
    if has_aux:
        raise NotImplementedError("custom_root: has_aux=True is not supported")
    leaves, guess_tree = tree.flatten(initial_guess)
    avals = [leaf_aval(x, "custom_root") for x in leaves]
    traced = trace_subgraph(f, tree.structure((initial_guess,)), avals)
    if traced.out_tree != guess_tree:
        raise TypeError(
            f"custom_root: f must return a value of the same structure as initial_guess "
            f"({guess_tree}), got {traced.out_tree}"
        )
    graph = traced.graph

    def f_of(params, x):
        """`f` with the values it closes over (its parameters) as an argument."""
        return tree.unflatten(guess_tree, eval_graph(graph, list(params) + tree.leaves(x)))

    return _root(f_of, solve, tangent_solve, tuple(traced.consts), initial_guess)


__all__ = ["custom_root", "fixed_point"]
