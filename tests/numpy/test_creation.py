"""tracegrad.numpy's creation functions, constants and dtypes (jax.numpy's namespace).

Oracles: NumPy (values, dtypes and bits; outside a trace the functions return NumPy's own
results, viewed as `tnp.ndarray`), finite differences and JAX for the functions that are
differentiable in their arguments (linspace, logspace, geomspace, full, array of traced
values, diag, meshgrid), and a Python loop for vmap (tests/numpy/harness.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.testing import assert_bitwise_equal

CALLS = [
    ("zeros", (3,), {}),
    ("zeros", ((2, 3),), {"dtype": np.int32}),
    ("ones", ((2, 2),), {}),
    ("full", ((2, 3), 1.5), {}),
    ("full", (3, 7), {"dtype": np.float32}),
    ("zeros_like", (np.ones((2, 3), np.float32),), {}),
    ("ones_like", (np.ones(4, np.int8),), {"dtype": float}),
    ("full_like", (np.ones(3), 2.5), {}),
    ("arange", (5,), {}),
    ("arange", (1.0, 3.0, 0.25), {}),
    ("arange", (2, 9, 3), {"dtype": np.float32}),
    ("linspace", (0.0, 1.0, 7), {}),
    ("linspace", (2, 3), {"num": 5, "endpoint": False, "retstep": True}),
    ("logspace", (0.0, 2.0, 4), {}),
    ("geomspace", (1.0, 1000.0, 4), {}),
    ("eye", (3,), {}),
    ("eye", (3, 4), {"k": 1, "dtype": np.float32}),
    ("identity", (2,), {}),
    ("tri", (3, 4), {"k": -1}),
    ("diag", (np.arange(3.0),), {"k": 1}),
    ("diag", (np.arange(9.0).reshape(3, 3),), {"k": -1}),
    ("diagflat", (np.arange(4.0).reshape(2, 2),), {}),
    ("indices", ((2, 3),), {}),
    ("array", ([[1, 2.5], [3, 4]],), {}),
    ("array", ([np.float32(1), 2],), {}),
    ("array", (np.arange(3),), {"dtype": np.float32, "ndmin": 2}),
    ("asarray", ([1.0, 2.0],), {}),
    ("copy", (np.arange(3.0),), {}),
]


@pytest.mark.parametrize("name, args, kwargs", CALLS, ids=[c[0] for c in CALLS])
def test_outside_a_trace_the_values_are_numpys_as_tnp_ndarray(name, args, kwargs):
    got = getattr(tnp, name)(*args, **kwargs)
    expected = getattr(np, name)(*args, **kwargs)
    assert_bitwise_equal(got, expected)
    for leaf in tg.tree.leaves(got):
        if isinstance(leaf, np.ndarray):
            assert isinstance(leaf, tnp.ndarray)


def test_empty_is_zeros():
    # NumPy leaves the memory uninitialised; nothing may depend on it, so zeros are as good
    assert_bitwise_equal(tnp.empty((2, 3)), np.zeros((2, 3)))
    assert_bitwise_equal(tnp.empty_like(np.ones(2, np.int16)), np.zeros(2, np.int16))


def test_meshgrid_and_fromfunction():
    x, y = np.arange(3.0), np.arange(2.0) + 0.5
    for kwargs in ({}, {"indexing": "ij"}, {"sparse": True}):
        assert_bitwise_equal(tnp.meshgrid(x, y, **kwargs), np.meshgrid(x, y, **kwargs))
        got = tg.make_graph(lambda a, b, kw=kwargs: tnp.meshgrid(a, b, **kw))(x, y)(x, y)
        assert_bitwise_equal(got, np.meshgrid(x, y, **kwargs))
    f = lambda i, j: i * 10 + j  # noqa: E731
    assert_bitwise_equal(tnp.fromfunction(f, (2, 3)), np.fromfunction(f, (2, 3)))


def test_constants_and_dtypes_are_numpys_own():
    for name in ("pi", "e", "inf", "newaxis", "euler_gamma", "float32", "float64", "complex64"):
        assert getattr(tnp, name) is getattr(np, name)
    assert np.isnan(tnp.nan)
    for name in ("int32", "int64", "bool_", "finfo", "iinfo", "dtype", "issubdtype"):
        assert getattr(tnp, name) is getattr(np, name)
    assert tnp.finfo(tnp.float32).eps == np.finfo(np.float32).eps


# -- differentiable in their arguments --------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "name, args, kwargs",
    [
        ("linspace", (0.25, 2.0), {"num": 6}),
        ("linspace", ([0.0, 1.0], [2.0, -1.0]), {"num": 4, "axis": 1}),
        ("linspace", (0.5, 1.5), {"num": 5, "endpoint": False}),
        ("linspace", (1.0, 1.0), {"num": 3}),  # a zero step: NumPy's other path
        ("logspace", (0.0, 1.5), {"num": 5}),
        ("logspace", (0.5, 1.0), {"num": 4, "base": 2.0}),
        ("geomspace", (2.0, 50.0), {"num": 5}),
        ("geomspace", (-1.0, -8.0), {"num": 4}),
    ],
)
def test_ranges_with_traced_endpoints(name, args, kwargs, dtype):
    args = tuple(np.asarray(a, dtype) for a in args)
    check_name(name, args, kwargs, rtol=2e-3 if dtype == np.float32 else None)


def test_linspace_matches_jax_gradients():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    w = np.cos(np.arange(7.0))
    ours = tg.grad(lambda a, b: np.sum(tnp.linspace(a, b, 7) * w), argnums=(0, 1))(0.5, 2.0)
    theirs = jax.grad(lambda a, b: jnp.sum(jnp.linspace(a, b, 7) * w), argnums=(0, 1))(0.5, 2.0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)


@pytest.mark.parametrize("dtype", FLOATS)
def test_diag_diagflat_full_of_traced_values(dtype):
    v = np.array([0.5, -1.0, 2.0], dtype)
    check_name("diag", (v,), {"k": 1})
    check_name("diag", (v,), {"k": -2})
    check_name("diag", (np.outer(v, v),), {"k": 1})
    check_name("diagflat", (np.outer(v, v[:2]),), {"k": -1})
    g = tg.grad(lambda f: np.sum(tnp.full((2, 3), f) * 2.0))(dtype(1.5))
    assert g == 12.0 and g.dtype == dtype
    g = tg.grad(lambda f: np.sum(tnp.full_like(np.ones(4), f)))(1.5)
    assert g == 4.0


def test_array_of_traced_values_stacks_with_numpys_dtype():
    def f(a, b):
        return tnp.array([[a, 2.0 * b], [b, 1]])

    a, b = np.float32(1.5), np.float32(-2.0)
    expected = np.array([[a, 2.0 * b], [b, 1]])  # NumPy's dtype: float32 with an int64 1
    got = tg.make_graph(f)(a, b)(a, b)
    assert_bitwise_equal(got, expected)
    ga, gb = tg.grad(lambda a, b: np.sum(f(a, b) ** 2), argnums=(0, 1))(1.5, -2.0)
    assert (ga, gb) == (3.0, -20.0)
    got = tg.jit(lambda a: tnp.array([a, a * 2], dtype=np.float32, ndmin=2))(np.float64(3.0))
    assert_bitwise_equal(got, np.array([[3.0, 6.0]], np.float32))
    assert_bitwise_equal(
        tg.vmap(lambda a: tnp.asarray([a, -a]))(np.arange(3.0)).T[1], -np.arange(3.0)
    )


def test_like_functions_of_a_traced_array_are_constants():
    g = tg.grad(lambda x: np.sum(x * tnp.ones_like(x) + tnp.zeros_like(x)))(np.arange(3.0))
    assert_bitwise_equal(g, np.ones(3))
    out = tg.jit(lambda x: np.zeros_like(x, dtype=np.int32))(np.arange(3.0))
    assert_bitwise_equal(out, np.zeros(3, np.int32))


# -- errors -----------------------------------------------------------------------------------


def test_errors_name_the_function_and_the_fix():
    with pytest.raises(ValueError, match="inhomogeneous shapes"):
        tg.grad(lambda a: np.sum(tnp.array([[a, a], [a]])))(1.0)
    with pytest.raises(TypeError, match="would drop the derivative"):
        tg.grad(lambda a: np.sum(tnp.arange(a)))(3.0)
    with pytest.raises(tg.ConcretizationError, match="arange"):
        tg.jit(lambda n: tnp.arange(n))(3)
    assert_bitwise_equal(tg.grad(lambda a, n: np.sum(tnp.arange(n) * a))(2.0, 4), np.float64(6))
    with pytest.raises(ValueError, match="Geometric sequence cannot include zero"):
        tg.grad(lambda a: np.sum(tnp.geomspace(a, 2.0, 3)))(0.0)
    with pytest.raises(ValueError, match="must be non-negative"):
        tg.grad(lambda a: np.sum(tnp.linspace(a, 2.0, -1)))(0.0)
    # np.array of tracers names the function that works
    with pytest.raises(TypeError, match="tracegrad.numpy.array"):
        tg.grad(lambda a: np.sum(np.array([a, a])))(1.0)


def test_a_traced_python_scalar_becomes_strong_as_numpy_makes_it():
    # np.asarray(1.7) is a strong float64: + float32 stays float64, traced or not
    f = lambda x: tnp.asarray(x) + np.float32(0.1)  # noqa: E731
    assert_bitwise_equal(tg.jit(f)(1.7), f(1.7))
    assert_bitwise_equal(tg.vjp(f, 1.7)[0], f(1.7))
    g = lambda x: np.angle(x) + np.float32(0.1)  # noqa: E731
    assert_bitwise_equal(tg.jit(g)(-1.7), g(-1.7))


def test_logspace_with_a_traced_base():
    b = np.array([2.0, 3.0])
    g = tg.grad(lambda b: np.sum(tnp.logspace(0.0, 1.0, 3, base=b)))(b)
    np.testing.assert_allclose(g, 0.5 * b**-0.5 + 1.0, rtol=1e-14)  # d/db sum_y b**y, y = 0, 1/2, 1
    assert_bitwise_equal(
        tg.make_graph(lambda b: tnp.logspace(0.0, 1.0, 3, base=b))(b)(b),
        np.logspace(0.0, 1.0, 3, base=b),
    )
