"""SAMPLES rows for the shape primitives: shapes with size-0 and size-1 axes, and params
(axes, cut indices, repeat counts, pad widths, strides) drawn to fit them.

Every shape primitive is linear (pad up to a constant), so any values will do: central finite
differences are exact up to rounding.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import FLOATS, Sample
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import shape as sp
from tracegrad.primitives import slicing, views


def _x(data, dtype, **kw):
    return S.array(data, S.shapes(data, **kw), dtype)


def _reshape(data, dtype):
    x = _x(data, dtype)
    # the same factors in another order, with size-1 axes added or dropped
    dims = [d for d in x.shape if d != 1]
    order = data.draw(st.permutations(range(len(dims))), label="order")
    target = [dims[i] for i in order]
    for _ in range(data.draw(st.integers(0, 2), label="ones")):
        target.insert(data.draw(st.integers(0, len(target)), label="where"), 1)
    return (x,), {"shape": tuple(target)}


def _broadcast_to(data, dtype):
    s1, s2 = S.broadcast_shapes(data, 2)
    return (S.array(data, s1, dtype),), {"shape": tuple(np.broadcast_shapes(s1, s2))}


def _transpose(data, dtype):
    x = _x(data, dtype)
    axes = data.draw(st.permutations(range(x.ndim)), label="axes")
    return (x,), {"axes": tuple(axes)}


def _expand_dims(data, dtype):
    x = _x(data, dtype)
    k = data.draw(st.integers(0, 2), label="new axes")
    axis = data.draw(
        st.sets(st.integers(0, x.ndim + k - 1), min_size=k, max_size=k)
        if x.ndim + k
        else st.just(set()),
        label="axis",
    )
    return (x,), {"axis": tuple(sorted(axis))}


def _squeeze(data, dtype):
    x = _x(data, dtype)
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axis = data.draw(st.sets(st.sampled_from(ones)) if ones else st.just(set()), label="axis")
    return (x,), {"axis": tuple(sorted(axis))}


def _concatenate(data, dtype):
    base = S.shapes(data, min_dims=1)
    axis = data.draw(st.integers(0, len(base) - 1), label="axis")
    n = data.draw(st.integers(1, 3), label="number of arrays")
    xs = []
    for _ in range(n):
        shape = list(base)
        shape[axis] = data.draw(st.integers(0, 3), label="length")
        xs.append(S.array(data, tuple(shape), dtype))
    return tuple(xs), {"axis": axis}


def _split(data, dtype):
    x = _x(data, dtype, min_dims=1)
    axis = data.draw(st.integers(0, x.ndim - 1), label="axis")
    n = x.shape[axis]
    indices = data.draw(st.lists(st.integers(0, n), max_size=3), label="indices")
    return (x,), {"indices": tuple(sorted(indices)), "axis": axis}


def _flip(data, dtype):
    x = _x(data, dtype)
    return (x,), {"axis": S.axis_subset(data, x.ndim)}


def _repeat(data, dtype):
    x = _x(data, dtype, min_dims=1)
    axis = data.draw(st.integers(0, x.ndim - 1), label="axis")
    if data.draw(st.booleans(), label="one count"):
        repeats = data.draw(st.integers(0, 3), label="repeats")
    else:
        repeats = tuple(
            data.draw(
                st.lists(st.integers(0, 3), min_size=x.shape[axis], max_size=x.shape[axis]),
                label="repeats",
            )
        )
    return (x,), {"repeats": repeats, "axis": axis}


def _tile(data, dtype):
    x = _x(data, dtype)
    reps = data.draw(st.lists(st.integers(0, 3), max_size=4), label="reps")
    return (x,), {"reps": tuple(reps)}


def _pad(data, dtype):
    x = _x(data, dtype)
    widths = tuple(
        (data.draw(st.integers(0, 2), label="before"), data.draw(st.integers(0, 2), label="after"))
        for _ in range(x.ndim)
    )
    value = data.draw(st.sampled_from([0.0, 1.5, -2.0]), label="constant")
    return (x,), {"pad_width": widths, "constant_values": value}


def _pad_strided(data, dtype):
    x = _x(data, dtype)
    shape, starts, strides = [], [], []
    for n in x.shape:
        k = data.draw(st.integers(1, 3), label="stride")
        s = data.draw(st.integers(0, 2), label="start")
        extra = data.draw(st.integers(0, 2), label="extra")
        shape.append(s + ((n - 1) * k + 1 if n else 0) + extra)
        starts.append(s)
        strides.append(k)
    return (x,), {"shape": tuple(shape), "starts": tuple(starts), "strides": tuple(strides)}


def _ascontiguousarray(data, dtype):
    x = _x(data, dtype, min_dims=2, min_side=2)
    return (np.swapaxes(x, 0, 1),), {}  # a transposed view: the copy changes the layout


SAMPLES = {
    sp.ascontiguousarray_p: Sample(_ascontiguousarray, complex=(0,)),
    views.reshape_p: Sample(_reshape, complex=(0,)),
    bc.broadcast_to_p: Sample(_broadcast_to, complex=(0,)),
    views.transpose_p: Sample(_transpose, complex=(0,)),
    views.expand_dims_p: Sample(_expand_dims, complex=(0,)),
    views.squeeze_p: Sample(_squeeze, complex=(0,)),
    sp.concatenate_p: Sample(_concatenate, complex=FLOATS, mixed=True),
    sp.split_p: Sample(_split, complex=(0,)),
    views.flip_p: Sample(_flip, complex=(0,)),
    sp.repeat_p: Sample(_repeat, complex=(0,)),
    sp.tile_p: Sample(_tile, complex=(0,)),
    sp.pad_p: Sample(_pad, complex=(0,)),
    slicing.pad_strided_p: Sample(_pad_strided, complex=(0,)),
}
