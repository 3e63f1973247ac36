"""Array creation with NumPy's signatures, constants and dtypes, as `jax.numpy` has them.

Outside a trace, and inside one when no argument is traced, each function returns what NumPy
returns, as a `tracegrad.numpy.ndarray`: a NumPy array (subclass) whose only addition is JAX's
`.at[index]` updates. Values that depend on traced arguments are traced: `array([t1, 2.0])`
stacks, `full(shape, t)` broadcasts, `linspace(t0, t1)` repeats NumPy's own arithmetic (so
the bits match and the result is differentiable in its endpoints), `diag(t)` scatters. The
`*_like` functions of a traced array return constants: their values do not depend on it.
`empty` and `empty_like` return zeros (NumPy leaves the memory uninitialised).
"""

from __future__ import annotations

import operator

import numpy as np

from tracegrad.core import Boxed, Tracer, bind
from tracegrad.numpy._at import at, ndarray
from tracegrad.numpy._common import (
    as_array,
    asarray_or_tracer,
    cast,
    concrete_value,
    ndim_of,
    promotion_key,
    shape_of,
)
from tracegrad.numpy._indexing import diagonal
from tracegrad.numpy._reductions import any as _any
from tracegrad.primitives import broadcasting, views
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import shape as sp

__all__ = [
    "array",
    "asarray",
    "asanyarray",
    "copy",
    "zeros",
    "ones",
    "empty",
    "full",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "arange",
    "linspace",
    "logspace",
    "geomspace",
    "eye",
    "identity",
    "tri",
    "diag",
    "diagflat",
    "meshgrid",
    "indices",
    "fromfunction",
]


def _ours(a):
    """A NumPy result as `tracegrad.numpy.ndarray` (NumPy scalars and tracers as they are)."""
    return a.view(ndarray) if type(a) is np.ndarray else a


def _traced(x) -> bool:
    return isinstance(x, Boxed)


# -- array, asarray ---------------------------------------------------------------------------


def _has_traced(obj) -> bool:
    """Whether a nested list/tuple holds a traced value anywhere (iteratively)."""
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, Boxed):
            return True
        if isinstance(o, list | tuple):
            stack.extend(o)
    return False


def _leaf_dtypes(obj) -> list[np.dtype]:
    """The dtype of every leaf, Python scalars as NumPy reads them in a list (int64, float64,
    complex128, bool: strong, so [float32, 1] is float64 as in np.array)."""
    dtypes, stack = [], [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, list | tuple):
            stack.extend(o)
        else:
            dtypes.append(np.dtype(o.dtype) if hasattr(o, "dtype") else np.asarray(o).dtype)
    return dtypes


def _stacked(obj, dtype):
    """A nested list/tuple holding traced values as one traced array of `dtype`: each level
    stacked along a new first axis, as np.array lays nested lists out."""
    if not isinstance(obj, list | tuple):
        x = asarray_or_tracer(obj)
        if not _traced(x):
            return np.asarray(x, dtype=dtype)
        return x if x.dtype == dtype else ew.astype(x, dtype)
    items = [_stacked(o, dtype) for o in obj]
    shapes = {shape_of(i) for i in items}
    if len(shapes) > 1:
        raise ValueError(
            "tracegrad.numpy.array: setting an array element with a sequence. The nested "
            f"sequences have inhomogeneous shapes {sorted(shapes)}; every element of a level "
            "must have the same shape"
        )
    if not items:
        return np.zeros((0,), dtype)
    return sp.concatenate([views.expand_dims(i, (0,)) for i in items], 0)


def array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):  # noqa: A002
    """`np.array`; a nested list or tuple may hold traced values (the result is then traced,
    with NumPy's dtype for the same list). Traced values are immutable, so `copy` changes
    nothing for them."""
    if like is not None:
        raise NotImplementedError("tracegrad.numpy.array: like= is not supported")
    if isinstance(object, Boxed):
        x = as_array(object) if dtype is None else ew.astype(object, dtype)
    elif isinstance(object, list | tuple) and _has_traced(object):
        dt = np.dtype(dtype) if dtype is not None else np.result_type(*_leaf_dtypes(object))
        x = _stacked(object, dt)
    else:
        return _ours(
            np.array(object, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)
        )
    missing = ndmin - ndim_of(x)
    return views.reshape(x, (1,) * missing + shape_of(x)) if missing > 0 else x


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """`np.asarray`; a traced value is returned as it is (cast to `dtype` if given)."""
    if isinstance(a, Boxed) or (isinstance(a, list | tuple) and _has_traced(a)):
        return array(a, dtype=dtype)
    return _ours(np.asarray(a, dtype=dtype, order=order, device=device, copy=copy, like=like))


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    return asarray(a, dtype=dtype, order=order, device=device, copy=copy, like=like)


def copy(a, order="K", subok=False):
    """`np.copy`; traced values are immutable, so the copy of one is the value itself."""
    if _traced(a):
        return a
    return _ours(np.copy(a, order=order, subok=subok))


