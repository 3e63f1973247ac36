"""Reductions with NumPy's `where=` mask and `initial=` start: sum_where, prod_where,
max_where and min_where.

NumPy runs a masked reduction as its plain inner loop over each run of selected elements,
starting from `initial` (a sum is `initial + pairwise(run 1) + pairwise(run 2) + ...`), so
`np.sum(x, where=m)` is not `np.sum(np.where(m, x, 0))` bit for bit; the impl is NumPy's own
call. The inputs are the array, the mask (bool, broadcasting to the array's shape) and the
start (a 0-d array of the result's dtype), so a traced mask or start works too. Masked-out
elements get no derivative.
"""

from __future__ import annotations

import weakref

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_ALL, READS_INDICES, READS_INPUTS, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, is_float, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import reduction, series
from tracegrad.primitives.axes import check_axes, reduced_shape, shift_axes
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.broadcasting import broadcast_to, keep_axes, kept_cotangent
from tracegrad.primitives.broadcasting import sum as reduce_sum
from tracegrad.primitives.products import batch_first
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import reshape, squeeze


def _cast(x, dtype):
    return x if dtype_of(x) == np.dtype(dtype) else ew.astype(x, dtype)


def _check_inputs(name: str, x: Aval, where: Aval, initial: Aval, axis) -> None:
    check_axes(name, x, axis)
    if where.dtype != np.bool_:
        raise TypeError(f"{name}: the where= mask must be a bool array, got dtype {where.dtype}")
    try:
        fits = np.broadcast_shapes(where.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{name}: a where= mask of shape {where.shape} does not broadcast to the reduced "
            f"array's shape {x.shape}"
        )
    if initial.shape:
        raise ValueError(f"{name}: initial= must be a scalar (0-d), got shape {initial.shape}")


def _whole_batch(prim_ref, args, dims, axis, params):
    """The batch as a loop over its members (for a batched `initial`, which NumPy takes only
    as one scalar): each member reduced by the primitive itself, then stacked."""
    size = batch_size(args, dims)
    x, where, initial = (materialize(a, d, size) for a, d in zip(args, dims))
    outs = []
    for k in range(size):
        member = [squeeze(_row(a, k), (0,)) for a in (x, where, initial)]
        out = bind(prim_ref(), *member, axis=axis, **params)
        outs.append(reshape(out, (1,) + shape_of(out)))
    return concatenate(outs, 0), 0


def _row(a, k):
    s = shape_of(a)
    return slice_static(a, (k,) + (0,) * (len(s) - 1), (k + 1,) + s[1:])


def _masked_batch(prim):
    """Batching: the array's batch axis first (broadcast in when only the mask is batched),
    the mask's first too with size-1 axes so it lines up; one reduction over the batch."""
    ref = weakref.ref(prim)

    def batch(args, dims, *, axis, keepdims, **params):
        x, where, initial = args
        dx, dw, di = dims
        if di is not None:
            return _whole_batch(ref, args, dims, axis, dict(keepdims=keepdims, **params))
        x = materialize(x, dx, batch_size(args, dims)) if dx is None else batch_first(x, dx)
        if dw is not None:
            where = batch_first(where, dw)
            ws = shape_of(where)
            gap = len(shape_of(x)) - len(ws)
            where = reshape(where, ws[:1] + (1,) * gap + ws[1:])
        out = bind(ref(), x, where, initial, axis=shift_axes(axis, 0), keepdims=keepdims, **params)
        return out, 0

    return batch


def _masked(name: str, np_fn, shape, jvp, vjp, vjp_reads, **facts) -> Primitive:
    def impl(x, where, initial, *, axis, keepdims, **params):
        return np_fn(x, axis=axis, keepdims=keepdims, initial=initial, where=where, **params)

    def emit(x, where, initial, *, axis, keepdims, **params):
        dtype = params.get("dtype")
        dtype_text = "" if dtype is None else f", dtype=np.{np.dtype(dtype).name}"
        return (
            f"np.{np_fn.__name__}({x}, axis={axis!r}{dtype_text}, keepdims={keepdims!r}, "
            f"initial={initial}, where={where})"
        )

    return Primitive(
        name,
        impl=impl,
        shape=shape,
        jvp=jvp,
        vjp=vjp,
        batch=rule_for(_masked_batch),
        emit=emit,
        vjp_reads=vjp_reads,
        layout=Layout.KEEPS_C,
        **facts,
    )


