"""NumPy's NaN-ignoring reductions (nansum, nanmean, nanmax, nanmedian, ...), computed as
NumPy's `numpy/lib/_nanfunctions_impl.py` computes them.

NaNs are replaced behind a `where`, so they get no derivative. NumPy's warnings need values:
they are given where the values are known and skipped under jit.
"""

from __future__ import annotations

import warnings

import numpy as np

from tracegrad.core import Boxed
from tracegrad.ir.types import dtype_of, is_float
from tracegrad.numpy import _elementwise as _ew
from tracegrad.numpy import _indexing as _ix
from tracegrad.numpy import _quantiles as _so
from tracegrad.numpy import _reductions as _red
from tracegrad.numpy import _shape as _sh
from tracegrad.numpy._common import as_array, axes, known_value, ndim_of, shape_of
from tracegrad.numpy._sorting import _reject
from tracegrad.primitives import reduction
from tracegrad.primitives import sorting as sp

__all__ = [
    "nansum",
    "nanprod",
    "nanmean",
    "nanvar",
    "nanstd",
    "nanmax",
    "nanmin",
    "nanargmax",
    "nanargmin",
    "nancumsum",
    "nancumprod",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
]

_NoValue = np._NoValue


def _keep(keepdims) -> bool:
    return False if keepdims is _NoValue else bool(keepdims)


def _where_arg(fname: str, where) -> None:
    _reject(fname, where=where is not _NoValue and where is not True)


def _replace_nan(a, val):
    """(a with NaNs replaced by `val`, the NaN mask or None): NumPy's `_replace_nan`."""
    a = as_array(a)
    if not is_float(dtype_of(a)):
        return a, None
    mask = _ew.isnan(a)
    return _ew.where(mask, val, a), mask


