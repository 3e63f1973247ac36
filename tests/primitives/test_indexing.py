"""Indexing: `x[index]` and the indexing wrappers against NumPy bit for bit; the rules of slice,
gather and scatter_add against finite differences and each other; every error path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from tests import strategies as S
from tests.primitives.samples.indexing import SAMPLES, draw_gather, draw_index
from tracegrad.api.common import trace_function
from tracegrad.core import bind
from tracegrad.numpy._indexing import parse_index
from tracegrad.primitives import indexing as ix
from tracegrad.primitives import slicing

DTYPES = st.sampled_from([np.float32, np.float64, np.int32])
FLOATS = st.sampled_from([np.float32, np.float64])


def assert_same(got, expected):
    """Bit for bit: equal values (NaN-free inputs), equal shapes, equal dtypes."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert np.array_equal(got, expected)


def through_graph(f, *args):
    """Run `f` traced abstractly with `make_graph`; also check the graph's shape inference."""
    graph = tg.make_graph(f)(*args)
    out = graph(*args)
    assert tuple(graph.out_avals[0].shape) == np.shape(out)
    return out


# -- x[index] against NumPy ---------------------------------------------------------------------


@given(data=st.data(), dtype=DTYPES)
def test_basic_indexing_matches_numpy(data, dtype):
    shape = S.shapes(data, max_dims=4)
    x = S.array(data, shape, dtype)
    index = draw_index(data, shape, arrays=False)
    assert_same(through_graph(lambda a: a[index], x), x[index])


@given(data=st.data(), dtype=DTYPES)
def test_advanced_indexing_matches_numpy(data, dtype):
    shape = S.shapes(data, min_dims=1, max_dims=4)
    x = S.array(data, shape, dtype)
    index = draw_index(data, shape, min_arrays=data.draw(st.integers(1, 3)))
    assert_same(through_graph(lambda a: a[index], x), x[index])


@given(data=st.data(), dtype=DTYPES)
def test_constant_boolean_masks_match_numpy(data, dtype):
    # a mask that is a plain array is known at trace time, even under abstract tracing
    shape = S.shapes(data, min_dims=1, max_dims=3)
    x = S.array(data, shape, dtype)
    index = draw_index(data, shape, masks=True)
    try:
        expected = x[index]
    except IndexError:  # two masks whose nonzero counts do not broadcast
        with pytest.raises(IndexError, match="could not be broadcast"):
            through_graph(lambda a: a[index], x)
        return
    assert_same(through_graph(lambda a: a[index], x), expected)


@given(data=st.data(), dtype=FLOATS)
def test_traced_index_arrays_match_numpy(data, dtype):
    """Index arrays that are graph inputs (traced ints) are gather inputs, not __index__."""
    shape = S.shapes(data, min_dims=1, max_dims=3)
    x = S.array(data, shape, dtype)
    index = draw_index(data, shape, min_arrays=1)
    slots = [i for i, item in enumerate(index) if isinstance(item, np.ndarray | list)]
    arrays = [np.asarray(index[i]) for i in slots]

    def f(a, *idx):
        full = list(index)
        for i, v in zip(slots, idx):
            full[i] = v
        return a[tuple(full)]

    graph = tg.make_graph(f)(x, *arrays)
    assert any(n.prim is ix.gather_p for n in graph.nodes) or not arrays
    assert_same(graph(x, *arrays), x[index])


@given(data=st.data(), dtype=FLOATS)
def test_traced_boolean_masks_under_concrete_tracing(data, dtype):
    shape = S.shapes(data, min_dims=1, max_dims=3)
    x = S.array(data, shape, dtype)
    mask = np.asarray(data.draw(S.hnp.arrays(np.bool_, shape)))
    traced = trace_function(lambda a, m: a[m], (x, mask), concrete=True)
    (out,) = traced.out_tracers
    assert_same(out.val, x[mask])
    assert_same(traced.graph(x, mask), x[mask])


def test_scalar_tracer_index_is_a_gather():
    x = np.arange(12.0).reshape(3, 4)
    graph = tg.make_graph(lambda a, i: a[i, 1:])(x, np.int64(2))
    assert [n.prim for n in graph.nodes if n.prim is ix.gather_p]
    assert_same(graph(x, np.int64(2)), x[2, 1:])
    assert_same(graph(x, np.int64(-1)), x[-1, 1:])


