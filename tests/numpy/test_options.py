"""The options users rely on: every `np.pad` mode, `where=`/`initial=` on the reductions, and
`np.einsum(optimize=..., dtype=..., casting=...)` (tracegrad/numpy/_pad.py, _reductions.py,
_products.py; tracegrad/primitives/masked.py and einsum.py).

Each option runs through `check_name` (bits against NumPy outside a trace, on tracers and
under jit; derivatives against finite differences; vmap against a loop) in float32 and
float64. JAX is the oracle for the derivatives (jnp.pad's modes, masked reductions, einsum
with a path). Then what the bits depend on (NumPy's masked sums are not sums of np.where),
the cases NumPy treats specially, and every error's message.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.codegen import source
from tracegrad.testing import assert_bitwise_equal, check_grads

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)


def _normal(dtype, *shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _spread(dtype, *shape, seed=0):
    """Distinct values 0.25 apart (exact in float32), in a random order: no ties."""
    n = int(np.prod(shape))
    order = np.random.default_rng(seed).permutation(n)
    return ((order - n / 2) * 0.25).reshape(shape).astype(dtype)


def _mask(*shape, seed=0, p=0.6):
    return np.random.default_rng(seed + 100).random(shape) < p


def _allclose_tree(got, want, rtol=1e-10, atol=1e-10):
    for g, w in zip(tg.tree.leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=atol)


# -- pad ---------------------------------------------------------------------------------------

PAD_MODES = [
    ("edge", {}),
    ("wrap", {}),
    ("reflect", {}),
    ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {}),
    ("symmetric", {"reflect_type": "odd"}),
    ("linear_ramp", {}),
    ("linear_ramp", {"end_values": (1.5, -2)}),
    ("linear_ramp", {"end_values": ((1, 2.5), (-3, 4))}),
    ("maximum", {}),
    ("minimum", {"stat_length": 2}),
    ("mean", {}),
    ("mean", {"stat_length": ((1, 3), (2, 9))}),
    ("median", {}),
    ("median", {"stat_length": (2, 3)}),
    ("constant", {"constant_values": ((1.5, -2), (0, 3))}),
]


def _mode_id(case):
    mode, options = case
    return mode + "".join(f"-{k}={v}" for k, v in options.items())


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", PAD_MODES, ids=_mode_id)
def test_pad(case, dtype):
    mode, options = case
    x = _normal(dtype, 3, 4)
    # pads wider than the axis: reflect and wrap take several rounds, as NumPy's loop does
    for width in (((2, 7), (0, 3)), 1):
        check_name("pad", (x,), {"pad_width": width, "mode": mode, **options})


@pytest.mark.parametrize("case", PAD_MODES, ids=_mode_id)
def test_pad_of_integers_and_three_axes(case):
    # integers: the statistics are rounded half to even and the ramps floored, as in NumPy
    mode, options = case
    per_axis = any(np.ndim(v) == 2 for v in options.values())  # pairs for two axes
    shape = (3, 4) if per_axis else (2, 3, 4)
    x = np.random.default_rng(1).integers(-9, 9, size=shape)
    check_name(
        "pad", (x,), {"pad_width": ((1, 2), (3, 0), (2, 5))[-len(shape) :], "mode": mode, **options}
    )
    # a singleton axis: reflect repeats its edge (NumPy's legacy behaviour)
    x = _normal(np.float64, *((1, 3) if per_axis else (2, 1, 3)))
    check_name("pad", (x,), {"pad_width": 2, "mode": mode, **options})


def test_pad_width_forms_as_numpy():
    x = _normal(np.float64, 3, 4)
    for width in ({1: (1, 2)}, {-1: 3, 0: (2, 0)}, [[1, 0], [0, 2]], (3,), [(1, 2)], np.int8(2)):
        check_name("pad", (x,), {"pad_width": width, "mode": "reflect"})


def test_pad_empty_fills_zeros():
    """NumPy leaves 'empty' padding uninitialised: any values are NumPy's; ours are zeros,
    with the array itself in the middle and a derivative of one there."""
    x = _normal(np.float64, 2, 3)
    out = tg.make_graph(lambda a: np.pad(a, ((1, 2), (0, 3)), mode="empty"))(x)(x)
    assert out.shape == np.pad(x, ((1, 2), (0, 3)), mode="empty").shape and out.dtype == x.dtype
    np.testing.assert_array_equal(out[1:3, :3], x)
    out[1:3, :3] = 0
    np.testing.assert_array_equal(out, 0)
    g = tg.grad(lambda a: np.sum(np.pad(a, 2, mode="empty") ** 2))(x)
    np.testing.assert_array_equal(g, 2 * x)


JAX_PAD_MODES = [case for case in PAD_MODES if case[0] != "constant"] + [("empty", {})]


@pytest.mark.parametrize("case", JAX_PAD_MODES, ids=_mode_id)
def test_pad_derivatives_match_jax(case):
    mode, options = case
    x = _normal(np.float64, 3, 4)
    width = ((2, 5), (1, 3))
    w = _normal(np.float64, *np.pad(x, width).shape, seed=3)
    ours = tg.grad(lambda a: np.sum(np.pad(a, width, mode, **options) * w))(x)
    theirs = jax.grad(lambda a: jnp.sum(jnp.pad(a, width, mode, **options) * w))(x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_pad_errors():
    x = tg.Aval((2, 3), np.float64)

    def traced(fn):
        return tg.make_graph(fn)(x)

    with pytest.raises(NotImplementedError, match=r"pad: a callable mode \('fill'\) fills a "):
        traced(_with_a_callable_mode)
    with pytest.raises(ValueError, match=r"^mode 'spiral' is not supported"):
        traced(lambda a: np.pad(a, 1, mode="spiral"))
    with pytest.raises(ValueError, match=r"^unsupported keyword arguments for mode 'edge': "):
        traced(lambda a: np.pad(a, 1, mode="edge", stat_length=2))
    with pytest.raises(ValueError, match=r"^stat_length of 0 yields no value for padding"):
        traced(lambda a: np.pad(a, ((0, 0), (1, 1)), mode="maximum", stat_length=0))
    with pytest.raises(ValueError, match=r"^can't extend empty axis 0 using modes other than"):
        tg.make_graph(lambda a: np.pad(a, 1, mode="edge"))(tg.Aval((0, 3), np.float64))
    with pytest.raises(TypeError, match=r"^pad: pad_width must be of integral type"):
        traced(lambda a: np.pad(a, 1.5, mode="edge"))
    with pytest.raises(TypeError, match=r"^pad: pad_width must be of integral type"):
        traced(lambda a: np.pad(a, np.uint8(1), mode="edge"))  # NumPy: signed ints only
    with pytest.raises(ValueError, match=r"^pad: pad_width -1 cannot contain negative values"):
        traced(lambda a: np.pad(a, -1, mode="wrap"))
    with pytest.raises(ValueError, match=r"^pad: stat_length \[1, -2\] cannot contain negative"):
        traced(lambda a: np.pad(a, 1, mode="mean", stat_length=(1, -2)))
    with pytest.raises(ValueError, match=r"^pad: constant_values of shape \(3,\) cannot be read"):
        traced(lambda a: np.pad(a, 1, constant_values=[1, 2, 3]))
    with pytest.raises(NotImplementedError, match=r"pad: a traced `constant_values` is not"):
        tg.make_graph(lambda a, c: np.pad(a, 1, constant_values=c))(x, 1.0)
    with pytest.raises(NotImplementedError, match=r"pad: a traced `pad_width` is not supported"):
        tg.make_graph(lambda a, w: tnp.pad(a, w))(x, np.int64(1))
    # NumPy agrees on the ones it shares
    with pytest.raises(ValueError, match=r"^mode 'spiral' is not supported"):
        np.pad(np.ones(3), 1, mode="spiral")
    with pytest.raises(TypeError):
        np.pad(np.ones(3), np.uint8(1), mode="edge")


def fill(vector, width, axis, kwargs):
    """A padding function for np.pad's callable mode: writes into `vector` in place."""
    vector[: width[0]] = 7.0


