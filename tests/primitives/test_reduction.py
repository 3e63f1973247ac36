"""The reduction family: NumPy-facing functions bit for bit against NumPy through make_graph,
derivative rules against finite differences and analytic oracles (ties, zeros), and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tracegrad as tg
from tests import strategies as S
from tests.primitives.samples.reduction import SAMPLES
from tracegrad.core import bind
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import reduction as red

FLOATS = [np.float32, np.float64]
REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "amax": np.amax,
    "amin": np.amin, "mean": np.mean, "var": np.var, "std": np.std, "ptp": np.ptp,
    "all": np.all, "any": np.any,
}  # fmt: skip


def _bytes(v) -> tuple:
    a = np.ascontiguousarray(np.asarray(v))
    return a.dtype, a.shape, a.tobytes()


def assert_same(got, want):
    """Same dtype, shape and bits (NaNs and the sign of zero included)."""
    g, w = _bytes(got), _bytes(want)
    assert g[:2] == w[:2], f"dtype/shape {g[:2]} != NumPy's {w[:2]}"
    assert g[2] == w[2], f"values differ from NumPy's:\n{np.asarray(got)!r}\n{np.asarray(want)!r}"


def assert_values(got, want):
    """Same dtype, shape and values (an analytic oracle does not fix the sign of zero)."""
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def check_traced(f, *args):
    """`f` traced abstractly with make_graph and run gives NumPy's result, or NumPy's error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            want = f(*args)
        except (ValueError, TypeError, ZeroDivisionError) as err:
            with pytest.raises(type(err)):
                tg.make_graph(f)(*args)
            return None
        graph = tg.make_graph(f)(*args)
        got = graph(*args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    else:
        assert_same(got, want)
    return graph


def draw_axis(data, ndim, *, tuples=True):
    """None, an int (maybe negative) or a tuple of distinct axes (maybe negative, any order)."""
    kinds = ["none"] + (["int"] if ndim else []) + (["tuple"] if tuples else [])
    kind = data.draw(st.sampled_from(kinds), label="axis kind")
    if kind == "none":
        return None
    if kind == "int":
        return data.draw(st.integers(-ndim, ndim - 1), label="axis")
    axes = (
        data.draw(
            st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim), label="axes"
        )
        if ndim
        else []
    )
    negate = data.draw(st.lists(st.booleans(), min_size=len(axes), max_size=len(axes)))
    return tuple(a - ndim if n else a for a, n in zip(axes, negate))


def draw_input(data, dtype, lo=-2.0, hi=2.0):
    x = S.array(data, S.shapes(data), dtype, lo, hi)
    if np.dtype(dtype).kind == "f" and data.draw(st.booleans(), label="round"):
        x = np.round(x).astype(dtype)  # ties and zeros
    return x


# -- forward values: bit for bit against NumPy -------------------------------------------------


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reductions_match_numpy(name, data):
    fn = REDUCTIONS[name]
    dtype = data.draw(st.sampled_from(FLOATS), label="dtype")
    x = draw_input(data, dtype)
    axis = draw_axis(data, x.ndim)
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_traced(lambda t: fn(t, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "var", "std", "ptp"])
@given(data=st.data())
def test_integer_inputs_match_numpy(name, data):
    fn = REDUCTIONS[name]
    dtype = data.draw(st.sampled_from([np.int64, np.int32, np.uint8]), label="dtype")
    x = S.array(data, S.shapes(data), dtype, 0, 5)
    axis = draw_axis(data, x.ndim)
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_traced(lambda t: fn(t, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "all", "any"])
@given(data=st.data())
def test_bool_inputs_match_numpy(name, data):
    fn = REDUCTIONS[name]
    x = S.array(data, S.shapes(data), np.bool_)
    axis = draw_axis(data, x.ndim)
    check_traced(lambda t: fn(t, axis=axis), x)


@pytest.mark.parametrize("name", ["var", "std"])
@given(data=st.data())
def test_var_std_ddof_match_numpy(name, data):
    fn = REDUCTIONS[name]
    dtype = data.draw(st.sampled_from(FLOATS + [np.int64]), label="dtype")
    x = draw_input(data, dtype, -3, 3)
    axis = draw_axis(data, x.ndim)
    ddof = data.draw(st.sampled_from([0, 1, 2, 0.5, 5]), label="ddof")
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_traced(lambda t: fn(t, axis=axis, ddof=ddof, keepdims=keepdims), x)