def test_separated_advanced_indices_go_first():
    # NumPy's rule: ints count as advanced next to arrays; None and even an empty Ellipsis
    # separate advanced indices, which then put their broadcast axes first
    x = np.arange(360.0).reshape(3, 4, 5, 6)
    for index in [
        (0, slice(None), [1, 2]),
        (slice(None), [0, 1], None, [0, 1]),
        (slice(None), [0, 1], Ellipsis, [0, 1], slice(None)),
        (slice(None), [0, 1], [[0], [1]]),
        (slice(None), True, [0, 1]),
        ([0, 1], slice(None), True),
        (0, True),
        (False, Ellipsis),
    ]:
        assert_same(through_graph(lambda a, index=index: a[index], x), x[index])


def test_iteration_and_negative_steps_give_views_lowered_to_slices():
    x = np.arange(24.0).reshape(2, 3, 4)
    graph = tg.make_graph(lambda a: a[::-1, 2:0:-2, ::-3])(x)
    assert {n.prim.name for n in graph.nodes} <= {"slice", "reshape"}
    assert_same(graph(x), x[::-1, 2:0:-2, ::-3])
    rows = tg.make_graph(lambda a: [r for r in a])(x)(x)
    for r, e in zip(rows, x):
        assert_same(r, e)


# -- the wrappers -----------------------------------------------------------------------------


@given(data=st.data(), dtype=DTYPES)
def test_take_matches_numpy(data, dtype):
    shape = S.shapes(data, min_dims=1, max_dims=3, min_side=1)
    x = S.array(data, shape, dtype)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    d = x.size if axis is None else shape[axis]
    ishape = S.shapes(data, max_dims=2)
    idx = np.asarray(data.draw(S.hnp.arrays(np.int64, ishape, elements=st.integers(-d, d - 1))))
    assert_same(through_graph(lambda a: np.take(a, idx, axis=axis), x), np.take(x, idx, axis))
    assert_same(through_graph(lambda a, i: a.take(i, axis=axis), x, idx), x.take(idx, axis=axis))


@given(data=st.data(), dtype=DTYPES)
def test_take_along_axis_matches_numpy(data, dtype):
    shape = S.shapes(data, min_dims=1, max_dims=3, min_side=1)
    x = S.array(data, shape, dtype)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ishape = list(shape)
    ishape[axis] = data.draw(st.integers(0, 4))
    ishape = [
        1 if i != axis % len(shape) and data.draw(st.booleans()) else d
        for i, d in enumerate(ishape)
    ]
    idx = np.asarray(
        data.draw(
            S.hnp.arrays(
                np.int64, tuple(ishape), elements=st.integers(-shape[axis], shape[axis] - 1)
            )
        )
    )
    expected = np.take_along_axis(x, idx, axis=axis)
    assert_same(through_graph(lambda a, i: np.take_along_axis(a, i, axis=axis), x, idx), expected)
    flat = idx.reshape(-1) % x.size
    assert_same(
        through_graph(lambda a: np.take_along_axis(a, flat, axis=None), x),
        np.take_along_axis(x, flat, axis=None),
    )


@given(data=st.data(), dtype=DTYPES)
def test_diagonal_and_trace_match_numpy(data, dtype):
    shape = S.shapes(data, min_dims=2, max_dims=4, max_side=5)
    x = S.array(data, shape, dtype, -100, 100)
    n = len(shape)
    axis1, axis2 = data.draw(
        st.lists(st.integers(-n, n - 1), min_size=2, max_size=2, unique_by=lambda a: a % n)
    )
    offset = data.draw(st.integers(-6, 6))
    assert_same(
        through_graph(lambda a: np.diagonal(a, offset, axis1, axis2), x),
        np.diagonal(x, offset, axis1, axis2),
    )
    assert_same(
        through_graph(lambda a: a.trace(offset, axis1, axis2), x), np.trace(x, offset, axis1, axis2)
    )


def test_trace_of_a_large_matrix_is_bit_identical():
    # np.trace sums a strided diagonal view; summing the gathered copy must give the same bits
    x = np.random.default_rng(0).standard_normal((300, 300)).astype(np.float32)
    assert_same(through_graph(np.trace, x), np.trace(x))


