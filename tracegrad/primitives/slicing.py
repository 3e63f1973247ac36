"""Strided slices and their transpose: `slice` (basic indexing, a view) and `pad_strided`
(zeros with the sliced-out values put back, `lax.pad` with interior padding).

`x[...]` with ints, slices, None and Ellipsis lowers to one static `slice` plus reshapes;
bounds are canonical (`canonical_slice`), so equal selections give equal nodes. The two
primitives are each other's derivatives.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_NOTHING, Primitive
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.axes import insert
from tracegrad.primitives.views import linear_jvp, unary_batch

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


def py_slice(s, l, k):
    # A negative stride's limit of -1 means "through element 0": Python spells that `None`.
    return slice(s, None if l < 0 else l, k)


def _slices(starts, limits, strides):
    return tuple(py_slice(s, l, k) for s, l, k in zip(starts, limits, strides))


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
    if not carries_derivative(x):
        return (None,)
    x_shape = shape_of(x)
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
    return (pad_strided(x_bar, x_shape, tuple(pos_starts), tuple(pos_strides)),)


def _slice_batch(args, dims, *, starts, limits, strides):
    # a full slice of the batch axis, where it already is
    (x,), (d,) = args, dims
    (s, l, k), _ = canonical_slice(0, shape_of(x)[d], 1)
    out = bind(
        slice_p,
        x,
        starts=starts[:d] + (s,) + starts[d:],
        limits=limits[:d] + (l,) + limits[d:],
        strides=strides[:d] + (k,) + strides[d:],
    )
    return out, d


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
    batch=_slice_batch,
    emit=_slice_emit,
    vjp_reads=READS_NOTHING,
    layout=Layout.VIEW,
    torch_name="SliceBackward0",
    taylor=series.LINEAR,
)

# -- pad_strided ------------------------------------------------------------------------------


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
    out = np.zeros(shape, dtype_of(x))
    limits = _strided_limits(np.shape(x), starts, strides)
    out[tuple(slice(s, l, k) for s, l, k in zip(starts, limits, strides))] = x
    return out


def _pad_strided_vjp(x_bar, x, *, out, shape, starts, strides):
    if not carries_derivative(x):
        return (None,)
    return (slice_static(x_bar, starts, _strided_limits(shape_of(x), starts, strides), strides),)


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


def _pad_strided_emit_array_api(x, *, shape, starts, strides):
    # the shape of x is known here: the window's bounds are literals
    return f"np.tg_pad_strided({x}, {shape!r}, {starts!r}, {strides!r})"


@unary_batch
def _pad_strided_batch(x, dim, *, shape, starts, strides):
    size = shape_of(x)[dim]
    return pad_strided(
        x, insert(shape, dim, size), insert(starts, dim, 0), insert(strides, dim, 1)
    ), dim


pad_strided_p = Primitive(
    "pad_strided",
    impl=_pad_strided_impl,
    shape=_pad_strided_shape,
    jvp=linear_jvp(pad_strided),
    vjp=_pad_strided_vjp,
    batch=_pad_strided_batch,
    emit=_pad_strided_emit,
    emit_array_api=_pad_strided_emit_array_api,
    vjp_reads=READS_NOTHING,
    layout=Layout.C,
    taylor=series.LINEAR,
)

PRIMITIVES = (slice_p, pad_strided_p)
