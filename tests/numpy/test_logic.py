"""NumPy's predicates and counting functions in tracegrad.numpy (tracegrad/numpy/_logic.py).

One parametrized test per name runs `check_name` (bits against NumPy outside a trace, on
tracers and under jit; derivatives against finite differences, or none for bool and integer
results; vmap against a loop) in float32 and float64. JAX is the oracle for the derivatives
that exist (weighted bincount, histogram weights, edges and density). Then the behaviour under
a trace (predicates as traced bools, value-dependent sizes) and every error's message.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _close_pair(dtype, shape=(3, 4), seed=0):
    """Two arrays, some elements within isclose's tolerance of each other and some not, with
    NaNs at matching and non-matching places."""
    rng = _rng(seed)
    a = rng.normal(size=shape).astype(dtype)
    b = a.copy()
    b.flat[::2] = (a.flat[::2] * np.asarray(1 + 1e-7, dtype)).astype(dtype)  # close
    b.flat[1::4] += np.asarray(0.5, dtype)  # not close
    a.flat[0] = b.flat[0] = np.nan  # NaN in both
    a.flat[3] = np.nan  # NaN in one
    b.flat[5] = np.inf  # an infinite y is close to nothing but itself (|x - y| <= inf)
    a.flat[6] = b.flat[7] = -np.inf
    return a, b


# -- the per-name checks ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_isclose(dtype):
    a, b = _close_pair(dtype)
    check_name("isclose", (a, b), differentiable=False)
    check_name("isclose", (a, b), {"equal_nan": True}, differentiable=False)
    check_name("isclose", (a, b[1]), {"rtol": 1e-3, "atol": 0.1}, differentiable=False)
    check_name("isclose", (a, np.asarray(1e-9, dtype)), {"atol": 1e-8}, differentiable=False)
    check_name("isclose", (a, b, np.full(4, 0.2, dtype)), differentiable=False)  # array rtol
    check_name("isclose", (a, np.arange(4)), differentiable=False)  # integer b, made inexact
    check_name("isclose", (a, 1.0), differentiable=False, static=(1,))  # a Python float


@pytest.mark.parametrize("dtype", FLOATS)
def test_allclose(dtype):
    a, b = _close_pair(dtype)
    near = (a * np.asarray(1 + 1e-7, dtype)).astype(dtype)
    check_name("allclose", (a, b), differentiable=False)
    check_name("allclose", (a, near), differentiable=False)
    check_name("allclose", (a, near), {"equal_nan": True}, differentiable=False)
    check_name("allclose", (a, near), {"rtol": 0.0, "atol": 0.0}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_array_equal(dtype):
    a, b = _close_pair(dtype)
    check_name("array_equal", (a, a.copy()), differentiable=False)  # False: NaN != NaN
    check_name("array_equal", (a, a.copy()), {"equal_nan": True}, differentiable=False)
    check_name("array_equal", (a, b), {"equal_nan": True}, differentiable=False)
    check_name("array_equal", (b[1:], b[1:].copy()), differentiable=False)
    check_name("array_equal", (a, a[:2]), differentiable=False)  # shapes differ
    check_name("array_equal", (a, a.astype(np.float16)), differentiable=False)
    check_name("array_equal", (np.arange(4), np.arange(4)), {"equal_nan": True})


@pytest.mark.parametrize("dtype", FLOATS)
def test_array_equiv(dtype):
    a = _rng().normal(size=(3, 4)).astype(dtype)
    rows = np.repeat(a[:1], 3, axis=0)
    check_name("array_equiv", (rows, a[:1]), differentiable=False)  # broadcast, equal
    check_name("array_equiv", (a, a[:1]), differentiable=False)  # broadcast, not equal
    check_name("array_equiv", (a, a[:2]), differentiable=False)  # do not broadcast


@pytest.mark.parametrize("dtype", FLOATS)
def test_isreal(dtype):
    a = _rng().normal(size=(2, 3)).astype(dtype)
    check_name("isreal", (a,), differentiable=False)
    check_name("isreal", (a[0, 0],), differentiable=False)
    z = (a + 1j * (a > 0) * a).astype(np.result_type(dtype, 1j))  # some imaginary parts zero
    check_name("isreal", (z,), differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_iscomplex(dtype):
    a = _rng().normal(size=(2, 3)).astype(dtype)
    check_name("iscomplex", (a,), differentiable=False)
    check_name("iscomplex", (np.asarray(a[0, 0]),), differentiable=False)
    z = (a + 1j * (a > 0) * a).astype(np.result_type(dtype, 1j))
    check_name("iscomplex", (z,), differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_isneginf_isposinf(dtype):
    x = np.array([1.0, -np.inf, np.inf, -0.0, np.nan, -2.0], dtype)
    check_name("isneginf", (x,), differentiable=False)
    check_name("isposinf", (x,), differentiable=False)
    check_name("isposinf", (np.arange(-2, 3),), differentiable=False)  # integers: no infinity


@pytest.mark.parametrize("dtype", FLOATS)
def test_real_if_close(dtype):
    a = _rng().normal(size=(2, 3)).astype(dtype)
    check_name("real_if_close", (a,))  # real: returned as it is, derivative 1


@pytest.mark.parametrize("dtype", FLOATS)
def test_bincount(dtype):
    x = np.array([0, 3, 1, 3, 3, 5, 1])
    w = _rng().normal(size=7).astype(dtype)
    check_name("bincount", (x,), static=(0,))
    check_name("bincount", (x, w), static=(0,))  # weighted: differentiable in the weights
    check_name("bincount", (x, w), {"minlength": 9}, static=(0,))
    check_name("bincount", (x, np.arange(7)), static=(0,), differentiable=False)
    check_name("bincount", (np.array([True, False, True]),), static=(0,))
    check_name("bincount", (x.astype(np.uint8),), {"minlength": 2}, static=(0,))
    check_name("bincount", (np.zeros(0, int), np.zeros(0, dtype)), {"minlength": 2}, static=(0,))


@pytest.mark.parametrize("dtype", FLOATS)
def test_digitize(dtype):
    x = np.array([[-1.5, 0.25, 1.0], [2.5, np.nan, 0.75]], dtype)
    up = np.array([-1.0, 0.0, 0.5, 1.0, 2.0], dtype)
    down = up[::-1].copy()
    for bins in (up, down, np.array([0.0, 0.5, 0.5, 1.0], dtype)):
        for right in (False, True):
            # traced bins (direction read from the data) and known ones (checked as NumPy)
            check_name("digitize", (x, bins), {"right": right}, differentiable=False)
            check_name("digitize", (x, bins), {"right": right}, static=(1,), differentiable=False)
    check_name("digitize", (x[0, 1], up), static=(1,), differentiable=False)  # a 0-d x
    check_name("digitize", (x, np.zeros(0, dtype)), static=(1,), differentiable=False)
    nan_last = np.array([0.0, 1.0, np.nan], dtype)
    check_name("digitize", (x, nan_last), static=(1,), differentiable=False)


def test_digitize_with_no_bins_under_jit_and_vmap():
    # NumPy: no bins are increasing ones, every x in bin 0 (nothing to read a direction from)
    x = np.array([[-1.5, 0.25], [2.5, np.nan]])
    for right in (False, True):
        want = np.digitize(x, np.zeros(0), right=right)
        got = tg.jit(lambda b, r=right: np.digitize(x, b, right=r))(np.zeros(0))
        assert_bitwise_equal(got, want)
        batched = tg.vmap(lambda b, r=right: np.digitize(x, b, right=r))(np.zeros((3, 0)))
        assert_bitwise_equal(batched, np.stack([want] * 3))


@pytest.mark.parametrize("dtype", FLOATS)
def test_isin(dtype):
    a = np.array([[0.0, 1.5, -0.0], [np.nan, 2.0, 3.0]], dtype)
    test = np.array([2.0, 0.0, np.nan, 7.0], dtype)
    check_name("isin", (a, test), differentiable=False)
    check_name("isin", (a, test), {"invert": True}, differentiable=False)
    check_name("isin", (a, test[:0]), {"invert": True}, differentiable=False)
    check_name("isin", (a[0, 1], test), differentiable=False)  # a 0-d element
    check_name("isin", (np.arange(6).reshape(2, 3), np.array([4, 1, 9])), {"kind": "table"})
    # many pairs: a search in the sorted test elements instead of every comparison
    big = np.round(_rng().normal(size=(300, 2)) * 8).astype(dtype) / 2
    big[0] = np.nan, -0.0
    check_name("isin", (big, big[::3, ::-1].copy()), differentiable=False)
    check_name("isin", (big, big[::3, ::-1].copy()), {"invert": True}, differentiable=False)


def _spread(dtype, n=12, seed=1):
    """Values whose min and max are single elements and whose others sit mid-bin for 4 equal
    bins, far from every edge: finite differences do not move a value across an edge."""
    rng = _rng(seed)
    inner = rng.integers(0, 4, size=n - 2) + rng.uniform(0.4, 0.6, size=n - 2)
    a = np.concatenate([[0.0, 4.0], inner]) * 1.5 - 2.0
    return rng.permutation(a).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histogram(dtype):
    a = _spread(dtype)
    w = _rng(2).uniform(0.5, 1.5, size=a.shape).astype(dtype)
    check_name("histogram", (a,), {"bins": 4})
    check_name("histogram", (a,), {"bins": 4, "density": True})
    check_name("histogram", (a, 4, None, None, w))  # weights: differentiable in them too
    check_name("histogram", (a, 4, None, True, w))
    check_name("histogram", (a.reshape(3, 4),), {"bins": 8, "range": (-1.0, 3.0)})
    check_name("histogram", (a, 4, (-1, 3), None, w))  # int range; values dropped
    edges = np.array([-2.5, -0.5, 0.0, 1.5, 4.5], dtype)
    check_name("histogram", (a, edges), static=(1,), differentiable=False)
    check_name("histogram", (a, edges), {"density": True})  # traced edges: widths move
    check_name("histogram", (a, edges, None, None, w))  # weights summed in sorted order
    check_name("histogram", (a, edges, None, True, w))
    check_name("histogram", (np.arange(10) % 3,), {"bins": 3}, differentiable=False)
    check_name("histogram", (np.full(3, 2.0, dtype),), {"bins": 2}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histogram_bin_edges(dtype):
    a = _spread(dtype)
    check_name("histogram_bin_edges", (a,), {"bins": 4})
    check_name("histogram_bin_edges", (a,), {"bins": 3, "range": (0.0, 1.0)})
    check_name("histogram_bin_edges", (np.array([7, 2, 9]),), {"bins": 5})
    check_name("histogram_bin_edges", (a, np.array([0.0, 1.0, 2.0], dtype)))


# -- predicates under a trace -----------------------------------------------------------------


def test_predicates_return_python_bools_outside_a_trace():
    a = np.arange(3.0)
    assert tnp.allclose(a, a) is True
    assert tnp.array_equal(a, a + 1) is False
    assert tnp.array_equiv(a, a[:1]) is False
    assert tnp.array_equal([1, 2], [[1], [2, 3]]) is False  # ragged: NumPy's False


def test_allclose_drives_python_control_flow_under_grad():
    def f(x, y):
        if np.allclose(x, y, atol=0.1):  # bool() of a traced 0-d bool, on concrete values
            return np.sum(x * y)
        return np.sum(x)

    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(tg.grad(f)(x, x + 0.05), x + 0.05)
    np.testing.assert_array_equal(tg.grad(f)(x, x + 1.0), np.ones(2))


def test_predicates_are_data_under_jit():
    @tg.jit
    def f(x, y):
        same = np.array_equal(x, x, equal_nan=True)  # NaNs equal: an array is itself
        return np.allclose(x, y), np.array_equal(x, y), np.array_equiv(x, y[:1]), same

    x = np.array([1.0, np.nan])
    got = f(x, x + 1e-12)
    assert [np.asarray(g).dtype for g in got] == [np.bool_] * 4
    assert [bool(g) for g in got] == [False, False, False, True]
    got = f(x[:1], x[:1] + 1e-12)
    assert [bool(g) for g in got] == [True, False, False, True]


def test_type_predicates_on_tracers():
    def f(x):
        assert np.iscomplexobj(x) is False and np.isrealobj(x) is True
        assert tnp.isscalar(x) is False and tnp.isscalar(1.0) is True
        assert np.result_type(x, 1.0) == np.float32  # a Python float is weak (NEP 50)
        assert np.result_type(x, np.float64) == np.float64
        assert np.can_cast(x, np.float64) and not np.can_cast(x, np.int32)
        return x

    tg.make_graph(f)(np.ones(2, np.float32))
    tg.grad(lambda x: np.sum(f(x)))(np.ones(2, np.float32))


def test_result_type_of_a_traced_python_scalar_is_weak():
    def f(x, s):
        return np.zeros((), tnp.result_type(x, s))

    assert tg.jit(f)(np.ones(2, np.float32), 2.0).dtype == np.float32
    assert tg.jit(f)(np.ones(2, np.float32), np.float64(2.0)).dtype == np.float64


def test_a_comparison_of_python_scalars_combines_with_a_bool_array():
    """A traced Python scalar's comparison is a weak bool; NumPy's dtype resolution takes no
    Python `bool`, so a weak bool promotes as NumPy's bool (it was a TypeError)."""

    def f(z):
        return np.logical_and(z != 0, np.isfinite(z)), (z == 1) | np.isnan(z)

    for z in (0.3 - 0.7j, 0.0, 2.0, np.nan):
        want = f(z)
        for got in (tg.jit(f)(z), tg.make_graph(f)(z)(z)):
            assert [bool(g) for g in got] == [bool(w) for w in want]
            assert [np.asarray(g).dtype for g in got] == [np.dtype(bool)] * 2


