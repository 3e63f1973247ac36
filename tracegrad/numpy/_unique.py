"""NumPy's set routine `unique` and its Array API forms (unique_values, unique_counts,
unique_inverse, unique_all), with JAX's `size=`/`fill_value=` for jit and vmap.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib import _arraysetops_impl as _setops
from numpy.lib.array_utils import normalize_axis_index

from tracegrad.core import Boxed
from tracegrad.ir.types import dtype_of
from tracegrad.numpy import _elementwise as _ew
from tracegrad.numpy import _indexing as _ix
from tracegrad.numpy import _reductions as _red
from tracegrad.numpy import _shape as _sh
from tracegrad.numpy._common import as_array, concrete_value, ndim_of, shape_of
from tracegrad.numpy._sorting import _size_hint
from tracegrad.primitives import sorting as so

__all__ = ["unique", "unique_values", "unique_counts", "unique_inverse", "unique_all"]


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
    if isinstance(a, Boxed) and dtype_of(a).kind in "fc":
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
    if equal_nan and ndim_of(x) == 1 and dtype_of(x).kind in "fc":
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
            values = _ew.where(wide, values, np.asarray(fill_value).astype(dtype_of(x)))
    else:
        values = np.full((size,) + rest, fill_value if size else 0, dtype_of(x))
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
    a = as_array(ar)
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
