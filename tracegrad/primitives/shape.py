"""Shape primitives that copy: concatenate, split, repeat, tile, pad and ascontiguousarray.

They move or copy elements without arithmetic, so their rules are other shape operations
(the views are in `views.py`, slices in `slicing.py`). Like NumPy, every result is a strong
(non-weak) array.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_NOTHING, Primitive
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.axes import at, insert
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.broadcasting import sum as reduce_sum
from tracegrad.primitives.elementwise import convert
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import linear_jvp, move_to_front, reshape, unary_batch


def _zeros(shape, dtype):
    """A read-only zero array: a broadcast 0-d constant, so it costs no memory of its own.

    Bound on a plain array, it is folded at once even inside a trace, and becomes a `const`.
    """
    return broadcast_to(np.zeros((), dtype), shape)


# -- concatenate / split ----------------------------------------------------------------------


def concatenate(xs, axis):
    """Join the arrays `xs` (one or more, same ndim >= 1) along the non-negative `axis`."""
    return bind(concatenate_p, *xs, axis=int(axis))


def _concatenate_shape(*xs: Aval, axis):
    if not xs:
        raise ValueError("concatenate: needs at least one array to concatenate")
    first = xs[0]
    if first.ndim == 0:
        raise ValueError(
            "concatenate: zero-dimensional arrays cannot be concatenated; use stack, or "
            "reshape them to shape (1,) first"
        )
    if not 0 <= axis < first.ndim:
        raise ValueError(
            f"concatenate: axis {axis} is out of bounds for arrays of shape {first.shape}"
        )
    for i, x in enumerate(xs[1:], 1):
        if x.ndim != first.ndim:
            raise ValueError(
                f"concatenate: shapes {first.shape} (array 0) and {x.shape} (array {i}) have "
                "different numbers of dimensions; expand_dims or reshape one of them"
            )
        for k, (a, b) in enumerate(zip(first.shape, x.shape)):
            if k != axis and a != b:
                raise ValueError(
                    f"concatenate: shapes {first.shape} (array 0) and {x.shape} (array {i}) "
                    f"differ along axis {k} ({a} vs {b}); all arrays must have the same shape "
                    f"except along the concatenation axis {axis}"
                )
    total = sum(x.shape[axis] for x in xs)
    out_shape = first.shape[:axis] + (total,) + first.shape[axis + 1 :]
    return Aval(out_shape, np.result_type(*(x.dtype for x in xs)))


def _concatenate_jvp(primals, tangents, *, out, axis):
    if all(t is None for t in tangents):
        return None
    # a value with no tangent (constant or integer) contributes zeros of the output's dtype
    parts = [
        t if t is not None else _zeros(shape_of(x), dtype_of(out))
        for x, t in zip(primals, tangents)
    ]
    return concatenate(parts, axis)


def _concatenate_vjp(x_bar, *xs, out, axis):
    shape = shape_of(x_bar)
    bars = []
    start = 0
    for x in xs:
        n = shape_of(x)[axis]
        if carries_derivative(x):
            starts = tuple(start if k == axis else 0 for k in range(len(shape)))
            limits = tuple(start + n if k == axis else d for k, d in enumerate(shape))
            bar = slice_static(x_bar, starts, limits)
            # a float32 input joined with float64 ones; a real one with complex ones takes
            # the real part (JAX's convention)
            bars.append(convert(bar, dtype_of(x)))
        else:
            bars.append(None)
        start += n
    return tuple(bars)


def _concatenate_batch(xs, dims, *, axis):
    # every operand needs the batch axis, at the same place: unbatched ones are broadcast
    # along it (a view), then one concatenate joins the whole batch
    size = batch_size(xs, dims)
    return concatenate([materialize(x, d, size) for x, d in zip(xs, dims)], axis + 1), 0


concatenate_p = Primitive(
    "concatenate",
    impl=lambda *xs, axis: np.concatenate(xs, axis=axis),
    shape=_concatenate_shape,
    jvp=_concatenate_jvp,
    vjp=_concatenate_vjp,
    batch=_concatenate_batch,
    emit=lambda *xs, axis: f"np.concatenate(({', '.join(xs)},), axis={axis!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
    torch_name="CatBackward0",
    taylor=series.LINEAR,
)


def split(x, indices, axis):
    """Pieces of `x` cut before each of `indices` (non-decreasing, in 0..n) along `axis`."""
    return bind(split_p, x, indices=tuple(int(i) for i in indices), axis=int(axis))


def _split_bounds(n, indices):
    return list(zip((0,) + tuple(indices), tuple(indices) + (n,)))


def _split_shape(x: Aval, *, indices, axis):
    if not 0 <= axis < x.ndim:
        raise ValueError(f"split: axis {axis} is out of bounds for an array of shape {x.shape}")
    n = x.shape[axis]
    if any(b < a for a, b in _split_bounds(n, indices)) or any(not 0 <= i <= n for i in indices):
        raise ValueError(
            f"split: indices {indices} must be non-decreasing and within 0..{n} to cut axis "
            f"{axis} of an array of shape {x.shape}"
        )
    return tuple(
        Aval(x.shape[:axis] + (b - a,) + x.shape[axis + 1 :], x.dtype)
        for a, b in _split_bounds(n, indices)
    )


def _split_jvp(primals, tangents, *, out, indices, axis):
    (x_dot,) = tangents
    if x_dot is None:
        return (None,) * (len(indices) + 1)
    return split(x_dot, indices, axis)


def _split_vjp(out_bars, x, *, out, indices, axis):
    if all(b is None for b in out_bars) or not carries_derivative(x):
        return (None,)
    dtype = next(dtype_of(b) for b in out_bars if b is not None)
    parts = [b if b is not None else _zeros(shape_of(o), dtype) for b, o in zip(out_bars, out)]
    return (concatenate(parts, axis),)


@unary_batch
def _split_batch(x, dim, *, indices, axis):
    outs = split(x, indices, at(axis, dim))
    return tuple(outs), (dim,) * len(outs)


split_p = Primitive(
    "split",
    impl=lambda x, *, indices, axis: tuple(np.split(x, list(indices), axis=axis)),
    shape=_split_shape,
    jvp=_split_jvp,
    vjp=_split_vjp,
    batch=_split_batch,
    emit=lambda x, *, indices, axis: f"tuple(np.split({x}, {list(indices)!r}, axis={axis!r}))",
    multiple_results=True,
    vjp_reads=READS_NOTHING,
    layout=Layout.VIEW,
    taylor=series.LINEAR,
)

# -- repeat / tile ----------------------------------------------------------------------------


def repeat(x, repeats, axis):
    """Repeat each element along `axis`: `repeats` is an int, or one int per element."""
    repeats = int(repeats) if isinstance(repeats, int | np.integer) else tuple(map(int, repeats))
    return bind(repeat_p, x, repeats=repeats, axis=int(axis))


def _repeat_shape(x: Aval, *, repeats, axis):
    if not 0 <= axis < x.ndim:
        raise ValueError(f"repeat: axis {axis} is out of bounds for an array of shape {x.shape}")
    n = x.shape[axis]
    if isinstance(repeats, tuple):
        if len(repeats) != n:
            raise ValueError(
                f"repeat: got {len(repeats)} repeat counts for axis {axis} of an array of shape "
                f"{x.shape}; give one count per element ({n}) or a single int"
            )
        total = sum(repeats)
    else:
        total = n * repeats
        repeats = (repeats,)
    if any(r < 0 for r in repeats):
        raise ValueError(f"repeat: repeat counts must be non-negative, got {repeats}")
    return Aval(x.shape[:axis] + (total,) + x.shape[axis + 1 :], x.dtype)


def _repeat_vjp(x_bar, x, *, out, repeats, axis):
    if not carries_derivative(x):
        return (None,)
    shape = shape_of(x)
    n = shape[axis]
    if n == 0:  # nothing was repeated: the cotangent already has the input's shape
        return (x_bar,)
    if isinstance(repeats, tuple) and len(set(repeats)) == 1:
        repeats = repeats[0]
    if isinstance(repeats, int):
        # the copies of element j sit side by side: view them as an extra axis and sum it
        grouped = reshape(x_bar, shape[:axis] + (n, repeats) + shape[axis + 1 :])
        return (reduce_sum(grouped, (axis + 1,)),)
    # uneven counts: cut the cotangent into one run per element and sum each run
    cuts = tuple(int(c) for c in np.cumsum(repeats)[:-1])
    runs = split(x_bar, cuts, axis)
    return (concatenate([reduce_sum(r, (axis,), keepdims=True) for r in runs], axis),)


@unary_batch
def _repeat_batch(x, dim, *, repeats, axis):
    # the per-element counts refer to the same axis, only at a shifted position
    return repeat(x, repeats, at(axis, dim)), dim


repeat_p = Primitive(
    "repeat",
    impl=lambda x, *, repeats, axis: np.repeat(x, repeats, axis=axis),
    shape=_repeat_shape,
    jvp=linear_jvp(repeat),
    vjp=_repeat_vjp,
    batch=_repeat_batch,
    emit=lambda x, *, repeats, axis: f"np.repeat({x}, {repeats!r}, axis={axis!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.C,
    taylor=series.LINEAR,
)


def tile(x, reps):
    """`np.tile(x, reps)` with `reps` a tuple of non-negative ints."""
    return bind(tile_p, x, reps=tuple(int(r) for r in reps))


def _tile_aligned(shape, reps):
    # np.tile pads the shorter of shape and reps with leading 1s
    n = max(len(shape), len(reps))
    return (1,) * (n - len(shape)) + tuple(shape), (1,) * (n - len(reps)) + tuple(reps)


def _tile_shape(x: Aval, *, reps):
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative, got reps {reps}")
    shape, reps = _tile_aligned(x.shape, reps)
    return Aval(tuple(d * r for d, r in zip(shape, reps)), x.dtype)


def _tile_vjp(x_bar, x, *, out, reps):
    if not carries_derivative(x):
        return (None,)
    shape, reps = _tile_aligned(shape_of(x), reps)
    # output index r * d + j along each axis: split every axis into (reps, d), sum the reps
    grouped = reshape(x_bar, tuple(v for r, d in zip(reps, shape) for v in (r, d)))
    summed = reduce_sum(grouped, tuple(range(0, 2 * len(shape), 2)))
    return (reshape(summed, shape_of(x)),)


@unary_batch
def _tile_batch(x, dim, *, reps):
    # align shape and reps as np.tile does, then repeat the batch axis once; when reps is the
    # longer, np.tile's own leading 1s (for the batched value too) move the batch axis right
    rank = len(shape_of(x)) - 1
    n = max(rank, len(reps))
    aligned = (1,) * (n - len(reps)) + tuple(reps)
    out_dim = dim + n - rank
    return tile(x, insert(aligned, out_dim, 1)), out_dim


tile_p = Primitive(
    "tile",
    impl=lambda x, *, reps: np.tile(x, reps),
    shape=_tile_shape,
    jvp=linear_jvp(tile),
    vjp=_tile_vjp,
    batch=_tile_batch,
    emit=lambda x, *, reps: f"np.tile({x}, {reps!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
    torch_name="RepeatBackward0",
    taylor=series.LINEAR,
)

# -- pad / pad_strided ------------------------------------------------------------------------


def pad(x, pad_width, constant_values=0.0):
    """`np.pad(x, pad_width, mode='constant', constant_values=c)`; `pad_width` is one
    `(before, after)` pair of non-negative ints per axis, `c` a Python scalar."""
    pad_width = tuple((int(b), int(a)) for b, a in pad_width)
    return bind(pad_p, x, pad_width=pad_width, constant_values=constant_values)


def _pad_shape(x: Aval, *, pad_width, constant_values):
    if len(pad_width) != x.ndim or any(b < 0 or a < 0 for b, a in pad_width):
        raise ValueError(
            f"pad: pad_width {pad_width} must hold one (before, after) pair of non-negative "
            f"ints per axis of an array of shape {x.shape}"
        )
    return Aval(tuple(d + b + a for d, (b, a) in zip(x.shape, pad_width)), x.dtype)


def _pad_jvp(primals, tangents, *, out, pad_width, constant_values):
    (x_dot,) = tangents
    # the padding is a constant: its tangent is zero
    return None if x_dot is None else pad(x_dot, pad_width, 0.0)


def _pad_vjp(x_bar, x, *, out, pad_width, constant_values):
    if not carries_derivative(x):
        return (None,)
    starts = tuple(b for b, _ in pad_width)
    limits = tuple(b + d for (b, _), d in zip(pad_width, shape_of(x)))
    return (slice_static(x_bar, starts, limits),)


@unary_batch
def _pad_batch(x, dim, *, pad_width, constant_values):
    return pad(x, insert(pad_width, dim, (0, 0)), constant_values), dim


pad_p = Primitive(
    "pad",
    # NumPy reads an empty pad_width (of a 0-d array) as malformed; 0 means the same
    impl=lambda x, *, pad_width, constant_values: np.pad(
        x, pad_width or 0, mode="constant", constant_values=constant_values
    ),
    shape=_pad_shape,
    jvp=_pad_jvp,
    vjp=_pad_vjp,
    batch=_pad_batch,
    emit=lambda x, *, pad_width, constant_values: (
        f"np.pad({x}, {pad_width or 0!r}, mode='constant', constant_values={constant_values!r})"
    ),
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
    torch_name="ConstantPadNdBackward0",
    taylor=series.LINEAR,
)


# -- ascontiguousarray ------------------------------------------------------------------------


def ascontiguousarray(x):
    """`np.ascontiguousarray(x)`: the same values in C order. Layout matters for bits: a
    later reduction sums in memory order, so `np.take` (which returns C order) is a gather
    followed by this."""
    return bind(ascontiguousarray_p, x)


def _ascontiguousarray_batch(args, dims):
    (x,), (d,) = args, dims
    # the batch axis first keeps every example's elements contiguous and in C order
    return ascontiguousarray(move_to_front(x, d)), 0


ascontiguousarray_p = Primitive(
    "ascontiguousarray",
    impl=np.ascontiguousarray,
    shape=lambda x: Aval(x.shape or (1,), x.dtype),  # NumPy makes 0-d arrays 1-d
    jvp=lambda primals, tangents, *, out: (
        None if tangents[0] is None else ascontiguousarray(tangents[0])
    ),
    vjp=lambda x_bar, x, *, out: (reshape(x_bar, shape_of(x)),),
    batch=_ascontiguousarray_batch,
    emit=lambda x: f"np.ascontiguousarray({x})",
    vjp_reads=READS_NOTHING,
    layout=Layout.CONTIGUOUS,
    taylor=series.LINEAR,
)

PRIMITIVES = (
    ascontiguousarray_p,
    concatenate_p,
    split_p,
    repeat_p,
    tile_p,
    pad_p,
)