def _warn_if(condition, message: str) -> None:
    """NumPy's warning, when the condition's value is known (not under jit)."""
    value = known_value(condition)
    if value is not None and np.any(value):
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _divide_by_count(a, b):
    """`np.divide(a, b, out=a, casting='unsafe')`: computed in the promoted dtype, stored in
    a's (0/0 gives NaN silently)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        q = _ew.true_divide(a, b)
    dtype = np.dtype(a.dtype)
    return q if np.dtype(q.dtype) == dtype else _ew.astype(q, dtype)


# -- sums, products and their cumulative forms ------------------------------------------------


def nansum(a, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
    """`np.nansum`: NaNs counted as zero."""
    _reject("nansum", out=out is not None, initial=initial is not _NoValue)
    _where_arg("nansum", where)
    a, _ = _replace_nan(a, 0)
    return _red.sum(a, axis=axis, dtype=dtype, keepdims=_keep(keepdims))


def nanprod(
    a, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue
):
    """`np.nanprod`: NaNs counted as one."""
    _reject("nanprod", out=out is not None, initial=initial is not _NoValue)
    _where_arg("nanprod", where)
    a, _ = _replace_nan(a, 1)
    return _red.prod(a, axis=axis, dtype=dtype, keepdims=_keep(keepdims))


def nancumsum(a, axis=None, dtype=None, out=None):
    """`np.nancumsum`: NaNs counted as zero."""
    _reject("nancumsum", out=out is not None)
    a, _ = _replace_nan(a, 0)
    return _red.cumsum(a, axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """`np.nancumprod`: NaNs counted as one."""
    _reject("nancumprod", out=out is not None)
    a, _ = _replace_nan(a, 1)
    return _red.cumprod(a, axis=axis, dtype=dtype)


# -- mean, var, std ---------------------------------------------------------------------------


def _inexact_dtype(dtype):
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype.kind not in "fc":
            raise TypeError("If a is inexact, then dtype must be inexact")
    return dtype


def nanmean(a, axis=None, dtype=None, out=None, keepdims=_NoValue, *, where=_NoValue):
    """`np.nanmean`: the sum of the numbers over their count."""
    _reject("nanmean", out=out is not None)
    _where_arg("nanmean", where)
    arr, mask = _replace_nan(a, 0)
    keepdims = _keep(keepdims)
    if mask is None:
        return _red.mean(arr, axis=axis, dtype=dtype, keepdims=keepdims)
    dtype = _inexact_dtype(dtype)
    cnt = _red.sum(_ew.logical_not(mask), axis=axis, dtype=np.intp, keepdims=keepdims)
    tot = _red.sum(arr, axis=axis, dtype=dtype, keepdims=keepdims)
    avg = _divide_by_count(tot, cnt)
    _warn_if(_ew.equal(cnt, 0), "Mean of empty slice")
    return avg


def nanvar(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=_NoValue,
    *,
    where=_NoValue,
    mean=_NoValue,
    correction=_NoValue,
):
    """`np.nanvar`: the squared deviations of the numbers, over their count less ddof."""
    _reject("nanvar", out=out is not None)
    _where_arg("nanvar", where)
    arr, mask = _replace_nan(a, 0)
    keepdims = _keep(keepdims)
    if mask is None:
        return _red.var(
            arr,
            axis=axis,
            dtype=dtype,
            ddof=ddof,
            keepdims=keepdims,
            mean=mean,
            correction=correction,
        )
    dtype = _inexact_dtype(dtype)
    if correction is not _NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    cnt = _red.sum(_ew.logical_not(mask), axis=axis, dtype=np.intp, keepdims=True)
    if mean is not _NoValue:
        avg = mean
    else:
        avg = _divide_by_count(_red.sum(arr, axis=axis, dtype=dtype, keepdims=True), cnt)
    deviation = _ew.subtract(arr, avg)
    if np.dtype(deviation.dtype) != np.dtype(arr.dtype):  # stored into arr (casting='unsafe')
        deviation = _ew.astype(deviation, arr.dtype)
    deviation = _ew.where(mask, 0, deviation)
    if np.dtype(deviation.dtype).kind == "c":
        sqr = _ew.multiply(deviation, _ew.conjugate(deviation)).real
    else:
        sqr = _ew.multiply(deviation, deviation)
    var = _red.sum(sqr, axis=axis, dtype=dtype, keepdims=keepdims)
    if ndim_of(var) < ndim_of(cnt):
        cnt = _sh.squeeze(cnt, axis)
    dof = _ew.subtract(cnt, ddof)
    isbad = _ew.less_equal(dof, 0)
    # a bad slice is NaN whatever its quotient; dividing it by 1 instead of dof <= 0 keeps
    # its derivative 0 (as JAX's) rather than 0 / 0, also through nanstd's square root
    var = _divide_by_count(var, _ew.where(isbad, 1, dof))
    _warn_if(isbad, "Degrees of freedom <= 0 for slice.")
    return _ew.where(isbad, np.nan, var)


def nanstd(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=_NoValue,
    *,
    where=_NoValue,
    mean=_NoValue,
    correction=_NoValue,
):
    """`np.nanstd`: the square root of `nanvar`."""
    var = nanvar(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    return _ew.sqrt(var)


# -- max, min, argmax, argmin -----------------------------------------------------------------


def _chooser(fname: str, reduce, fill: float):
    def f(a, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
        _reject(fname, out=out is not None, initial=initial is not _NoValue)
        _where_arg(fname, where)
        keepdims = _keep(keepdims)
        if isinstance(a, Boxed | np.ndarray):  # NumPy's path for arrays: fmax/fmin.reduce
            res = reduce(a, axes(axis, ndim_of(a), fname), keepdims)
            if is_float(dtype_of(a)):
                _warn_if(_ew.isnan(res), "All-NaN slice encountered")
            return res
        # NumPy's path for lists and scalars: NaNs replaced by -inf/+inf, then max/min
        a, mask = _replace_nan(a, fill)
        chooser = _red.max if fill < 0 else _red.min
        res = chooser(a, axis=axis, keepdims=keepdims)
        if mask is None:
            return res
        all_nan = _red.all(mask, axis=axis, keepdims=keepdims)
        _warn_if(all_nan, "All-NaN axis encountered")
        return _ew.where(all_nan, np.nan, res)

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = (
        f"`np.{fname}`: NaNs ignored; ties share the derivative evenly and NaNs (and all-NaN "
        "slices) get none, as in JAX."
    )
    return f


nanmax = _chooser("nanmax", reduction.nanmax, -np.inf)
nanmin = _chooser("nanmin", reduction.nanmin, np.inf)


def _arg(fname: str, fill: float):
    def f(a, axis=None, out=None, *, keepdims=_NoValue):
        _reject(fname, out=out is not None)
        keepdims = _keep(keepdims)
        a, mask = _replace_nan(a, fill)
        chooser = _red.argmax if fill < 0 else _red.argmin
        res = chooser(a, axis=axis, keepdims=keepdims)
        if mask is None or int(np.prod(shape_of(mask))) == 0:
            return res
        all_nan = _red.all(mask, axis=axis, keepdims=keepdims)
        known = known_value(all_nan)
        if known is not None:
            if np.any(known):
                raise ValueError("All-NaN slice encountered")
            return res
        return _ew.where(all_nan, np.intp(-1), res)  # under jit: -1, as JAX

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = (
        f"`np.{fname}`: an all-NaN slice raises ValueError as in NumPy when the values are "
        "known; under jit (no values) it gives -1, as JAX does."
    )
    return f


nanargmax = _arg("nanargmax", -np.inf)
nanargmin = _arg("nanargmin", np.inf)


# -- nanmedian, nanpercentile, nanquantile ----------------------------------------------------
# Each slice's NaNs are dropped first. With known values that is NumPy's own per-slice
# computation. Under jit a slice without NaNs takes np.median's/np.quantile's path; one with
# NaNs is sorted (NaNs last) and read at indices computed from its count of numbers, which
# finds NumPy's values except that of two tied zeros of opposite sign either may be found; and
# where NumPy takes a result's dtype from the values (its first slice all NaN), the usual
# dtype is given.


def _slices(a, axis: int):
    """The 1-D slices of `a` along `axis`, in the order np.apply_along_axis visits them."""
    moved = _sh.moveaxis(a, axis, -1)
    outer = shape_of(moved)[:-1]
    return outer, [_ix.getitem(moved, idx) for idx in np.ndindex(*outer)]


def _along_axis(func, a, axis: int):
    """`np.apply_along_axis(func, axis, a)`: each slice's result where the slice was (the
    results take the first one's dtype, as NumPy's buffer does)."""
    outer, pieces = _slices(a, axis)
    results = [func(p) for p in pieces]
    dtype = np.dtype(results[0].dtype)
    results = [r if np.dtype(r.dtype) == dtype else _ew.astype(r, dtype) for r in results]
    tail = shape_of(results[0])
    stacked = _sh.reshape(_sh.stack(results), outer + tail)
    n = len(outer)
    order = list(range(axis)) + list(range(n, n + len(tail))) + list(range(axis, n))
    return _sh.transpose(stacked, order)


def _without_nans(arr1d, value: np.ndarray):
    """NumPy's `_remove_nan_1d` on a slice whose values are known: the NaNs at the front are
    filled with the numbers at the back, which are then cut off (None if all are NaN)."""
    value = np.asarray(value)
    c = np.isnan(value)
    s = np.nonzero(c)[0]
    n = value.size
    if s.size == n:
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=6)
        return None
    if s.size == 0:
        return arr1d
    idx = np.arange(n)
    enonan = n - s.size + np.nonzero(~c[-s.size :])[0]
    idx[s[: enonan.size]] = enonan
    return _ix.take(arr1d, idx[: n - s.size])


def _count_numbers(arr, axis: int):
    return _red.sum(_ew.logical_not(_ew.isnan(arr)), axis=axis, dtype=np.intp)


def _sorted_slices(a, axis):
    """(the slices sorted with NaNs last, moved to axis 0; each slice's count of numbers)."""
    a, axis = (_sh.ravel(a), 0) if axis is None else (a, axis)
    moved = _sh.moveaxis(a, axis, 0)
    return sp.sort(moved, 0), _count_numbers(moved, 0)


def _read(srt, idx, count):
    """srt[idx] per slice, with NumPy's -1 meaning the slice's last number."""
    idx = _ew.where(_ew.less(idx, 0), _ew.add(idx, count), idx)
    lead = shape_of(idx)[: ndim_of(idx) - (ndim_of(srt) - 1)]
    flat = _sh.reshape(idx, (-1,) + shape_of(srt)[1:])
    return _sh.reshape(_ix.take_along_axis(srt, flat, axis=0), lead + shape_of(srt)[1:])


# nanmedian ---------------------------------------------------------------------------------


def _nanmedian1d(arr1d):
    value = known_value(arr1d)
    if value is None:
        return _nanmedian_sorted(arr1d, 0)
    parsed = _without_nans(arr1d, value)
    if parsed is None:
        return _ix.getitem(arr1d, -1)
    return _so.median(parsed)


def _nanmedian_sorted(a, axis: int):
    """The median of each slice's numbers without their values: np.median's own partition
    for slices without NaNs (NumPy's path there), else read from the sorted slice."""
    srt, count = _sorted_slices(a, axis)
    lo = _read(srt, _ew.floor_divide(_ew.subtract(count, 1), 2), count)
    hi = _read(srt, _ew.floor_divide(count, 2), count)
    # np.median's np.mean of the middle one or two: its sum starts from +0.0 (the median of
    # [-0.0] is 0.0) and float16 data are summed in float32
    with np.errstate(over="ignore"):
        one = _red.mean(_sh.expand_dims(lo, 0), axis=0)
        two = _red.mean(_sh.stack([lo, hi]), axis=0)
    med = _ew.where(_ew.equal(_ew.remainder(count, 2), 1), one, two)
    med = _ew.where(_ew.equal(count, 0), _ix.take(a, -1, axis=axis), med)
    has_nan = _ew.less(count, shape_of(a)[axis])
    with np.errstate(invalid="ignore"):
        return _ew.where(has_nan, med, _so.median(a, axis=axis))


def _nanmedian_small(a, axis: int):
    """NumPy's `_nanmedian_small`: `np.ma.median` of the array with its NaNs masked."""
    nan = _ew.isnan(a)
    order = sp.argsort(_ew.where(nan, np.inf, a), axis)
    data = _ix.take_along_axis(a, order, axis)
    masked = _ix.take_along_axis(nan, order, axis)
    counts = _red.sum(_ew.logical_not(nan), axis=axis, dtype=np.intp, keepdims=True)
    h = _ew.floor_divide(counts, 2)
    low = _ew.where(_ew.equal(_ew.remainder(counts, 2), 1), h, _ew.subtract(h, 1))
    lh = _sh.concatenate([low, h], axis=axis)
    low_high = _ix.take_along_axis(data, lh, axis)
    lh_masked = _ix.take_along_axis(masked, lh, axis)
    all_masked = _red.all(nan, axis=axis, keepdims=True)
    # a masked value read in a slice with numbers stands for +inf (np.ma's minimum_fill_value)
    low_high = _ew.where(_ew.logical_and(lh_masked, _ew.logical_not(all_masked)), np.inf, low_high)
    s = _red.sum(_ew.where(_ew.logical_and(lh_masked, all_masked), 0, low_high), axis=axis)
    s = _ew.true_divide(s, 2.0)
    all_nan = _red.all(nan, axis=axis)
    value = known_value(all_nan)
    for _ in range(0 if value is None else int(np.count_nonzero(value))):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=5)
    return _ew.where(all_nan, np.nan, s)


