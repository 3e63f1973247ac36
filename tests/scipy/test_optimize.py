"""tracegrad.scipy.optimize.minimize: SciPy's minimize with tracegrad's gradient, Hessian and
Hessian-vector products (and constraint Jacobians), pytree parameters, jit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

import tracegrad.numpy as tnp
from tracegrad.scipy.optimize import OptimizeResult, minimize


def rosen(x):
    return tnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


X0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])  # SciPy's tutorial


@pytest.mark.parametrize(
    "method", ["BFGS", "L-BFGS-B", "CG", "Newton-CG", "trust-ncg", "trust-krylov", "trust-exact",
               "trust-constr", "Nelder-Mead"],
)  # fmt: skip
def test_minimize_finds_the_minimum_with_the_derivatives_scipy_would_ask_for(method):
    options = {"maxiter": 20000} if method == "Nelder-Mead" else None
    result = minimize(rosen, X0, method=method, options=options, tol=1e-10)
    assert isinstance(result, OptimizeResult)
    np.testing.assert_allclose(result.x, np.ones(5), atol=1e-4)
    # SciPy's own run with its exact derivatives (other rounding: other steps, same answer)
    theirs = so.minimize(
        so.rosen, X0, method=method, options=options, tol=1e-10,
        jac=None if method == "Nelder-Mead" else so.rosen_der,
        hess=so.rosen_hess if method in ("trust-exact", "dogleg") else None,
        hessp=so.rosen_hess_prod if method in ("Newton-CG", "trust-ncg", "trust-krylov",
                                               "trust-constr") else None,
    )  # fmt: skip
    np.testing.assert_allclose(result.x, theirs.x, rtol=1e-5, atol=1e-5)
    assert result.success == theirs.success
    if method != "Nelder-Mead":
        assert result.njev > 0


def test_dogleg_gets_the_hessian():
    """dogleg needs a positive definite Hessian (Rosenbrock's is not, where it starts)."""
    a = np.array([[3.0, 1.0], [1.0, 2.0]])

    def f(x):
        return 0.5 * x @ a @ x - x[0] + tnp.sum(x**4)

    result = minimize(f, np.array([1.0, -1.0]), method="dogleg")
    assert result.success and result.nhev > 0
    g = a @ result.x - np.array([1.0, 0.0]) + 4 * result.x**3
    np.testing.assert_allclose(g, 0.0, atol=1e-5)  # dogleg's gtol


def test_pytree_parameters_are_flattened_and_rebuilt():
    target = {"w": np.array([[1.0, -2.0], [0.5, 3.0]]), "b": np.array(0.25)}

    def loss(params, scale):
        return scale * (
            tnp.sum((params["w"] - target["w"]) ** 2) + (params["b"] - target["b"]) ** 2
        )

    x0 = {"w": np.zeros((2, 2)), "b": np.array(1.0)}
    seen = []
    result = minimize(loss, x0, args=(3.0,), method="BFGS", callback=lambda p: seen.append(p))
    assert set(result.x) == {"w", "b"} and result.x["w"].shape == (2, 2)
    np.testing.assert_allclose(result.x["w"], target["w"], atol=1e-6)
    np.testing.assert_allclose(result.x["b"], target["b"], atol=1e-6)
    assert result.jac["w"].shape == (2, 2)
    assert seen and set(seen[0]) == {"w", "b"}


def test_float32_leaves_keep_their_dtype_in_the_objective():
    dtypes = []

    def loss(x):
        dtypes.append(tnp.asarray(x).dtype)
        return tnp.sum((x - 2.0) ** 2)

    result = minimize(loss, np.zeros(3, np.float32), method="L-BFGS-B")
    np.testing.assert_allclose(result.x, 2.0, atol=1e-4)
    assert set(dtypes) == {np.dtype(np.float32)}


def test_bounds_and_constraints_get_jacobians():
    def f(x):
        return (x[0] - 1.0) ** 2 + (x[1] - 2.5) ** 2

    cons = [
        {"type": "ineq", "fun": lambda x: x[0] - 2.0 * x[1] + 2.0},
        {"type": "ineq", "fun": lambda x: -x[0] - 2.0 * x[1] + 6.0},
        {"type": "ineq", "fun": lambda x: -x[0] + 2.0 * x[1] + 2.0},
    ]
    result = minimize(f, np.array([2.0, 0.0]), method="SLSQP", bounds=((0, None), (0, None)),
                      constraints=cons)  # fmt: skip
    np.testing.assert_allclose(result.x, [1.4, 1.7], atol=1e-6)  # SciPy's tutorial answer


def test_a_given_jacobian_is_used_as_it_is():
    calls = []

    def jac(x):
        calls.append(1)
        return so.rosen_der(x)

    result = minimize(rosen, X0, method="BFGS", jac=jac)
    assert calls and result.success


def test_complex_parameters_are_refused():
    with pytest.raises(TypeError, match="parameters must be real numbers"):
        minimize(lambda z: tnp.sum(tnp.abs(z)), np.array([1j]))
