"""Batching rules of the shape family, against a Python loop over the batch.

`test_rules.py` checks every rule on batch sizes 1-3; here the cases it rarely draws: empty
batches, the batch axis last, every operand of concatenate batched vs one, mixed dtypes,
0-d examples, tile's reps longer and shorter than the rank, negative pad values. Each rule also
runs on tracers (inside `make_graph`) and must give the same bits there, and the rules that
keep the batch axis in place must add no transpose.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests.primitives.samples.shape import SAMPLES
from tracegrad.core import bind
from tracegrad.ir.types import aval_of
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import shape as sp
from tracegrad.primitives import slicing, views

DTYPES = st.sampled_from([np.float32, np.float64])


def _outs(prim, out):
    return tuple(out) if prim.multiple_results else (out,)


def _examples(rng, args, size):
    # distinct examples so a rule that mixes up the batch cannot pass by accident
    out = []
    for _ in range(size):
        ex = []
        for a in args:
            a = np.asarray(a)
            if a.dtype.kind == "f":
                a = (a + rng.standard_normal(a.shape)).astype(a.dtype)
            else:
                a = (a + rng.integers(-5, 5, a.shape)).astype(a.dtype)
            ex.append(a)
        out.append(ex)
    return out


def _stack(prim, args, dims, size, seed=0):
    """Batched args (axis `dims[i]`, or the example itself for None) and the loop's outputs."""
    rng = np.random.default_rng(seed)
    examples = _examples(rng, args, size)
    stacked = []
    for i, d in enumerate(dims):
        if d is None:
            stacked.append(np.asarray(args[i]))
        else:
            per = [ex[i] for ex in examples]
            stacked.append(
                np.stack(per, axis=d)
                if per
                else np.empty(_insert(np.shape(args[i]), d, 0), np.asarray(args[i]).dtype)
            )
    return stacked, examples


def _insert(shape, d, n):
    shape = tuple(shape)
    return shape[:d] + (n,) + shape[d:]


def _expected(prim, args, dims, examples, params):
    # one per-example call of the primitive for each example; an unbatched arg is the same each time
    per = [
        _outs(
            prim,
            bind(
                prim, *[ex[i] if d is not None else args[i] for i, d in enumerate(dims)], **params
            ),
        )
        for ex in examples
    ]
    avals = prim.shape(*[aval_of(np.asarray(a)) for a in args], **params)
    avals = tuple(avals) if prim.multiple_results else (avals,)
    return [
        np.stack([p[k] for p in per]) if per else np.empty((0,) + a.shape, a.dtype)
        for k, a in enumerate(avals)
    ]


def _check_outs(prim, out, out_dim, want):
    outs = _outs(prim, out)
    out_dims = tuple(out_dim) if prim.multiple_results else (out_dim,)
    assert len(outs) == len(want)
    for o, d, w in zip(outs, out_dims, want):
        o = np.asarray(o)
        got = np.moveaxis(o, d, 0) if d is not None else np.broadcast_to(o, w.shape)
        assert got.shape == w.shape, (prim, got.shape, w.shape)
        assert got.dtype == w.dtype, (prim, got.dtype, w.dtype)
        assert got.tobytes() == np.ascontiguousarray(w).tobytes(), (prim, got, w)


def check(prim, args, params, dims, size, seed=0):
    """The rule equals a loop, on arrays (eager) and on tracers (inside make_graph)."""
    stacked, examples = _stack(prim, args, dims, size, seed)
    want = _expected(prim, args, dims, examples, params)
    out, out_dim = prim.batch(list(stacked), list(dims), **params)
    _check_outs(prim, out, out_dim, want)

    dims_seen = []

    def traced(*xs):
        o, d = prim.batch(list(xs), list(dims), **params)
        dims_seen.append(d)
        return o

    graph = tg.make_graph(traced)(*stacked)
    _check_outs(prim, graph(*stacked), dims_seen[-1], want)
    return graph


# -- every primitive: empty batches and any batch position -------------------------------------


@pytest.mark.parametrize("prim", list(SAMPLES), ids=str)
@given(data=st.data(), dtype=DTYPES, seed=st.integers(0, 2**32 - 1))
def test_rule_matches_a_loop_with_empty_batches_and_any_position(prim, data, dtype, seed):
    args, params = SAMPLES[prim].draw(data, dtype)
    n = len(args)
    batched = data.draw(st.sets(st.integers(0, n - 1), min_size=1), label="batched args")
    size = data.draw(st.integers(0, 3), label="batch size")
    last = data.draw(st.booleans(), label="batch axis last")
    dims = [
        None
        if i not in batched
        else np.ndim(args[i])
        if last
        else data.draw(st.integers(0, np.ndim(args[i])), label="batch axis")
        for i in range(n)
    ]
    check(prim, args, params, dims, size, seed)


