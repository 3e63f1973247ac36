"""Indexing with NumPy's semantics: `x[...]`, take, take_along_axis, diagonal, trace, tril, triu.

`getitem` parses a NumPy index once. Without index arrays it is basic indexing: one static
`slice` (negative steps included) and a `reshape` for ints and None. With index arrays (lists,
integer arrays, traced integers, boolean masks turned into `np.nonzero` arrays) it is one
`gather` whose params keep the index's structure, so NumPy decides every detail of the result.
"""

from __future__ import annotations

import operator

import numpy as np

from tracegrad.core import Boxed, Tracer
from tracegrad.errors import ConcretizationError, user_frame_location
from tracegrad.numpy._common import (
    as_array,
    asarray_or_tracer,
    cast,
    concrete_value,
    ndim_of,
    promotion_key,
    shape_of,
)
from tracegrad.primitives import broadcasting, slicing, views
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import indexing as ix
from tracegrad.primitives import shape as sp

__all__ = [
    "getitem",
    "take",
    "take_along_axis",
    "diagonal",
    "trace",
    "tril",
    "triu",
    "select",
    "choose",
    "compress",
    "extract",
]

_VALID = (
    "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
    "boolean arrays are valid indices"
)


def _mask_value(item, x_shape):
    """The concrete value of a boolean mask, or ConcretizationError under abstract tracing."""
    if isinstance(item, Boxed) and not isinstance(item, Tracer):
        return np.asarray(item._constant_value())
    if isinstance(item, Tracer):
        if item.val is None:
            raise ConcretizationError(
                f"boolean-mask indexing x[mask] with a traced mask of shape {item.shape} (on an "
                f"array of shape {tuple(x_shape)}) has a data-dependent result shape, so it needs "
                f"a concrete mask, but the mask is traced abstractly (under jit or make_graph), at "
                f"{user_frame_location()}.\nUse tracegrad.numpy.where(mask, x, 0) to keep the "
                "shape, or mark the mask's source static with static_argnums."
            )
        return np.asarray(item.val)
    return np.asarray(item)


def _as_index_item(item):
    """Classify one item: ("int", i), ("slice", s), ("none",), ("ellipsis",), ("array", a),
    ("mask", m)."""
    if item is None:
        return ("none",)
    if item is Ellipsis:
        return ("ellipsis",)
    if isinstance(item, slice):
        return ("slice", item)
    if isinstance(item, bool | np.bool_):
        return ("mask", item)
    if isinstance(item, int | np.integer):
        return ("int", int(item))
    if isinstance(item, Boxed):
        kind = item.dtype.kind
        if kind == "b":
            return ("mask", item)
        if kind in "iu":
            return ("array", item)
        raise IndexError(f"getitem: {_VALID}; got a traced {item.dtype.name} value")
    if isinstance(item, np.ndarray | list | tuple):
        arr = np.asarray(item)
        if arr.size == 0 and not isinstance(item, np.ndarray):
            arr = arr.astype(np.intp)  # NumPy reads an empty list as an empty integer index
        if arr.dtype.kind == "b":
            return ("mask", arr)
        if arr.dtype.kind in "iu":
            return ("array", arr)
        raise IndexError(
            f"getitem: arrays used as indices must be of integer (or boolean) type, "
            f"got {arr.dtype.name}"
        )
    if hasattr(item, "__index__"):
        return ("int", operator.index(item))
    raise IndexError(f"getitem: {_VALID}; got {type(item).__name__}")


def _check_bounds(arr: np.ndarray, axis: int, size: int, x_shape):
    if arr.size == 0:
        return
    bad = (arr >= size) | (arr < -size)
    if bad.any():
        i = int(arr[bad].flat[0])
        raise IndexError(
            f"getitem: index {i} is out of bounds for axis {axis} with size {size} "
            f"(array of shape {tuple(x_shape)})"
        )