# -- filled arrays ----------------------------------------------------------------------------


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    return _ours(np.zeros(_shape(shape, "zeros"), dtype, order, device=device, like=like))


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    return _ours(np.ones(_shape(shape, "ones"), dtype, order, device=device, like=like))


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """Zeros: NumPy's `empty` leaves the values unset, and nothing should depend on them."""
    return zeros(shape, dtype, order, device=device, like=like)


def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """`np.full`; a traced `fill_value` is broadcast (and so differentiable)."""
    shape = _shape(shape, "full")
    if not _traced(fill_value):
        return _ours(np.full(shape, fill_value, dtype, order, device=device, like=like))
    dtype = fill_value.dtype if dtype is None else np.dtype(dtype)
    value = fill_value if fill_value.dtype == dtype else ew.astype(fill_value, dtype)
    return broadcasting.broadcast_to(value, shape)


def _like_shape(a, shape):
    return shape_of(a) if shape is None else _shape(shape, "like")


def _like_dtype(a, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(a.dtype) if hasattr(a, "dtype") else np.asarray(a).dtype


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Zeros shaped like `a`: a constant (its values do not depend on `a`'s)."""
    return _ours(np.zeros(_like_shape(a, shape), _like_dtype(a, dtype)))


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _ours(np.ones(_like_shape(a, shape), _like_dtype(a, dtype)))


def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Zeros (see `empty`)."""
    return zeros_like(prototype, dtype, order, subok, shape, device=device)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full(_like_shape(a, shape), fill_value, _like_dtype(a, dtype))


def _shape(shape, fname: str) -> tuple[int, ...]:
    """A shape argument as a tuple of ints (an int, a sequence, or concrete traced ints)."""
    if isinstance(shape, Boxed):
        shape = concrete_value(shape, f"{fname}(shape)", "Pass the shape as Python ints.")
    if isinstance(shape, int | np.integer) or np.ndim(shape) == 0:
        return (operator.index(shape),)
    return tuple(operator.index(s) for s in shape)


# -- ranges -----------------------------------------------------------------------------------


def _number(x, fname: str):
    """A Python-number argument (arange's bounds): a traced value is converted as float()
    converts it, refused when it carries a derivative (the number would drop it)."""
    if isinstance(x, Tracer):
        return np.asarray(x._number("int" if x.dtype.kind in "biu" else "float")).item()
    if isinstance(x, Boxed):
        return concrete_value(x, f"{fname}'s arguments", "Pass them as Python numbers.").item()
    return x


def arange(start, stop=None, step=None, dtype=None, *, device=None, like=None):
    """`np.arange` (its length depends on the values of its arguments: they must be concrete)."""
    args = [_number(v, "arange") for v in (start, stop, step)]
    args = [v for v in args if v is not None]
    return _ours(np.arange(*args, dtype=dtype, device=device, like=like))


def _inexact_dtype(*values) -> np.dtype:
    """NumPy's `_array_converter(...).result_type(ensure_inexact=True)`: Python scalars (and
    traced values that stand for one) promote weakly."""
    dt = np.result_type(*(promotion_key(v) for v in values))
    return dt if dt.kind in "fc" else np.result_type(dt, 1.0)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """`np.linspace`; with traced `start`/`stop`, NumPy's own steps (numpy/_core/function_base.py)
    as traced operations, so the bits match and the result is differentiable in both."""
    if not (_traced(start) or _traced(stop)):
        out = np.linspace(start, stop, num, endpoint, retstep, dtype, axis, device=device)
        return (_ours(out[0]), out[1]) if retstep else _ours(out)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    start, stop = asarray_or_tracer(start), asarray_or_tracer(stop)
    dt = _inexact_dtype(start, stop)
    integer_dtype = dtype is not None and np.issubdtype(dtype, np.integer)
    dtype = dt if dtype is None else np.dtype(dtype)
    delta = bind(ew.subtract_p, cast(stop, dt), cast(start, dt))
    extra = (1,) * ndim_of(delta)
    y = np.arange(0, num, dtype=dt).reshape((-1, *extra))
    if div > 0:
        step = bind(ew.divide_p, delta, div)
        any_zero = _any(bind(ew.equal_p, step, 0))
        scaled = bind(ew.multiply_p, y, step)
        denormal = bind(ew.multiply_p, bind(ew.divide_p, y, div), delta)  # NumPy's gh-5437 path
        y = ew.where(any_zero, denormal, scaled)
    else:
        step = np.nan
        y = bind(ew.multiply_p, y, delta)
    y = cast(bind(ew.add_p, y, start), dt)  # NumPy's `y += start` keeps y's dtype
    if endpoint and num > 1:
        y = at(y)[-1, ...].set(stop)
    if axis != 0:
        y = views.move_axis(y, 0, axis % ndim_of(y))
    if integer_dtype:
        y = bind(ew.floor_p, y)
    y = cast(y, dtype)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """`np.logspace`: `base ** linspace(start, stop)` (differentiable in start, stop, base)."""
    if not any(_traced(v) for v in (start, stop, base)):
        return _ours(np.logspace(start, stop, num, endpoint, base, dtype, axis))
    if not isinstance(base, float | int) and ndim_of(base):
        nd = len(np.broadcast_shapes(shape_of(start), shape_of(stop), shape_of(base)))
        start, stop, base = (_at_least(asarray_or_tracer(a), nd) for a in (start, stop, base))
        base = views.expand_dims(base, (axis % (ndim_of(base) + 1),))
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = bind(ew.power_p, base, y)
    return out if dtype is None else cast(out, np.dtype(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """`np.geomspace`, as NumPy computes it: rotated to a positive start, logspace of the
    base-10 logarithms, the endpoints set exactly, rotated back."""
    if not (_traced(start) or _traced(stop)):
        return _ours(np.geomspace(start, stop, num, endpoint, dtype, axis))
    start, stop = as_array(start), as_array(stop)
    for v in (start, stop):
        known = v.val if isinstance(v, Tracer) else v
        if known is not None and np.any(np.asarray(known) == 0):
            raise ValueError("Geometric sequence cannot include zero")
    # NumPy's result_type(start, stop, float(num), zeros((), dtype)): float64 when no dtype
    dt = np.result_type(start.dtype, stop.dtype, float(num), np.dtype(dtype or np.float64))
    dtype = dt if dtype is None else np.dtype(dtype)
    start, stop = cast(start, dt), cast(stop, dt)
    out_sign = bind(ew.sign_p, start)
    start = bind(ew.divide_p, start, out_sign)
    stop = bind(ew.divide_p, stop, out_sign)
    log_start, log_stop = bind(ew.log10_p, start), bind(ew.log10_p, stop)
    result = logspace(log_start, log_stop, num=num, endpoint=endpoint, base=10.0, dtype=dt)
    if num > 0:
        result = at(result)[0].set(start)
        if num > 1 and endpoint:
            result = at(result)[-1].set(stop)
    result = bind(ew.multiply_p, result, out_sign)
    if axis != 0:
        result = views.move_axis(result, 0, axis % ndim_of(result))
    return cast(result, dtype)


def _at_least(x, nd):
    missing = nd - ndim_of(x)
    if missing <= 0:
        return x
    return views.reshape(x, (1,) * missing + shape_of(x)) if _traced(x) else np.array(x, ndmin=nd)


# -- matrices and grids -----------------------------------------------------------------------


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):  # noqa: N803
    return _ours(np.eye(N, M, k, dtype, order, device=device, like=like))


def identity(n, dtype=None, *, like=None):
    return _ours(np.identity(n, dtype, like=like))


def tri(N, M=None, k=0, dtype=float, *, like=None):  # noqa: N803
    return _ours(np.tri(N, M, k, dtype, like=like))


def diag(v, k=0):
    """`np.diag`: a 1-d `v` placed on diagonal `k` of a square matrix of zeros (traced: a
    scatter, differentiable), or diagonal `k` of a 2-d `v`."""
    if not _traced(v):
        return _ours(np.diag(v, k))
    k = operator.index(k)
    nd = ndim_of(v)
    if nd == 2:
        return diagonal(v, k)
    if nd != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = shape_of(v)[0] + abs(k)
    i = np.arange(shape_of(v)[0])
    rows, cols = (i, i + k) if k >= 0 else (i - k, i)
    return at(np.zeros((n, n), v.dtype))[rows, cols].set(v)


def diagflat(v, k=0):
    """`np.diagflat`: `diag` of the flattened input."""
    if not _traced(v):
        return _ours(np.diagflat(v, k))
    return diag(views.reshape(v, (int(np.prod(shape_of(v))),)), k)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """`np.meshgrid`, as NumPy builds it: each input reshaped to its own axis, then broadcast
    (traced inputs give traced grids)."""
    if not any(_traced(x) for x in xi):
        return tuple(
            _ours(g) for g in np.meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing)
        )
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    output = [
        _reshape(asarray_or_tracer(x), s0[:i] + (-1,) + s0[i + 1 :]) for i, x in enumerate(xi)
    ]
    if indexing == "xy" and ndim > 1:
        output[0] = _reshape(output[0], (1, -1) + s0[2:])
        output[1] = _reshape(output[1], (-1, 1) + s0[2:])
    if not sparse:
        shape = np.broadcast_shapes(*(shape_of(o) for o in output))
        output = [_broadcast(o, shape) for o in output]
    return tuple(output)


def _reshape(x, shape):
    return views.reshape(x, _resolved(shape_of(x), shape)) if _traced(x) else np.reshape(x, shape)


def _resolved(old, shape):
    if -1 not in shape:
        return tuple(shape)
    known = int(np.prod([s for s in shape if s != -1]))
    return tuple(int(np.prod(old)) // known if s == -1 else s for s in shape)


def _broadcast(x, shape):
    if shape_of(x) == tuple(shape):
        return x
    return broadcasting.broadcast_to(x, shape) if _traced(x) else np.broadcast_to(x, shape).copy()


def indices(dimensions, dtype=int, sparse=False):
    out = np.indices(dimensions, dtype, sparse)
    return tuple(_ours(o) for o in out) if sparse else _ours(out)


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """`np.fromfunction`: `function` called once on the index grids (its result may be traced)."""
    args = indices(shape, dtype=dtype)
    return function(*args, **kwargs)
