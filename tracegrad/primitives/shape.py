"""Shape primitives: reshape, transpose, broadcast_to, expand_dims, squeeze, concatenate, split,
flip, repeat, tile, pad and pad_strided.

They move or copy elements without arithmetic, so their rules are other shape operations.
Several return views of their input (`view_of=0`): the memory analysis counts no bytes for
them and keeps their base alive. Like NumPy, every result is a strong (non-weak) array, even
when the input was a Python scalar: `np.reshape(2.0, ())` is a 0-d float64 array.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval, is_float


def _shape(x) -> tuple[int, ...]:
    # arrays, tracers and Python scalars alike (rules receive all three)
    s = getattr(x, "shape", None)
    return () if s is None else tuple(s)


def _dtype(x) -> np.dtype:
    d = getattr(x, "dtype", None)
    return np.result_type(x) if d is None else np.dtype(d)


def _zeros(shape, dtype):
    """A read-only zero array: a broadcast 0-d constant, so it costs no memory of its own.

    Bound on a plain array, it is folded at once even inside a trace, and becomes a `const`.
    """
    return broadcast_to(np.zeros((), dtype), shape)


def _unary_linear(fn):
    # jvp of a linear one-input primitive: the same operation on the tangent
    def jvp(primals, tangents, *, out, **params):
        (x_dot,) = tangents
        return None if x_dot is None else fn(x_dot, **params)

    return jvp


def _fmt_shape(shape) -> str:
    return str(tuple(shape))


# Batching rules receive the whole batch with its batch axis at `dim`, and per-example params.
# Most rules here keep the batch axis where it is and shift the per-example axes they name
# past it, so no transpose is added; reshape, broadcast_to and concatenate move it first.


def _at(axis: int, dim: int) -> int:
    """Where per-example axis `axis` sits in a batched value whose batch axis is `dim`."""
    return axis if axis < dim else axis + 1


def _insert(seq: tuple, dim: int, item) -> tuple:
    return tuple(seq[:dim]) + (item,) + tuple(seq[dim:])


def _unary_batch(rule):
    # the shape primitives other than concatenate take one array, which is then batched
    def batch(args, dims, **params):
        (x,), (dim,) = args, dims
        return rule(x, dim, **params)

    return batch


# -- reshape ----------------------------------------------------------------------------------


def reshape(x, shape):
    return bind(reshape_p, x, shape=tuple(int(d) for d in shape))


def _reshape_shape(x: Aval, *, shape):
    if any(d < 0 for d in shape) or math.prod(shape) != x.size:
        raise ValueError(
            f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) into "
            f"shape {shape} ({math.prod(shape)} elements); the new shape must have the same "
            "number of elements (one axis may be -1 to infer it)"
        )
    return Aval(shape, x.dtype)


@_unary_batch
def _reshape_batch(x, dim, *, shape):
    # a reshape reads elements in C order, so the batch axis must lead to stay separate
    from tracegrad.primitives.batching import move_to_front

    x = move_to_front(x, dim)
    return reshape(x, _shape(x)[:1] + shape), 0


reshape_p = Primitive(
    "reshape",
    impl=lambda x, *, shape: np.reshape(x, shape),
    shape=_reshape_shape,
    jvp=_unary_linear(lambda t, *, shape: reshape(t, shape)),
    vjp=lambda x_bar, x, *, out, shape: (reshape(x_bar, _shape(x)),),
    batch=_reshape_batch,
    emit=lambda x, *, shape: f"np.reshape({x}, {shape!r})",
    view_of=0,
)

# -- broadcast_to -----------------------------------------------------------------------------


def broadcast_to(x, shape):
    return bind(broadcast_to_p, x, shape=tuple(int(d) for d in shape))


def _broadcast_to_shape(x: Aval, *, shape):
    ok = (
        len(shape) >= x.ndim
        and all(d >= 0 for d in shape)
        and all(d in (1, s) for d, s in zip(x.shape[::-1], shape[::-1]))
    )
    if not ok:
        raise ValueError(
            f"broadcast_to: cannot broadcast an array of shape {x.shape} to {shape}; each "
            "trailing axis must equal the target's or be 1"
        )
    return Aval(shape, x.dtype)


@_unary_batch
def _broadcast_to_batch(x, dim, *, shape):
    # broadcasting aligns trailing axes: the batch axis leads, the per-example axes are
    # lined up after it with size-1 axes, then broadcast (a view; nothing is copied)
    from tracegrad.primitives.batching import move_to_front

    x = move_to_front(x, dim)
    s = _shape(x)
    new = len(shape) - (len(s) - 1)
    if new:
        x = expand_dims(x, tuple(range(1, 1 + new)))
    return broadcast_to(x, s[:1] + shape), 0


def _broadcast_to_vjp(x_bar, x, *, out, shape):
    from tracegrad.primitives.broadcasting import unbroadcast

    return (unbroadcast(x_bar, Aval(_shape(x), _dtype(x))),)


broadcast_to_p = Primitive(
    "broadcast_to",
    impl=lambda x, *, shape: np.broadcast_to(x, shape),
    shape=_broadcast_to_shape,
    jvp=_unary_linear(lambda t, *, shape: broadcast_to(t, shape)),
    vjp=_broadcast_to_vjp,
    batch=_broadcast_to_batch,
    emit=lambda x, *, shape: f"np.broadcast_to({x}, {shape!r})",
    view_of=0,
)

# -- transpose --------------------------------------------------------------------------------


def transpose(x, axes):
    return bind(transpose_p, x, axes=tuple(int(a) for a in axes))


def _transpose_shape(x: Aval, *, axes):
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(
            f"transpose: axes {axes} are not a permutation of the {x.ndim} axes of an array of "
            f"shape {x.shape}; give each axis 0..{x.ndim - 1} exactly once"
        )
    return Aval(tuple(x.shape[a] for a in axes), x.dtype)


@_unary_batch
def _transpose_batch(x, dim, *, axes):
    # one transpose: the batch axis first, then the per-example permutation
    return transpose(x, (dim,) + tuple(_at(a, dim) for a in axes)), 0


transpose_p = Primitive(
    "transpose",
    impl=lambda x, *, axes: np.transpose(x, axes),
    shape=_transpose_shape,
    jvp=_unary_linear(lambda t, *, axes: transpose(t, axes)),
    vjp=lambda x_bar, x, *, out, axes: (transpose(x_bar, tuple(int(a) for a in np.argsort(axes))),),
    batch=_transpose_batch,
    emit=lambda x, *, axes: f"np.transpose({x}, {axes!r})",
    view_of=0,
)

# -- expand_dims / squeeze --------------------------------------------------------------------


def expand_dims(x, axis):
    """Insert size-1 axes at the positions `axis` (sorted, non-negative, of the result)."""
    return bind(expand_dims_p, x, axis=tuple(int(a) for a in axis))


def _expand_dims_shape(x: Aval, *, axis):
    n = x.ndim + len(axis)
    if len(set(axis)) != len(axis) or not all(0 <= a < n for a in axis):
        raise ValueError(
            f"expand_dims: axis {axis} must be distinct positions in 0..{n - 1} of the result "
            f"for an array of shape {x.shape}"
        )
    dims = iter(x.shape)
    return Aval(tuple(1 if i in axis else next(dims) for i in range(n)), x.dtype)


@_unary_batch
def _expand_dims_batch(x, dim, *, axis):
    # the batch axis stays just before the per-example axis it preceded in the input (last
    # if it was last); new axes at or after that position shift by one
    rank = len(_shape(x)) - 1 + len(axis)
    kept = [i for i in range(rank) if i not in axis]
    p = kept[dim] if dim < len(kept) else rank
    return expand_dims(x, tuple(a if a < p else a + 1 for a in axis)), p


expand_dims_p = Primitive(
    "expand_dims",
    impl=lambda x, *, axis: np.expand_dims(x, axis),
    shape=_expand_dims_shape,
    jvp=_unary_linear(lambda t, *, axis: expand_dims(t, axis)),
    vjp=lambda x_bar, x, *, out, axis: (reshape(x_bar, _shape(x)),),
    batch=_expand_dims_batch,
    emit=lambda x, *, axis: f"np.expand_dims({x}, {axis!r})",
    view_of=0,
)


def squeeze(x, axis):
    """Remove the size-1 axes in `axis` (sorted, non-negative)."""
    return bind(squeeze_p, x, axis=tuple(int(a) for a in axis))


def _squeeze_shape(x: Aval, *, axis):
    for a in axis:
        if not 0 <= a < x.ndim:
            raise ValueError(f"squeeze: axis {a} is out of range for an array of shape {x.shape}")
        if x.shape[a] != 1:
            raise ValueError(
                f"squeeze: cannot squeeze axis {a} of an array of shape {x.shape}: its size is "
                f"{x.shape[a]}, not 1; squeeze only size-1 axes (or use reshape)"
            )
    return Aval(tuple(d for i, d in enumerate(x.shape) if i not in axis), x.dtype)


@_unary_batch
def _squeeze_batch(x, dim, *, axis):
    out_dim = dim - sum(1 for a in axis if a < dim)
    return squeeze(x, tuple(_at(a, dim) for a in axis)), out_dim


squeeze_p = Primitive(
    "squeeze",
    impl=lambda x, *, axis: np.squeeze(x, axis=axis),
    shape=_squeeze_shape,
    jvp=_unary_linear(lambda t, *, axis: squeeze(t, axis)),
    vjp=lambda x_bar, x, *, out, axis: (reshape(x_bar, _shape(x)),),
    batch=_squeeze_batch,
    emit=lambda x, *, axis: f"np.squeeze({x}, axis={axis!r})",
    view_of=0,
)

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
        t if t is not None else _zeros(_shape(x), _dtype(out)) for x, t in zip(primals, tangents)
    ]
    return concatenate(parts, axis)


def _concatenate_vjp(x_bar, *xs, out, axis):
    from tracegrad.primitives import elementwise, indexing

    shape = _shape(x_bar)
    bars = []
    start = 0
    for x in xs:
        n = _shape(x)[axis]
        if is_float(_dtype(x)):
            starts = tuple(start if k == axis else 0 for k in range(len(shape)))
            limits = tuple(start + n if k == axis else d for k, d in enumerate(shape))
            bar = indexing.slice_static(x_bar, starts, limits)
            if _dtype(bar) != _dtype(x):  # a float32 input joined with float64 ones
                bar = elementwise.astype(bar, _dtype(x))
            bars.append(bar)
        else:
            bars.append(None)
        start += n
    return tuple(bars)


def _concatenate_batch(xs, dims, *, axis):
    # every operand needs the batch axis, at the same place: unbatched ones are broadcast
    # along it (a view), then one concatenate joins the whole batch
    from tracegrad.primitives.batching import batch_size, materialize

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
    if all(b is None for b in out_bars) or not is_float(_dtype(x)):
        return (None,)
    dtype = next(_dtype(b) for b in out_bars if b is not None)
    parts = [b if b is not None else _zeros(_shape(o), dtype) for b, o in zip(out_bars, out)]
    return (concatenate(parts, axis),)


@_unary_batch
def _split_batch(x, dim, *, indices, axis):
    outs = split(x, indices, _at(axis, dim))
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
    view_of=0,
)

# -- flip -------------------------------------------------------------------------------------


def flip(x, axis):
    """Reverse the order of elements along each axis in `axis` (sorted, non-negative)."""
    return bind(flip_p, x, axis=tuple(int(a) for a in axis))


def _flip_shape(x: Aval, *, axis):
    if len(set(axis)) != len(axis) or not all(0 <= a < x.ndim for a in axis):
        raise ValueError(f"flip: axis {axis} must be distinct axes of an array of shape {x.shape}")
    return Aval(x.shape, x.dtype)


@_unary_batch
def _flip_batch(x, dim, *, axis):
    return flip(x, tuple(_at(a, dim) for a in axis)), dim


flip_p = Primitive(
    "flip",
    impl=lambda x, *, axis: np.flip(x, axis),
    shape=_flip_shape,
    jvp=_unary_linear(lambda t, *, axis: flip(t, axis)),
    vjp=lambda x_bar, x, *, out, axis: (flip(x_bar, axis),),
    batch=_flip_batch,
    emit=lambda x, *, axis: f"np.flip({x}, {axis!r})",
    view_of=0,
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
    from tracegrad.primitives import reduction

    if not is_float(_dtype(x)):
        return (None,)
    shape = _shape(x)
    n = shape[axis]
    if n == 0:  # nothing was repeated: the cotangent already has the input's shape
        return (x_bar,)
    if isinstance(repeats, tuple) and len(set(repeats)) == 1:
        repeats = repeats[0]
    if isinstance(repeats, int):
        # the copies of element j sit side by side: view them as an extra axis and sum it
        grouped = reshape(x_bar, shape[:axis] + (n, repeats) + shape[axis + 1 :])
        return (reduction.sum(grouped, (axis + 1,)),)
    # uneven counts: cut the cotangent into one run per element and sum each run
    cuts = tuple(int(c) for c in np.cumsum(repeats)[:-1])
    runs = split(x_bar, cuts, axis)
    return (concatenate([reduction.sum(r, (axis,), keepdims=True) for r in runs], axis),)


@_unary_batch
def _repeat_batch(x, dim, *, repeats, axis):
    # the per-element counts refer to the same axis, only at a shifted position
    return repeat(x, repeats, _at(axis, dim)), dim


repeat_p = Primitive(
    "repeat",
    impl=lambda x, *, repeats, axis: np.repeat(x, repeats, axis=axis),
    shape=_repeat_shape,
    jvp=_unary_linear(lambda t, *, repeats, axis: repeat(t, repeats, axis)),
    vjp=_repeat_vjp,
    batch=_repeat_batch,
    emit=lambda x, *, repeats, axis: f"np.repeat({x}, {repeats!r}, axis={axis!r})",
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
    from tracegrad.primitives import reduction

    if not is_float(_dtype(x)):
        return (None,)
    shape, reps = _tile_aligned(_shape(x), reps)
    # output index r * d + j along each axis: split every axis into (reps, d), sum the reps
    grouped = reshape(x_bar, tuple(v for r, d in zip(reps, shape) for v in (r, d)))
    summed = reduction.sum(grouped, tuple(range(0, 2 * len(shape), 2)))
    return (reshape(summed, _shape(x)),)


@_unary_batch
def _tile_batch(x, dim, *, reps):
    # align shape and reps as np.tile does, then repeat the batch axis once; when reps is the
    # longer, np.tile's own leading 1s (for the batched value too) move the batch axis right
    rank = len(_shape(x)) - 1
    n = max(rank, len(reps))
    aligned = (1,) * (n - len(reps)) + tuple(reps)
    out_dim = dim + n - rank
    return tile(x, _insert(aligned, out_dim, 1)), out_dim


tile_p = Primitive(
    "tile",
    impl=lambda x, *, reps: np.tile(x, reps),
    shape=_tile_shape,
    jvp=_unary_linear(lambda t, *, reps: tile(t, reps)),
    vjp=_tile_vjp,
    batch=_tile_batch,
    emit=lambda x, *, reps: f"np.tile({x}, {reps!r})",
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
    from tracegrad.primitives import indexing

    if not is_float(_dtype(x)):
        return (None,)
    starts = tuple(b for b, _ in pad_width)
    limits = tuple(b + d for (b, _), d in zip(pad_width, _shape(x)))
    return (indexing.slice_static(x_bar, starts, limits),)


@_unary_batch
def _pad_batch(x, dim, *, pad_width, constant_values):
    return pad(x, _insert(pad_width, dim, (0, 0)), constant_values), dim


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
)


def pad_strided(x, shape, starts, strides):
    """Zeros of `shape` with `x` at `starts[i] + k * strides[i]` along each axis: the
    transpose of a strided slice (lax.pad with interior padding)."""
    return bind(
        pad_strided_p,
        x,
        shape=tuple(int(d) for d in shape),
        starts=tuple(int(s) for s in starts),
        strides=tuple(int(k) for k in strides),
    )


def _strided_limits(x_shape, starts, strides):
    # one past the last position each axis writes (start itself when nothing is written)
    return tuple(s + (n - 1) * k + 1 if n else s for n, s, k in zip(x_shape, starts, strides))


def _pad_strided_shape(x: Aval, *, shape, starts, strides):
    ok = len(shape) == len(starts) == len(strides) == x.ndim and all(
        k >= 1 and 0 <= s <= l <= d
        for s, k, l, d in zip(starts, strides, _strided_limits(x.shape, starts, strides), shape)
    )
    if not ok:
        raise ValueError(
            f"pad_strided: an array of shape {x.shape} placed at starts {starts} with strides "
            f"{strides} does not fit in shape {shape}"
        )
    return Aval(shape, x.dtype)


def _pad_strided_impl(x, *, shape, starts, strides):
    out = np.zeros(shape, _dtype(x))
    limits = _strided_limits(np.shape(x), starts, strides)
    out[tuple(slice(s, l, k) for s, l, k in zip(starts, limits, strides))] = x
    return out


def _pad_strided_vjp(x_bar, x, *, out, shape, starts, strides):
    from tracegrad.primitives import indexing

    if not is_float(_dtype(x)):
        return (None,)
    return (
        indexing.slice_static(x_bar, starts, _strided_limits(_shape(x), starts, strides), strides),
    )


def _pad_strided_emit(x, *, shape, starts, strides):
    # one expression: allocate zeros, assign x into the strided window, yield the array
    index = "".join(
        f"slice({s}, {s} + {k} * v.shape[{i}], {k}), "
        for i, (s, k) in enumerate(zip(starts, strides))
    )
    return (
        f"(lambda o, v: (o.__setitem__(({index}), v), o)[1])"
        f"(np.zeros({shape!r}, np.result_type({x})), {x})"
    )


@_unary_batch
def _pad_strided_batch(x, dim, *, shape, starts, strides):
    size = _shape(x)[dim]
    out = pad_strided(
        x, _insert(shape, dim, size), _insert(starts, dim, 0), _insert(strides, dim, 1)
    )
    return out, dim


pad_strided_p = Primitive(
    "pad_strided",
    impl=_pad_strided_impl,
    shape=_pad_strided_shape,
    jvp=_unary_linear(lambda t, *, shape, starts, strides: pad_strided(t, shape, starts, strides)),
    vjp=_pad_strided_vjp,
    batch=_pad_strided_batch,
    emit=_pad_strided_emit,
)

# -- ascontiguousarray ------------------------------------------------------------------------


def ascontiguousarray(x):
    """`np.ascontiguousarray(x)`: the same values in C order. Layout matters for bits: a
    later reduction sums in memory order, so `np.take` (which returns C order) is a gather
    followed by this."""
    return bind(ascontiguousarray_p, x)


def _ascontiguousarray_batch(args, dims):
    from tracegrad.primitives.batching import move_to_front

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
    vjp=lambda x_bar, x, *, out: (
        reshape(x_bar, np.shape(x) if not hasattr(x, "shape") else x.shape),
    ),
    batch=_ascontiguousarray_batch,
    emit=lambda x: f"np.ascontiguousarray({x})",
)

PRIMITIVES = (
    ascontiguousarray_p,
    reshape_p,
    broadcast_to_p,
    transpose_p,
    expand_dims_p,
    squeeze_p,
    concatenate_p,
    split_p,
    flip_p,
    repeat_p,
    tile_p,
    pad_p,
    pad_strided_p,
)
