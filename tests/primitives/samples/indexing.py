"""SAMPLES rows for the indexing primitives (slice, gather, scatter_add, and the index updates
setitem, add_at, multiply_at, minimum_at, maximum_at), and `draw_index`:
random NumPy index expressions (ints, slices with any bounds and steps, None, Ellipsis,
integer arrays with repeats and broadcasting, boolean masks) valid for a given shape."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests import strategies as S
from tests.primitives.samples.row import Sample
from tracegrad.numpy._indexing import parse_index
from tracegrad.primitives import indexing as ix
from tracegrad.primitives import scatter as sc
from tracegrad.primitives import slicing

_BASIC = ("int", "slice", "none")


def _draw_slice(data, d: int) -> slice:
    bound = st.none() | st.integers(-d - 2, d + 2)
    step = st.none() | st.integers(-3, 3).filter(bool)
    return slice(
        data.draw(bound, label="start"),
        data.draw(bound, label="stop"),
        data.draw(step, label="step"),
    )


def draw_index(
    data, shape, *, arrays: bool = True, masks: bool = False, min_arrays: int = 0
) -> tuple:
    """A NumPy index valid for an array of `shape`, as a tuple of index items.

    Integer index arrays (NumPy arrays or lists) draw their shapes from one mutually
    broadcastable family and their values from [-d, d) of their axis, so repeats are common.
    Masks are NumPy boolean arrays over one or two consecutive axes. At least `min_arrays`
    integer arrays appear when the shape has an axis to index (and the axis is not empty).
    """
    ndim = len(shape)
    kinds = list(_BASIC) + (["array"] if arrays else []) + (["mask"] if masks else [])
    n_items = data.draw(st.integers(0, ndim + 2), label="number of items")
    chosen = [data.draw(st.sampled_from(kinds), label="kind") for _ in range(n_items)]
    chosen += ["array"] * min_arrays
    order = data.draw(st.permutations(range(len(chosen))), label="order")
    chosen = [chosen[i] for i in order]
    # keep at most ndim consumed axes
    items, used = [], 0
    for kind in chosen:
        width = 0 if kind == "none" else 1
        if kind == "mask":
            width = data.draw(st.integers(1, 2), label="mask ndim")
        if used + width > ndim:
            continue
        items.append([kind, width])
        used += width
    if data.draw(st.booleans(), label="ellipsis"):
        pos = data.draw(st.integers(0, len(items)), label="ellipsis position")
        items.insert(pos, ["ellipsis", ndim - used])
    n_arrays = sum(1 for k, _ in items if k == "array")
    array_shapes = iter(
        data.draw(
            hnp.mutually_broadcastable_shapes(num_shapes=max(n_arrays, 1), max_dims=2, max_side=3),
            label="index shapes",
        ).input_shapes
    )
    index, axis = [], 0
    for kind, width in items:
        if kind == "none":
            index.append(None)
            continue
        if kind == "ellipsis":
            index.append(Ellipsis)
            axis += width
            continue
        d = shape[axis]
        if kind == "int" and d > 0:
            index.append(data.draw(st.integers(-d, d - 1), label="int"))
        elif kind == "array":
            ishape = next(array_shapes)
            if d == 0 and int(np.prod(ishape)) > 0:
                index.append(slice(None))
            else:
                vals = np.asarray(
                    data.draw(
                        hnp.arrays(np.int64, ishape, elements=st.integers(-d, max(d - 1, 0))),
                        label="index array",
                    )
                )
                as_list = data.draw(st.booleans(), label="as list") and vals.ndim > 0
                index.append(vals.tolist() if as_list else vals)
        elif kind == "mask":
            index.append(
                np.asarray(
                    data.draw(hnp.arrays(np.bool_, tuple(shape[axis : axis + width])), label="mask")
                )
            )
        else:  # a slice, or an int on an empty axis (which has no valid int)
            index.append(_draw_slice(data, d))
        axis += width
    return tuple(index)


def draw_gather(data, dtype, *, min_arrays=1):
    """(x, items, arrays) for a gather: the parse of a random advanced index."""
    shape = S.shapes(data, min_dims=1)
    x = S.array(data, shape, dtype)
    index = draw_index(data, shape, min_arrays=min_arrays)
    items, arrays = parse_index(shape, index)
    return x, items, arrays


def _slice(data, dtype):
    shape = S.shapes(data)
    x = S.array(data, shape, dtype)
    bounds = [slicing.canonical_slice(*_draw_slice(data, d).indices(d))[0] for d in shape]
    starts, limits, strides = (tuple(b[i] for b in bounds) for i in range(3))
    return (x,), {"starts": starts, "limits": limits, "strides": strides}


def _gather(data, dtype):
    x, items, arrays = draw_gather(data, dtype)
    return (x, *arrays), {"index": items}


def _scatter_add(data, dtype):
    x, items, arrays = draw_gather(data, dtype)
    out_shape = ix.indexed_shape("scatter_add", x.shape, items, [a.shape for a in arrays])
    updates = S.array(data, out_shape, dtype)
    return (updates, *arrays), {"shape": x.shape, "index": items}


def _update(*, unique_only: bool = False, apart: bool = False):
    """(x, updates, *arrays) for an index update; `unique_only` redraws an index that repeats
    as a single integer array without repeats (multiply_at is differentiated only then);
    `apart` moves every update away from x and from the other updates (ties are the kinks of
    minimum_at and maximum_at, where finite differences mean nothing)."""

    def draw(data, dtype):
        x, items, arrays = draw_gather(data, dtype, min_arrays=0)
        unique = _unique(x.shape, items, arrays)
        if unique_only and not unique:
            d = x.shape[0]
            picks = data.draw(st.lists(st.integers(0, d - 1), min_size=1, max_size=d, unique=True))
            items, arrays, unique = ("array",), [np.array(picks, dtype=np.intp)], True
        selected = ix.indexed_shape("scatter", x.shape, items, [a.shape for a in arrays])
        updates = S.array(data, selected, dtype)
        if apart and updates.size:
            steps = np.arange(updates.size).reshape(selected) - (updates.size - 0.5) / 2
            near = x[ix.index_tuple(items, arrays)]
            updates = (near + 0.25 * steps).astype(dtype)
        return (x, updates, *arrays), {"index": items, "unique": unique}

    return draw


def _unique(shape, items, arrays) -> bool:
    positions = np.arange(int(np.prod(shape))).reshape(shape)
    chosen = positions[ix.index_tuple(items, arrays)]
    return np.unique(chosen).size == chosen.size


def _update_row(**kw):
    # x and the updates share a dtype (x.at[i].set(v) casts v to x's dtype first)
    return Sample(_update(**kw), complex=(0, 1))


SAMPLES = {
    slicing.slice_p: Sample(_slice, complex=(0,)),
    ix.gather_p: Sample(_gather, complex=(0,)),
    ix.scatter_add_p: Sample(_scatter_add, complex=(0,)),
    sc.setitem_p: _update_row(),
    sc.add_at_p: _update_row(),
    sc.multiply_at_p: _update_row(unique_only=True),
    sc.minimum_at_p: _update_row(apart=True),
    sc.maximum_at_p: _update_row(apart=True),
}