# -- value-dependent sizes --------------------------------------------------------------------


def test_bincount_with_length_under_jit_and_vmap():
    x = np.array([0, 3, 1, 3, 3, 5, 1])
    w = _rng().normal(size=7)
    f = tg.jit(lambda x, w: tnp.bincount(x, w, length=8))
    np.testing.assert_array_equal(f(x, w), np.bincount(x, w, minlength=8))
    counts = tg.vmap(lambda x: tnp.bincount(x, length=6))(np.stack([x, x[::-1] % 4]))
    want = [np.bincount(x, minlength=6), np.bincount(x % 4, minlength=6)]
    np.testing.assert_array_equal(counts, want)
    # JAX's rule for values outside the length: negatives count in bin 0, too large are dropped
    y = np.array([-1, -1, 1, 3, 10])
    np.testing.assert_array_equal(tg.jit(lambda y: tnp.bincount(y, length=5))(y), [2, 1, 0, 1, 0])
    np.testing.assert_array_equal(jnp.bincount(y, length=5), [2, 1, 0, 1, 0])


def test_bincount_weights_gradient_against_jax():
    x = np.array([0, 3, 1, 3, 3, 5, 1])
    w = _rng().normal(size=7)
    c = _rng(1).normal(size=6)

    def loss(w, xp=np):
        return xp.sum(xp.sin(xp.bincount(x, w, minlength=6)) * c)

    want = jax.grad(lambda w: loss(w, jnp))(w)
    np.testing.assert_allclose(tg.grad(loss)(w), want, rtol=1e-12)
    g = tg.grad(lambda w: np.sum(tnp.bincount(x, w, length=6) * c))(w)
    np.testing.assert_allclose(g, c[x], rtol=1e-12)


