"""NumPy's counting functions: bincount, digitize, histogram, histogram_bin_edges. Counts are
integers, which carry no derivative; float weights (bincount, histogram) do, and so do
histogram's edges and density, which depend on the data through a.min()/a.max(). Each repeats
NumPy's own steps (lib/_histograms_impl.py, _core/multiarray.bincount), so the values agree
bit for bit.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
from numpy._core.multiarray import _monotonicity

from tracegrad.core import Boxed, bind
from tracegrad.numpy._common import as_array, cast, concrete_value, known_value, ndim_of, shape_of
from tracegrad.numpy._creation import linspace
from tracegrad.numpy._indexing import getitem
from tracegrad.numpy._logic import result_type
from tracegrad.numpy._reductions import cumsum
from tracegrad.numpy._reductions import max as _max
from tracegrad.numpy._reductions import min as _min
from tracegrad.numpy._reductions import sum as _sum
from tracegrad.numpy._shape import broadcast_to, concatenate, flip, ravel
from tracegrad.numpy._sorting import argsort, searchsorted, sort
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.indexing import scatter_add

__all__ = ["bincount", "digitize", "histogram", "histogram_bin_edges"]

_INTP = np.dtype(np.intp)
_F8 = np.dtype(np.float64)


def _any_boxed(*xs) -> bool:
    return any(isinstance(x, Boxed) for x in xs)


def _is_complex(x) -> bool:
    return np.dtype(x.dtype).kind == "c"


# -- bincount ---------------------------------------------------------------------------------


def _bincount_input(x):
    """x as NumPy's bincount reads it: a 1-d array of integers (bools too), cast to intp."""
    listed = not isinstance(x, Boxed | np.ndarray | np.generic)
    x = as_array(x)
    dtype = np.dtype(x.dtype)
    if listed and shape_of(x) == (0,):
        x, dtype = x.astype(_INTP), _INTP  # NumPy reads [] as an empty list of indices
    if listed and dtype.kind == "f":
        warnings.warn(
            "Non-integer input passed to bincount. In a future version of NumPy, this will be "
            "an error. (Deprecated NumPy 2.1)",
            DeprecationWarning,
            stacklevel=3,
        )
    elif not np.can_cast(dtype, _INTP, "same_kind"):
        raise TypeError(
            f"Cannot cast array data from {dtype!r} to {_INTP!r} according to the rule 'safe'"
        )
    if ndim_of(x) != 1:
        raise ValueError(
            "object of too small depth for desired array"
            if ndim_of(x) == 0
            else "object too deep for desired array"
        )
    return cast(x, _INTP)


def _bincount_weights(weights, x):
    w = as_array(weights)
    if shape_of(w) != shape_of(x):
        raise ValueError("The weights and list don't have the same length.")
    if np.dtype(w.dtype).kind not in "biuf":
        raise TypeError(
            f"bincount: weights must be real numbers (NumPy casts them to float64), got "
            f"{np.dtype(w.dtype).name}; count the real and imaginary parts separately"
        )
    return cast(w, _F8)


def _scatter_count(indices, weights, n: int):
    """Zeros of length n (intp, or float64 with weights) with 1 (or each weight) added at each
    index in order: np.add.at, which adds in the order bincount's loop does (the same bits)."""
    if weights is None:
        weights = broadcast_to(np.ones((), _INTP), shape_of(indices))
    return scatter_add(weights, indices, shape=(n,), index=("array",))


def bincount(x, weights=None, minlength=0, *, length=None):
    """`numpy.bincount`: counts (intp) of each value of `x`, or sums of `weights` (float64).

    The output's length is `max(minlength, max(x) + 1)`, which depends on the values: it
    needs them (concrete tracing), or JAX's `length=` keyword, which fixes the length (under
    jit and vmap): then, as in jax.numpy, values >= length are dropped and negative ones
    count in bin 0 (NumPy raises for negative values; so does this without `length`).

    Counts are integers (no derivative); the weighted sums are differentiable in `weights`
    (a scatter-add, whose transpose gathers the cotangent at x).
    """
    indices = _bincount_input(x)
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if length is not None:
        if isinstance(length, Boxed):
            raise TypeError("bincount: length= must be a Python int (the output's static size)")
        length = operator.index(length)
    if shape_of(indices) == (0,):  # NumPy returns intp zeros for an empty x, weights or not
        return np.zeros(minlength if length is None else length, _INTP)
    w = None if weights is None else _bincount_weights(weights, indices)
    if length is None:
        value = concrete_value(
            indices,
            "bincount's output length (max(x) + 1)",
            "Pass length=... (a Python int) as in jax.numpy.bincount.",
        )
        if value.min() < 0:
            raise ValueError("'list' argument must have no negative elements")
        return _scatter_count(indices, w, max(minlength, int(value.max()) + 1))
    # JAX's rule: negatives count in bin 0, values >= length go to a spare bin, sliced off
    indices = bind(ew.maximum_p, indices, 0)
    indices = ew.where(bind(ew.less_p, indices, length), indices, length)
    return getitem(_scatter_count(indices, w, length + 1), slice(0, length))


