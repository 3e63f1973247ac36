"""SAMPLES rows for the reduction primitives.

max/min and nanmax/nanmin draw distinct values on a grid (their derivative jumps at ties;
nanmax/nanmin's NaN handling is tested in tests/numpy/test_nanfunctions.py); prod and cumprod
keep |x| in [0.5, 1.5] (prod's zeros are tested against an analytic oracle in
test_reduction.py; cumprod's derivative divides by x). Shapes include size-0 and size-1 axes
wherever the primitive accepts them.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import Sample
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import reduction as red


def _away_from_zero(data, shape, dtype):
    """Values with |x| in [0.5, 1.5] and random signs."""
    x = S.array(data, shape, dtype, 0.5, 1.5)
    flip = S.array(data, shape, np.bool_)
    return np.where(flip, -x, x).astype(dtype)


def _distinct(data, shape, dtype):
    """Distinct values 0.25 apart (exact in float32), in a random order: no ties."""
    n = int(np.prod(shape))
    order = np.asarray(data.draw(st.permutations(range(n)), label="order"), dtype=np.float64)
    return ((order - n / 2) * 0.25).reshape(shape).astype(dtype)


def _reduce(values, nonempty=False):
    def draw(data, dtype):
        shape = S.shapes(data)
        x = values(data, shape, dtype)
        if nonempty:  # max/min have no identity: reduce only over non-empty axes
            ok = [i for i, d in enumerate(shape) if d > 0]
            picked = S.axis_subset(data, len(ok))
            axis = tuple(ok[i] for i in picked)
        else:
            axis = S.axis_subset(data, len(shape))
        keepdims = data.draw(st.booleans(), label="keepdims")
        return (x,), {"axis": axis, "keepdims": keepdims}

    return draw


def _one_axis(values, *, nonempty):
    def draw(data, dtype):
        shape = list(S.shapes(data, min_dims=1))
        a = data.draw(st.integers(0, len(shape) - 1), label="axis")
        if nonempty and shape[a] == 0:
            shape[a] = 2
        return (values(data, tuple(shape), dtype),), {"axis": (a,)}

    return draw


def _arg(data, dtype):
    (x,), params = _one_axis(_distinct, nonempty=True)(data, dtype)
    return (x,), {**params, "keepdims": data.draw(st.booleans(), label="keepdims")}


def _cumulative(values):
    def draw(data, dtype):
        (x,), params = _one_axis(values, nonempty=False)(data, dtype)
        flags = {
            "reverse": data.draw(st.booleans(), label="reverse"),
            "exclusive": data.draw(st.booleans(), label="exclusive"),
        }
        return (x,), {**params, **flags}

    return draw


def _plain(data, shape, dtype):
    return S.array(data, shape, dtype)


def _with_zeros(data, shape, dtype):
    # rounded values: many exact zeros, so all/any see both outcomes
    return np.round(S.array(data, shape, dtype)).astype(dtype)


SAMPLES = {
    bc.sum_p: Sample(_reduce(_plain), complex=(0,)),
    bc.mean_p: Sample(_reduce(_plain, nonempty=True), complex=(0,)),  # (empty: NaN, warned)
    red.prod_p: Sample(_reduce(_away_from_zero), complex=(0,)),
    red.max_p: Sample(_reduce(_distinct, nonempty=True), complex=(0,)),
    red.min_p: Sample(_reduce(_distinct, nonempty=True), complex=(0,)),
    red.nanmax_p: Sample(_reduce(_distinct, nonempty=True), complex=(0,)),
    red.nanmin_p: Sample(_reduce(_distinct, nonempty=True), complex=(0,)),
    red.argmax_p: Sample(_arg, fd=False, complex=(0,)),
    red.argmin_p: Sample(_arg, fd=False, complex=(0,)),
    red.all_p: Sample(_reduce(_with_zeros), fd=False, complex=(0,)),
    red.any_p: Sample(_reduce(_with_zeros), fd=False, complex=(0,)),
    red.cumsum_p: Sample(_cumulative(_plain), complex=(0,)),
    red.cumprod_p: Sample(_cumulative(_away_from_zero), complex=(0,)),
}
