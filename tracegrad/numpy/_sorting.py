"""Sorting, searching, counting and order statistics with NumPy's signatures.

NumPy's argument checks run on stand-in arrays (so the messages are NumPy's); value-dependent
shapes need concrete values, or JAX's `size=` under jit and vmap; median/percentile/quantile
are `numpy/lib/_function_base_impl.py`'s computation, step for step.

Over 600 lines: one family of eighteen names sharing NumPy's argument checks, `_ureduce` and
the quantile methods (which `_nanfunctions` reuses); unique and quantile would split off into
modules of their own once `tracegrad/numpy/__init__.py` lists them.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib import _arraysetops_impl as _setops
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from tracegrad.core import Boxed
from tracegrad.errors import ConcretizationError
from tracegrad.numpy import _elementwise as _ew
from tracegrad.numpy import _indexing as _ix
from tracegrad.numpy import _reductions as _red
from tracegrad.numpy import _shape as _sh
from tracegrad.numpy._common import concrete_value, ndim_of, shape_of
from tracegrad.primitives import sorting as so

__all__ = [
    "sort",
    "argsort",
    "partition",
    "argpartition",
    "searchsorted",
    "lexsort",
    "nonzero",
    "flatnonzero",
    "argwhere",
    "count_nonzero",
    "unique",
    "unique_values",
    "unique_counts",
    "unique_inverse",
    "unique_all",
    "median",
    "percentile",
    "quantile",
]


def _asarray(a):
    # NumPy starts with asanyarray: Python scalars and lists become strong arrays
    if isinstance(a, Boxed | np.ndarray | np.generic):
        return a
    return np.asarray(a)


def _dtype(a) -> np.dtype:
    return np.dtype(a.dtype)


def _stand_in(a) -> np.ndarray:
    """A zero-cost array of `a`'s shape and dtype, for running NumPy's argument checks."""
    return np.broadcast_to(np.zeros((), _dtype(a)), shape_of(a))


def _known(x):
    """The value of `x` when it has one (an array, or a concretely traced value), else None."""
    try:
        return concrete_value(x, "", "")
    except ConcretizationError:
        return None


def _reject(fname: str, **given) -> None:
    for arg, used in given.items():
        if used:
            raise NotImplementedError(
                f"tracegrad.numpy.{fname}: the argument {arg}= is not supported"
            )


def _flat_or_axis(fname: str, a, axis):
    """(array, axis): axis=None works on the raveled array (axis 0), as NumPy does."""
    if axis is None:
        return _sh.ravel(a), 0
    try:
        return a, normalize_axis_index(operator.index(axis), ndim_of(a))
    except np.exceptions.AxisError:
        raise np.exceptions.AxisError(
            f"{fname}: axis {axis} is out of bounds for an array of dimension {ndim_of(a)}"
        ) from None


# -- sort, argsort ----------------------------------------------------------------------------


def _stable(fname: str, kind, stable) -> bool:
    """Whether NumPy would sort stably; NumPy's own checks (and messages) on a stand-in."""
    getattr(np, fname)(np.zeros(1), kind=kind, stable=stable)
    if isinstance(kind, str) and kind[:1].lower() == "h":
        raise NotImplementedError(
            f"tracegrad.numpy.{fname}: kind={kind!r} is not supported (heapsort orders tied "
            "values its own way); use the default kind or kind='stable'"
        )
    if stable is not None:
        return bool(stable)
    return isinstance(kind, str) and kind[:1].lower() in ("m", "s")


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`np.sort`; the derivative moves each tangent with its value (ties: original order)."""
    _reject("sort", order=order is not None)
    stable = _stable("sort", kind, stable)
    x, axis = _flat_or_axis("sort", _asarray(a), axis)
    return so.sort(x, axis, stable)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`np.argsort`: intp indices, no derivative."""
    _reject("argsort", order=order is not None)
    stable = _stable("argsort", kind, stable)
    x, axis = _flat_or_axis("argsort", _asarray(a), axis)
    return so.argsort(x, axis, stable)


# -- partition, argpartition ------------------------------------------------------------------