# -- digitize ---------------------------------------------------------------------------------


def digitize(x, bins, right=False):
    """`numpy.digitize`: the index of the bin of each x (intp), through searchsorted on the
    bins or on the reversed bins when they decrease, as NumPy does. Bins whose values are known
    are checked for monotonicity as in NumPy; under jit (abstract bins) they are not, and the
    direction is read from bins[-1] >= bins[0] as in jax.numpy. Integer results: no
    derivative."""
    x, bins = as_array(x), as_array(bins)
    if _is_complex(x):
        raise TypeError("x may not be complex")
    if ndim_of(bins) != 1:
        raise ValueError(
            "object of too small depth for desired array"
            if ndim_of(bins) == 0
            else "object too deep for desired array"
        )
    side = "left" if right else "right"
    n = shape_of(bins)[0]
    value = known_value(bins)
    if value is not None:
        mono = _monotonicity(np.asarray(value))
        if mono == 0:
            raise ValueError("bins must be monotonically increasing or decreasing")
        if mono == -1:
            return bind(ew.subtract_p, n, searchsorted(flip(bins), x, side))
        return searchsorted(bins, x, side)
    if n == 0:  # NumPy: no bins are increasing ones, and every x falls in bin 0
        return searchsorted(bins, x, side)
    increasing = bind(ew.greater_equal_p, getitem(bins, -1), getitem(bins, 0))
    up = searchsorted(bins, x, side)
    down = bind(ew.subtract_p, n, searchsorted(flip(bins), x, side))
    return ew.where(increasing, up, down)


# -- histogram, histogram_bin_edges -----------------------------------------------------------
#
# NumPy's lib/_histograms_impl.py step by step. Edges from bins=int (or a string) are
# linspace(first, last, n + 1) with first/last = a.min()/a.max() (or `range`), so they and a
# density carry a derivative in `a`; counts are integers; weighted sums are scatter-adds,
# differentiable in the weights. NumPy's Python-level checks on values (finite range, edges
# increasing) run when the values are known and are skipped under jit; NumPy's value-dependent
# branches (an empty range widened by 0.5, values outside `range` dropped) become `where`s.

_BLOCK = 65536  # NumPy's block size: weighted sums are accumulated block by block, as there
_ESTIMATORS = ("stone", "auto", "doane", "fd", "rice", "scott", "sqrt", "sturges")
_SIGNED_TO_UNSIGNED = {
    np.byte: np.ubyte,
    np.short: np.ushort,
    np.intc: np.uintc,
    np.int_: np.uint,
    np.longlong: np.ulonglong,
}


def _ravel_and_check_weights(a, weights):
    a = as_array(a)
    if np.dtype(a.dtype) == np.bool_:
        warnings.warn(
            f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
            RuntimeWarning,
            stacklevel=4,
        )
        a = cast(a, np.uint8)
    if weights is not None:
        weights = as_array(weights)
        if shape_of(weights) != shape_of(a):
            raise ValueError("weights should have the same shape as a.")
        weights = ravel(weights)
    return ravel(a), weights


def _cast_to(x, dtype):
    # np.subtract(..., dtype=dt) casts its operands to dt; Python scalars convert as NumPy does
    return x if isinstance(x, int | float) else cast(x, dtype)


def _unsigned_subtract(a, b):
    """`a - b`, in the unsigned type for signed integers (so max - min cannot overflow), as
    NumPy's histogram computes it."""
    dt = result_type(a, b)
    unsigned = _SIGNED_TO_UNSIGNED.get(dt.type)
    if not _any_boxed(a, b):
        if unsigned is None:
            return np.subtract(a, b, dtype=dt)
        return np.subtract(
            np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), casting="unsafe", dtype=unsigned
        )
    if unsigned is None:
        return bind(ew.subtract_p, _cast_to(a, dt), _cast_to(b, dt))
    a, b = (cast(v if isinstance(v, Boxed) else np.asarray(v, dtype=dt), dt) for v in (a, b))
    return bind(ew.subtract_p, cast(a, unsigned), cast(b, unsigned))