@given(data=st.data())
def test_dtype_argument_matches_numpy(data):
    name = data.draw(st.sampled_from(["sum", "prod", "mean", "var", "std", "cumsum", "cumprod"]))
    fn = getattr(np, name)
    x = draw_input(data, data.draw(st.sampled_from(FLOATS + [np.int32, np.float16])))
    dtype = data.draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64]))
    if name in ("var", "std") and np.dtype(dtype).kind == "i":
        dtype = np.float64  # NumPy's var with an integer dtype squares in float64 anyway
    check_traced(lambda t: fn(t, dtype=dtype), x)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_arg_reductions_match_numpy(name, data):
    fn = getattr(np, name)
    x = draw_input(data, data.draw(st.sampled_from(FLOATS + [np.int64])))
    axis = draw_axis(data, x.ndim, tuples=False)
    keepdims = data.draw(st.booleans(), label="keepdims")
    graph = check_traced(lambda t: fn(t, axis=axis, keepdims=keepdims), x)
    if graph is not None:
        assert graph.out_avals[0].dtype == np.int64


def test_arg_reductions_of_0d_arrays():
    x = np.float64(2.5)
    for axis in (None, 0, -1):
        check_traced(lambda t, axis=axis: np.argmax(t, axis=axis), x)
        check_traced(lambda t, axis=axis: np.argmin(t, axis=axis, keepdims=True), x)
    check_traced(lambda t: np.cumsum(t, axis=0), x)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@given(data=st.data())
def test_cumulative_match_numpy(name, data):
    fn = getattr(np, name)
    x = draw_input(data, data.draw(st.sampled_from(FLOATS + [np.int32, np.bool_])))
    axis = draw_axis(data, x.ndim, tuples=False)
    check_traced(lambda t: fn(t, axis=axis), x)


@given(data=st.data())
def test_average_matches_numpy(data):
    dtype = data.draw(st.sampled_from(FLOATS + [np.int64]), label="dtype")
    x = draw_input(data, dtype)
    kind = data.draw(st.sampled_from(["none", "full", "axis"]), label="weights")
    returned = data.draw(st.booleans(), label="returned")
    keepdims = data.draw(st.booleans(), label="keepdims")
    if kind == "none":
        axis = draw_axis(data, x.ndim)
        check_traced(lambda t: np.average(t, axis, returned=returned, keepdims=keepdims), x)
        return
    wdtype = data.draw(st.sampled_from(FLOATS), label="weights dtype")
    if kind == "full":
        axis = draw_axis(data, x.ndim)
        w = S.array(data, x.shape, wdtype, 0.5, 2.0)
    else:
        axis = draw_axis(data, x.ndim)
        if axis is None:
            axis = ()
        axis = (axis,) if isinstance(axis, int) else axis
        w = S.array(data, tuple(x.shape[a] for a in axis), wdtype, 0.5, 2.0)
    try:
        with np.errstate(all="ignore"):
            np.average(x, axis, weights=w)
    except ZeroDivisionError:
        # weights summing to zero (over empty axes): NumPy checks the values, which an
        # abstract trace does not have (tested on concrete values below)
        assume(False)
    check_traced(
        lambda t, u: np.average(t, axis, weights=u, returned=returned, keepdims=keepdims), x, w
    )


def test_average_weights_summing_to_zero_raise_like_numpy():
    x, w = np.ones(3), np.array([1.0, -1.0, 0.0])
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        np.average(x, weights=w)
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        tg.numpy.average(x, weights=w)