def _kth(fname: str, x, kth, axis: int) -> tuple[int, ...]:
    """NumPy's kth as its C code uses it: checked, negative ones counted from the end, sorted."""
    if isinstance(kth, Boxed):
        kth = concrete_value(kth, f"{fname}'s kth", "kth must be static (a Python int or list).")
    n = shape_of(x)[axis]
    getattr(np, fname)(np.zeros(n), kth)  # NumPy's checks and messages
    ks = [int(k) for k in np.asarray(kth).ravel()]
    if n:
        ks = [k + n if k < 0 else k for k in ks]
    return tuple(sorted(ks))


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """`np.partition`; the derivative follows each value to where introselect put it."""
    _reject("partition", order=order is not None)
    if kind != "introselect":
        raise ValueError(f"partition: kind must be 'introselect', got {kind!r}")
    x, axis = _flat_or_axis("partition", _asarray(a), axis)
    return so.partition(x, _kth("partition", x, kth, axis), axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """`np.argpartition`: intp indices, no derivative."""
    _reject("argpartition", order=order is not None)
    if kind != "introselect":
        raise ValueError(f"argpartition: kind must be 'introselect', got {kind!r}")
    x, axis = _flat_or_axis("argpartition", _asarray(a), axis)
    return so.argpartition(x, _kth("argpartition", x, kth, axis), axis)


# -- searchsorted, lexsort --------------------------------------------------------------------


def searchsorted(a, v, side="left", sorter=None):
    """`np.searchsorted` (no derivative); `sorter` reads `a` through it first."""
    a, v = _asarray(a), _asarray(v)
    stand_sorter = None if sorter is None else np.arange(shape_of(a)[0] if ndim_of(a) else 0)
    np.searchsorted(_stand_in(a), _stand_in(v), side=side, sorter=stand_sorter)
    if sorter is not None:
        s = _known(sorter)
        if s is not None:  # NumPy's checks of the values
            np.searchsorted(_stand_in(a), _stand_in(v), side=side, sorter=s)
        a = _ix.take(a, sorter)
    return so.searchsorted(a, v, right=side[:1].lower() == "r")


def lexsort(keys, axis=-1):
    """`np.lexsort`: the last key is the primary one; intp indices, no derivative."""
    if isinstance(keys, Boxed | np.ndarray):
        keys = [keys[i] for i in range(shape_of(keys)[0])] if ndim_of(keys) else [keys]
    keys = [_asarray(k) for k in keys]
    np.lexsort([_stand_in(k) for k in keys], axis=axis)  # NumPy's checks and messages
    if ndim_of(keys[0]) == 0:
        return np.intp(0)  # NumPy's answer for 0-d keys
    return so.lexsort(keys, normalize_axis_index(axis, ndim_of(keys[0])))


# -- nonzero, flatnonzero, argwhere, count_nonzero --------------------------------------------


def _size_hint(fname: str) -> str:
    return (
        f"Pass a static size= (and optionally fill_value=), as jax.numpy.{fname} takes: "
        f"tracegrad.numpy.{fname}(x, size=n) keeps the first n results and pads with fill_value."
    )


def _fills(fname: str, fill_value, n: int) -> tuple[int, ...]:
    if fill_value is None:
        return (0,) * n
    if isinstance(fill_value, tuple | list):
        if len(fill_value) != n:
            raise ValueError(
                f"{fname}: fill_value must be a scalar or a tuple of length {n} (one per axis); "
                f"got {fill_value!r}"
            )
        return tuple(operator.index(f) for f in fill_value)
    return (operator.index(fill_value),) * n


def nonzero(a, *, size=None, fill_value=None):
    """`np.nonzero`; with `size` (JAX's), the first `size` indices padded with `fill_value`,
    which also works under jit and vmap."""
    a = _asarray(a)
    if ndim_of(a) == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
            "instead. If the context of this error is of the form `arr[nonzero(cond)]`, just use "
            "`arr[cond]`."
        )
    if size is None:
        value = concrete_value(a, "the shape of np.nonzero(x)", _size_hint("nonzero"))
        return np.nonzero(value)
    size = operator.index(size)
    return so.nonzero(a, size=size, fill_value=_fills("nonzero", fill_value, ndim_of(a)))