def _check_finite(first, last, what: str) -> None:
    known = [known_value(v) for v in (first, last)]
    if any(v is None for v in known):
        return
    if not (np.isfinite(known[0]) and np.isfinite(known[1])):
        raise ValueError(f"{what} of [{known[0]}, {known[1]}] is not finite")


def _outer_edges(a, range):
    """(first, last, last - first): the outer edges of the bins, as NumPy's _get_outer_edges
    picks them, and their unsigned difference (NumPy's norm_denom)."""
    if range is not None:
        first, last = range
        known = [known_value(v) for v in (first, last)]
        if all(v is not None for v in known) and known[0] > known[1]:
            raise ValueError("max must be larger than min in range parameter.")
        _check_finite(first, last, "supplied range")
    elif np.prod(shape_of(a)) == 0:
        first, last = 0, 1  # an empty array: NumPy's range is 0-1
    else:
        first, last = _min(a), _max(a)
        _check_finite(first, last, "autodetected range")
    if not _any_boxed(first, last):
        if first == last:
            first, last = first - 0.5, last + 0.5
        return first, last, _unsigned_subtract(last, first)
    # traced: NumPy's `if first == last:` widening, as data
    wide_first = bind(ew.subtract_p, first, 0.5)
    wide_last = bind(ew.add_p, last, 0.5)
    same = bind(ew.equal_p, first, last)
    return (
        ew.where(same, wide_first, first),
        ew.where(same, wide_last, last),
        ew.where(same, _unsigned_subtract(wide_last, wide_first), _unsigned_subtract(last, first)),
    )


def _number_of_bins(a, bins: str, range, weights) -> int:
    """The number of equal bins NumPy's estimator `bins` picks: it needs a's values (concrete
    tracing), and the number is NumPy's own (the estimators run on the values)."""
    if bins not in _ESTIMATORS:
        raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
    if weights is not None:
        raise TypeError(
            "Automated estimation of the number of bins is not supported for weighted data"
        )
    value = concrete_value(
        a,
        f"histogram's number of bins (bins={bins!r}, estimated from the values)",
        "Pass the number of bins as an int, or the bin edges as an array.",
    )
    known_range = None if range is None else tuple(known_value(v) for v in range)
    return len(np.histogram_bin_edges(value, bins, known_range)) - 1