def _with_a_callable_mode(a):
    return np.pad(a, 1, mode=fill)


def test_pad_with_a_callable_mode_runs_numpy_on_arrays():
    x = np.arange(6.0).reshape(2, 3)
    assert_bitwise_equal(tnp.pad(x, 1, mode=fill), np.pad(x, 1, mode=fill))


# -- where= and initial= on the reductions -------------------------------------------------------


def test_masked_sums_are_not_sums_of_where():
    """NumPy adds each run of selected elements pairwise on its own, from `initial`: summing
    np.where(mask, x, 0) gives other bits. tracegrad gives NumPy's."""
    x = _normal(np.float64, 200, seed=5)
    m = _mask(200, seed=5)
    naive = np.sum(np.where(m, x, 0.0))
    want = np.sum(x, where=m)
    assert naive != want  # so this test can fail
    for got in (tnp.sum(x, where=m), tg.jit(lambda a: np.sum(a, where=m))(x)):
        assert_bitwise_equal(got, want)
    assert_bitwise_equal(tg.make_graph(lambda a, b: np.sum(a, where=b))(x, m)(x, m), want)
    # the start: NumPy adds the runs to it, one by one
    assert_bitwise_equal(tg.jit(lambda a: np.sum(a, initial=0.1))(x), np.sum(x, initial=0.1))
    # -0.0: the identity start is +0.0, an explicit one may be -0.0
    z = np.array([-0.0, -0.0])
    for kwargs in ({"where": [True, False]}, {"initial": -0.0}, {"initial": -0.0, "where": True}):
        assert_bitwise_equal(tg.jit(lambda a, k=kwargs: np.sum(a, **k))(z), np.sum(z, **kwargs))