def test_methods_and_ufunc_reductions_match_numpy():
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    fns = [
        lambda t: t.sum(), lambda t: t.sum(axis=0), lambda t: t.mean(axis=-1, keepdims=True),
        lambda t: t.max(), lambda t: t.min(axis=1), lambda t: t.argmax(), lambda t: t.argmin(1),
        lambda t: t.prod(axis=(0, 1)), lambda t: t.std(ddof=1), lambda t: t.var(axis=0),
        lambda t: t.cumsum(), lambda t: t.cumprod(axis=0), lambda t: (t > 0).all(axis=1),
        lambda t: (t > 0).any(), lambda t: np.add.reduce(t), lambda t: np.maximum.reduce(t, 1),
        lambda t: np.multiply.accumulate(t, axis=1), lambda t: np.add.accumulate(t),
        lambda t: np.logical_or.reduce(t > 0),
    ]  # fmt: skip
    for f in fns:
        check_traced(f, x)


def test_mean_of_empty_slice_warns_and_gives_nan_like_numpy():
    x = np.zeros((0, 3), np.float32)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        graph = tg.make_graph(lambda t: np.mean(t, axis=0))(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_same(graph(x), np.mean(x, axis=0))
    with np.errstate(invalid="ignore"):  # 0 / 0 in the division, as in NumPy
        with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0"):
            got = tg.numpy.var(np.ones(2), ddof=2)
        with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0"):
            want = np.var(np.ones(2), ddof=2)
    assert_same(got, want)


def test_float32_mean_divides_like_numpy_beyond_exact_counts():
    # 2**24 + 1 is not a float32: NumPy divides in float64 and rounds once; so must we
    x = np.ones((1, 1), np.float32)
    s = np.float32(3.0)
    n = 2**24 + 1
    from tracegrad.numpy._reductions import _divide_count

    got = _divide_count(np.asarray(s).reshape(1), n)
    want = np.true_divide(
        np.asarray(s).reshape(1), np.intp(n), out=np.empty(1, np.float32), casting="unsafe"
    )
    assert_same(got, want)
    check_traced(lambda t: np.mean(t), x)


# -- emit: the generated expression computes what impl computes ---------------------------------


@pytest.mark.parametrize("prim", list(SAMPLES), ids=str)
@given(data=st.data())
def test_emit_and_shape_agree_with_impl(prim, data):
    dtype = data.draw(st.sampled_from(FLOATS), label="dtype")
    (x,), params = SAMPLES[prim].draw(data, dtype)
    want = prim.impl(x, **params)
    got = eval(prim.emit("x", **params), {"np": np, "x": x})
    assert_same(got, want)
    aval = prim.shape(tg.Aval(x.shape, x.dtype), **params)
    assert aval.shape == np.shape(want) and aval.dtype == np.asarray(want).dtype


# -- derivative rules: finite differences, float64 ----------------------------------------------


def _inner(a, b) -> float:
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


@pytest.mark.parametrize("prim", [p for p, s in SAMPLES.items() if s.fd], ids=str)
@given(data=st.data())
def test_jvp_and_vjp_match_finite_differences(prim, data):
    (x,), params = SAMPLES[prim].draw(data, np.float64)
    out = prim.impl(x, **params)
    u = S.array(data, x.shape, np.float64)  # input direction
    v = S.array(data, np.shape(out), np.float64)  # output weights
    eps = 1e-6
    fd = _inner(
        v, (prim.impl(x + eps * u, **params) - prim.impl(x - eps * u, **params)) / (2 * eps)
    )
    tol = SAMPLES[prim].tol * max(1.0, abs(fd)) * 10 + 1e-7
    x_dot = prim.jvp((x,), (u,), out=out, **params)
    assert np.shape(x_dot) == np.shape(out)
    assert abs(_inner(v, x_dot) - fd) <= tol
    (x_bar,) = prim.vjp(v, x, out=out, **params)
    assert np.shape(x_bar) == x.shape
    assert abs(_inner(x_bar, u) - fd) <= tol


@pytest.mark.parametrize("prim", [p for p, s in SAMPLES.items() if s.fd], ids=str)
@given(data=st.data())
def test_float32_cotangents_keep_the_input_dtype(prim, data):
    (x,), params = SAMPLES[prim].draw(data, np.float32)
    out = prim.impl(x, **params)
    v = np.ones(np.shape(out), np.float32)
    (x_bar,) = prim.vjp(v, x, out=out, **params)
    assert np.asarray(x_bar).dtype == np.float32 and np.shape(x_bar) == x.shape
    x_dot = prim.jvp((x,), (np.ones_like(x),), out=out, **params)
    assert np.asarray(x_dot).dtype == np.float32


@pytest.mark.parametrize("prim", [p for p, s in SAMPLES.items() if not s.fd], ids=str)
@given(data=st.data())
def test_non_differentiable_rules_give_no_derivative(prim, data):
    (x,), params = SAMPLES[prim].draw(data, np.float64)
    out = prim.impl(x, **params)
    assert not prim.differentiable
    assert prim.vjp(np.ones(np.shape(out)), x, out=out, **params) == (None,)
    assert prim.jvp((x,), (np.ones_like(x),), out=out, **params) is None


@pytest.mark.parametrize(
    "prim", [bc.sum_p, red.prod_p, red.max_p, red.cumsum_p, red.cumprod_p], ids=str
)
def test_integer_inputs_get_no_cotangent(prim):
    x = np.arange(1, 7).reshape(2, 3)
    params = (
        {"axis": (1,), "reverse": False, "exclusive": False}
        if "cum" in prim.name
        else {"axis": (1,), "keepdims": False}
    )
    out = prim.impl(x, **params)
    assert prim.vjp(np.ones(np.shape(out)), x, out=out, **params) == (None,)


def test_rules_trace_into_graphs():
    # the same rules run on tracers: a vjp traced with make_graph equals the eager one
    x = np.array([[1.0, 3.0, 3.0], [0.5, -2.0, 4.0]])
    for prim, params in [
        (red.max_p, {"axis": (1,), "keepdims": False}),
        (red.prod_p, {"axis": (0, 1), "keepdims": True}),
        (red.cumprod_p, {"axis": (1,), "reverse": True, "exclusive": False}),
        (red.cumsum_p, {"axis": (0,), "reverse": False, "exclusive": True}),
    ]:
        out = prim.impl(x, **params)
        v = np.linspace(-1.0, 1.0, np.size(out)).reshape(np.shape(out))
        graph = tg.make_graph(lambda a, b, c, p=prim, k=params: p.vjp(b, a, out=c, **k))(x, v, out)
        (eager,) = prim.vjp(v, x, out=out, **params)
        (traced,) = graph(x, v, out)
        assert_same(traced, eager)


# -- analytic oracles: ties of max/min, zeros of prod --------------------------------------------


def _vjp(prim, x, v, **params):
    out = prim.impl(x, **params)
    return prim.vjp(np.asarray(v, x.dtype), x, out=out, **params)[0]


def _jvp(prim, x, u, **params):
    out = prim.impl(x, **params)
    return prim.jvp((x,), (np.asarray(u, x.dtype),), out=out, **params)


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_min_split_ties_evenly(dtype):
    x = np.array([1.0, 3.0, 3.0], dtype)
    assert_values(
        _vjp(red.max_p, x, 1.0, axis=(0,), keepdims=False), np.array([0, 0.5, 0.5], dtype)
    )
    assert_values(
        _vjp(red.min_p, -x, 1.0, axis=(0,), keepdims=False), np.array([0, 0.5, 0.5], dtype)
    )
    assert _jvp(red.max_p, x, [5.0, 1.0, 2.0], axis=(0,), keepdims=False) == 1.5
    # per row, and over several axes with keepdims
    m = np.array([[2.0, 2.0, 2.0, 0.0], [1.0, 7.0, 0.0, 7.0]], dtype)
    got = _vjp(red.max_p, m, [3.0, 2.0], axis=(1,), keepdims=False)
    assert_values(got, np.array([[1, 1, 1, 0], [0, 1, 0, 1]], dtype))
    got = _vjp(red.max_p, m, [[4.0]], axis=(0, 1), keepdims=True)
    assert_values(got, np.array([[0, 0, 0, 0], [0, 2, 0, 2]], dtype))


def test_grad_of_max_splits_ties_evenly():
    assert_values(
        tg.grad(lambda t: np.max(t))(np.array([1.0, 3.0, 3.0])), np.array([0.0, 0.5, 0.5])
    )
    assert_values(
        tg.grad(lambda t: np.min(t, axis=0).sum())(np.array([[1.0, 2.0], [1.0, 3.0]])),
        np.array([[0.5, 1.0], [0.5, 0.0]]),
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_nanmax_and_nanmin_share_max_and_mins_tie_weights(dtype):
    # the NaN-ignoring extrema are reductions too: ties shared as max's, NaNs get nothing,
    # an all-NaN slice nothing at all (JAX's nanmax)
    assert {red.nanmax_p, red.nanmin_p} <= set(red.PRIMITIVES)
    x = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.nan], [np.nan, np.nan, np.nan]], dtype)
    want = np.array([[0, 0.5, 0.5], [0, 1, 0], [0, 0, 0]], dtype)
    assert_values(_vjp(red.nanmax_p, x, [1.0, 1.0, 1.0], axis=(1,), keepdims=False), want)
    assert_values(_vjp(red.nanmin_p, -x, [1.0, 1.0, 1.0], axis=(1,), keepdims=False), want)
    finite = x[:1]
    assert_values(
        red.tie_weights(finite, red.max(finite, (1,)), (1,), False),
        red.tie_weights(finite, red.nanmax(finite, (1,)), (1,), False, ignore_nan=True),
    )


