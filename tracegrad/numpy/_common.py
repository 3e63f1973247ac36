"""Argument handling shared by the `tracegrad.numpy` wrappers (axes, shapes, array-likes)."""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from tracegrad.core import Boxed


def asarray_or_tracer(x):
    """Tracers and arrays as they are; Python scalars kept (weak); lists become arrays."""
    if isinstance(x, Boxed | np.ndarray | np.generic | bool | int | float | complex):
        return x
    return np.asarray(x)


def shape_of(x) -> tuple[int, ...]:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def ndim_of(x) -> int:
    return len(shape_of(x))


def axes(axis, ndim: int, op: str) -> tuple[int, ...]:
    """`axis` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    try:
        return tuple(sorted(normalize_axis_tuple(axis, ndim)))
    except np.exceptions.AxisError:
        raise np.exceptions.AxisError(
            f"{op}: axis {axis} is out of bounds for an array of dimension {ndim}"
        ) from None
