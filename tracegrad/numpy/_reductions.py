"""Reductions with NumPy's signatures: sum, prod, max, min, mean, var, std, arg-reductions.

`mean`, `var`, `std`, `ptp` and `average` are the same compositions as NumPy's own
(`numpy/_core/_methods.py`, `numpy.average`): the same sums in the same dtypes, then the
division by the count that NumPy does with `true_divide(s, count, casting='unsafe')`, so
the results agree bit for bit, integer inputs and float32 included. (A plain `mean`, with
no `dtype=` or `where=`, is one `mean` node computing that composition: most losses end
with one.) `where=` and `initial=` go to the masked reductions (`primitives/masked.py`:
NumPy sums each run of selected elements on its own, which no masked composition
reproduces), `where=` of all/any is a `where` before the reduction (booleans have no
rounding). `axis=None` of argmax/argmin/cumsum/cumprod flattens first, as NumPy does.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from tracegrad.core import Boxed, bind
from tracegrad.numpy._common import as_array, axes, cast, known_value, ndim_of, shape_of
from tracegrad.primitives import broadcasting, masked, reduction, views
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


def _reduce_as(reduce, x, axis, keepdims, dtype):
    """`reduce` computed in `dtype` (NumPy's `dtype=` argument): cast, reduce, and cast back
    where NumPy's default would widen (int32 sums are int64 unless dtype=int32 is asked for;
    the wrap-around is the same either way)."""
    if dtype is None:
        return reduce(x, axis, keepdims)
    out = reduce(cast(x, dtype), axis, keepdims)
    return cast(out, dtype)


def _count(x, axis) -> int:
    return broadcasting.reduced_count(shape_of(x), axis)


def _divide_count(s, n):
    """`s / n` as NumPy's `true_divide(s, intp(n), out=s, casting='unsafe')` computes it.

    NumPy divides in float64 (complex128 for complex sums) and casts back to s's dtype.
    Where `n` is exact in s's float dtype, dividing in that dtype directly gives the same
    bits (a float64 quotient rounded again to float32 or float16 is correctly rounded), and
    keeps the graph to one divide. (Not for complex64: a complex quotient multiplies by 1/n,
    whose rounding depends on the precision.)
    """
    dtype = s.dtype
    f = float(n)
    wide = _divided_in(dtype, f)
    if wide is None:
        return bind(ew.divide_p, s, f)
    return cast(bind(ew.divide_p, cast(s, wide), f), dtype)


@functools.lru_cache(maxsize=1024)
def _divided_in(dtype: np.dtype, f: float) -> np.dtype | None:
    """The dtype `_divide_count` divides a sum of `dtype` by the count `f` in: None for
    `dtype` itself (NumPy's loop dtype, or a float dtype holding `f` exactly), else the wide
    dtype of NumPy's loop. (Per dtype and count: means repeat them, and finding out costs
    more than the division's dispatch.)"""
    dtype = np.dtype(dtype)
    wide = np.result_type(dtype, np.intp)  # the dtype of NumPy's loop
    if dtype == wide:
        return None
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            exact = float(np.asarray(f).astype(dtype)) == f
        if exact:
            return None
    return wide


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
    """`numpy.sum`; with `where=` or `initial=`, NumPy's masked sum (masked-out elements get
    no derivative; a traced `initial` gets one)."""
    _reject("sum", out=out is not None)
    a = as_array(a)
    axis, keepdims = _normalized("sum", a, axis), _keepdims(keepdims)
    if initial is _NoValue and where is True:
        return _reduce_as(broadcasting.sum, a, axis, keepdims, dtype)
    dtype = _accumulated(np.sum, a, dtype)
    start = _start("sum", 0 if initial is _NoValue else initial, dtype)
    return masked.sum_where(a, _mask("sum", a, where), start, axis, keepdims, dtype)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NoValue, where=True):
    """`numpy.prod`; `where=` and `initial=` as in `sum`."""
    _reject("prod", out=out is not None)
    a = as_array(a)
    axis, keepdims = _normalized("prod", a, axis), _keepdims(keepdims)
    if initial is _NoValue and where is True:
        return _reduce_as(reduction.prod, a, axis, keepdims, dtype)
    dtype = _accumulated(np.prod, a, dtype)
    start = _start("prod", 1 if initial is _NoValue else initial, dtype)
    return masked.prod_where(a, _mask("prod", a, where), start, axis, keepdims, dtype)


# -- where= and initial= ----------------------------------------------------------------------


def _accumulated(fn, a, dtype) -> np.dtype:
    return np.dtype(dtype) if dtype is not None else broadcasting.accumulated_dtype(fn, a.dtype)


def _mask(fname, a, where):
    """The `where=` argument as NumPy reads it: lists and scalars become bool arrays, arrays
    must already be bool (NumPy casts them 'safe'); a 0-d True for where=True."""
    if where is True:
        return np.True_
    if isinstance(where, Boxed | np.ndarray | np.generic):
        have = np.dtype(where.dtype)
        if have != np.bool_:
            raise TypeError(
                f"{fname}: cannot cast the where= mask from dtype('{have}') to dtype('bool') "
                "according to the rule 'safe'; pass a bool array (e.g. x != 0)"
            )
        mask = where
    else:
        mask = np.asarray(where, dtype=np.bool_)
    ms, s = shape_of(mask), shape_of(a)
    try:
        fits = np.broadcast_shapes(ms, s) == s
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{fname}: the where= mask of shape {ms} does not broadcast to the array's shape {s}"
        )
    return mask


