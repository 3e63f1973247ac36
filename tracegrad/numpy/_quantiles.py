"""Order statistics with NumPy's signatures: median, percentile, quantile (all of NumPy's
methods, and `weights=` with 'inverted_cdf'), computed as `numpy/lib/_function_base_impl.py`
computes them, step for step; `_nanfunctions` reuses its machinery.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from tracegrad.core import Boxed
from tracegrad.ir.types import dtype_of, is_float
from tracegrad.numpy import _elementwise as _ew
from tracegrad.numpy import _indexing as _ix
from tracegrad.numpy import _reductions as _red
from tracegrad.numpy import _shape as _sh
from tracegrad.numpy._common import as_array, cast, known_value, ndim_of, promotion_key, shape_of
from tracegrad.numpy._sorting import _reject, partition
from tracegrad.primitives import sorting as so

__all__ = ["median", "percentile", "quantile"]


# -- median, percentile, quantile -------------------------------------------------------------
# NumPy's `_ureduce`, `_median` and `_quantile`, step for step, written with operations that
# work on arrays and tracers alike (so known values keep NumPy's own arithmetic). The order
# statistics come from `partition` at NumPy's own kth; only when those indices depend on a `q`
# traced abstractly (jit over q) is the axis fully sorted instead, which finds the same values
# (of two tied zeros of opposite sign, either may be the one found). The derivative flows to
# the order statistics through partition's rule: at ties, to the tied elements in their
# original order, which is where JAX's (stable) sort sends it too.

_NoValue = np._NoValue


def _ureduce(a, func, axis, keepdims, **kwargs):
    """`numpy.lib._function_base_impl._ureduce`: several axes merged into a last one."""
    nd = ndim_of(a)
    keepdims = False if keepdims is _NoValue else bool(keepdims)
    if axis is not None:
        axis = normalize_axis_tuple(axis, nd)
        if len(axis) == 1:
            kwargs["axis"] = axis[0]
        else:
            keep = sorted(set(range(nd)) - set(axis))

            def reshape_arr(x):  # the kept axes first, the reduced ones merged last
                x = _sh.moveaxis(x, keep, list(range(len(keep))))
                return _sh.reshape(x, shape_of(x)[: len(keep)] + (-1,))

            a = reshape_arr(a)
            if kwargs.get("weights") is not None:
                kwargs["weights"] = reshape_arr(kwargs["weights"])
            kwargs["axis"] = -1
    else:
        kwargs["axis"] = None
    r = func(a, **kwargs)
    if keepdims:
        if axis is None:
            index_r = (None,) * nd
        else:
            index_r = tuple(None if i in axis else slice(None) for i in range(nd))
        r = _ix.getitem(r, (Ellipsis,) + index_r)
    return r


def _median_nancheck(data, result, axis: int):
    """A slice whose last partitioned value is NaN has a NaN median (that NaN)."""
    if int(np.prod(shape_of(data))) == 0:
        return result
    potential_nans = _ix.take(data, -1, axis=axis)
    return _ew.where(_ew.isnan(potential_nans), potential_nans, result)


def _median(a, axis=None):
    sz = int(np.prod(shape_of(a))) if axis is None else shape_of(a)[axis]
    kth = [sz // 2 - 1, sz // 2] if sz % 2 == 0 else [(sz - 1) // 2]
    supports_nans = is_float(dtype_of(a))
    if supports_nans:
        kth.append(-1)
    part = partition(a, kth, axis=axis)
    axis = 0 if axis is None else normalize_axis_index(axis, ndim_of(part))
    index = shape_of(part)[axis] // 2
    indexer = [slice(None)] * ndim_of(part)
    odd = shape_of(part)[axis] % 2 == 1
    indexer[axis] = slice(index, index + 1) if odd else slice(index - 1, index + 1)
    rout = _red.mean(_ix.getitem(part, tuple(indexer)), axis=axis)
    if supports_nans and sz > 0:
        rout = _median_nancheck(part, rout, axis)
    return rout


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """`np.median`: a partition at the middle, then the mean of the middle one or two."""
    _reject("median", out=out is not None)
    return _ureduce(as_array(a), _median, axis, keepdims)


# the interpolation methods of `numpy.lib._function_base_impl._QuantileMethods`:
# name -> (virtual index of (n, q), gamma fix or None for methods that pick an element)


def _discrete(index, chooses_previous):
    previous = _ew.floor(index)
    nxt = previous + 1
    gamma = index - previous
    res = _ew.astype(_ew.where(chooses_previous(gamma, index), previous, nxt), np.intp)
    return _ew.where(_ew.less(res, 0), np.intp(0), res)


def _continuous(alpha, beta):
    return lambda n, q: n * q + (alpha + q * (1 - alpha - beta)) - 1


def _mask(default, conditioned, where):
    return _ew.where(where, np.float64(conditioned), np.float64(default))


def _keep(gamma, index):
    return gamma


_METHODS = {
    "inverted_cdf": (lambda n, q: _discrete((n * q) - 1, lambda g, i: _ew.equal(g, 0)), None),
    "averaged_inverted_cdf": (
        lambda n, q: (n * q) - 1,
        lambda g, i: _mask(1.0, 0.5, _ew.equal(g, 0)),
    ),
    "closest_observation": (
        lambda n, q: _discrete(
            (n * q) - 1 - 0.5,
            lambda g, i: _ew.logical_and(_ew.equal(g, 0), _ew.equal(_ew.floor(i) % 2, 1)),
        ),
        None,
    ),
    "interpolated_inverted_cdf": (_continuous(0, 1), _keep),
    "hazen": (_continuous(0.5, 0.5), _keep),
    "weibull": (_continuous(0, 0), _keep),
    "linear": (lambda n, q: (n - 1) * q, _keep),
    "median_unbiased": (_continuous(1 / 3.0, 1 / 3.0), _keep),
    "normal_unbiased": (_continuous(3 / 8.0, 3 / 8.0), _keep),
    "lower": (lambda n, q: _ew.astype(_ew.floor((n - 1) * q), np.intp), None),
    "higher": (lambda n, q: _ew.astype(_ew.ceil((n - 1) * q), np.intp), None),
    "midpoint": (
        lambda n, q: 0.5 * (_ew.floor((n - 1) * q) + _ew.ceil((n - 1) * q)),
        lambda g, i: _mask(0.5, 0.0, _ew.equal(i % 1, 0)),
    ),
    "nearest": (lambda n, q: _ew.astype(_ew.round((n - 1) * q), np.intp), None),
}


def _method(method: str):
    try:
        return _METHODS[method]
    except (KeyError, TypeError):
        names = np.lib._function_base_impl._QuantileMethods.keys()
        raise ValueError(f"{method!r} is not a valid method. Use one of: {names}") from None


def _get_indexes(arr, virtual, n: int):
    """(previous, next) intp indexes around the virtual ones, clipped as NumPy clips them."""
    previous = _ew.floor(virtual)
    nxt = previous + 1
    above = virtual >= n - 1
    previous, nxt = _ew.where(above, -1, previous), _ew.where(above, -1, nxt)
    below = virtual < 0
    previous, nxt = _ew.where(below, 0, previous), _ew.where(below, 0, nxt)
    if is_float(dtype_of(arr)):
        nans = _ew.isnan(virtual)
        previous, nxt = _ew.where(nans, -1, previous), _ew.where(nans, -1, nxt)
    return _ew.astype(previous, np.intp), _ew.astype(nxt, np.intp)


def _order_statistics(arr, kth):
    """`arr` partitioned along axis 0 at `kth` (NumPy's), or sorted when kth is not known."""
    known = known_value(kth) if isinstance(kth, Boxed) else kth
    if known is not None:
        return partition(arr, np.asarray(known), axis=0)
    return so.sort(arr, 0)


def _lerp(a, b, t):
    """NumPy's `_lerp`: `a + (b - a) t`, or `b - (b - a)(1 - t)` where t >= 0.5."""
    diff_b_a = b - a
    low = a + diff_b_a * t
    high = b - diff_b_a * (1 - t)
    return _unpacked(_ew.where(t >= 0.5, high, low))


def _unpacked(result):
    """NumPy's `_lerp` gives a 0-d result as a NumPy scalar."""
    return result[()] if isinstance(result, np.ndarray) and result.ndim == 0 else result


def weak_lerp(a, b, gamma):
    """`_lerp` where NumPy's weight is a Python float (q was one: NumPy's `float(gamma)`), from
    `gamma`, arrays or tracers of those floats (one per result; the nan functions' slices each
    have their own): the weight takes the data's float type as a weak Python float does, 1 - t
    computed in float64 first as Python computes it. So float32 data give float32 quantiles,
    for a traced q (a Python float under jit or grad) too."""
    dtype = np.result_type(dtype_of(a), 0.0)
    t = cast(gamma, dtype)
    one_minus_t = cast(_ew.subtract(1.0, gamma), dtype)
    diff_b_a = b - a
    low = a + diff_b_a * t
    high = b - diff_b_a * one_minus_t
    return _unpacked(_ew.where(gamma >= 0.5, high, low))


def _quantile(arr, q, axis: int, method: str, weak_q: bool, weights=None):
    """`numpy.lib._function_base_impl._quantile`."""
    n = shape_of(arr)[axis]
    if axis != 0:
        arr = _sh.moveaxis(arr, axis, 0)
    supports_nans = is_float(dtype_of(arr))
    if weights is not None:
        if axis != 0:
            weights = _sh.moveaxis(weights, axis, 0)
        arr, result = _weighted_inverted_cdf(arr, q, weights, n)
        return _nan_slices(result, arr) if supports_nans else result
    virtual_index, fix_gamma = _method(method)
    virtual = as_array(virtual_index(n, q))
    if fix_gamma is None or (method == "linear" and dtype_of(virtual).kind in "iu"):
        kth = _sh.ravel(virtual)
        if supports_nans:
            kth = _sh.concatenate([kth, np.array([-1])])
        arr = _order_statistics(arr, kth)
        result = _ix.take(arr, virtual, axis=0)
    else:
        previous_indexes, next_indexes = _get_indexes(arr, virtual, n)
        known = [known_value(i) for i in (previous_indexes, next_indexes)]
        kth = None
        if all(k is not None for k in known):
            kth = np.unique(np.concatenate(([0, -1], known[0].ravel(), known[1].ravel())))
        arr = _order_statistics(arr, kth) if kth is not None else so.sort(arr, 0)
        previous = _ix.getitem(arr, previous_indexes)
        nxt = _ix.getitem(arr, next_indexes)
        gamma = virtual - previous_indexes
        gamma = fix_gamma(gamma, virtual)
        if dtype_of(gamma) != dtype_of(virtual):
            gamma = _ew.astype(gamma, dtype_of(virtual))
        if weak_q:
            result = weak_lerp(previous, nxt, gamma)
        else:
            gamma = _sh.reshape(gamma, shape_of(virtual) + (1,) * (ndim_of(arr) - 1))
            result = _lerp(previous, nxt, gamma)
    if supports_nans:
        result = _nan_slices(result, arr)
    return result


def _nan_slices(result, arr):
    """A slice whose last ordered value is NaN has that NaN as every quantile. (NumPy returns
    the NaN itself, in arr's dtype, for a 0-d result: followed where the values are known.)"""
    last = _ix.getitem(arr, -1)
    nans = _ew.isnan(last)
    known = known_value(nans)
    if known is not None and not known.any():
        return result
    if known is not None and ndim_of(result) == 0:
        return last
    return _ew.where(nans, last, result)


def _weighted_inverted_cdf(arr, q, weights, n: int, count=None):
    """NumPy's weighted "inverted_cdf": the sorted values' cumulative weights, normalized, and
    per slice the first value whose cumulative weight reaches q (a batched searchsorted).
    `count` (the nan functions') is each slice's count of numbers, the weights of its NaNs
    zero. Returns (sorted arr, result); the derivative reaches `arr` through the sort."""
    index_array = so.argsort(arr, 0)
    arr = _ix.take_along_axis(arr, index_array, 0)
    if shape_of(weights) == shape_of(arr):
        weights = _ix.take_along_axis(weights, index_array, 0)
    else:
        weights = _ix.getitem(_sh.ravel(weights), index_array)
    cdf = _red.cumsum(weights, axis=0, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # all-zero weights: checked next
        cdf = _ew.true_divide(cdf, _ix.getitem(cdf, -1))
    total = known_value(_ix.getitem(cdf, -1))
    if total is not None and count is None and np.isnan(total).any():
        raise ValueError("Weights included NaN, inf or were all zero.")
    if dtype_of(q).kind == "f":
        cdf = _ew.astype(cdf, dtype_of(q))
    cdf = _ew.where(_ew.equal(cdf, 0), -1, cdf)  # NumPy's fix for leading zero weights
    rest = shape_of(arr)[1:]
    keys = _sh.broadcast_to(_sh.ravel(q), rest + (int(np.prod(shape_of(q))),))
    rows = _sh.moveaxis(cdf, 0, -1)
    indices = so.searchsorted(rows, keys, batch_dims=len(rest))
    last = np.intp(n - 1) if count is None else _sh.expand_dims(_ew.subtract(count, 1), -1)
    indices = _ew.minimum(indices, last)
    picked = _ix.take_along_axis(_sh.moveaxis(arr, 0, -1), indices, axis=-1)
    result = _sh.reshape(_sh.moveaxis(picked, -1, 0), shape_of(q) + rest)
    return arr, result


def _quantile_ureduce(a, q, axis, method, weak_q, weights=None):
    if ndim_of(q) > 2:
        raise ValueError("q must be a scalar or 1d")
    if axis is None:
        weights = None if weights is None else _sh.ravel(weights)
        return _quantile(_sh.ravel(a), q, 0, method, weak_q, weights)
    return _quantile(a, q, axis, method, weak_q, weights)


def _check_q(fname: str, q, percent: bool):
    value = known_value(q)
    if value is not None and not np.lib._function_base_impl._quantile_is_valid(np.asarray(value)):
        which = "Percentiles must be in the range [0, 100]" if percent else None
        raise ValueError(which or "Quantiles must be in the range [0, 1]")


def _weights_are_valid(weights, a, axis):
    """NumPy's check of `weights`, shaped to broadcast along `a`'s reduced axes."""
    wgt = as_array(weights)
    shape = shape_of(a)
    if shape_of(wgt) != shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if shape_of(wgt) != tuple(shape[ax] for ax in axis):
            raise ValueError(
                "Shape of weights must be consistent with shape of a along specified axis."
            )
        wgt = _sh.transpose(wgt, tuple(int(i) for i in np.argsort(axis)))
        wgt = _sh.reshape(wgt, tuple(s if ax in axis else 1 for ax, s in enumerate(shape)))
    return wgt


def _check_weights(a, method: str, weights, axis):
    """(weights, axis) as NumPy prepares them: only "inverted_cdf" takes weights."""
    if weights is None:
        return None, axis
    if method != "inverted_cdf":
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    if axis is not None:
        axis = normalize_axis_tuple(axis, ndim_of(a), argname="axis")
    weights = _weights_are_valid(weights, a, axis)
    negative = known_value(_ew.less(weights, 0))
    if negative is not None and negative.any():
        raise ValueError("Weights must be non-negative.")
    return weights, axis


def _prepare(fname, a, q, axis, out, method, weights, percent):
    """NumPy's checks of percentile/quantile and their nan forms: (a, q as fractions, axis,
    weights, weak_q)."""
    _reject(fname, out=out is not None)
    a = as_array(a)
    if dtype_of(a).kind == "c":
        raise TypeError("a must be an array of real numbers")
    weak_q = type(promotion_key(q)) in (int, float)  # a Python number, or a traced one
    q = as_array(q)
    if percent:
        q = as_array(_ew.true_divide(q, 100))
    _check_q(fname, q, percent)
    weights, axis = _check_weights(a, method, weights, axis)
    _method(method)
    return a, q, axis, weights, weak_q


def percentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """`np.percentile`: `quantile(a, q / 100)`; differentiable in `a` and in `q`."""
    a, q, axis, weights, weak_q = _prepare("percentile", a, q, axis, out, method, weights, True)
    kw = dict(q=q, method=method, weak_q=weak_q, weights=weights)
    return _ureduce(a, _quantile_ureduce, axis, keepdims, **kw)


def quantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    weights=None,
):
    """`np.quantile`, every method NumPy has; differentiable in `a` and (through the
    interpolation weight) in `q`; `weights=` with "inverted_cdf", as NumPy."""
    a, q, axis, weights, weak_q = _prepare("quantile", a, q, axis, out, method, weights, False)
    kw = dict(q=q, method=method, weak_q=weak_q, weights=weights)
    return _ureduce(a, _quantile_ureduce, axis, keepdims, **kw)
