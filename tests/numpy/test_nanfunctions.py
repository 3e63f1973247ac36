"""NumPy's NaN-ignoring functions in tracegrad.numpy (tracegrad/numpy/_nanfunctions.py).

One parametrized test per name runs `check_name` (bits against NumPy outside a trace, on
tracers and under jit; derivatives against finite differences, NaNs getting none; vmap against
a loop) in float32 and float64, on arrays with NaNs in every row and column but no all-NaN
slice. JAX is the oracle for the derivatives; then come all-NaN slices (NumPy's values and
warnings where the values are known, JAX's -1 for nanargmax under jit), NumPy's per-slice
paths (long slices, lists), and every error's message.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)


def _with_nans(dtype, shape=(4, 5), seed=0, low=None):
    """Distinct values 0.25 apart (|x| >= `low` if given, for products) with one NaN in every
    row, at column (row + 1) % columns: NaNs in most columns, and no all-NaN slice."""
    n = int(np.prod(shape))
    order = np.random.default_rng(seed).permutation(n)
    x = (order - n / 2) * 0.25
    if low is not None:  # away from zero, for products
        x = np.sign(x + 0.125) * (low + np.abs(x) / n)
    x = x.reshape(shape)
    for r in range(shape[0]):
        x[r, (r + 1) % shape[1]] = np.nan
    return x.astype(dtype)


# -- the per-name checks ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nansum", "nanmean"])
def test_sums_and_means(dtype, name):
    x = _with_nans(dtype)
    check_name(name, (x,))
    check_name(name, (x,), {"axis": 1, "keepdims": True})
    check_name(name, (x,), {"axis": (0, 1), "dtype": np.float64})


@pytest.mark.parametrize("dtype", FLOATS)
def test_nanprod(dtype):
    x = _with_nans(dtype, low=0.75)
    check_name("nanprod", (x,), {"axis": 0})
    check_name("nanprod", (x[:2],))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_variances(dtype, name):
    x = _with_nans(dtype)
    check_name(name, (x,))
    check_name(name, (x,), {"axis": 1, "ddof": 1, "keepdims": True})
    check_name(name, (x,), {"axis": 0, "correction": 1})


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_extrema(dtype, name):
    x = _with_nans(dtype)
    check_name(name, (x,))
    check_name(name, (x,), {"axis": 0, "keepdims": True})


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_arg_extrema(dtype, name):
    x = _with_nans(dtype)
    check_name(name, (x,), differentiable=False)
    check_name(name, (x,), {"axis": 1, "keepdims": True}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nancumsum", "nancumprod"])
def test_cumulative(dtype, name):
    x = _with_nans(dtype, low=0.75)
    check_name(name, (x,))
    check_name(name, (x,), {"axis": 0})


@pytest.mark.parametrize("dtype", FLOATS)
def test_nanmedian(dtype):
    x = _with_nans(dtype)
    check_name("nanmedian", (x,))  # one slice: NumPy's 1-D path
    check_name("nanmedian", (x,), {"axis": 1})  # short slices: np.ma.median's path
    check_name("nanmedian", (x,), {"axis": (0, 1), "keepdims": True})
    check_name("nanmedian", (x[:, :3],), {"axis": 0})


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nanpercentile", "nanquantile"])
def test_nan_quantiles(dtype, name):
    x = _with_nans(dtype, shape=(8, 3))
    q = np.array([0.33, 0.54, 0.955]) * (100 if name == "nanpercentile" else 1)
    small = 2.0**-10  # steps in q stay between the kinks (where an index crosses an integer)
    check_name(name, (x, q), {"axis": 0}, eps=small)
    check_name(name, (x, q), {"axis": 0, "method": "nearest"}, eps=small)
    check_name(name, (x, q[1]), static=(1,))
    check_name(name, (x, q[:2]), {"axis": 1, "method": "midpoint", "keepdims": True}, eps=small)
    weights = np.random.default_rng(1).random(x.shape)  # NaNs' weights are ignored
    weighted = {"axis": 0, "method": "inverted_cdf", "weights": weights}
    check_name(name, (x, q), weighted, static=(1,))


# -- derivatives against JAX ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, kw",
    [
        ("nansum", {}),
        ("nanprod", {"axis": 1}),
        ("nanmean", {"axis": 1}),
        ("nanvar", {"axis": 0, "ddof": 1}),
        ("nanstd", {}),
        ("nanmax", {"axis": 1}),
        ("nanmin", {}),
        ("nancumsum", {"axis": 1}),
        ("nancumprod", {}),
        ("nanmedian", {"axis": 1}),
        ("nanmedian", {}),
        ("nanpercentile", {"q": 30, "axis": 1}),
        ("nanquantile", {"q": np.array([0.2, 0.7]), "axis": 0}),
    ],
)
def test_grads_match_jax(name, kw):
    x = _with_nans(np.float64, low=0.75)
    x[2, 2] = x[2, 1]  # a tie for the extrema (shared evenly, as in JAX)
    x[3] = np.nan  # an all-NaN row: no derivative flows there

    def f(x, mod):
        return mod.nansum(getattr(mod, name)(x, **kw) * 1.5)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tg.grad(lambda x: f(x, np))(x)
        jitted = tg.jit(tg.grad(lambda x: f(x, np)))(x)
    want = jax.jit(jax.grad(lambda x: f(x, jnp)))(x)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(jitted, want, atol=1e-12)


@pytest.mark.parametrize("ddof", [1, 2])
@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_a_slice_of_at_most_ddof_numbers_gets_a_zero_derivative(name, ddof):
    # its value is NaN (no degrees of freedom left), its derivative 0 as JAX's: not 0 / 0
    x = np.array([[1.0, 2.0, 3.0], [np.nan, np.nan, 4.0], [np.nan, 5.0, 7.0]])

    def f(x, mod):
        return mod.nansum(getattr(mod, name)(x, axis=1, ddof=ddof) * 1.5)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tg.grad(lambda x: f(x, np))(x)
        jitted = tg.jit(tg.grad(lambda x: f(x, np)))(x)
        assert_bitwise_equal(tg.jit(lambda x: f(x, np))(x), f(x, np))
    want = jax.grad(lambda x: f(x, jnp))(x)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(jitted, want, atol=1e-12)
    bad_rows = [1, 2] if ddof == 2 else [1]  # the rows with at most ddof numbers
    assert np.all(got[bad_rows] == 0.0)


_SIGNED_ZEROS = [
    [-1.0, 1.0, np.nan, -0.0, -0.0],  # the middle two are -0.0: their mean is 0.0
    [-0.0, np.nan],  # one number: np.mean([-0.0]) is 0.0 too
    [np.nan, -0.0, 3.0, -0.0],
    [1.0, -0.0, -1.0, np.nan],
]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nanmedian_under_jit_is_numpys_mean_of_the_middle(dtype):
    # np.median's mean sums from +0.0 (and float16 in float32): not (lo + hi) / 2
    cases = [np.array(x, dtype) for x in _SIGNED_ZEROS]
    cases.append(np.array([65504.0, 65504.0, np.nan], dtype))  # float16's largest, twice
    for x in cases:
        want = np.nanmedian(x)
        assert_bitwise_equal(tg.jit(np.nanmedian)(x), want, f"{x}")
        pair = np.stack([x, x[::-1]])
        loop = np.stack([np.nanmedian(pair[0]), np.nanmedian(pair[1])])
        assert_bitwise_equal(tg.vmap(np.nanmedian)(pair), loop, f"{x} vmap")
    long = np.full((3, 601), -0.0, dtype)  # slices of 600 or more: NumPy's 1-D path each
    long[0, 3] = np.nan
    long[1, :300] = np.nan
    long[2, 1::2] = np.nan
    f = tg.jit(lambda x: np.nanmedian(x, axis=1))
    assert_bitwise_equal(f(long), np.nanmedian(long, axis=1))


# -- all-NaN slices: values, warnings, errors -------------------------------------------------


def _all_nan_row(dtype=np.float64):
    x = _with_nans(dtype)
    x[3] = np.nan
    return x


@pytest.mark.parametrize(
    "name, kw, message",
    [
        ("nanmax", {"axis": 1}, "All-NaN slice encountered"),
        ("nanmin", {"axis": 1}, "All-NaN slice encountered"),
        ("nanmean", {"axis": 1}, "Mean of empty slice"),
        ("nanvar", {"axis": 1}, r"Degrees of freedom <= 0 for slice\."),
        ("nanstd", {"axis": 1}, r"Degrees of freedom <= 0 for slice\."),
        ("nanmedian", {"axis": 1}, "All-NaN slice encountered"),
        ("nanmedian", {}, None),
        ("nanquantile", {"q": 0.3, "axis": 1}, "All-NaN slice encountered"),
        ("nanpercentile", {"q": [30.0, 60.0], "axis": 1}, "All-NaN slice encountered"),
    ],
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_all_nan_slices_give_numpys_values_and_warnings(name, kw, message, dtype):
    x = _all_nan_row(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(x, **kw)
    if message is None:
        got = getattr(tnp, name)(x, **kw)
    else:
        with pytest.warns(RuntimeWarning, match=message):
            got = getattr(tnp, name)(x, **kw)
    assert_bitwise_equal(got, want)
    with warnings.catch_warnings():  # under jit the values are unknown: no warning, same bits
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        got = tg.jit(lambda x: getattr(np, name)(x, **kw))(x)
    assert_bitwise_equal(got, want, nan_payloads=False)


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_arg_extrema_of_an_all_nan_slice(name):
    x = _all_nan_row()
    with pytest.raises(ValueError, match=r"All-NaN slice encountered"):
        getattr(tnp, name)(x, axis=1)
    with pytest.raises(ValueError, match=r"All-NaN slice encountered"):
        tg.grad(lambda x: np.sum(x[0] * getattr(np, name)(x, axis=1)[0]))(x)
    # under jit the values are unknown: -1 there, as jax.numpy gives
    got = tg.jit(lambda x: getattr(np, name)(x, axis=1))(x)
    want = jax.jit(lambda x: getattr(jnp, name)(x, axis=1))(x)
    assert_bitwise_equal(got, np.asarray(want))
    assert got[3] == -1


def test_nanmax_of_a_list_takes_numpys_list_path():
    # NumPy replaces NaNs by -inf and warns "All-NaN axis" for lists (fmax.reduce for arrays)
    with pytest.warns(RuntimeWarning, match=r"All-NaN axis encountered"):
        got = tnp.nanmax([[1.0, np.nan], [np.nan, np.nan]], axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_bitwise_equal(got, np.nanmax([[1.0, np.nan], [np.nan, np.nan]], axis=1))
    assert_bitwise_equal(tnp.nanmin([3, 1, 2]), np.nanmin([3, 1, 2]))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_nanmax_keeps_fmax_reduces_signed_zero(dtype, name):
    # which of two tied zeros survives is fmax.reduce's choice (a composition differs here)
    x = np.array([[0.0, 0.0, -0.0], [-0.0, np.nan, 0.0]], dtype)
    want = getattr(np, name)(x, axis=1)
    assert_bitwise_equal(getattr(tnp, name)(x, axis=1), want)
    fn = getattr(np, name)
    assert_bitwise_equal(tg.jit(lambda x: fn(x, axis=1))(x), want)


def test_long_slices_take_numpys_per_slice_path():
    # nanmedian of slices of 600 or more runs np.apply_along_axis over the 1-D path
    x = _with_nans(np.float32, shape=(2, 601))
    x[1, ::2] = np.nan
    check_name("nanmedian", (x,), {"axis": 1}, vmap=False)
    x[0] = np.nan  # the first slice all NaN: NumPy's buffer takes that result's dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_bitwise_equal(tnp.nanmedian(x, axis=1), np.nanmedian(x, axis=1))
        q = np.array([0.25, 0.5])
        assert_bitwise_equal(tnp.nanquantile(x, q, axis=1), np.nanquantile(x, q, axis=1))


def test_integer_inputs_have_no_nans():
    x = np.arange(12).reshape(3, 4)
    for name in ["nansum", "nanmean", "nanvar", "nanmax", "nanargmin", "nanmedian", "nancumsum"]:
        assert_bitwise_equal(getattr(tnp, name)(x, axis=0), getattr(np, name)(x, axis=0))
    assert_bitwise_equal(tnp.nanquantile(x, 0.3, axis=1), np.nanquantile(x, 0.3, axis=1))


# -- errors -----------------------------------------------------------------------------------


def test_errors_name_the_function_and_argument():
    x = _with_nans(np.float64)
    with pytest.raises(NotImplementedError, match=r"tracegrad.numpy.nansum: the argument out="):
        tnp.nansum(x, out=np.ones(()))
    with pytest.raises(NotImplementedError, match=r"nanprod: the argument initial="):
        tnp.nanprod(x, initial=1.0)
    with pytest.raises(NotImplementedError, match=r"nanmean: the argument where="):
        tnp.nanmean(x, where=x > 0)
    with pytest.raises(NotImplementedError, match=r"nanmax: the argument initial="):
        tnp.nanmax(x, initial=0.0)
    with pytest.raises(NotImplementedError, match=r"nanmedian: the argument out="):
        tnp.nanmedian(x, out=np.ones(()))


def test_errors_as_numpy_gives_them():
    x = _with_nans(np.float64)
    with pytest.raises(TypeError, match=r"If a is inexact, then dtype must be inexact"):
        tnp.nanmean(x, dtype=np.int64)
    with pytest.raises(ValueError, match=r"ddof and correction can't be provided simultaneously"):
        tnp.nanvar(x, ddof=1, correction=1)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        tnp.nanpercentile(x, 101)
    with pytest.raises(TypeError, match=r"a must be an array of real numbers"):
        tnp.nanquantile(x.astype(complex), 0.5)
    w = np.ones_like(x)
    w[0] = 0.0  # the first row's numbers weigh nothing
    with pytest.raises(ValueError, match=r"Weights included NaN, inf or were all zero"):
        tnp.nanquantile(x, 0.5, axis=1, method="inverted_cdf", weights=w)
