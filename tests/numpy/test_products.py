"""NumPy 2.2's product gufuncs vecdot, matvec and vecmat in tracegrad.numpy
(tracegrad/primitives/products.py, tracegrad/numpy/_products.py).

One parametrized test per name runs `check_name` (bits against NumPy outside a trace, on
tracers and under jit; derivatives against finite differences; vmap against a loop) in float32
and float64, over broadcast loop axes and the `axis=`/`axes=`/`keepdims=` keywords. JAX is the
oracle for the derivatives, complex ones included (vecdot and vecmat conjugate their first
operand; the cotangents follow JAX's convention). Then the way NumPy code reaches them and
every error's message.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.codegen import source
from tracegrad.numpy import _dispatch
from tracegrad.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)


def _normal(dtype, *shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _complex(dtype, *shape, seed=0):
    re, im = _normal(np.float64, *shape, seed=seed), _normal(np.float64, *shape, seed=seed + 1)
    return (re + 1j * im).astype(dtype)


def _numpy_or_ours(name):
    """NumPy's gufunc on arrays, tracegrad.numpy's on tracers: `np.vecdot(t, u, axis=0)` on a
    tracer stops at `_dispatch.array_ufunc`, which passes no ufunc keywords on (see
    test_unsupported_keywords_are_named), so the keyword forms are checked through `tnp`."""

    def fn(*args, **kwargs):
        traced = any(isinstance(a, tg.core.Tracer) for a in args)
        return (getattr(tnp, name) if traced else getattr(np, name))(*args, **kwargs)

    return fn


# -- the per-name checks ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_vecdot(dtype):
    x, y = _normal(dtype, 2, 3, 5), _normal(dtype, 3, 5, seed=1)
    check_name("vecdot", (x, y))
    check_name("vecdot", (x, _normal(dtype, 5, seed=2)))  # a vector against a stack
    check_name("vecdot", (_normal(dtype, 1, 0), _normal(dtype, 4, 0, seed=1)))  # n = 0
    keywords = _numpy_or_ours("vecdot")
    check_name("vecdot", (x, x[..., ::-1]), {"axis": 0}, np_fn=keywords)
    check_name("vecdot", (x, x[::-1]), {"axis": 1, "keepdims": True}, np_fn=keywords)
    check_name("vecdot", (x, x), {"axes": [(1,), (1,)], "keepdims": True}, np_fn=keywords)
    check_name("vecdot", (x, x), {"axes": [0, 0, ()]}, np_fn=keywords)
    check_name("vecdot", (x, x), {"axes": [(0,), (0,), (1,)], "keepdims": True}, np_fn=keywords)


@pytest.mark.parametrize("dtype", FLOATS)
def test_matvec(dtype):
    m, v = _normal(dtype, 2, 3, 4), _normal(dtype, 4, seed=1)
    check_name("matvec", (m, v))
    check_name("matvec", (m, _normal(dtype, 2, 1, 4, seed=2)))  # loop axes broadcast
    check_name("matvec", (_normal(dtype, 4, 4), v))  # one matrix: BLAS gemv
    check_name("matvec", (_normal(dtype, 1, 4), v))  # m = 1: NumPy's own dot
    axes = {"axes": [(1, 0), (0,), (1,)]}  # m is axis 1, n axis 0; the output's m axis 1
    check_name("matvec", (m, _normal(dtype, 2, 4, seed=3)), axes, np_fn=_numpy_or_ours("matvec"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_vecmat(dtype):
    v, m = _normal(dtype, 3, seed=1), _normal(dtype, 2, 3, 4)
    check_name("vecmat", (v, m))
    check_name("vecmat", (_normal(dtype, 2, 1, 3, seed=2), m))
    check_name("vecmat", (v, _normal(dtype, 3, 1)))  # m = 1
    axes = {"axes": [(0,), (2, 0), (0,)]}
    check_name("vecmat", (_normal(dtype, 4, 3, seed=3), m), axes, np_fn=_numpy_or_ours("vecmat"))


@pytest.mark.parametrize("name", ["vecdot", "matvec", "vecmat"])
def test_integer_and_mixed_operands_as_numpy(name):
    shapes = {"vecdot": ((2, 3), (3,)), "matvec": ((2, 3), (3,)), "vecmat": ((2,), (2, 3))}[name]
    xs, ys = shapes
    a = np.arange(np.prod(xs)).reshape(xs)
    b = _normal(np.float32, *ys)
    check_name(name, (a, a if xs == ys else np.arange(np.prod(ys)).reshape(ys)))  # int64
    check_name(name, (a, b))  # int64 with float32 is float64; only b is differentiated
    check_name(name, (a.astype(np.float32), b.astype(np.float64)))


# -- derivatives against JAX, complex included ------------------------------------------------


def _operands(name, dtype, make):
    if name == "vecdot":
        return make(dtype, 2, 3), make(dtype, 3, seed=4)
    if name == "matvec":
        return make(dtype, 2, 4, 3), make(dtype, 3, seed=4)
    return make(dtype, 2, 4, seed=4), make(dtype, 4, 3)


@pytest.mark.parametrize("name", ["vecdot", "matvec", "vecmat"])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_derivatives_match_jax(name, kind):
    make = _normal if kind == "real" else _complex
    dtype = np.float64 if kind == "real" else np.complex128
    x, y = _operands(name, dtype, make)
    ours_fn, jax_fn = getattr(tnp, name), getattr(jnp, name)
    out = ours_fn(x, y)
    ct = make(dtype, *out.shape, seed=7)
    dx, dy = make(dtype, *x.shape, seed=8), make(dtype, *y.shape, seed=9)
    ours = tg.vjp(ours_fn, x, y)[1](ct), tg.jvp(ours_fn, (x, y), (dx, dy))[1]
    theirs = jax.vjp(jax_fn, x, y)[1](ct), jax.jvp(jax_fn, (x, y), (dx, dy))[1]
    np.testing.assert_allclose(out, jax_fn(x, y), rtol=1e-12)
    for got, want in zip(tg.tree.leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-12)
    # second order: the gradient of a real loss, differentiated again along a direction

    def loss(a, b):
        out = ours_fn(a, b)
        return tnp.sum(tnp.real(out) ** 2 + tnp.imag(out) ** 2)

    def jloss(a, b):
        out = jax_fn(a, b)
        return jnp.sum(jnp.real(out) ** 2 + jnp.imag(out) ** 2)

    ours2 = tg.jvp(lambda b: tg.grad(loss, argnums=(0, 1))(x, b), (y,), (dy,))[1]
    theirs2 = jax.jvp(lambda b: jax.grad(jloss, argnums=(0, 1))(x, b), (y,), (dy,))[1]
    for got, want in zip(ours2, theirs2):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10, atol=1e-10)


_MIXED = {  # a real first operand, a complex second one, through the product primitives
    "matmul": ((3, 4), (4, 2), {}),
    "dot": ((3, 4), (4, 2), {}),
    "tensordot": ((3, 4), (4, 2), {"axes": 1}),
    "inner": ((3, 4), (4,), {}),
    "einsum": ((3, 4), (4, 2), {"subscripts": "ij,jk->ik"}),
    "vecdot": ((3, 4), (4,), {}),
    "matvec": ((3, 4), (4,), {}),
    "vecmat": ((4,), (4, 2), {}),
}


@pytest.mark.parametrize("name", list(_MIXED))
def test_a_real_operand_of_a_complex_product_gets_the_real_part(name):
    # its cotangent is the real part of the complex one (JAX's), and no cast warns of it
    xs, ys, kw = _MIXED[name]
    x, y = _normal(np.float64, *xs), _complex(np.complex128, *ys, seed=2)

    def product(mod, a, b):
        if name == "einsum":
            return mod.einsum(kw["subscripts"], a, b)
        return getattr(mod, name)(a, b, **kw)

    w = _complex(np.complex128, *np.shape(product(np, x, y)), seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = tg.grad(lambda a, b: np.sum(np.real(product(np, a, b) * w)), argnums=(0, 1))(x, y)
    theirs = jax.grad(lambda a, b: jnp.sum(jnp.real(product(jnp, a, b) * w)), argnums=(0, 1))(x, y)
    assert ours[0].dtype == np.float64
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-12)


def test_a_traced_python_scalar_operand_is_a_strong_array():
    # NumPy's products convert a Python float with asarray: float64, even against float32
    x = _normal(np.float32, 3)
    for name in ("kron", "inner", "outer", "dot"):
        fn = getattr(np, name)
        want = fn(x, 2.0)
        assert_bitwise_equal(tg.jit(lambda a, s, fn=fn: fn(a, s))(x, 2.0), want, name)


@pytest.mark.parametrize("name", ["vecdot", "matvec", "vecmat"])
def test_complex_values_are_numpys_bits(name):
    x, y = _operands(name, np.complex128, _complex)
    graph = tg.make_graph(lambda a, b: getattr(np, name)(a, b))(x, y)
    assert_bitwise_equal(graph(x, y), getattr(np, name)(x, y), f"{name} of complex operands")
    batched = tg.vmap(getattr(tnp, name))(np.stack([x, 2 * x]), np.stack([y, y]))
    assert_bitwise_equal(batched, np.stack([getattr(np, name)(x, y), getattr(np, name)(2 * x, y)]))


# -- how NumPy code reaches them --------------------------------------------------------------


def test_numpys_gufuncs_reach_tracegrad_through_array_ufunc():
    for name in ("vecdot", "matvec", "vecmat"):
        assert isinstance(getattr(np, name), np.ufunc)
        assert _dispatch.UFUNCS[getattr(np, name)] is getattr(tnp, name)
    x, y = _normal(np.float64, 3, 4), _normal(np.float64, 4, seed=1)
    g = tg.grad(lambda a, b: np.sum(np.vecdot(a, b) * np.matvec(a, b) + np.vecmat(b, a.T)))(x, y)
    want = jax.grad(lambda a, b: jnp.sum(jnp.vecdot(a, b) * jnp.matvec(a, b) + jnp.vecmat(b, a.T)))(
        x, y
    )
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_codegen_writes_the_gufuncs():
    x, y = _normal(np.float64, 3, 4), _normal(np.float64, 4, seed=1)

    def f(a, b):
        return np.vecdot(a, b), np.matvec(a, b), np.vecmat(a[:, 0], a)

    text = source(tg.make_graph(f)(x, y))
    for call in ("np.vecdot(", "np.matvec(", "np.vecmat("):
        assert call in text
    assert_bitwise_equal(tg.jit(f)(x, y), f(x, y))  # jit runs the generated code


# -- errors -----------------------------------------------------------------------------------


def test_shape_errors_name_the_signature():
    # (on plain arrays NumPy's own gufunc runs and raises its own message)
    x = tg.Aval((2, 3), np.float64)

    def traced(fn, *avals):
        return tg.make_graph(fn)(*avals)

    with pytest.raises(ValueError, match=r"^vecdot: shapes \(2, 3\) and \(4,\) do not align for "):
        traced(np.vecdot, x, tg.Aval((4,), np.float64))
    with pytest.raises(ValueError, match=r"^matvec: .*the matrix's last axis and the vector's"):
        traced(np.matvec, x, tg.Aval((2,), np.float64))
    with pytest.raises(ValueError, match=r"^vecmat: .*the vector's axis and the matrix's"):
        traced(np.vecmat, tg.Aval((3,), np.float64), x)
    with pytest.raises(ValueError, match=r"operand 0 of shape \(3,\) has 1 axes, but the signatu"):
        traced(np.matvec, tg.Aval((3,), np.float64), tg.Aval((3,), np.float64))
    with pytest.raises(ValueError, match=r"do not broadcast in their loop axes \(2,\) and \(3,\)"):
        traced(np.vecdot, x, tg.Aval((3, 3), np.float64))
    with pytest.raises(TypeError, match=r"^vecdot: no loop for inputs of dtype \(float64, str"):
        traced(np.vecdot, x, tg.Aval((3,), np.dtype("U1")))


def test_unsupported_keywords_are_named():
    x = _normal(np.float64, 2, 3)
    with pytest.raises(NotImplementedError, match=r"vecdot: argument out= is not supported"):
        tnp.vecdot(x, x, out=np.empty(2))
    with pytest.raises(NotImplementedError, match=r"matvec: argument dtype= is not supported"):
        tnp.matvec(x, x[0], dtype=np.float32)
    with pytest.raises(NotImplementedError, match=r"vecmat: argument order='C' is not supported"):
        tnp.vecmat(x[:, 0], x, order="C")
    with pytest.raises(NotImplementedError, match=r"vecdot: argument casting='unsafe' is not"):
        tnp.vecdot(x, x, casting="unsafe")
    # through NumPy's gufunc on a tracer, its keywords reach tnp; others are refused by name
    got = tg.make_graph(lambda a: np.vecdot(a, a, axis=0))(x)(x)
    assert_bitwise_equal(got, np.vecdot(x, x, axis=0))
    with pytest.raises(NotImplementedError, match=r"vecdot: argument signature= is not supported"):
        tg.make_graph(lambda a: np.vecdot(a, a, signature="dd->d"))(x)


def test_axis_and_axes_errors_as_numpy():
    x = _normal(np.float64, 2, 3)
    with pytest.raises(TypeError, match=r"^vecdot: cannot specify both 'axis' and 'axes'"):
        tnp.vecdot(x, x, axis=0, axes=[0, 0])
    with pytest.raises(TypeError, match=r"^matvec: axis can only be used with a single shared"):
        tnp.matvec(x, x[0], axis=0)
    with pytest.raises(TypeError, match=r"^matvec does not support keepdims"):
        tnp.matvec(x, x[0], keepdims=True)
    with pytest.raises(ValueError, match=r"^matvec: axes should be a list with an entry for all"):
        tnp.matvec(x, x[0], axes=[(0, 1), (0,)])
    with pytest.raises(ValueError, match=r"^vecdot: operand 2 has 0 core dimensions, but 1 dim"):
        tnp.vecdot(x, x, axes=[(0,), (0,), (0,)])
    with pytest.raises(TypeError, match=r"^vecdot: axes should be a list, got tuple"):
        tnp.vecdot(x, x, axes=((0,), (0,)))
    with pytest.raises(TypeError, match=r"^vecdot: each entry of axes must be a tuple of ints"):
        tnp.vecdot(x, x, axes=[(0,), "a"])
    # and NumPy agrees that these are errors
    with pytest.raises(TypeError):
        np.vecdot(x, x, axis=0, axes=[0, 0])
    with pytest.raises(ValueError):
        np.matvec(x, x[0], axes=[(0, 1), (0,)])
