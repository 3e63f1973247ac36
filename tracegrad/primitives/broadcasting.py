"""Broadcasting: NumPy's shape and dtype rules, `broadcast_to`, and its transposes `sum` and
`mean` (a sum scaled by the count).

NumPy decides result dtypes: `ufunc.resolve_dtypes` applies NEP 50 (a weak Python scalar
does not widen an array) exactly as running the ufunc would. `broadcast_to` and `sum` are
each other's derivatives, so they live together; `unbroadcast` is the one place where the
cotangent of an implicitly broadcast input is summed back to its shape, and `keep_axes`
broadcasts a reduction's cotangent back over the reduced axes. The other reductions are in
`reduction.py`.
"""

from __future__ import annotations

import functools

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_NOTHING, Primitive
from tracegrad.ir.types import Aval, carries_derivative, int_tuple, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.axes import check_axes, reduced_shape, reducer
from tracegrad.primitives.views import expand_dims, linear_jvp, move_to_front, reshape, unary_batch


def _dtype_key(aval: Aval):
    # resolve_dtypes takes Python's scalar types for weak values (but not `bool`: a Python
    # bool is NumPy's bool, the lowest kind, so a weak one promotes as a strong one does).
    if aval.weak_type and aval.dtype.kind != "b":
        kind = aval.dtype.kind
        return {"i": int, "u": int, "f": float, "c": complex}[kind]
    return aval.dtype


@functools.lru_cache(maxsize=4096)
def _resolve(ufunc: np.ufunc, keys: tuple):
    return ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)


_RESULT: dict = {}


def result_dtype(ufunc: np.ufunc, *avals: Aval, op: str | None = None) -> tuple[np.dtype, bool]:
    """(dtype, weak) of `ufunc` applied to values of these avals, as NumPy 2 computes it."""
    key = (ufunc,) + tuple((a.dtype, a.weak_type, not a.shape) for a in avals)
    hit = _RESULT.get(key)
    if hit is None:
        hit = _RESULT[key] = _result_dtype(ufunc, avals, op)
    return hit


def _result_dtype(ufunc, avals, op):
    keys = tuple(_dtype_key(a) for a in avals)
    try:
        dtypes = _resolve(ufunc, keys)
    except TypeError as err:
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(
            f"{op or ufunc.__name__}: NumPy has no loop for inputs of dtype ({names}): {err}"
        ) from None
    # Python scalars combined by operators stay Python scalars (weak); anything with an
    # array in it, or a unary ufunc (np.sin(2.0) is a NumPy float64), is strong.
    weak = len(avals) > 1 and all(a.weak_type and not a.shape for a in avals)
    return dtypes[len(avals)], weak


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    first = shapes[0]
    if all(s == first for s in shapes):  # the common case, without NumPy's machinery
        return first
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        shown = " and ".join(str(tuple(s)) for s in shapes)
        raise ValueError(
            f"{op}: shapes {shown} do not broadcast together (NumPy broadcasting: trailing "
            "axes must be equal or 1); reshape or expand_dims one operand"
        ) from None


# -- summing a broadcast cotangent back --------------------------------------------------------


def unbroadcast(x_bar, aval: Aval | tuple[int, ...]):
    """Sum the cotangent `x_bar` of a broadcast result back to the input's shape.

    `aval` is the input's `Aval` or just its shape.

    Leading axes that broadcasting added are summed away; axes where the input had size 1
    are summed with keepdims. Returns `x_bar` untouched when no broadcasting happened.
    """
    if x_bar is None:
        return None
    target = aval.shape if isinstance(aval, Aval) else tuple(aval)
    bar_shape = shape_of(x_bar)
    if bar_shape == target:
        return x_bar
    lead = len(bar_shape) - len(target)
    if lead > 0 and 1 not in target:  # the common case (a bias): leading axes were added
        return bind(sum_p, x_bar, axis=tuple(range(lead)), keepdims=False)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(target) if d == 1 and bar_shape[lead + i] != 1
    )
    if axes:
        x_bar = sum(x_bar, axes)
    if shape_of(x_bar) != target:
        x_bar = reshape(x_bar, target)
    return x_bar