def test_bincount_under_concrete_tracing():
    # the length comes from the traced x's value (here x is an input of vjp, so traced)
    x = np.array([0, 3, 1, 3, 3, 5, 1])
    w = _rng().normal(size=7)
    out, vjp_fn = tg.vjp(lambda x, w: np.bincount(x, w), x, w)
    tg.testing.assert_bitwise_equal(out, np.bincount(x, w))
    np.testing.assert_array_equal(vjp_fn(np.arange(6.0))[1], np.arange(6.0)[x])
    out, _ = tg.vjp(lambda x, w: (np.bincount(x, minlength=8), w), x, w)
    tg.testing.assert_bitwise_equal(out[0], np.bincount(x, minlength=8))


def test_bincount_needs_length_under_jit():
    with pytest.raises(tg.ConcretizationError, match=r"(?s)bincount.s output length.*length="):
        tg.jit(lambda x: np.bincount(x))(np.array([1, 2]))
    with pytest.raises(tg.ConcretizationError, match="length="):
        tg.vmap(lambda x: np.bincount(x))(np.array([[1, 2]]))


def test_real_if_close_of_complex_values():
    z = np.array([1.5 + 1e-17j, -2.0 + 0j])
    out, vjp_fn = tg.vjp(np.real_if_close, z)
    tg.testing.assert_bitwise_equal(out, np.real_if_close(z))  # real parts: imag is tiny
    np.testing.assert_array_equal(vjp_fn(np.array([2.0, 3.0]))[0], [2.0 + 0j, 3.0 + 0j])
    w = np.array([1.5 + 1e-3j, -2.0 + 0j], np.complex64)
    out, vjp_fn = tg.vjp(np.real_if_close, w)
    tg.testing.assert_bitwise_equal(out, np.real_if_close(w))  # kept complex
    np.testing.assert_array_equal(vjp_fn(w)[0], w)


