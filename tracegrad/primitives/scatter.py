"""Functional index updates: the primitives under `x.at[index].set/add/multiply/min/max`.

`scatter(x, updates, *arrays, index, mode)` returns a copy of `x` with `updates` written at
`x[index]` (the index in the form of `indexing.index_tuple`, with its integer arrays as
inputs), as NumPy does it, so repeated indices behave (and round) as in NumPy: `setitem` is
`y[index] = updates` (the last write wins), `add_at`, `multiply_at`, `minimum_at` and
`maximum_at` are `np.add.at(y, index, updates)` and its siblings (repeats accumulate in
order). One primitive per mode, each named after what NumPy calls it; one set of rules.

The derivatives, with repeats:
- set is linear in (x, updates) jointly; a cotangent reaches x where nothing was written and
  reaches the updates that won (found by writing each update's position and reading back);
- add is linear: the cotangent of x is the cotangent, that of the updates its gather;
- min and max send the derivative to the values equal to the result, split evenly among ties
  (as `np.minimum`'s derivative does here and in JAX);
- multiply is differentiated only when no index repeats (`unique`, known from concrete index
  arrays or promised with `unique_indices=True`), as in JAX: with repeats the derivative of one
  update is the product of the others, which no cheap rule gives without dividing by zero.
"""

from __future__ import annotations

import functools

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_ALL, Primitive
from tracegrad.ir.types import Aval, carries_derivative, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.elementwise import astype, equal
from tracegrad.primitives.indexing import (
    _batch_index_arrays,
    _batch_position,
    _check_index_avals,
    _emit_index,
    _first_axes,
    _iota_slot,
    _place_batched_x,
    _with_iota,
    gather,
    index_tuple,
    indexed_shape,
)
from tracegrad.primitives.views import move_axis

MODES = ("set", "add", "multiply", "min", "max")
_AT = {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}


def scatter(x, updates, *arrays, index, mode: str, unique: bool = False):
    """A copy of `x` with `updates` (of the indexed shape, x's dtype) written at `index`."""
    return bind(_BY_MODE[mode], x, updates, *arrays, index=tuple(index), unique=bool(unique))


def _impl(mode):
    def impl(x, updates, *arrays, index, unique):
        out = np.array(x, copy=True, order="C")
        where = index_tuple(index, arrays)
        if mode == "set":
            out[where] = updates
        else:
            _AT[mode].at(out, where, updates)
        return out

    return impl


def _shape(x: Aval, updates: Aval, *arrays: Aval, index, unique):
    _check_index_avals("scatter", arrays)
    expected = indexed_shape("scatter", x.shape, index, [a.shape for a in arrays])
    if tuple(updates.shape) != expected or updates.dtype != x.dtype:
        raise ValueError(
            f"scatter: updates {updates.dtype.name}{list(updates.shape)} must have the shape "
            f"{expected} the index selects from x {x.dtype.name}{list(x.shape)}, and x's dtype"
        )
    return Aval(x.shape, x.dtype)


def _zeros(shape, dtype):
    return broadcast_to(np.zeros((), dtype), tuple(shape))


def _selected_shape(x, arrays, index):
    return indexed_shape("scatter", shape_of(x), index, [shape_of(a) for a in arrays])


def _won(x, updates, arrays, index, dtype):
    """1 for each update that the "set" write kept, 0 for the ones a later repeat overwrote:
    each update's position is written and read back (under NumPy's own rule for repeats)."""
    sel = shape_of(updates)
    ids = np.arange(int(np.prod(sel, dtype=np.int64)), dtype=np.int64).reshape(sel)
    owner = scatter(np.full(shape_of(x), -1, np.int64), ids, *arrays, index=index, mode="set")
    return astype(equal(gather(owner, *arrays, index=index), ids), dtype)


def _extremal_weights(x, updates, arrays, index, out):
    """(weight of x, weight of each update, count) for min/max: which values equal the result
    (split evenly among ties)."""
    dtype = out.dtype
    x_wins = astype(equal(x, out), dtype)
    u_wins = astype(equal(updates, gather(out, *arrays, index=index)), dtype)
    count = x_wins + scatter(_zeros(shape_of(x), dtype), u_wins, *arrays, index=index, mode="add")
    return x_wins, u_wins, count


def _refuse_repeats(mode, unique):
    if mode == "multiply" and not unique:
        raise NotImplementedError(
            "x.at[index].multiply(v): differentiating it needs indices that do not repeat, and "
            "these index arrays are traced abstractly (or repeat), so that is not known. Pass "
            "unique_indices=True when they do not repeat, or write x * scatter of the factors."
        )


def _jvp(mode, primals, tangents, *, out, index, unique):
    x, updates, arrays = primals[0], primals[1], primals[2:]
    tx, tu = tangents[0], tangents[1]
    if tx is None and tu is None:
        return None
    _refuse_repeats(mode, unique)
    dtype = out.dtype
    x_shape, sel = shape_of(x), shape_of(updates)
    if mode in ("set", "add"):
        tx = _zeros(x_shape, dtype) if tx is None else tx
        tu = _zeros(sel, dtype) if tu is None else tu
        return scatter(tx, tu, *arrays, index=index, mode=mode)
    if mode == "multiply":
        ones = np.ones(x_shape, dtype)
        factors = scatter(ones, updates, *arrays, index=index, mode="multiply", unique=unique)
        t = 0 if tx is None else tx * factors
        if tu is not None:
            t = t + x * scatter(_zeros(x_shape, dtype), tu, *arrays, index=index, mode="set")
        return t
    x_wins, u_wins, count = _extremal_weights(x, updates, arrays, index, out)
    t = 0 if tx is None else tx * x_wins
    if tu is not None:
        t = t + scatter(_zeros(x_shape, dtype), tu * u_wins, *arrays, index=index, mode="add")
    return t / count