def keep_axes(v, shape, axis, keepdims):
    """`v` (a reduction's output or cotangent) with its reduced axes kept as size 1, so it
    broadcasts against the input of shape `shape`."""
    kept = reduced_shape(shape, axis, True)
    return v if keepdims or shape_of(v) == kept else reshape(v, kept)


def kept_cotangent(x_bar, shape, axis, keepdims):
    """A reduction's cotangent broadcast back to the input's `shape`. When the reduced axes
    lead (a full reduction: a loss's mean; a batch axis) the cotangent broadcasts as it is,
    without the reshape to size-1 axes (`axis` is sorted and distinct: it is 0..k-1 exactly
    when its last entry is k-1)."""
    if not keepdims and axis and axis[-1] == len(axis) - 1:
        return broadcast_to(x_bar, shape)
    return broadcast_to(keep_axes(x_bar, shape, axis, keepdims), shape)


# -- broadcast_to -----------------------------------------------------------------------------


def broadcast_to(x, shape):
    return bind(broadcast_to_p, x, shape=int_tuple(shape))


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


@unary_batch
def _broadcast_to_batch(x, dim, *, shape):
    # broadcasting aligns trailing axes: the batch axis leads, the per-example axes are
    # lined up after it with size-1 axes, then broadcast (a view; nothing is copied)
    x = move_to_front(x, dim)
    s = shape_of(x)
    new = len(shape) - (len(s) - 1)
    if new:
        x = expand_dims(x, tuple(range(1, 1 + new)))
    return broadcast_to(x, s[:1] + shape), 0


def _broadcast_to_impl(x, *, shape):
    """`np.broadcast_to(x, shape)`; an array of one element (a full reduction's cotangent,
    the common case) is viewed directly, without `np.broadcast_to`'s Python wrapper, which
    costs a few times more than the rest of a reduction's backward step. The same read-only
    view of the same memory, every stride 0. A NumPy scalar (the cotangent of a loss that
    ended in a NumPy scalar) is made a 0-d array first, as `np.broadcast_to` makes it."""
    if isinstance(x, np.generic):
        x = np.array(x)
    if type(x) is np.ndarray and x.size == 1 and x.ndim <= len(shape) and x.flags.c_contiguous:
        view = np.ndarray(shape, x.dtype, x, 0, (0,) * len(shape))
        if view.flags.writeable:
            view.setflags(False)
        return view
    return np.broadcast_to(x, shape)


broadcast_to_p = Primitive(
    "broadcast_to",
    impl=_broadcast_to_impl,
    shape=_broadcast_to_shape,
    jvp=linear_jvp(broadcast_to),
    vjp=lambda x_bar, x, *, out, shape: (unbroadcast(x_bar, shape_of(x)),),
    batch=_broadcast_to_batch,
    emit=lambda x, *, shape: f"np.broadcast_to({x}, {shape!r})",
    vjp_reads=READS_NOTHING,
    layout=Layout.VIEW,
    torch_name="ExpandBackward0",
    taylor=series.LINEAR,
)

# -- sum --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def accumulated_dtype(fn, dtype: np.dtype) -> np.dtype:
    """The result dtype of `fn` (sum, prod, cumsum, cumprod): NumPy widens small integers and
    bools (to int64/uint64)."""
    return fn(np.zeros((1,), dtype)).dtype


def _sum_shape(x: Aval, *, axis, keepdims):
    check_axes("sum", x, axis)
    return Aval(reduced_shape(x.shape, axis, keepdims), accumulated_dtype(np.sum, x.dtype))


def _sum_jvp(primals, tangents, *, out, axis, keepdims):
    (x_dot,) = tangents
    return None if x_dot is None else sum(x_dot, axis, keepdims)


def _sum_vjp(x_bar, x, *, out, axis, keepdims):
    # every summed element received the same cotangent
    if not carries_derivative(x):
        return (None,)
    return (kept_cotangent(x_bar, shape_of(x), axis, keepdims),)


