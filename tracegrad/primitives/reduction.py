"""Reductions: sum, prod, max, min, argmax, argmin, all, any, and the cumulative sums/products.

Each reduction takes `axis` as a sorted tuple of distinct non-negative axes and a `keepdims`
flag; the arg-reductions and the cumulative ones take a one-axis tuple. The vjp of a reduction
broadcasts the cotangent back over the reduced axes. `cumsum`/`cumprod` also take `reverse`
and `exclusive` flags (as `jax.lax.cumsum` and `tf.math.cumprod` do): the transpose of a
forward cumulative sum is a reverse one, and `prod`'s zero-safe derivative is a product of
two exclusive cumulative products. The NumPy-facing functions always use the plain forms.
"""

from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval, is_float
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.broadcasting import shape_of


def reduced_shape(shape, axis, keepdims):
    if keepdims:
        return tuple(1 if i in axis else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axis)


def kept_cotangent(x_bar, shape, axis, keepdims):
    """Broadcast a reduction's cotangent back to the input `shape`."""
    from tracegrad.primitives import shape as _shape

    if not keepdims:
        x_bar = _shape.reshape(x_bar, reduced_shape(shape, axis, True))
    return _shape.broadcast_to(x_bar, shape)


def _keep(v, shape, axis, keepdims):
    """`v` (a reduction's output or cotangent) with its reduced axes kept as size 1, so it
    broadcasts against the input."""
    from tracegrad.primitives import shape as _shape

    kept = reduced_shape(shape, axis, True)
    return v if keepdims or shape_of(v) == kept else _shape.reshape(v, kept)


def _axes(axis) -> tuple[int, ...]:
    # the binding functions accept any iterable of axes (or one int) and sort it
    if isinstance(axis, int | np.integer):
        return (int(axis),)
    return tuple(sorted(int(a) for a in axis))


def _check_axes(name: str, x: Aval, axis, *, single: bool = False) -> None:
    ok = (
        isinstance(axis, tuple)
        and builtins.all(isinstance(a, int) for a in axis)
        and list(axis) == sorted(set(axis))
        and builtins.all(0 <= a < x.ndim for a in axis)
    )
    if ok and (not single or len(axis) == 1):
        return
    want = "a one-axis tuple (a,)" if single else "a sorted tuple of distinct axes"
    raise ValueError(
        f"{name}: axis {axis!r} does not fit an array of shape {x.shape} (ndim {x.ndim}); "
        f"pass {want} with every axis in [0, {x.ndim}) (tracegrad.numpy.{name} normalizes "
        "NumPy-style axes)"
    )


def _check_nonempty(name: str, x: Aval, axis, why: str) -> None:
    empty = [a for a in axis if x.shape[a] == 0]
    if empty:
        raise ValueError(
            f"{name}: {why}: axis {empty[0]} of an array of shape {x.shape} has size 0; "
            "reduce only over non-empty axes"
        )


@functools.lru_cache(maxsize=1024)
def _result_dtype(fn, dtype: np.dtype) -> np.dtype:
    # NumPy widens small integers and bools in sum/prod/cumsum/cumprod (to int64/uint64)
    return fn(np.zeros((1,), dtype)).dtype


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    return _result_dtype(np.sum, np.dtype(dtype))


def _float_input(x) -> bool:
    return is_float(ew._dtype(x))


def _zero_jvp(primals, tangents, **params):
    return None


def _zero_vjp(x_bar, x, **params):
    return (None,)


def _reduce_emit(fname):
    return lambda x, *, axis, keepdims: f"np.{fname}({x}, axis={axis!r}, keepdims={keepdims!r})"


# Batching (JAX's reducer batching): the batch axis stays where it is and the per-example
# axes at or after it shift up by one, so no transpose is needed. Reducing never touches the
# batch axis; without keepdims the output's batch axis moves left by the number of reduced
# axes before it. The cumulative primitives keep the shape, so their batch axis stays put.


def _shift_axes(axis, dim):
    """Per-example axes as axes of the batched array whose batch axis is `dim`."""
    return tuple(a if a < dim else a + 1 for a in axis)


def _reduce_batch(fn):
    """The batching rule of a reduction whose binding function is `fn(x, axis, keepdims)`."""

    def batch(args, dims, *, axis, keepdims):
        (x,), (d,) = args, dims
        if d is None:
            return fn(x, axis, keepdims), None
        out_dim = d if keepdims else d - builtins.sum(1 for a in axis if a < d)
        return fn(x, _shift_axes(axis, d), keepdims), out_dim

    return batch


def _cumulative_batch(fn):
    """The batching rule of `fn(x, axis, reverse, exclusive)`, a cumulative sum or product."""

    def batch(args, dims, *, axis, reverse, exclusive):
        (x,), (d,) = args, dims
        if d is None:
            return fn(x, axis, reverse, exclusive), None
        return fn(x, _shift_axes(axis, d), reverse, exclusive), d

    return batch