def _nanmedian(a, axis=None):
    if axis is None or ndim_of(a) == 1:
        return _nanmedian1d(_sh.ravel(a))
    axis = axis % ndim_of(a)
    if shape_of(a)[axis] < 600:
        return _nanmedian_small(a, axis)
    if known_value(a) is None:
        return _nanmedian_sorted(a, axis)
    return _along_axis(_nanmedian1d, a, axis)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=_NoValue):
    """`np.nanmedian`: the median of each slice's numbers (NumPy's computation, which for
    short slices of a multi-dimensional array is np.ma.median's)."""
    _reject("nanmedian", out=out is not None)
    a = as_array(a)
    if int(np.prod(shape_of(a))) == 0:
        return nanmean(a, axis, keepdims=keepdims)
    if not is_float(dtype_of(a)):
        return _so.median(a, axis, keepdims=_keep(keepdims))
    return _so._ureduce(a, _nanmedian, axis, keepdims)


# nanpercentile, nanquantile ----------------------------------------------------------------


def _nanquantile_1d(arr1d, q, method, weak_q):
    parsed = _without_nans(arr1d, known_value(arr1d))
    if parsed is None:
        return np.full(shape_of(q), np.nan, dtype=arr1d.dtype)[()]
    return _so._quantile(parsed, q, 0, method, weak_q)