sum_p, sum = reducer(  # noqa: A001 - NumPy's name
    "sum",
    np.add.reduce,  # np.sum's own reduction (the same bits), without its Python wrapper
    "Sum over the axes in `axis` (a normalized tuple).",
    shape=_sum_shape,
    jvp=_sum_jvp,
    vjp=_sum_vjp,
    vjp_reads=READS_NOTHING,
    taylor=series.LINEAR,
    emit=lambda x, *, axis, keepdims: f"np.add.reduce({x}, axis={axis!r}, keepdims={keepdims!r})",
)

# -- mean -------------------------------------------------------------------------------------
# One node rather than NumPy's sum and divide: a mean is most losses' last step, and every
# eager gradient of one then records, runs and differentiates one operation instead of two.

_MEAN_SUM_DTYPES = {"b": np.dtype(np.float64), "i": np.dtype(np.float64), "u": np.dtype(np.float64)}
_FLOAT16 = np.dtype(np.float16)


def reduced_count(shape, axis) -> int:
    """How many elements of an array of `shape` each result of a reduction over `axis` (a
    normalized tuple) reads (1 for no axes)."""
    n = 1
    for a in axis:  # (a loop: a generator costs more than the product of a few axes)
        n *= shape[a]
    return n


def _mean_sum_dtype(dtype: np.dtype):
    """The dtype NumPy's mean sums in: float64 for integers and bools, float32 for float16
    (whose mean is rounded back), None (the input's own) otherwise."""
    if dtype == _FLOAT16:
        return np.dtype(np.float32)
    return _MEAN_SUM_DTYPES.get(dtype.kind)


def _mean_impl(x, *, axis, keepdims):
    """`np.mean(x, axis, keepdims=keepdims)` as `numpy._core._methods._mean` computes it: the
    sum in its dtype, divided by the count as an `intp` (for float32, in float64 and rounded
    back), without that function's Python wrapper."""
    x = np.asarray(x)
    dtype = x.dtype
    s = np.add.reduce(x, axis=axis, dtype=_mean_sum_dtype(dtype), keepdims=keepdims)
    n = np.intp(reduced_count(x.shape, axis))
    if type(s) is np.ndarray:
        s = np.true_divide(s, n, out=s, casting="unsafe")
        return s.astype(dtype) if dtype == _FLOAT16 else s
    return (dtype if dtype == _FLOAT16 else s.dtype).type(s / n)


def _mean_shape(x: Aval, *, axis, keepdims):
    check_axes("mean", x, axis)
    dtype = _MEAN_SUM_DTYPES.get(x.dtype.kind, x.dtype)  # (float16's is rounded back)
    return Aval(reduced_shape(x.shape, axis, keepdims), dtype)


def _mean_jvp(primals, tangents, *, out, axis, keepdims):
    (x_dot,) = tangents
    return None if x_dot is None else mean(x_dot, axis, keepdims)


def _mean_vjp(x_bar, x, *, out, axis, keepdims):
    # every averaged element received the cotangent over the count
    if not carries_derivative(x):
        return (None,)
    shape = shape_of(x)
    n = reduced_count(shape, axis)
    if n:  # (an empty mean's input is empty: nothing to divide)
        x_bar = x_bar / float(n)
    return (kept_cotangent(x_bar, shape, axis, keepdims),)


mean_p, mean = reducer(  # (emitted as `np.mean` itself: the same bits, NumPy's own function)
    "mean",
    None,
    "Mean over the axes in `axis` (a normalized tuple), with NumPy's default dtypes: float64 "
    "for integers and bools, float16 summed in float32.",
    impl=_mean_impl,
    shape=_mean_shape,
    jvp=_mean_jvp,
    vjp=_mean_vjp,
    vjp_reads=READS_NOTHING,
    taylor=series.LINEAR,
)

PRIMITIVES = (broadcast_to_p, sum_p, mean_p)
