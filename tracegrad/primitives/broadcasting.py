"""Broadcasting and dtype rules shared by the elementwise primitives.

NumPy decides result dtypes: `ufunc.resolve_dtypes` applies NEP 50 (a weak Python scalar
does not widen an array) exactly as running the ufunc would. `unbroadcast` is the one place
where the cotangent of an implicitly broadcast input is summed back to its shape.
"""

from __future__ import annotations

import functools

import numpy as np

from tracegrad.ir.types import Aval


def _dtype_key(aval: Aval):
    # resolve_dtypes takes Python's scalar types for weak values.
    if aval.weak_type:
        kind = aval.dtype.kind
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind]
    return aval.dtype


@functools.lru_cache(maxsize=4096)
def _resolve(ufunc: np.ufunc, keys: tuple):
    return ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)


_RESULT: dict = {}


def result_dtype(ufunc: np.ufunc, *avals: Aval, op: str | None = None) -> tuple[np.dtype, bool]:
    """(dtype, weak) of `ufunc` applied to values of these avals, as NumPy 2 computes it."""
    key = (ufunc,) + tuple((a.dtype, a.weak_type, not a.shape) for a in avals)
    hit = _RESULT.get(key)
    if hit is None:
        hit = _RESULT[key] = _result_dtype(ufunc, avals, op)
    return hit


def _result_dtype(ufunc, avals, op):
    keys = tuple(_dtype_key(a) for a in avals)
    try:
        dtypes = _resolve(ufunc, keys)
    except TypeError as err:
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(
            f"{op or ufunc.__name__}: NumPy has no loop for inputs of dtype ({names}): {err}"
        ) from None
    # Python scalars combined by operators stay Python scalars (weak); anything with an
    # array in it, or a unary ufunc (np.sin(2.0) is a NumPy float64), is strong.
    weak = len(avals) > 1 and all(a.weak_type and not a.shape for a in avals)
    return dtypes[len(avals)], weak


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case, without NumPy's machinery
        return first
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        shown = " and ".join(str(tuple(s)) for s in shapes)
        raise ValueError(
            f"{op}: shapes {shown} do not broadcast together (NumPy broadcasting: trailing "
            "axes must be equal or 1); reshape or expand_dims one operand"
        ) from None


def unbroadcast(x_bar, aval: Aval | tuple[int, ...]):
    """Sum the cotangent `x_bar` of a broadcast result back to the input's shape.

    `aval` is the input's `Aval` or just its shape.

    Leading axes that broadcasting added are summed away; axes where the input had size 1
    are summed with keepdims. Returns `x_bar` untouched when no broadcasting happened.
    """
    if x_bar is None:
        return None
    target = aval.shape if isinstance(aval, Aval) else tuple(aval)
    bar_shape = shape_of(x_bar)
    if bar_shape == target:
        return x_bar
    from tracegrad.primitives import reduction, shape  # sibling families, needed only here

    lead = len(bar_shape) - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(target) if d == 1 and bar_shape[lead + i] != 1
    )
    if axes:
        x_bar = reduction.sum(x_bar, axes)
    if shape_of(x_bar) != target:
        x_bar = shape.reshape(x_bar, target)
    return x_bar


def shape_of(x) -> tuple[int, ...]:
    """Shape of an array, NumPy scalar, Python scalar or tracer, without NumPy dispatch."""
    s = getattr(x, "shape", None)
    if s is None:
        return ()
    return s if type(s) is tuple else tuple(s)
