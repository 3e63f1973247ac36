"""Reductions: prod, max, min, argmax, argmin, all, any, and the cumulative sums/products.

Each reduction takes `axis` as a sorted tuple of distinct non-negative axes and a `keepdims`
flag; the arg-reductions and the cumulative ones take a one-axis tuple (`axes.py`). `sum`
and `mean` live in `broadcasting.py` beside `broadcast_to`, their transpose. The vjp of a
reduction broadcasts the cotangent back over the reduced axes. `cumsum`/`cumprod` also take
`reverse` and `exclusive` flags (as `jax.lax.cumsum` and `tf.math.cumprod` do): the
transpose of a forward cumulative sum is a reverse one, and `prod`'s zero-safe derivative
is a product of two exclusive cumulative products. The NumPy-facing functions always use
the plain forms.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_ALL, READS_NOTHING, Primitive
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series, views
from tracegrad.primitives.axes import (
    as_axes,
    check_axes,
    check_nonempty,
    reduce_batch,
    reduced_shape,
    reducer,
    shift_axes,
)
from tracegrad.primitives.broadcasting import accumulated_dtype, keep_axes, sum
from tracegrad.primitives.shape import pad
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import reshape, transpose


def _zero_jvp(primals, tangents, **params):
    return None


def _zero_vjp(x_bar, x, **params):
    return (None,)


# The cumulative primitives keep the shape, so their batch axis stays put.


def _cumulative_batch(fn):
    """The batching rule of `fn(x, axis, reverse, exclusive)`, a cumulative sum or product."""

    def batch(args, dims, *, axis, reverse, exclusive):
        (x,), (d,) = args, dims
        if d is None:
            return fn(x, axis, reverse, exclusive), None
        return fn(x, shift_axes(axis, d), reverse, exclusive), d

    return batch


# -- prod -------------------------------------------------------------------------------------


def _prod_shape(x: Aval, *, axis, keepdims):
    check_axes("prod", x, axis)
    return Aval(reduced_shape(x.shape, axis, keepdims), accumulated_dtype(np.prod, x.dtype))


def _others_product(x, axis):
    """For each element, the product of the other elements of its slice along `axis`.

    This is prod's derivative. It is the product of an exclusive cumulative product from the
    front and one from the back, over the reduced axes flattened into one (JAX computes the
    same quantity with a tree of pairwise products). It never divides by x, so zeros are
    exact: with one zero in a slice, the zero's position gets the product of the rest and
    every other position 0; with two or more zeros, every position gets 0. Differentiating
    it again goes through cumprod's rule, which treats zeros exactly too.
    """
    if len(axis) == 1:
        return cumprod(x, axis, exclusive=True) * cumprod(x, axis, reverse=True, exclusive=True)
    shape = shape_of(x)
    nd = len(shape)
    kept = [i for i in range(nd) if i not in axis]
    perm = tuple(kept + list(axis))
    moved = x if perm == tuple(range(nd)) else transpose(x, perm)
    moved_shape = tuple(shape[p] for p in perm)
    k = len(kept)
    flat = reshape(moved, moved_shape[:k] + (math.prod(shape[a] for a in axis),))
    others = reshape(_others_product(flat, (k,)), moved_shape)
    if perm == tuple(range(nd)):
        return others
    return transpose(others, tuple(int(i) for i in np.argsort(perm)))


def _prod_jvp(primals, tangents, *, out, axis, keepdims):
    (x,), (x_dot,) = primals, tangents
    if x_dot is None or not carries_derivative(x):
        return None
    if not axis:  # a product over no axes is the identity
        return x_dot
    return sum(x_dot * _others_product(x, axis), axis, keepdims)


def _prod_vjp(x_bar, x, *, out, axis, keepdims):
    if not carries_derivative(x):
        return (None,)
    if not axis:
        return (x_bar,)
    return (keep_axes(x_bar, shape_of(x), axis, keepdims) * _others_product(x, axis),)


# prod's Taylor rule multiplies series, never divides: the reduced axes flattened into one
# last axis, a tree of pairwise series products halves it (an odd length padded with the
# series of 1), log2(n) rounds of O(K^2) elementwise products, exact with zeros in x.


def _series_map(fn, u):
    """`fn` applied to each term of a full series (None stays None)."""
    return [None if t is None else fn(t) for t in u]


def _to_last_axis(x, axis):
    """`x` with its kept axes first and the axes in `axis` flattened into one last axis."""
    shape = shape_of(x)
    kept = [i for i in range(len(shape)) if i not in axis]
    perm = tuple(kept + list(axis))
    moved = x if perm == tuple(range(len(shape))) else transpose(x, perm)
    return reshape(moved, tuple(shape[i] for i in kept) + (math.prod(shape[a] for a in axis),))


def _halves(u, n: int):
    """Each term of a full series split into its first and second half along the last axis."""
    shape = shape_of(u[0])
    cut, lead = n // 2, (0,) * (len(shape) - 1)
    first = _series_map(lambda t: slice_static(t, lead + (0,), shape[:-1] + (cut,)), u)
    second = _series_map(lambda t: slice_static(t, lead + (cut,), shape), u)
    return first, second


def _prod_taylor(primals, series_in, *, out, axis, keepdims):
    (x,), (s,) = primals, series_in
    if s is None or not carries_derivative(x):
        return None
    if not axis:
        return s
    u = _series_map(lambda t: _to_last_axis(t, axis), series.full(x, s, len(s)))
    n = shape_of(u[0])[-1]
    if n == 0:  # an empty product is the constant 1
        return None
    while n > 1:
        if n % 2:  # pad with the series of 1: 1, then zeros
            last = [(0, 0)] * (len(shape_of(u[0])) - 1) + [(0, 1)]
            u = [
                pad(t, last, 1.0 if i == 0 else 0.0) if t is not None else None
                for i, t in enumerate(u)
            ]
            n += 1
        u = series.product_series(*_halves(u, n))
        n //= 2
    return _series_map(lambda t: reshape(t, shape_of(out)), u[1:])


prod_p, prod = reducer(
    "prod",
    np.prod,
    "Product over the axes in `axis` (a normalized tuple).",
    shape=_prod_shape,
    jvp=_prod_jvp,
    vjp=_prod_vjp,
    vjp_reads=READS_ALL,
    taylor=_prod_taylor,
)

# -- max, min ---------------------------------------------------------------------------------


def _chooser_shape(name, ufunc_name):
    def shape(x: Aval, *, axis, keepdims):
        check_axes(name, x, axis)
        check_nonempty(
            name,
            x,
            axis,
            f"zero-size array to reduction operation {ufunc_name} which has no identity",
        )
        return Aval(reduced_shape(x.shape, axis, keepdims), x.dtype)

    return shape


def tie_weights(x, extremum, axis, keepdims, *, ignore_nan=False):
    """d extremum / d x for the extremum of each slice of `x` over `axis` (max, min, nanmax,
    nanmin, and the masked ones): 1 / (number of ties) where x equals it, else 0.

    JAX's rule: tied elements share the derivative evenly, so the weights of a slice sum to 1
    ([1, 3, 3] -> [0, 0.5, 0.5]). A NaN extremum equals nothing: its slice's weights are NaN,
    as JAX's 0 / 0 (here 0 / NaN, which warns of no invalid value). With `ignore_nan` (nanmax,
    nanmin: NaNs are skipped, never the extremum) an all-NaN slice gets weights 0 instead, as
    JAX's nanmax gives.
    """
    dtype = dtype_of(x)
    hit = ew.astype(ew.equal(x, keep_axes(extremum, shape_of(x), axis, keepdims)), dtype)
    count = sum(hit, axis, True)
    no_hit = np.asarray(1.0 if ignore_nan else np.nan, dtype)  # what a hitless count becomes
    return hit / ew.where(ew.equal(count, 0), no_hit, count)


def _chooser_rules(ignore_nan: bool):
    """The jvp and vjp of an extremum over `axis`, from `tie_weights`."""

    def jvp(primals, tangents, *, out, axis, keepdims):
        (x,), (x_dot,) = primals, tangents
        if x_dot is None or not carries_derivative(x):
            return None
        weights = tie_weights(x, out, axis, keepdims, ignore_nan=ignore_nan)
        return sum(x_dot * weights, axis, keepdims)

    def vjp(x_bar, x, *, out, axis, keepdims):
        if not carries_derivative(x):
            return (None,)
        weights = tie_weights(x, out, axis, keepdims, ignore_nan=ignore_nan)
        return (keep_axes(x_bar, shape_of(x), axis, keepdims) * weights,)

    return jvp, vjp


_chooser_jvp, _chooser_vjp = _chooser_rules(ignore_nan=False)


max_p, max = reducer(  # noqa: A001 - NumPy's name
    "max",
    np.max,
    "Maximum over the axes in `axis` (NumPy's `amax`).",
    shape=_chooser_shape("max", "maximum"),
    jvp=_chooser_jvp,
    vjp=_chooser_vjp,
    vjp_reads=READS_ALL,
    torch_name="MaxBackward1",
    taylor=series.LINEAR,
)
min_p, min = reducer(  # noqa: A001 - NumPy's name
    "min",
    np.min,
    "Minimum over the axes in `axis` (NumPy's `amin`).",
    shape=_chooser_shape("min", "minimum"),
    jvp=_chooser_jvp,
    vjp=_chooser_vjp,
    vjp_reads=READS_ALL,
    torch_name="MinBackward1",
    taylor=series.LINEAR,
)

# -- nanmax, nanmin ---------------------------------------------------------------------------
# NumPy's nanmax of an array is `np.fmax.reduce`: which of two tied zeros (0.0, -0.0) survives
# is that C loop's choice, which no composition of max and where reproduces, hence primitives.
# Ties share the derivative as `max`'s do; NaNs get none (as in JAX's nanmax, whose NaNs are
# replaced by -inf behind a `where`), an all-NaN slice none at all.

_nan_chooser_jvp, _nan_chooser_vjp = _chooser_rules(ignore_nan=True)


def _nan_chooser(name: str, ufunc: np.ufunc):
    def shape(x: Aval, *, axis, keepdims):
        check_axes(name, x, axis)
        why = f"zero-size array to reduction operation {ufunc.__name__} which has no identity"
        check_nonempty(name, x, axis, why)
        return Aval(reduced_shape(x.shape, axis, keepdims), x.dtype)

    return reducer(
        name,
        ufunc.reduce,
        f"`np.{ufunc.__name__}.reduce` over the axes in `axis` (NumPy's {name} of an array).",
        shape=shape,
        jvp=_nan_chooser_jvp,
        vjp=_nan_chooser_vjp,
        vjp_reads=READS_ALL,
        taylor=series.LINEAR,
        emit=lambda x, *, axis, keepdims: (
            f"np.{ufunc.__name__}.reduce({x}, axis={axis!r}, keepdims={keepdims!r})"
        ),
    )


nanmax_p, nanmax = _nan_chooser("nanmax", np.fmax)
nanmin_p, nanmin = _nan_chooser("nanmin", np.fmin)

# -- argmax, argmin ---------------------------------------------------------------------------


def argmax(x, axis, keepdims=False):
    """Index of the maximum along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(argmax_p, x, axis=as_axes(axis), keepdims=bool(keepdims))


