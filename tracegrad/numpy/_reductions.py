"""Reductions with NumPy's signatures: sum, prod, max, min, mean, var, std, arg-reductions.

`mean`, `var`, `std`, `ptp` and `average` are the same compositions as NumPy's own
(`numpy/_core/_methods.py`, `numpy.average`): the same sums in the same dtypes, then the
division by the count that NumPy does with `true_divide(s, count, casting='unsafe')`, so
the results agree bit for bit, integer inputs and float32 included. `axis=None` of
argmax/argmin/cumsum/cumprod flattens first, as NumPy does.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from tracegrad.core import Boxed, Tracer, bind
from tracegrad.numpy._common import axes, ndim_of, shape_of
from tracegrad.primitives import broadcasting, reduction, views
from tracegrad.primitives import elementwise as ew

__all__ = [
    "sum",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "mean",
    "var",
    "std",
    "argmax",
    "argmin",
    "all",
    "any",
    "cumsum",
    "cumprod",
    "ptp",
    "average",
]

_NoValue = np._NoValue
_F8 = np.dtype(np.float64)


def _asarray(a):
    # NumPy's reductions start with asanyarray: Python scalars and lists become strong arrays
    if isinstance(a, Boxed | np.ndarray | np.generic):
        return a
    return np.asarray(a)


def _reject(fname: str, **given: bool) -> None:
    for arg, used in given.items():
        if used:
            hint = (
                (
                    " (a traced result cannot be written into an array in place; use the "
                    "returned value)"
                )
                if arg == "out"
                else ""
            )
            raise NotImplementedError(
                f"tracegrad.numpy.{fname}: the argument {arg}= is not supported{hint}"
            )


def _keepdims(keepdims) -> bool:
    return False if keepdims is _NoValue else bool(keepdims)


def _astype(x, dtype):
    return x if np.dtype(dtype) == x.dtype else ew.astype(x, dtype)


def _reduce_as(reduce, x, axis, keepdims, dtype):
    """`reduce` computed in `dtype` (NumPy's `dtype=` argument): cast, reduce, and cast back
    where NumPy's default would widen (int32 sums are int64 unless dtype=int32 is asked for;
    the wrap-around is the same either way)."""
    if dtype is None:
        return reduce(x, axis, keepdims)
    out = reduce(_astype(x, dtype), axis, keepdims)
    return _astype(out, dtype)


def _count(x, axis) -> int:
    shape = shape_of(x)
    return math.prod(shape[a] for a in axis)


def _divide_count(s, n):
    """`s / n` as NumPy's `true_divide(s, intp(n), out=s, casting='unsafe')` computes it.

    NumPy divides in float64 and casts back to s's dtype. Where `n` is exact in s's float
    dtype, dividing in that dtype directly gives the same bits (a float64 quotient rounded
    again to float32 or float16 is correctly rounded), and keeps the graph to one divide.
    """
    dtype = np.dtype(s.dtype)
    f = float(n)
    if dtype == _F8:
        return bind(ew.divide_p, s, f)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            exact = float(np.asarray(f).astype(dtype)) == f
        if exact:
            return bind(ew.divide_p, s, f)
    return _astype(bind(ew.divide_p, _astype(s, _F8), f), dtype)


def _normalized(fname, a, axis):
    return axes(axis, ndim_of(a), fname)


# -- sum, prod --------------------------------------------------------------------------------


def sum(
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=_NoValue,
    where=True,
):
    _reject("sum", out=out is not None, initial=initial is not _NoValue, where=where is not True)
    a = _asarray(a)
    return _reduce_as(broadcasting.sum, a, _normalized("sum", a, axis), _keepdims(keepdims), dtype)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    _reject("prod", out=out is not None, initial=initial is not _NoValue, where=where is not True)
    a = _asarray(a)
    return _reduce_as(reduction.prod, a, _normalized("prod", a, axis), _keepdims(keepdims), dtype)


# -- max, min ---------------------------------------------------------------------------------


def _chooser(fname, reduce):
    def f(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
        _reject(
            fname, out=out is not None, initial=initial is not _NoValue, where=where is not True
        )
        a = _asarray(a)
        return reduce(a, _normalized(fname, a, axis), _keepdims(keepdims))

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"`numpy.{fname}`: ties share the gradient evenly, as in JAX."
    return f


max = _chooser("max", reduction.max)  # noqa: A001 - NumPy's name
min = _chooser("min", reduction.min)  # noqa: A001 - NumPy's name
amax = _chooser("amax", reduction.max)
amin = _chooser("amin", reduction.min)

# -- mean, var, std ---------------------------------------------------------------------------


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """`numpy.mean`, as `numpy._core._methods._mean`: sum, then divide by the count."""
    _reject("mean", out=out is not None, where=where is not True)
    arr = _asarray(a)
    axis = _normalized("mean", arr, axis)
    n = _count(arr, axis)
    if n == 0:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
    is_float16_result = False
    if dtype is None:
        if arr.dtype.kind in "biu":
            dtype = _F8
        elif arr.dtype == np.float16:
            dtype = np.dtype(np.float32)
            is_float16_result = True
    ret = _divide_count(_reduce_as(broadcasting.sum, arr, axis, _keepdims(keepdims), dtype), n)
    return _astype(ret, arr.dtype) if is_float16_result else ret


def var(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=_NoValue,
    correction=_NoValue,
):
    """`numpy.var`, as `numpy._core._methods._var`: the mean with kept axes, the squared
    deviations, their sum, divided by `max(count - ddof, 0)`."""
    return _var("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction)


def std(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=True,
    mean=_NoValue,
    correction=_NoValue,
):
    """`numpy.std`: the square root of `var`."""
    ret = _var("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    return ew.sqrt(ret)


def _var(fname, a, axis, dtype, out, ddof, keepdims, where, mean, correction):
    _reject(fname, out=out is not None, where=where is not True)
    if correction is not _NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if isinstance(ddof, Boxed):
        raise TypeError(f"{fname}: ddof must be a number, not a traced value")
    ddof = ddof.item() if isinstance(ddof, np.generic) else ddof
    arr = _asarray(a)
    axis = _normalized(fname, arr, axis)
    n = _count(arr, axis)
    if ddof >= n:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
    if dtype is None and arr.dtype.kind in "biu":
        dtype = _F8
    if mean is not _NoValue:
        arrmean = _asarray(mean)
    else:
        arrmean = _divide_count(_reduce_as(broadcasting.sum, arr, axis, True, dtype), n)
    deviation = bind(ew.subtract_p, arr, arrmean)
    # NumPy squares real deviations; for bools it computes x * conj(x), the same bits
    squares = bind(ew.square_p, deviation)
    ret = _reduce_as(broadcasting.sum, squares, axis, _keepdims(keepdims), dtype)
    dof = n - ddof
    return _divide_count(ret, dof if dof > 0 else 0)  # NumPy: maximum(count - ddof, 0)


# -- ptp, average -----------------------------------------------------------------------------


def ptp(a, axis=None, out=None, keepdims=False):
    """`numpy.ptp`: max minus min (same dtype; integers wrap around as in NumPy)."""
    _reject("ptp", out=out is not None)
    a = _asarray(a)
    axis = _normalized("ptp", a, axis)
    keepdims = _keepdims(keepdims)
    return bind(ew.subtract_p, reduction.max(a, axis, keepdims), reduction.min(a, axis, keepdims))


def _concrete(x):
    # the value behind x when there is one (plain array, or a concretely traced tracer)
    if isinstance(x, Tracer):
        return x.val
    if isinstance(x, Boxed):
        return x._constant_value()
    return x


def average(a, axis=None, weights=None, returned=False, *, keepdims=_NoValue):
    """`numpy.average`, with or without weights, as NumPy computes it.

    The check that the weights do not sum to zero needs their values: it runs on concrete
    values, and is skipped while tracing abstractly (`make_graph`, `jit`), where a zero
    weight sum gives inf/nan like any division by zero.
    """
    a = _asarray(a)
    nd = ndim_of(a)
    shape = shape_of(a)
    if axis is not None:
        try:
            axis = normalize_axis_tuple(axis, nd, argname="axis")
        except np.exceptions.AxisError:
            raise np.exceptions.AxisError(
                f"average: axis {axis} is out of bounds for an array of dimension {nd}"
            ) from None
    keep = _keepdims(keepdims)
    if weights is None:
        avg = mean(a, axis, keepdims=keep)
        avg_shape = shape_of(avg)
        avg_dtype = np.dtype(avg.dtype)
        scl = avg_dtype.type(math.prod(shape) / math.prod(avg_shape))
    else:
        wgt = _asarray(weights)
        wshape = shape_of(wgt)
        if wshape != shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if wshape != tuple(shape[ax] for ax in axis):
                raise ValueError(
                    "Shape of weights must be consistent with shape of a along specified axis."
                )
            order = tuple(int(i) for i in np.argsort(axis))
            if order != tuple(range(len(order))):
                wgt = views.transpose(wgt, order)
            wgt = views.reshape(wgt, tuple(s if ax in axis else 1 for ax, s in enumerate(shape)))
        a_dtype, w_dtype = np.dtype(a.dtype), np.dtype(wgt.dtype)
        if a_dtype.kind in "biu":
            result_dtype = np.result_type(a_dtype, w_dtype, "f8")
        else:
            result_dtype = np.result_type(a_dtype, w_dtype)
        sum_axis = axes(axis, nd, "average")
        scl = _reduce_as(broadcasting.sum, wgt, sum_axis, keep, result_dtype)
        scl_value = _concrete(scl)
        if scl_value is not None and np.any(np.asarray(scl_value) == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        weighted = bind(ew.multiply_p, _astype(a, result_dtype), _astype(wgt, result_dtype))
        avg = bind(ew.divide_p, broadcasting.sum(weighted, sum_axis, keep), scl)
        avg_shape = shape_of(avg)
    if not returned:
        return avg
    if shape_of(scl) != avg_shape:
        scl = broadcasting.broadcast_to(scl, avg_shape)
        if not isinstance(scl, Boxed):
            scl = scl.copy()
    return avg, scl


# -- argmax, argmin ---------------------------------------------------------------------------


def _one_axis(fname, a, axis):
    """(array, one-axis tuple, flattened?): NumPy's axis=None, and any valid axis of a 0-d
    array, works on the array raveled to one axis."""
    if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int | np.integer)):
        raise TypeError(f"{fname}: axis must be an integer or None, got {axis!r}")
    nd = ndim_of(a)
    if axis is not None and nd > 0:
        return a, axes(axis, nd, fname), False
    if axis is not None:
        axes(axis, 1, fname)  # a 0-d array takes the axes of its raveled form (0 and -1)
    return views.reshape(a, (math.prod(shape_of(a)),)), (0,), True


def _arg(fname, reduce):
    def f(a, axis=None, out=None, *, keepdims=False):
        _reject(fname, out=out is not None)
        a = _asarray(a)
        keepdims = _keepdims(keepdims)
        x, axis, flattened = _one_axis(fname, a, axis)
        if not flattened:
            return reduce(x, axis, keepdims)
        r = reduce(x, axis, False)
        return views.reshape(r, (1,) * ndim_of(a)) if keepdims else r

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"`numpy.{fname}`: int64 indices, not differentiable."
    return f


argmax = _arg("argmax", reduction.argmax)
argmin = _arg("argmin", reduction.argmin)

# -- all, any ---------------------------------------------------------------------------------


def _logical(fname, reduce):
    def f(a, axis=None, out=None, keepdims=False, *, where=True):
        _reject(fname, out=out is not None, where=where is not True)
        a = _asarray(a)
        return reduce(a, _normalized(fname, a, axis), _keepdims(keepdims))

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"`numpy.{fname}`: a bool result, not differentiable."
    return f


all = _logical("all", reduction.all)  # noqa: A001 - NumPy's name
any = _logical("any", reduction.any)  # noqa: A001 - NumPy's name

# -- cumsum, cumprod --------------------------------------------------------------------------


def _cumulative(fname, accumulate):
    def f(a, axis=None, dtype=None, out=None):
        _reject(fname, out=out is not None)
        x, axis, _ = _one_axis(fname, _asarray(a), axis)
        if dtype is None:
            return accumulate(x, axis)
        return _astype(accumulate(_astype(x, dtype), axis), dtype)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"`numpy.{fname}`; axis=None accumulates over the flattened array."
    return f


cumsum = _cumulative("cumsum", reduction.cumsum)
cumprod = _cumulative("cumprod", reduction.cumprod)