def flatnonzero(a, *, size=None, fill_value=None):
    """`np.flatnonzero`: `nonzero(ravel(a))[0]` (JAX's `size=` too)."""
    flat = _sh.ravel(_asarray(a))
    if size is None:
        value = concrete_value(flat, "the shape of np.flatnonzero(x)", _size_hint("flatnonzero"))
        return np.flatnonzero(value)
    return nonzero(flat, size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """`np.argwhere`: the nonzero indices as rows (JAX's `size=` too)."""
    a = _asarray(a)
    if size is None:
        value = concrete_value(a, "the shape of np.argwhere(x)", _size_hint("argwhere"))
        return np.argwhere(value)
    if ndim_of(a) == 0:
        rows = nonzero(_sh.reshape(a, (1,)), size=size, fill_value=fill_value)
        return _ix.getitem(_sh.stack(rows, axis=1), (slice(None), slice(0, 0)))
    return _sh.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def count_nonzero(a, axis=None, *, keepdims=False):
    """`np.count_nonzero`: a bool cast summed as intp (no derivative)."""
    a = _asarray(a)
    as_bool = _ew.astype(a, np.bool_) if _dtype(a) != np.bool_ else a
    return _red.sum(as_bool, axis=axis, dtype=np.intp, keepdims=keepdims)


# -- unique and its Array API forms -----------------------------------------------------------
# Without `size` the shapes depend on the values: NumPy computes everything on the concrete
# value, and the unique values are then read back from the traced array at the positions
# holding exactly those bits (so they keep their derivative). With `size` (JAX's) the result
# is NumPy's sorting method written with primitives, which runs under jit and vmap too.


def _matching_rows(source: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """For each row of `picked` (2-D), the first row of `source` holding the same bytes."""
    width = source.dtype.itemsize * source.shape[1]
    if width == 0 or source.shape[0] == 0:
        return np.zeros(picked.shape[0], np.intp)
    as_bytes = np.dtype((np.void, width))
    src = np.ascontiguousarray(source).view(as_bytes).ravel()
    want = np.ascontiguousarray(picked).view(as_bytes).ravel()
    keys, first = np.unique(src, return_index=True)
    return first[np.searchsorted(keys, want)]


def _rows(x: np.ndarray, axis: int) -> np.ndarray:
    moved = np.moveaxis(x, axis, 0)
    return moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:], dtype=np.int64)))


def _traced_uniques(a, value: np.ndarray, uniq: np.ndarray, axis):
    """The elements (or slices along `axis`) of the traced `a` holding exactly `uniq`'s bits."""
    if axis is None or value.ndim == 1:
        rows = _matching_rows(value.reshape(-1, 1), uniq.reshape(-1, 1))
        return _ix.take(_sh.ravel(a), rows)
    axis = normalize_axis_index(axis, value.ndim)
    rows = _matching_rows(_rows(value, axis), _rows(uniq, axis))
    return _ix.take(a, rows, axis=axis)


def _unique_concrete(a, flags, axis, equal_nan, sorted):
    value = concrete_value(a, "the shape of np.unique(x)", _size_hint("unique"))
    out = np.unique(value, *flags, axis, equal_nan=equal_nan, sorted=sorted)
    outs = list(out) if isinstance(out, tuple) else [out]
    if isinstance(a, Boxed) and _dtype(a).kind in "fc":
        outs[0] = _traced_uniques(a, value, outs[0], axis)
    return outs


def _sorted_with_mask(x, flags, equal_nan):
    """(perm, aux, mask) of `_unique1d`: `x` (n rows along axis 0) sorted as NumPy sorts it,
    and where each new unique row starts."""
    index, inverse, _ = flags
    n = shape_of(x)[0]
    if ndim_of(x) > 1:  # rows: NumPy sorts them as records, field 0 first (lexsort's last key)
        flat = _sh.reshape(x, (n, -1)) if n else _sh.reshape(x, (0, 0))
        m = shape_of(flat)[1]
        keys = [_ix.getitem(flat, (slice(None), j)) for j in reversed(range(m))]
        perm = so.lexsort(keys, 0) if m else np.arange(n, dtype=np.intp)
        aux = _ix.take(x, perm, axis=0)
    elif index or inverse:
        perm = so.argsort(x, 0, stable=index)
        aux = _ix.take(x, perm)
    else:
        perm, aux = None, so.sort(x, 0)
    if n == 0:
        return perm, aux, np.zeros(0, np.bool_)
    neq = _ew.not_equal(_ix.getitem(aux, slice(1, None)), _ix.getitem(aux, slice(None, -1)))
    if ndim_of(neq) > 1:
        neq = _red.any(neq, axis=tuple(range(1, ndim_of(neq))))
    mask = _sh.concatenate([np.ones(1, np.bool_), neq])
    if equal_nan and ndim_of(x) == 1 and _dtype(x).kind in "fc":
        # NaNs sort last; from the first one on, only it starts a new value
        first_nan = _red.sum(_ew.logical_not(_ew.isnan(aux)), dtype=np.intp)
        pos = np.arange(n, dtype=np.intp)
        mask = _ew.where(_ew.less(pos, first_nan), mask, _ew.equal(pos, first_nan))
    return perm, aux, mask


