"""Sorting, searching, counting and order statistics in tracegrad.numpy (numpy/_sorting.py).

One parametrized test per name runs `check_name` (bits against NumPy outside a trace, on
tracers and under jit; derivatives against finite differences, or none for integer results;
vmap against a loop) in float32 and float64. Names whose result shape depends on the values
(nonzero, argwhere, unique, ...) are checked for bits on concrete values there, and with JAX's
`size=` under jit and vmap below. JAX is the oracle for the derivatives (ties included), then
come the permutations behind the derivatives, and every error's message.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.ir.types import Aval
from tracegrad.primitives import sorting as so
from tracegrad.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)


def _distinct(shape, dtype, seed=0):
    """Distinct values 0.25 apart in a random order: no finite-difference step meets a tie."""
    n = int(np.prod(shape))
    order = np.random.default_rng(seed).permutation(n)
    return ((order - n / 2) * 0.25).reshape(shape).astype(dtype)


def _tied(shape, dtype, seed=0):
    """Small integers as floats: ties and zeros everywhere."""
    return np.random.default_rng(seed).integers(-2, 3, size=shape).astype(dtype)


# -- the per-name checks ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_sort(dtype):
    x = _distinct((3, 5), dtype)
    check_name("sort", (x,))
    check_name("sort", (x,), {"axis": 0, "kind": "stable"})
    check_name("sort", (x,), {"axis": None})
    check_name("sort", (_tied((4, 6), dtype),), {"stable": True}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_argsort(dtype):
    x = _tied((4, 6), dtype)
    check_name("argsort", (x,), differentiable=False)
    check_name("argsort", (x,), {"axis": 0, "kind": "mergesort"}, differentiable=False)
    check_name("argsort", (x,), {"axis": None, "stable": True}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_partition(dtype):
    x = _distinct((4, 7), dtype)
    check_name("partition", (x, 3))
    check_name("partition", (x, [0, -1]), {"axis": 0})
    check_name("partition", (x, (2, 5, 1)), {"axis": None})


@pytest.mark.parametrize("dtype", FLOATS)
def test_argpartition(dtype):
    x = _tied((4, 7), dtype)
    check_name("argpartition", (x, 3), differentiable=False)
    check_name("argpartition", (x, [0, -1]), {"axis": 0}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_searchsorted(dtype):
    a = np.sort(_tied((9,), dtype))
    v = _tied((2, 3), dtype, seed=1)
    check_name("searchsorted", (a, v), differentiable=False)
    check_name("searchsorted", (a, v), {"side": "right"}, differentiable=False)
    shuffled = a[::-1].copy()
    sorter = np.argsort(shuffled, kind="stable")
    check_name("searchsorted", (shuffled, v), {"sorter": sorter}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lexsort(dtype):
    keys = _tied((3, 8), dtype)  # three keys as the rows of one array
    check_name("lexsort", (keys,), differentiable=False)
    check_name("lexsort", (_tied((2, 3, 4), dtype),), {"axis": 0}, differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_count_nonzero(dtype):
    x = _tied((3, 4), dtype)
    check_name("count_nonzero", (x,), differentiable=False)
    check_name("count_nonzero", (x,), {"axis": 1, "keepdims": True}, differentiable=False)
    check_name("count_nonzero", (x,), {"axis": (0, 1)}, differentiable=False)


# value-dependent shapes: bits on concrete values (the argument is static: no abstract trace)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["nonzero", "flatnonzero", "argwhere"])
def test_nonzero_family_on_concrete_values(dtype, name):
    x = _tied((3, 4), dtype)
    check_name(name, (x,), static=(0,), differentiable=False)
    check_name(name, (x[0],), static=(0,), differentiable=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_unique_on_concrete_values(dtype):
    x = _tied((4, 5), dtype)
    x[1, 2] = x[3, 0] = np.nan
    for kw in [
        {},
        {"return_index": True, "return_inverse": True, "return_counts": True},
        {"return_inverse": True, "equal_nan": False},
        {"sorted": False},
    ]:
        check_name("unique", (x,), kw, static=(0,))
    rows = np.array([[1, 0], [0, 1], [1, 0], [-0.0, 1]], dtype)
    for kw in [{"axis": 0}, {"axis": 1, "return_counts": True}, {"axis": 0, "return_index": True}]:
        check_name("unique", (rows,), kw, static=(0,))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["unique_values", "unique_counts", "unique_inverse", "unique_all"])
def test_unique_array_api_forms_on_concrete_values(dtype, name):
    x = _tied((3, 5), dtype)
    x[0, 0] = x[2, 2] = np.nan
    check_name(name, (x,), static=(0,))
    check_name(name, (np.arange(7) % 3,), static=(0,))  # integers: NumPy's hash order


@pytest.mark.parametrize("dtype", FLOATS)
def test_median(dtype):
    x = _distinct((4, 5), dtype)
    check_name("median", (x,))
    check_name("median", (x,), {"axis": 0})
    check_name("median", (x,), {"axis": (0, 1), "keepdims": True})
    check_name("median", (x[:3],), {"axis": 1, "keepdims": True})


@pytest.mark.parametrize("dtype", FLOATS)
def test_percentile(dtype):
    x = _distinct((7, 3), dtype)
    q = np.array([40.0, 54.0, 95.5])  # every method's index away from integers: smooth in q
    small = 2.0**-10  # steps in q stay between the kinks (where the index crosses an integer)
    check_name("percentile", (x, q), {"axis": 0}, eps=small)
    check_name("percentile", (x, 30.0), {"axis": 1, "keepdims": True}, static=(1,))
    check_name("percentile", (x, q.astype(dtype)), {"axis": 0, "method": "midpoint"}, eps=small)


@pytest.mark.parametrize("dtype", FLOATS)
def test_quantile(dtype):
    x = _distinct((7, 3), dtype)
    q = np.array([0.4, 0.54, 0.955])  # every method's index away from integers: smooth in q
    small = 2.0**-10  # steps in q stay between the kinks (where the index crosses an integer)
    check_name("quantile", (x, q), {"axis": 0}, eps=small)
    for method in ["lower", "higher", "nearest", "hazen", "median_unbiased"]:
        check_name("quantile", (x, q), {"axis": 0, "method": method}, eps=small)
    check_name("quantile", (x, 0.3), {"method": "weibull"}, static=(1,))
    weighted = {"method": "inverted_cdf"}
    along = np.arange(1.0, 8.0)  # weights along axis 0
    check_name("quantile", (x, q), {"axis": 0, "weights": along, **weighted}, static=(1,))
    check_name("quantile", (x, q), {"weights": np.ones(x.shape), **weighted}, static=(1,))


# -- the value-dependent names under jit and vmap: JAX's size= --------------------------------


def _padded(indices, size, fill):
    out = np.full(size, fill, np.intp)
    n = min(size, len(indices))
    out[:n] = indices[:n]
    return out


@pytest.mark.parametrize("size", [0, 4, 20])
def test_nonzero_with_size_under_jit_and_vmap(size):
    x = _tied((3, 5), np.float64)
    want = tuple(_padded(i, size, -1) for i in np.nonzero(x))
    got = tg.jit(lambda x: tnp.nonzero(x, size=size, fill_value=-1))(x)
    assert_bitwise_equal(got, want)
    batch = np.stack([x, x[::-1], np.zeros_like(x)])
    got = tg.jit(tg.vmap(lambda x: tnp.nonzero(x, size=size, fill_value=(7, 8))))(batch)
    for k, row in enumerate(batch):
        want = tuple(_padded(i, size, f) for i, f in zip(np.nonzero(row), (7, 8)))
        assert_bitwise_equal(tuple(g[k] for g in got), want)


def test_flatnonzero_and_argwhere_with_size_under_jit():
    x = _tied((3, 4), np.float64)
    got = tg.jit(lambda x: tnp.flatnonzero(x, size=6, fill_value=2))(x)
    assert_bitwise_equal(got, _padded(np.flatnonzero(x), 6, 2))
    got = tg.jit(lambda x: tnp.argwhere(x, size=6, fill_value=2))(x)
    want = np.stack([_padded(i, 6, 2) for i in np.nonzero(x)], axis=1)
    assert_bitwise_equal(got, want)
    assert tnp.argwhere(np.float64(3.0), size=2).shape == (2, 0)  # as jax.numpy.argwhere


def _unique_jax(x, **kw):
    return jax.jit(lambda x: jnp.unique(x, **kw))(x)


def test_unique_with_size_matches_jax_under_jit():
    x = _tied((3, 4), np.float64, seed=2)
    x[0, 1] = x[2, 3] = np.nan
    kw = {"return_index": True, "return_inverse": True, "return_counts": True}
    for fill in [None, 5.0]:  # padded with the smallest value, or with fill_value
        got = tg.jit(lambda x, f=fill: tnp.unique(x, **kw, size=9, fill_value=f))(x)
        want = _unique_jax(x, **kw, size=9, fill_value=fill)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", FLOATS)
def test_unique_with_size_keeps_numpys_bits_and_batches(dtype):
    x = _tied((3, 4), dtype, seed=2)
    x[0, 1] = x[2, 3] = np.nan
    kw = {"return_index": True, "return_inverse": True, "return_counts": True}
    got = tg.jit(lambda x: tnp.unique(x, **kw, size=3))(x)  # fewer than there are: cut
    want = np.unique(x, **kw)
    for g, w in zip(got, (want[0][:3], want[1][:3], want[2], want[3][:3])):
        assert_bitwise_equal(g, w)
    batch = np.stack([x, x * 2, np.zeros_like(x)])
    got = tg.vmap(lambda x: tnp.unique_values(x, size=4))(batch)
    for k in range(3):
        assert_bitwise_equal(got[k], tnp.unique_values(batch[k], size=4))
    assert_bitwise_equal(got[2], np.zeros(4, dtype))


def test_unique_with_size_along_an_axis_matches_jax():
    rows = np.array([[2.0, 1.0], [0.0, 3.0], [2.0, 1.0], [0.0, -1.0]])
    for axis in [0, 1]:
        got = tg.jit(lambda r, a=axis: tnp.unique(r, axis=a, return_counts=True, size=3))(rows)
        want = _unique_jax(rows, axis=axis, return_counts=True, size=3)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert_bitwise_equal(
        tnp.unique(rows, axis=0, return_inverse=True, size=3)[1],
        np.unique(rows, axis=0, return_inverse=True)[1],
    )


@pytest.mark.parametrize("name", ["unique_counts", "unique_inverse", "unique_all"])
def test_unique_array_api_forms_with_size_match_jax(name):
    x = np.array([3.0, 1.0, 3.0, 2.0, 1.0, 1.0])
    ours, theirs = getattr(tnp, name), getattr(jnp, name)
    got = tg.jit(lambda x: ours(x, size=4, fill_value=0.5))(x)
    want = jax.jit(lambda x: theirs(x, size=4, fill_value=0.5))(x)
    assert type(got) is type(getattr(np, name)(x))  # NumPy's named tuple
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# -- derivatives against JAX ------------------------------------------------------------------


def _grads(f, fj, *args, argnums=0):
    got = tg.grad(f, argnums=argnums)(*args)
    want = jax.jit(jax.grad(fj, argnums=argnums))(*args)
    return got, want


def _weights(shape, seed=3):
    return np.random.default_rng(seed).standard_normal(shape)


def test_sort_and_partition_grads_match_jax_ties_included():
    x = _tied((4, 6), np.float64)
    w = _weights((4, 6))
    for axis in [0, 1]:
        got, want = _grads(
            lambda x, a=axis: np.sum(np.sort(x, axis=a) * w),
            lambda x, a=axis: jnp.sum(jnp.sort(x, a) * w),
            x,
        )
        np.testing.assert_allclose(got, want)
    # partition's arrangement around kth differs between NumPy and JAX: compare at kth only
    for kth in [2, 5]:
        got, want = _grads(
            lambda x, k=kth: np.sum(np.partition(x, k, axis=1)[:, k] * w[:, 0]),
            lambda x, k=kth: jnp.sum(jnp.partition(x, k, axis=1)[:, k] * w[:, 0]),
            x,
        )
        np.testing.assert_allclose(got, want)


def test_median_grads_match_jax_ties_included():
    # at ties both pick the tied elements in their original order (a stable sort's choice)
    x = _tied((5, 6), np.float64)
    w = _weights((6,))
    for axis in [0, None, (0, 1)]:
        got, want = _grads(
            lambda x, a=axis: np.sum(np.median(x, axis=a) * (w if a == 0 else 1.0)),
            lambda x, a=axis: jnp.sum(jnp.median(x, axis=a) * (w if a == 0 else 1.0)),
            x,
        )
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("method", ["linear", "nearest", "midpoint"])
def test_quantile_grads_in_a_and_q_match_jax(method):
    x = _distinct((7, 4), np.float64)
    q = np.array([0.1, 0.55, 0.9])
    w = _weights((3, 4))
    got, want = _grads(
        lambda x, q: np.sum(np.quantile(x, q, axis=0, method=method) * w),
        lambda x, q: jnp.sum(jnp.quantile(x, q, axis=0, method=method) * w),
        x,
        q,
        argnums=(0, 1),
    )
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, atol=1e-12)
    got, want = _grads(
        lambda x: np.percentile(x, 30, method=method),
        lambda x: jnp.percentile(x, 30, method=method),
        x,
    )
    np.testing.assert_allclose(got, want)


def test_quantile_grad_under_jit_with_a_traced_q():
    # q traced abstractly: the axis is sorted instead of partitioned, same values and slopes
    x = _distinct((7, 4), np.float64)
    q = np.array([0.1, 0.55, 0.9])

    def f(x, q):
        return np.sum(np.quantile(x, q, axis=0) ** 2)

    got = tg.jit(tg.grad(f, argnums=(0, 1)))(x, q)
    _, want = _grads(f, lambda x, q: jnp.sum(jnp.quantile(x, q, axis=0) ** 2), x, q, argnums=(0, 1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-12)
    assert_bitwise_equal(tg.jit(lambda x, q: np.quantile(x, q, axis=0))(x, q), np.quantile(x, q, 0))


_METHODS = list(np.lib._function_base_impl._QuantileMethods)


@pytest.mark.parametrize("name", ["quantile", "percentile", "nanquantile", "nanpercentile"])
@pytest.mark.parametrize("method", _METHODS)
def test_a_traced_python_float_q_keeps_numpys_weak_promotion(name, method):
    # a Python float q is weak in NumPy (float32 data give float32 quantiles); under jit and
    # grad it arrives as a weak traced scalar, and the quantiles are still NumPy's bits
    x = _distinct((6, 5), np.float32)
    x[1, 2] = np.nan if name.startswith("nan") else x[1, 2]
    q = 37.0 if name.endswith("percentile") else 0.37
    fn = getattr(np, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nanquantile's all-NaN slices: none
        for axis in (None, 0, 1):
            want = fn(x, q, axis=axis, method=method)
            got = tg.jit(lambda x, q, a=axis: fn(x, q, axis=a, method=method))(x, q)
            assert_bitwise_equal(got, want, f"{name} jit axis={axis}")
            value, _ = tg.vjp(lambda q, a=axis: getattr(tnp, name)(x, q, axis=a, method=method), q)
            assert_bitwise_equal(value, want, f"{name} vjp in q axis={axis}")


def test_a_traced_python_float_q_differentiates_as_jax():
    x = _distinct((7,), np.float32)
    got = tg.grad(lambda q: np.quantile(x, q))(0.37)
    want = jax.grad(lambda q: jnp.quantile(x, q))(0.37)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_unique_values_keep_their_derivative():
    x = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
    g = tg.grad(lambda x: np.sum(np.unique(x) ** 2))(x)
    # each unique value is the first element holding it (the others get nothing)
    np.testing.assert_array_equal(g, [6.0, 2.0, 0.0, 4.0, 0.0])
    g = tg.grad(lambda x: np.sum(tnp.unique(x, size=4, fill_value=0.0) ** 2))(x)
    np.testing.assert_array_equal(g, [6.0, 2.0, 0.0, 4.0, 0.0])
    rows = np.array([[1.0, 2.0], [0.5, 0.5], [1.0, 2.0]])
    g = tg.grad(lambda r: np.sum(np.unique(r, axis=0) * np.array([1.0, 10.0])))(rows)
    np.testing.assert_array_equal(g, [[1.0, 10.0], [1.0, 10.0], [0.0, 0.0]])


def test_boolean_mask_from_nonzero_differentiates_under_grad():
    x = np.array([1.5, -2.0, 0.25, -0.5])
    g = tg.grad(lambda x: np.sum(x[np.nonzero(x > 0)] ** 2))(x)
    np.testing.assert_array_equal(g, [3.0, 0.0, 0.5, 0.0])
    assert tg.grad(lambda x: np.sum(x * tnp.count_nonzero(x > 0)))(x).tolist() == [2.0] * 4


# -- the permutations behind the derivatives --------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_partitions_permutation_reproduces_numpys_output(dtype):
    # np.partition and x[np.argpartition] arrange the values differently; the derivative's
    # permutation is matched to np.partition's own output, ties and NaNs included
    rng = np.random.default_rng(5)
    mismatched = 0
    for _ in range(30):
        x = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.nan], dtype), size=(2, 250))
        picks = rng.choice(250, size=int(rng.integers(1, 3)), replace=False)
        kth = tuple(sorted(picks.tolist()))
        out = np.partition(x, kth, axis=1)
        perm = so._matching_perm(x, out, 1)
        np.testing.assert_array_equal(np.take_along_axis(x, perm, 1), out)
        assert sorted(perm[0].tolist()) == list(range(250))
        mismatched += not np.array_equal(
            np.take_along_axis(x, np.argpartition(x, kth, axis=1), 1), out, equal_nan=True
        )
    assert mismatched  # the case the matching exists for does occur


def test_sort_sends_tied_tangents_in_their_original_order():
    x = np.array([2.0, 1.0, 2.0, 1.0])
    _, t = tg.jvp(lambda x: np.sort(x), (x,), (np.array([1.0, 2.0, 3.0, 4.0]),))
    np.testing.assert_array_equal(t, [2.0, 4.0, 1.0, 3.0])
    g = tg.grad(lambda x: np.sum(np.sort(x) * np.array([1.0, 2.0, 3.0, 4.0])))(x)
    np.testing.assert_array_equal(g, [3.0, 1.0, 4.0, 2.0])


def test_second_derivatives_through_sort_and_quantile():
    x = _distinct((6,), np.float64)
    w = np.arange(6.0)
    rank = np.argsort(np.argsort(x))  # where each element lands
    h = tg.hessian(lambda x: np.sum(np.sort(x) ** 3 * w))(x)
    np.testing.assert_allclose(h, np.diag(6 * x * w[rank]))
    # quantile(x, 0.3) = 0.5 * (x_(1) + x_(2)) here: its square has a rank-one Hessian
    slope = np.where((rank == 1) | (rank == 2), 0.5, 0.0)
    h = tg.hessian(lambda x: np.quantile(x, 0.3) ** 2)(x)
    np.testing.assert_allclose(h, 2 * np.outer(slope, slope))


def test_batched_searchsorted_and_lexsort_match_a_loop_under_jit():
    a = np.sort(_tied((3, 6), np.float64), axis=1)
    v = _tied((3, 4), np.float64, seed=4)
    got = tg.jit(tg.vmap(lambda a, v: np.searchsorted(a, v, side="right")))(a, v)
    want = np.stack([np.searchsorted(a[k], v[k], side="right") for k in range(3)])
    assert_bitwise_equal(got, want)
    # an outer batch of keys only: the rows of `a` stay the batch axis the impl loops over
    v2 = np.stack([v, v[::-1]])
    got = tg.jit(tg.vmap(tg.vmap(lambda a, v: np.searchsorted(a, v)), in_axes=(None, 0)))(a, v2)
    want = [[np.searchsorted(a[k], v2[j, k]) for k in range(3)] for j in range(2)]
    assert_bitwise_equal(got, np.array(want))
    keys = _tied((4, 2, 5), np.float64)
    got = tg.vmap(lambda k: np.lexsort(k), in_axes=1)(keys)
    assert_bitwise_equal(got, np.stack([np.lexsort(keys[:, k]) for k in range(2)]))


# -- errors -----------------------------------------------------------------------------------


def test_sort_refuses_order_and_heapsort():
    x = np.ones(3)
    with pytest.raises(NotImplementedError, match=r"tracegrad.numpy.sort: the argument order="):
        tnp.sort(x, order="f0")
    with pytest.raises(NotImplementedError, match=r"argsort: kind='heapsort' is not supported"):
        tnp.argsort(x, kind="heapsort")
    with pytest.raises(ValueError, match=r"sort kind must be one of"):  # NumPy's own check
        tnp.sort(x, kind="bogus")


def test_partition_errors():
    x = np.ones(3)
    with pytest.raises(ValueError, match=r"partition: kind must be 'introselect', got 'heap'"):
        tnp.partition(x, 1, kind="heap")
    with pytest.raises(ValueError, match=r"argpartition: kind must be 'introselect'"):
        tnp.argpartition(x, 1, kind="heap")
    with pytest.raises(ValueError, match=r"kth\(=5\) out of bounds \(3\)"):
        tnp.partition(x, 5)
    with pytest.raises(tg.ConcretizationError, match=r"(?s)partition's kth .*kth must be static"):
        tg.jit(lambda x, k: tnp.partition(x, k))(x, np.int64(1))


@pytest.mark.parametrize("name", ["nonzero", "flatnonzero", "argwhere", "unique"])
def test_value_dependent_shapes_name_size_under_jit(name):
    with pytest.raises(
        tg.ConcretizationError, match=rf"(?s)np.{name}\(x\).*size=.*jax.numpy.{name}"
    ):
        tg.jit(getattr(tnp, name))(np.ones(3))
    with pytest.raises(tg.ConcretizationError, match=r"size="):
        tg.vmap(getattr(tnp, name))(np.ones((2, 3)))


def test_nonzero_errors():
    with pytest.raises(ValueError, match=r"Calling nonzero on 0d arrays is not allowed"):
        tnp.nonzero(np.float64(1.0), size=2)
    with pytest.raises(ValueError, match=r"nonzero: fill_value must be a scalar or a tuple of"):
        tnp.nonzero(np.ones((2, 2)), size=2, fill_value=(1, 2, 3))


def test_unique_with_size_of_an_empty_array_needs_a_fill_value():
    with pytest.raises(ValueError, match=r"unique: for zero-sized input with nonzero size"):
        tnp.unique(np.ones(0), size=2)
    assert_bitwise_equal(tnp.unique(np.ones(0), size=2, fill_value=1.5), np.full(2, 1.5))


def test_quantile_errors():
    x = np.ones(4)
    with pytest.raises(NotImplementedError, match=r"tracegrad.numpy.median: the argument out="):
        tnp.median(x, out=np.ones(()))
    weighted = {"method": "inverted_cdf"}
    with pytest.raises(ValueError, match=r"Weights must be non-negative"):
        tnp.quantile(x, 0.5, weights=-np.ones(4), **weighted)
    with pytest.raises(ValueError, match=r"Weights included NaN, inf or were all zero"):
        tnp.quantile(x, 0.5, weights=np.zeros(4), **weighted)
    with pytest.raises(TypeError, match=r"Axis must be specified when shapes of a and weights"):
        tnp.quantile(np.ones((2, 4)), 0.5, weights=np.ones(4), **weighted)
    with pytest.raises(ValueError, match=r"Shape of weights must be consistent with shape of a"):
        tnp.quantile(np.ones((2, 4)), 0.5, axis=1, weights=np.ones(2), **weighted)
    with pytest.raises(ValueError, match=r"Only method 'inverted_cdf' supports weights"):
        tnp.percentile(x, 50, weights=np.ones(4))
    with pytest.raises(ValueError, match=r"'cubic' is not a valid method. Use one of"):
        tnp.quantile(x, 0.5, method="cubic")
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        tnp.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        tnp.percentile(x, -1)
    with pytest.raises(TypeError, match=r"a must be an array of real numbers"):
        tnp.quantile(x.astype(complex), 0.5)
    with pytest.raises(ValueError, match=r"q must be a scalar or 1d"):
        tnp.quantile(x, np.full((1, 1, 1), 0.5))


def test_primitive_shape_rules_name_what_is_wrong():
    f64 = Aval((3, 4), np.float64)
    with pytest.raises(ValueError, match=r"sort: axis 2 does not fit an array of shape \(3, 4\)"):
        so.sort_p.shape(f64, axis=2, stable=False)
    with pytest.raises(ValueError, match=r"argsort: stable must be a bool, got 1"):
        so.argsort_p.shape(f64, axis=0, stable=1)
    with pytest.raises(ValueError, match=r"partition: kth \(3, 1\) must be a sorted tuple"):
        so.partition_p.shape(f64, kth=(3, 1), axis=1)
    with pytest.raises(ValueError, match=r"searchsorted: a \(3, 4\) must be one 1-D row per"):
        so.searchsorted_p.shape(f64, Aval((2,), np.float64), right=False, batch_dims=0)
    with pytest.raises(ValueError, match=r"lexsort: needs at least one key, all of one shape"):
        so.lexsort_p.shape(f64, Aval((4,), np.float64), axis=0)
    with pytest.raises(ValueError, match=r"nonzero: size must be a non-negative int and"):
        so.nonzero_p.shape(f64, size=-1, fill_value=(0, 0))
    with pytest.raises(ValueError, match=r"nonzero: Calling nonzero on 0d arrays"):
        so.nonzero_p.shape(Aval((), np.float64), size=1, fill_value=())


def test_in_place_methods_stay_refused():
    with pytest.raises(TypeError, match=r"x.sort\(\) changes an array in place"):
        tg.grad(lambda x: x.sort())(np.ones(3))


def test_methods_reach_the_functions():
    x = _distinct((6,), np.float64)
    got = tg.jit(lambda x: (x.argsort(), x.argpartition(2), np.sort(x).searchsorted(x)))(x)
    want = (x.argsort(), x.argpartition(2), np.sort(x).searchsorted(x))
    assert_bitwise_equal(got, want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_bitwise_equal(tg.jvp(lambda x: (x > 0).nonzero(), (x,), (x,))[0], np.nonzero(x > 0))
