"""diff, ediff1d, gradient, trapezoid, cumulative_sum, cumulative_prod, interp, convolve and
correlate: NumPy's bits, derivatives and vmap through `check_name` (float32 and float64), JAX's
gradients as an oracle (float64), and NumPy's errors with NumPy's messages.

interp's points stay at least 1/8 from its knots (its derivative jumps there), except in the
tests of the one-sided rule at the knots. The primitives' own rules are checked from their
SAMPLES rows in tests/primitives.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.core import bind
from tracegrad.primitives import calculus as calc
from tracegrad.testing import assert_bitwise_equal, check_grads

_RNG = np.random.default_rng(13)
X = _RNG.standard_normal((3, 5))
V = _RNG.standard_normal(7)
XP = np.array([-1.5, -0.5, 0.0, 1.0, 2.5])  # knots on multiples of 0.5
FP = np.array([0.3, -1.2, 0.8, 2.0, -0.4])
POINTS = np.array([[-2.125, -1.375, -0.625, 0.375], [0.625, 1.875, 2.375, 3.125]])  # 1/8 off
COORDS = np.array([0.0, 0.4, 1.1, 1.5, 2.7])  # uneven
EVEN = np.array([0.0, 0.5, 1.0, 1.5, 2.0])


def _cases():
    i = np.arange(-2, 4)
    return [
        ("diff", (X,), {}),
        ("diff", (X, 2, 0), {}),
        ("diff", (X, 1, -1, np.float64(1.5), X[:, :2]), {}),
        ("diff", (i,), {}),
        ("diff", (i > 0,), {}),
        ("ediff1d", (X,), {}),
        ("ediff1d", (X, np.array([1.0, 2.0]), np.array(3.0)), {}),
        ("gradient", (X,), {}),
        ("gradient", (X, np.float64(0.5), np.float64(2.0)), {}),
        ("gradient", (X, np.array([0.0, 1.0, 3.0]), COORDS), {"edge_order": 2}),
        ("gradient", (X, EVEN), {"axis": 1}),
        ("gradient", (X[0], COORDS), {}),
        ("gradient", (i,), {"edge_order": 2}),
        ("trapezoid", (X,), {}),
        ("trapezoid", (X, COORDS), {}),
        ("trapezoid", (X, None, np.float64(0.3), 0), {}),
        ("trapezoid", (X, np.cumsum(np.abs(X) + 0.1, axis=0), 1.0, 0), {}),
        ("trapezoid", (i,), {}),
        ("cumulative_sum", (X[0],), {}),
        ("cumulative_sum", (X,), {"axis": 1, "include_initial": True}),
        ("cumulative_sum", (i,), {}),
        ("cumulative_prod", (X,), {"axis": 0, "include_initial": True}),
        ("cumulative_prod", (X[1],), {"dtype": np.float64}),
        ("interp", (POINTS, XP, FP), {}),
        ("interp", (POINTS, XP, FP, np.float64(-3.0), np.float64(4.0)), {}),
        ("interp", (POINTS, XP[:1], FP[:1]), {}),
        ("interp", (POINTS, XP, FP), {"period": 5.0}),
        ("interp", (np.array([-2, -1, 2, 3]), XP, FP), {}),
        ("convolve", (X[0], V), {}),
        ("convolve", (V, X[0, :2], "same"), {}),
        ("convolve", (V, X[0], "valid"), {}),
        ("convolve", (i, i[:3]), {}),
        ("correlate", (X[0], V), {}),
        ("correlate", (V, X[0, :2], "same"), {}),
        ("correlate", (X[0, :4], V, "same"), {}),
        ("correlate", (V, X[0], "full"), {}),
    ]


CASES = _cases()


def _id(case):
    name, args, kwargs = case
    shapes = ",".join(
        f"{a.dtype.kind}{list(a.shape)}" if isinstance(a, np.ndarray) else repr(a) for a in args
    )
    extra = ",".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"{name}({shapes}{',' + extra if extra else ''})"


def _as(a, dtype):
    return a.astype(dtype) if isinstance(a, np.ndarray | np.floating) and a.dtype.kind == "f" else a


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_name_against_numpy(case, dtype):
    name, args, kwargs = case
    check_name(name, [_as(a, dtype) for a in args], kwargs)


@pytest.mark.parametrize("name", ["interp", "correlate"])
def test_second_derivatives(name):
    args = (POINTS, XP, FP) if name == "interp" else (X[0], V, "same")
    check_name(name, args, order=2, vmap=False, jit=False)


# -- JAX as the oracle of gradients -----------------------------------------------------------


@pytest.fixture(scope="module")
def jnp():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return pytest.importorskip("jax.numpy")


# one case per name (the richest JAX runs: its gradient has only edge_order=1)
JAX_CASES = [
    ("diff", (X, 1, -1, np.float64(1.5), X[:, :2]), {}),
    ("ediff1d", (X, np.array([1.0, 2.0]), np.array(3.0)), {}),
    ("gradient", (X, np.float64(0.5), np.float64(2.0)), {}),
    ("gradient", (X[0], COORDS), {}),
    ("trapezoid", (X, COORDS), {}),
    ("cumulative_sum", (X,), {"axis": 1, "include_initial": True}),
    ("cumulative_prod", (X,), {"axis": 0, "include_initial": True}),
    ("interp", (POINTS, XP, FP, np.float64(-3.0), np.float64(4.0)), {}),
    ("interp", (POINTS, XP, FP), {"period": 5.0}),
    ("convolve", (V, X[0, :2], "same"), {}),
    ("correlate", (X[0, :4], V, "same"), {}),
]


def _weighted_total(fn, weights):
    def total(*args):
        out = fn(*args)
        outs = out if isinstance(out, tuple | list) else (out,)
        return sum((o * w).sum() for o, w in zip(outs, weights))

    return total


@pytest.mark.parametrize("case", JAX_CASES, ids=[_id(c) for c in JAX_CASES])
def test_gradients_match_jax(case, jnp):
    import jax

    name, args, kwargs = case
    floats = [k for k, a in enumerate(args) if isinstance(a, np.ndarray | np.floating)]

    def call(module):
        def fn(*values):
            full = list(args)
            for k, v in zip(floats, values):
                full[k] = v
            return getattr(module, name)(*full, **kwargs)

        return fn

    primals = [np.asarray(args[k], np.float64) for k in floats]
    out = getattr(np, name)(*args, **kwargs)
    outs = out if isinstance(out, tuple | list) else (out,)
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal(np.shape(o)) for o in outs]
    argnums = tuple(range(len(floats)))
    ours = tg.grad(_weighted_total(call(np), weights), argnums=argnums)(*primals)
    theirs = jax.jit(jax.grad(_weighted_total(call(jnp), weights), argnums=argnums))(*primals)
    for g, want in zip(ours, theirs):
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_complex_sliding_products(name, jnp):
    import jax

    a = X[0] + 1j * X[1]
    v = V[:3] - 0.5j * V[3:6]
    for mode in ("full", "same", "valid"):
        for first, second in ((a, v), (v, a)):
            want = getattr(np, name)(first, second, mode)
            assert_bitwise_equal(getattr(tnp, name)(first, second, mode), want)
            f = tg.jit(lambda p, q, mode=mode: getattr(np, name)(p, q, mode))
            assert_bitwise_equal(f(first, second), want)
            if (mode, first is a) not in (("full", True), ("same", False), ("valid", False)):
                continue  # JAX's compiles are slow: each mode once, the swap twice
            ct = np.conj(want) + 0.25j
            _, back = tg.vjp(f, first, second)
            _, jax_back = jax.vjp(
                jax.jit(lambda p, q, mode=mode: getattr(jnp, name)(p, q, mode)), first, second
            )
            for g, h in zip(back(ct), jax_back(ct)):
                np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)


def test_mixed_dtypes_promote_as_numpy():
    a32, ints = X[0].astype(np.float32), np.arange(1, 4)
    for name in ("convolve", "correlate"):
        for first, second in ((a32, V), (ints, a32), (V, ints), (ints, ints[::-1])):
            want = getattr(np, name)(first, second)
            assert_bitwise_equal(getattr(tnp, name)(first, second), want)
            assert_bitwise_equal(tg.jit(getattr(np, name))(first, second), want)
    xp32, fp_ints = XP.astype(np.float32), np.arange(5)
    assert_bitwise_equal(tnp.interp(a32, xp32, fp_ints), np.interp(a32, xp32, fp_ints))


def test_complex_interp_follows_jax(jnp):
    import jax

    fp = FP + 1j * FP[::-1]
    want = np.interp(POINTS, XP, fp, left=-1 + 2j)
    assert_bitwise_equal(tnp.interp(POINTS, XP, fp, left=-1 + 2j), want)
    ct = np.conj(want)
    _, back = tg.vjp(lambda x, xp, fp: np.interp(x, xp, fp), POINTS, XP, fp)
    _, jax_back = jax.vjp(lambda x, xp, fp: jnp.interp(x, xp, fp), POINTS, XP, fp)
    for g, h in zip(back(ct), jax_back(ct)):
        assert g.dtype == h.dtype
        np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)


# -- the one-sided derivatives of interp at its knots -----------------------------------------


def test_interp_takes_the_derivative_from_the_right_at_the_knots():
    slopes = np.diff(FP) / np.diff(XP)
    at_knots = XP.copy()
    g = tg.grad(lambda x: np.sum(np.interp(x, XP, FP)))(at_knots)
    # knot j < n - 1: the interval [xp[j], xp[j + 1]); the last knot: fp[-1], flat in x
    np.testing.assert_array_equal(g, np.append(slopes, 0.0))
    _, t = tg.jvp(lambda fp: np.interp(at_knots, XP, fp), (FP,), (np.ones_like(FP),))
    np.testing.assert_array_equal(t, np.ones_like(FP))


def test_interp_regions_send_the_derivative_to_left_right_and_the_last_value():
    x = np.array([-9.0, 9.0, XP[-1], np.nan])
    grads = tg.grad(
        lambda fp, l, r: np.sum(np.interp(x, XP, fp, l, r) * np.array([1.0, 2.0, 4.0, 0.0])),
        argnums=(0, 1, 2),
    )(FP, np.float64(-3.0), np.float64(5.0))
    np.testing.assert_array_equal(grads[0], [0, 0, 0, 0, 4.0])
    assert (grads[1], grads[2]) == (1.0, 2.0)
    # left and right not given: they are fp[0] and fp[-1]
    g = tg.grad(lambda fp: np.sum(np.interp(x[:3], XP, fp)))(FP)
    np.testing.assert_array_equal(g, [1.0, 0, 0, 0, 2.0])


def test_interp_batches_over_knots_and_values():
    knots = np.stack([XP, XP * 0.5 - 0.25])
    values = np.stack([FP, FP[::-1]])
    got = tg.vmap(lambda xp, fp: np.interp(POINTS, xp, fp))(knots, values)
    want = np.stack([np.interp(POINTS, k, v) for k, v in zip(knots, values)])
    assert_bitwise_equal(got, want)
    jac = tg.jacrev(lambda xp: np.interp(POINTS[0], xp, FP))(XP)
    check_grads(lambda xp: np.interp(POINTS[0], xp, FP), (XP,), order=1)
    assert jac.shape == (4, 5)


# -- gradient's derivative in evenly spaced coordinates ---------------------------------------


def test_gradient_in_even_coordinates_has_the_general_derivative(jnp):
    import jax

    f = X[0]
    # NumPy's value comes from the uniform formula (bits), its derivative from the general one
    assert_bitwise_equal(tg.jit(np.gradient)(f, EVEN), np.gradient(f, EVEN))
    ours = tg.grad(lambda c: np.sum(np.gradient(f, c) * f))(EVEN)
    theirs = jax.grad(lambda c: jnp.sum(jnp.gradient(f, c) * f))(EVEN)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    assert np.count_nonzero(ours) > 2  # the uniform formula alone reads c[1] - c[0] only


@pytest.mark.parametrize("edge_order", [1, 2])
@pytest.mark.parametrize("coords", [EVEN, np.array([0.0, 0.5, 1.5, 2.0])], ids=["even", "uneven"])
def test_gradient_in_traced_coordinates_warns_only_where_numpy_does(coords, edge_order):
    # infinities and NaNs in f: the formula NumPy does not use must not warn of 0 * inf
    f = np.arange(12.0).reshape(3, 4) - 5.0
    f[1, 2], f[2, 0], f[0, 1] = np.inf, np.nan, -np.inf
    c = coords[: f.shape[1]]
    want = np.gradient(f, c, axis=1, edge_order=edge_order)  # NumPy warns of nothing here
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jitted = tg.jit(lambda y: np.gradient(f, y, axis=1, edge_order=edge_order))(c)
        value, _ = tg.vjp(lambda y: tnp.gradient(f, y, axis=1, edge_order=edge_order), c)
    assert_bitwise_equal(jitted, want)
    assert_bitwise_equal(value, want)


# -- errors: NumPy's types and messages -------------------------------------------------------

SAME_ERRORS = [
    ("diff", (X, -1), {}),
    ("diff", (np.float64(1.0),), {}),
    ("ediff1d", (np.arange(3),), {"to_begin": np.array([0.5])}),
    ("gradient", (X, 1.0, 2.0, 3.0), {}),
    ("gradient", (X, np.ones((3, 1)), 1.0), {}),
    ("gradient", (X, np.ones(4), 1.0), {}),
    ("gradient", (X,), {"edge_order": 3}),
    ("gradient", (X[:, :2],), {"edge_order": 2}),
    ("cumulative_sum", (X,), {}),
    ("interp", (POINTS, XP, FP), {"period": 0}),
    ("interp", (POINTS, X, X), {"period": 1.0}),
    ("interp", (POINTS, XP, FP[:3]), {"period": 1.0}),
    ("interp", (POINTS, XP, np.float64(1.0)), {}),
    ("interp", (POINTS, X, X), {}),
    ("interp", (POINTS, XP[:0], FP[:0]), {}),
    ("interp", (POINTS, XP, FP[:3]), {}),
    ("interp", (POINTS, XP, FP), {"left": 1j}),
    ("interp", (POINTS, XP, FP), {"left": np.ones(2)}),
    ("correlate", (V, X[0], "v"), {}),
    ("correlate", (V, X[0], "circular"), {}),
    ("correlate", (V, X[0], 3), {}),
    ("correlate", (V, X[0], True), {}),
    ("correlate", (V, np.float64(2.0)), {}),
    ("correlate", (X, V), {}),
    ("convolve", (V[:0], X[0]), {}),
    ("convolve", (V, X[0, :0]), {}),
]


@pytest.mark.parametrize("case", SAME_ERRORS, ids=[_id(c) for c in SAME_ERRORS])
def test_errors_are_numpys(case):
    name, args, kwargs = case
    with pytest.raises(Exception) as theirs:
        getattr(np, name)(*args, **kwargs)
    with pytest.raises(theirs.type) as ours:
        getattr(tnp, name)(*args, **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_unsupported_options_name_themselves():
    with pytest.raises(NotImplementedError, match="cumulative_prod: the argument out="):
        tnp.cumulative_prod(X[0], out=np.empty(5))
    with pytest.raises(NotImplementedError, match="gradient: datetime64 and timedelta64"):
        tnp.gradient(np.arange(3).astype("datetime64[D]"))
    with pytest.raises(NotImplementedError, match="interp: a traced period is not supported"):
        tg.grad(lambda p: np.sum(tnp.interp(POINTS, XP, FP, period=p)))(np.float64(4.0))


def _traced(fn, *args):
    """`fn` traced abstractly: the shape rules run (an eager bind runs only impl)."""
    return tg.make_graph(fn)(*args)


def test_the_primitives_check_their_operands():
    with pytest.raises(ValueError, match=r"correlate: mode must be 0 \(valid\), 1 \(same\)"):
        _traced(lambda v: bind(calc.correlate_p, v, v, mode=5), V)
    with pytest.raises(ValueError, match="equal leading \\(batch\\) axes"):
        _traced(lambda a, v: calc.correlate(a, v, "full"), X, V)
    with pytest.raises(TypeError, match="correlate: a and v must have one dtype"):
        _traced(lambda a, v: calc.correlate(a, v, "full"), V, V.astype(np.float32))
    with pytest.raises(ValueError, match="correlate: second array argument cannot be empty"):
        _traced(lambda a, v: calc.correlate(a, v, "full"), V, V[:0])
    interp = calc.interp
    with pytest.raises(ValueError, match="interp: xp and fp must be one-dimensional"):
        _traced(lambda xp: interp(POINTS, xp, xp, 0.0, 0.0), X)
    with pytest.raises(ValueError, match="interp: array of sample points is empty"):
        _traced(lambda xp: interp(POINTS, xp, xp, 0.0, 0.0), XP[:0])
    with pytest.raises(ValueError, match="interp: fp and xp are not of the same length"):
        _traced(lambda fp: interp(POINTS, XP, fp, 0.0, 0.0), FP[:2])
    with pytest.raises(ValueError, match="interp: left and right must be 0-d values"):
        _traced(lambda left: interp(POINTS, XP, FP, left, 0.0), XP)
    with pytest.raises(TypeError, match="interp: x, xp .* must be real numbers"):
        _traced(lambda x: interp(x, XP, FP, 0.0, 0.0), POINTS + 0j)
