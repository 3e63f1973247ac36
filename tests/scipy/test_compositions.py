"""tracegrad.scipy.special's Python-level functions: logsumexp (every argument), softmax,
log_softmax, polygamma, multigammaln, zeta and sinc — SciPy's bits, finite differences to
second order, vmap, JAX's derivatives — and their edge values and errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sc

import tracegrad as tg
import tracegrad.scipy.special as tsp
from tests.scipy.harness import check_function
from tracegrad.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jsp = pytest.importorskip("jax.scipy.special")

A = np.array([[0.3, -1.2, 2.0, 0.5], [1.5, 1.5, -0.7, 0.1], [-2.0, 0.4, 0.4, 0.9]])
B = np.array([0.5, 2.0, 1.0, 0.25])

LOGSUMEXP = [
    ((A,), {}),
    ((A,), {"axis": 1}),
    ((A,), {"axis": (0, 1), "keepdims": True}),
    ((A,), {"axis": -2, "b": B[None, :3].T}),  # b broadcast against a
    ((A,), {"axis": 1, "b": B}),
    ((A,), {"axis": 0, "b": np.array([1.0, -2.0, 0.5])[:, None], "return_sign": True}),
    ((np.array(0.7),), {}),  # SciPy makes 0-d input 1-d
    ((A[0],), {"b": 2.0}),  # a Python-number b promotes weakly
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(LOGSUMEXP)))
def test_logsumexp(case, dtype):
    args, kwargs = LOGSUMEXP[case]
    args = tuple(a.astype(dtype) for a in args)
    kwargs = {k: v.astype(dtype) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    double = dtype == np.float64
    check_function(tsp.logsumexp, sc.logsumexp, args, kwargs, order=2 if double else 1)
    if "b" in kwargs and isinstance(kwargs["b"], np.ndarray):  # differentiable in b too

        def in_b(b):
            return tsp.logsumexp(args[0], **{**kwargs, "b": b})

        tg.check_grads(in_b, (kwargs["b"],), order=2 if double else 1)


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("logsumexp", {"axis": 1}),
        ("logsumexp", {"axis": 0, "b": np.array([1.0, 2.0, 0.5])[:, None]}),
        ("softmax", {"axis": 0}),
        ("log_softmax", {"axis": 1}),
        ("log_softmax", {}),
    ],
)
def test_derivatives_match_jax(name, kwargs):
    """Gradient and Hessian of <u, f(a)> against jax.scipy.special."""

    def loss(module, fn):
        def f(a):
            out = fn(a, **kwargs)
            return module.sum(out * np.linspace(-1, 1, out.size).reshape(out.shape))

        return f

    ours = loss(np, getattr(tsp, name))
    theirs = loss(jax.numpy, getattr(jsp, name))
    np.testing.assert_allclose(tg.grad(ours)(A), jax.grad(theirs)(A), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tg.hessian(ours)(A), jax.hessian(theirs)(A), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [None, 0, (0, 1), -1])
def test_softmax_and_log_softmax(name, axis, dtype):
    a = A.astype(dtype)
    check_function(
        getattr(tsp, name),
        getattr(sc, name),
        (a,),
        {"axis": axis},
        order=2 if dtype == np.float64 else 1,
    )


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # SciPy's
def test_softmax_of_a_scalar_and_log_softmax_with_infinities():
    assert_bitwise_equal(tsp.log_softmax(np.float32(2.0)), sc.log_softmax(np.float32(2.0)))
    x = np.array([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf]])
    assert_bitwise_equal(tsp.log_softmax(x, axis=1), sc.log_softmax(x, axis=1))
    assert_bitwise_equal(tsp.softmax(x[:1], axis=1), sc.softmax(x[:1], axis=1))


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(n):
    x = np.linspace(0.6, 3.0, 5)
    check_function(lambda v: tsp.polygamma(n, v), lambda v: sc.polygamma(n, v), (x,))
    # d/dx polygamma(n, x) = polygamma(n + 1, x)
    np.testing.assert_allclose(
        tg.grad(lambda v: np.sum(tsp.polygamma(n, v)))(x), sc.polygamma(n + 1, x), rtol=1e-12
    )
    np.testing.assert_allclose(
        tg.grad(lambda v: np.sum(tsp.polygamma(n, v)))(x),
        jax.grad(lambda v: jsp.polygamma(n, v).sum())(x),
        rtol=1e-10,
    )


def test_polygamma_with_an_array_of_orders():
    n, x = np.array([[0], [1], [3]]), np.linspace(0.6, 3.0, 5).astype(np.float32)
    check_function(lambda v: tsp.polygamma(n, v), lambda v: sc.polygamma(n, v), (x,), order=1)


@pytest.mark.parametrize("d", [1, 3])
def test_multigammaln(d):
    a = np.array([2.5, 3.0, 7.25])
    check_function(lambda v: tsp.multigammaln(v, d), lambda v: sc.multigammaln(v, d), (a,))
    np.testing.assert_allclose(
        tg.grad(lambda v: np.sum(tsp.multigammaln(v, d)))(a),
        jax.grad(lambda v: jsp.multigammaln(v, d).sum())(a),
        rtol=1e-12,
    )


def test_multigammaln_checks_as_scipy():
    with pytest.raises(ValueError, match=r"d should be a positive integer \(dimension\)"):
        tsp.multigammaln(3.0, 2.5)
    with pytest.raises(ValueError, match=r"condition a \(.*\) > 0.5 \* \(d-1\) \(1.0\) not met"):
        tsp.multigammaln(np.array([0.9, 3.0]), 3)
    with pytest.raises(ValueError, match="not met"):  # known under grad's concrete tracing
        tg.grad(lambda a: tsp.multigammaln(a, 3))(0.9)
    # under jit the value is unknown: the check is skipped (as in JAX)
    assert np.isfinite(tg.jit(lambda a: tsp.multigammaln(a, 3))(0.9))


def test_zeta():
    s, q = np.array([[2.0], [3.5]]), np.linspace(0.5, 3.0, 4)
    check_function(tsp.zeta, sc.zeta, (s, q), on_tracers=False, wrt=(1,))
    check_function(tsp.zeta, sc.zeta, (np.array([2.0, 3.5, 0.5]),), order=0)
    np.testing.assert_allclose(
        tg.grad(lambda v: np.sum(tsp.zeta(3.0, v)))(q),
        jax.grad(lambda v: jsp.zeta(3.0, v).sum())(q),
    )


def test_zeta_refuses_what_it_cannot_do():
    with pytest.raises(NotImplementedError, match=r"scipy.special.zeta: the derivative in x"):
        tg.grad(lambda s: tsp.zeta(s, 2.0))(3.0)
    with pytest.raises(NotImplementedError, match="Riemann zeta function in x"):
        tg.grad(lambda s: tsp.zeta(s))(3.0)
    with pytest.raises(NotImplementedError, match="out= is not supported"):
        tsp.zeta(2.0, out=np.empty(()))


def test_sinc_digamma_and_jn_are_their_twins():
    assert tsp.sinc is tg.numpy.sinc and sc.sinc is np.sinc
    x = np.linspace(0.5, 2.0, 4)
    assert_bitwise_equal(tsp.digamma(x), sc.digamma(x))
    assert_bitwise_equal(tsp.jn(2, x), sc.jn(2, x))


# -- edge values ------------------------------------------------------------------------------


def test_logsumexp_of_all_minus_inf_is_minus_inf_with_a_zero_gradient():
    a = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    assert_bitwise_equal(tsp.logsumexp(a, axis=1), sc.logsumexp(a, axis=1))
    g = tg.grad(lambda v: np.sum(tsp.logsumexp(v, axis=1)))(a)
    np.testing.assert_array_equal(g, [[0.0, 0.0], [1.0, 0.0]])
    # zero weights: SciPy ignores those terms, and so do the derivatives
    b = np.array([0.0, 1.0])
    a2 = np.array([np.inf, 0.5])
    assert_bitwise_equal(tsp.logsumexp(a2, b=b), sc.logsumexp(a2, b=b))
    np.testing.assert_array_equal(
        tg.grad(lambda v: tsp.logsumexp(v, b=b))(np.array([3.0, 0.5])), [0.0, 1.0]
    )


def test_logsumexp_with_signs():
    a, b = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    out, sign = tsp.logsumexp(a, b=b, return_sign=True)
    assert_bitwise_equal((out, sign), sc.logsumexp(a, b=b, return_sign=True))
    # d/da log|e^a1 - e^a2| = (e^a1, -e^a2) / (e^a1 - e^a2)
    want = np.array([np.e, -(np.e**2)]) / (np.e - np.e**2)
    np.testing.assert_allclose(
        tg.grad(lambda v: tsp.logsumexp(v, b=b, return_sign=True)[0])(a), want
    )
    assert_bitwise_equal(tsp.logsumexp(a, b=b), sc.logsumexp(a, b=b))  # NaN, as SciPy


def test_logsumexp_of_size_zero_arrays_as_scipy():
    empty = np.zeros((0, 3))
    assert_bitwise_equal(tsp.logsumexp(empty, axis=0), sc.logsumexp(empty, axis=0))
    assert_bitwise_equal(tsp.logsumexp(empty, axis=1), sc.logsumexp(empty, axis=1))
    np.testing.assert_array_equal(tg.grad(lambda v: np.sum(tsp.logsumexp(v, axis=0)))(empty), empty)


def test_expit_and_friends_at_extremes():
    x = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    for name in ("expit", "log_expit", "log_ndtr", "ndtr", "erfc"):
        ours, theirs = getattr(tsp, name), getattr(sc, name)
        assert_bitwise_equal(ours(x), theirs(x), name)
        g = tg.grad(lambda v, f=ours: np.sum(f(v)))(x)
        assert np.all(np.isfinite(g)), (name, g)
    g = tg.grad(lambda v: np.sum(tsp.expit(v)))(x)
    np.testing.assert_array_equal(g[[0, -1]], [0.0, 0.0])
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    want = [float(mpmath.npdf(v) / mpmath.ncdf(v)) for v in x[:2]]  # d/dx log ndtr(x)
    np.testing.assert_allclose(tg.grad(lambda v: np.sum(tsp.log_ndtr(v)))(x)[:2], want, rtol=1e-9)


def test_gamma_functions_at_the_poles():
    x = np.array([0.0, -1.0, -2.0, -0.5])
    for name in ("gamma", "gammaln", "rgamma", "gammasgn", "loggamma", "psi"):
        assert_bitwise_equal(getattr(tsp, name)(x), getattr(sc, name)(x), name)
    # 1/Gamma is smooth through the poles: (-1)**n n! at -n
    g = tg.grad(lambda v: np.sum(tsp.rgamma(v)))(x[:3])
    np.testing.assert_allclose(g, [1.0, -1.0, 2.0], rtol=1e-14)


# -- refusals and errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, what",
    [
        (lambda v: tsp.iv(v, 1.5), r"scipy.special.iv: the derivative in the order v"),
        (lambda v: tsp.jv(v, 1.5), r"scipy.special.jv: the derivative in the order v"),
        (lambda a: tsp.gammainc(a, 1.5), r"scipy.special.gammainc: the derivative in a"),
        (lambda a: tsp.betainc(a, 2.0, 0.5), r"scipy.special.betainc: the derivative in a"),
        (lambda b: tsp.betainc(2.0, b, 0.5), r"scipy.special.betainc: the derivative in b"),
        (lambda df: tsp.stdtr(df, 0.5), r"scipy.special.stdtr: the derivative in df"),
    ],
)
def test_derivatives_without_a_closed_form_are_refused(fn, what):
    for transform in (tg.grad, lambda f: lambda x: tg.jvp(f, (x,), (1.0,))):
        with pytest.raises(NotImplementedError, match=what + ".*has no closed form"):
            transform(fn)(2.5)


def test_an_integer_order_has_a_zero_derivative_and_the_rest_is_differentiable():
    assert tg.grad(lambda n: tsp.yn(n, 1.5))(2.0) == 0.0
    g = tg.grad(lambda x: tsp.iv(2.5, x))(1.5)
    np.testing.assert_allclose(g, 0.5 * (sc.iv(1.5, 1.5) + sc.iv(3.5, 1.5)))


def test_complex_derivatives_are_refused_but_complex_values_work():
    z = np.array([0.5 + 0.5j, 1.0 - 0.25j])
    assert_bitwise_equal(tsp.erf(z), sc.erf(z))
    with pytest.raises(NotImplementedError, match="erf: derivatives of complex arguments"):
        tg.grad(lambda v: np.real(np.sum(tsp.erf(v))))(z)


def test_wrong_number_of_arguments():
    with pytest.raises(TypeError, match=r"tracegrad.scipy.special.erf\(\) takes 1 positional"):
        tsp.erf(1.0, 2.0)