# -- sum --------------------------------------------------------------------------------------


def sum(x, axis, keepdims=False):  # noqa: A001 - NumPy's name
    """Sum over the axes in `axis` (a normalized tuple)."""
    return bind(sum_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def _sum_shape(x: Aval, *, axis, keepdims):
    _check_axes("sum", x, axis)
    return Aval(reduced_shape(x.shape, axis, keepdims), _sum_dtype(x.dtype))


def _sum_jvp(primals, tangents, *, out, axis, keepdims):
    (x_dot,) = tangents
    return None if x_dot is None else sum(x_dot, axis, keepdims)


def _sum_vjp(x_bar, x, *, out, axis, keepdims):
    # every summed element received the same cotangent
    if not _float_input(x):
        return (None,)
    return (kept_cotangent(x_bar, shape_of(x), axis, keepdims),)


sum_p = Primitive(
    "sum",
    impl=lambda x, *, axis, keepdims: np.sum(x, axis=axis, keepdims=keepdims),
    shape=_sum_shape,
    jvp=_sum_jvp,
    vjp=_sum_vjp,
    batch=_reduce_batch(sum),
    emit=_reduce_emit("sum"),
)

# -- prod -------------------------------------------------------------------------------------


def prod(x, axis, keepdims=False):
    """Product over the axes in `axis` (a normalized tuple)."""
    return bind(prod_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def _prod_shape(x: Aval, *, axis, keepdims):
    _check_axes("prod", x, axis)
    return Aval(reduced_shape(x.shape, axis, keepdims), _result_dtype(np.prod, x.dtype))


def _others_product(x, axis):
    """For each element, the product of the other elements of its slice along `axis`.

    This is prod's derivative. It is the product of an exclusive cumulative product from the
    front and one from the back, over the reduced axes flattened into one (JAX computes the
    same quantity with a tree of pairwise products). It never divides by x, so zeros are
    exact: with one zero in a slice, the zero's position gets the product of the rest and
    every other position 0; with two or more zeros, every position gets 0. Differentiating
    it again goes through cumprod's rule, which treats zeros exactly too.
    """
    from tracegrad.primitives import shape as _shape

    if len(axis) == 1:
        return cumprod(x, axis, exclusive=True) * cumprod(x, axis, reverse=True, exclusive=True)
    shape = shape_of(x)
    nd = len(shape)
    kept = [i for i in range(nd) if i not in axis]
    perm = tuple(kept + list(axis))
    moved = x if perm == tuple(range(nd)) else _shape.transpose(x, perm)
    moved_shape = tuple(shape[p] for p in perm)
    k = len(kept)
    flat = _shape.reshape(moved, moved_shape[:k] + (math.prod(shape[a] for a in axis),))
    others = _shape.reshape(_others_product(flat, (k,)), moved_shape)
    if perm == tuple(range(nd)):
        return others
    return _shape.transpose(others, tuple(int(i) for i in np.argsort(perm)))


def _prod_jvp(primals, tangents, *, out, axis, keepdims):
    (x,), (x_dot,) = primals, tangents
    if x_dot is None or not _float_input(x):
        return None
    if not axis:  # a product over no axes is the identity
        return x_dot
    return sum(x_dot * _others_product(x, axis), axis, keepdims)


def _prod_vjp(x_bar, x, *, out, axis, keepdims):
    if not _float_input(x):
        return (None,)
    if not axis:
        return (x_bar,)
    return (_keep(x_bar, shape_of(x), axis, keepdims) * _others_product(x, axis),)


prod_p = Primitive(
    "prod",
    impl=lambda x, *, axis, keepdims: np.prod(x, axis=axis, keepdims=keepdims),
    shape=_prod_shape,
    jvp=_prod_jvp,
    vjp=_prod_vjp,
    batch=_reduce_batch(prod),
    emit=_reduce_emit("prod"),
)

# -- max, min ---------------------------------------------------------------------------------


def max(x, axis, keepdims=False):  # noqa: A001 - NumPy's name
    """Maximum over the axes in `axis` (NumPy's `amax`)."""
    return bind(max_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def min(x, axis, keepdims=False):  # noqa: A001 - NumPy's name
    """Minimum over the axes in `axis` (NumPy's `amin`)."""
    return bind(min_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def _chooser_shape(name, ufunc_name):
    def shape(x: Aval, *, axis, keepdims):
        _check_axes(name, x, axis)
        _check_nonempty(
            name,
            x,
            axis,
            f"zero-size array to reduction operation {ufunc_name} which has no identity",
        )
        return Aval(reduced_shape(x.shape, axis, keepdims), x.dtype)

    return shape


def _chooser_weights(x, out, axis, keepdims):
    """d out / d x: 1 / (number of ties) where x equals its slice's extremum, else 0.

    JAX's rule: tied elements share the derivative evenly, so the weights of a slice sum to 1
    ([1, 3, 3] -> [0, 0.5, 0.5]). A NaN extremum matches nothing and gives NaN weights.
    """
    hit = ew.astype(ew.equal(x, _keep(out, shape_of(x), axis, keepdims)), ew._dtype(x))
    return hit / sum(hit, axis, True)


def _chooser_jvp(primals, tangents, *, out, axis, keepdims):
    (x,), (x_dot,) = primals, tangents
    if x_dot is None or not _float_input(x):
        return None
    return sum(x_dot * _chooser_weights(x, out, axis, keepdims), axis, keepdims)


def _chooser_vjp(x_bar, x, *, out, axis, keepdims):
    if not _float_input(x):
        return (None,)
    weights = _chooser_weights(x, out, axis, keepdims)
    return (_keep(x_bar, shape_of(x), axis, keepdims) * weights,)


max_p = Primitive(
    "max",
    impl=lambda x, *, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
    shape=_chooser_shape("max", "maximum"),
    jvp=_chooser_jvp,
    vjp=_chooser_vjp,
    batch=_reduce_batch(max),
    emit=_reduce_emit("max"),
)

min_p = Primitive(
    "min",
    impl=lambda x, *, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
    shape=_chooser_shape("min", "minimum"),
    jvp=_chooser_jvp,
    vjp=_chooser_vjp,
    batch=_reduce_batch(min),
    emit=_reduce_emit("min"),
)

# -- argmax, argmin ---------------------------------------------------------------------------


def argmax(x, axis, keepdims=False):
    """Index of the maximum along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(argmax_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def argmin(x, axis, keepdims=False):
    """Index of the minimum along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(argmin_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def _arg_shape(name):
    def shape(x: Aval, *, axis, keepdims):
        _check_axes(name, x, axis, single=True)
        _check_nonempty(name, x, axis, f"attempt to get {name} of an empty sequence")
        return Aval(reduced_shape(x.shape, axis, keepdims), np.intp)

    return shape


def _arg_emit(fname):
    return lambda x, *, axis, keepdims: f"np.{fname}({x}, axis={axis[0]!r}, keepdims={keepdims!r})"


argmax_p = Primitive(
    "argmax",
    impl=lambda x, *, axis, keepdims: np.argmax(x, axis=axis[0], keepdims=keepdims),
    shape=_arg_shape("argmax"),
    jvp=_zero_jvp,
    vjp=_zero_vjp,
    batch=_reduce_batch(argmax),
    emit=_arg_emit("argmax"),
    differentiable=False,
)

argmin_p = Primitive(
    "argmin",
    impl=lambda x, *, axis, keepdims: np.argmin(x, axis=axis[0], keepdims=keepdims),
    shape=_arg_shape("argmin"),
    jvp=_zero_jvp,
    vjp=_zero_vjp,
    batch=_reduce_batch(argmin),
    emit=_arg_emit("argmin"),
    differentiable=False,
)

# -- all, any ---------------------------------------------------------------------------------


def all(x, axis, keepdims=False):  # noqa: A001 - NumPy's name
    """Logical AND over the axes in `axis` (bool result)."""
    return bind(all_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def any(x, axis, keepdims=False):  # noqa: A001 - NumPy's name
    """Logical OR over the axes in `axis` (bool result)."""
    return bind(any_p, x, axis=_axes(axis), keepdims=bool(keepdims))


def _logical_shape(name):
    def shape(x: Aval, *, axis, keepdims):
        _check_axes(name, x, axis)
        return Aval(reduced_shape(x.shape, axis, keepdims), np.bool_)

    return shape


all_p = Primitive(
    "all",
    impl=lambda x, *, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
    shape=_logical_shape("all"),
    jvp=_zero_jvp,
    vjp=_zero_vjp,
    batch=_reduce_batch(all),
    emit=_reduce_emit("all"),
    differentiable=False,
)

any_p = Primitive(
    "any",
    impl=lambda x, *, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
    shape=_logical_shape("any"),
    jvp=_zero_jvp,
    vjp=_zero_vjp,
    batch=_reduce_batch(any),
    emit=_reduce_emit("any"),
    differentiable=False,
)

# -- cumsum, cumprod --------------------------------------------------------------------------
# `reverse` accumulates from the back; `exclusive` leaves each element out of its own result
# (the first result is the identity). The impl and the emitted code are the same NumPy calls:
# flip, then shift by one with the identity in front (insert + delete), then accumulate.


def cumsum(x, axis, reverse=False, exclusive=False):
    """Cumulative sum along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(cumsum_p, x, axis=_axes(axis), reverse=bool(reverse), exclusive=bool(exclusive))


def cumprod(x, axis, reverse=False, exclusive=False):
    """Cumulative product along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(cumprod_p, x, axis=_axes(axis), reverse=bool(reverse), exclusive=bool(exclusive))


def _cumulative_impl(fn, identity):
    def impl(x, *, axis, reverse, exclusive):
        (a,) = axis
        if reverse:
            x = np.flip(x, a)
        if exclusive:
            x = np.delete(np.insert(x, 0, identity, axis=a), -1, axis=a)
        y = fn(x, axis=a)
        return np.flip(y, a) if reverse else y

    return impl


def _cumulative_emit(fname, identity):
    def emit(x, *, axis, reverse, exclusive):
        (a,) = axis
        e = f"np.flip({x}, {a})" if reverse else x
        if exclusive:
            e = f"np.delete(np.insert({e}, 0, {identity}, axis={a}), -1, axis={a})"
        e = f"np.{fname}({e}, axis={a})"
        return f"np.flip({e}, {a})" if reverse else e

    return emit


def _cumulative_shape(name, fn):
    def shape(x: Aval, *, axis, reverse, exclusive):
        _check_axes(name, x, axis, single=True)
        return Aval(x.shape, _result_dtype(fn, x.dtype))

    return shape


def _cumsum_jvp(primals, tangents, *, out, axis, reverse, exclusive):
    (x,), (x_dot,) = primals, tangents
    if x_dot is None or not _float_input(x):
        return None
    return cumsum(x_dot, axis, reverse, exclusive)


def _cumsum_vjp(x_bar, x, *, out, axis, reverse, exclusive):
    # the transpose of accumulating from the front is accumulating from the back
    if not _float_input(x):
        return (None,)
    return (cumsum(x_bar, axis, not reverse, exclusive),)


cumsum_p = Primitive(
    "cumsum",
    impl=_cumulative_impl(np.cumsum, 0),
    shape=_cumulative_shape("cumsum", np.cumsum),
    jvp=_cumsum_jvp,
    vjp=_cumsum_vjp,
    batch=_cumulative_batch(cumsum),
    emit=_cumulative_emit("cumsum", 0),
)


# cumprod's derivative: d out_j / d x_i is the product of the other factors of out_j. Away
# from zeros that is out_j / x_i. At a zero x_i it is the product of out_j's factors with x_i
# left out, which is nonzero only if x_i is out_j's only zero: that product is the cumprod of
# x with its zeros replaced by 1, where the count of zeros so far is 1 (PyTorch's
# cumprod_backward treats the first zero the same way). No division by a zero: first
# derivatives are exact everywhere, and so are second ones where a product has at most one
# zero. With two zeros in a product, the second derivative misses their cross term (the
# mask is piecewise constant): a strict xfail test pins it until an exact scan exists.


def _cumprod_parts(x, axis, reverse, exclusive):
    """(zero mask, x with zeros as 1, its cumprod, `only one zero in the product so far`)."""
    zero = ew.equal(x, 0.0)
    x_safe = ew.where(zero, 1.0, x)
    y_safe = cumprod(x_safe, axis, reverse, exclusive)
    count = cumsum(ew.astype(zero, np.int64), axis, reverse, exclusive)
    return zero, x_safe, y_safe, ew.equal(count, 1)


def _cumprod_jvp(primals, tangents, *, out, axis, reverse, exclusive):
    (x,), (x_dot,) = primals, tangents
    if x_dot is None or not _float_input(x):
        return None
    zero, x_safe, y_safe, single = _cumprod_parts(x, axis, reverse, exclusive)
    away = out * cumsum(ew.where(zero, 0.0, x_dot / x_safe), axis, reverse, exclusive)
    at_zero = cumsum(ew.where(zero, x_dot, 0.0), axis, reverse, exclusive)
    return away + ew.where(single, y_safe * at_zero, 0.0)


def _cumprod_vjp(x_bar, x, *, out, axis, reverse, exclusive):
    if not _float_input(x):
        return (None,)
    zero, x_safe, y_safe, single = _cumprod_parts(x, axis, reverse, exclusive)
    away = cumsum(x_bar * out, axis, not reverse, exclusive) / x_safe
    at_zero = cumsum(ew.where(single, x_bar * y_safe, 0.0), axis, not reverse, exclusive)
    return (ew.where(zero, at_zero, away),)


cumprod_p = Primitive(
    "cumprod",
    impl=_cumulative_impl(np.cumprod, 1),
    shape=_cumulative_shape("cumprod", np.cumprod),
    jvp=_cumprod_jvp,
    vjp=_cumprod_vjp,
    batch=_cumulative_batch(cumprod),
    emit=_cumulative_emit("cumprod", 1),
)

PRIMITIVES = (sum_p, prod_p, max_p, min_p, argmax_p, argmin_p, all_p, any_p, cumsum_p, cumprod_p)