# -- focused cases -------------------------------------------------------------------------------


def _arange(shape, dtype=np.float64):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


@pytest.mark.parametrize("dim", [0, 1, 2, 3])
@pytest.mark.parametrize("size", [0, 1, 3])
def test_reshape_with_the_batch_anywhere(dim, size):
    check(views.reshape_p, [_arange((2, 3, 4))], {"shape": (4, 1, 6)}, [dim], size)
    check(views.reshape_p, [_arange((2, 0, 4))], {"shape": (0, 3)}, [dim], size)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("size", [0, 2])
def test_broadcast_to_puts_the_batch_first_and_new_axes_after_it(dim, size):
    check(bc.broadcast_to_p, [_arange((3, 1))], {"shape": (2, 0, 3, 4)}, [dim], size)
    check(bc.broadcast_to_p, [_arange((3, 1))], {"shape": (5, 3, 4)}, [dim], size)
    stacked, _ = _stack(bc.broadcast_to_p, [_arange((3, 1))], [dim], size)
    out, out_dim = bc.broadcast_to_p.batch(stacked, [dim], shape=(5, 3, 4))
    assert out_dim == 0 and np.shape(out) == (size, 5, 3, 4)


@pytest.mark.parametrize("size", [0, 1, 3])
def test_broadcast_to_of_0d_examples(size):
    check(bc.broadcast_to_p, [np.float32(1.5)], {"shape": (2, 3)}, [0], size)
    check(bc.broadcast_to_p, [np.float32(1.5)], {"shape": ()}, [0], size)


@pytest.mark.parametrize("dim", [0, 1, 2, 3])
def test_transpose_is_one_transpose(dim):
    graph = check(views.transpose_p, [_arange((2, 3, 4))], {"axes": (2, 0, 1)}, [dim], 2)
    assert [n.prim.name for n in graph.nodes if n.prim.name != "arg"] == ["transpose"]


@pytest.mark.parametrize("axis", [(), (0,), (2,), (3,), (0, 3), (1, 2), (0, 1, 2, 3)])
@pytest.mark.parametrize("rank", [0, 1, 2])
def test_expand_dims_at_every_position(axis, rank):
    if max(axis, default=-1) >= rank + len(axis):
        rank = max(axis) + 1 - len(axis)
    x = _arange((2, 3, 2, 2)[:rank])
    for dim in range(rank + 1):
        check(views.expand_dims_p, [x], {"axis": axis}, [dim], 2)
        check(views.expand_dims_p, [x], {"axis": axis}, [dim], 0)


@pytest.mark.parametrize("dim", [0, 1, 2, 3, 4])
def test_squeeze_shifts_the_batch_axis_left(dim):
    x = _arange((1, 3, 1, 1))
    for axis in [(), (0,), (2, 3), (0, 2, 3)]:
        check(views.squeeze_p, [x], {"axis": axis}, [dim], 2)
        check(views.squeeze_p, [x], {"axis": axis}, [dim], 0)


@pytest.mark.parametrize(
    "dims", [(0, 0, 0), (2, 1, 0), (None, 2, None), (1, None, None), (None, None, 2)]
)
@pytest.mark.parametrize("size", [0, 1, 3])
def test_concatenate_all_batched_or_one(dims, size):
    xs = [_arange((2, 1)), _arange((2, 0)), _arange((2, 3))]
    check(sp.concatenate_p, xs, {"axis": 1}, dims, size)
    xs = [_arange((1, 3)), _arange((0, 3)), _arange((2, 3))]
    check(sp.concatenate_p, xs, {"axis": 0}, dims, size)


@pytest.mark.parametrize("dims", [(0, None), (None, 1), (1, 0)])
def test_concatenate_mixed_dtypes(dims):
    xs = [_arange((2, 2), np.float32), _arange((1, 2), np.float64)]
    check(sp.concatenate_p, xs, {"axis": 0}, dims, 2)
    xs = [_arange((2, 2), np.int64), _arange((1, 2), np.float32)]
    check(sp.concatenate_p, xs, {"axis": 0}, dims, 2)


def test_concatenate_keeps_unbatched_operands_copy_free():
    # the unbatched operand is broadcast along the batch (a view) rather than tiled
    x, y = np.ones((3, 2, 2)), np.arange(4.0).reshape(2, 2)
    graph = tg.make_graph(lambda a, b: sp.concatenate_p.batch([a, b], [0, None], axis=0)[0])(x, y)
    names = [n.prim.name for n in graph.nodes]
    assert "tile" not in names and "repeat" not in names
    assert "broadcast_to" in names


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("indices", [(), (0,), (1, 1), (0, 3), (3,)])
def test_split_with_the_batch_anywhere(dim, indices):
    for axis in (0, 1):
        shape = (3, 2) if axis == 0 else (2, 3)
        check(sp.split_p, [_arange(shape)], {"indices": indices, "axis": axis}, [dim], 2)
        check(sp.split_p, [_arange(shape)], {"indices": indices, "axis": axis}, [dim], 0)


