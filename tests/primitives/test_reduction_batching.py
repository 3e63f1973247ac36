"""Batching rules of the reduction family against a Python loop over the batch.

The generic oracle (test_rules.py) draws batch sizes 1-3; here: size-0 batches, the batch axis
in every position (last included), keepdims, empty and full axis tuples, every reverse /
exclusive flag, integer and bool inputs (NumPy's dtype widening), the rules on tracers (inside
`make_graph` and `grad`), and the absence of any transpose or copy in the batched graph.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests import strategies as S
from tracegrad.core import bind
from tracegrad.ir.types import Aval
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import reduction as red

REDUCE = [bc.sum_p, red.prod_p, red.max_p, red.min_p, red.all_p, red.any_p]
ARG = [red.argmax_p, red.argmin_p]
CUMULATIVE = [red.cumsum_p, red.cumprod_p]
# max/min/arg*/all/any choose or test elements; cumsum/cumprod accumulate sequentially along
# their axis, so batching cannot change their bits. sum/prod may sum in another order.
EXACT = {"max", "min", "argmax", "argmin", "all", "any", "cumsum", "cumprod"}
FLOATS = [np.float32, np.float64]


def loop(prim, xb, d, params):
    """The oracle: `prim` applied to each example (axis `d` of `xb`), stacked on axis 0."""
    outs = [bind(prim, np.take(xb, i, axis=d), **params) for i in range(xb.shape[d])]
    if outs:
        return np.stack(outs)
    per_example = Aval(xb.shape[:d] + xb.shape[d + 1 :], xb.dtype)
    out = prim.shape(per_example, **params)
    return np.empty((0,) + out.shape, out.dtype)


def check(prim, xb, d, params, got, out_dim):
    want = loop(prim, xb, d, params)
    got = np.moveaxis(np.asarray(got), out_dim, 0)
    assert got.shape == want.shape, (prim, got.shape, want.shape)
    assert got.dtype == want.dtype, (prim, got.dtype, want.dtype)
    if prim.name in EXACT or not np.issubdtype(want.dtype, np.floating):
        np.testing.assert_array_equal(got, want, strict=True)
    else:
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
        tol = 1e-12 if want.dtype == np.float64 else 1e-5
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale * 10)


def batched(data, shape, dtype, *, size, d, values=None):
    """A batch of `size` examples of `shape`, stacked along axis `d`."""
    full = shape[:d] + (size,) + shape[d:]
    if values is not None:
        return values(full, dtype)
    return S.array(data, full, dtype, 0.5, 1.5) * np.where(S.array(data, full, np.bool_), -1, 1)


def distinct(shape, dtype):
    # no ties, so argmax/argmin and the sign of zero are fixed
    n = int(np.prod(shape))
    return ((np.random.default_rng(n).permutation(n) - n / 2) * 0.25).reshape(shape).astype(dtype)


def run_rule(prim, xb, d, params):
    return prim.batch([xb], [d], **params)


# -- eager: arrays ----------------------------------------------------------------------------


@pytest.mark.parametrize("prim", REDUCE, ids=str)
@given(data=st.data(), dtype=st.sampled_from(FLOATS))
def test_reductions_match_a_loop(prim, data, dtype):
    shape = S.shapes(data, max_dims=3)
    if prim in (red.max_p, red.min_p):
        ok = [i for i, n in enumerate(shape) if n > 0]
        axis = tuple(ok[i] for i in S.axis_subset(data, len(ok)))
    else:
        axis = S.axis_subset(data, len(shape))
    params = {"axis": axis, "keepdims": data.draw(st.booleans(), label="keepdims")}
    size = data.draw(st.integers(0, 3), label="size")
    d = data.draw(st.integers(0, len(shape)), label="batch axis")
    values = distinct if prim in (red.max_p, red.min_p) else None
    xb = batched(data, shape, dtype, size=size, d=d, values=values)
    check(prim, xb, d, params, *run_rule(prim, xb, d, params))


@pytest.mark.parametrize("prim", ARG + CUMULATIVE, ids=str)
@given(data=st.data(), dtype=st.sampled_from(FLOATS))
def test_one_axis_primitives_match_a_loop(prim, data, dtype):
    shape = list(S.shapes(data, min_dims=1, max_dims=3))
    a = data.draw(st.integers(0, len(shape) - 1), label="axis")
    if prim in ARG:
        shape[a] = max(shape[a], 1)
        flags = {"keepdims": data.draw(st.booleans(), label="keepdims")}
    else:
        flags = {
            "reverse": data.draw(st.booleans(), label="reverse"),
            "exclusive": data.draw(st.booleans(), label="exclusive"),
        }
    shape = tuple(shape)
    params = {"axis": (a,), **flags}
    size = data.draw(st.integers(0, 3), label="size")
    d = data.draw(st.integers(0, len(shape)), label="batch axis")
    values = distinct if prim in ARG else None
    xb = batched(data, shape, dtype, size=size, d=d, values=values)
    check(prim, xb, d, params, *run_rule(prim, xb, d, params))


@pytest.mark.parametrize("prim", REDUCE + ARG + CUMULATIVE, ids=str)
@pytest.mark.parametrize("d", [0, 1, 2, 3])
def test_every_batch_axis_position_with_a_size_zero_batch(prim, d):
    """Per-example shape (2, 3, 4), batch of 0 at each position (3 = last); the rule must
    keep the per-example checks (max over a non-empty axis) and report the right shape."""
    params = {"axis": (1,)}
    if prim in CUMULATIVE:
        params.update(reverse=True, exclusive=True)
    else:
        params["keepdims"] = False
    xb = np.zeros((2, 3, 4)[:d] + (0,) + (2, 3, 4)[d:])
    out, out_dim = run_rule(prim, xb, d, params)
    check(prim, xb, d, params, out, out_dim)


@pytest.mark.parametrize("prim", REDUCE + ARG, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_batch_axis_last_between_and_first(prim, keepdims):
    per = (3, 4, 2)
    axis = (2,) if prim in ARG else (0, 2)
    params = {"axis": axis, "keepdims": keepdims}
    for d in range(4):
        xb = distinct(per[:d] + (3,) + per[d:], np.float64)
        check(prim, xb, d, params, *run_rule(prim, xb, d, params))


@pytest.mark.parametrize(
    "prim", [bc.sum_p, red.prod_p, red.max_p, red.min_p, red.all_p, red.any_p], ids=str
)
def test_empty_and_full_axis_tuples(prim):
    xb = distinct((2, 3, 4), np.float64)
    for d in range(3):
        for axis in [(), (0, 1)]:
            for keepdims in (False, True):
                params = {"axis": axis, "keepdims": keepdims}
                out, out_dim = run_rule(prim, xb, d, params)
                check(prim, xb, d, params, out, out_dim)


@pytest.mark.parametrize("prim", [bc.sum_p, red.prod_p, red.cumsum_p, red.cumprod_p], ids=str)
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.bool_])
def test_integer_and_bool_inputs_keep_numpy_dtypes(prim, dtype):
    """NumPy widens small integers and bools; the batched output must have the same dtype
    and, being integer arithmetic, exactly the same values."""
    xb = (np.arange(24).reshape(2, 3, 4) % 3).astype(dtype)
    params = {"axis": (1,)}
    if prim in CUMULATIVE:
        params.update(reverse=False, exclusive=True)
    else:
        params["keepdims"] = True
    for d in range(3):
        check(prim, xb, d, params, *run_rule(prim, xb, d, params))


@pytest.mark.parametrize("prim", [red.all_p, red.any_p], ids=str)
def test_logical_reductions_on_floats_and_nan(prim):
    xb = np.array([[0.0, 1.0, np.nan], [0.0, 0.0, 0.0], [2.0, -1.0, 3.0]])
    for d in range(2):
        params = {"axis": (0,), "keepdims": False}
        check(prim, xb, d, params, *run_rule(prim, xb, d, params))


def test_max_propagates_nan_per_example():
    xb = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    for prim in (red.max_p, red.min_p, red.argmax_p, red.argmin_p):
        for d in range(2):
            params = {"axis": (0,), "keepdims": False}
            check(prim, xb, d, params, *run_rule(prim, xb, d, params))


def test_unbatched_argument_stays_unbatched():
    x = np.arange(6.0).reshape(2, 3)
    out, out_dim = bc.sum_p.batch([x], [None], axis=(1,), keepdims=False)
    assert out_dim is None
    np.testing.assert_array_equal(out, np.sum(x, axis=1), strict=True)
    out, out_dim = red.cumsum_p.batch([x], [None], axis=(0,), reverse=True, exclusive=False)
    assert out_dim is None
    np.testing.assert_array_equal(out, np.flip(np.cumsum(np.flip(x, 0), 0), 0), strict=True)


@pytest.mark.parametrize(
    "d, axis, keepdims, out_dim",
    [(0, (0, 1), False, 0), (1, (0,), False, 0), (1, (1,), False, 1), (2, (0, 1), False, 0),
     (2, (0, 1), True, 2), (3, (0, 2), False, 1), (3, (0, 2), True, 3)],
)  # fmt: skip
def test_out_dim_counts_the_reduced_axes_before_the_batch_axis(d, axis, keepdims, out_dim):
    xb = distinct((2, 3, 4, 5), np.float64)
    out, got_dim = bc.sum_p.batch([xb], [d], axis=axis, keepdims=keepdims)
    assert got_dim == out_dim
    check(bc.sum_p, xb, d, {"axis": axis, "keepdims": keepdims}, out, got_dim)


# -- on tracers -------------------------------------------------------------------------------


@pytest.mark.parametrize("prim", REDUCE + ARG + CUMULATIVE, ids=str)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rules_trace_into_one_node_without_transposes(prim, dtype):
    """Under abstract tracing the rule records the primitive once and nothing else (the batch
    axis never moves), and the graph gives the eager rule's bits."""
    per = (3, 4)
    if prim in CUMULATIVE:
        params = {"axis": (1,), "reverse": True, "exclusive": False}
    else:
        params = {"axis": (1,), "keepdims": prim in (red.prod_p, red.argmin_p, red.any_p)}
    for d in range(3):
        xb = distinct(per[:d] + (2,) + per[d:], dtype)
        dims = []

        def f(x, d=d, dims=dims):
            out, out_dim = prim.batch([x], [d], **params)
            dims.append(out_dim)
            return out

        graph = tg.make_graph(f)(xb)
        prims = [n.prim.name for n in graph.nodes if n.prim.name not in ("arg", "const")]
        assert prims == [prim.name], prims
        eager, eager_dim = run_rule(prim, xb, d, params)
        assert dims == [eager_dim]
        got = graph(xb)
        assert np.asarray(got).dtype == eager.dtype
        np.testing.assert_array_equal(got, eager, strict=True)
        check(prim, xb, d, params, got, eager_dim)