def argmin(x, axis, keepdims=False):
    """Index of the minimum along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(argmin_p, x, axis=as_axes(axis), keepdims=bool(keepdims))


def _arg_shape(name):
    def shape(x: Aval, *, axis, keepdims):
        check_axes(name, x, axis, single=True)
        check_nonempty(name, x, axis, f"attempt to get {name} of an empty sequence")
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
    batch=reduce_batch(argmax),
    emit=_arg_emit("argmax"),
    differentiable=False,
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
)

argmin_p = Primitive(
    "argmin",
    impl=lambda x, *, axis, keepdims: np.argmin(x, axis=axis[0], keepdims=keepdims),
    shape=_arg_shape("argmin"),
    jvp=_zero_jvp,
    vjp=_zero_vjp,
    batch=reduce_batch(argmin),
    emit=_arg_emit("argmin"),
    differentiable=False,
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
)

# -- all, any ---------------------------------------------------------------------------------


def _logical_shape(name):
    def shape(x: Aval, *, axis, keepdims):
        check_axes(name, x, axis)
        return Aval(reduced_shape(x.shape, axis, keepdims), np.bool_)

    return shape


_LOGICAL = dict(jvp=_zero_jvp, vjp=_zero_vjp, differentiable=False, vjp_reads=READS_NOTHING)
all_p, all = reducer(  # noqa: A001 - NumPy's name
    "all", np.all, "Logical AND over the axes in `axis`.", shape=_logical_shape("all"), **_LOGICAL
)
any_p, any = reducer(  # noqa: A001 - NumPy's name
    "any", np.any, "Logical OR over the axes in `axis`.", shape=_logical_shape("any"), **_LOGICAL
)

# -- cumsum, cumprod --------------------------------------------------------------------------
# `reverse` accumulates from the back; `exclusive` leaves each element out of its own result
# (the first result is the identity). The impl and the emitted code are the same NumPy calls:
# flip, then shift by one with the identity in front (insert + delete), then accumulate.


def cumsum(x, axis, reverse=False, exclusive=False):
    """Cumulative sum along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(cumsum_p, x, axis=as_axes(axis), reverse=bool(reverse), exclusive=bool(exclusive))