# max/min starts beyond the data: finite differences must not cross the start's kink
REDUCTIONS_WITH_INITIAL = [("sum", 0.5), ("prod", 1.5), ("max", -5.0), ("min", 5.0)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name, initial", REDUCTIONS_WITH_INITIAL)
def test_where_and_initial(name, initial, dtype):
    # max/min: values 0.25 apart, so finite differences cross no tie
    x = _normal(dtype, 3, 20) if name in ("sum", "prod") else _spread(dtype, 3, 20)
    m = _mask(3, 20)
    check_name(name, (x,), {"where": m, "initial": initial})
    check_name(name, (x,), {"axis": 1, "where": m[0], "initial": initial, "keepdims": True})
    check_name(name, (x,), {"axis": 0, "initial": initial})
    # a traced mask (positional: where= is the seventh argument)
    check_name(name, (x, 1, None, None, False, initial, m) if name in ("sum", "prod") else
               (x, 1, None, False, initial, m))  # fmt: skip
    if name in ("sum", "prod"):
        check_name(name, (x,), {"axis": (0, 1), "where": m, "dtype": np.float64})
        check_name(name, (x,), {"axis": 1, "where": m})  # initial: the identity


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["mean", "var", "std"])
def test_where_on_mean_var_std(name, dtype):
    x, m = _normal(dtype, 3, 20), _mask(3, 20)
    check_name(name, (x,), {"where": m})
    check_name(name, (x,), {"axis": 1, "where": m, "keepdims": True})
    check_name(name, (x,), {"axis": 0, "where": np.array([[True], [False], [True]])})
    if name != "mean":
        check_name(name, (x,), {"axis": 1, "where": m, "ddof": 1})
        check_name(name, (x,), {"axis": 1, "where": m, "ddof": 1.5})  # counts - 1.5: floats
    check_name(name, (np.arange(12).reshape(3, 4),), {"axis": 1, "where": m[:, :4]})  # ints


@pytest.mark.parametrize("name", ["all", "any"])
def test_where_on_all_any(name):
    x = np.where(_mask(3, 5, seed=1), _normal(np.float64, 3, 5), 0.0)
    for where in (_mask(3, 5), _mask(5, seed=2), [True, False, True, True, False]):
        check_name(name, (x,), {"where": where}, differentiable=False)
        check_name(name, (x > 0,), {"axis": 1, "where": where, "keepdims": True})


