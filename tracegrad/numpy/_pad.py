"""`pad` with every NumPy mode, computed the way numpy/lib/_arraypad_impl.py computes it.

NumPy pads one axis at a time, in order, each from the array padded so far (so the corners
come from the earlier axes' padding), and fills each side with slices of what is already
there: edges, reflections, wraps, statistics and linear ramps. Here each such step is a
slice, flip, broadcast or reduction of the value padded so far, joined by concatenation, and
the arithmetic NumPy does ('mean', 'median', 'linear_ramp', reflect_type='odd') is the same
arithmetic, so the bits match and every mode is differentiable.
"""

from __future__ import annotations

import math
import typing

import numpy as np

from tracegrad.core import Boxed, bind
from tracegrad.ir.types import dtype_of
from tracegrad.numpy import _reductions
from tracegrad.numpy._common import cast, ndim_of, shape_of
from tracegrad.numpy._creation import linspace
from tracegrad.primitives import broadcasting, slicing, views
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import shape as sp

_ALLOWED = {
    "empty": (),
    "edge": (),
    "wrap": (),
    "constant": ("constant_values",),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "minimum": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def pad(array, pad_width, mode="constant", **kwargs):
    """`np.pad`: every mode, NumPy's values bit for bit, differentiable in `array`.

    `pad_width` and the mode's options must be Python or NumPy values (not traced). 'empty'
    fills zeros where NumPy leaves the memory uninitialised (any value is NumPy's, and zeros
    give a defined derivative). A callable `mode` writes into a NumPy array in place, which a
    traced value cannot be, so it is refused. On plain arrays this is NumPy's `np.pad`.
    """
    if not any(isinstance(v, Boxed) for v in (array, pad_width, *kwargs.values())):
        return np.pad(array, pad_width, mode, **kwargs)
    if callable(mode):
        raise NotImplementedError(
            f"tracegrad.numpy.pad: a callable mode ({getattr(mode, '__name__', mode)!r}) "
            "fills a NumPy array in place, which a traced array cannot be; use one of "
            f"NumPy's named modes {sorted(_ALLOWED)} or build the padding with concatenate"
        )
    for name, value in kwargs.items():
        _static(value, name)
    widths = _widths(pad_width, ndim_of(array))
    try:
        allowed = _ALLOWED[mode]
    except (KeyError, TypeError):
        raise ValueError(f"mode '{mode}' is not supported") from None
    unsupported = set(kwargs) - set(allowed)
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode == "constant":
        return _constant(array, widths, kwargs.get("constant_values", 0))
    if mode == "empty" or math.prod(shape_of(array)) == 0:
        return _empty(array, widths, mode)
    pad_axis = _MODES[mode]
    for axis, pair in enumerate(widths):
        array = pad_axis(array, axis, pair, mode, kwargs)
    return array


def _static(value, what: str):
    if isinstance(value, Boxed):
        raise NotImplementedError(
            f"tracegrad.numpy.pad: a traced `{what}` is not supported; pass Python or NumPy "
            "values (the padding's sizes and fill rules are fixed when the array is traced)"
        )
    return value


# -- arguments --------------------------------------------------------------------------------


def _widths(pad_width, ndim: int) -> list[tuple[int, int]]:
    """`pad_width` as NumPy reads it: a dict of axis -> width, or anything `_as_pairs` takes,
    of integer kind ('i'), non-negative."""
    _static(pad_width, "pad_width")
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            match width:
                case int(both):
                    seq[axis] = both, both
                case tuple((int(before), int(after))):
                    seq[axis] = before, after
                case _ as invalid:
                    typing.assert_never(invalid)
        pad_width = seq
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError(f"pad: pad_width must be of integral type, got {pad_width!r}")
    pairs = as_pairs(widths, ndim, as_index=True, what="pad_width")
    if any(b < 0 or a < 0 for b, a in pairs):
        raise ValueError(f"pad: pad_width {pad_width!r} cannot contain negative values")
    return [(int(b), int(a)) for b, a in pairs]


def as_pairs(x, ndim: int, as_index: bool = False, what: str = "value"):
    """NumPy's `_as_pairs`, returning the same kinds of values: NumPy scalars when `x` has one
    or two elements, Python scalars otherwise (the kind decides linspace's dtype)."""
    if x is None:
        return ((None, None),) * ndim
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x < 0:
                raise ValueError(f"pad: {what} {x[0]} cannot contain negative values")
            return ((x[0], x[0]),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError(f"pad: {what} {x.tolist()} cannot contain negative values")
            return ((x[0], x[1]),) * ndim
    if as_index and x.size and x.min() < 0:
        raise ValueError(f"pad: {what} {x.tolist()} cannot contain negative values")
    try:
        return np.broadcast_to(x, (ndim, 2)).tolist()
    except ValueError:
        raise ValueError(
            f"pad: {what} of shape {x.shape} cannot be read as (before, after) pairs for each "
            f"of {ndim} axes"
        ) from None


# -- pieces along one axis --------------------------------------------------------------------


def _part(x, axis: int, start: int, stop: int):
    """`x[..., start:stop, ...]` along `axis` (0 <= start <= stop <= its length)."""
    s = shape_of(x)
    starts = tuple(start if k == axis else 0 for k in range(len(s)))
    limits = tuple(stop if k == axis else d for k, d in enumerate(s))
    return slicing.slice_static(x, starts, limits)


def _reversed(x, axis: int, start: int, stop: int):
    """`x[start:stop]` along `axis`, in reverse order."""
    return views.flip(_part(x, axis, start, stop), (axis,))


def _widened(v, axis: int, width: int, like):
    """`v` (size 1 along `axis`) repeated `width` times there, in `like`'s dtype: NumPy
    assigns the value to every element of the pad area, casting to the padded dtype."""
    shape = list(shape_of(like))
    shape[axis] = width
    if dtype_of(v) != dtype_of(like):
        v = ew.astype(v, dtype_of(like))
    return broadcasting.broadcast_to(v, tuple(shape))


def _join(parts, axis: int):
    parts = [p for p in parts if shape_of(p)[axis]]
    return parts[0] if len(parts) == 1 else sp.concatenate(parts, axis)


# -- constant, empty --------------------------------------------------------------------------


def _constant(array, widths, constant_values):
    n = ndim_of(array)
    values = _as_value_pairs(constant_values, n, dtype_of(array))
    flat = [v for pair in values for v in pair]
    if len({repr(v) for v in flat}) <= 1:  # repr: -0.0 and 0.0 are different fill values
        value = flat[0] if flat else np.asarray(constant_values).reshape(-1)[0].item()
        return sp.pad(array, widths, value)
    # different values per side: NumPy fills axis by axis (later axes win at the corners),
    # and so does one constant pad per side, in the same order
    for ax, ((b, a), (vb, va)) in enumerate(zip(widths, values)):
        for side, v in (((b, 0), vb), ((0, a), va)):
            if side != (0, 0):
                array = sp.pad(array, [side if k == ax else (0, 0) for k in range(n)], v)
    return array


def _as_value_pairs(values, ndim: int, dtype):
    """Fill values as Python scalars, one (before, after) pair per axis. NumPy assigns the
    Python scalars of a per-axis list strictly (-1 into uint8 raises) and NumPy scalars with
    a cast: the first are checked here the way NumPy's assignment checks them."""
    pairs = as_pairs(values, ndim, what="constant_values")
    for pair in pairs:
        for v in pair:
            if not isinstance(v, np.generic):
                np.empty((), dtype)[()] = v  # raises as NumPy's padded[...] = v would
    return [tuple(v.item() if isinstance(v, np.generic) else v for v in p) for p in pairs]


def _empty(array, widths, mode):
    """'empty' (NumPy leaves the pad area uninitialised: zeros here), and any mode on an
    array with no elements, where NumPy only checks that no empty axis is extended."""
    if mode != "empty":
        for axis, pair in enumerate(widths):
            if shape_of(array)[axis] == 0 and any(pair):
                raise ValueError(
                    f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
                )
    return sp.pad(array, widths, 0)


# -- edge, linear_ramp, statistics ------------------------------------------------------------


def _edges(x, axis: int):
    n = shape_of(x)[axis]
    return _part(x, axis, 0, 1), _part(x, axis, n - 1, n)


def _edge(x, axis, pair, mode, kwargs):
    if pair == (0, 0):
        return x
    (before, after), (first, last) = pair, _edges(x, axis)
    return _join([_widened(first, axis, before, x), x, _widened(last, axis, after, x)], axis)


def _linear_ramp(x, axis, pair, mode, kwargs):
    """NumPy's `np.linspace(end_value, edge, width, endpoint=False, dtype=x.dtype, axis)`
    from each end value to the edge (reversed on the right)."""
    if pair == (0, 0):
        return x
    end_values = as_pairs(kwargs.get("end_values", 0), ndim_of(x))[axis]
    ramps = []
    for end, edge, width in zip(end_values, _edges(x, axis), pair):
        stop = views.squeeze(edge, (axis,))
        ramps.append(linspace(end, stop, width, endpoint=False, dtype=dtype_of(x), axis=axis))
    left, right = ramps
    right = views.flip(right, (axis,))
    return _join([left, x, right], axis)


# NumPy's statistic functions for the stat modes. np.median, as np.pad calls it, reaches
# tracegrad.numpy.median through NumPy's dispatch on a traced chunk (the sorting module builds
# on this one's, so it cannot be imported here).
_STATISTICS = {
    "maximum": _reductions.amax,
    "minimum": _reductions.amin,
    "mean": _reductions.mean,
    "median": np.median,
}


def _stat(func, chunk, axis, dtype):
    """`func(chunk, axis, keepdims=True)`, rounded in place for an integer array (NumPy's
    `_round_if_needed`; the assignment then casts it)."""
    value = func(chunk, axis=axis, keepdims=True)
    if np.issubdtype(dtype, np.integer):
        value = bind(ew.rint_p, value) if dtype_of(value).kind in "fc" else value
    return value


def _statistic(x, axis, pair, mode, kwargs):
    """The maximum, minimum, mean or median of the first/last `stat_length` elements."""
    func = _STATISTICS[mode]
    n = shape_of(x)[axis]
    lengths = as_pairs(kwargs.get("stat_length"), ndim_of(x), as_index=True, what="stat_length")
    left_length, right_length = lengths[axis]
    left_length = n if left_length is None or n < left_length else int(left_length)
    right_length = n if right_length is None or n < right_length else int(right_length)
    if (left_length == 0 or right_length == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")  # every axis: NumPy's
    if pair == (0, 0):
        return x
    dtype = dtype_of(x)
    left = _stat(func, _part(x, axis, 0, left_length), axis, dtype)
    if left_length == right_length == n:
        right = left  # NumPy: the same statistic of the whole axis
    else:
        right = _stat(func, _part(x, axis, n - right_length, n), axis, dtype)
    before, after = pair
    return _join([_widened(left, axis, before, x), x, _widened(right, axis, after, x)], axis)


# -- reflect, symmetric, wrap -----------------------------------------------------------------


def _odd(chunk, edge):
    """reflect_type='odd': `2 * edge - chunk`, NumPy's arithmetic."""
    return bind(ew.subtract_p, bind(ew.multiply_p, 2, edge), chunk)


def _reflect(x, axis, pair, mode, kwargs):
    """NumPy's `_set_reflect_both` until both sides are filled: each round mirrors at most the
    length of what is there (without the edge for 'reflect', with it for 'symmetric')."""
    period = shape_of(x)[axis]
    if pair == (0, 0):
        return x
    if period == 1:  # NumPy's legacy behaviour for a singleton axis: the edge repeated
        return _edge(x, axis, pair, mode, kwargs)
    odd = kwargs.get("reflect_type", "even") == "odd"
    include_edge = mode == "symmetric"
    eo = 1 if include_edge else 0
    left, right = pair
    while left > 0 or right > 0:
        length = shape_of(x)[axis]
        if include_edge:
            old_length = length // period * period
        else:
            old_length = (length - 1) // (period - 1) * (period - 1)
        parts = [x]
        if left > 0:
            chunk_length = min(old_length, left)
            chunk = _reversed(x, axis, 1 - eo, chunk_length + 1 - eo)
            if odd:
                chunk = _odd(chunk, _part(x, axis, 0, 1))
            parts.insert(0, chunk)
            left -= chunk_length
        if right > 0:
            chunk_length = min(old_length, right)
            chunk = _reversed(x, axis, length - 1 + eo - chunk_length, length - 1 + eo)
            if odd:
                chunk = _odd(chunk, _part(x, axis, length - 1, length))
            parts.append(chunk)
            right -= chunk_length
        x = _join([cast(p, dtype_of(x)) for p in parts], axis)
    return x


def _wrap(x, axis, pair, mode, kwargs):
    """NumPy's `_set_wrap_both` until both sides are filled: each round copies at most a whole
    number of periods from the other end."""
    original = shape_of(x)[axis]
    left, right = pair
    while left > 0 or right > 0:
        length = shape_of(x)[axis]
        period = length // original * original
        parts = [x]
        new_left = new_right = 0
        if left > 0:
            take = min(period, left)
            parts.insert(0, _part(x, axis, period - take, period))
            new_left = left - period if left > period else 0
        if right > 0:
            take = min(period, right)
            parts.append(_part(x, axis, length - period, length - period + take))
            new_right = right - period if right > period else 0
        x = _join(parts, axis)
        left, right = new_left, new_right
    return x


_MODES = {
    "edge": _edge,
    "linear_ramp": _linear_ramp,
    "maximum": _statistic,
    "minimum": _statistic,
    "mean": _statistic,
    "median": _statistic,
    "reflect": _reflect,
    "symmetric": _reflect,
    "wrap": _wrap,
}
