"""Advanced indexing: gathers with integer index arrays, and scatter-add, their transpose.

Integer index arrays become a `gather` whose vjp scatter-adds the cotangent, so repeated
indices accumulate (basic indexing is a `slice`, in `slicing.py`). A gather's params describe
the static structure of the index (`index`, see `index_tuple`) and its index arrays are
inputs, so its impl is `x[tuple]`: bit for bit NumPy's advanced indexing, including where the
broadcast index axes go.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_INDICES, Primitive
from tracegrad.ir.types import Aval, is_float, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.batching import batch_size
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.slicing import canonical_slice, py_slice
from tracegrad.primitives.views import move_axis, move_to_front, reshape

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
            out.append(py_slice(*item[1:]))
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
    return index_plan(op, x_shape, index, array_shapes)[0]


def index_plan(op: str, x_shape, index, array_shapes) -> tuple[tuple[int, ...], tuple]:
    """`(shape, sources)` of `x[index_tuple(index, arrays)]`, from shapes alone.

    `sources[k]` says where output axis k comes from: `("x", a)` for axis `a` of `x` (kept by
    a slice, an ellipsis or the implicit trailing axes), `("new",)` for a newaxis, `("F", j)`
    for axis `j` of the advanced items' broadcast shape (see `indexed_shape` for where NumPy
    puts that block). Batching rules use it to find where a batch axis lands.
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
    fancy_present = any(i == "array" or _is_bool_item(i) for i in index)
    ellipsis_len = len(x_shape) - used
    shapes = iter(array_shapes)
    fancy_shapes: list[tuple[int, ...]] = []
    # result axes as (size, source), with "F" where the advanced block sits (if adjacent)
    out: list = []
    fancy_runs = 0
    prev_fancy = False
    axis = 0
    for item in index:
        fancy = False
        if item == "array":
            fancy = True
            fancy_shapes.append(tuple(next(shapes)))
            axis += 1
        elif _is_bool_item(item):
            fancy = True
            fancy_shapes.append((1 if item[1] else 0,))
        elif _is_int_item(item):
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
            out.append((1, ("new",)))
        elif item == "...":
            out.extend((x_shape[a], ("x", a)) for a in range(axis, axis + ellipsis_len))
            axis += ellipsis_len
        elif isinstance(item, tuple) and item[0] == "slice":
            _, s, l, k = item
            d = x_shape[axis]
            ok = (0 <= s <= d and 0 <= l <= d) if k > 0 else (k < 0 and 0 <= s < d and -1 <= l < d)
            if not ok:
                raise ValueError(f"{op}: slice {s}:{l}:{k} does not fit axis {axis} of size {d}")
            out.append((len(range(s, l, k)), ("x", axis)))
            axis += 1
        else:
            raise ValueError(f"{op}: unknown index item {item!r} in {index}")
        if fancy and not prev_fancy:
            fancy_runs += 1
            out.append("F")
        prev_fancy = fancy
    out.extend((x_shape[a], ("x", a)) for a in range(axis, len(x_shape)))
    try:
        bshape = tuple(np.broadcast_shapes(*fancy_shapes)) if fancy_shapes else ()
    except ValueError:
        shown = " ".join(str(s) for s in fancy_shapes)
        raise IndexError(
            f"{op}: shape mismatch: indexing arrays could not be broadcast together "
            f"with shapes {shown}"
        ) from None
    block = [(d, ("F", j)) for j, d in enumerate(bshape)]
    if fancy_runs > 1:  # separated advanced items: their dims go first
        result = block + [e for e in out if e != "F"]
    else:
        result = []
        for e in out:
            result.extend(block if e == "F" else (e,))
    return tuple(d for d, _ in result), tuple(src for _, src in result)


def _is_bool_item(item) -> bool:
    return isinstance(item, tuple) and item[0] == "bool"


def _is_int_item(item) -> bool:
    return isinstance(item, int) and not isinstance(item, bool)


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