def _same_bits(got, want):
    # (assert_bitwise_equal's NaN mask mishandles complex64: compare the bytes)
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_mean_var_std(dtype):
    """NumPy divides complex sums in complex128 and takes var's squares as re**2 + im**2 (a
    real result); the derivatives follow JAX's convention."""
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(3, 5)) + 1j * rng.normal(size=(3, 5))).astype(dtype)
    m = _mask(3, 5)
    for name in ("mean", "var", "std"):
        for kwargs in ({}, {"axis": 1, "where": m}):
            ours, theirs = getattr(np, name), getattr(jnp, name)
            want = ours(x, **kwargs)
            f, jf = functools.partial(ours, **kwargs), functools.partial(theirs, **kwargs)
            _same_bits(tg.make_graph(f)(x)(x), want)
            _same_bits(tg.jit(f)(x), want)
            _same_bits(tg.vmap(f)(np.stack([x, x]))[1], want)
            g = tg.grad(lambda a, f=f: tnp.sum(tnp.real(f(a))))(x)
            j = jax.grad(lambda a, jf=jf: jnp.sum(jnp.real(jf(a))))(x)
            np.testing.assert_allclose(g, j, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "dtype", [np.float16, np.float32, np.float64, np.complex64, np.int32, np.bool_], ids=str
)
def test_plain_mean_is_one_node_with_numpys_bits(dtype):
    """A mean without `dtype=` or `where=` is one `mean` node computing NumPy's own arithmetic:
    the sum in NumPy's dtype (float16 in float32 and integers in float64, inside the
    reduction's buffered loop, over an axis longer than its buffer), divided by the count as
    an intp; eager, traced and jitted alike. Its gradient is JAX's."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(9000, 3)) * 50
    if dtype == np.complex64:
        x = x + 1j * rng.normal(size=x.shape)
    x = (x > 0 if dtype == np.bool_ else x).astype(dtype)
    for kwargs in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}):
        f = functools.partial(np.mean, **kwargs)
        want = np.mean(x, **kwargs)
        graph = tg.make_graph(f)(x)
        assert [n.prim.name for n in graph.nodes if n.prim.name not in ("arg", "const")] == ["mean"]
        _same_bits(graph(x), want)
        _same_bits(tg.jit(f)(x), want)
        _same_bits(tnp.mean(x, **kwargs), want)
        if x.dtype.kind in "fc" and dtype != np.float16:  # (JAX's float16 sums differ)
            jf = functools.partial(jnp.mean, **kwargs)
            g = tg.grad(lambda a, f=f: tnp.sum(tnp.abs(f(a)) ** 2))(x)
            j = jax.grad(lambda a, jf=jf: jnp.sum(jnp.abs(jf(a)) ** 2))(x)
            # (float32: a mean of 3 values near 50 that cancel is off by ~50 eps in both)
            atol = 1e-5 if x.real.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(g, j, rtol=1e-5, atol=atol)


def test_traced_masks_for_mean_var_std():
    x, m = _normal(np.float64, 4, 6), _mask(4, 6)
    for name in ("mean", "var", "std"):

        def f(a, mask, name=name):
            return getattr(np, name)(a, axis=1, where=mask)

        want = f(x, m)
        assert_bitwise_equal(tg.make_graph(f)(x, m)(x, m), want)
        assert_bitwise_equal(tg.jit(f)(x, m), want)
        xs, ms = np.stack([x, 2 * x]), np.stack([m, ~m])
        assert_bitwise_equal(tg.vmap(f)(xs, ms), np.stack([f(x, m), f(2 * x, ~m)]))
        check_grads(lambda a, name=name: f(a, m, name), (x,), order=2)


def test_masked_reduction_derivatives_match_jax():
    x, m = _normal(np.float64, 4, 6), _mask(4, 6)
    m[:2] = True  # two selected elements in each column at least: var(ddof=1) is defined
    cases = [
        ("sum", {"where": m}),
        ("sum", {"axis": 1, "where": m, "initial": 2.0}),
        ("prod", {"axis": 0, "where": m}),
        ("max", {"axis": 1, "where": m, "initial": -5.0}),
        ("min", {"where": m, "initial": 5.0}),
        ("mean", {"axis": 1, "where": m}),
        ("var", {"axis": 0, "where": m, "ddof": 1}),
        ("std", {"where": m}),
    ]
    for name, kwargs in cases:
        ours = tg.grad(lambda a, f=name, k=kwargs: np.sum(getattr(np, f)(a, **k) ** 2))(x)
        theirs = jax.grad(lambda a, f=name, k=kwargs: jnp.sum(getattr(jnp, f)(a, **k) ** 2))(x)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12, err_msg=name)
        assert not np.any(ours[~np.broadcast_to(m, x.shape)])  # masked out: exactly zero


@pytest.mark.parametrize("axis", [None, 1])
@pytest.mark.parametrize("name, start", [("max", 5.0), ("max", 3.0), ("min", -4.0), ("min", 0.5)])
def test_masked_extrema_at_ties_and_nans_as_jax(name, start, axis):
    # JAX's max(x, where=m, initial=i) is max(i, the selected elements' max): a tie of the two
    # splits in halves, ties among the elements share theirs; a NaN among the selected gives
    # the selected NaN, the masked-out elements and the start 0
    x = np.array([[5.0, 1.0, 5.0, 2.0], [3.0, -4.0, -4.0, 9.0], [1.0, 2.0, 3.0, 4.0]])
    x[2, 1] = np.nan
    m = np.array([True, True, True, False])

    def loss(xp, a, i):
        return xp.sum(getattr(xp, name)(a, axis=axis, where=m, initial=i) * w)

    rows = [slice(0, 2), slice(None)]  # without the NaN row, and with it
    for r in rows:
        w = np.array([1.0, -2.0, 0.5])[r] if axis == 1 else 1.0
        ours = tg.grad(lambda a, i: loss(np, a, i), argnums=(0, 1))(x[r], start)
        jitted = tg.jit(tg.grad(lambda a, i: loss(np, a, i), argnums=(0, 1)))(x[r], start)
        theirs = jax.grad(lambda a, i: loss(jnp, a, i), argnums=(0, 1))(x[r], start)
        _allclose_tree(ours, theirs, rtol=0, atol=0)
        _allclose_tree(jitted, theirs, rtol=0, atol=0)
        tangent = tg.jvp(lambda a, i: loss(np, a, i), (x[r], start), (np.ones_like(x[r]), 1.0))[1]
        want = jax.jvp(lambda a, i: loss(jnp, a, i), (x[r], start), (np.ones_like(x[r]), 1.0))[1]
        np.testing.assert_allclose(tangent, want, rtol=1e-15)


def test_masked_out_infinities_do_not_poison_the_gradient():
    x = _normal(np.float64, 3, 4)
    m = _mask(3, 4)
    x[~m] = np.inf
    for name in ("sum", "mean", "var", "std"):
        g = tg.grad(lambda a, name=name: getattr(np, name)(a, where=m))(x)
        assert np.all(np.isfinite(g)) and not np.any(g[~m]), name


def test_the_start_is_differentiable_when_traced():
    x, m = _normal(np.float64, 3, 4), _mask(3, 4)

    def f(c):
        return tnp.sum(tnp.sum(x, axis=1, where=m, initial=c)) + tnp.prod(x, where=m, initial=c)

    check_grads(f, (np.float64(0.75),), order=2)
    big = tg.grad(lambda c: tnp.max(x, where=m, initial=c))(np.float64(10.0))
    small = tg.grad(lambda c: tnp.max(x, where=m, initial=c))(np.float64(-10.0))
    assert (big, small) == (1.0, 0.0)  # the start is the maximum, or it is not


def test_vmap_over_the_start_loops_over_the_batch():
    # NumPy takes initial= as one scalar: a batch of starts is reduced member by member
    x, m = _normal(np.float64, 3, 5), _mask(3, 5)
    starts = np.array([0.5, -1.0, 2.0])

    def f(a, c):
        return tnp.sum(a, axis=1, where=m, initial=c)

    want = np.stack([np.sum(x, axis=1, where=m, initial=c) for c in starts])
    assert_bitwise_equal(tg.vmap(f, in_axes=(None, 0))(x, starts), want)
    assert_bitwise_equal(tg.jit(tg.vmap(f, in_axes=(None, 0)))(x, starts), want)


def test_masked_reduction_warnings_as_numpy():
    x, none = _normal(np.float64, 2, 3), np.zeros((2, 3), bool)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"), np.errstate(invalid="ignore"):
        out = tnp.mean(x, axis=1, where=none)
    assert np.all(np.isnan(out))
    with pytest.warns(RuntimeWarning, match=r"Degrees of freedom <= 0 for slice"):
        with np.errstate(invalid="ignore", divide="ignore"):
            tnp.var(x, axis=1, where=[True, False, False], ddof=1)
    with warnings.catch_warnings():  # under jit the counts are not known: no warning
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(invalid="ignore"):
            tg.jit(lambda a, w: np.mean(a, axis=1, where=w))(x, none)


def test_where_and_initial_errors_as_numpy():
    x = np.arange(6.0).reshape(2, 3)
    no_identity = r"^reduction operation 'maximum' does not have an identity, so to use a where"
    with pytest.raises(ValueError, match=no_identity):
        tnp.max(x, where=x > 2)
    with pytest.raises(ValueError, match=no_identity):
        np.max(x, where=x > 2)
    with pytest.raises(ValueError, match=r"^reduction operation 'minimum' does not have an"):
        tg.make_graph(lambda a: np.min(a, axis=0, where=np.True_))(x)
    with pytest.raises(TypeError, match=r"^sum: cannot cast the where= mask from dtype\('uint8'\)"):
        tnp.sum(x, where=np.ones(3, np.uint8))
    with pytest.raises(TypeError, match=r"^mean: cannot cast the where= mask from dtype\('float"):
        tg.make_graph(lambda a: np.mean(a, where=a))(x)
    with pytest.raises(ValueError, match=r"^prod: the where= mask of shape \(3, 3\) does not br"):
        tnp.prod(x, where=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match=r"^sum: initial= must be a scalar, got ndarray of shape"):
        tnp.sum(x, initial=np.ones(2))
    with pytest.raises(ValueError, match=r"^max: initial= must be a scalar, got shape \(2,\)"):
        tg.make_graph(lambda a, c: np.max(a, initial=c))(x, np.ones(2))
    with pytest.raises(OverflowError, match=r"cannot convert float infinity to integer"):
        tnp.max(np.arange(3), initial=-np.inf)
    with pytest.raises(NotImplementedError, match=r"sum: the argument out= is not supported"):
        tnp.sum(x, out=np.zeros(()))


# -- einsum(optimize=..., dtype=..., casting=...) -----------------------------------------------

OPTIMIZE = [
    True,
    "greedy",
    "optimal",
    None,  # NumPy: no path search, but one contraction of all operands (not c_einsum's)
    ["einsum_path", (0, 2), (0, 1)],
    ("greedy", 10),  # a memory limit: here, no intermediate fits, so one contraction
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("optimize", OPTIMIZE, ids=repr)
def test_einsum_optimize(optimize, dtype):
    a, b, c = _normal(dtype, 5, 6), _normal(dtype, 6, 7, seed=1), _normal(dtype, 7, 4, seed=2)
    check_name("einsum", ("ij,jk,kl->il", a, b, c), {"optimize": optimize})
    check_name("einsum", ("i,ij,j", a[:, 0], a, b[:, 0]), {"optimize": optimize})


@pytest.mark.parametrize("optimize", [True, "optimal"])
def test_einsum_optimize_forms(optimize):
    a, b = _normal(np.float64, 2, 3, 4), _normal(np.float64, 2, 4, 5, seed=1)
    check_name("einsum", ("bij,bjk->bik", a, b), {"optimize": optimize})  # NumPy's bmm_einsum
    check_name("einsum", ("...ij,...jk", a, b), {"optimize": optimize})
    check_name("einsum", ("ii->i", a[0, :, :3]), {"optimize": optimize})
    # the sublist form: NumPy's Python parser names label 0 'a' (c_einsum: 'A')
    check_name("einsum", (a, [0, 1, 2], b, [0, 2, 3], [0, 1, 3]), {"optimize": optimize})
    check_name("einsum", (a, [0, 1, 2], b, [0, 2, 3], [0, 1, 3]))


def test_einsum_dtype_and_casting():
    a32, b = _normal(np.float32, 3, 4), _normal(np.float64, 4, 5, seed=1)
    check_name("einsum", ("ij,jk", a32, b), {"dtype": np.float32, "casting": "same_kind"})
    check_name("einsum", ("ij,jk", a32, b), {"dtype": "f8", "optimize": True})
    check_name("einsum", ("ij,jk", a32, a32.T), {"dtype": np.float64})  # a safe cast
    # an integer result carries no derivative
    check_name("einsum", ("ij,jk", a32, b), {"dtype": np.int64, "casting": "unsafe"})


def test_einsum_derivatives_match_jax():
    a, b, c = _normal(np.float64, 5, 6), _normal(np.float64, 6, 7, seed=1), _normal(np.float64, 7)
    for optimize in (True, "optimal", ["einsum_path", (1, 2), (0, 1)]):

        def loss(xp, x, y, z, opt=optimize):
            return xp.sum(xp.einsum("ij,jk,k->i", x, y, z, optimize=opt) ** 2)

        ours = tg.grad(lambda *t: loss(np, *t), argnums=(0, 1, 2))(a, b, c)
        theirs = jax.grad(lambda *t: loss(jnp, *t, opt=True), argnums=(0, 1, 2))(a, b, c)
        _allclose_tree(ours, theirs)
        check_grads(lambda *t: loss(np, *t), (a, b, c), order=2)


def _loop(f, args, in_axes):
    """f over the batch, example by example (each a C-ordered copy, as np.take makes it)."""
    size = next(np.shape(a)[d] for a, d in zip(args, in_axes) if d is not None)
    outs = [
        f(*(a if d is None else np.take(a, k, axis=d) for a, d in zip(args, in_axes)))
        for k in range(size)
    ]
    return np.stack(outs)


@pytest.mark.parametrize("optimize", [False, True, "optimal"], ids=repr)
def test_einsum_under_vmap_is_a_loop(optimize):
    # one einsum over the batch (fast, as JAX's): NumPy's contraction of the batched operands
    # may sum in another order than each example's own call, so the last bits may differ
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(size=(3, 5))
    x, y, z = rng.normal(size=(4, 3, 6)), rng.normal(size=(4, 6, 7)), rng.normal(size=7)
    cases = [
        ("i,i,i->", (np.stack([a, 2 * a, -a / 3]), b, c), (0, None, None)),
        ("...ij,...jk,k->...i", (x, y, z), (0, 0, None)),
        ("...ij,...jk,k->...i", (np.moveaxis(x, 0, 2), y[0], z), (2, None, None)),
        ("ij,jk,kl->il", (x[:, 0], y[0], rng.normal(size=(7, 4, 3))), (None, None, 1)),
        # the batch axis last, among the '...' axes: c_einsum sums in another order
        (
            "...ij,...jk,k->...i",
            (rng.normal(size=(2, 3, 4, 2)), y[0, :4, :5], z[:5]),
            (-1, None, None),
        ),
    ]
    for spec, args, in_axes in cases:

        def f(*ops, spec=spec):
            return np.einsum(spec, *ops, optimize=optimize)

        want = _loop(f, args, in_axes)
        batched = tg.vmap(f, in_axes=in_axes)
        close = functools.partial(np.testing.assert_allclose, rtol=1e-13, atol=1e-14)
        close(batched(*args), want, err_msg=f"{spec} vmap")
        assert_bitwise_equal(tg.jit(batched)(*args), batched(*args), f"{spec} jit(vmap)")
        assert_bitwise_equal(tg.jit(batched, backend="interpret")(*args), batched(*args), spec)
        twice = tg.vmap(batched, in_axes=tuple(None if d is None else 0 for d in in_axes))
        stacked = [a if d is None else np.stack([a, a]) for a, d in zip(args, in_axes)]
        close(twice(*stacked), np.stack([want, want]), err_msg=f"{spec} vmap(vmap)")
    # derivatives: vmap of grad is a loop of grads
    y0 = y[0]

    def loss(x, y):
        return np.sum(np.einsum("ij,jk,k->i", x, y, z, optimize=optimize) ** 2)

    grads = tg.vmap(tg.grad(loss, argnums=(0, 1)))(x, y)
    loop = [tg.grad(loss, argnums=(0, 1))(x[k], y[k]) for k in range(4)]
    for i in range(2):
        np.testing.assert_allclose(grads[i], np.stack([g[i] for g in loop]), rtol=1e-12)
    total = tg.grad(lambda y: np.sum(tg.vmap(loss, in_axes=(0, None))(x, y)))(y0)
    np.testing.assert_allclose(total, sum(tg.grad(loss, argnums=1)(x[k], y0) for k in range(4)))


def test_einsum_of_an_empty_batch():
    x, y = np.ones((0, 2, 3)), np.ones((3, 4))
    f = tg.vmap(lambda x: np.einsum("ij,jk->ik", x, y, optimize=True))
    for got in (f(x), tg.jit(f)(x), tg.jit(f, backend="interpret")(x)):
        assert got.shape == (0, 2, 4) and got.dtype == np.float64


def test_einsum_to_complex_gives_a_real_operand_the_real_part_as_jax():
    # dtype=complex128 on real operands: the real operands' cotangents are the real parts of
    # the complex ones (JAX's), with no ComplexWarning from a cast
    a, b = _normal(np.float64, 3, 4), _normal(np.float64, 4, 2, seed=1)
    w = np.array([[1.0 + 2.0j, -0.5j], [3.0, 1.0 - 1.0j], [0.25j, 2.0]])

    def loss(x, y, optimize=False):
        e = np.einsum("ij,jk->ik", x, y, dtype=np.complex128, optimize=optimize)
        return np.sum(np.real(e * w))

    def jax_loss(x, y):  # jnp.einsum has no dtype=: the operands cast first
        e = jnp.einsum("ij,jk->ik", x.astype(np.complex128), y.astype(np.complex128))
        return jnp.sum(jnp.real(e * w))

    theirs = jax.grad(jax_loss, argnums=(0, 1))(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for optimize in (False, True):
            ours = tg.grad(lambda x, y, o=optimize: loss(x, y, o), argnums=(0, 1))(a, b)
            _allclose_tree(ours, theirs)
            assert all(g.dtype == np.float64 for g in ours)


def test_einsum_paths_are_resolved_and_written_into_the_code():
    a, b, c = _normal(np.float64, 5, 6), _normal(np.float64, 6, 7, seed=1), _normal(np.float64, 7)

    def f(x, y, z):
        return np.einsum("ij,jk,k->i", x, y, z, optimize="optimal")

    graph = tg.make_graph(f)(a, b, c)
    path = np.einsum_path("ij,jk,k->i", a, b, c, optimize="optimal")[0]
    assert f"optimize={tuple(tuple(s) for s in path[1:])!r}" in str(graph)
    assert f"optimize={path!r}" in source(graph)
    assert_bitwise_equal(tg.jit(f)(a, b, c), f(a, b, c))
    # the cotangents are einsums with a greedy path of their own
    backward = tg.make_graph(tg.grad(lambda x: np.sum(f(x, b, c))))(a)
    assert "optimize=" in str(backward)


def test_einsum_option_errors():
    a = _normal(np.float64, 2, 3)
    with pytest.raises(ValueError, match=r"^einsum: optimize='fastest' is not one of NumPy's"):
        tnp.einsum("ij,jk,kl", a, a.T, a, optimize="fastest")
    with pytest.raises(ValueError, match=r"^einsum: contraction path \['einsum_path', \(0, 2\)"):
        tnp.einsum("ij,jk", a, a.T, optimize=["einsum_path", (0, 2)])
    with pytest.raises(ValueError, match=r"leaves 2 operands of 3; a path must contract them all"):
        tnp.einsum("ij,jk,kl", a, a.T, a, optimize=["einsum_path", (0, 1)])
    with pytest.raises(ValueError, match=r"^einsum: contraction path \['einsum_path'\] has no st"):
        tnp.einsum("ii", a[:, :2], optimize=["einsum_path"])
    with pytest.raises(ValueError, match=r"^einsum: a contraction path step must be a tuple of"):
        tnp.einsum("ij,jk", a, a.T, optimize=["einsum_path", "(0, 1)"])
    with pytest.raises(TypeError, match=r"^einsum: cannot cast operand 1 from dtype\('float64'\) "):
        tnp.einsum("ij,jk", a.astype(np.float32), a.T, dtype=np.float32)
    with pytest.raises(ValueError, match=r"^einsum: casting must be one of 'no', 'equiv'"):
        tnp.einsum("ij,jk", a, a.T, casting="sometimes")
    with pytest.raises(NotImplementedError, match=r"einsum: order='C' is not supported"):
        tnp.einsum("ij,jk", a, a.T, order="C")
    with pytest.raises(NotImplementedError, match=r"einsum: argument out= is not supported"):
        tnp.einsum("ij,jk", a, a.T, out=np.empty((2, 2)))
    # NumPy refuses the same path and the same cast
    with pytest.raises(TypeError):
        np.einsum("ij,jk", a.astype(np.float32), a.T, dtype=np.float32)


# -- NumPy's aliases in the shape family --------------------------------------------------------


def test_row_stack_and_permute_dims_are_numpys_aliases():
    x = _normal(np.float64, 2, 3)
    with pytest.warns(DeprecationWarning, match=r"`row_stack` alias is deprecated"):
        check_name("row_stack", ([x, 2 * x],), np_fn=np.row_stack, vmap=False)
    assert np.permute_dims is np.transpose and tnp.permute_dims is tnp.transpose