# -- sum_where, prod_where --------------------------------------------------------------------


def sum_where(x, where, initial, axis, keepdims, dtype):
    """`np.sum(x, axis, dtype, keepdims=keepdims, initial=initial, where=where)`: `where` a
    bool array, `initial` a 0-d array (both may be traced), `axis` a sorted tuple."""
    return bind(
        sum_where_p, x, where, initial, axis=tuple(axis), keepdims=bool(keepdims), dtype=dtype
    )


def prod_where(x, where, initial, axis, keepdims, dtype):
    """`np.prod` with `where=` and `initial=`, as `sum_where`."""
    return bind(
        prod_where_p, x, where, initial, axis=tuple(axis), keepdims=bool(keepdims), dtype=dtype
    )


def _accumulating_shape(name):
    def shape(x: Aval, where: Aval, initial: Aval, *, axis, keepdims, dtype):
        _check_inputs(name, x, where, initial, axis)
        return Aval(reduced_shape(x.shape, axis, keepdims), np.dtype(dtype))

    return shape


def _start_tangent(i_dot, out):
    """The tangent of the start, which every output element starts from."""
    return broadcast_to(_cast(i_dot, dtype_of(out)), shape_of(out))


def _sum_where_jvp(primals, tangents, *, out, axis, keepdims, dtype):
    x, where, initial = primals
    x_dot, _, i_dot = tangents
    if not is_float(dtype):
        return None
    total = None
    if x_dot is not None and carries_derivative(x):
        zero = np.zeros((), np.dtype(dtype))
        total = sum_where(x_dot, where, zero, axis, keepdims, dtype)
    if i_dot is not None and carries_derivative(initial):
        start = _start_tangent(i_dot, out)
        total = start if total is None else total + start
    return total


def _sum_where_vjp(g, x, where, initial, *, out, axis, keepdims, dtype):
    if not is_float(dtype):
        return None, None, None
    x_bar = i_bar = None
    if carries_derivative(x):
        spread = kept_cotangent(g, shape_of(x), axis, keepdims)
        x_bar = _cast(ew.where(where, spread, 0.0), dtype_of(x))
    if carries_derivative(initial):
        i_bar = _cast(reduce_sum(g, tuple(range(len(shape_of(g))))), dtype_of(initial))
    return x_bar, None, i_bar


sum_where_p = _masked(
    "sum_where",
    np.sum,
    _accumulating_shape("sum_where"),
    _sum_where_jvp,
    _sum_where_vjp,
    READS_INDICES,
    taylor=series.LINEAR,
)


# The masked product is initial * (the product of where(mask, x, 1)) up to rounding, so its
# derivatives are the product's (reduction.prod_p's rules, zero-safe) at where(mask, x, 1),
# scaled by initial, with the mask applied to the tangent and the cotangent.


def _ones_outside(x, where, dtype):
    return ew.where(where, _cast(x, dtype), 1.0)


def _prod_where_jvp(primals, tangents, *, out, axis, keepdims, dtype):
    x, where, initial = primals
    x_dot, _, i_dot = tangents
    if not is_float(dtype):
        return None
    kept = _ones_outside(x, where, dtype)
    product = reduction.prod(kept, axis, keepdims)
    start = _cast(initial, dtype)
    total = None
    if x_dot is not None and carries_derivative(x):
        masked_dot = ew.where(where, _cast(x_dot, dtype), 0.0)
        t = reduction.prod_p.jvp((kept,), (masked_dot,), out=product, axis=axis, keepdims=keepdims)
        total = start * t
    if i_dot is not None and carries_derivative(initial):
        term = _cast(i_dot, dtype) * product
        total = term if total is None else total + term
    return total


def _prod_where_vjp(g, x, where, initial, *, out, axis, keepdims, dtype):
    if not is_float(dtype):
        return None, None, None
    kept = _ones_outside(x, where, dtype)
    product = reduction.prod(kept, axis, keepdims)
    x_bar = i_bar = None
    if carries_derivative(x):
        start = _cast(initial, dtype)
        (bar,) = reduction.prod_p.vjp(g * start, kept, out=product, axis=axis, keepdims=keepdims)
        x_bar = _cast(ew.where(where, bar, 0.0), dtype_of(x))
    if carries_derivative(initial):
        i_bar = reduce_sum(g * product, tuple(range(len(shape_of(g)))))
        i_bar = _cast(i_bar, dtype_of(initial))
    return x_bar, None, i_bar


