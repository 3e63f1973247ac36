"""NumPy names added for the front door: parts of complex numbers, sinc, rounding,
nan_to_num, choosing (select, choose, compress, extract) and adding/removing elements
(append, insert, delete, resize, trim_zeros).

Oracles: NumPy (forward bits, through tests/numpy/harness.py, which also checks grad and jvp
against finite differences and vmap against a loop), closed forms (sinc's derivatives at 0),
and JAX for gradients where jax.numpy has the name.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.testing import assert_bitwise_equal

X = np.array([[0.5, -1.25, 2.0], [-0.75, 1.5, 0.25]])


def _jnp():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, pytest.importorskip("jax.numpy")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["real", "conj", "conjugate", "sinc"])
def test_differentiable_unary_names(name, dtype):
    check_name(name, (X.astype(dtype),), rtol=1e-3 if dtype == np.float32 else None)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["imag", "angle", "fix"])
def test_piecewise_constant_unary_names(name, dtype):
    check_name(name, (X.astype(dtype),), differentiable=False)


def test_angle_in_degrees_and_of_complex_values():
    z = np.array([1 + 2j, -1 - 1j, 3.0 + 0j], np.complex64)
    for deg in (False, True):
        assert_bitwise_equal(tnp.angle(z, deg), np.angle(z, deg))
        got = tg.make_graph(lambda z, deg=deg: np.angle(z, deg))(z)(z)
        assert_bitwise_equal(got, np.angle(z, deg))
    for f in (np.real, np.imag, np.conj):
        assert_bitwise_equal(tg.make_graph(f)(z)(z), f(z))


def test_real_imag_conj_of_complex_values_differentiate_as_jax():
    # (the other primitives' complex rules, and real inputs through complex intermediates,
    # are the complex-numbers issue's)
    jax, jnp = _jnp()
    z = np.array([1 + 2j, -1.5 + 0.5j])

    def ours(z):
        return np.sum(np.real(z) * 3.0 + np.imag(z) * 2.0 - np.imag(np.conj(z)))

    def theirs(z):
        return jnp.sum(jnp.real(z) * 3.0 + jnp.imag(z) * 2.0 - jnp.imag(jnp.conj(z)))

    np.testing.assert_allclose(tg.grad(ours)(z), np.asarray(jax.grad(theirs)(z)), rtol=1e-14)
    t = np.array([0.5 - 1j, 2.0 + 0.25j])
    _, ours_t = tg.jvp(lambda z: (np.real(z), np.imag(z), np.conj(z)), (z,), (t,))
    _, theirs_t = jax.jvp(lambda z: (jnp.real(z), jnp.imag(z), jnp.conj(z)), (z,), (t,))
    for a, b in zip(ours_t, theirs_t):
        assert_bitwise_equal(a, np.asarray(b))


def test_tracer_real_imag_attributes():
    z = np.array([1 + 2j, 3 - 1j])
    got = tg.make_graph(lambda z: (z.real, z.imag, z.conj()))(z)(z)
    assert_bitwise_equal(got, (z.real, z.imag, z.conj()))


def test_sinc_derivatives_of_every_order_are_exact_at_zero():
    # sinc(x) = sum_n (-1)^n (pi x)^(2n) / (2n+1)!: f^(2m)(0) = (-1)^m pi^(2m) / (2m+1)
    f = np.sinc
    for order in range(1, 7):
        f = tg.grad(f)
        expected = 0.0 if order % 2 else (-1) ** (order // 2) * np.pi**order / (order + 1)
        np.testing.assert_allclose(f(0.0), expected, rtol=1e-13, atol=1e-13)
    # near 0 JAX's derivatives cancel catastrophically (its 4th at 1e-4 is -39, not 19.48):
    # mpmath at 50 digits is the oracle
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    g = np.sinc
    for order in range(1, 5):
        g = tg.grad(g)
        for x in (1e-4, 0.3, 1 / np.pi, 0.6, 2.5):
            exact = mp.diff(lambda t: mp.sin(mp.pi * t) / (mp.pi * t), mp.mpf(x), order)
            np.testing.assert_allclose(g(x), float(exact), rtol=1e-12, atol=1e-12)


def test_sinc_derivative_codegen_equals_the_interpreter():
    x = np.array([0.0, 1e-9, 0.2, 0.9, 3.0])
    first = tg.grad(lambda x: np.sum(np.sinc(x)))
    g = tg.grad(lambda x: np.sum(first(x) * x))
    assert_bitwise_equal(tg.jit(g)(x), tg.jit(g, backend="interpret")(x))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round(decimals, dtype):
    x = (X * 123.456).astype(dtype)
    check_name("round", (x,), {"decimals": decimals}, differentiable=False)
    assert_bitwise_equal(
        tnp.round(np.arange(-5, 200, 13), decimals), np.round(np.arange(-5, 200, 13), decimals)
    )
    got = tg.make_graph(lambda x: x.round(decimals))(x)(x)
    assert_bitwise_equal(got, x.round(decimals))
    assert_bitwise_equal(tg.make_graph(lambda x: round(x, decimals))(x)(x), np.round(x, decimals))


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_to_num(dtype):
    x = np.array([1.5, np.nan, np.inf, -np.inf, -2.0], dtype)
    check_name("nan_to_num", (x,), {"nan": 7.0, "posinf": 1e3, "neginf": -1e3})
    # the default replacements are the largest finite values: bits only (sums would overflow)
    assert_bitwise_equal(tnp.nan_to_num(x), np.nan_to_num(x))
    assert_bitwise_equal(tg.jit(np.nan_to_num)(x), np.nan_to_num(x))
    g = tg.grad(lambda x: np.sum(np.nan_to_num(x) * 0.5))(x)
    assert_bitwise_equal(g, np.array([0.5, 0.0, 0.0, 0.0, 0.5], dtype))
    assert_bitwise_equal(tnp.nan_to_num(np.arange(3)), np.arange(3))
    with pytest.raises(NotImplementedError, match="complex inputs"):
        tnp.nan_to_num(np.array([1j]))


# -- choosing ---------------------------------------------------------------------------------


def _select(x):
    return np.select([x > 1, x < 0], [x**2, 3 * x], -1.5)


def _choose(x):
    return np.choose(np.array([[0, 1, 2], [2, 0, 1]]), [x, x * 2, -x])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("f", [_select, _choose])
def test_select_and_choose(f, dtype):
    # their arguments are lists of arrays, which check_name does not take: the same checks here
    x = X.astype(dtype)
    expected = f(x)
    assert_bitwise_equal(tg.make_graph(f)(x)(x), expected)
    assert_bitwise_equal(tg.jit(f)(x), expected)
    xs = np.stack([x, -x])
    assert_bitwise_equal(tg.vmap(f)(xs), np.stack([f(x), f(-x)]))
    tg.check_grads(
        f, (x,), order=2, modes=("fwd", "rev"), rtol=1e-3 if dtype == np.float32 else None
    )


def test_select_and_choose_gradients_match_jax():
    jax, jnp = _jnp()
    w = np.cos(np.arange(6.0)).reshape(2, 3)
    ours = tg.grad(lambda x: np.sum(np.select([x > 1, x < 0], [x**2, 3 * x], -x) * w))(X)
    theirs = jax.grad(lambda x: jnp.sum(jnp.select([x > 1, x < 0], [x**2, 3 * x], -x) * w))(X)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-14)
    c = np.array([[0, 1, 2], [2, 0, 1]])
    ours = tg.grad(lambda x: np.sum(np.choose(c, [x, x * 2, -x]) * w))(X)
    theirs = jax.grad(lambda x: jnp.sum(jnp.choose(c, [x, x * 2, -x]) * w))(X)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-14)


def test_select_errors_are_numpys():
    with pytest.raises(ValueError, match="same length"):
        tnp.select([X > 0], [X, X])
    with pytest.raises(ValueError, match="empty condition list"):
        tnp.select([], [])
    with pytest.raises(TypeError, match="should be boolean"):
        tg.grad(lambda x: np.sum(np.select([x], [x])))(X)


@pytest.mark.parametrize("dtype", FLOATS)
def test_compress_and_extract(dtype):
    x = X.astype(dtype)
    check_name(
        "compress", ([True, False, True], x), {"axis": 1}, static=(0,), jit=False, vmap=False
    )
    check_name("compress", ([0, 1], x), {"axis": None}, static=(0,), jit=False, vmap=False)
    g = tg.grad(lambda x: np.sum(np.extract(x > 0, x) ** 2))(x)
    assert_bitwise_equal(g, np.where(x > 0, 2 * x, 0).astype(dtype))
    with pytest.raises(tg.ConcretizationError, match="np.compress"):
        tg.jit(lambda c, x: np.compress(c, x, axis=1))(np.array([True, False, True]), x)


# -- adding and removing elements -------------------------------------------------------------

A = np.arange(12.0).reshape(3, 4) / 5 - 1
EDITS = [
    ("append", (A, np.ones((3, 1))), {"axis": 1}),
    ("append", (A, np.ones(2)), {}),
    ("insert", (A, 1, np.array([9.0, 8.0, 7.0])), {"axis": 1}),
    ("insert", (A, [1, 3, 1], 5.0), {"axis": 1}),
    ("insert", (A, slice(0, 4, 2), np.array([[1.0], [2.0], [3.0]])), {"axis": 1}),
    ("insert", (A, [2], np.ones((2, 4))), {"axis": 0}),
    ("insert", (A, 5, 0.5), {}),
    ("delete", (A, 1), {"axis": 0}),
    ("delete", (A, [0, 2]), {"axis": 1}),
    ("delete", (A, slice(None, None, 3)), {}),
    ("resize", (A, (5, 3)), {}),
    ("resize", (A, 7), {}),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name, args, kwargs", EDITS, ids=[e[0] for e in EDITS])
def test_adding_and_removing_elements(name, args, kwargs, dtype):
    args = tuple(a.astype(dtype) if isinstance(a, np.ndarray) else a for a in args)
    static = tuple(i for i, a in enumerate(args) if not isinstance(a, np.ndarray))
    check_name(name, args, kwargs, static=static)


def test_trim_zeros_keeps_the_values_differentiable():
    # the result's shape depends on the values: concrete tracing only (no make_graph, jit, vmap)
    z = np.array([0.0, 0.0, 1.5, -2.0, 0.0, 3.0, 0.0])
    for trim in ("fb", "f", "b"):
        expected = np.trim_zeros(z, trim)
        assert_bitwise_equal(tnp.trim_zeros(z, trim), expected)
        value, vjp_fn = tg.vjp(lambda z, trim=trim: np.trim_zeros(z, trim), z)
        assert_bitwise_equal(value, expected)
        ct = np.arange(1.0, expected.size + 1)
        (g,) = vjp_fn(ct)
        start = 2 if "f" in trim else 0
        want = np.zeros(7)
        want[start : start + expected.size] = ct
        assert_bitwise_equal(g, want)
    with pytest.raises(tg.ConcretizationError, match="trim_zeros"):
        tg.jit(np.trim_zeros)(z)


def test_insert_and_delete_gradients_match_jax():
    jax, jnp = _jnp()
    w = np.cos(np.arange(15.0)).reshape(3, 5)
    v = np.array([9.0, 8.0, 7.0])
    ours = tg.grad(lambda a, v: np.sum(np.insert(a, 2, v, axis=1) * w), argnums=(0, 1))(A, v)
    theirs = jax.grad(lambda a, v: jnp.sum(jnp.insert(a, 2, v, axis=1) * w), argnums=(0, 1))(A, v)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-14)
    ours = tg.grad(lambda a: np.sum(np.delete(a, [0, 2], axis=1) * w[:, :2]))(A)
    theirs = jax.grad(lambda a: jnp.sum(jnp.delete(a, jnp.array([0, 2]), axis=1) * w[:, :2]))(A)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-14)


def test_numpy_corner_cases_found_in_review():
    assert_bitwise_equal(tnp.angle(1 + 2j), np.angle(1 + 2j))
    assert_bitwise_equal(tnp.append(A, A[:, :1], axis=-1), np.append(A, A[:, :1], axis=-1))
    x4 = np.arange(4.0)  # a longer condition is fine while it is False beyond the axis
    assert_bitwise_equal(tnp.compress([1, 0, 1, 1, 0], x4), np.compress([1, 0, 1, 1, 0], x4))
    with pytest.raises(IndexError, match="index 4 is out of bounds"):
        tnp.compress([1, 0, 1, 1, 1], x4)
    x = np.linspace(-1, 1, 5)
    assert_bitwise_equal(tnp.select([True, x > 0], [x, -x]), np.select([True, x > 0], [x, -x]))
    b = np.array([True, False])
    assert_bitwise_equal(tnp.round(b), np.round(b))  # float16, as NumPy
    with pytest.raises(TypeError, match="Cannot cast ufunc 'multiply' output"):
        tnp.round(b, 1)
    with pytest.raises(NotImplementedError, match="complex values"):
        tnp.round(np.array([1.25 + 2.5j]), 1)
    z = np.array([1.5 + 2.5j, -0.5 - 1.5j])
    assert_bitwise_equal(tnp.round(z), np.round(z))


def test_bitwise_operators_on_traced_values():
    a, n = np.array([4, 6, -3]), np.array([1, 2, 0])

    def f(a, n):
        return (~a, a & n, a | n, a ^ n, a << n, a >> n, np.gcd(a, n), np.lcm(a, n))

    assert_bitwise_equal(tg.make_graph(f)(a, n)(a, n), f(a, n))
    x = np.array([1.0, np.nan, -2.0, 3.0])
    g = tg.grad(lambda x: np.sum(np.where(~np.isnan(x) & (x > 0), x, 0.0) ** 2))(x)
    assert_bitwise_equal(g, np.array([2.0, 0.0, 0.0, 6.0]))


def test_ldexp_and_heaviside():
    x = np.array([0.5, -1.25, 2.0], np.float32)
    n = np.array([1, -2, 3])
    check_name("ldexp", (x, n), static=(1,))
    check_name("heaviside", (x, np.float32(0.5)), differentiable=False)
