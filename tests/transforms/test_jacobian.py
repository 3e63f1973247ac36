"""jacrev, jacfwd and hessian against closed forms and each other."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg


def _problem(n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    x = rng.standard_normal(n)
    return a, x


def analytic_hessian(a, x):
    t = np.tanh(a @ x)
    w = 2 * (1 - t**2) * (1 - 3 * t**2)
    return a.T @ (w[:, None] * a) + 4 * (x @ x) * np.eye(len(x)) + 8 * np.outer(x, x)


def test_jacobians_of_a_vector_function():
    a, x = _problem(4)
    f = lambda x: np.sin(a @ x) * x[0]
    jac = (np.cos(a @ x) * x[0])[:, None] * a
    jac[:, 0] += np.sin(a @ x)
    np.testing.assert_allclose(tg.jacrev(f)(x), jac, rtol=1e-13)
    np.testing.assert_allclose(tg.jacfwd(f)(x), jac, rtol=1e-13)


def test_hessian_matches_the_closed_form_and_is_symmetric():
    a, x = _problem(6)
    f = lambda x: np.sum(np.tanh(a @ x) ** 2) + (x @ x) ** 2
    h = tg.hessian(f)(x)
    np.testing.assert_allclose(h, analytic_hessian(a, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h, h.T, rtol=1e-13, atol=1e-13)


@given(seed=st.integers(0, 1000), n=st.integers(1, 5), m=st.integers(1, 4))
def test_jacfwd_equals_jacrev(seed, n, m):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((m, n))
    x = rng.standard_normal((n,))
    f = lambda x: np.exp(np.tanh(b @ x)) * np.sum(x**2)
    np.testing.assert_allclose(tg.jacfwd(f)(x), tg.jacrev(f)(x), rtol=1e-12, atol=1e-14)


def test_pytree_inputs_and_outputs_and_argnums():
    def f(p, x):
        return {"y": p["w"] * x, "s": np.sum(p["w"]) * p["b"]}

    p = {"w": np.array([1.0, 2.0]), "b": 3.0}
    x = np.array([0.5, -1.0])
    for jac in (tg.jacrev, tg.jacfwd):
        j = jac(f, argnums=(0, 1))(p, x)
        assert j["y"][0]["w"].shape == (2, 2) and np.ndim(j["y"][0]["b"]) == 1
        np.testing.assert_allclose(j["y"][0]["w"], np.diag(x))
        np.testing.assert_allclose(j["y"][1], np.diag(p["w"]))
        np.testing.assert_allclose(j["s"][0]["w"], [3.0, 3.0])
        np.testing.assert_allclose(j["s"][0]["b"], 3.0)


def test_matrix_input_gives_out_shape_plus_in_shape():
    m = np.arange(6.0).reshape(2, 3)
    j = tg.jacrev(lambda m: np.sum(m, axis=0))(m)
    assert j.shape == (3, 2, 3)
    np.testing.assert_array_equal(j, tg.jacfwd(lambda m: np.sum(m, axis=0))(m))


def test_has_aux():
    j, aux = tg.jacrev(lambda x: (x * 2.0, "aux"), has_aux=True)(np.ones(2))
    assert aux == "aux"
    np.testing.assert_array_equal(j, 2 * np.eye(2))
    j, aux = tg.jacfwd(lambda x: (x * 2.0, x.sum()), has_aux=True)(np.ones(2))
    assert aux == 2.0


def test_jacfwd_with_aux_runs_the_function_once():
    """As in JAX: the aux comes out of the same batched pass as the Jacobian (it does not
    depend on the tangents), so `f` is not called again for it."""
    calls = []

    def f(x):
        calls.append(x)
        return np.sin(x) * 2.0, {"sum": np.sum(x), "cube": x**3}

    x = np.array([0.5, -1.0, 2.0])
    jac, aux = tg.jacfwd(f, has_aux=True)(x)
    assert len(calls) == 1
    np.testing.assert_allclose(jac, np.diag(2.0 * np.cos(x)), rtol=1e-15)
    np.testing.assert_array_equal(aux["cube"], x**3)
    assert aux["sum"] == np.sum(x) and aux["cube"].shape == (3,)


def test_jacobian_errors():
    with pytest.raises(TypeError, match="argument 0 has dtype int64"):
        tg.jacrev(lambda x: x * 2)(np.arange(3))
    with pytest.raises(TypeError, match="requires float outputs"):
        tg.jacfwd(lambda x: x > 0)(np.ones(3))
