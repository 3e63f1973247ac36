"""SAMPLES rows for the masked reductions (sum_where, prod_where, max_where, min_where).

Each draws an array, a bool mask of a shape that broadcasts to it (fewer axes, size-1 axes),
an axis subset and keepdims, and a 0-d start. max/min draw distinct values on a grid and a
start away from them (their derivative jumps at ties, the start's included); prod keeps |x|
in [0.5, 1.5]; sum and prod sometimes accumulate a float32 array in float64 (`dtype=`).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.reduction import _away_from_zero, _distinct, _plain
from tests.primitives.samples.row import Sample
from tracegrad.primitives import masked


def _mask(data, shape):
    """A bool mask broadcasting to `shape`: some leading axes dropped, some axes of size 1."""
    drop = data.draw(st.integers(0, len(shape)), label="mask axes dropped")
    mshape = tuple(
        1 if data.draw(st.integers(0, 3), label="size-1 mask axis") == 0 else d
        for d in shape[drop:]
    )
    return S.array(data, mshape, np.bool_)


def _masked(values, start, accumulates):
    def draw(data, dtype):
        shape = S.shapes(data)
        x = values(data, shape, dtype)
        params = {
            "axis": S.axis_subset(data, len(shape)),
            "keepdims": data.draw(st.booleans(), label="keepdims"),
        }
        out_dtype = np.dtype(dtype)
        if accumulates:
            wide = data.draw(st.booleans(), label="dtype=float64")
            params["dtype"] = np.dtype(np.float64) if wide else out_dtype
            out_dtype = params["dtype"]
        return (x, _mask(data, shape), np.asarray(start(data), out_dtype)), params

    return draw


def _start(lo, hi):
    return lambda data: data.draw(st.sampled_from(np.arange(lo, hi, 0.5)), label="start")


# max/min starts sit between the grid's points (multiples of 0.125): never tied with an element
_OFF_GRID = lambda data: data.draw(  # noqa: E731
    st.sampled_from([-9.0625, -0.0625, 0.4375, 9.0625]), label="start"
)

SAMPLES = {
    masked.sum_where_p: Sample(_masked(_plain, _start(-2, 2), True)),
    masked.prod_where_p: Sample(_masked(_away_from_zero, _start(0.5, 2), True)),
    masked.max_where_p: Sample(_masked(_distinct, _OFF_GRID, False)),
    masked.min_where_p: Sample(_masked(_distinct, _OFF_GRID, False)),
}