def _start(fname, initial, dtype):
    """`initial=` as NumPy uses it: converted to the result's dtype (a traced one too)."""
    if isinstance(initial, Boxed):
        if shape_of(initial):
            raise ValueError(f"{fname}: initial= must be a scalar, got shape {shape_of(initial)}")
        return cast(initial, dtype)
    if np.ndim(initial):
        raise ValueError(
            f"{fname}: initial= must be a scalar, got {type(initial).__name__} of shape "
            f"{np.shape(initial)}"
        )
    start = np.empty((), dtype)
    start[()] = initial  # NumPy's conversion (and its errors: inf or nan into an integer)
    return start


def _counts(mask, shape, axis, keepdims):
    """NumPy's `_count_reduce_items` with a mask: the selected elements per output, intp."""
    full = broadcasting.broadcast_to(mask, shape) if shape_of(mask) != shape else mask
    return broadcasting.sum(cast(full, np.intp), axis, keepdims)


def _divide_counts(s, counts):
    """`true_divide(s, counts, out=s, casting='unsafe')` with an array of counts: NumPy
    divides in the promoted dtype (float64 for float32 sums) and casts back."""
    return cast(bind(ew.divide_p, s, counts), s.dtype)


# -- max, min ---------------------------------------------------------------------------------


def _chooser(fname, reduce, reduce_where, ufunc):
    def f(a, axis=None, out=None, keepdims=False, initial=_NoValue, where=True):
        _reject(fname, out=out is not None)
        a = as_array(a)
        axis, keepdims = _normalized(fname, a, axis), _keepdims(keepdims)
        if initial is _NoValue:
            if where is not True:
                raise ValueError(
                    f"reduction operation '{ufunc}' does not have an identity, so to use a "
                    "where mask one has to specify 'initial'"
                )
            return reduce(a, axis, keepdims)
        start = _start(fname, initial, a.dtype)
        return reduce_where(a, _mask(fname, a, where), start, axis, keepdims)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = (
        f"`numpy.{fname}`: ties share the gradient evenly, as in JAX (with `initial=`, JAX's "
        "maximum of the start and the selected elements' extremum: a tie of the two splits it "
        "in halves; masked-out elements get none)."
    )
    return f


max = _chooser("max", reduction.max, masked.max_where, "maximum")  # noqa: A001 - NumPy's name
min = _chooser("min", reduction.min, masked.min_where, "minimum")  # noqa: A001 - NumPy's name
amax = _chooser("amax", reduction.max, masked.max_where, "maximum")
amin = _chooser("amin", reduction.min, masked.min_where, "minimum")

# -- mean, var, std ---------------------------------------------------------------------------


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """`numpy.mean`, as `numpy._core._methods._mean`: sum, then divide by the count (one
    `mean` node; with `dtype=`, the sum in that dtype divided by the count; with `where=`,
    the masked sum divided by the count of selected elements)."""
    if out is not None:
        _reject("mean", out=True)
    arr = as_array(a)
    axis, keepdims = _normalized("mean", arr, axis), _keepdims(keepdims)
    if where is True and dtype is None:  # the common case: one node (NumPy's default dtypes)
        if _count(arr, axis) == 0:
            warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        return broadcasting.mean(arr, axis, keepdims)
    is_float16_result = False
    if dtype is None:
        kind = arr.dtype.kind
        if kind in "biu":
            dtype = _F8
        elif kind == "f" and arr.dtype == np.float16:
            dtype = np.dtype(np.float32)
            is_float16_result = True
    if where is True:
        n = _count(arr, axis)
        if n == 0:
            warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        ret = _divide_count(_reduce_as(broadcasting.sum, arr, axis, keepdims, dtype), n)
    else:
        mask = _mask("mean", arr, where)
        counts = _counts(mask, shape_of(arr), axis, keepdims)
        known = known_value(counts)
        if known is not None and np.any(known == 0):
            warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        ret = _divide_counts(_masked_sum("mean", arr, mask, axis, keepdims, dtype), counts)
    if is_float16_result:
        return cast(ret, arr.dtype)
    if dtype is not None and np.dtype(dtype).kind in "iu":
        return cast(ret, dtype)  # NumPy divides into the integer sum: truncated, unsafe
    return ret


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
    _reject(fname, out=out is not None)
    if correction is not _NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    if isinstance(ddof, Boxed):
        raise TypeError(f"{fname}: ddof must be a number, not a traced value")
    ddof = ddof.item() if isinstance(ddof, np.generic) else ddof
    arr = as_array(a)
    axis = _normalized(fname, arr, axis)
    if dtype is None and arr.dtype.kind in "biu":
        dtype = _F8
    if where is not True:
        return _masked_var(fname, arr, axis, dtype, ddof, _keepdims(keepdims), where, mean)
    n = _count(arr, axis)
    if ddof >= n:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
    if mean is not _NoValue:
        arrmean = as_array(mean)
    else:
        arrmean = _divide_count(_reduce_as(broadcasting.sum, arr, axis, True, dtype), n)
    deviation = bind(ew.subtract_p, arr, arrmean)
    squares = _squares(deviation)
    ret = _reduce_as(broadcasting.sum, squares, axis, _keepdims(keepdims), dtype)
    dof = n - ddof
    return _divide_count(ret, dof if dof > 0 else 0)  # NumPy: maximum(count - ddof, 0)