# -- batching an index ------------------------------------------------------------------------
#
# A batched x gets its batch axis selected whole: absorbed by the ellipsis or the implicit
# trailing axes when it falls there, else a full slice inserted into the index (never between
# two adjacent advanced items, which would separate them). Batched index arrays get their batch
# axis first and padded to the advanced items' common rank, so it leads their broadcast shape;
# a batched x then gets an advanced index `arange(B)` for its batch axis, inserted next to the
# other advanced items (JAX's iota). Where the batch axis lands in the result is read from
# `index_plan`, never assumed: NumPy moves separated advanced blocks to the front.


def _fancy_flags(index) -> list[bool]:
    """Which items are advanced: arrays, 0-d booleans, and ints when either is present."""
    present = any(i == "array" or _is_bool_item(i) for i in index)
    return [i == "array" or _is_bool_item(i) or (present and _is_int_item(i)) for i in index]


def _first_axes(index, ndim: int) -> list[int]:
    """`c[q]`: the first axis of an `ndim`-D array that item q uses (`q = len(index)`: the
    first axis after every item). Inserting an item that uses one axis at position q of the
    index of an (ndim + 1)-D array makes it use axis `c[q]`."""
    ell = ndim - sum(_consumes(i) for i in index)
    out, axis = [], 0
    for item in index:
        out.append(axis)
        axis += ell if item == "..." else _consumes(item)
    out.append(axis)
    return out


def _index_for_batched_x(index, ndim: int, d: int, size: int):
    """The index that applies `index` to each example of a `ndim`-D array stacked along axis
    `d` (of size `size`), without index arrays for the batch; None if none exists without
    moving the batch axis (it sits between two adjacent advanced items)."""
    c = _first_axes(index, ndim)
    if "..." in index:
        e = index.index("...")
        if c[e] <= d <= c[e + 1]:
            return index  # the ellipsis grows by one axis
    elif d >= c[-1]:
        return index  # one more implicit trailing axis
    flags = _fancy_flags(index)
    full = ("slice",) + canonical_slice(0, size, 1)[0]
    for q in range(len(index) + 1):
        inside_run = 0 < q < len(index) and flags[q - 1] and flags[q]
        if c[q] == d and not inside_run:
            return index[:q] + (full,) + index[q:]
    return None


def _place_batched_x(index, ndim: int, d: int, size: int) -> tuple[tuple, int]:
    """(index, axis): where to put x's batch axis (`d` if possible, else 0) and the index."""
    new_index = _index_for_batched_x(index, ndim, d, size)
    if new_index is not None:
        return new_index, d
    return _index_for_batched_x(index, ndim, 0, size), 0


def _iota_slot(index, ndim: int, d: int | None) -> int:
    """Where in `index` to insert the `arange(B)` array for x's batch axis: next to (or inside)
    a run of advanced items, preferring a place where it indexes axis `d` of x."""
    c = _first_axes(index, ndim)
    flags = _fancy_flags(index)
    n = len(index)
    for q in range(n + 1):
        beside = (q > 0 and flags[q - 1]) or (q < n and flags[q])
        if c[q] == d and beside:
            return q
    return flags.index(True)


def _batch_index_arrays(index, arrays, dims) -> tuple[list, int]:
    """Batched index arrays with the batch axis first, padded with 1s to one more than the
    rank of the advanced items' per-example broadcast shape, so it leads that shape."""
    ranks = [len(shape_of(a)) - (d is not None) for a, d in zip(arrays, dims)]
    rank = max(ranks + [1 if _is_bool_item(i) else 0 for i in index])
    out = []
    for a, d, r in zip(arrays, dims, ranks):
        if d is not None:
            a = move_to_front(a, d)
            s = shape_of(a)
            if r < rank:
                a = reshape(a, (s[0],) + (1,) * (rank - r) + s[1:])
        out.append(a)
    return out, rank


def _with_iota(index, arrays, q: int, size: int, rank: int):
    """`index` and `arrays` with an `arange(size)` index array (shape (size, 1, ...)) at q."""
    iota = np.arange(size, dtype=np.intp).reshape((size,) + (1,) * rank)
    k = sum(1 for i in index[:q] if i == "array")
    return index[:q] + ("array",) + index[q:], arrays[:k] + [iota] + arrays[k:]


def _batch_position(op, x_shape, index, arrays, source) -> int:
    sources = index_plan(op, x_shape, index, [shape_of(a) for a in arrays])[1]
    return sources.index(source)


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