def _unique_sized(a, flags, axis, equal_nan, size, fill_value):
    """JAX's `unique(..., size=size, fill_value=fill_value)`, computed as NumPy's `_unique1d`."""
    index, inverse, counts = flags
    shape = shape_of(a)
    if axis is None or len(shape) == 1:
        if axis is not None:
            normalize_axis_index(axis, len(shape))
        x, axis = _sh.ravel(a), None
    else:
        axis = normalize_axis_index(axis, len(shape))
        x = _sh.moveaxis(a, axis, 0)
    n = shape_of(x)[0]
    if n == 0 and size and fill_value is None:
        raise ValueError(
            "unique: for zero-sized input with nonzero size argument, fill_value must be "
            "specified (as jax.numpy.unique requires)"
        )
    perm, aux, mask = _sorted_with_mask(x, flags, equal_nan)
    rest = shape_of(x)[1:]
    first = so.nonzero(mask, size=size, fill_value=(0,))[0] if n else np.zeros(size, np.intp)
    valid = _ew.less(np.arange(size, dtype=np.intp), _red.sum(mask, dtype=np.intp))
    if n:
        values = _ix.take(aux, first, axis=0)
        if fill_value is not None:
            wide = _sh.reshape(valid, (size,) + (1,) * len(rest))
            values = _ew.where(wide, values, np.asarray(fill_value).astype(_dtype(x)))
    else:
        values = np.full((size,) + rest, fill_value if size else 0, _dtype(x))
    outs = [values if axis is None else _sh.moveaxis(values, 0, axis)]
    if index:
        outs.append(_ix.take(perm, first) if n else np.zeros(size, np.intp))
    if inverse:
        imask = _ew.subtract(_red.cumsum(mask), np.intp(1))
        inv = _ix.take(imask, so.argsort(perm, 0)) if n else np.zeros(0, np.intp)
        outs.append(_sh.reshape(inv, shape) if axis is None else inv)
    if counts:
        outs.append(_counts(mask, n, size))
    return outs


def _counts(mask, n: int, size: int):
    """JAX's counts with `size`: the gaps between the starts of unique values, 0 past them."""
    if n == 0:
        return np.zeros(size, np.intp)
    starts = so.nonzero(mask, size=size + 1, fill_value=(0,))[0]
    later = _ix.getitem(starts, slice(1, None))
    ends = _ew.where(_ew.greater(later, np.intp(0)), later, np.intp(n))
    return _ew.subtract(ends, _ix.getitem(_sh.concatenate([starts[:1], ends]), slice(None, -1)))


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    sorted=True,  # noqa: A002 - NumPy's name
    size=None,
    fill_value=None,
):
    """`np.unique`; the unique values keep their derivative (each is an element of `ar`).

    Without `size` the result's shape depends on the values, so it needs concrete ones; with
    `size` (JAX's) it has `size` entries, padded with `fill_value` (default: the smallest
    unique value), sorted, and works under jit and vmap.
    """
    a = _asarray(ar)
    flags = (bool(return_index), bool(return_inverse), bool(return_counts))
    if size is None:
        outs = _unique_concrete(a, flags, axis, equal_nan, sorted)
    else:
        outs = _unique_sized(a, flags, axis, equal_nan, operator.index(size), fill_value)
    return outs[0] if len(outs) == 1 else tuple(outs)


def unique_values(x, /, *, size=None, fill_value=None):
    """`np.unique_values` (NumPy may return them unsorted; with JAX's `size=`, sorted)."""
    if size is None:
        return unique(x, equal_nan=False, sorted=False)
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    """`np.unique_counts` (JAX's `size=` too)."""
    out = unique(x, return_counts=True, equal_nan=False, size=size, fill_value=fill_value)
    return _setops.UniqueCountsResult(*out)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """`np.unique_inverse` (JAX's `size=` too)."""
    out = unique(x, return_inverse=True, equal_nan=False, size=size, fill_value=fill_value)
    return _setops.UniqueInverseResult(*out)


def unique_all(x, /, *, size=None, fill_value=None):
    """`np.unique_all` (JAX's `size=` too)."""
    out = unique(x, True, True, True, equal_nan=False, size=size, fill_value=fill_value)
    return _setops.UniqueAllResult(*out)


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


def _inexact(a) -> bool:
    return _dtype(a).kind in "fc"


def _median_nancheck(data, result, axis: int):
    """A slice whose last partitioned value is NaN has a NaN median (that NaN)."""
    if int(np.prod(shape_of(data))) == 0:
        return result
    potential_nans = _ix.take(data, -1, axis=axis)
    return _ew.where(_ew.isnan(potential_nans), potential_nans, result)


