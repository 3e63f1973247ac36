"""Views: reshape, transpose, expand_dims, squeeze and flip, and moving a batch axis.

They return views of their input (the memory analysis counts no bytes for them and keeps
their base alive) and are each other's derivatives, so this module needs no other family:
every other family writes its rules with them. Like NumPy, every result is a strong
(non-weak) array, even when the input was a Python scalar: `np.reshape(2.0, ())` is a 0-d
float64 array.

Batching rules receive the whole batch with its batch axis at `dim` and per-example params.
Most keep the batch axis where it is and shift the per-example axes they name past it, so no
transpose is added; reshape moves it to the front first (it reads elements in C order).
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_NOTHING, Primitive
from tracegrad.ir.types import Aval, int_tuple, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.axes import at


def linear_jvp(fn):
    """The jvp of a primitive that is linear in its one input: `fn` applied to the tangent."""

    def jvp(primals, tangents, *, out, **params):
        (x_dot,) = tangents
        return None if x_dot is None else fn(x_dot, **params)

    return jvp


def unary_batch(rule):
    """A batching rule for a one-input primitive, written as `rule(x, dim, **params)`."""

    def batch(args, dims, **params):
        (x,), (dim,) = args, dims
        return rule(x, dim, **params)

    return batch


def move_to_front(x, dim: int | None):
    """`x` with its batch axis first (a transpose, so a view); unbatched values unchanged."""
    if dim is None or dim == 0:
        return x
    n = len(shape_of(x))
    return transpose(x, (dim,) + tuple(i for i in range(n) if i != dim))


def move_axis(x, src: int, dst: int):
    """`np.moveaxis(x, src, dst)` as a transpose."""
    if src == dst:
        return x
    order = [i for i in range(len(shape_of(x))) if i != src]
    order.insert(dst, src)
    return transpose(x, tuple(order))


# -- reshape ----------------------------------------------------------------------------------


def reshape(x, shape):
    return bind(reshape_p, x, shape=int_tuple(shape))


def _reshape_shape(x: Aval, *, shape):
    if any(d < 0 for d in shape) or math.prod(shape) != x.size:
        raise ValueError(
            f"reshape: cannot reshape an array of shape {x.shape} ({x.size} elements) into "
            f"shape {shape} ({math.prod(shape)} elements); the new shape must have the same "
            "number of elements (one axis may be -1 to infer it)"
        )
    return Aval(shape, x.dtype)


@unary_batch
def _reshape_batch(x, dim, *, shape):
    # a reshape reads elements in C order, so the batch axis must lead to stay separate
    x = move_to_front(x, dim)
    return reshape(x, shape_of(x)[:1] + shape), 0


reshape_p = Primitive(
    "reshape",
    # (an array's own method: np.reshape's Python wrapper costs more than the reshape)
    impl=lambda x, *, shape: x.reshape(shape) if type(x) is np.ndarray else np.reshape(x, shape),
    shape=_reshape_shape,
    jvp=linear_jvp(reshape),
    vjp=lambda x_bar, x, *, out, shape: (reshape(x_bar, shape_of(x)),),
    batch=_reshape_batch,
    emit=lambda x, *, shape: f"np.reshape({x}, {shape!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.RESHAPED,
    torch_name="ViewBackward0",
    taylor=series.LINEAR,
)

# -- transpose --------------------------------------------------------------------------------


def transpose(x, axes):
    return bind(transpose_p, x, axes=int_tuple(axes))


def _transpose_shape(x: Aval, *, axes):
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(
            f"transpose: axes {axes} are not a permutation of the {x.ndim} axes of an array of "
            f"shape {x.shape}; give each axis 0..{x.ndim - 1} exactly once"
        )
    return Aval(tuple(x.shape[a] for a in axes), x.dtype)


@unary_batch
def _transpose_batch(x, dim, *, axes):
    # one transpose: the batch axis first, then the per-example permutation
    return transpose(x, (dim,) + tuple(at(a, dim) for a in axes)), 0


def _transpose_vjp(x_bar, x, *, out, axes):
    return (transpose(x_bar, tuple(int(a) for a in np.argsort(axes))),)


def _transpose_text(x: str, axes) -> str:
    # the same view as np.transpose, without its Python wrapper (a 2-d swap is `.T`); values of
    # fewer than two axes may be Python scalars in generated code, which have no methods
    if len(axes) < 2:
        return f"np.transpose({x}, {axes!r})"
    return f"{x}.T" if axes == (1, 0) else f"{x}.transpose({axes!r})"


transpose_p = Primitive(
    "transpose",
    impl=lambda x, *, axes: x.transpose(axes) if type(x) is np.ndarray else np.transpose(x, axes),
    shape=_transpose_shape,
    jvp=linear_jvp(transpose),
    vjp=_transpose_vjp,
    batch=_transpose_batch,
    emit=lambda x, *, axes: _transpose_text(x, axes),
    emit_array_api=lambda x, *, axes: f"np.transpose({x}, {axes!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.PERMUTED,
    torch_name="PermuteBackward0",
    taylor=series.LINEAR,
)

# -- expand_dims / squeeze --------------------------------------------------------------------


def expand_dims(x, axis):
    """Insert size-1 axes at the positions `axis` (sorted, non-negative, of the result)."""
    return bind(expand_dims_p, x, axis=int_tuple(axis))


def _expand_dims_shape(x: Aval, *, axis):
    n = x.ndim + len(axis)
    if len(set(axis)) != len(axis) or not all(0 <= a < n for a in axis):
        raise ValueError(
            f"expand_dims: axis {axis} must be distinct positions in 0..{n - 1} of the result "
            f"for an array of shape {x.shape}"
        )
    dims = iter(x.shape)
    return Aval(tuple(1 if i in axis else next(dims) for i in range(n)), x.dtype)


@unary_batch
def _expand_dims_batch(x, dim, *, axis):
    # the batch axis stays just before the per-example axis it preceded in the input (last
    # if it was last); new axes at or after that position shift by one
    rank = len(shape_of(x)) - 1 + len(axis)
    kept = [i for i in range(rank) if i not in axis]
    p = kept[dim] if dim < len(kept) else rank
    return expand_dims(x, tuple(a if a < p else a + 1 for a in axis)), p


expand_dims_p = Primitive(
    "expand_dims",
    impl=lambda x, *, axis: np.expand_dims(x, axis),
    shape=_expand_dims_shape,
    jvp=linear_jvp(expand_dims),
    vjp=lambda x_bar, x, *, out, axis: (reshape(x_bar, shape_of(x)),),
    batch=_expand_dims_batch,
    emit=lambda x, *, axis: f"np.expand_dims({x}, {axis!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.RESHAPED,
    torch_name="UnsqueezeBackward0",
    taylor=series.LINEAR,
)


def squeeze(x, axis):
    """Remove the size-1 axes in `axis` (sorted, non-negative)."""
    return bind(squeeze_p, x, axis=int_tuple(axis))


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


@unary_batch
def _squeeze_batch(x, dim, *, axis):
    out_dim = dim - sum(1 for a in axis if a < dim)
    return squeeze(x, tuple(at(a, dim) for a in axis)), out_dim


squeeze_p = Primitive(
    "squeeze",
    impl=lambda x, *, axis: np.squeeze(x, axis=axis),
    shape=_squeeze_shape,
    jvp=linear_jvp(squeeze),
    vjp=lambda x_bar, x, *, out, axis: (reshape(x_bar, shape_of(x)),),
    batch=_squeeze_batch,
    emit=lambda x, *, axis: f"np.squeeze({x}, axis={axis!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.RESHAPED,
    taylor=series.LINEAR,
)

# -- flip -------------------------------------------------------------------------------------


def flip(x, axis):
    """Reverse the order of elements along each axis in `axis` (sorted, non-negative)."""
    return bind(flip_p, x, axis=int_tuple(axis))


def _flip_shape(x: Aval, *, axis):
    if len(set(axis)) != len(axis) or not all(0 <= a < x.ndim for a in axis):
        raise ValueError(f"flip: axis {axis} must be distinct axes of an array of shape {x.shape}")
    return Aval(x.shape, x.dtype)


@unary_batch
def _flip_batch(x, dim, *, axis):
    return flip(x, tuple(at(a, dim) for a in axis)), dim


flip_p = Primitive(
    "flip",
    impl=lambda x, *, axis: np.flip(x, axis),
    shape=_flip_shape,
    jvp=linear_jvp(flip),
    vjp=lambda x_bar, x, *, out, axis: (flip(x_bar, axis),),
    batch=_flip_batch,
    emit=lambda x, *, axis: f"np.flip({x}, {axis!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.VIEW,
    taylor=series.LINEAR,
)

PRIMITIVES = (reshape_p, transpose_p, expand_dims_p, squeeze_p, flip_p)
