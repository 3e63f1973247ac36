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
from tests.primitives.samples.row import REAL_OF, Sample, with_imaginary
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

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def _complex_masked(draw):
    """The row's draw with a complex x and start (`dtype=` widened to the complex dtype: NumPy
    will not accumulate complex values in a real one). max/min compare lexicographically."""

    def complex_draw(data, dtype):
        (x, mask, start), params = draw(data, REAL_OF[dtype])
        x = with_imaginary(data, x, dtype)
        if "dtype" in params:
            params = {**params, "dtype": np.dtype(_COMPLEX_OF[params["dtype"]])}
        start = with_imaginary(data, start, params.get("dtype", dtype))
        return (x, mask, start), params

    return complex_draw


def _row(values, start, accumulates):
    draw = _masked(values, start, accumulates)
    return Sample(draw, complex=_complex_masked(draw))


SAMPLES = {
    masked.sum_where_p: _row(_plain, _start(-2, 2), True),
    masked.prod_where_p: _row(_away_from_zero, _start(0.5, 2), True),
    masked.max_where_p: _row(_distinct, _OFF_GRID, False),
    masked.min_where_p: _row(_distinct, _OFF_GRID, False),
}