def parse_index(x_shape, index):
    """(items, arrays) of `x[index]`: `items` in the form of `indexing.index_tuple`.

    Ellipsis stays an item (NumPy treats it as a separator of advanced indices even when it
    covers no axis); ints and slices are normalized and checked against their axes; boolean
    masks become `np.nonzero` arrays; constant index arrays are bounds-checked here.
    """
    x_shape = tuple(x_shape)
    if not isinstance(index, tuple):
        index = (index,)
    raw = [_as_index_item(i) for i in index]
    if sum(1 for r in raw if r[0] == "ellipsis") > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    used = 0
    for r in raw:
        if r[0] in ("int", "slice", "array"):
            used += 1
        elif r[0] == "mask":
            used += ndim_of(r[1])
    if used > len(x_shape):
        raise IndexError(
            f"getitem: too many indices for array: array is {len(x_shape)}-"
            f"dimensional (shape {x_shape}), but {used} were indexed"
        )
    items: list = []
    arrays: list = []
    axis = 0
    for r in raw:
        kind = r[0]
        if kind == "none":
            items.append("newaxis")
        elif kind == "ellipsis":
            items.append("...")
            axis += len(x_shape) - used
        elif kind == "int":
            i, d = r[1], x_shape[axis]
            if not -d <= i < d:
                raise IndexError(
                    f"getitem: index {i} is out of bounds for axis {axis} with size "
                    f"{d} (array of shape {x_shape})"
                )
            items.append(i % d)
            axis += 1
        elif kind == "slice":
            canon, _ = slicing.canonical_slice(*r[1].indices(x_shape[axis]))
            items.append(("slice",) + canon)
            axis += 1
        elif kind == "array":
            a = r[1]
            if isinstance(a, np.ndarray):
                _check_bounds(a, axis, x_shape[axis], x_shape)
            items.append("array")
            arrays.append(a)
            axis += 1
        else:  # a boolean mask
            m = _mask_value(r[1], x_shape)
            if m.ndim == 0:
                items.append(("bool", bool(m)))
                continue
            for j, md in enumerate(m.shape):
                if md != x_shape[axis + j]:
                    raise IndexError(
                        f"getitem: boolean index did not match indexed array along axis "
                        f"{axis + j}; size of axis is {x_shape[axis + j]} but size of "
                        f"corresponding boolean axis is {md}"
                    )
            for nz in np.nonzero(m):
                items.append("array")
                arrays.append(nz)
            axis += m.ndim
    return tuple(items), arrays


def getitem(x, index):
    """`x[index]` with NumPy's full semantics (basic and advanced indexing)."""
    x = asarray_or_tracer(x)
    x_shape = shape_of(x)
    items, arrays = parse_index(x_shape, index)
    if arrays or any(isinstance(i, tuple) and i[0] == "bool" for i in items):
        return ix.gather(x, *arrays, index=items)
    return _basic(x, x_shape, items)


def _basic(x, x_shape, items):
    # one static slice over every axis, then a reshape that drops int axes and adds None axes
    bounds: list[tuple[int, int, int]] = []
    out_shape: list[int] = []
    used = sum(1 for i in items if i not in ("newaxis", "..."))
    for item in items:
        if item == "newaxis":
            out_shape.append(1)
        elif item == "...":
            covered = x_shape[len(bounds) : len(bounds) + len(x_shape) - used]
            bounds.extend((0, d, 1) for d in covered)
            out_shape.extend(covered)
        elif isinstance(item, int):
            bounds.append((item, item + 1, 1))
        else:
            bounds.append(item[1:])
            out_shape.append(len(range(*item[1:])))
    rest = x_shape[len(bounds) :]
    bounds.extend((0, d, 1) for d in rest)
    out_shape.extend(rest)
    sliced = tuple(len(range(*b)) for b in bounds)
    if any(b != (0, d, 1) for b, d in zip(bounds, x_shape)):
        x = slicing.slice_static(x, *zip(*bounds)) if bounds else x
    if tuple(out_shape) != sliced:
        x = views.reshape(x, out_shape)
    return x


def _index_array(indices):
    if isinstance(indices, Boxed) or isinstance(indices, int | np.integer):
        return indices
    arr = np.asarray(indices)
    # np.take converts indices to intp, so an empty list (float64 to asarray) is an empty index
    return arr.astype(np.intp) if arr.size == 0 and arr.dtype.kind == "f" else arr


def take(a, indices, axis=None, out=None, mode="raise"):
    """`np.take`: `a[(:,) * axis + (indices,)]`, or `a.ravel()[indices]` when axis is None."""
    if out is not None:
        raise NotImplementedError("tracegrad.numpy.take: out= is not supported")
    if mode != "raise":
        raise NotImplementedError(
            f"tracegrad.numpy.take: mode={mode!r} is not supported; only mode='raise'"
        )
    a = asarray_or_tracer(a)
    indices = _index_array(indices)
    if axis is None:
        a = views.reshape(a, (int(np.prod(shape_of(a))),))
        axis = 0
    n = ndim_of(a)
    if not -n <= axis < n:
        raise np.exceptions.AxisError(
            f"take: axis {axis} is out of bounds for an array of dimension {n}"
        )
    # np.take returns a C-ordered copy, x[:, idx] may not: the layout decides the summation
    # order of a later reduction, so the bits.
    out = getitem(a, (slice(None),) * (axis % n) + (indices,))
    return sp.ascontiguousarray(out) if ndim_of(out) >= 2 else out


