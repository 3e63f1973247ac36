"""Sorting, selection and searching: the operations NumPy computes in C loops of its own.

sort and partition permute values, so their derivative permutes the tangent the same way (the
permutation is recomputed from values, see `_permuted_rules`); argsort, argpartition,
searchsorted, lexsort and nonzero return integers.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_ALL, READS_INPUTS, READS_NOTHING, Primitive
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series
from tracegrad.primitives.axes import (
    at,
)
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.broadcasting import broadcast_to, sum
from tracegrad.primitives.indexing import gather, scatter_add
from tracegrad.primitives.shape import pad
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import move_axis, move_to_front, reshape


def _zero_jvp(primals, tangents, **params):
    return None


def _zero_vjp(bar, *primals, **params):
    return (None,) * len(primals)


_NO_DERIVATIVE = dict(jvp=_zero_jvp, vjp=_zero_vjp, differentiable=False, vjp_reads=READS_NOTHING)


def _check_axis(name: str, x: Aval, axis) -> None:
    if type(axis) is not int or not 0 <= axis < x.ndim:
        raise ValueError(
            f"{name}: axis {axis!r} does not fit an array of shape {x.shape}; pass one axis in "
            f"[0, {x.ndim}) (tracegrad.numpy.{name} normalizes NumPy-style axes)"
        )


def _kind(stable: bool) -> str:
    return "stable" if stable else "quicksort"


# -- moving values along one axis -------------------------------------------------------------


def _along(shape, idx, axis: int) -> tuple[list, tuple]:
    """The index arrays and `index` param that read `x[..., idx, ...]` along `axis` as
    `np.take_along_axis` does: `idx` on `axis`, an `arange` on every other axis."""
    n = len(shape)
    arrays = []
    for a, d in enumerate(shape):
        if a == axis:
            arrays.append(idx)
        else:
            arrays.append(np.arange(d, dtype=np.intp).reshape((1,) * a + (d,) + (1,) * (n - a - 1)))
    return arrays, ("array",) * n


def take_along(x, idx, axis: int):
    """`np.take_along_axis(x, idx, axis)` as one gather (its vjp scatters back)."""
    arrays, index = _along(shape_of(x), idx, axis)
    return gather(x, *arrays, index=index)


def put_along(bar, idx, axis: int):
    """The transpose of `take_along` for a permutation `idx`: `bar[j]` goes back to `idx[j]`."""
    shape = shape_of(bar)
    arrays, index = _along(shape, idx, axis)
    return scatter_add(bar, *arrays, shape=shape, index=index)


# The permutation behind an output always reproduces it exactly; at ties (kinks) it takes the
# tied elements in their original order. For sort it is `argsort(x, stable)`: any sort of x
# lists the values in that order. For partition it is matched to the output itself, since
# `x[argpartition(x)]` is not `partition(x)`: NumPy's introselect arranges values and indices
# differently (tests/numpy/test_sorting.py shows it).


def _matching_perm(x, out, axis: int):
    """A permutation with `x[perm] == out` along `axis` (value for value, NaNs included): the
    k-th smallest of `out` (ties in order) came from the k-th smallest of `x`."""
    order_x = argsort(x, axis, stable=True)
    order_out = argsort(out, axis, stable=True)
    where_in_order = argsort(order_out, axis, stable=True)  # the inverse permutation
    return take_along(order_x, where_in_order, axis)


def _permuted_rules(perm_of):
    """jvp and vjp of a primitive whose output is its input permuted along `axis` by
    `perm_of(x, out, axis)`."""

    def jvp(primals, tangents, *, out, axis, **params):
        (x,), (x_dot,) = primals, tangents
        if x_dot is None or not carries_derivative(x):
            return None
        return take_along(x_dot, perm_of(x, out, axis), axis)

    def vjp(bar, x, *, out, axis, **params):
        if not carries_derivative(x):
            return (None,)
        return (put_along(bar, perm_of(x, out, axis), axis),)

    return jvp, vjp


def _along_axis_batch(fn):
    """The batching rule of `fn(x, axis=..., **params)`, an operation along one axis: the batch
    axis stays where it is and the per-example axis shifts past it."""

    def batch(args, dims, *, axis, **params):
        (x,), (d,) = args, dims
        if d is None:
            return fn(x, axis=axis, **params), None
        return fn(x, axis=at(axis, d), **params), d

    return batch


# -- sort, argsort ----------------------------------------------------------------------------


def sort(x, axis: int, stable: bool = False):
    """`np.sort(x, axis, kind="stable" if stable else "quicksort")` (one non-negative axis)."""
    return bind(sort_p, x, axis=int(axis), stable=bool(stable))


def argsort(x, axis: int, stable: bool = False):
    """`np.argsort(x, axis, kind=...)`: intp indices that sort `x` along `axis`."""
    return bind(argsort_p, x, axis=int(axis), stable=bool(stable))


def _sort_shape(name, index_dtype):
    def shape(x: Aval, *, axis, stable):
        _check_axis(name, x, axis)
        if type(stable) is not bool:
            raise ValueError(f"{name}: stable must be a bool, got {stable!r}")
        return Aval(x.shape, np.intp if index_dtype else x.dtype)

    return shape


def _sort_perm(x, out, axis):
    return argsort(x, axis, stable=True)


_sort_jvp, _sort_vjp = _permuted_rules(_sort_perm)

sort_p = Primitive(
    "sort",
    impl=lambda x, *, axis, stable: np.sort(x, axis=axis, kind=_kind(stable)),
    shape=_sort_shape("sort", False),
    jvp=_sort_jvp,
    vjp=_sort_vjp,
    batch=_along_axis_batch(sort),
    emit=lambda x, *, axis, stable: f"np.sort({x}, axis={axis!r}, kind={_kind(stable)!r})",
    vjp_reads=READS_INPUTS,
    layout=Layout.KEEPS_C,  # np.sort copies in the input's order (copy(order="K"))
    taylor=series.LINEAR,
)

argsort_p = Primitive(
    "argsort",
    impl=lambda x, *, axis, stable: np.argsort(x, axis=axis, kind=_kind(stable)),
    shape=_sort_shape("argsort", True),
    batch=_along_axis_batch(argsort),
    emit=lambda x, *, axis, stable: f"np.argsort({x}, axis={axis!r}, kind={_kind(stable)!r})",
    layout=Layout.KEEPS_C,
    **_NO_DERIVATIVE,
)

# -- partition, argpartition ------------------------------------------------------------------


def partition(x, kth, axis: int):
    """`np.partition(x, kth, axis)` with `kth` a tuple of non-negative ints, sorted (as NumPy
    sorts it before selecting)."""
    return bind(partition_p, x, kth=tuple(int(k) for k in kth), axis=int(axis))


def argpartition(x, kth, axis: int):
    """`np.argpartition(x, kth, axis)` (kth as in `partition`)."""
    return bind(argpartition_p, x, kth=tuple(int(k) for k in kth), axis=int(axis))


def _partition_shape(name, index_dtype):
    def shape(x: Aval, *, kth, axis):
        _check_axis(name, x, axis)
        n = x.shape[axis]
        ok = type(kth) is tuple and all(type(k) is int for k in kth)
        if not ok or list(kth) != sorted(kth) or any(not 0 <= k < n for k in kth if x.size):
            raise ValueError(
                f"{name}: kth {kth!r} must be a sorted tuple of indices in [0, {n}) (axis {axis} "
                f"of an array of shape {x.shape}); tracegrad.numpy.{name} normalizes NumPy's kth"
            )
        return Aval(x.shape, np.intp if index_dtype else x.dtype)

    return shape


_partition_jvp, _partition_vjp = _permuted_rules(_matching_perm)

partition_p = Primitive(
    "partition",
    impl=lambda x, *, kth, axis: np.partition(x, kth, axis=axis),
    shape=_partition_shape("partition", False),
    jvp=_partition_jvp,
    vjp=_partition_vjp,
    batch=_along_axis_batch(partition),
    emit=lambda x, *, kth, axis: f"np.partition({x}, {list(kth)!r}, axis={axis!r})",
    vjp_reads=READS_ALL,
    layout=Layout.KEEPS_C,  # a copy in the input's order, then partitioned in place
    taylor=series.LINEAR,
)

argpartition_p = Primitive(
    "argpartition",
    impl=lambda x, *, kth, axis: np.argpartition(x, kth, axis=axis),
    shape=_partition_shape("argpartition", True),
    batch=_along_axis_batch(argpartition),
    emit=lambda x, *, kth, axis: f"np.argpartition({x}, {list(kth)!r}, axis={axis!r})",
    layout=Layout.KEEPS_C,
    **_NO_DERIVATIVE,
)

# -- searchsorted -----------------------------------------------------------------------------
# `a` is one sorted row per example: its first `batch_dims` axes (and v's) are batch axes that
# the impl loops over, since NumPy's binary search takes a single 1-D `a` (a vmap over `a`
# adds one). A loop is the honest batched form: NumPy's search starts from the previous key's
# bounds, so on an unsorted `a` no vectorized search gives its results.


def searchsorted(a, v, *, right: bool = False, batch_dims: int = 0):
    """`np.searchsorted(a, v, side="right" if right else "left")`, per batch row of `a`."""
    return bind(searchsorted_p, a, v, right=bool(right), batch_dims=int(batch_dims))


def _side(right: bool) -> str:
    return "right" if right else "left"


def _searchsorted_impl(a, v, *, right, batch_dims):
    if batch_dims == 0:
        return np.searchsorted(a, v, side=_side(right))
    a, v = np.asarray(a), np.asarray(v)
    count = math.prod(a.shape[:-1])
    rows = a.reshape((count, a.shape[-1]))
    keys = v.reshape((count,) + v.shape[batch_dims:])
    out = [np.searchsorted(r, k, side=_side(right)) for r, k in zip(rows, keys)]
    return np.array(out, dtype=np.intp).reshape(v.shape)


def _searchsorted_shape(a: Aval, v: Aval, *, right, batch_dims):
    ok = type(batch_dims) is int and batch_dims >= 0 and type(right) is bool
    if not ok or a.ndim != batch_dims + 1 or tuple(v.shape[:batch_dims]) != a.shape[:-1]:
        raise ValueError(
            f"searchsorted: a {a.shape} must be one 1-D row per batch index (batch_dims="
            f"{batch_dims!r}), and v {v.shape} must start with the same batch axes"
        )
    return Aval(v.shape, np.intp)


def _searchsorted_batch(args, dims, *, right, batch_dims):
    (a, v), (ad, vd) = args, dims
    if ad is None:  # one row for every example: v's batch axis is one more key axis
        if batch_dims == 0:
            return searchsorted(a, v, right=right), vd
        v = move_axis(v, vd, batch_dims)
        return searchsorted(a, v, right=right, batch_dims=batch_dims), batch_dims
    size = batch_size(args, dims)
    a, v = materialize(a, ad, size), materialize(v, vd, size)
    return searchsorted(a, v, right=right, batch_dims=batch_dims + 1), 0


def _searchsorted_emit(a, v, *, right, batch_dims):
    side = _side(right)
    if batch_dims == 0:
        return f"np.searchsorted({a}, {v}, side={side!r})"
    return (
        f"(lambda _a, _v, _n: np.array([np.searchsorted(_r, _k, side={side!r}) for _r, _k in "
        f"zip(_a.reshape((_n, _a.shape[-1])), _v.reshape((_n,) + _v.shape[{batch_dims}:]))], "
        f"dtype=np.intp).reshape(_v.shape))(np.asarray({a}), np.asarray({v}), "
        f"int(np.prod(np.shape({a})[:-1])))"
    )


searchsorted_p = Primitive(
    "searchsorted",
    impl=_searchsorted_impl,
    shape=_searchsorted_shape,
    batch=_searchsorted_batch,
    emit=_searchsorted_emit,
    layout=Layout.KEEPS_C,
    **_NO_DERIVATIVE,
)

# -- lexsort ----------------------------------------------------------------------------------


def lexsort(keys, axis: int):
    """`np.lexsort(keys, axis)`: the last key is the primary one; keys of one shape."""
    return bind(lexsort_p, *keys, axis=int(axis))


def _lexsort_shape(*keys: Aval, axis):
    if not keys or any(k.shape != keys[0].shape for k in keys):
        raise ValueError(
            f"lexsort: needs at least one key, all of one shape; got shapes "
            f"{[k.shape for k in keys]}"
        )
    _check_axis("lexsort", keys[0], axis)
    return Aval(keys[0].shape, np.intp)


def _lexsort_batch(keys, dims, *, axis):
    size = batch_size(keys, dims)
    return lexsort([materialize(k, d, size) for k, d in zip(keys, dims)], axis + 1), 0


lexsort_p = Primitive(
    "lexsort",
    impl=lambda *keys, axis: np.lexsort(keys, axis=axis),
    shape=_lexsort_shape,
    batch=_lexsort_batch,
    emit=lambda *keys, axis: f"np.lexsort(({', '.join(keys)},), axis={axis!r})",
    layout=Layout.C,
    **_NO_DERIVATIVE,
)

# -- nonzero with a static size ---------------------------------------------------------------
# JAX's `nonzero(x, size=n, fill_value=f)`: the first n indices of the nonzero elements in C
# order (as np.nonzero lists them), the rest of each output filled with its fill value.


def nonzero(x, *, size: int, fill_value):
    """One intp array of `size` indices per axis of `x` (a tuple, one fill value per axis)."""
    fill = tuple(int(f) for f in fill_value)
    return bind(nonzero_p, x, size=int(size), fill_value=fill)


def _fit(idx: np.ndarray, size: int, fill: int) -> np.ndarray:
    pad_len = max(size - idx.size, 0)
    return np.concatenate([idx[:size], np.full(pad_len, fill, np.intp)])


def _nonzero_impl(x, *, size, fill_value):
    return tuple(_fit(i, size, f) for i, f in zip(np.nonzero(x), fill_value))


def _nonzero_shape(x: Aval, *, size, fill_value):
    if x.ndim == 0:
        raise ValueError(
            "nonzero: Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar)"
            ".nonzero() instead."
        )
    ok = type(fill_value) is tuple and all(type(f) is int for f in fill_value)
    if type(size) is not int or size < 0 or not ok or len(fill_value) != x.ndim:
        raise ValueError(
            f"nonzero: size must be a non-negative int and fill_value a tuple of {x.ndim} ints "
            f"(one per axis of x {x.shape}); got size={size!r}, fill_value={fill_value!r}"
        )
    return tuple(Aval((size,), np.intp) for _ in range(x.ndim))


def _nonzero_batch(args, dims, *, size, fill_value):
    """Each example's first `size` nonzero positions: a stable argsort of `x == 0` per example
    lists the nonzero flat positions first, in C order, as np.nonzero does; positions past the
    example's count take the fill value. Integer work only."""
    (x,), (d,) = args, dims
    x = move_to_front(x, d)
    batch, *shape = shape_of(x)
    n = math.prod(shape)
    if n == 0:  # nothing is nonzero: every index is a fill value
        fills = (broadcast_to(np.intp(f), (batch, size)) for f in fill_value)
        return tuple(fills), (0,) * len(shape)
    is_zero = reshape(bind(ew.equal_p, x, np.zeros((), dtype_of(x))), (batch, n))
    order = argsort(is_zero, 1, stable=True)
    if size <= n:
        order = slice_static(order, (0, 0), (batch, size))
    else:
        order = pad(order, ((0, 0), (0, size - n)), 0)
    count = sum(ew.astype(bind(ew.logical_not_p, is_zero), np.intp), (1,), True)
    valid = bind(ew.less_p, np.arange(size, dtype=np.intp), count)
    outs = []
    stride = n
    for dim, fill in zip(shape, fill_value):
        stride //= dim
        coord = bind(ew.floor_divide_p, order, np.intp(stride)) if stride != 1 else order
        coord = bind(ew.remainder_p, coord, np.intp(dim))
        outs.append(ew.where(valid, coord, np.intp(fill)))
    return tuple(outs), (0,) * len(outs)


def _nonzero_emit(x, *, size, fill_value):
    return (
        f"tuple(np.concatenate([_i[:{size}], np.full(max({size} - _i.size, 0), _f, np.intp)]) "
        f"for _i, _f in zip(np.nonzero({x}), {fill_value!r}))"
    )


nonzero_p = Primitive(
    "nonzero",
    impl=_nonzero_impl,
    shape=_nonzero_shape,
    batch=_nonzero_batch,
    emit=_nonzero_emit,
    multiple_results=True,
    layout=Layout.C,
    **_NO_DERIVATIVE,
)

PRIMITIVES = (
    sort_p,
    argsort_p,
    partition_p,
    argpartition_p,
    searchsorted_p,
    lexsort_p,
    nonzero_p,
)