def cumprod(x, axis, reverse=False, exclusive=False):
    """Cumulative product along the one axis in `axis` (a one-axis tuple or an int)."""
    return bind(cumprod_p, x, axis=as_axes(axis), reverse=bool(reverse), exclusive=bool(exclusive))


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
        check_axes(name, x, axis, single=True)
        return Aval(x.shape, accumulated_dtype(fn, x.dtype))

    return shape


def _cumsum_jvp(primals, tangents, *, out, axis, reverse, exclusive):
    (x,), (x_dot,) = primals, tangents
    if x_dot is None or not carries_derivative(x):
        return None
    return cumsum(x_dot, axis, reverse, exclusive)


def _cumsum_vjp(x_bar, x, *, out, axis, reverse, exclusive):
    # the transpose of accumulating from the front is accumulating from the back
    if not carries_derivative(x):
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
    vjp_reads=READS_NOTHING,
    taylor=series.LINEAR,
)


# cumprod's derivative: d out_j / d x_i is the product of the other factors of out_j. Written
# as out_j / x_i it divides by zeros and overflows at tiny x; instead both rules run a
# doubling scan of log2(n) steps (Hillis-Steele, each a shifted multiply) over the running
# product: the jvp carries (product, tangent) pairs, (a, a') then (b, b') -> (ab, a'b + ab'),
# and the vjp solves the reverse linear recurrence S_i = bar_i + x_{i+1} S_{i+1}, so that
# x_bar_i = (product of the x_k before i) * S_i. Only products and sums: exact at zeros, no
# overflow, and their own derivatives are exact too. A reverse cumprod is the forward one of
# the flipped input; an exclusive one is the inclusive one of the input shifted by one.