@given(data=st.data(), dtype=DTYPES)
def test_tril_triu_match_numpy(data, dtype):
    shape = S.shapes(data, min_dims=1, max_dims=3)
    x = S.array(data, shape, dtype)
    k = data.draw(st.integers(-3, 3))
    assert_same(through_graph(lambda a: np.tril(a, k), x), np.tril(x, k))
    assert_same(through_graph(lambda a: np.triu(a, k=k), x), np.triu(x, k=k))


def test_wrappers_run_numpy_on_plain_arrays():
    x = np.arange(12.0).reshape(3, 4)
    assert_same(tnp.getitem(x, (slice(None, None, -1), [0, 0, 3])), x[::-1, [0, 0, 3]])
    assert_same(tnp.take(x, [1, 1], axis=1), np.take(x, [1, 1], axis=1))
    assert_same(tnp.trace(x, 1), np.trace(x, 1))
    assert_same(tnp.triu(x, -1), np.triu(x, -1))


# -- derivatives --------------------------------------------------------------------------------


def test_gradient_of_repeated_indices_accumulates():
    x = np.arange(5.0)
    g = tg.grad(lambda a: tnp.sum(a[[0, 0, 1]]))(x)
    assert_same(g, np.array([2.0, 1.0, 0.0, 0.0, 0.0]))
    # the rule itself, eagerly: scatter-add of ones
    bar = ix.gather_p.vjp(np.ones(3), x, np.array([0, 0, 1]), out=None, index=("array",))
    assert_same(bar[0], np.array([2.0, 1.0, 0.0, 0.0, 0.0]))
    assert bar[1] is None


def test_gradient_of_a_mixed_index_in_two_dimensions():
    x = np.zeros((3, 4))
    g = tg.grad(lambda a: tnp.sum(a[[2, 2, 0], 1:3] * 2.0))(x)
    expected = np.zeros((3, 4))
    expected[2, 1:3] = 4.0
    expected[0, 1:3] = 2.0
    assert_same(g, expected)


def _fd_jvp_check(f, x, rng, jvp_of, vjp_of, tol=1e-7):
    """<u, J v> (jvp), <J^T u, v> (vjp) and central differences of <u, f> agree (float64)."""
    out = f(x)
    u = rng.standard_normal(np.shape(out))
    v = rng.standard_normal(np.shape(x))
    eps = 1e-6
    fd = float(np.sum(u * (f(x + eps * v) - f(x - eps * v)))) / (2 * eps)
    jv = jvp_of(x, v, out)
    vj = vjp_of(u, x, out)
    assert np.shape(vj) == np.shape(x)
    assert abs(float(np.sum(u * jv)) - fd) <= tol * max(1.0, abs(fd))
    assert abs(float(np.sum(vj * v)) - fd) <= tol * max(1.0, abs(fd))


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_gather_rules_match_finite_differences(data, seed):
    x, items, arrays = draw_gather(data, np.float64)
    rng = np.random.default_rng(seed)
    _fd_jvp_check(
        lambda a: bind(ix.gather_p, a, *arrays, index=items),
        x,
        rng,
        lambda a, v, out: ix.gather_p.jvp(
            (a, *arrays), (v,) + (None,) * len(arrays), out=out, index=items
        ),
        lambda u, a, out: ix.gather_p.vjp(u, a, *arrays, out=out, index=items)[0],
    )


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_scatter_add_rules_match_finite_differences(data, seed):
    (updates, *arrays), params = SAMPLES[ix.scatter_add_p].draw(data, np.float64)
    rng = np.random.default_rng(seed)
    _fd_jvp_check(
        lambda u: bind(ix.scatter_add_p, u, *arrays, **params),
        updates,
        rng,
        lambda u, v, out: ix.scatter_add_p.jvp(
            (u, *arrays), (v,) + (None,) * len(arrays), out=out, **params
        ),
        lambda ct, u, out: ix.scatter_add_p.vjp(ct, u, *arrays, out=out, **params)[0],
    )


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_slice_jvp_matches_finite_differences(data, seed):
    (x,), params = SAMPLES[slicing.slice_p].draw(data, np.float64)
    rng = np.random.default_rng(seed)
    out = bind(slicing.slice_p, x, **params)
    v = rng.standard_normal(x.shape)
    u = rng.standard_normal(out.shape)
    eps = 1e-6
    fd = float(
        np.sum(
            u
            * (
                bind(slicing.slice_p, x + eps * v, **params)
                - bind(slicing.slice_p, x - eps * v, **params)
            )
        )
    ) / (2 * eps)
    jv = slicing.slice_p.jvp((x,), (v,), out=out, **params)
    assert abs(float(np.sum(u * jv)) - fd) <= 1e-7 * max(1.0, abs(fd))


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_slice_vjp_matches_finite_differences(data, seed):
    (x,), params = SAMPLES[slicing.slice_p].draw(data, np.float64)
    rng = np.random.default_rng(seed)
    _fd_jvp_check(
        lambda a: bind(slicing.slice_p, a, **params),
        x,
        rng,
        lambda a, v, out: slicing.slice_p.jvp((a,), (v,), out=out, **params),
        lambda u, a, out: slicing.slice_p.vjp(u, a, out=out, **params)[0],
    )


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_second_order_scatter_add_vjp_is_gather(data, seed):
    # gather and scatter_add with the same index are adjoint: <scatter(u), v> == <u, gather(v)>
    (updates, *arrays), params = SAMPLES[ix.scatter_add_p].draw(data, np.float64)
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(params["shape"])
    scattered = ix.scatter_add(updates, *arrays, **params)
    gathered = ix.gather(v, *arrays, index=params["index"])
    assert abs(float(np.sum(scattered * v)) - float(np.sum(updates * gathered))) <= 1e-9 * max(
        1.0, float(np.sum(np.abs(updates))) * float(np.max(np.abs(v), initial=1.0))
    )
    (back,) = ix.scatter_add_p.vjp(v, updates, *arrays, out=scattered, **params)[:1]
    assert_same(back, gathered)


