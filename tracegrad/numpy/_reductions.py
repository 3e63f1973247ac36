"""Reductions with NumPy's signatures: sum, prod, max, min, mean, var, std, arg-reductions."""

from __future__ import annotations

from tracegrad.numpy._common import asarray_or_tracer, axes, ndim_of
from tracegrad.primitives import reduction

__all__ = ["sum"]


def sum(a, axis=None, dtype=None, out=None, keepdims=False):  # noqa: A001
    if dtype is not None or out is not None:
        raise NotImplementedError("tracegrad.numpy.sum: dtype= and out= are not supported")
    a = asarray_or_tracer(a)
    return reduction.sum(a, axes(axis, ndim_of(a), "sum"), keepdims)