@pytest.mark.parametrize("dim", [0, 1, 2, 3])
def test_flip(dim):
    for axis in [(), (0,), (2,), (0, 1, 2)]:
        check(views.flip_p, [_arange((2, 3, 2))], {"axis": axis}, [dim], 3)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("repeats", [0, 2, (1, 0, 3)])
def test_repeat(dim, repeats):
    check(sp.repeat_p, [_arange((3, 2))], {"repeats": repeats, "axis": 0}, [dim], 2)
    if not isinstance(repeats, tuple):
        check(sp.repeat_p, [_arange((3, 2))], {"repeats": repeats, "axis": 1}, [dim], 0)


@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
@pytest.mark.parametrize("reps", [(), (2,), (1, 3), (2, 0, 2), (1, 2, 1, 2)])
@pytest.mark.parametrize("size", [0, 1, 3])
def test_tile_with_reps_longer_or_shorter_than_the_rank(shape, reps, size):
    for dim in range(len(shape) + 1):
        check(sp.tile_p, [_arange(shape)], {"reps": reps}, [dim], size)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("value", [0.0, -2.5, 3])
def test_pad(dim, value):
    widths = ((1, 0), (0, 2))
    check(
        sp.pad_p,
        [_arange((2, 3), np.float32)],
        {"pad_width": widths, "constant_values": value},
        [dim],
        2,
    )
    check(sp.pad_p, [np.float64(1.0)], {"pad_width": (), "constant_values": value}, [0], 3)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("size", [0, 1, 3])
def test_pad_strided(dim, size):
    params = {"shape": (6, 4), "starts": (1, 0), "strides": (2, 3)}
    check(slicing.pad_strided_p, [_arange((3, 2))], params, [dim], size)
    params = {"shape": (2, 4), "starts": (2, 1), "strides": (1, 2)}
    check(slicing.pad_strided_p, [_arange((0, 2))], params, [dim], size)


@pytest.mark.parametrize(
    "prim, args, params",
    [
        (views.expand_dims_p, [_arange((2, 3))], {"axis": (0, 3)}),
        (views.squeeze_p, [_arange((1, 3, 1))], {"axis": (0, 2)}),
        (sp.split_p, [_arange((4, 3))], {"indices": (1,), "axis": 1}),
        (views.flip_p, [_arange((2, 3))], {"axis": (1,)}),
        (sp.repeat_p, [_arange((2, 3))], {"repeats": 2, "axis": 1}),
        (sp.tile_p, [_arange((2, 3))], {"reps": (2, 1, 2)}),
        (sp.pad_p, [_arange((2, 3))], {"pad_width": ((1, 1), (0, 2)), "constant_values": 0.0}),
        (
            slicing.pad_strided_p,
            [_arange((2, 3))],
            {"shape": (4, 5), "starts": (0, 1), "strides": (2, 1)},
        ),
    ],
    ids=str,
)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_rules_that_keep_the_batch_axis_add_no_transpose(prim, args, params, dim):
    graph = check(prim, args, params, [dim], 2)
    names = [n.prim.name for n in graph.nodes if n.prim.name != "arg"]
    assert names == [prim.name], names


def test_rules_differentiate_like_the_loop():
    # a batched rule inside grad: the gradient equals the per-example gradients stacked
    x = np.random.default_rng(0).standard_normal((3, 2, 4))  # batch axis 1, examples (3, 4)
    w = np.random.default_rng(1).standard_normal((4, 6))

    def batched(x):
        t, d = views.transpose_p.batch([x], [1], axes=(1, 0))
        r, d = views.reshape_p.batch([t], [d], shape=(12,))
        p, d = sp.pad_p.batch([r], [d], pad_width=((1, 2),), constant_values=-1.0)
        c, d = sp.concatenate_p.batch([p, np.arange(3.0)], [d, None], axis=0)
        return np.sum(np.moveaxis(c, d, 0)[:, :18] * w.reshape(1, 24)[:, :18] ** 2)

    def one(x):
        c = sp.concatenate(
            [
                sp.pad(views.reshape(views.transpose(x, (1, 0)), (12,)), ((1, 2),), -1.0),
                np.arange(3.0),
            ],
            0,
        )
        return np.sum(c[:18] * w.reshape(24)[:18] ** 2)

    got = tg.grad(batched)(x)
    want = np.stack([tg.grad(one)(x[:, b]) for b in range(2)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