def _squares(deviation):
    """The squared magnitudes, as `_methods._var` computes them: real deviations squared (for
    bools NumPy computes x * conj(x), the same bits); complex ones as real**2 + imag**2, a
    real array."""
    if deviation.dtype.kind != "c":
        return bind(ew.square_p, deviation)
    parts = (bind(ew.square_p, ew.real(deviation)), bind(ew.square_p, ew.imag(deviation)))
    return bind(ew.add_p, *parts)


def _masked_var(fname, arr, axis, dtype, ddof, keepdims, where, mean):
    """`_methods._var` with a `where=` mask: masked sums, divided by arrays of counts."""
    mask = _mask(fname, arr, where)
    shape = shape_of(arr)
    counts = _counts(mask, shape, axis, keepdims)
    known = known_value(counts)
    if known is not None and np.any(ddof >= known):
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=4)
    if mean is not _NoValue:
        arrmean = as_array(mean)
    else:
        arrmean = _divide_counts(
            _masked_sum(fname, arr, mask, axis, True, dtype), _counts(mask, shape, axis, True)
        )
    # masked-out deviations are never summed: zeroing them keeps NumPy's bits and keeps their
    # derivative an exact zero (an infinite masked-out value would give inf * 0 = nan)
    deviation = ew.where(mask, bind(ew.subtract_p, arr, arrmean), 0)
    ret = _masked_sum(fname, _squares(deviation), mask, axis, keepdims, dtype)
    dof = bind(ew.maximum_p, bind(ew.subtract_p, counts, ddof), 0)
    return _divide_counts(ret, dof)


def _masked_sum(fname, a, mask, axis, keepdims, dtype):
    """NumPy's `umr_sum(a, axis, dtype, keepdims=keepdims, where=mask)`."""
    dtype = _accumulated(np.sum, a, dtype)
    return masked.sum_where(a, mask, _start(fname, 0, dtype), axis, keepdims, dtype)


# -- ptp, average -----------------------------------------------------------------------------


def ptp(a, axis=None, out=None, keepdims=False):
    """`numpy.ptp`: max minus min (same dtype; integers wrap around as in NumPy)."""
    _reject("ptp", out=out is not None)
    a = as_array(a)
    axis = _normalized("ptp", a, axis)
    keepdims = _keepdims(keepdims)
    return bind(ew.subtract_p, reduction.max(a, axis, keepdims), reduction.min(a, axis, keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=_NoValue):
    """`numpy.average`, with or without weights, as NumPy computes it.

    The check that the weights do not sum to zero needs their values: it runs on concrete
    values, and is skipped while tracing abstractly (`make_graph`, `jit`), where a zero
    weight sum gives inf/nan like any division by zero.
    """
    a = as_array(a)
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
        wgt = as_array(weights)
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
        scl_value = known_value(scl)
        if scl_value is not None and np.any(np.asarray(scl_value) == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        weighted = bind(ew.multiply_p, cast(a, result_dtype), cast(wgt, result_dtype))
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
        a = as_array(a)
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


def _logical(fname, reduce, identity: bool):
    def f(a, axis=None, out=None, keepdims=False, *, where=True):
        _reject(fname, out=out is not None)
        a = as_array(a)
        axis, keepdims = _normalized(fname, a, axis), _keepdims(keepdims)
        if where is not True:
            # masked-out elements become the identity: booleans have no rounding to keep
            truth = a if a.dtype == np.bool_ else ew.astype(a, np.bool_)
            a = ew.where(_mask(fname, a, where), truth, identity)
        return reduce(a, axis, keepdims)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"`numpy.{fname}`: a bool result, not differentiable."
    return f


all = _logical("all", reduction.all, True)  # noqa: A001 - NumPy's name
any = _logical("any", reduction.any, False)  # noqa: A001 - NumPy's name

# -- cumsum, cumprod --------------------------------------------------------------------------


def _cumulative(fname, accumulate):
    def f(a, axis=None, dtype=None, out=None):
        _reject(fname, out=out is not None)
        x, axis, _ = _one_axis(fname, as_array(a), axis)
        if dtype is None:
            return accumulate(x, axis)
        return cast(accumulate(cast(x, dtype), axis), dtype)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = f"`numpy.{fname}`; axis=None accumulates over the flattened array."
    return f


cumsum = _cumulative("cumsum", reduction.cumsum)
cumprod = _cumulative("cumprod", reduction.cumprod)