def take_along_axis(arr, indices, axis=-1):
    """`np.take_along_axis`: the same fancy index of orthogonal aranges NumPy builds."""
    arr = asarray_or_tracer(arr)
    indices = _index_array(indices)
    dtype = indices.dtype if hasattr(indices, "dtype") else np.asarray(indices).dtype
    if np.dtype(dtype).kind not in "iu":
        raise IndexError("take_along_axis: `indices` must be an integer array")
    if axis is None:
        if ndim_of(indices) != 1:
            raise ValueError(
                "take_along_axis: when axis=None, `indices` must have a single "
                f"dimension, got shape {shape_of(indices)}"
            )
        arr = views.reshape(arr, (int(np.prod(shape_of(arr))),))
        axis = 0
    shape = shape_of(arr)
    n = len(shape)
    if ndim_of(indices) != n:
        raise ValueError(
            f"take_along_axis: `indices` and `arr` must have the same number of "
            f"dimensions, got shapes {shape_of(indices)} and {shape}"
        )
    if not -n <= axis < n:
        raise np.exceptions.AxisError(
            f"take_along_axis: axis {axis} is out of bounds for an array of dimension {n}"
        )
    axis %= n
    fancy = []
    for dim, d in enumerate(shape):
        if dim == axis:
            fancy.append(indices)
        else:
            fancy.append(np.arange(d).reshape((1,) * dim + (-1,) + (1,) * (n - dim - 1)))
    return getitem(arr, tuple(fancy))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """`np.diagonal`: the diagonal becomes the last axis (a gather, not a view)."""
    a = asarray_or_tracer(a)
    shape = shape_of(a)
    n = len(shape)
    if n < 2:
        raise ValueError(
            f"diagonal: requires an array of at least two dimensions, got shape {shape}"
        )
    for ax in (axis1, axis2):
        if not -n <= ax < n:
            raise np.exceptions.AxisError(
                f"diagonal: axis {ax} is out of bounds for an array of dimension {n}"
            )
    axis1, axis2 = axis1 % n, axis2 % n
    if axis1 == axis2:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same (both {axis1})")
    rest = [i for i in range(n) if i not in (axis1, axis2)]
    perm = tuple(rest) + (axis1, axis2)
    if perm != tuple(range(n)):
        a = views.transpose(a, perm)
    d1, d2 = shape[axis1], shape[axis2]
    r0, c0 = max(-offset, 0), max(offset, 0)
    size = max(0, min(d1 - r0, d2 - c0))
    rows = np.arange(size) + r0
    cols = np.arange(size) + c0
    d = ix.gather(a, rows, cols, index=("...", "array", "array"))
    # NumPy's diagonal is a view: in memory its axis sits where the first of the two axes was
    # (before the axes that followed it), and a reduction over it (np.trace) sums in memory
    # order. The gather puts the diagonal outermost in memory; when an axis precedes the pair
    # the orders differ, so copy the values into the view's order (same values, NumPy's sums).
    before, k = len([i for i in rest if i < min(axis1, axis2)]), len(rest)
    if before:
        order = tuple(range(before)) + (k,) + tuple(range(before, k))
        back = tuple(range(before)) + tuple(range(before + 1, k + 1)) + (before,)
        d = views.transpose(sp.ascontiguousarray(views.transpose(d, order)), back)
    return d


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """`np.trace`: the sum of `diagonal` over its last axis (how NumPy computes it)."""
    if dtype is not None or out is not None:
        raise NotImplementedError("tracegrad.numpy.trace: dtype= and out= are not supported")
    d = diagonal(a, offset, axis1, axis2)
    return broadcasting.sum(d, (ndim_of(d) - 1,))


def tril(m, k=0):
    """`np.tril`: `where(tri(M, N, k), m, 0)`, with NumPy's own constant mask."""
    m = asarray_or_tracer(m)
    mask = np.tri(*shape_of(m)[-2:], k=k, dtype=bool)
    return ew.where(mask, m, np.zeros(1, m.dtype))