@pytest.mark.parametrize("prim", [bc.sum_p, red.prod_p, red.max_p, red.min_p, *CUMULATIVE], ids=str)
def test_gradient_through_a_rule_matches_per_example_gradients(prim):
    """grad of <w_b, batched rule> equals each example's grad of <w_i, prim> stacked: the rule
    works on concrete tracers and its output is differentiable."""
    per = (3, 4)
    if prim in CUMULATIVE:
        params = {"axis": (0,), "reverse": False, "exclusive": True}
    else:
        params = {"axis": (0,), "keepdims": True}
    for d in range(3):
        xb = distinct(per[:d] + (2,) + per[d:], np.float64) / 4 + 0.1
        out, out_dim = run_rule(prim, xb, d, params)
        w = distinct(np.moveaxis(out, out_dim, 0).shape[1:], np.float64)  # a non-constant ct
        ws = [w, 2.0 * w + 1.0]
        wb = np.stack(ws, axis=out_dim)

        def total(x, d=d, wb=wb):
            y, _ = prim.batch([x], [d], **params)
            return bc.sum(y * wb, tuple(range(wb.ndim)))

        def one(x, i, ws=ws):
            return bc.sum(bind(prim, x, **params) * ws[i], tuple(range(ws[i].ndim)))

        got = tg.grad(total)(xb)
        want = np.stack(
            [tg.grad(lambda x, i=i: one(x, i))(np.take(xb, i, axis=d)) for i in range(2)], axis=d
        )
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# -- params the rule cannot receive -----------------------------------------------------------


def test_negative_axes_are_rejected_before_any_rule_runs():
    """Params are normalized (sorted, non-negative) by tracegrad.numpy; the primitive's shape
    rule rejects a negative axis, so a rule never sees one."""
    with pytest.raises(ValueError, match=r"sum: axis \(-1,\) does not fit .*\(2, 3\)"):
        bc.sum_p.shape(Aval((2, 3), np.float64), axis=(-1,), keepdims=False)