@pytest.mark.parametrize(
    "index",
    [
        (slice(None), True, [0, 1]),
        ([], slice(None), False),
        (0, True),
        (Ellipsis, [2, 2]),
        ([[0], [1]], Ellipsis, slice(None, None, -2), [0, 2, 2]),
        (None, 1, [2, 2], None),
    ],
    ids=str,
)
def test_gather_and_scatter_add_are_adjoint_for_every_kind_of_item(index):
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    items, arrays = parse_index(x.shape, index)
    out = ix.gather(x, *arrays, index=items)
    assert_same(out, x[index])
    u = np.random.default_rng(2).standard_normal(out.shape)
    scattered = ix.scatter_add(u, *arrays, shape=x.shape, index=items)
    assert abs(float(np.sum(scattered * x)) - float(np.sum(u * out))) <= 1e-12 * np.abs(u).sum() * 4


def test_gradient_through_a_boolean_mask_under_concrete_tracing():
    x = np.array([-1.0, 2.0, -3.0, 4.0])
    g = tg.grad(lambda a: tnp.sum(a[a > 0.0] ** 2))(x)
    assert_same(g, np.array([0.0, 4.0, 0.0, 8.0]))


def test_rules_build_graphs_when_traced():
    # the vjp rules use tracegrad ops only, so they trace (needed for higher order)
    x = np.arange(6.0).reshape(2, 3)
    idx = np.array([1, 1, 0])
    graph = tg.make_graph(
        lambda a, ct: ix.gather_p.vjp(ct, a, idx, out=None, index=("array", ("slice", 0, 3, 1)))[0]
    )(x, np.ones((3, 3)))
    assert [n.prim.name for n in graph.nodes if n.prim.name != "const"] == ["scatter_add"]
    assert_same(graph(x, np.ones((3, 3))), np.array([[1.0, 1, 1], [2, 2, 2]]))
    hess = tg.grad(lambda a: tnp.sum(a[[0, 0, 1]] ** 3))
    assert_same(
        tg.grad(lambda a: tnp.sum(hess(a) * np.array([1.0, 1, 1])))(np.array([1.0, 2, 3])),
        np.array([2 * 6 * 1.0, 6 * 2.0, 0.0]),
    )


def test_integer_inputs_get_no_cotangent():
    x = np.arange(6, dtype=np.int32)
    bars = ix.gather_p.vjp(np.ones(2, np.int32), x, np.array([0, 1]), out=None, index=("array",))
    assert bars == (None, None)
    assert slicing.slice_p.vjp(
        np.ones(2, np.int32), x, out=None, starts=(0,), limits=(2,), strides=(1,)
    ) == (None,)