def _prod_where_taylor(primals, series_in, *, out, axis, keepdims, dtype):
    # initial * prod(where(mask, x, 1)): a Taylor pass over that, through prod's rule
    if not is_float(dtype):
        return None

    def masked_product(x, where, initial):
        kept = _ones_outside(x, where, dtype)
        return _cast(initial, dtype) * reduction.prod(kept, axis, keepdims)

    return series.of_function(masked_product, primals, series_in)


prod_where_p = _masked(
    "prod_where",
    np.prod,
    _accumulating_shape("prod_where"),
    _prod_where_jvp,
    _prod_where_vjp,
    READS_INPUTS,
    taylor=_prod_where_taylor,
)

# -- max_where, min_where ---------------------------------------------------------------------


def max_where(x, where, initial, axis, keepdims):
    """`np.max(x, axis, keepdims=keepdims, initial=initial, where=where)`."""
    return bind(max_where_p, x, where, initial, axis=tuple(axis), keepdims=bool(keepdims))


def min_where(x, where, initial, axis, keepdims):
    """`np.min(x, axis, keepdims=keepdims, initial=initial, where=where)`."""
    return bind(min_where_p, x, where, initial, axis=tuple(axis), keepdims=bool(keepdims))


def _chooser_shape(name):
    def shape(x: Aval, where: Aval, initial: Aval, *, axis, keepdims):
        _check_inputs(name, x, where, initial, axis)
        return Aval(reduced_shape(x.shape, axis, keepdims), x.dtype)

    return shape


def _chooser_rules(reduce_where, identity: float):
    """The jvp and vjp of `reduce_where` (max_where or min_where), JAX's: the result is the
    extremum of the start and of the selected elements' extremum `r` (computed from the
    `identity`, -inf or inf), and a tie of the two shares the derivative evenly; `r`'s share
    goes to the selected elements equal to it, shared evenly (`reduction.tie_weights`), and
    only then are the masked-out ones given none (so a NaN `r` gives NaN weights to the
    selected elements, 0 to the others)."""

    def weights(x, where, initial, out, axis, keepdims):
        dtype = dtype_of(out)
        start = np.asarray(identity, dtype)
        r = reduce_where(x, where, start, axis, keepdims)
        r_is, i_is = ew.equal(r, out), ew.equal(initial, out)
        half = np.asarray(0.5, dtype)
        w_r = ew.where(r_is, ew.where(i_is, half, 1.0), 0.0)
        w_start = ew.where(i_is, ew.where(r_is, half, 1.0), 0.0)
        ties = reduction.tie_weights(ew.where(where, x, start), r, axis, keepdims)
        w_x = ew.where(where, ties * keep_axes(w_r, shape_of(x), axis, keepdims), 0.0)
        return w_x, w_start

    def jvp(primals, tangents, *, out, axis, keepdims):
        x, where, initial = primals
        x_dot, _, i_dot = tangents
        if not carries_derivative(x) or (x_dot is None and i_dot is None):
            return None
        w_x, w_start = weights(x, where, initial, out, axis, keepdims)
        total = None
        if x_dot is not None:
            total = reduce_sum(x_dot * w_x, axis, keepdims)
        if i_dot is not None:
            term = i_dot * w_start
            total = term if total is None else total + term
        return total

    def vjp(g, x, where, initial, *, out, axis, keepdims):
        if not carries_derivative(x):
            return None, None, None
        w_x, w_start = weights(x, where, initial, out, axis, keepdims)
        x_bar = keep_axes(g, shape_of(x), axis, keepdims) * w_x
        i_bar = None
        if carries_derivative(initial):
            i_bar = _cast(
                reduce_sum(g * w_start, tuple(range(len(shape_of(g))))), dtype_of(initial)
            )
        return x_bar, None, i_bar

    return jvp, vjp


_max_jvp, _max_vjp = _chooser_rules(max_where, -np.inf)
_min_jvp, _min_vjp = _chooser_rules(min_where, np.inf)

max_where_p = _masked(
    "max_where",
    np.max,
    _chooser_shape("max_where"),
    _max_jvp,
    _max_vjp,
    READS_ALL,
    taylor=series.LINEAR,
)
min_where_p = _masked(
    "min_where",
    np.min,
    _chooser_shape("min_where"),
    _min_jvp,
    _min_vjp,
    READS_ALL,
    taylor=series.LINEAR,
)

PRIMITIVES = (sum_where_p, prod_where_p, max_where_p, min_where_p)
