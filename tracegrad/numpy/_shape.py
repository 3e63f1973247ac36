"""Shape functions with NumPy's signatures: reshape, transpose, broadcast_to, ..."""

from __future__ import annotations

import math

from tracegrad.numpy._common import asarray_or_tracer, ndim_of, shape_of
from tracegrad.primitives import shape as sp

__all__ = ["reshape", "transpose", "broadcast_to", "shape", "ndim", "size"]


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise NotImplementedError("tracegrad.numpy.reshape: only order='C' is supported")
    shape = newshape if shape is None else shape
    a = asarray_or_tracer(a)
    shape = (shape,) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension, got {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        total = math.prod(shape_of(a))
        if known == 0 or total % known:
            raise ValueError(f"reshape: cannot reshape an array of shape {shape_of(a)} into shape {shape}")
        shape = tuple(total // known if d == -1 else d for d in shape)
    return sp.reshape(a, shape)


def transpose(a, axes=None):
    a = asarray_or_tracer(a)
    n = ndim_of(a)
    axes = tuple(range(n))[::-1] if axes is None else tuple(int(x) % n if n else int(x) for x in axes)
    return sp.transpose(a, axes)


def broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return sp.broadcast_to(asarray_or_tracer(array), shape)


def shape(a):
    return shape_of(a)


def ndim(a):
    return ndim_of(a)


def size(a, axis=None):
    s = shape_of(a)
    return math.prod(s) if axis is None else s[axis]
