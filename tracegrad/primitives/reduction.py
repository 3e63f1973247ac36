"""Reductions: sum, prod, max, min, argmax, argmin, all, any, and the cumulative sums.

Each takes `axis` as a normalized tuple and a `keepdims` flag. The vjp of a reduction
broadcasts the cotangent back over the reduced axes.
"""

from __future__ import annotations

import functools

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval


def reduced_shape(shape, axis, keepdims):
    if keepdims:
        return tuple(1 if i in axis else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axis)


def kept_cotangent(x_bar, shape, axis, keepdims):
    """Broadcast a reduction's cotangent back to the input `shape`."""
    from tracegrad.primitives import shape as _shape

    if not keepdims:
        x_bar = _shape.reshape(x_bar, reduced_shape(shape, axis, True))
    return _shape.broadcast_to(x_bar, shape)


@functools.lru_cache(maxsize=1024)
def _sum_dtype(dtype: np.dtype) -> np.dtype:
    return np.sum(np.zeros((1,), dtype)).dtype


def sum(x, axis, keepdims=False):  # noqa: A001 - NumPy's name
    """Sum over the axes in `axis` (a normalized tuple)."""
    return bind(sum_p, x, axis=tuple(axis), keepdims=bool(keepdims))


def _sum_shape(x: Aval, *, axis, keepdims):
    return Aval(reduced_shape(x.shape, axis, keepdims), _sum_dtype(x.dtype))


def _sum_jvp(primals, tangents, *, out, axis, keepdims):
    (x_dot,) = tangents
    return None if x_dot is None else sum(x_dot, axis, keepdims)


def _sum_vjp(x_bar, x, *, out, axis, keepdims):
    # every summed element received the same cotangent
    return (kept_cotangent(x_bar, np.shape(x) if not hasattr(x, "aval") else x.shape, axis,
                           keepdims),)


sum_p = Primitive(
    "sum",
    impl=lambda x, *, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    shape=_sum_shape,
    jvp=_sum_jvp,
    vjp=_sum_vjp,
    emit=lambda x, *, axis, keepdims: f"np.sum({x}, axis={axis!r}, keepdims={keepdims!r})",
)

PRIMITIVES = (sum_p,)