def _median(a, axis=None):
    sz = int(np.prod(shape_of(a))) if axis is None else shape_of(a)[axis]
    kth = [sz // 2 - 1, sz // 2] if sz % 2 == 0 else [(sz - 1) // 2]
    supports_nans = _inexact(a)
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
    return _ureduce(_asarray(a), _median, axis, keepdims)


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
    if _inexact(arr):
        nans = _ew.isnan(virtual)
        previous, nxt = _ew.where(nans, -1, previous), _ew.where(nans, -1, nxt)
    return _ew.astype(previous, np.intp), _ew.astype(nxt, np.intp)


def _order_statistics(arr, kth):
    """`arr` partitioned along axis 0 at `kth` (NumPy's), or sorted when kth is not known."""
    known = _known(kth) if isinstance(kth, Boxed) else kth
    if known is not None:
        return partition(arr, np.asarray(known), axis=0)
    return so.sort(arr, 0)


def _lerp(a, b, t):
    """NumPy's `_lerp`: `a + (b - a) t`, or `b - (b - a)(1 - t)` where t >= 0.5."""
    diff_b_a = b - a
    low = a + diff_b_a * t
    high = b - diff_b_a * (1 - t)
    if isinstance(t, float):
        return high if t >= 0.5 else low
    return _ew.where(t >= 0.5, high, low)


def _quantile(arr, q, axis: int, method: str, weak_q: bool, weights=None):
    """`numpy.lib._function_base_impl._quantile`."""
    n = shape_of(arr)[axis]
    if axis != 0:
        arr = _sh.moveaxis(arr, axis, 0)
    supports_nans = _inexact(arr)
    if weights is not None:
        if axis != 0:
            weights = _sh.moveaxis(weights, axis, 0)
        arr, result = _weighted_inverted_cdf(arr, q, weights, n)
        return _nan_slices(result, arr) if supports_nans else result
    virtual_index, fix_gamma = _method(method)
    virtual = _asarray(virtual_index(n, q))
    if fix_gamma is None or (method == "linear" and _dtype(virtual).kind in "iu"):
        kth = _sh.ravel(virtual)
        if supports_nans:
            kth = _sh.concatenate([kth, np.array([-1])])
        arr = _order_statistics(arr, kth)
        result = _ix.take(arr, virtual, axis=0)
    else:
        previous_indexes, next_indexes = _get_indexes(arr, virtual, n)
        known = [_known(i) for i in (previous_indexes, next_indexes)]
        kth = None
        if all(k is not None for k in known):
            kth = np.unique(np.concatenate(([0, -1], known[0].ravel(), known[1].ravel())))
        arr = _order_statistics(arr, kth) if kth is not None else so.sort(arr, 0)
        previous = _ix.getitem(arr, previous_indexes)
        nxt = _ix.getitem(arr, next_indexes)
        gamma = virtual - previous_indexes
        gamma = fix_gamma(gamma, virtual)
        if _dtype(gamma) != _dtype(virtual):
            gamma = _ew.astype(gamma, _dtype(virtual))
        if weak_q:
            gamma = float(concrete_value(gamma, "q", ""))
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
    known = _known(nans)
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
    total = _known(_ix.getitem(cdf, -1))
    if total is not None and count is None and np.isnan(total).any():
        raise ValueError("Weights included NaN, inf or were all zero.")
    if _dtype(q).kind == "f":
        cdf = _ew.astype(cdf, _dtype(q))
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
    value = _known(q)
    if value is not None and not np.lib._function_base_impl._quantile_is_valid(np.asarray(value)):
        which = "Percentiles must be in the range [0, 100]" if percent else None
        raise ValueError(which or "Quantiles must be in the range [0, 1]")


def _weights_are_valid(weights, a, axis):
    """NumPy's check of `weights`, shaped to broadcast along `a`'s reduced axes."""
    wgt = _asarray(weights)
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
    negative = _known(_ew.less(weights, 0))
    if negative is not None and negative.any():
        raise ValueError("Weights must be non-negative.")
    return weights, axis


def _prepare(fname, a, q, axis, out, method, weights, percent):
    """NumPy's checks of percentile/quantile and their nan forms: (a, q as fractions, axis,
    weights, weak_q)."""
    _reject(fname, out=out is not None)
    a = _asarray(a)
    if _dtype(a).kind == "c":
        raise TypeError("a must be an array of real numbers")
    weak_q = type(q) in (int, float)
    q = _asarray(q)
    if percent:
        q = _asarray(_ew.true_divide(q, 100))
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
