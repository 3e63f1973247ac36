"""Indexing: static strided slices, gathers with integer index arrays, and scatter-add.

`x[...]` with ints, slices, None and Ellipsis lowers to a static `slice` plus reshapes (views
of the input); integer index arrays become a `gather` whose vjp scatter-adds the cotangent,
so repeated indices accumulate. A gather's params describe the static structure of the index
(`index`, see `index_tuple`) and its index arrays are inputs, so its impl is `x[tuple]`:
bit for bit NumPy's advanced indexing, including where the broadcast index axes go.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval, is_float

# -- slice ------------------------------------------------------------------------------------


def canonical_slice(start: int, limit: int, stride: int) -> tuple[tuple[int, int, int], int]:
    """One (start, limit, stride) per selection, and its length, from normalized bounds.

    `start, limit, stride` are what `slice.indices(size)` returns. Empty selections become
    `(0, 0, 1)`, single elements `(s, s + 1, 1)`, and the limit is tight; with a negative
    stride the limit may be -1, meaning "down to element 0 inclusive".
    """
    n = len(range(start, limit, stride))
    if n == 0:
        return (0, 0, 1), 0
    if n == 1:
        return (start, start + 1, 1), 1
    last = start + (n - 1) * stride
    return (start, last + (1 if stride > 0 else -1), stride), n


def slice_static(x, starts, limits, strides=None):
    """`x[s0:l0:k0, s1:l1:k1, ...]` over every axis, with bounds as `slice.indices` gives them.

    A stride may be negative (then a limit of -1 means "through element 0"). Bounds are
    canonicalized, so equal selections give equal nodes.
    """
    strides = (1,) * len(starts) if strides is None else strides
    canon = [canonical_slice(int(s), int(l), int(k))[0] for s, l, k in zip(starts, limits, strides)]
    return bind(
        slice_p,
        x,
        starts=tuple(c[0] for c in canon),
        limits=tuple(c[1] for c in canon),
        strides=tuple(c[2] for c in canon),
    )


def _py_slice(s, l, k):
    # A negative stride's limit of -1 means "through element 0": Python spells that `None`.
    return slice(s, None if l < 0 else l, k)


def _slices(starts, limits, strides):
    return tuple(_py_slice(s, l, k) for s, l, k in zip(starts, limits, strides))


def _slice_shape(x: Aval, *, starts, limits, strides):
    if not (len(starts) == len(limits) == len(strides) == x.ndim):
        raise ValueError(
            f"slice: needs one (start, limit, stride) per axis of {x.shape}, got starts={starts}, "
            f"limits={limits}, strides={strides}"
        )
    shape = []
    for d, s, l, k in zip(x.shape, starts, limits, strides):
        if k > 0:
            ok = 0 <= s <= d and 0 <= l <= d
        else:
            ok = k < 0 and 0 <= s < d and -1 <= l < d
        if not ok:
            raise ValueError(
                f"slice: bounds {starts}:{limits}:{strides} do not fit shape {x.shape}; use "
                "slice.indices(size) to normalize them (a negative stride stops at -1)"
            )
        shape.append(len(range(s, l, k)))
    return Aval(tuple(shape), x.dtype, x.weak_type)


def _slice_vjp(x_bar, x, *, out, starts, limits, strides):
    from tracegrad.primitives import shape as _shape

    if not is_float(x.dtype):
        return (None,)
    x_shape = tuple(x.shape)
    # A negative-stride selection is the reverse of a positive-stride one: reverse the
    # cotangent (a slice with stride -1, whose own vjp needs no padding), then pad it.
    lengths = [len(range(s, l, k)) for s, l, k in zip(starts, limits, strides)]
    if any(k < 0 and n > 1 for k, n in zip(strides, lengths)):
        x_bar = slice_static(
            x_bar,
            [n - 1 if k < 0 and n > 1 else 0 for k, n in zip(strides, lengths)],
            [-1 if k < 0 and n > 1 else n for k, n in zip(strides, lengths)],
            [-1 if k < 0 and n > 1 else 1 for k, n in zip(strides, lengths)],
        )
    pos_starts, pos_strides = [], []
    for s, k, n in zip(starts, strides, lengths):
        if n == 0:
            pos_starts.append(0)
            pos_strides.append(1)
        elif k < 0:
            pos_starts.append(s + (n - 1) * k)
            pos_strides.append(-k if n > 1 else 1)
        else:
            pos_starts.append(s)
            pos_strides.append(k if n > 1 else 1)
    if tuple(lengths) == x_shape and not any(pos_starts):
        return (x_bar,)  # the slice selected everything: nothing to pad
    return (_shape.pad_strided(x_bar, x_shape, tuple(pos_starts), tuple(pos_strides)),)


def _slice_emit(x, *, starts, limits, strides):
    parts = [f"{s}:{'' if l < 0 else l}:{k}" for s, l, k in zip(starts, limits, strides)]
    if not parts:
        return f"{x}[()]"
    return f"{x}[{', '.join(parts)}{',' if len(parts) == 1 else ''}]"


slice_p = Primitive(
    "slice",
    impl=lambda x, *, starts, limits, strides: x[_slices(starts, limits, strides)],
    shape=_slice_shape,
    jvp=lambda primals, tangents, *, out, starts, limits, strides: (
        None
        if tangents[0] is None
        else bind(slice_p, tangents[0], starts=starts, limits=limits, strides=strides)
    ),
    vjp=_slice_vjp,
    emit=_slice_emit,
    view_of=0,
)

# -- the static structure of an advanced index -----------------------------------------------
#
# `index` is a tuple with one entry per item of the NumPy index, in order:
#   an int                       a static integer index (non-negative, in range)
#   ("slice", start, limit, k)   a canonical slice (see canonical_slice)
#   "newaxis"                    None
#   "..."                        Ellipsis (kept: even an empty one separates advanced indices)
#   "array"                      the next integer index array among the primitive's inputs
#   ("bool", b)                  a 0-d boolean index (NumPy: a new axis indexed by [0] or [])


def index_tuple(index, arrays) -> tuple:
    """The NumPy index that `index` describes, with `arrays` in its "array" slots."""
    it = iter(arrays)
    out = []
    for item in index:
        if item == "array":
            out.append(next(it))
        elif item == "newaxis":
            out.append(None)
        elif item == "...":
            out.append(Ellipsis)
        elif isinstance(item, tuple) and item[0] == "slice":
            out.append(_py_slice(*item[1:]))
        elif isinstance(item, tuple) and item[0] == "bool":
            out.append(np.bool_(item[1]))
        else:
            out.append(item)
    return tuple(out)


def _consumes(item) -> int:
    """How many axes of the indexed array an item uses up (Ellipsis: decided by the rest)."""
    if item in ("newaxis", "...") or (isinstance(item, tuple) and item[0] == "bool"):
        return 0
    return 1


def indexed_shape(op: str, x_shape, index, array_shapes) -> tuple[int, ...]:
    """The shape of `x[index_tuple(index, arrays)]`, computed from shapes alone.

    NumPy's rule: the advanced items (arrays, 0-d booleans, and ints once any array is
    present) broadcast together; if they are adjacent in the index their broadcast shape
    replaces them in place, otherwise it goes first.
    """
    x_shape = tuple(x_shape)
    n_arrays = sum(1 for i in index if i == "array")
    if n_arrays != len(array_shapes):
        raise ValueError(
            f"{op}: the index {index} has {n_arrays} array slots but "
            f"{len(array_shapes)} index arrays were given"
        )
    if sum(1 for i in index if i == "...") > 1:
        raise ValueError(f"{op}: an index can only have a single ellipsis ('...'): {index}")
    used = sum(_consumes(i) for i in index)
    if used > len(x_shape):
        raise ValueError(
            f"{op}: the index {index} uses {used} axes but the array has shape {x_shape}"
        )
    fancy_present = any(i == "array" or (isinstance(i, tuple) and i[0] == "bool") for i in index)
    ellipsis_len = len(x_shape) - used
    shapes = iter(array_shapes)
    fancy_shapes: list[tuple[int, ...]] = []
    out: list = []  # result dims, with "F" where the advanced block sits (if adjacent)
    fancy_runs = 0
    prev_fancy = False
    axis = 0
    for item in index:
        fancy = False
        if item == "array":
            fancy = True
            fancy_shapes.append(tuple(next(shapes)))
            axis += 1
        elif isinstance(item, tuple) and item[0] == "bool":
            fancy = True
            fancy_shapes.append((1 if item[1] else 0,))
        elif isinstance(item, int) and not isinstance(item, bool):
            if not 0 <= item < x_shape[axis]:
                raise IndexError(
                    f"{op}: index {item} is out of bounds for axis {axis} with "
                    f"size {x_shape[axis]} (array of shape {x_shape})"
                )
            fancy = fancy_present
            if fancy:
                fancy_shapes.append(())
            axis += 1
        elif item == "newaxis":
            out.append(1)
        elif item == "...":
            out.extend(x_shape[axis : axis + ellipsis_len])
            axis += ellipsis_len
        elif isinstance(item, tuple) and item[0] == "slice":
            _, s, l, k = item
            d = x_shape[axis]
            ok = (0 <= s <= d and 0 <= l <= d) if k > 0 else (k < 0 and 0 <= s < d and -1 <= l < d)
            if not ok:
                raise ValueError(f"{op}: slice {s}:{l}:{k} does not fit axis {axis} of size {d}")
            out.append(len(range(s, l, k)))
            axis += 1
        else:
            raise ValueError(f"{op}: unknown index item {item!r} in {index}")
        if fancy and not prev_fancy:
            fancy_runs += 1
            out.append("F")
        prev_fancy = fancy
    out.extend(x_shape[axis:])
    try:
        bshape = tuple(np.broadcast_shapes(*fancy_shapes)) if fancy_shapes else ()
    except ValueError:
        shown = " ".join(str(s) for s in fancy_shapes)
        raise IndexError(
            f"{op}: shape mismatch: indexing arrays could not be broadcast together "
            f"with shapes {shown}"
        ) from None
    if fancy_runs > 1:  # separated advanced items: their dims go first
        return bshape + tuple(d for d in out if d != "F")
    result: list[int] = []
    for d in out:
        result.extend(bshape if d == "F" else (d,))
    return tuple(result)


def _check_index_avals(op, arrays):
    for a in arrays:
        if a.dtype.kind not in "iu":
            raise TypeError(
                f"{op}: index arrays must be integers, got {a.dtype.name}{a.shape}; "
                "boolean masks are converted with np.nonzero before indexing"
            )


def _emit_index(index, names, subscript: bool) -> str:
    it = iter(names)
    parts = []
    for item in index:
        if item == "array":
            parts.append(next(it))
        elif item == "newaxis":
            parts.append("None")
        elif item == "...":
            parts.append("..." if subscript else "Ellipsis")
        elif isinstance(item, tuple) and item[0] == "slice":
            _, s, l, k = item
            stop = "" if l < 0 else str(l)
            parts.append(f"{s}:{stop}:{k}" if subscript else f"slice({s}, {stop or 'None'}, {k})")
        elif isinstance(item, tuple) and item[0] == "bool":
            parts.append(f"np.{'True_' if item[1] else 'False_'}")
        else:
            parts.append(str(item))
    if not parts:
        return "()"
    inner = ", ".join(parts)
    return inner + "," if len(parts) == 1 else inner


# -- gather -----------------------------------------------------------------------------------


def gather(x, *arrays, index):
    """`x[index_tuple(index, arrays)]` with integer index arrays (advanced indexing)."""
    return bind(gather_p, x, *arrays, index=tuple(index))


def _gather_shape(x: Aval, *arrays: Aval, index):
    _check_index_avals("gather", arrays)
    shape = indexed_shape("gather", x.shape, index, [a.shape for a in arrays])
    return Aval(shape, x.dtype)


def _gather_jvp(primals, tangents, *, out, index):
    x_dot = tangents[0]
    return None if x_dot is None else gather(x_dot, *primals[1:], index=index)


def _gather_vjp(out_bar, x, *arrays, out, index):
    # Every read of x[i] sends its cotangent back to i: repeated indices accumulate.
    x_bar = scatter_add(out_bar, *arrays, shape=x.shape, index=index) if is_float(x.dtype) else None
    return (x_bar,) + (None,) * len(arrays)


gather_p = Primitive(
    "gather",
    impl=lambda x, *arrays, index: np.asarray(x)[index_tuple(index, arrays)],
    shape=_gather_shape,
    jvp=_gather_jvp,
    vjp=_gather_vjp,
    emit=lambda x, *arrays, index: f"{x}[{_emit_index(index, arrays, True)}]",
)

# -- scatter_add ------------------------------------------------------------------------------


def scatter_add(updates, *arrays, shape, index):
    """Zeros of `shape` with `updates` added at `index` (np.add.at: repeats accumulate)."""
    return bind(
        scatter_add_p, updates, *arrays, shape=tuple(int(d) for d in shape), index=tuple(index)
    )


def _scatter_add_impl(updates, *arrays, shape, index):
    updates = np.asarray(updates)
    z = np.zeros(shape, updates.dtype)
    np.add.at(z, index_tuple(index, arrays), updates)
    return z


def _scatter_add_shape(updates: Aval, *arrays: Aval, shape, index):
    _check_index_avals("scatter_add", arrays)
    expected = indexed_shape("scatter_add", shape, index, [a.shape for a in arrays])
    if tuple(updates.shape) != expected:
        raise ValueError(
            f"scatter_add: updates of shape {updates.shape} do not match the "
            f"shape {expected} that the index selects from an array of shape {shape}"
        )
    return Aval(shape, updates.dtype)


def _scatter_add_jvp(primals, tangents, *, out, shape, index):
    u_dot = tangents[0]
    return None if u_dot is None else scatter_add(u_dot, *primals[1:], shape=shape, index=index)


def _scatter_add_vjp(out_bar, updates, *arrays, out, shape, index):
    u_bar = gather(out_bar, *arrays, index=index) if is_float(updates.dtype) else None
    return (u_bar,) + (None,) * len(arrays)


def _scatter_add_emit(updates, *arrays, shape, index):
    return (
        f"(lambda _z: (np.add.at(_z, ({_emit_index(index, arrays, False)}), {updates}), "
        f"_z)[1])(np.zeros({shape!r}, np.asarray({updates}).dtype))"
    )


scatter_add_p = Primitive(
    "scatter_add",
    impl=_scatter_add_impl,
    shape=_scatter_add_shape,
    jvp=_scatter_add_jvp,
    vjp=_scatter_add_vjp,
    emit=_scatter_add_emit,
)

PRIMITIVES = (slice_p, gather_p, scatter_add_p)