def _gather_batch(args, dims, *, index):
    x, arrays = args[0], list(args[1:])
    xd, adims = dims[0], dims[1:]
    n = len(shape_of(x)) - (xd is not None)
    if all(d is None for d in adims):  # only x is batched: select its batch axis whole
        size = shape_of(x)[xd]
        new_index, p = _place_batched_x(index, n, xd, size)
        x = move_axis(x, xd, p)
        out = gather(x, *arrays, index=new_index)
        return out, _batch_position("gather", shape_of(x), new_index, arrays, ("x", p))
    size = batch_size(args, dims)
    arrays, rank = _batch_index_arrays(index, arrays, adims)
    if xd is not None:  # example b reads x[b]: index x's batch axis with arange(B)
        q = _iota_slot(index, n, xd)
        p = _first_axes(index, n)[q]
        x = move_axis(x, xd, p)
        index, arrays = _with_iota(index, arrays, q, size, rank)
    out = gather(x, *arrays, index=index)
    return out, _batch_position("gather", shape_of(x), index, arrays, ("F", 0))


gather_p = Primitive(
    "gather",
    impl=lambda x, *arrays, index: np.asarray(x)[index_tuple(index, arrays)],
    shape=_gather_shape,
    jvp=_gather_jvp,
    vjp=_gather_vjp,
    batch=_gather_batch,
    emit=lambda x, *arrays, index: f"{x}[{_emit_index(index, arrays, True)}]",
    emit_array_api=lambda x, *arrays, index: (
        f"np.tg_getitem({x}, ({_emit_index(index, arrays, False)}))"
    ),
    vjp_reads=READS_INDICES,
    torch_name="IndexBackward0",
    taylor=series.LINEAR,
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


def _scatter_add_batch(args, dims, *, shape, index):
    updates, arrays = args[0], list(args[1:])
    ud, adims = dims[0], dims[1:]
    n = len(shape)
    size = batch_size(args, dims)
    if all(d is None for d in adims):  # only the updates are batched
        # the output's batch axis p is free: choose one where the updates' batch axis stays put
        choice = None
        for p in range(n + 1):
            new_index = _index_for_batched_x(index, n, p, size)
            if new_index is None:
                continue
            out_shape = shape[:p] + (size,) + shape[p:]
            o = _batch_position("scatter_add", out_shape, new_index, arrays, ("x", p))
            if choice is None or o == ud:
                choice = (p, new_index, out_shape, o)
            if o == ud:
                break
        p, new_index, out_shape, o = choice
        updates = move_axis(updates, ud, o)
        return scatter_add(updates, *arrays, shape=out_shape, index=new_index), p
    # batched index arrays: example b adds into out[b], indexed by an arange(B) array
    arrays, rank = _batch_index_arrays(index, arrays, adims)
    q = _iota_slot(index, n, None)
    p = _first_axes(index, n)[q]
    index, arrays = _with_iota(index, arrays, q, size, rank)
    out_shape = shape[:p] + (size,) + shape[p:]
    o = _batch_position("scatter_add", out_shape, index, arrays, ("F", 0))
    if ud is None:  # every example adds the same updates
        s = shape_of(updates)
        updates = reshape(updates, s[:o] + (1,) + s[o:])
        updates = broadcast_to(updates, s[:o] + (size,) + s[o:])
    else:
        updates = move_axis(updates, ud, o)
    return scatter_add(updates, *arrays, shape=out_shape, index=index), p


scatter_add_p = Primitive(
    "scatter_add",
    impl=_scatter_add_impl,
    shape=_scatter_add_shape,
    jvp=_scatter_add_jvp,
    vjp=_scatter_add_vjp,
    batch=_scatter_add_batch,
    emit=_scatter_add_emit,
    emit_array_api=lambda updates, *arrays, shape, index: (
        f"np.tg_scatter_add({shape!r}, ({_emit_index(index, arrays, False)}), {updates})"
    ),
    vjp_reads=READS_INDICES,
    layout=Layout.C,
    taylor=series.LINEAR,
)

PRIMITIVES = (gather_p, scatter_add_p)
