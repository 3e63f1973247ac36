"""SAMPLES rows for the sorting primitives.

The differentiable ones (sort, partition) draw distinct values 0.25 apart, so no
finite-difference step crosses a tie; the integer-valued ones (argsort, argpartition,
searchsorted, lexsort, nonzero) draw rounded values, so ties and zeros are common and their
tie rules are exercised. (nanmax and nanmin are reductions: samples/reduction.py.)
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import FLOATS, Sample
from tracegrad.primitives import sorting as so


def _distinct(data, shape, dtype):
    """Distinct values 0.25 apart (exact in float32), in a random order: no ties."""
    n = int(np.prod(shape))
    order = np.asarray(data.draw(st.permutations(range(n)), label="order"), dtype=np.float64)
    return ((order - n / 2) * 0.25).reshape(shape).astype(dtype)


def _tied(data, shape, dtype):
    """Small integers as floats: many ties (and zeros)."""
    return np.round(S.array(data, shape, dtype, -2.0, 2.0)).astype(dtype)


def _axis(data, shape, nonempty=False):
    shape = list(shape)
    a = data.draw(st.integers(0, len(shape) - 1), label="axis")
    if nonempty and shape[a] == 0:
        shape[a] = 2
    return tuple(shape), a


def _sort(values):
    def draw(data, dtype):
        shape, axis = _axis(data, S.shapes(data, min_dims=1))
        stable = data.draw(st.booleans(), label="stable")
        return (values(data, shape, dtype),), {"axis": axis, "stable": stable}

    return draw


def _partition(values):
    def draw(data, dtype):
        shape, axis = _axis(data, S.shapes(data, min_dims=1), nonempty=True)
        n = shape[axis]
        kth = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3), label="kth")
        return (values(data, shape, dtype),), {"kth": tuple(sorted(kth)), "axis": axis}

    return draw


def _searchsorted(data, dtype):
    batch_dims = data.draw(st.integers(0, 1), label="batch_dims")
    batch = tuple(data.draw(st.lists(st.integers(0, 3), min_size=batch_dims, max_size=batch_dims)))
    n = data.draw(st.integers(0, 5), label="len(a)")
    a = np.sort(_tied(data, batch + (n,), dtype), axis=-1)
    v = _tied(data, batch + S.shapes(data, max_dims=2), dtype)
    right = data.draw(st.booleans(), label="right")
    return (a, v), {"right": right, "batch_dims": batch_dims}


def _lexsort(data, dtype):
    shape, axis = _axis(data, S.shapes(data, min_dims=1))
    keys = data.draw(st.integers(1, 3), label="number of keys")
    return tuple(_tied(data, shape, dtype) for _ in range(keys)), {"axis": axis}


def _nonzero(data, dtype):
    x = _tied(data, S.shapes(data, min_dims=1), dtype)
    size = data.draw(st.integers(0, x.size + 2), label="size")
    fill = tuple(data.draw(st.integers(-1, 2), label="fill") for _ in range(x.ndim))
    return (x,), {"size": size, "fill_value": fill}


SAMPLES = {
    so.sort_p: Sample(_sort(_distinct), complex=(0,)),
    so.argsort_p: Sample(_sort(_tied), fd=False, complex=(0,)),
    so.partition_p: Sample(_partition(_distinct), complex=(0,)),
    so.argpartition_p: Sample(_partition(_tied), fd=False, complex=(0,)),
    so.searchsorted_p: Sample(_searchsorted, fd=False, complex=(0, 1), mixed=True),
    so.lexsort_p: Sample(_lexsort, fd=False, complex=FLOATS, mixed=True),
    so.nonzero_p: Sample(_nonzero, fd=False, complex=(0,)),
}
