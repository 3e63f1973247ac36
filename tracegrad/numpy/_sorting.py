"""Sorting, searching and counting with NumPy's signatures: sort, argsort, partition,
argpartition, searchsorted, lexsort, nonzero, flatnonzero, argwhere, count_nonzero, and the
one-argument `where`.

NumPy's argument checks run on stand-in arrays (so the messages are NumPy's); value-dependent
shapes need concrete values, or JAX's `size=` under jit and vmap. Set routines are in
`_unique.py`, order statistics in `_quantiles.py`.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from tracegrad.core import Boxed
from tracegrad.ir.types import dtype_of
from tracegrad.numpy import _elementwise as _ew
from tracegrad.numpy import _indexing as _ix
from tracegrad.numpy import _reductions as _red
from tracegrad.numpy import _shape as _sh
from tracegrad.numpy._common import as_array, concrete_value, known_value, ndim_of, shape_of
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
    "where",
]


def _stand_in(a) -> np.ndarray:
    """A zero-cost array of `a`'s shape and dtype, for running NumPy's argument checks."""
    return np.broadcast_to(np.zeros((), dtype_of(a)), shape_of(a))


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
    x, axis = _flat_or_axis("sort", as_array(a), axis)
    return so.sort(x, axis, stable)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """`np.argsort`: intp indices, no derivative."""
    _reject("argsort", order=order is not None)
    stable = _stable("argsort", kind, stable)
    x, axis = _flat_or_axis("argsort", as_array(a), axis)
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
    x, axis = _flat_or_axis("partition", as_array(a), axis)
    return so.partition(x, _kth("partition", x, kth, axis), axis)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """`np.argpartition`: intp indices, no derivative."""
    _reject("argpartition", order=order is not None)
    if kind != "introselect":
        raise ValueError(f"argpartition: kind must be 'introselect', got {kind!r}")
    x, axis = _flat_or_axis("argpartition", as_array(a), axis)
    return so.argpartition(x, _kth("argpartition", x, kth, axis), axis)


# -- searchsorted, lexsort --------------------------------------------------------------------


def searchsorted(a, v, side="left", sorter=None):
    """`np.searchsorted` (no derivative); `sorter` reads `a` through it first."""
    a, v = as_array(a), as_array(v)
    stand_sorter = None if sorter is None else np.arange(shape_of(a)[0] if ndim_of(a) else 0)
    np.searchsorted(_stand_in(a), _stand_in(v), side=side, sorter=stand_sorter)
    if sorter is not None:
        s = known_value(sorter)
        if s is not None:  # NumPy's checks of the values
            np.searchsorted(_stand_in(a), _stand_in(v), side=side, sorter=s)
        a = _ix.take(a, sorter)
    return so.searchsorted(a, v, right=side[:1].lower() == "r")


def lexsort(keys, axis=-1):
    """`np.lexsort`: the last key is the primary one; intp indices, no derivative."""
    if isinstance(keys, Boxed | np.ndarray):
        keys = [keys[i] for i in range(shape_of(keys)[0])] if ndim_of(keys) else [keys]
    keys = [as_array(k) for k in keys]
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
    a = as_array(a)
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
    flat = _sh.ravel(as_array(a))
    if size is None:
        value = concrete_value(flat, "the shape of np.flatnonzero(x)", _size_hint("flatnonzero"))
        return np.flatnonzero(value)
    return nonzero(flat, size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """`np.argwhere`: the nonzero indices as rows (JAX's `size=` too)."""
    a = as_array(a)
    if size is None:
        value = concrete_value(a, "the shape of np.argwhere(x)", _size_hint("argwhere"))
        return np.argwhere(value)
    if ndim_of(a) == 0:
        rows = nonzero(_sh.reshape(a, (1,)), size=size, fill_value=fill_value)
        return _ix.getitem(_sh.stack(rows, axis=1), (slice(None), slice(0, 0)))
    return _sh.stack(nonzero(a, size=size, fill_value=fill_value), axis=1)


def count_nonzero(a, axis=None, *, keepdims=False):
    """`np.count_nonzero`: a bool cast summed as intp (no derivative)."""
    a = as_array(a)
    as_bool = _ew.astype(a, np.bool_) if dtype_of(a) != np.bool_ else a
    return _red.sum(as_bool, axis=axis, dtype=np.intp, keepdims=keepdims)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """`np.where`: with three arguments, x where the condition holds and y elsewhere (the
    derivative flows to the one chosen); with one, `np.nonzero(condition)`, whose shape depends
    on the values (JAX's `size=`/`fill_value=` make it work under jit and vmap)."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    if size is not None or fill_value is not None:
        raise TypeError("where: size= and fill_value= belong to the one-argument form")
    return _ew.where(condition, x, y)
