"""Forward mode: jvp and linearize. Oracles: analytic derivatives, finite differences, and
the reverse mode (<u, J v> computed both ways)."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg


def test_jvp_matches_the_analytic_derivative():
    x = np.array([0.3, 1.2, -0.7])
    v = np.array([1.0, -2.0, 0.5])
    out, t = tg.jvp(lambda x: np.sin(x) * x, (x,), (v,))
    np.testing.assert_array_equal(out, np.sin(x) * x)
    np.testing.assert_allclose(t, (np.cos(x) * x + np.sin(x)) * v, rtol=1e-15)


def test_jvp_pytrees_and_several_arguments():
    p = {"w": np.array([1.0, 2.0]), "b": 0.5}
    x = np.array([3.0, -1.0])
    tp = {"w": np.array([0.1, 0.0]), "b": 1.0}
    tx = np.array([0.0, 1.0])
    out, t = tg.jvp(lambda p, x: (p["w"] * x + p["b"], np.sum(x)), (p, x), (tp, tx))
    np.testing.assert_allclose(t[0], tp["w"] * x + p["w"] * tx + tp["b"])
    assert t[1] == 1.0


def test_jvp_equals_vjp_transposed():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    f = lambda x: np.tanh(a @ x) * np.exp(x[0])
    x, v, u = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(4)
    _, jv = tg.jvp(f, (x,), (v,))
    _, vjp_fn = tg.vjp(f, x)
    assert abs(np.dot(u, jv) - np.dot(vjp_fn(u)[0], v)) < 1e-13


def test_jvp_of_output_independent_of_input_is_zero():
    out, t = tg.jvp(lambda x: np.ones(3) * 2.0, (np.ones(2),), (np.ones(2),))
    np.testing.assert_array_equal(t, np.zeros(3))


def test_linearize_reuses_the_forward_pass():
    calls = []

    def f(x):
        calls.append(1)
        return np.sin(x) * np.exp(x)

    x = np.array([0.2, 0.9])
    out, f_jvp = tg.linearize(f, x)
    assert len(calls) == 1
    for v in (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([2.0, -1.0])):
        np.testing.assert_allclose(f_jvp(v), tg.jvp(f, (x,), (v,))[1], rtol=1e-15)
    assert len(calls) == 1 + 3  # the three jvp calls above, none from f_jvp
    np.testing.assert_array_equal(out, f(x))


def test_forward_over_reverse_hessian_vector_product():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 5))
    f = lambda x: np.sum(np.tanh(a @ x) ** 2) + np.dot(x, x) ** 2
    x, v = rng.standard_normal(5), rng.standard_normal(5)
    hvp = tg.jvp(tg.grad(f), (x,), (v,))[1]
    eps = 1e-6
    fd = (tg.grad(f)(x + eps * v) - tg.grad(f)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hvp, fd, rtol=1e-6)


def test_jvp_nests_for_higher_order():
    # d^3/dx^3 sin = -cos, by forward-over-forward-over-forward
    def d(g):
        return lambda x: tg.jvp(g, (x,), (1.0,))[1]

    assert abs(d(d(d(np.sin)))(0.4) + np.cos(0.4)) < 1e-15


def test_jvp_errors():
    msg = r"tangent of leaf 0 has shape \(2,\), but its primal has shape \(3,\)"
    with pytest.raises(ValueError, match=msg):
        tg.jvp(np.sin, (np.ones(3),), (np.ones(2),))
    with pytest.raises(TypeError, match="dtype float32, but its primal has dtype float64"):
        tg.jvp(np.sin, (np.ones(3),), (np.ones(3, np.float32),))
    with pytest.raises(TypeError, match="same tree structure"):
        tg.jvp(lambda x, y: x, (1.0, 2.0), (1.0,))
    with pytest.raises(TypeError, match="tuples or lists"):
        tg.jvp(np.sin, np.ones(3), np.ones(3))


# Division by an integer once took `np.reciprocal` of the divisor, which is integer division:
# every tangent through `x / 2` was zero. Oracles: the closed forms.
@pytest.mark.parametrize("divisor", [2, np.int64(2), np.int32(2), np.array([2, 4])])
def test_forward_mode_of_division_by_an_integer(divisor):
    d = np.asarray(divisor, dtype=np.float64)
    x = np.array([0.3, -1.2])
    _, t = tg.jvp(lambda t: t / divisor, (x,), (np.ones(2),))
    np.testing.assert_allclose(t, 1.0 / d * np.ones(2), rtol=1e-15)
    np.testing.assert_allclose(tg.jacfwd(lambda x: x / divisor)(x), np.diag(1.0 / d * np.ones(2)))
    hess = tg.hessian(lambda x: np.sum(x / divisor * x))(x)
    np.testing.assert_allclose(hess, np.diag(2.0 / d * np.ones(2)), rtol=1e-15)


def test_forward_mode_of_an_integer_divided_by_a_float():
    _, t = tg.jvp(lambda t: 3 / t, (np.float32(0.5),), (np.float32(1.0),))
    assert t.dtype == np.float32
    np.testing.assert_allclose(t, -12.0, rtol=1e-6)
    _, t = tg.jvp(lambda t: np.arange(1, 3) / t, (0.5,), (1.0,))
    np.testing.assert_allclose(t, [-4.0, -8.0])
