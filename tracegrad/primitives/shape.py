"""Shape primitives: reshape, transpose, broadcast_to, expand_dims, squeeze and friends.

They move or copy elements without arithmetic, so their rules are other shape operations.
Several return views of their input (`view_of=0`): the memory analysis counts no bytes for
them and keeps their base alive.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval


def reshape(x, shape):
    return bind(reshape_p, x, shape=tuple(int(d) for d in shape))


def _reshape_shape(x: Aval, *, shape):
    if int(np.prod(shape)) != x.size:
        raise ValueError(f"reshape: cannot reshape an array of shape {x.shape} into shape {shape}")
    return Aval(shape, x.dtype, x.weak_type)


def _reshape_vjp(x_bar, x, *, out, shape):
    return (reshape(x_bar, np.shape(x) if not hasattr(x, "aval") else x.shape),)


reshape_p = Primitive(
    "reshape",
    impl=lambda x, *, shape: np.reshape(x, shape),
    shape=_reshape_shape,
    jvp=lambda primals, tangents, *, out, shape: (
        None if tangents[0] is None else reshape(tangents[0], shape)),
    vjp=_reshape_vjp,
    emit=lambda x, *, shape: f"np.reshape({x}, {shape!r})",
    view_of=0,
)


def broadcast_to(x, shape):
    return bind(broadcast_to_p, x, shape=tuple(int(d) for d in shape))


def _broadcast_to_shape(x: Aval, *, shape):
    try:
        np.broadcast_shapes(x.shape, shape)
        ok = len(shape) >= x.ndim and all(
            d in (1, s) for d, s in zip(x.shape[::-1], shape[::-1]))
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"broadcast_to: cannot broadcast an array of shape {x.shape} to {shape}")
    return Aval(shape, x.dtype, x.weak_type)


def _broadcast_to_vjp(x_bar, x, *, out, shape):
    from tracegrad.primitives.broadcasting import unbroadcast
    from tracegrad.primitives.elementwise import _aval

    return (unbroadcast(x_bar, _aval(x)),)


broadcast_to_p = Primitive(
    "broadcast_to",
    impl=lambda x, *, shape: np.broadcast_to(x, shape),
    shape=_broadcast_to_shape,
    jvp=lambda primals, tangents, *, out, shape: (
        None if tangents[0] is None else broadcast_to(tangents[0], shape)),
    vjp=_broadcast_to_vjp,
    emit=lambda x, *, shape: f"np.broadcast_to({x}, {shape!r})",
    view_of=0,
)


def transpose(x, axes):
    return bind(transpose_p, x, axes=tuple(int(a) for a in axes))


def _transpose_shape(x: Aval, *, axes):
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of the {x.ndim} axes of {x.shape}")
    return Aval(tuple(x.shape[a] for a in axes), x.dtype, x.weak_type)


transpose_p = Primitive(
    "transpose",
    impl=lambda x, *, axes: np.transpose(x, axes),
    shape=_transpose_shape,
    jvp=lambda primals, tangents, *, out, axes: (
        None if tangents[0] is None else transpose(tangents[0], axes)),
    vjp=lambda x_bar, x, *, out, axes: (transpose(x_bar, tuple(np.argsort(axes))),),
    emit=lambda x, *, axes: f"np.transpose({x}, {axes!r})",
    view_of=0,
)

PRIMITIVES = (reshape_p, broadcast_to_p, transpose_p)