def _shift(v, d: int, axis: int, fill: float, toward_end: bool = True):
    """`v` moved `d` places along `axis`, `fill` in the places it vacates."""
    n = shape_of(v)[axis]
    d = builtins.min(d, n)
    starts = [0] * len(shape_of(v))
    limits = list(shape_of(v))
    widths = [(0, 0)] * len(limits)
    if toward_end:
        limits[axis] = n - d
        widths[axis] = (d, 0)
    else:
        starts[axis] = d
        widths[axis] = (0, d)
    return pad(slice_static(v, starts, limits), widths, fill)


def _forward_cumprod_tangent(x, x_dot, a: int):
    """The tangent of the inclusive cumprod of `x` along axis `a` (a doubling scan)."""
    y, t = x, x_dot
    d = 1
    while d < shape_of(x)[a]:
        y_before, t_before = _shift(y, d, a, 1.0), _shift(t, d, a, 0.0)
        y, t = y_before * y, t_before * y + y_before * t
        d *= 2
    return t


def _forward_cumprod_cotangent(bar, x, a: int):
    """x's cotangent through the inclusive cumprod of `x` along axis `a`."""
    s, coef = bar, _shift(x, 1, a, 0.0, toward_end=False)  # coef_i = x_{i+1}
    d = 1
    while d < shape_of(x)[a]:
        s = s + coef * _shift(s, d, a, 0.0, toward_end=False)
        coef = coef * _shift(coef, d, a, 0.0, toward_end=False)
        d *= 2
    return cumprod(x, (a,), exclusive=True) * s


