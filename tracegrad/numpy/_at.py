"""Functional index updates, as JAX: `x.at[index].set(v)`, `.add`, `.subtract`, `.multiply`,
`.divide`, `.power`, `.min`, `.max` and `.get`.

Traced arrays are immutable (`x[i] = v` cannot be recorded), so an update returns a new
array: `y = x.at[i].set(v)` is NumPy's `y = x.copy(); y[i] = v`, and `.add(v)` is
`np.add.at(y, i, v)` (repeated indices accumulate), bit for bit. They work on tracers (`x.at`),
on the arrays `tracegrad.numpy`'s creation functions return (`tnp.zeros(3).at[0].set(v)`:
those are `tracegrad.numpy.ndarray`, a NumPy array subclass that only adds `.at`), and on
any array through the function `tnp.at(x)`. Updates are broadcast to the indexed shape and
cast to x's dtype, as in JAX.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import Boxed, Tracer, bind
from tracegrad.numpy._common import asarray_or_tracer, shape_of
from tracegrad.numpy._indexing import getitem, parse_index
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.indexing import index_tuple, indexed_shape
from tracegrad.primitives.scatter import scatter

__all__ = ["at", "ndarray"]


class _Ref:
    """`x.at[index]`: the updates that can be applied there (each returns a new array)."""

    __slots__ = ("_x", "_index")

    def __init__(self, x, index):
        self._x = x
        self._index = index

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        """`x[index]` (NumPy's indexing: out-of-bounds indices raise)."""
        _check_mode("get", mode, fill_value)
        return getitem(self._x, self._index)

    def set(self, values, **options):
        return self._update("set", values, options)

    def add(self, values, **options):
        return self._update("add", values, options)

    def subtract(self, values, **options):
        return self._update("add", ew.negative(asarray_or_tracer(values)), options)

    def multiply(self, values, **options):
        return self._update("multiply", values, options)

    mul = multiply

    def divide(self, values, **options):
        if np.dtype(self._x.dtype).kind not in "fc":
            raise TypeError(
                f"x.at[...].divide() on an {np.dtype(self._x.dtype).name} array: the quotient "
                "would be cast back to integers; convert x with .astype(float) first"
            )
        # JAX's definition: x divided by the product of the updates at each position (one
        # update: x / v, the bits of np.divide.at)
        factors = _Ref(np.ones(shape_of(self._x), self._x.dtype), self._index)
        return bind(ew.divide_p, self._x, factors._update("multiply", values, options))

    def power(self, values, **options):
        current = self.get()
        return self.set(ew.power(current, asarray_or_tracer(values)), **options)

    def min(self, values, **options):
        return self._update("min", values, options)

    def max(self, values, **options):
        return self._update("max", values, options)

    def _update(self, mode: str, values, options: dict):
        unique_indices = bool(options.pop("unique_indices", False))
        options.pop("indices_are_sorted", None)
        _check_mode(mode, options.pop("mode", None), None)
        if options:
            raise TypeError(
                f"x.at[...].{mode}() got unexpected keyword arguments {sorted(options)}"
            )
        x = asarray_or_tracer(self._x)
        if not isinstance(x, Boxed):
            x = np.asarray(x)
        x_shape = shape_of(x)
        items, arrays = parse_index(x_shape, self._index)
        selected = indexed_shape("scatter", x_shape, items, [shape_of(a) for a in arrays])
        values = asarray_or_tracer(values)
        if getattr(values, "dtype", None) != x.dtype:  # Python scalars too: cast as JAX does
            values = ew.astype(values, x.dtype)
        if tuple(shape_of(values)) != tuple(selected):
            values = broadcast_to(values, selected)
        unique = unique_indices or _known_unique(x_shape, items, arrays)
        return scatter(x, values, *arrays, index=items, mode=mode, unique=unique)


class _Helper:
    """`x.at`: indexed by `[index]`."""

    __slots__ = ("_x",)

    def __init__(self, x):
        self._x = x

    def __getitem__(self, index) -> _Ref:
        return _Ref(self._x, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self._x!r})"


def at(x) -> _Helper:
    """`x.at` for any array or tracer: `tnp.at(x)[index].set(v)`."""
    return _Helper(x)


class ndarray(np.ndarray):  # noqa: N801 - the name NumPy users know
    """A NumPy array with JAX's `.at[index]` updates; otherwise exactly `numpy.ndarray`."""

    @property
    def at(self) -> _Helper:
        return _Helper(np.asarray(self))


def _known_unique(x_shape, items, arrays) -> bool:
    """Whether the index selects each position at most once, when that is known now: basic
    indexing always does; index arrays only if their values are known (NumPy arrays, or
    tracers under concrete tracing)."""
    if not arrays:
        return True
    values = []
    for a in arrays:
        while isinstance(a, Tracer):
            a = a.val
        if a is None:
            return False
        values.append(np.asarray(a._constant_value() if isinstance(a, Boxed) else a))
    positions = np.arange(int(np.prod(x_shape, dtype=np.int64))).reshape(x_shape)
    chosen = positions[index_tuple(items, values)]
    return np.unique(chosen).size == chosen.size


def _check_mode(op, mode, fill_value):
    if mode not in (None, "promise_in_bounds") or fill_value is not None:
        raise NotImplementedError(
            f"x.at[...].{op}(mode={mode!r}, fill_value={fill_value!r}): tracegrad follows NumPy "
            "here, where an out-of-bounds index raises IndexError; clip the indices first "
            "(np.clip) for JAX's clamping"
        )
