"""Argument handling shared by the `tracegrad.numpy` wrappers (axes, shapes, array-likes,
concrete values)."""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from tracegrad.core import Boxed, Tracer
from tracegrad.errors import ConcretizationError, user_frame_location
from tracegrad.primitives.elementwise import astype


def asarray_or_tracer(x):
    """Tracers and arrays as they are; Python scalars kept (weak); lists become arrays."""
    if isinstance(x, Boxed | np.ndarray | np.generic | bool | int | float | complex):
        return x
    return np.asarray(x)


def as_array(x):
    """Like np.asanyarray: a strong array. Python scalars become NumPy arrays, and a traced
    value that stands for a Python scalar (weak-typed) becomes a strong traced one, as NumPy's
    functions make their arguments (so np.float32(1) + as_array(t) is float64 for t = 2.0)."""
    if isinstance(x, Tracer):
        return astype(x, x.aval.dtype) if x.aval.weak_type else x
    return x if isinstance(x, Boxed) else np.asarray(x)


def promotion_key(x):
    """What `np.result_type` should see for `x`: Python scalars (and traced values standing for
    one) as weak Python scalars of their kind, everything else as its dtype."""
    if isinstance(x, Tracer) and x.aval.weak_type:
        return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[x.aval.dtype.kind]
    if isinstance(x, bool | int | float | complex):
        return x
    return np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype


def cast(x, dtype):
    """`x` (traced, an array, a NumPy scalar or a Python scalar) as `dtype`; itself when it
    already is (a NumPy scalar stays a scalar, as NumPy's full reductions return one)."""
    dtype = np.dtype(dtype)
    if isinstance(x, Boxed):
        return x if x.dtype == dtype else astype(x, dtype)
    if not isinstance(x, np.ndarray | np.generic):
        x = np.asarray(x)
    return x if x.dtype == dtype else x.astype(dtype)


def known_value(x):
    """The value behind `x` when there is one now (a plain value, or a concretely traced one
    at any nesting); None under abstract tracing (jit, vmap, make_graph), where checks on
    values are skipped."""
    v = x
    while isinstance(v, Tracer):
        v = v.val
        if v is None:
            return None
    if isinstance(v, Boxed):
        v = v._constant_value()
    return v


def shape_of(x) -> tuple[int, ...]:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def ndim_of(x) -> int:
    return len(shape_of(x))


def axes(axis, ndim: int, op: str) -> tuple[int, ...]:
    """`axis` (None, int or sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    try:
        return tuple(sorted(normalize_axis_tuple(axis, ndim)))
    except np.exceptions.AxisError:
        raise np.exceptions.AxisError(
            f"{op}: axis {axis} is out of bounds for an array of dimension {ndim}"
        ) from None


def concrete_value(x, what: str, fix: str) -> np.ndarray:
    """The value of `x` as a NumPy array, for functions whose output shape depends on the
    values (nonzero, unique, boolean masks) or that return Python values (allclose).

    Under concrete tracing (`grad`, `jvp`, `vjp` of a call) a tracer holds its value (through
    every level of a nested trace); under `jit`, `vmap` or `make_graph` it has none, and this
    raises `ConcretizationError` naming `what`, the user's line and `fix` (for example "pass
    size=... as in jax.numpy.nonzero"). The value carries no derivative: callers use it for
    shapes, indices and booleans only.
    """
    value = x
    while isinstance(value, Tracer):
        value = value.val
        if value is None:
            raise ConcretizationError(
                f"{what} depends on the values of a traced {x.aval.str_short()} array, but it "
                f"is traced abstractly (under jit, vmap or make_graph), at "
                f"{user_frame_location()}.\n{fix}"
            )
    if isinstance(value, Boxed):
        value = value._constant_value()
    return np.asarray(value)