def _vjp(mode, bar, x, updates, *arrays, out, index, unique):
    want_x, want_u = carries_derivative(x), carries_derivative(updates)
    if not (want_x or want_u):
        return (None,) * (2 + len(arrays))
    _refuse_repeats(mode, unique)
    x_bar = u_bar = None
    if mode == "add":
        x_bar = bar if want_x else None
        u_bar = gather(bar, *arrays, index=index) if want_u else None
    elif mode == "set":
        if want_x:
            sel = shape_of(updates)
            x_bar = scatter(bar, _zeros(sel, bar.dtype), *arrays, index=index, mode="set")
        if want_u:
            u_bar = gather(bar, *arrays, index=index) * _won(x, updates, arrays, index, bar.dtype)
    elif mode == "multiply":
        if want_x:
            ones = np.ones(shape_of(x), out.dtype)
            x_bar = bar * scatter(
                ones, updates, *arrays, index=index, mode="multiply", unique=unique
            )
        u_bar = gather(bar * x, *arrays, index=index) if want_u else None
    else:
        x_wins, u_wins, count = _extremal_weights(x, updates, arrays, index, out)
        share = bar / count
        x_bar = share * x_wins if want_x else None
        u_bar = gather(share, *arrays, index=index) * u_wins if want_u else None
    return (x_bar, u_bar) + (None,) * len(arrays)


def _multiply_at_taylor(primals, series_in, *, out, index, unique):
    # with no repeats, x.at[i].multiply(v) = x * F(v), F(v) = ones with v written at i,
    # affine in v: the series of a product, y_k = sum_{i+j=k} x_i F_j (F_j = v_j at i, 0
    # elsewhere for j >= 1)
    x, updates, arrays = primals[0], primals[1], primals[2:]
    sx, su = series_in[0], series_in[1]
    if sx is None and su is None:
        return None
    _refuse_repeats("multiply", unique)
    k, dtype = series.order_of(series_in), out.dtype
    factors = [
        scatter(
            np.ones(shape_of(x), dtype),
            updates,
            *arrays,
            index=index,
            mode="multiply",
            unique=unique,
        )
    ]
    for t in su if su is not None else [None] * k:
        written = (
            None
            if t is None
            else scatter(_zeros(shape_of(x), dtype), t, *arrays, index=index, mode="set")
        )
        factors.append(written)
    xs = series.full(x, sx, k)
    return [series.convolve(xs, factors, i) for i in range(1, k + 1)]


def _batch(mode, args, dims, *, index, unique):
    """Each example writes into its own copy: x's batch axis is selected whole (or indexed by
    an `arange(B)` array when the index arrays are batched), and the updates' batch axis goes
    where NumPy puts it in the indexed shape."""
    x, updates, arrays = args[0], args[1], list(args[2:])
    xd, ud, adims = dims[0], dims[1], list(dims[2:])
    size = batch_size(args, dims)
    n = len(shape_of(x)) - (xd is not None)
    x = materialize(x, xd, size)
    updates = materialize(updates, ud, size)
    if all(d is None for d in adims):
        new_index, p = _place_batched_x(index, n, 0, size)
        x = move_axis(x, 0, p)
        o = _batch_position("scatter", shape_of(x), new_index, arrays, ("x", p))
    else:
        arrays, rank = _batch_index_arrays(index, arrays, adims)
        q = _iota_slot(index, n, 0)
        p = _first_axes(index, n)[q]
        x = move_axis(x, 0, p)
        new_index, arrays = _with_iota(index, arrays, q, size, rank)
        o = _batch_position("scatter", shape_of(x), new_index, arrays, ("F", 0))
    updates = move_axis(updates, 0, o)
    return scatter(x, updates, *arrays, index=new_index, mode=mode, unique=unique), p


def _emit(mode, x, updates, *arrays, index, unique):
    where = _emit_index(index, arrays, False)
    copy = f"np.array({x}, copy=True, order='C')"
    if mode == "set":
        return f"(lambda _o: (_o.__setitem__(({where}), {updates}), _o)[1])({copy})"
    ufunc = _AT[mode].__name__
    return f"(lambda _o: (np.{ufunc}.at(_o, ({where}), {updates}), _o)[1])({copy})"


def _emit_array_api(mode, x, updates, *arrays, index, unique):
    where = _emit_index(index, arrays, False)
    return f"np.tg_scatter({mode!r}, {x}, ({where}), {updates})"


def _primitive(name: str, mode: str) -> Primitive:
    return Primitive(
        name,
        impl=_impl(mode),
        shape=_shape,
        jvp=functools.partial(_jvp, mode),
        vjp=functools.partial(_vjp, mode),
        batch=functools.partial(_batch, mode),
        emit=functools.partial(_emit, mode),
        emit_array_api=functools.partial(_emit_array_api, mode),
        vjp_reads=READS_ALL,
        layout=Layout.C,
        taylor=_multiply_at_taylor if mode == "multiply" else series.LINEAR,
    )


setitem_p = _primitive("setitem", "set")
add_at_p = _primitive("add_at", "add")
multiply_at_p = _primitive("multiply_at", "multiply")
minimum_at_p = _primitive("minimum_at", "min")
maximum_at_p = _primitive("maximum_at", "max")

_BY_MODE = {
    "set": setitem_p,
    "add": add_at_p,
    "multiply": multiply_at_p,
    "min": minimum_at_p,
    "max": maximum_at_p,
}
PRIMITIVES = tuple(_BY_MODE.values())