def test_real_if_close_needs_concrete_values():
    message = "(?s)real_if_close's output dtype.*tracegrad.numpy.real"
    with pytest.raises(tg.ConcretizationError, match=message):
        tg.jit(lambda z: np.real_if_close(z))(np.array([1 + 0j]))


def test_histogram_estimator_needs_concrete_values():
    a = _spread(np.float64, n=40)
    n, edges = tnp.histogram(a, bins="auto")
    want_n, want_edges = np.histogram(a, bins="auto")
    np.testing.assert_array_equal(n, want_n)
    np.testing.assert_array_equal(edges, want_edges)
    g = tg.grad(lambda a: np.sum(np.histogram_bin_edges(a, bins="sturges")))(a)
    sturges = len(np.histogram_bin_edges(a, bins="sturges")) - 1
    want = jax.grad(lambda a: jnp.sum(jnp.histogram_bin_edges(a, bins=sturges)))(a)
    np.testing.assert_allclose(g, want, rtol=1e-12)
    with pytest.raises(tg.ConcretizationError, match=r"(?s)number of bins \(bins='fd'.*as an int"):
        tg.jit(lambda a: np.histogram(a, bins="fd"))(a)


def test_histogram_gradients_against_jax():
    a = _spread(np.float64)
    w = _rng(2).uniform(0.5, 1.5, size=a.shape)
    c = _rng(3).normal(size=4)

    def loss(a, w, xp=np):
        density, edges = xp.histogram(a, bins=4, weights=w, density=True)
        return xp.sum(density * c) + xp.sum(xp.sin(edges))

    want = jax.grad(lambda a, w: loss(a, w, jnp), argnums=(0, 1))(a, w)
    got = tg.grad(loss, argnums=(0, 1))(a, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_histogram_blocks_of_65536_as_numpy():
    # NumPy sums weights block by block; in float32 the order shows in the bits
    rng = _rng(4)
    a = rng.uniform(size=70000).astype(np.float32)
    w = rng.uniform(size=70000).astype(np.float32)
    got = tg.jit(lambda a, w: np.histogram(a, bins=7, weights=w))(a, w)
    want = np.histogram(a, bins=7, weights=w)
    tg.testing.assert_bitwise_equal(got, want)


# -- errors -----------------------------------------------------------------------------------


def test_bincount_errors():
    with pytest.raises(TypeError, match=r"Cannot cast array data from dtype\('float64'\)"):
        tnp.bincount(np.array([1.0]))
    with pytest.raises(ValueError, match="object too deep for desired array"):
        tnp.bincount(np.ones((2, 2), int))
    with pytest.raises(ValueError, match="object of too small depth"):
        tnp.bincount(np.int64(1))
    with pytest.raises(ValueError, match="'list' argument must have no negative elements"):
        tnp.bincount(np.array([1, -1]))
    with pytest.raises(ValueError, match="'minlength' must not be negative"):
        tnp.bincount(np.array([1]), minlength=-1)
    with pytest.raises(ValueError, match="The weights and list don't have the same length"):
        tnp.bincount(np.array([1, 2]), np.ones(3))
    with pytest.raises(TypeError, match="weights must be real numbers.*complex128"):
        tnp.bincount(np.array([1, 2]), np.ones(2, complex))
    with pytest.raises(TypeError, match="length= must be a Python int"):
        tg.grad(lambda w: np.sum(tnp.bincount(np.array([1]), w, length=w.sum())))(np.ones(1))
    with pytest.warns(DeprecationWarning, match="Non-integer input passed to bincount"):
        np.testing.assert_array_equal(tnp.bincount([1.0, 2.0]), [0, 1, 1])


def test_digitize_errors():
    with pytest.raises(TypeError, match="x may not be complex"):
        tnp.digitize(np.array([1j]), np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="bins must be monotonically increasing or decreasing"):
        tnp.digitize(np.array([1.0]), np.array([0.0, 2.0, 1.0]))
    with pytest.raises(ValueError, match="object of too small depth"):
        tnp.digitize(np.array([1.0]), 1.0)
    with pytest.raises(ValueError, match="object too deep"):
        tnp.digitize(np.array([1.0]), np.ones((2, 2)))


def test_isin_errors():
    with pytest.raises(ValueError, match="Invalid kind: 'hash'"):
        tnp.isin(np.arange(3), np.arange(2), kind="hash")
    with pytest.raises(ValueError, match="The 'table' method is only supported for boolean or"):
        tnp.isin(np.arange(3.0), np.arange(2), kind="table")


def test_signed_inf_errors():
    with pytest.raises(TypeError, match="not supported for complex128 values because it would"):
        tnp.isposinf(np.array([1j]))
    with pytest.raises(NotImplementedError, match=r"tracegrad.numpy.isneginf: the argument out="):
        tnp.isneginf(np.ones(2), out=np.zeros(2, bool))


def test_isclose_warns_on_a_non_finite_tolerance():
    with pytest.warns(RuntimeWarning, match="One of rtol or atol is not valid, atol: nan"):
        tnp.isclose(np.ones(2), np.ones(2), atol=np.nan)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="rtol: inf"):
        tnp.isclose(np.ones(2), np.ones(2), rtol=np.inf)


