"""Adding and removing elements with NumPy's signatures: append, insert, delete, resize,
trim_zeros.

Each is a copy of some elements of its inputs, so it is a gather (`take`) or a concatenation
of them, with the positions computed by NumPy itself from an index range: the values are
NumPy's, bit for bit, and the derivative flows back to the elements that were kept.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from tracegrad.core import Boxed
from tracegrad.numpy._common import (
    as_array,
    cast,
    concrete_value,
    ndim_of,
    shape_of,
)
from tracegrad.numpy._indexing import getitem, take
from tracegrad.numpy._shape import broadcast_to, moveaxis, reshape
from tracegrad.primitives import shape as sp
from tracegrad.primitives import views

__all__ = ["append", "insert", "delete", "resize", "trim_zeros"]


def _flat(x):
    return views.reshape(x, (int(np.prod(shape_of(x))),)) if ndim_of(x) != 1 else x


def _axis_of(arr, axis, fname):
    """(array, axis): NumPy's axis=None works on the flattened array."""
    if axis is None:
        arr = _flat(arr)
        return arr, ndim_of(arr) - 1
    return arr, normalize_axis_index(operator.index(axis), ndim_of(arr))


def append(arr, values, axis=None):
    """`np.append`: `concatenate((arr, values), axis)`, both flattened when axis is None."""
    arr, values = as_array(arr), as_array(values)
    if axis is None:
        arr, values = _flat(arr), _flat(values)
        axis = ndim_of(arr) - 1
    axis = normalize_axis_index(operator.index(axis), ndim_of(arr))
    dtype = np.result_type(*(np.dtype(v.dtype) for v in (arr, values)))
    return sp.concatenate([cast(arr, dtype), cast(values, dtype)], axis)


def delete(arr, obj, axis=None):
    """`np.delete`: a gather of the positions NumPy keeps (found by deleting from an index
    range with NumPy itself, so every form of `obj` means what it means there)."""
    arr, axis = _axis_of(as_array(arr), axis, "delete")
    obj = _static_index(obj, "delete")
    keep = np.delete(np.arange(shape_of(arr)[axis]), obj)
    return take(arr, keep, axis=axis)


def insert(arr, obj, values, axis=None):
    """`np.insert`: `values` (cast to arr's dtype and broadcast as NumPy does) concatenated
    after `arr` along `axis`, then gathered into the order NumPy's insert gives, which is
    found by inserting markers -1, -2, ... into an index range with NumPy itself."""
    arr, axis = _axis_of(as_array(arr), axis, "insert")
    obj = _static_index(obj, "insert")
    shape = shape_of(arr)
    n, nd = shape[axis], len(shape)
    values = cast(as_array(values), np.dtype(arr.dtype))
    if ndim_of(values) < nd:  # NumPy's array(values, ndmin=arr.ndim)
        values = reshape(values, (1,) * (nd - ndim_of(values)) + shape_of(values))
    indices = _indices(obj, n)
    if indices.size == 1:  # NumPy inserts all of values at that one place
        if indices.ndim == 0:
            values = moveaxis(values, 0, axis)
        count = shape_of(values)[axis]
    else:
        count = indices.size
    positions = np.insert(np.arange(n), obj, -(np.arange(count) + 1), axis=0)
    block = broadcast_to(values, shape[:axis] + (count,) + shape[axis + 1 :])
    joined = sp.concatenate([arr, block], axis)
    order = np.where(positions < 0, n - positions - 1, positions)
    return take(joined, order, axis=axis)


def _indices(obj, n) -> np.ndarray:
    """The insertion indices NumPy derives from `obj` (a slice, ints, or a bool mask)."""
    if isinstance(obj, slice):
        return np.arange(*obj.indices(n), dtype=np.intp)
    indices = np.array(obj)
    return np.flatnonzero(indices) if indices.dtype == bool else indices


def _static_index(obj, fname):
    if isinstance(obj, slice):
        return obj
    if isinstance(obj, Boxed):
        return concrete_value(obj, f"np.{fname}'s index", "Pass the index as Python ints.")
    return obj


def resize(a, new_shape):
    """`np.resize`: the flattened array repeated to fill `new_shape` (zeros if either is
    empty), as NumPy concatenates copies and cuts."""
    if isinstance(new_shape, int | np.integer):
        new_shape = (new_shape,)
    new_shape = tuple(operator.index(d) for d in new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    a = _flat(as_array(a))
    size = shape_of(a)[0]
    new_size = int(np.prod(new_shape))
    if size == 0 or new_size == 0:
        return np.zeros(new_shape, a.dtype)
    repeats = (new_size + size - 1) // size
    joined = sp.concatenate([a] * repeats, 0) if repeats > 1 else a
    return views.reshape(take(joined, np.arange(new_size)), new_shape)


def trim_zeros(filt, trim="fb", axis=None):
    """`np.trim_zeros`: the slice without leading/trailing zeros; where it ends depends on
    the values, so they must be concrete (the kept values stay differentiable)."""
    f = as_array(filt)
    value = concrete_value(f, "np.trim_zeros", "Trim with a slice of known bounds instead.")
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    nd = value.ndim
    axes = range(nd) if axis is None else normalize_axis_tuple(axis, nd, argname="axis")
    nonzero = np.argwhere(value != 0)
    if nonzero.size == 0:  # all zeros: an empty slice
        start = stop = np.zeros(nd, np.intp)
    else:
        start, stop = nonzero.min(axis=0), nonzero.max(axis=0) + 1
        if "f" not in trim:
            start = (None,) * nd
        if "b" not in trim:
            stop = (None,) * nd
    bounds = tuple(
        slice(_int_or_none(start[ax]), _int_or_none(stop[ax])) if ax in axes else slice(None)
        for ax in range(nd)
    )
    return getitem(f, bounds)


def _int_or_none(v):
    return None if v is None else int(v)