def _nanquantile_sorted(a, q, axis, method, weak_q):
    """Every slice's quantiles read from the sorted slice at indices computed from its count
    of numbers, with NumPy's formulas (no values needed)."""
    srt, count = _sorted_slices(a, axis)
    rest = shape_of(srt)[1:]
    q_shape = shape_of(q)
    qb = _sh.reshape(q, q_shape + (1,) * len(rest)) if rest else q
    q_kind = np.dtype(q.dtype).kind
    n = _ew.astype(count, q.dtype) if q_kind == "f" else count  # a Python int in NumPy's
    virtual_index, fix_gamma = _so._method(method)
    virtual = virtual_index(n, qb)
    full = q_shape + rest
    if fix_gamma is None or (method == "linear" and np.dtype(virtual.dtype).kind in "iu"):
        result = _read(srt, _sh.broadcast_to(virtual, full), count)
    else:
        previous, nxt = _so._get_indexes(srt, virtual, n)
        lo = _read(srt, _sh.broadcast_to(previous, full), count)
        hi = _read(srt, _sh.broadcast_to(nxt, full), count)
        gamma = fix_gamma(virtual - previous, virtual)
        if np.dtype(gamma.dtype) != np.dtype(virtual.dtype):
            gamma = _ew.astype(gamma, virtual.dtype)
        result = _so.weak_lerp(lo, hi, gamma) if weak_q else _so._lerp(lo, hi, gamma)
    return _ew.where(_ew.equal(count, 0), np.nan, result)