def test_array_equal_refuses_a_list_of_tracers():
    with pytest.raises(TypeError, match="tracegrad: cannot convert a traced"):
        tg.grad(lambda x: np.sum(x) * tnp.array_equal([x[0], x[1]], x))(np.ones(2))


def test_histogram_errors():
    a = np.arange(5.0)
    cases = [
        (ValueError, "'bogus' is not a valid estimator for `bins`", {"bins": "bogus"}),
        (
            TypeError,
            "Automated estimation of the number of bins is not supported for weighted",
            {"bins": "auto", "weights": a},
        ),  # noqa: E501
        (ValueError, "`bins` must be positive, when an integer", {"bins": 0}),
        (TypeError, "`bins` must be an integer, a string, or an array", {"bins": 2.5}),
        (ValueError, "`bins` must be 1d, when an array", {"bins": np.ones((2, 2))}),
        (ValueError, "`bins` must increase monotonically", {"bins": np.array([0.0, 2.0, 1.0])}),
        (ValueError, "max must be larger than min in range parameter", {"range": (2, 1)}),
        (ValueError, r"supplied range of \[0, inf\] is not finite", {"range": (0, np.inf)}),
        (ValueError, "weights should have the same shape as a", {"weights": np.ones(3)}),
        (NotImplementedError, "complex weights are not supported", {"weights": a * 1j}),
    ]
    for error, message, kwargs in cases:
        with pytest.raises(error, match=message):
            tnp.histogram(a, **kwargs)
    with pytest.raises(ValueError, match=r"autodetected range of \[nan, nan\] is not finite"):
        tg.grad(lambda a: np.sum(np.histogram(a, density=True)[0]))(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="Too many bins for data range. Cannot create 100"):
        tnp.histogram_bin_edges(np.array([1.0, 1.0 + 2e-16 * 4]), bins=100)
    with pytest.warns(RuntimeWarning, match="Converting input from bool to <class 'numpy.uint8'"):
        n, _ = tnp.histogram(np.array([True, False, True]), bins=2)
    np.testing.assert_array_equal(n, [1, 2])
