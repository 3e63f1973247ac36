"""Batching rules of the products (matmul, dot, tensordot, einsum) against a Python loop.

Every case is enumerated, not sampled: each subset of batched operands, each batch axis
position (first, middle, last), batch sizes 0, 1 and 3, 1-D operands (which matmul and dot
promote), operands of unequal rank (so a batch axis could wrongly meet a broadcast axis),
size-0 axes, '...' in einsum. The oracle stacks the primitive applied to each example; the
batched products may sum in another order, so values agree to a tolerance. The rules also run
on tracers, and `x @ W` with a batch of x stays one product that reads W as it is.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.core import bind
from tracegrad.ir.types import Aval
from tracegrad.primitives import einsum as es
from tracegrad.primitives import products, views

F32, F64 = np.float32, np.float64
SIZES = (0, 1, 3)


def _array(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _expected(prim, examples, params, per_example_avals):
    if examples:
        return np.stack([np.asarray(bind(prim, *ex, **params)) for ex in examples])
    out = prim.shape(*per_example_avals, **params)
    return np.empty((0,) + out.shape, out.dtype)


def _assert_close(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    tol = 1e-12 if want.dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale * 10)


def check_batching(prim, shapes, dims, size, params=None, dtypes=None, rng=None, traced=False):
    """`prim.batch` on stacked examples (operand i batched along dims[i], or unbatched)
    equals the loop over examples; with `traced`, the rule also runs on tracers and the
    graph it records gives the same values."""
    params = params or {}
    dtypes = dtypes or (F64,) * len(shapes)
    rng = rng or np.random.default_rng(0)
    shared = [_array(rng, s, t) for s, t in zip(shapes, dtypes)]
    examples = [
        [
            _array(rng, s, t) if d is not None else a
            for s, t, d, a in zip(shapes, dtypes, dims, shared)
        ]
        for _ in range(size)
    ]
    stacked = []
    for i, d in enumerate(dims):
        if d is None:
            stacked.append(shared[i])
        elif size:
            stacked.append(np.stack([ex[i] for ex in examples], axis=d))
        else:
            s = shapes[i]
            stacked.append(np.empty(s[:d] + (0,) + s[d:], dtypes[i]))
    avals = [Aval(tuple(s), np.dtype(t)) for s, t in zip(shapes, dtypes)]
    want = _expected(prim, examples, params, avals)
    out, out_dim = prim.batch(list(stacked), list(dims), **params)
    got = np.asarray(out)
    got = np.moveaxis(got, out_dim, 0) if out_dim is not None else np.broadcast_to(got, want.shape)
    _assert_close(got, want)
    if traced:

        def rule(*args):
            return prim.batch(list(args), list(dims), **params)[0]

        graph = tg.make_graph(rule)(*stacked)
        np.testing.assert_array_equal(graph(*stacked), out, strict=True)
    return stacked, out, out_dim


def all_dims(shapes):
    """Every (subset of batched operands, batch axis of each) for per-example `shapes`."""
    choices = [[None] + list(range(len(s) + 1)) for s in shapes]
    return [d for d in itertools.product(*choices) if any(x is not None for x in d)]


def check_everywhere(prim, shapes, params=None, dtypes=None):
    rng = np.random.default_rng(1)
    for dims in all_dims(shapes):
        for size in SIZES:
            check_batching(prim, shapes, dims, size, params, dtypes, rng)


# -- matmul -----------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (1, 3, 4)),
    ((2, 5, 2, 3), (3, 4)),
    ((2, 3), (2, 5, 3, 4)),
    ((2, 5, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (2, 1, 3, 4)),
    ((3,), (2, 5, 3, 4)),
    ((2, 1, 2, 3), (3,)),
    ((0, 3), (3, 2)),
    ((2, 0), (0, 4)),
    ((2, 0), (0,)),
    ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_batching_matches_a_loop_everywhere(shapes):
    check_everywhere(products.matmul_p, shapes)


@pytest.mark.parametrize("dtypes", [(F32, F32), (F32, F64), (F64, F32)], ids=str)
@pytest.mark.parametrize("shapes", [((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (3,))])
def test_matmul_batching_keeps_dtypes(shapes, dtypes):
    check_everywhere(products.matmul_p, shapes, dtypes=dtypes)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES[:12], ids=str)
def test_matmul_batching_runs_on_tracers(shapes):
    rng = np.random.default_rng(2)
    for dims in all_dims(shapes):
        check_batching(products.matmul_p, shapes, dims, 3, rng=rng, traced=True)


def _rule_graph(prim, stacked, dims, **params):
    return tg.make_graph(lambda *a: prim.batch(list(a), list(dims), **params)[0])(*stacked)


def _names(graph):
    return [n.prim.name for n in graph.nodes]


def _reads_input_directly(graph, prim_name, arg_index):
    """Every `prim_name` node reads graph input `arg_index` itself (no copy, broadcast or
    other op between)."""
    node = graph.inputs[arg_index].node
    return all(
        n.inputs[1].node is node or n.inputs[0].node is node
        for n in graph.nodes
        if n.prim.name == prim_name
    )


@pytest.mark.parametrize("x_shape", [(7, 3), (7, 2, 3), (2, 7, 3)], ids=str)
def test_x_at_W_with_a_batch_of_x_is_one_matmul_reading_W(x_shape):
    """Per-example gradients and Jacobians rely on this: W is never copied per example."""
    rng = np.random.default_rng(3)
    x, w = _array(rng, x_shape, F64), _array(rng, (3, 4), F64)
    for d in range(len(x_shape) - 1):  # batch axes that are row axes of x
        graph = _rule_graph(products.matmul_p, [x, w], [d, None])
        names = _names(graph)
        assert names.count("matmul") == 1, str(graph)
        assert set(names) <= {"matmul", "reshape"}, str(graph)
        assert _reads_input_directly(graph, "matmul", 1), str(graph)
        check_batching(products.matmul_p, (x_shape[:d] + x_shape[d + 1 :], (3, 4)), (d, None), 7)


@pytest.mark.parametrize("y_dim", [0, 1])
def test_W_at_a_batch_of_vectors_is_one_matmul(y_dim):
    rng = np.random.default_rng(4)
    w = _array(rng, (4, 3), F64)
    y = _array(rng, (7, 3) if y_dim == 0 else (3, 7), F64)
    graph = _rule_graph(products.matmul_p, [w, y], [None, y_dim])
    names = _names(graph)
    assert names.count("matmul") == 1 and "broadcast_to" not in names, str(graph)
    check_batching(products.matmul_p, ((4, 3), (3,)), (None, y_dim), 7)


def test_matmul_with_a_batched_vector_and_a_stack_of_matrices_never_broadcasts():
    rng = np.random.default_rng(5)
    x, y = _array(rng, (7, 3), F64), _array(rng, (5, 3, 4), F64)
    graph = _rule_graph(products.matmul_p, [x, y], [0, None])
    assert "broadcast_to" not in _names(graph) and _names(graph).count("matmul") == 1


# -- dot --------------------------------------------------------------------------------------

DOT_SHAPES = [
    ((), ()),
    ((), (3,)),
    ((2, 3), ()),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((4, 2, 3), (5, 3, 2)),
    ((2, 3), (5, 3, 4)),
    ((4, 2, 3), (3,)),
    ((3,), (5, 3, 4)),
    ((0, 3), (3, 2)),
    ((2, 0), (0,)),
    ((2, 0), (4, 0, 3)),
]


@pytest.mark.parametrize("shapes", DOT_SHAPES, ids=str)
def test_dot_batching_matches_a_loop_everywhere(shapes):
    check_everywhere(products.dot_p, shapes)


@pytest.mark.parametrize("dtypes", [(F32, F32), (F32, F64), (F64, F32)], ids=str)
@pytest.mark.parametrize("shapes", [((), (3,)), ((2, 3), ()), ((2, 3), (5, 3, 4))], ids=str)
def test_dot_batching_keeps_dtypes(shapes, dtypes):
    check_everywhere(products.dot_p, shapes, dtypes=dtypes)


@pytest.mark.parametrize("shapes", DOT_SHAPES[:11], ids=str)
def test_dot_batching_runs_on_tracers(shapes):
    rng = np.random.default_rng(6)
    for dims in all_dims(shapes):
        check_batching(products.dot_p, shapes, dims, 3, rng=rng, traced=True)


def test_dot_with_one_batched_operand_is_one_dot():
    rng = np.random.default_rng(7)
    x, w = _array(rng, (7, 2, 3), F64), _array(rng, (3, 4), F64)
    graph = _rule_graph(products.dot_p, [x, w], [0, None])
    assert _names(graph) == ["dot"], str(graph)
    y = _array(rng, (7, 3, 5), F64)
    graph = _rule_graph(products.dot_p, [w.T, y], [None, 0])
    assert _names(graph) == ["dot"], str(graph)


# -- tensordot --------------------------------------------------------------------------------

TENSORDOT_CASES = [
    ((2, 3), (3, 4), ((1,), (0,))),
    ((2, 3, 4), (4, 3, 5), ((1, 2), (1, 0))),
    ((2, 3), (4,), ((), ())),
    ((), (3,), ((), ())),
    ((3,), (), ((), ())),
    ((2, 3), (3, 2), ((0, 1), (1, 0))),
    ((0, 3), (3, 0), ((1,), (0,))),
    ((2, 0), (0, 3), ((1,), (0,))),
    ((2, 3, 4), (4,), ((2,), (0,))),
    ((4, 2), (3, 4), ((0,), (1,))),
]


@pytest.mark.parametrize("case", TENSORDOT_CASES, ids=str)
def test_tensordot_batching_matches_a_loop_everywhere(case):
    sa, sb, axes = case
    check_everywhere(products.tensordot_p, (sa, sb), {"axes": axes})


@pytest.mark.parametrize("case", TENSORDOT_CASES[:6], ids=str)
def test_tensordot_batching_runs_on_tracers(case):
    sa, sb, axes = case
    rng = np.random.default_rng(8)
    for dims in all_dims((sa, sb)):
        check_batching(
            products.tensordot_p, (sa, sb), dims, 3, {"axes": axes}, rng=rng, traced=True
        )


NUMPY_AXES = [
    (1, (2, 3, 4), (4, 5)),
    (2, (2, 3, 4), (3, 4, 5)),
    (0, (2, 3), (4,)),
    (((-1,), (0,)), (2, 3, 4), (4, 5)),
    (((-2, -1), (1, 0)), (2, 3, 4), (4, 3, 5)),
    ((-1, 0), (2, 3, 4), (4, 5)),
]


@pytest.mark.parametrize("case", NUMPY_AXES, ids=str)
def test_tensordot_batching_with_axes_given_as_numpy_does(case):
    # the wrapper normalizes int and negative axes of the per-example shapes; the rule gets
    # those per-example axes and shifts them past the batch axis
    axes, sa, sb = case
    norm = products.normalize_tensordot_axes(axes, sa, sb)
    check_everywhere(products.tensordot_p, (sa, sb), {"axes": norm}, dtypes=(F32, F32))


def test_tensordot_with_one_batched_operand_is_one_tensordot():
    rng = np.random.default_rng(9)
    a, b = _array(rng, (2, 7, 3), F64), _array(rng, (3, 4), F64)
    graph = _rule_graph(products.tensordot_p, [a, b], [1, None], axes=((1,), (0,)))
    assert _names(graph) == ["tensordot"], str(graph)


# -- einsum -----------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk", ((2, 3), (3, 4))),
    ("i,i->", ((3,), (3,))),
    ("ii->i", ((3, 3),)),
    ("ii", ((3, 3),)),
    ("ij->ji", ((2, 3),)),
    ("iij,jk->ik", ((2, 2, 3), (3, 4))),
    ("...ij,...jk->...ik", ((5, 2, 3), (3, 4))),
    ("...ij,...jk->...ik", ((6, 1, 2, 3), (5, 3, 4))),
    ("...i,...i->...", ((2, 3), (3,))),
    ("i...j,j->...i", ((2, 4, 5, 3), (3,))),
    ("i...,...i->i...", ((2, 3), (3, 2))),
    ("ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
    ("i,j->ij", ((0,), (3,))),
    ("ij,ij->ij", ((1, 3), (2, 3))),
    ("ij,jk->ik", ((2, 0), (0, 4))),
    ("...->...", ((2, 3),)),
    ("i->", ((0,),)),
]


@pytest.mark.parametrize("case", EINSUM_CASES, ids=str)
def test_einsum_batching_matches_a_loop_everywhere(case):
    subscripts, shapes = case
    spec = es.normalize_subscripts(subscripts, len(shapes))
    check_everywhere(es.einsum_p, shapes, {"subscripts": spec})


@pytest.mark.parametrize("case", EINSUM_CASES[:12], ids=str)
def test_einsum_batching_runs_on_tracers_in_float32(case):
    subscripts, shapes = case
    spec = es.normalize_subscripts(subscripts, len(shapes))
    rng = np.random.default_rng(10)
    for dims in all_dims(shapes):
        check_batching(
            es.einsum_p,
            shapes,
            dims,
            2,
            {"subscripts": spec},
            dtypes=(F32,) * len(shapes),
            rng=rng,
            traced=True,
        )


def test_einsum_batch_label_avoids_every_label_in_use():
    # 'A' is NumPy's first label; with 'A'..'C' taken the batch gets 'D'
    spec = "AB,BC->AC"
    stacked, out, d = check_batching(es.einsum_p, ((2, 3), (3, 4)), (0, 2), 3, {"subscripts": spec})
    graph = _rule_graph(es.einsum_p, stacked, (0, 2), subscripts=spec)
    (node,) = graph.nodes
    assert node.params["subscripts"] == "DAB,BCD->DAC"


def test_einsum_without_a_free_label_says_so():
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    spec = es.normalize_subscripts(letters + "->", 1)
    x = np.ones((2,) + (1,) * 52)
    with pytest.raises(ValueError, match=r"einsum: cannot batch .* all 52 labels"):
        es.einsum_p.batch([x], [0], subscripts=spec)


def test_every_product_has_a_batching_rule():
    for prim in views.PRIMITIVES:
        assert prim.batch is not None, prim.name