def test_a_nan_maximum_gives_nan_weights_without_a_warning():
    # JAX's 0 / 0 for a slice whose maximum is NaN (it equals no element), warning of nothing
    x = np.array([[1.0, np.nan, 2.0], [1.0, 3.0, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = tg.grad(lambda t: np.sum(np.max(t, axis=1)))(x)
    assert np.all(np.isnan(got[0]))
    assert_values(got[1], np.array([0.0, 0.5, 0.5]))


def test_grad_of_prod_with_zeros():
    assert_values(tg.grad(np.prod)(np.array([2.0, 0.0, 3.0])), np.array([0.0, 6.0, 0.0]))
    assert_values(tg.grad(np.prod)(np.array([0.0, 2.0, 0.0])), np.zeros(3))


@pytest.mark.parametrize("dtype", FLOATS)
def test_grad_of_mean_var_std_match_formulas(dtype):
    x = np.array([[1.0, 2.0, 4.0], [0.5, 3.0, -1.0]], dtype)
    x64 = x.astype(np.float64)
    n = 3
    centered = x64 - x64.mean(axis=1, keepdims=True)
    std = x64.std(axis=1, ddof=1, keepdims=True)
    oracles = {
        "mean": (lambda t: np.mean(t, axis=1).sum(), np.full(x.shape, 1 / n)),
        "var": (lambda t: np.var(t, axis=1).sum(), 2 * centered / n),
        "std": (lambda t: np.std(t, axis=1, ddof=1).sum(), centered / ((n - 1) * std)),
    }
    for name, (f, want) in oracles.items():
        got = tg.grad(f)(x)
        assert got.dtype == dtype, name
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", FLOATS)
def test_prod_gradient_is_exact_at_zeros(dtype):
    p = dict(axis=(0,), keepdims=False)
    one_zero = np.array([2.0, 0.0, 3.0], dtype)
    assert_values(_vjp(red.prod_p, one_zero, 1.0, **p), np.array([0.0, 6.0, 0.0], dtype))
    assert _jvp(red.prod_p, one_zero, [1.0, 1.0, 1.0], **p) == 6.0
    two_zeros = np.array([0.0, 2.0, 0.0], dtype)
    assert_values(_vjp(red.prod_p, two_zeros, 1.0, **p), np.zeros(3, dtype))
    assert _jvp(red.prod_p, two_zeros, [1.0, 1.0, 1.0], **p) == 0.0
    # the same over two axes at once (flattened internally), with keepdims and a cotangent
    m = np.array([[2.0, 0.0, 3.0], [1.0, 5.0, -1.0]], dtype)
    got = _vjp(red.prod_p, m, [[2.0]], axis=(0, 1), keepdims=True)
    assert_values(got, np.array([[0, 2 * -30.0, 0], [0, 0, 0]], dtype))
    # and along axis 0 of a 3-D array, where the reduced axes are not trailing
    t = np.array([[[0.0, 2.0]], [[4.0, 0.0]], [[3.0, 5.0]]], dtype)  # shape (3, 1, 2)
    got = _vjp(red.prod_p, t, [[1.0, 1.0]], axis=(0,), keepdims=False)
    assert_values(got, np.array([[[12.0, 0.0]], [[0.0, 10.0]], [[0.0, 0.0]]], dtype))
    got = _vjp(red.prod_p, t, 1.0, axis=(0, 2), keepdims=False)
    assert_values(got, np.zeros((3, 1, 2), dtype))


def test_prod_gradient_without_zeros_is_product_of_the_others():
    x = np.array([[1.5, -0.5, 2.0], [3.0, 0.25, -4.0]])
    got = _vjp(red.prod_p, x, np.ones(3), axis=(0,), keepdims=False)
    np.testing.assert_allclose(got, np.prod(x, axis=0) / x, rtol=1e-15)
    got = _vjp(red.prod_p, x, 1.0, axis=(0, 1), keepdims=False)
    np.testing.assert_allclose(got, np.prod(x) / x, rtol=1e-15)
    # a product over no axes is the identity
    assert_values(
        _vjp(red.prod_p, x, np.full(x.shape, 2.0), axis=(), keepdims=False), np.full(x.shape, 2.0)
    )


def test_cumsum_vjp_is_reverse_cumsum_exactly():
    # a reverse accumulation, not total - cumsum + x_bar, which cancels catastrophically
    x = np.zeros(3, np.float32)
    v = np.array([1e8, 1.0, 1.0], np.float32)
    got = _vjp(red.cumsum_p, x, v, axis=(0,), reverse=False, exclusive=False)
    assert_same(got, np.array([1e8 + 2, 2.0, 1.0], np.float32))


def test_cumulative_flags_compute_what_they_say():
    x = np.array([2.0, 3.0, 5.0])
    cases = {
        (False, False): [2, 6, 30], (True, False): [30, 15, 5],
        (False, True): [1, 2, 6], (True, True): [15, 5, 1],
    }  # fmt: skip
    for (reverse, exclusive), want in cases.items():
        got = red.cumprod(x, (0,), reverse=reverse, exclusive=exclusive)
        assert_same(got, np.array(want, np.float64))
    assert_same(red.cumsum(x, 0, reverse=True, exclusive=True), np.array([8.0, 5.0, 0.0]))
    assert_same(red.cumsum(np.zeros((2, 0)), 1, exclusive=True), np.zeros((2, 0)))


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "sum",
        "prod",
        "max",
        "min",
        "mean",
        "var",
        "std",
        "ptp",
        "all",
        "any",
        "argmax",
        "argmin",
        "cumsum",
        "cumprod",
    ],
)
def test_axis_out_of_range_names_the_function_and_ndim(name):
    fn = getattr(np, name)
    with pytest.raises(np.exceptions.AxisError, match=rf"^{name}: axis 2 .*dimension 2"):
        tg.make_graph(lambda t: fn(t, axis=2))(np.ones((2, 3)))
    with pytest.raises(np.exceptions.AxisError, match=rf"^{name}: axis -3 .*dimension 2"):
        getattr(tg.numpy, name)(np.ones((2, 3)), axis=-3)


def test_primitive_shape_rules_reject_bad_axes():
    graph_of = tg.make_graph(lambda t: bind(bc.sum_p, t, axis=(0, 2), keepdims=False))
    with pytest.raises(ValueError, match=r"^sum: axis \(0, 2\) .*shape \(2, 3\) \(ndim 2\)"):
        graph_of(np.ones((2, 3)))
    graph_of = tg.make_graph(lambda t: bind(red.argmax_p, t, axis=(0, 1), keepdims=False))
    with pytest.raises(ValueError, match=r"^argmax: axis \(0, 1\) .*one-axis"):
        graph_of(np.ones((2, 3)))
    graph_of = tg.make_graph(
        lambda t: bind(red.cumsum_p, t, axis=(1,), reverse=False, exclusive=False)
    )
    with pytest.raises(ValueError, match=r"^cumsum: axis \(1,\) .*shape \(3,\)"):
        graph_of(np.ones(3))


@pytest.mark.parametrize("name", ["max", "min", "amax", "amin", "ptp"])
def test_max_of_empty_axis_is_an_error_naming_the_shape(name):
    fn = getattr(np, name)
    with pytest.raises(ValueError, match=r"zero-size array to reduction operation"):
        fn(np.zeros((0, 3)), axis=0)
    with pytest.raises(ValueError, match=r"^(max|min): zero-size array.*shape \(0, 3\)"):
        tg.make_graph(lambda t: fn(t, axis=0))(np.zeros((0, 3)))
    # an empty result without an empty reduced axis is fine, as in NumPy
    check_traced(lambda t: fn(t, axis=1), np.zeros((0, 3)))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduction_errors(name):
    fn = getattr(np, name)
    with pytest.raises(
        ValueError,
        match=rf"^{name}: attempt to get {name} of an empty sequence.*"
        r"shape \(2, 0\)",
    ):
        tg.make_graph(lambda t: fn(t, axis=1))(np.zeros((2, 0)))
    with pytest.raises(TypeError, match=rf"^{name}: axis must be an integer or None"):
        tg.make_graph(lambda t: fn(t, axis=(0,)))(np.zeros((2, 3)))


# (where= and initial= are supported: tests/numpy/test_options.py)
@pytest.mark.parametrize("name, kwargs", [
    ("var", {"out": np.zeros(())}), ("cumsum", {"out": np.zeros(2)}),
    ("sum", {"out": np.zeros(())}), ("max", {"out": np.zeros(())}),
])  # fmt: skip
def test_unsupported_arguments_raise_naming_them(name, kwargs):
    arg = next(iter(kwargs))
    fn = getattr(np, name)
    with pytest.raises(NotImplementedError, match=rf"tracegrad.numpy.{name}: the argument {arg}="):
        tg.make_graph(lambda t: fn(t, **kwargs))(np.ones(2))


def test_average_errors_match_numpy():
    x = np.ones((2, 3))
    with pytest.raises(TypeError, match="Axis must be specified"):
        tg.numpy.average(x, weights=np.ones(3))
    with pytest.raises(ValueError, match="Shape of weights must be consistent"):
        tg.numpy.average(x, axis=1, weights=np.ones(2))
    with pytest.raises(ValueError, match="ddof and correction"):
        tg.numpy.var(x, ddof=1, correction=1)


def test_cumprod_gradient_at_zeros_is_exact():
    # d/dx_i sum_j w_j cumprod(x)_j = sum_{j>=i} w_j prod_{k<=j, k!=i} x_k, written out
    w = np.array([1.0, 2.0, 3.0, 4.0])

    def expected(x):
        n = len(x)
        return np.array(
            [
                sum(w[j] * np.prod([x[k] for k in range(j + 1) if k != i]) for j in range(i, n))
                for i in range(n)
            ]
        )

    for x in (
        [2.0, 0.0, 3.0, 0.5],
        [2.0, 0.0, 3.0, 0.0],
        [0.0, 0.0, 1.0, 2.0],
        [1.5, 2.0, 3.0, 0.5],
    ):
        x = np.array(x)
        np.testing.assert_allclose(tg.grad(lambda x: np.sum(np.cumprod(x) * w))(x), expected(x))
        rev = tg.grad(lambda x: np.sum(np.flip(np.cumprod(np.flip(x))) * w[::-1]))(x)
        np.testing.assert_allclose(rev, expected(x[::-1])[::-1])
        _, tangent = tg.jvp(lambda x: np.sum(np.cumprod(x) * w), (x,), (np.ones(4),))
        np.testing.assert_allclose(tangent, expected(x).sum())


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_mean_with_an_integer_dtype_truncates_into_it_as_numpy(dtype):
    # NumPy sums in the integer dtype, then divides into it (unsafe cast: toward zero)
    x = np.array([[1.5, 3.0, 7.0], [2.0, 2.0, 1.0], [0.5, 4.0, 2.0]])
    for axis in (None, 0, 1):
        check_traced(lambda t, axis=axis: np.mean(t, axis=axis, dtype=dtype), x)
        check_traced(lambda t, axis=axis: np.mean(t, axis=axis, dtype=dtype, where=t > 1.0), x)
