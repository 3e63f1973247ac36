"""Hypothesis building blocks for the test suite: shapes, broadcasting pairs, arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp


def shapes(data, *, min_dims=0, max_dims=3, min_side=0, max_side=4) -> tuple[int, ...]:
    """A shape, size-0 and size-1 axes included unless `min_side` says otherwise."""
    return data.draw(
        hnp.array_shapes(
            min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
        ),
        label="shape",
    )


def broadcast_shapes(data, n=2, *, max_dims=3, min_side=0, max_side=4):
    """`n` shapes that broadcast together (NumPy rules, size-1 and missing axes included)."""
    r = data.draw(
        hnp.mutually_broadcastable_shapes(
            num_shapes=n, min_dims=0, max_dims=max_dims, min_side=min_side, max_side=max_side
        ),
        label="broadcast shapes",
    )
    return r.input_shapes


def array(data, shape, dtype=np.float64, lo=-2.0, hi=2.0) -> np.ndarray:
    """A float array with elements in [lo, hi]: finite, away from any singular point."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return data.draw(hnp.arrays(dtype, shape), label="bool array")
    if dtype.kind in "iu":
        return data.draw(
            hnp.arrays(dtype, shape, elements=st.integers(int(lo), int(hi))), label="int array"
        )
    if dtype.itemsize < 8:  # bounds must be representable in the narrower type: round inward
        lo32, hi32 = dtype.type(lo), dtype.type(hi)
        lo = float(lo32 if lo32 >= lo else np.nextafter(lo32, dtype.type(np.inf)))
        hi = float(hi32 if hi32 <= hi else np.nextafter(hi32, dtype.type(-np.inf)))
    elems = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=dtype.itemsize * 8)
    return data.draw(hnp.arrays(dtype, shape, elements=elems), label="array")


def axis_subset(data, ndim: int) -> tuple[int, ...]:
    """A sorted tuple of distinct axes of an `ndim`-dimensional array (maybe empty)."""
    if ndim == 0:
        return ()
    return tuple(sorted(data.draw(st.sets(st.integers(0, ndim - 1), max_size=ndim), label="axes")))