@given(data=st.data())
def test_emitted_code_evaluates_like_impl(data):
    x, items, arrays = draw_gather(data, np.float64)
    names = [f"i{k}" for k in range(len(arrays))]
    env = {"np": np, "x": x, **dict(zip(names, arrays))}
    out = ix.gather(x, *arrays, index=items)
    assert_same(eval(ix.gather_p.emit("x", *names, index=items), env), out)
    env["u"] = out
    assert_same(
        eval(ix.scatter_add_p.emit("u", *names, shape=x.shape, index=items), env),
        ix.scatter_add(out, *arrays, shape=x.shape, index=items),
    )
    (y,), params = SAMPLES[slicing.slice_p].draw(data, np.float64)
    assert_same(
        eval(slicing.slice_p.emit("y", **params), {"np": np, "y": y}),
        bind(slicing.slice_p, y, **params),
    )


# -- errors -----------------------------------------------------------------------------------


def test_boolean_mask_under_abstract_tracing_raises():
    x = np.arange(6.0)
    with pytest.raises(tg.ConcretizationError) as err:
        tg.make_graph(lambda a: a[a > 2.0])(x)
    msg = str(err.value)
    assert "boolean-mask indexing" in msg and "(6,)" in msg
    assert "tracegrad.numpy.where" in msg and "test_indexing.py" in msg


def test_out_of_bounds_indices_name_axis_size_and_index():
    x = np.zeros((3, 4))
    cases = [
        (lambda a: a[1, 4], "index 4 is out of bounds for axis 1 with size 4"),
        (lambda a: a[-4], "index -4 is out of bounds for axis 0 with size 3"),
        (lambda a: a[:, [0, 7, 9]], "index 7 is out of bounds for axis 1 with size 4"),
        (lambda a: a[[0, 1], 5], "index 5 is out of bounds for axis 1 with size 4"),
        (lambda a: np.take(a, [12]), "index 12 is out of bounds for axis 0 with size 12"),
    ]
    for f, text in cases:
        with pytest.raises(IndexError, match="getitem: " + text):
            tg.make_graph(f)(x)
    # a traced index under concrete tracing: NumPy's own error
    with pytest.raises(IndexError, match="out of bounds"):
        trace_function(lambda a, i: a[i], (x, np.array([5])), concrete=True)


def test_malformed_indices_raise_numpy_style_errors():
    x = np.zeros((3, 4))
    cases = [
        ((0, 0, 0), IndexError, "too many indices for array: array is 2-dimensional"),
        ((Ellipsis, Ellipsis), IndexError, "single ellipsis"),
        ((1.5,), IndexError, "only integers, slices"),
        ((np.array([0.5]),), IndexError, "integer .or boolean. type"),
        (
            (np.ones(2, bool),),
            IndexError,
            "size of axis is 3 but size of corresponding boolean axis is 2",
        ),
        (
            ([0, 1], [0, 1, 2]),
            IndexError,
            r"could not be broadcast together with shapes "
            r"\(2,\) \(3,\)",
        ),
    ]
    for index, exc, text in cases:
        with pytest.raises(exc, match=text):
            tg.make_graph(lambda a, index=index: a[index])(x)
    with pytest.raises(NotImplementedError, match="take: mode='clip'"):
        tnp.take(x, [0], mode="clip")
    with pytest.raises(ValueError, match="take_along_axis: .* same number of dimensions"):
        tnp.take_along_axis(x, np.zeros(2, np.int64), axis=0)
    with pytest.raises(ValueError, match=r"diagonal: .* at least two dimensions, got shape \(3,\)"):
        tnp.diagonal(np.zeros(3))


def test_shape_rule_errors_name_the_operation_and_shapes():
    from tracegrad.ir.types import Aval

    with pytest.raises(ValueError, match=r"slice: bounds .* do not fit shape \(3,\)"):
        slicing.slice_p.shape(Aval((3,), np.float64), starts=(0,), limits=(5,), strides=(1,))
    with pytest.raises(
        TypeError, match=r"gather: index arrays must be integers, got float64\(2,\)"
    ):
        ix.gather_p.shape(Aval((3,), np.float64), Aval((2,), np.float64), index=("array",))
    with pytest.raises(
        ValueError,
        match=r"scatter_add: updates of shape \(3,\) do not match the "
        r"shape \(2,\) .* shape \(5,\)",
    ):
        ix.scatter_add_p.shape(
            Aval((3,), np.float64), Aval((2,), np.int64), shape=(5,), index=("array",)
        )