def _bin_edges(a, bins, range, weights):
    """(edges, (first, last, n, norm_denom) for equal bins or None): NumPy's _get_bin_edges."""
    if isinstance(bins, str):
        n = _number_of_bins(a, bins, range, weights)
    elif ndim_of(bins) == 0:
        try:
            n = operator.index(bins)
        except TypeError as e:
            raise TypeError("`bins` must be an integer, a string, or an array") from e
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
    elif ndim_of(bins) == 1:
        edges = as_array(bins)
        known = known_value(edges)
        if known is not None and np.any(known[:-1] > known[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return edges, None
    else:
        raise ValueError("`bins` must be 1d, when an array")
    first, last, norm_denom = _outer_edges(a, range)
    bin_type = result_type(first, last, a)
    if np.issubdtype(bin_type, np.integer):
        bin_type = np.result_type(bin_type, float)
    edges = linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
    known = known_value(edges)
    if known is not None and np.any(known[:-1] >= known[1:]):
        raise ValueError(f"Too many bins for data range. Cannot create {n} finite-sized bins.")
    return edges, (first, last, n, norm_denom)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """`numpy.histogram_bin_edges`. Equal-width edges (bins an int or an estimator's name) are
    `linspace(first, last, bins + 1)`, with first/last = a.min()/a.max() unless `range` is
    given: differentiable in `a` through them. Edges given as an array are returned as
    they are. An estimator's name needs a's values (concrete tracing)."""
    a, weights = _ravel_and_check_weights(a, weights)
    return _bin_edges(a, bins, range, weights)[0]


def _uniform_bin_indices(a, edges, uniform):
    """Each value's bin (NumPy's arithmetic and its one-ulp corrections against the edges);
    values outside the range go to a spare bin n, which NumPy drops instead."""
    first, last, n, norm_denom = uniform
    keep = bind(
        ew.logical_and_p, bind(ew.greater_equal_p, a, first), bind(ew.less_equal_p, a, last)
    )
    tmp_a = cast(a, edges.dtype)
    # dropped values (NaN too) read as the first edge, so no invalid cast or index arises
    tmp_a = ew.where(keep, tmp_a, getitem(edges, 0))
    f_indices = bind(
        ew.multiply_p, bind(ew.divide_p, _unsigned_subtract(tmp_a, first), norm_denom), n
    )
    indices = cast(f_indices, _INTP)
    one_less = bind(ew.subtract_p, indices, 1)
    indices = ew.where(bind(ew.equal_p, indices, n), one_less, indices)
    decrement = bind(ew.less_p, tmp_a, getitem(edges, indices))
    indices = ew.where(decrement, bind(ew.subtract_p, indices, 1), indices)
    above = bind(ew.greater_equal_p, tmp_a, getitem(edges, bind(ew.add_p, indices, 1)))
    increment = bind(ew.logical_and_p, above, bind(ew.not_equal_p, indices, n - 1))
    indices = ew.where(increment, bind(ew.add_p, indices, 1), indices)
    return ew.where(keep, indices, n)


def _uniform_counts(a, weights, edges, uniform, ntype):
    """NumPy's fast path for equal bins: per block of 65536 values, a bincount of their bin
    indices (weights summed in float64), cast to the result type and added to the total."""
    n = uniform[2]
    indices = _uniform_bin_indices(a, edges, uniform)
    total = np.zeros(n, ntype)
    size = shape_of(a)[0]
    for i in range(0, size, _BLOCK):
        block = slice(i, min(i + _BLOCK, size))
        w = None if weights is None else cast(getitem(weights, block), _F8)
        counts = getitem(_scatter_count(getitem(indices, block), w, n + 1), slice(0, n))
        total = bind(ew.add_p, total, cast(counts, ntype))
    return total


def _search_sorted_inclusive(a, v):
    """NumPy's helper: `a.searchsorted(v[:-1], 'left')` and, for the last edge, 'right', so
    the last bin includes its right edge."""
    m = shape_of(v)[0]
    left = searchsorted(a, getitem(v, slice(0, m - 1)), "left")
    return concatenate((left, searchsorted(a, getitem(v, slice(m - 1, m)), "right")))


def _cumulative_counts(a, weights, edges, ntype):
    """NumPy's path for given edges: per block, the sorted values' counts (or cumulative sums
    of the weights in sorted order) at each edge, accumulated, then differenced. The sort is
    NumPy's (argsort's default, not stable), so equal values' weights add in NumPy's order."""
    cum_n = np.zeros(shape_of(edges), ntype)
    size = shape_of(a)[0]
    for i in range(0, size, _BLOCK):
        block = slice(i, min(i + _BLOCK, size))
        tmp_a = getitem(a, block)
        if weights is None:
            found = _search_sorted_inclusive(sort(tmp_a), edges)
        else:
            order = argsort(tmp_a)
            sa, sw = getitem(tmp_a, order), getitem(getitem(weights, block), order)
            cw = concatenate((np.zeros(1, ntype), cumsum(sw)))
            found = getitem(cw, _search_sorted_inclusive(sa, edges))
        cum_n = bind(ew.add_p, cum_n, found)
    m = shape_of(edges)[0]
    return bind(ew.subtract_p, getitem(cum_n, slice(1, m)), getitem(cum_n, slice(0, m - 1)))


def histogram(a, bins=10, range=None, density=None, weights=None):
    """`numpy.histogram`: (counts, edges), as NumPy computes them.

    Counts are intp (no derivative), or sums of `weights` in the weights' dtype (differentiable
    in the weights). Edges from an int or an estimator's name are differentiable in `a` (see
    `histogram_bin_edges`), and so is a density `n / diff(edges) / n.sum()` through the bin
    widths. Values equal to a bin edge fall as NumPy puts them (its one-ulp corrections);
    under jit a NaN or infinite value is not refused as NumPy refuses it (the range is
    data then), and values outside `range` are dropped as NumPy drops them.
    """
    a, weights = _ravel_and_check_weights(a, weights)
    edges, uniform = _bin_edges(a, bins, range, weights)
    ntype = _INTP if weights is None else np.dtype(weights.dtype)
    if ntype.kind == "c":
        raise NotImplementedError(
            "tracegrad.numpy.histogram: complex weights are not supported; histogram the real "
            "and imaginary parts of the weights separately"
        )
    simple_weights = weights is None or np.can_cast(ntype, np.double)
    if uniform is not None and simple_weights:
        n = _uniform_counts(a, weights, edges, uniform, ntype)
    else:
        n = _cumulative_counts(a, weights, edges, ntype)
    if density:
        m = shape_of(edges)[0]
        widths = bind(ew.subtract_p, getitem(edges, slice(1, m)), getitem(edges, slice(0, m - 1)))
        db = cast(widths, _F8)
        return bind(ew.divide_p, bind(ew.divide_p, n, db), _sum(n)), edges
    return n, edges