def triu(m, k=0):
    """`np.triu`: `where(tri(M, N, k - 1), 0, m)`, with NumPy's own constant mask."""
    m = asarray_or_tracer(m)
    mask = np.tri(*shape_of(m)[-2:], k=k - 1, dtype=bool)
    return ew.where(mask, np.zeros(1, m.dtype), m)


# -- choosing by conditions and masks ---------------------------------------------------------


def select(condlist, choicelist, default=0):
    """`np.select`, as NumPy computes it: the default, overwritten by each choice where its
    condition holds, from the last to the first (the first true condition wins); the
    derivative flows to the choice that was picked."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    weak = (int, float, complex)
    choices = [c if type(c) in weak else asarray_or_tracer(c) for c in choicelist]
    default = default if type(default) in weak else asarray_or_tracer(default)
    try:
        dtype = np.result_type(*(promotion_key(c) for c in [*choices, default]))
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    conds = [as_array(c) for c in condlist]
    for i, c in enumerate(conds):
        if promotion_key(c) != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = np.broadcast_shapes(*(shape_of(c) for c in [*conds, *choices, default]))
    result = broadcasting.broadcast_to(cast(default, dtype), shape)
    for choice, cond in zip(choices[::-1], conds[::-1]):
        result = ew.where(cond, cast(choice, dtype), result)
    return result


def choose(a, choices, out=None, mode="raise"):
    """`np.choose`: `choices[a[i]][i]` with `a` and the choices broadcast together (a gather
    from the stacked choices; the derivative flows to the chosen entries). An index out of
    range raises ValueError when its values are known; a traced index under jit or vmap cannot
    be checked, and there a negative one counts from the end, as in Python indexing."""
    if out is not None:
        raise NotImplementedError("tracegrad.numpy.choose: out= is not supported")
    if mode != "raise":
        raise NotImplementedError(
            f"tracegrad.numpy.choose: mode={mode!r} is not supported; only mode='raise'"
        )
    index = asarray_or_tracer(a)
    choices = [asarray_or_tracer(c) for c in choices]
    shape = np.broadcast_shapes(shape_of(index), *(shape_of(c) for c in choices))
    dtype = np.result_type(*(promotion_key(c) for c in choices))
    stacked = _stack([broadcasting.broadcast_to(cast(c, dtype), shape) for c in choices])
    index = _index_array(index)
    if (
        isinstance(index, np.ndarray)
        and index.size
        and (index.min() < 0 or index.max() >= len(choices))
    ):
        raise ValueError("invalid entry in choice array")
    grid = np.indices(shape, sparse=True)
    return getitem(stacked, (broadcasting.broadcast_to(index, shape), *grid))


def _stack(arrays):
    return sp.concatenate([views.expand_dims(a, (0,)) for a in arrays], 0)


def compress(condition, a, axis=None, out=None):
    """`np.compress`: the slices of `a` along `axis` where `condition` (1-d) holds; the
    result's shape depends on the condition's values (concrete values only)."""
    if out is not None:
        raise NotImplementedError("tracegrad.numpy.compress: out= is not supported")
    cond = _condition_value(condition, "np.compress")
    if cond.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    a = asarray_or_tracer(a)
    if axis is None:
        a = views.reshape(a, (int(np.prod(shape_of(a))),))
        axis = 0
    n = shape_of(a)[axis]
    kept = np.flatnonzero(cond)
    if kept.size and kept[-1] >= n:  # NumPy allows a longer condition while it is False there
        raise IndexError(f"index {kept[-1]} is out of bounds for axis {axis} with size {n}")
    return take(a, kept, axis=axis)


def extract(condition, arr):
    """`np.extract`: the elements of `arr` where `condition` holds, both flattened (NumPy's
    `take(ravel(arr), nonzero(ravel(condition))[0])`)."""
    cond = _condition_value(condition, "np.extract").reshape(-1)
    a = asarray_or_tracer(arr)
    return take(a, np.flatnonzero(cond))


def _condition_value(condition, what: str) -> np.ndarray:
    """A condition whose values decide the result's shape: concrete, as a bool array."""
    value = concrete_value(
        asarray_or_tracer(condition),
        what,
        "Use tracegrad.numpy.where(condition, a, 0) to keep the shape.",
    )
    return value.astype(bool)
