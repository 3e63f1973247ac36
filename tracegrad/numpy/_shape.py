"""Shape functions with NumPy's signatures: reshape, transpose, concatenate, stack, split, ...

Each normalizes its arguments the way NumPy does and lowers to the shape primitives; NumPy
functions that are compositions (stack, hstack, roll, rot90, moveaxis, ...) are built from
the same steps NumPy takes, so the values, dtypes and shapes match NumPy bit for bit.

Over 500 lines: NumPy's shape functions, one short wrapper each (some fifty), sharing the
axis and shape normalization; split further the parts would have no subject but the alphabet
(`pad`, with its modes, has a module of its own: `_pad.py`).
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from tracegrad.core import Boxed
from tracegrad.numpy._common import asarray_or_tracer, ndim_of, shape_of
from tracegrad.numpy._pad import pad  # every mode of np.pad: a module of its own
from tracegrad.primitives import broadcasting, slicing, views
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import shape as sp

# fmt: off
__all__ = [
    "ascontiguousarray", "reshape", "transpose", "broadcast_to", "shape", "ndim", "size",
    "expand_dims", "squeeze", "concatenate", "concat", "stack", "hstack", "vstack", "dstack",
    "column_stack", "row_stack", "unstack", "split", "array_split", "hsplit", "vsplit",
    "dsplit", "flip", "fliplr", "flipud", "repeat", "tile", "pad", "moveaxis", "swapaxes",
    "rollaxis", "permute_dims", "matrix_transpose", "ravel", "atleast_1d", "atleast_2d",
    "atleast_3d", "broadcast_arrays", "roll", "rot90",
]
# fmt: on


def _array(x):
    """Like np.asanyarray: tracers as they are, anything else (Python scalars too) an array."""
    return x if isinstance(x, Boxed) else np.asarray(x)


def _axis(axis, ndim: int, op: str) -> int:
    try:
        return normalize_axis_index(operator.index(axis), ndim)
    except np.exceptions.AxisError:
        raise np.exceptions.AxisError(
            f"{op}: axis {axis} is out of bounds for an array of dimension {ndim}"
        ) from None


def _axis_tuple(axis, ndim: int, op: str) -> tuple[int, ...]:
    """`axis` (int or sequence) as non-negative axes, in the order given, none repeated."""
    axes = tuple(_axis(a, ndim, op) for a in (axis if np.ndim(axis) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axis in {axis}")
    return axes


def _static_ints(value, op: str, what: str):
    if isinstance(value, Boxed):
        raise NotImplementedError(
            f"tracegrad.numpy.{op}: a traced `{what}` is not supported (the result's shape "
            "would depend on values); pass Python ints"
        )
    return value


# -- reshape, transpose, broadcast ------------------------------------------------------------


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise NotImplementedError("tracegrad.numpy.reshape: only order='C' is supported")
    shape = newshape if shape is None else shape
    a = asarray_or_tracer(a)
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(int(d) for d in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: can only specify one unknown dimension, got {shape}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        total = math.prod(shape_of(a))
        if known == 0 or total % known:
            raise ValueError(
                f"reshape: cannot reshape an array of shape {shape_of(a)} ({total} elements) "
                f"into shape {shape}: no size of the -1 axis fits; the new shape must have "
                "the same number of elements"
            )
        shape = tuple(total // known if d == -1 else d for d in shape)
    return views.reshape(a, shape)


def transpose(a, axes=None):
    a = asarray_or_tracer(a)
    n = ndim_of(a)
    if axes is None:
        axes = tuple(range(n))[::-1]
    else:
        axes = tuple(axes)
        if len(axes) != n:
            raise ValueError(
                f"transpose: axes {axes} do not match an array of shape {shape_of(a)}; give "
                f"a permutation of its {n} axes"
            )
        axes = _axis_tuple(axes, n, "transpose")
    return views.transpose(a, axes)


permute_dims = transpose  # NumPy's alias: np.permute_dims is np.transpose


def matrix_transpose(x, /):
    if ndim_of(x) < 2:
        raise ValueError(f"matrix_transpose: input must be at least 2-d, got shape {shape_of(x)}")
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    a = _array(a)
    n = ndim_of(a)
    axis1, axis2 = _axis(axis1, n, "swapaxes"), _axis(axis2, n, "swapaxes")
    perm = list(range(n))
    perm[axis1], perm[axis2] = axis2, axis1
    return views.transpose(a, perm)


def moveaxis(a, source, destination):
    a = _array(a)
    n = ndim_of(a)
    source = _axis_tuple(source, n, "moveaxis")
    destination = _axis_tuple(destination, n, "moveaxis")
    if len(source) != len(destination):
        raise ValueError(
            f"moveaxis: `source` {source} and `destination` {destination} must have the same "
            "number of elements"
        )
    order = [k for k in range(n) if k not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return views.transpose(a, order)


def rollaxis(a, axis, start=0):
    a = _array(a)
    n = ndim_of(a)
    axis = _axis(axis, n, "rollaxis")
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(
            f"rollaxis: 'start' arg requires {-n} <= start < {n + 1}, but {start} was passed in"
        )
    if axis < start:
        start -= 1
    if axis == start:
        return a
    order = list(range(n))
    order.remove(axis)
    order.insert(start, axis)
    return views.transpose(a, order)


def broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    return broadcasting.broadcast_to(asarray_or_tracer(array), shape)


def broadcast_arrays(*args, subok=False):
    args = [_array(a) for a in args]
    target = broadcasting.broadcast_shapes("broadcast_arrays", *(shape_of(a) for a in args))
    return tuple(a if shape_of(a) == target else broadcasting.broadcast_to(a, target) for a in args)


def shape(a):
    return shape_of(a)


def ndim(a):
    return ndim_of(a)


def size(a, axis=None):
    s = shape_of(a)
    return math.prod(s) if axis is None else s[axis]


def ravel(a, order="C"):
    if order != "C":
        raise NotImplementedError(
            f"tracegrad.numpy.ravel: order={order!r} is not supported; traced arrays have "
            "only C order"
        )
    a = _array(a)
    # np.ravel copies a non-contiguous input into C order (a reshape may keep a strided view);
    # the layout decides the summation order of later reductions, so the bits
    flat = views.reshape(a, (math.prod(shape_of(a)),))
    return sp.ascontiguousarray(flat)


# -- expand_dims, squeeze, atleast_nd ---------------------------------------------------------


def expand_dims(a, axis):
    a = _array(a)
    axis = axis if isinstance(axis, tuple | list) else (axis,)
    return views.expand_dims(a, sorted(_axis_tuple(axis, ndim_of(a) + len(axis), "expand_dims")))


def squeeze(a, axis=None):
    a = _array(a)
    s = shape_of(a)
    if axis is None:
        axis = tuple(i for i, d in enumerate(s) if d == 1)
    else:
        axis = tuple(sorted(_axis_tuple(axis, len(s), "squeeze")))
    return views.squeeze(a, axis)


def _atleast(arys, fix):
    res = tuple(fix(_array(a)) for a in arys)
    return res[0] if len(res) == 1 else res


def atleast_1d(*arys):
    return _atleast(arys, lambda a: views.reshape(a, (1,)) if ndim_of(a) == 0 else a)


def _fix_2d(a):
    n = ndim_of(a)
    return views.reshape(a, (1, 1)) if n == 0 else views.expand_dims(a, (0,)) if n == 1 else a


def atleast_2d(*arys):
    return _atleast(arys, _fix_2d)


def _fix_3d(a):
    n = ndim_of(a)
    if n == 0:
        return views.reshape(a, (1, 1, 1))
    if n == 1:
        return views.expand_dims(a, (0, 2))
    if n == 2:
        return views.expand_dims(a, (2,))
    return a


def atleast_3d(*arys):
    return _atleast(arys, _fix_3d)


# -- joining ----------------------------------------------------------------------------------


def _cast_all(arrays, dtype, casting, op):
    if casting != "same_kind":
        raise NotImplementedError(
            f"tracegrad.numpy.{op}: casting={casting!r} is not supported (only 'same_kind')"
        )
    if dtype is None:
        return arrays
    dtype = np.dtype(dtype)
    out = []
    for a in arrays:
        if not np.can_cast(a.dtype, dtype, casting):
            raise TypeError(
                f"{op}: cannot cast an array of dtype {a.dtype} to {dtype} with casting='{casting}'"
            )
        out.append(a if a.dtype == dtype else ew.astype(a, dtype))
    return out


def _check_out(out, op):
    if out is not None:
        raise NotImplementedError(
            f"tracegrad.numpy.{op}: out= is not supported (traced arrays are immutable)"
        )


def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _check_out(out, "concatenate")
    arrays = [_array(a) for a in arrays]
    if not arrays:
        raise ValueError("concatenate: need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    elif any(ndim_of(a) == 0 for a in arrays):
        raise ValueError(
            "concatenate: zero-dimensional arrays cannot be concatenated; use stack, or "
            "atleast_1d first"
        )
    else:
        axis = _axis(axis, ndim_of(arrays[0]), "concatenate")
    return sp.concatenate(_cast_all(arrays, dtype, casting, "concatenate"), axis)


concat = concatenate


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _check_out(out, "stack")
    arrays = [_array(a) for a in arrays]
    if not arrays:
        raise ValueError("stack: need at least one array to stack")
    shapes = {shape_of(a) for a in arrays}
    if len(shapes) != 1:
        shown = " and ".join(str(s) for s in sorted(shapes))
        raise ValueError(
            f"stack: all input arrays must have the same shape, got shapes {shown}; "
            "use concatenate to join arrays of different lengths"
        )
    axis = _axis(axis, ndim_of(arrays[0]) + 1, "stack")
    # np.stack is expand_dims then concatenate: the same steps give the same bits
    expanded = [views.expand_dims(a, (axis,)) for a in arrays]
    return sp.concatenate(_cast_all(expanded, dtype, casting, "stack"), axis)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = _as_tuple(atleast_1d(*tup))
    axis = 0 if arrs and ndim_of(arrs[0]) == 1 else 1
    return concatenate(arrs, axis, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate(_as_tuple(atleast_2d(*tup)), 0, dtype=dtype, casting=casting)


def row_stack(tup, *, dtype=None, casting="same_kind"):
    """`np.row_stack`, deprecated in NumPy 2.0 as an alias of vstack (with NumPy's warning)."""
    warnings.warn(
        "`row_stack` alias is deprecated. Use `np.vstack` directly.", DeprecationWarning, 2
    )
    return vstack(tup, dtype=dtype, casting=casting)


def dstack(tup):
    return concatenate(_as_tuple(atleast_3d(*tup)), 2)


def column_stack(tup):
    arrays = []
    for v in tup:
        a = _array(v)
        if ndim_of(a) < 2:  # NumPy: array(a, ndmin=2).T, a column
            a = views.reshape(a, (math.prod(shape_of(a)), 1))
        arrays.append(a)
    return concatenate(arrays, 1)


def unstack(x, /, *, axis=0):
    x = _array(x)
    if ndim_of(x) == 0:
        raise ValueError("unstack: input must be at least 1-d, got a 0-d array")
    axis = _axis(axis, ndim_of(x), "unstack")
    n = shape_of(x)[axis]
    return tuple(
        views.squeeze(p, (axis,)) for p in _pieces(x, [(i, i + 1) for i in range(n)], axis)
    )


# -- splitting --------------------------------------------------------------------------------


def _pieces(x, bounds, axis):
    """The pieces x[start:stop] along `axis` for already-normalized (start, stop) pairs."""
    n = shape_of(x)[axis]
    contiguous = (
        bounds
        and bounds[0][0] == 0
        and bounds[-1][1] == n
        and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    )
    if contiguous:
        return list(sp.split(x, [stop for _, stop in bounds[:-1]], axis))
    # overlapping or out-of-order pieces (np.split accepts any indices): one slice each
    s = shape_of(x)
    out = []
    for start, stop in bounds:
        starts = tuple(start if k == axis else 0 for k in range(len(s)))
        limits = tuple(stop if k == axis else d for k, d in enumerate(s))
        out.append(slicing.slice_static(x, starts, limits))
    return out


def array_split(ary, indices_or_sections, axis=0):
    ary = _array(ary)
    s = shape_of(ary)
    if not s:
        raise ValueError("array_split: cannot split a 0-d array; it has no axis to cut")
    axis = _axis(axis, len(s), "array_split")
    n = s[axis]
    indices_or_sections = _static_ints(indices_or_sections, "array_split", "indices_or_sections")
    try:
        cuts = [operator.index(i) for i in indices_or_sections]
    except TypeError:  # an int: that many sections, the first ones one longer
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError(
                f"array_split: the number of sections must be larger than 0, got {sections}"
            ) from None
        each, extras = divmod(n, sections)
        sizes = [each + 1] * extras + [each] * (sections - extras)
        points = np.cumsum([0] + sizes).tolist()
    else:
        points = [0] + cuts + [n]
    bounds = []
    for start, stop in zip(points, points[1:]):
        start, stop, _ = slice(start, stop).indices(n)
        bounds.append((start, max(start, stop)))
    return _pieces(ary, bounds, axis)


def split(ary, indices_or_sections, axis=0):
    ary = _array(ary)
    s = shape_of(ary)
    if not isinstance(indices_or_sections, Boxed) and np.ndim(indices_or_sections) == 0:
        sections = operator.index(indices_or_sections)
        axis_ = _axis(axis, len(s), "split") if s else axis
        if s and sections > 0 and s[axis_] % sections:
            raise ValueError(
                f"split: axis {axis_} of an array of shape {s} (size {s[axis_]}) cannot be "
                f"split into {sections} equal sections; use array_split for unequal pieces, "
                "or give the cut indices"
            )
    return array_split(ary, indices_or_sections, axis)


def hsplit(ary, indices_or_sections):
    n = ndim_of(ary)
    if n == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return split(ary, indices_or_sections, 1 if n > 1 else 0)


def vsplit(ary, indices_or_sections):
    if ndim_of(ary) < 2:
        raise ValueError(
            f"vsplit only works on arrays of 2 or more dimensions, got shape {shape_of(ary)}"
        )
    return split(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    if ndim_of(ary) < 3:
        raise ValueError(
            f"dsplit only works on arrays of 3 or more dimensions, got shape {shape_of(ary)}"
        )
    return split(ary, indices_or_sections, 2)


# -- flip, roll, rot90 ------------------------------------------------------------------------


def flip(m, axis=None):
    m = _array(m)
    n = ndim_of(m)
    axis = tuple(range(n)) if axis is None else tuple(sorted(_axis_tuple(axis, n, "flip")))
    return views.flip(m, axis)


def fliplr(m):
    m = _array(m)
    if ndim_of(m) < 2:
        raise ValueError(f"fliplr: input must be >= 2-d, got shape {shape_of(m)}")
    return views.flip(m, (1,))


def flipud(m):
    m = _array(m)
    if ndim_of(m) < 1:
        raise ValueError("flipud: input must be >= 1-d, got a 0-d array")
    return views.flip(m, (0,))


def roll(a, shift, axis=None):
    a = _array(a)
    shift = _static_ints(shift, "roll", "shift")
    if axis is None:
        return views.reshape(roll(ravel(a), shift, 0), shape_of(a))
    s = shape_of(a)
    # repeated axes are allowed: their shifts add up
    if np.ndim(axis):
        axis = [_axis(ax, len(s), "roll") for ax in axis]
    else:
        axis = _axis(axis, len(s), "roll")
    pairs = np.broadcast(shift, axis)
    if pairs.ndim > 1:
        raise ValueError("roll: 'shift' and 'axis' should be scalars or 1-d sequences")
    offsets = dict.fromkeys(range(len(s)), 0)
    for sh, ax in pairs:
        offsets[int(ax)] += int(sh)
    for ax, offset in offsets.items():
        n = s[ax]
        offset %= n or 1
        if offset:  # the last `offset` elements move to the front
            head, tail = _pieces(a, [(n - offset, n), (0, n - offset)], ax)
            a = sp.concatenate([head, tail], ax)
    return a


def rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes {axes}")
    m = _array(m)
    n = ndim_of(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == n:
        raise ValueError(f"rot90: axes must be different, got axes {axes}")
    if not all(-n <= a < n for a in axes):
        raise ValueError(f"rot90: axes {axes} out of range for an array of dimension {n}")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(n))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return views.transpose(flip(m, axes[1]), perm)
    return flip(views.transpose(m, perm), axes[1])


# -- repeat, tile -----------------------------------------------------------------------------


def repeat(a, repeats, axis=None):
    a = _array(a)
    repeats = _static_ints(repeats, "repeat", "repeats")
    if axis is None:
        a = ravel(a)
        axis = 0
    else:
        axis = _axis(axis, ndim_of(a), "repeat")
    r = np.asarray(repeats)
    if r.size == 0:  # [] is float64 to NumPy, and a valid count list for an empty axis
        r = r.astype(np.intp)
    if r.dtype.kind not in "iub":
        raise TypeError(f"repeat: repeats must be integers, got dtype {r.dtype}")
    if r.ndim > 1:
        raise ValueError(f"repeat: repeats must be an int or a 1-d sequence, got shape {r.shape}")
    if (r < 0).any():
        raise ValueError(f"repeat: repeat counts must be non-negative, got {repeats}")
    n = shape_of(a)[axis]
    if r.ndim == 1 and r.size != 1 and r.size != n:
        raise ValueError(
            f"repeat: got {r.size} repeat counts for axis {axis} of an array of shape "
            f"{shape_of(a)}; give one per element ({n}) or a single int"
        )
    repeats = int(r.reshape(-1)[0]) if r.size == 1 else tuple(int(v) for v in r)
    return sp.repeat(a, repeats, axis)


def tile(A, reps):
    A = _array(A)
    reps = _static_ints(reps, "tile", "reps")
    reps = (operator.index(reps),) if np.ndim(reps) == 0 else tuple(operator.index(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got reps {reps}")
    return sp.tile(A, reps)


def ascontiguousarray(a, dtype=None, *, like=None):
    """`np.ascontiguousarray`: the same values, C-ordered (the layout decides the summation
    order of later reductions, hence their bits)."""
    if dtype is not None or like is not None:
        raise NotImplementedError(
            "tracegrad.numpy.ascontiguousarray: dtype= and like= are not supported; use astype"
        )
    return sp.ascontiguousarray(asarray_or_tracer(a))
