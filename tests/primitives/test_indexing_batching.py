"""Batching rules of slice, gather and scatter_add against a loop over the examples.

Unlike the generic test in test_rules.py, batched index arrays here hold different indices in
each example (so a rule that pairs example b of x with the wrong example of the indices
fails), every subset of arguments is batched, batch sizes include 0, and the rules also run
on tracers (inside make_graph), as they do under vmap of grad or jit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests import strategies as S
from tests.primitives.samples.indexing import draw_gather
from tracegrad.core import bind
from tracegrad.primitives import indexing as ix
from tracegrad.primitives import slicing

DTYPES = st.sampled_from([np.float32, np.float64])


# -- the oracle -------------------------------------------------------------------------------


def _array_axes(index, ndim):
    """The axis of the indexed array that each "array" slot of `index` indexes."""
    c = ix._first_axes(index, ndim)
    return [c[q] for q, item in enumerate(index) if item == "array"]


def _examples(rng, prim, args, params, size, batched):
    """`size` examples of `args`: batched float args scaled differently, batched index
    arrays redrawn in range for each example; unbatched args repeat."""
    if prim is slicing.slice_p:
        axes = []
    else:
        shape = np.shape(args[0]) if prim is ix.gather_p else params["shape"]
        axes = _array_axes(params["index"], len(shape))
    out = []
    for _ in range(size):
        ex = []
        for i, a in enumerate(args):
            a = np.asarray(a)
            if i in batched and i > 0 and a.size:  # an index array
                d = shape[axes[i - 1]]
                a = rng.integers(-d, d, a.shape).astype(a.dtype)
            elif i in batched and a.dtype.kind == "f":
                a = (a * (1.0 + rng.random(a.shape))).astype(a.dtype)
            ex.append(a)
        out.append(ex)
    return out


def _stack(prim, args, params, examples, batched, axes):
    stacked, dims = [], []
    for i, a in enumerate(args):
        if i in batched:
            d = axes[i] % (np.ndim(a) + 1)
            if examples:
                stacked.append(np.stack([ex[i] for ex in examples], axis=d))
            else:
                stacked.append(
                    np.empty(np.shape(a)[:d] + (0,) + np.shape(a)[d:], np.asarray(a).dtype)
                )
            dims.append(d)
        else:
            stacked.append(np.asarray(a))
            dims.append(None)
    return stacked, dims


def _expected(prim, args, params, examples):
    if examples:
        return np.stack([bind(prim, *ex, **params) for ex in examples])
    one = bind(prim, *args, **params)
    return np.empty((0,) + one.shape, one.dtype)


def check_batching(prim, args, params, batched, axes, size, seed=0):
    """The rule, eagerly and traced, equals the loop bit for bit."""
    rng = np.random.default_rng(seed)
    examples = _examples(rng, prim, args, params, size, batched)
    stacked, dims = _stack(prim, args, params, examples, batched, axes)
    want = _expected(prim, args, params, examples)
    out, out_dim = prim.batch(stacked, dims, **params)
    got = np.moveaxis(np.asarray(out), out_dim, 0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want, strict=True)
    # the same rule on tracers (abstract tracing), run as a graph
    traced_dim = []

    def f(*xs):
        o, d = prim.batch(list(xs), dims, **params)
        traced_dim.append(d)
        return o

    graph = tg.make_graph(f)(*stacked)
    assert traced_dim == [out_dim]
    np.testing.assert_array_equal(np.asarray(graph(*stacked)), np.asarray(out), strict=True)
    return graph


def _draw_batching(data, n_args):
    batched = data.draw(st.sets(st.integers(0, n_args - 1), min_size=1), label="batched")
    axes = [data.draw(st.integers(-8, 8), label=f"axis {i}") for i in range(n_args)]
    size = data.draw(st.integers(0, 3), label="batch size")
    return batched, axes, size


# -- random samples ---------------------------------------------------------------------------


@given(data=st.data(), dtype=DTYPES)
def test_slice_batching_matches_a_loop(data, dtype):
    shape = S.shapes(data)
    x = S.array(data, shape, dtype)
    bounds = []
    for d in shape:
        s = slice(
            data.draw(st.none() | st.integers(-d - 1, d + 1)),
            data.draw(st.none() | st.integers(-d - 1, d + 1)),
            data.draw(st.none() | st.integers(-3, 3).filter(bool)),
        )
        bounds.append(slicing.canonical_slice(*s.indices(d))[0])
    params = {k: tuple(b[i] for b in bounds) for i, k in enumerate(("starts", "limits", "strides"))}
    _, axes, size = _draw_batching(data, 1)
    check_batching(slicing.slice_p, [x], params, {0}, axes, size)


@given(data=st.data(), dtype=DTYPES, seed=st.integers(0, 2**32 - 1))
def test_gather_batching_matches_a_loop(data, dtype, seed):
    x, items, arrays = draw_gather(data, dtype)
    args = [x, *arrays]
    batched, axes, size = _draw_batching(data, len(args))
    check_batching(ix.gather_p, args, {"index": items}, batched, axes, size, seed)


@given(data=st.data(), dtype=DTYPES, seed=st.integers(0, 2**32 - 1))
def test_scatter_add_batching_matches_a_loop(data, dtype, seed):
    x, items, arrays = draw_gather(data, dtype)
    out_shape = ix.indexed_shape("scatter_add", x.shape, items, [a.shape for a in arrays])
    updates = S.array(data, out_shape, dtype)
    args = [updates, *arrays]
    params = {"shape": x.shape, "index": items}
    batched, axes, size = _draw_batching(data, len(args))
    check_batching(ix.scatter_add_p, args, params, batched, axes, size, seed)


# -- chosen edge cases ------------------------------------------------------------------------

_X = np.arange(3 * 3 * 4 * 5, dtype=np.float64).reshape(3, 3, 4, 5)
_I = np.array([[0, -1, 2]])  # (1, 3)
_J = np.array([1, 0, -2])  # (3,)
_SL = ("slice", 0, 3, 1)

# (x, index, arrays): adjacent and separated advanced blocks, ints joining them, an empty
# ellipsis that separates, 0-d booleans, newaxis, and a batch axis between two arrays.
_CASES = {
    "adjacent at front": (_X, ("array", "array"), [_I[:, :2] % 2, _J[:2] % 3]),
    "adjacent after slice": (_X, (_SL, "array", "array"), [_I % 3, _J]),
    "separated by slice": (_X, ("array", _SL, "array"), [_I % 2, _J]),
    "int and array separated": (_X, (1, _SL, "array"), [_J]),
    "int and array adjacent": (_X, (_SL, 1, "array"), [_J]),
    "empty ellipsis separates": (_X[..., 0, 0], ("array", "...", "array"), [_I % 2, _J]),
    "ellipsis then array": (_X, ("...", "array"), [_J]),
    "array then ellipsis": (_X, ("array", "..."), [_J % 2]),
    "0-d booleans": (_X, (("bool", True), _SL, "array", ("bool", True)), [_J]),
    "0-d false boolean": (_X, (_SL, ("bool", False), "array"), [_J[:1]]),
    "newaxis between": (_X, ("array", "newaxis", "array"), [_I % 2, _J]),
    "newaxis and 0-d arrays": (_X, ("newaxis", "array", "array"), [np.array(1), np.array(-2)]),
    "empty index array": (_X, (_SL, "array"), [np.zeros((0, 2), np.intp)]),
}


@pytest.mark.parametrize("case", list(_CASES), ids=str)
@pytest.mark.parametrize("size", [0, 1, 3])
def test_gather_batching_edge_cases(case, size):
    x, index, arrays = _CASES[case]
    args = [x, *arrays]
    n = len(args)
    rng = np.random.default_rng(size)
    for batched in [{0}, set(range(1, n)), set(range(n)), {n - 1}, {0, n - 1}]:
        for _ in range(4):
            axes = [int(rng.integers(-6, 6)) for _ in args]
            check_batching(ix.gather_p, args, {"index": index}, batched, axes, size, seed=size)


@pytest.mark.parametrize("case", list(_CASES), ids=str)
@pytest.mark.parametrize("size", [0, 1, 3])
def test_scatter_add_batching_edge_cases(case, size):
    x, index, arrays = _CASES[case]
    shape = ix.indexed_shape("gather", x.shape, index, [a.shape for a in arrays])
    updates = np.random.default_rng(1).standard_normal(shape)
    args = [updates, *arrays]
    n = len(args)
    params = {"shape": x.shape, "index": index}
    rng = np.random.default_rng(size)
    for batched in [{0}, set(range(1, n)), set(range(n)), {n - 1}, {0, n - 1}]:
        for _ in range(4):
            axes = [int(rng.integers(-6, 6)) for _ in args]
            check_batching(ix.scatter_add_p, args, params, batched, axes, size, seed=size)


@pytest.mark.parametrize("d", [0, 1, 2, 3, -1])
@pytest.mark.parametrize("size", [0, 1, 3])
def test_slice_batch_axis_anywhere(d, size):
    x = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    params = {"starts": (2, 0, 1), "limits": (-1, 4, 5), "strides": (-1, 2, 3)}
    graph = check_batching(slicing.slice_p, [x], params, {0}, [d], size)
    assert [node.prim.name for node in graph.nodes if node.prim.name != "arg"] == ["slice"]


# -- no needless work -------------------------------------------------------------------------


def _prims(graph):
    return [node.prim.name for node in graph.nodes if node.prim.name not in ("arg", "const")]


def test_gather_keeps_an_unbatched_x_unbatched():
    x, index, arrays = _CASES["separated by slice"]
    graph = check_batching(ix.gather_p, [x, *arrays], {"index": index}, {1, 2}, [0, 1, 1], 3)
    assert "broadcast_to" not in _prims(graph)
    (gather,) = [n for n in graph.nodes if n.prim is ix.gather_p]
    assert gather.inputs[0] == graph.inputs[0]  # x itself, as given


@pytest.mark.parametrize(
    ("index", "d"),
    [
        (("...", "array"), 1),  # inside the ellipsis
        (("array",), 3),  # an implicit trailing axis
        ((_SL, "array"), 0),  # before the advanced block: a slice is inserted
        (("array", _SL), 2),  # after it
    ],
)
def test_gather_with_only_x_batched_does_not_transpose(index, d):
    args = [_X[:, :3], _J]
    graph = check_batching(ix.gather_p, args, {"index": index}, {0}, [d, 0], 2)
    assert _prims(graph) == ["gather"]


def test_gather_batch_axis_between_adjacent_arrays_is_moved():
    # x[i, j] batched along axis 1: a slice there would separate i and j, so it moves
    args = [_X[:, :3], _I % 2, _J]
    graph = check_batching(ix.gather_p, args, {"index": ("array", "array")}, {0}, [1, 0, 0], 2)
    assert _prims(graph) == ["transpose", "gather"]


def test_gather_with_batched_x_and_indices_uses_the_batch_axis_in_place():
    # x[i, j] with x batched along axis 1: arange(B) goes between i and j, no transpose of x
    args = [_X[:, :3], _I % 2, _J]
    index = {"index": ("array", "array")}
    graph = check_batching(ix.gather_p, args, index, {0, 1}, [1, 0, 0], 3)
    assert "transpose" not in _prims(graph)


def test_scatter_add_with_only_updates_batched_keeps_their_batch_axis():
    updates = np.ones((2, 3, 5))  # x[:, i] of x (2, 4, 5) with i of shape (3,)
    params = {"shape": (2, 4, 5), "index": (("slice", 0, 2, 1), "array")}
    for d in range(4):
        graph = check_batching(ix.scatter_add_p, [updates, _J % 4], params, {0}, [d, 0], 2)
        assert _prims(graph) == ["scatter_add"], d