def _cumprod_jvp(primals, tangents, *, out, axis, reverse, exclusive):
    (x,), (x_dot,) = primals, tangents
    if x_dot is None or not carries_derivative(x):
        return None
    (a,) = axis
    if reverse:
        x, x_dot = views.flip(x, axis), views.flip(x_dot, axis)
    if exclusive:  # out_j = the inclusive product up to x_{j-1}
        x, x_dot = _shift(x, 1, a, 1.0), _shift(x_dot, 1, a, 0.0)
    t = _forward_cumprod_tangent(x, x_dot, a)
    return views.flip(t, axis) if reverse else t


def _cumprod_vjp(x_bar, x, *, out, axis, reverse, exclusive):
    if not carries_derivative(x):
        return (None,)
    (a,) = axis
    if reverse:
        x, x_bar = views.flip(x, axis), views.flip(x_bar, axis)
    if exclusive:
        bar = _forward_cumprod_cotangent(x_bar, _shift(x, 1, a, 1.0), a)
        bar = _shift(bar, 1, a, 0.0, toward_end=False)  # x_i fed the shifted input i + 1
    else:
        bar = _forward_cumprod_cotangent(x_bar, x, a)
    return (views.flip(bar, axis) if reverse else bar,)


def _cumprod_taylor(primals, series_in, *, out, axis, reverse, exclusive):
    # the jvp's doubling scan over full series: (a, b) -> a b, a product of series per step
    (x,), (s,) = primals, series_in
    if s is None or not carries_derivative(x):
        return None
    (a,) = axis
    u = series.full(x, s, len(s))
    if reverse:
        u = _series_map(lambda t: views.flip(t, axis), u)
    if exclusive:  # the series of the identity, 1, moves in at the front
        u = [
            None if t is None else _shift(t, 1, a, 1.0 if i == 0 else 0.0) for i, t in enumerate(u)
        ]
    d = 1
    while d < shape_of(x)[a]:
        before = [
            None if t is None else _shift(t, d, a, 1.0 if i == 0 else 0.0) for i, t in enumerate(u)
        ]
        u = series.product_series(before, u)
        d *= 2
    return _series_map(lambda t: views.flip(t, axis), u[1:]) if reverse else u[1:]


cumprod_p = Primitive(
    "cumprod",
    impl=_cumulative_impl(np.cumprod, 1),
    shape=_cumulative_shape("cumprod", np.cumprod),
    jvp=_cumprod_jvp,
    vjp=_cumprod_vjp,
    batch=_cumulative_batch(cumprod),
    emit=_cumulative_emit("cumprod", 1),
    vjp_reads=READS_ALL,
    taylor=_cumprod_taylor,
)

PRIMITIVES = (
    prod_p,
    max_p,
    min_p,
    nanmax_p,
    nanmin_p,
    argmax_p,
    argmin_p,
    all_p,
    any_p,
    cumsum_p,
    cumprod_p,
)
