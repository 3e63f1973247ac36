"""Indexing: static strided slices, gathers with integer index arrays, and scatter-add.

`x[...]` with ints, slices, None and Ellipsis lowers to a static `slice` plus reshapes (views
of the input); integer index arrays become a `gather` whose vjp scatter-adds the cotangent,
so repeated indices accumulate.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval


def slice_static(x, starts, limits, strides=None):
    """`x[s0:l0:k0, s1:l1:k1, ...]` over every axis, with non-negative in-range bounds."""
    strides = (1,) * len(starts) if strides is None else strides
    return bind(slice_p, x, starts=tuple(map(int, starts)), limits=tuple(map(int, limits)),
                strides=tuple(map(int, strides)))


def _slices(starts, limits, strides):
    return tuple(slice(s, l, k) for s, l, k in zip(starts, limits, strides))


def _slice_shape(x: Aval, *, starts, limits, strides):
    if not (len(starts) == len(limits) == len(strides) == x.ndim):
        raise ValueError(f"slice: needs one (start, limit, stride) per axis of {x.shape}")
    shape = []
    for d, s, l, k in zip(x.shape, starts, limits, strides):
        if not (0 <= s <= d and 0 <= l <= d and k >= 1):
            raise ValueError(f"slice: bounds {starts}:{limits}:{strides} do not fit shape {x.shape}")
        shape.append(len(range(s, l, k)))
    return Aval(tuple(shape), x.dtype, x.weak_type)


def _slice_vjp(x_bar, x, *, out, starts, limits, strides):
    from tracegrad.primitives import shape as _shape

    return (_shape.pad_strided(x_bar, x.shape if hasattr(x, "shape") else np.shape(x),
                               starts, strides),)


slice_p = Primitive(
    "slice",
    impl=lambda x, *, starts, limits, strides: x[_slices(starts, limits, strides)],
    shape=_slice_shape,
    jvp=lambda primals, tangents, *, out, starts, limits, strides: (
        None if tangents[0] is None else slice_static(tangents[0], starts, limits, strides)),
    vjp=_slice_vjp,
    emit=lambda x, *, starts, limits, strides: (
        f"{x}[{', '.join(f'{s}:{l}:{k}' for s, l, k in zip(starts, limits, strides))}"
        f"{',' if len(starts) == 1 else ''}]"),
    view_of=0,
)

PRIMITIVES = (slice_p,)