def _nan_weighted(a, q, axis, weights):
    """Weighted "inverted_cdf" of each slice's numbers: its NaNs sorted last with no weight."""
    if axis is None:
        a, weights, axis = _sh.ravel(a), _sh.ravel(weights), 0
    a, weights = _sh.moveaxis(a, axis, 0), _sh.moveaxis(weights, axis, 0)
    nan = _ew.isnan(a)
    weights = _ew.where(nan, 0, _sh.broadcast_to(weights, shape_of(a)))
    count = _count_numbers(a, 0)
    _warn_if(_ew.equal(count, 0), "All-NaN slice encountered")
    total = known_value(_red.sum(weights, axis=0))
    numbers = known_value(count)
    if total is not None and numbers is not None:
        bad = (~np.isfinite(total) | (total == 0)) & (numbers > 0)
        if bad.any():
            raise ValueError("Weights included NaN, inf or were all zero.")
    _, result = _so._weighted_inverted_cdf(a, q, weights, shape_of(a)[0], count=count)
    return _ew.where(_ew.equal(count, 0), np.nan, result)


def _nanquantile_ureduce(a, q, axis, method, weak_q, weights=None):
    if ndim_of(q) > 2:
        raise ValueError("q must be a scalar or 1d")
    if not is_float(dtype_of(a)):  # no NaNs to drop: each slice's quantiles are np.quantile's
        return _so._quantile_ureduce(a, q, axis, method, weak_q, weights)
    if weights is not None:
        return _nan_weighted(a, q, axis, weights)
    if known_value(a) is None:  # slices without NaNs are np.quantile's, the others read sorted
        plain = _so._quantile_ureduce(a, q, axis, method, weak_q)
        has_nan = _red.any(_ew.isnan(a), axis=axis)
        return _ew.where(has_nan, _nanquantile_sorted(a, q, axis, method, weak_q), plain)
    if axis is None or ndim_of(a) == 1:
        return _nanquantile_1d(_sh.ravel(a), q, method, weak_q)
    axis = axis % ndim_of(a)
    result = _along_axis(lambda s: _nanquantile_1d(s, q, method, weak_q), a, axis)
    if ndim_of(q):
        result = _sh.moveaxis(
            result, [axis + i for i in range(ndim_of(q))], list(range(ndim_of(q)))
        )
    return result


def _nanquantile(fname, a, q, axis, out, method, keepdims, weights, percent):
    a, q, axis, weights, weak_q = _so._prepare(fname, a, q, axis, out, method, weights, percent)
    if int(np.prod(shape_of(a))) == 0:
        return nanmean(a, axis, keepdims=keepdims)
    kw = dict(q=q, method=method, weak_q=weak_q, weights=weights)
    return _so._ureduce(a, _nanquantile_ureduce, axis, keepdims, **kw)


def nanpercentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=_NoValue,
    *,
    weights=None,
):
    """`np.nanpercentile`: `nanquantile(a, q / 100)`."""
    return _nanquantile("nanpercentile", a, q, axis, out, method, keepdims, weights, True)


def nanquantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=_NoValue,
    *,
    weights=None,
):
    """`np.nanquantile`: each slice's quantiles of its numbers, every method NumPy has."""
    return _nanquantile("nanquantile", a, q, axis, out, method, keepdims, weights, False)
