"""Differences, integrals, interpolation and sliding products with NumPy's signatures: diff,
ediff1d, gradient, trapezoid, cumulative_sum, cumulative_prod, interp, convolve, correlate.

Each is NumPy's own sequence of operations (numpy/lib/_function_base_impl.py and friends) in
the same dtypes and memory layouts, so the bits match and the derivative is that of the
composition; interp and convolve/correlate run NumPy's C loops through the primitives of
tracegrad.primitives.calculus.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from tracegrad.core import Boxed, bind
from tracegrad.ir.types import dtype_of
from tracegrad.numpy._common import as_array, cast, known_value, ndim_of, shape_of
from tracegrad.numpy._reductions import all as all_
from tracegrad.numpy._reductions import cumprod, cumsum, sum
from tracegrad.numpy._shape import atleast_1d, broadcast_to, concatenate, ravel, reshape
from tracegrad.numpy._sorting import argsort
from tracegrad.primitives import calculus as calc
from tracegrad.primitives import elementwise as ew

__all__ = [
    "diff",
    "ediff1d",
    "gradient",
    "trapezoid",
    "cumulative_sum",
    "cumulative_prod",
    "interp",
    "convolve",
    "correlate",
]

_NoValue = np._NoValue
_F8 = np.dtype(np.float64)
_C16 = np.dtype(np.complex128)


def _along(nd: int, axis: int, item) -> tuple:
    """An index that is `item` on `axis` and `:` elsewhere (NumPy's slice1, slice2, ...)."""
    index = [slice(None)] * nd
    index[axis] = item
    return tuple(index)


def _known_flag(flag) -> bool | None:
    """The value of a traced bool when tracing is concrete, None when it is abstract."""
    value = known_value(flag)
    return None if value is None else bool(value)


# -- diff, ediff1d ----------------------------------------------------------------------------


def _slab(value, a, axis: int):
    """`prepend`/`append` as diff joins them: a scalar broadcast to one slice of `a`."""
    value = as_array(value)
    if ndim_of(value) == 0:
        shape = list(shape_of(a))
        shape[axis] = 1
        value = broadcast_to(value, tuple(shape))
    return value


def diff(a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
    """`np.diff`: n-th differences along `axis` (`not_equal` for bools, as NumPy), after
    joining `prepend` and `append`."""
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = as_array(a)
    nd = ndim_of(a)
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, nd)
    combined = [a]
    if prepend is not _NoValue:
        combined.insert(0, _slab(prepend, a, axis))
    if append is not _NoValue:
        combined.append(_slab(append, a, axis))
    if len(combined) > 1:
        a = concatenate(combined, axis)
    later, earlier = _along(nd, axis, slice(1, None)), _along(nd, axis, slice(None, -1))
    op = ew.not_equal_p if dtype_of(a) == np.bool_ else ew.subtract_p
    for _ in range(n):
        a = bind(op, a[later], a[earlier])
    return a


def _ediff_end(value, dtype, which: str):
    value = as_array(value)
    if not np.can_cast(dtype_of(value), dtype, casting="same_kind"):
        raise TypeError(
            f"dtype of `{which}` must be compatible with input `ary` under the `same_kind` rule."
        )
    return cast(ravel(value), dtype)


def ediff1d(ary, to_end=None, to_begin=None):
    """`np.ediff1d`: differences of the flattened array in its dtype, with `to_begin` and
    `to_end` (cast to that dtype) around them."""
    ary = ravel(as_array(ary))
    if to_begin is None and to_end is None:
        return ary[1:] - ary[:-1]
    dtype = dtype_of(ary)
    parts = [ary[1:] - ary[:-1]]
    if to_begin is not None:
        parts.insert(0, _ediff_end(to_begin, dtype, "to_begin"))
    if to_end is not None:
        parts.append(_ediff_end(to_end, dtype, "to_end"))
    return concatenate(parts)


# -- gradient ---------------------------------------------------------------------------------


class _Coordinates:
    """Traced 1-d coordinates along one axis, by their differences: whether they are evenly
    spaced (which picks NumPy's formula) is only known from their values."""

    def __init__(self, diffx):
        self.diffx = diffx


def _spacings(f, axes, varargs) -> list:
    """NumPy's per-axis spacing: a scalar (uniform), the differences of constant coordinates
    (or their first one when they are even), or `_Coordinates` for traced ones."""
    n, len_axes = len(varargs), len(axes)
    if n == 0:
        return [1.0] * len_axes
    if n == 1 and ndim_of(varargs[0]) == 0:
        return list(varargs) * len_axes
    if n != len_axes:
        raise TypeError("invalid number of arguments")
    dx = list(varargs)
    for i, distances in enumerate(dx):
        distances = as_array(distances)
        if ndim_of(distances) == 0:
            continue
        if ndim_of(distances) != 1:
            raise ValueError("distances must be either scalars or 1d")
        if shape_of(distances)[0] != shape_of(f)[axes[i]]:
            raise ValueError(
                "when 1d, distances must match the length of the corresponding dimension"
            )
        if np.issubdtype(dtype_of(distances), np.integer):
            distances = cast(distances, _F8)
        diffx = diff(distances)
        if isinstance(diffx, Boxed):
            dx[i] = _Coordinates(diffx)
        elif (diffx == diffx[0]).all():  # constant coordinates: NumPy's own test
            dx[i] = diffx[0]
        else:
            dx[i] = diffx
    return dx


def _edges_1(f, s, ax_dx, uniform: bool):
    dx_0 = ax_dx if uniform else ax_dx[0]
    first = (f[s(slice(1, 2))] - f[s(slice(0, 1))]) / dx_0
    dx_n = ax_dx if uniform else ax_dx[-1]
    last = (f[s(slice(-1, None))] - f[s(slice(-2, -1))]) / dx_n
    return first, last


def _edge_weights_2(ax_dx, uniform: bool):
    """NumPy's second-order edge weights: ((a, b, c) at the start, (a, b, c) at the end)."""
    if uniform:
        return (-1.5 / ax_dx, 2.0 / ax_dx, -0.5 / ax_dx), (0.5 / ax_dx, -2.0 / ax_dx, 1.5 / ax_dx)
    dx1, dx2 = ax_dx[0], ax_dx[1]
    start = (
        -(2.0 * dx1 + dx2) / (dx1 * (dx1 + dx2)),
        (dx1 + dx2) / (dx1 * dx2),
        -dx1 / (dx2 * (dx1 + dx2)),
    )
    dx1, dx2 = ax_dx[-2], ax_dx[-1]
    end = (
        (dx2) / (dx1 * (dx1 + dx2)),
        -(dx2 + dx1) / (dx1 * dx2),
        (2.0 * dx2 + dx1) / (dx2 * (dx1 + dx2)),
    )
    return start, end


def _edges_2(f, s, ax_dx, uniform: bool):
    (a, b, c), (a2, b2, c2) = _edge_weights_2(ax_dx, uniform)
    first = a * f[s(slice(0, 1))] + b * f[s(slice(1, 2))] + c * f[s(slice(2, 3))]
    last = a2 * f[s(slice(-3, -2))] + b2 * f[s(slice(-2, -1))] + c2 * f[s(slice(-1, None))]
    return first, last


def _interior(f, s, ax_dx, uniform: bool, axis: int):
    if uniform:
        return (f[s(slice(2, None))] - f[s(slice(None, -2))]) / (2.0 * ax_dx)
    dx1, dx2 = ax_dx[0:-1], ax_dx[1:]
    a = -(dx2) / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    shape = [1] * ndim_of(f)
    shape[axis] = shape_of(dx1)[0]
    a, b, c = (reshape(w, tuple(shape)) for w in (a, b, c))
    return a * f[s(slice(None, -2))] + b * f[s(slice(1, -1))] + c * f[s(slice(2, None))]


def _gradient_formula(f, axis: int, ax_dx, uniform: bool, edge_order: int, otype):
    """One axis of np.gradient: central differences inside, one-sided ones at the edges, each
    part cast to the output dtype as NumPy's assignment into `out` casts it."""
    nd = ndim_of(f)

    def s(item):
        return _along(nd, axis, item)

    inside = _interior(f, s, ax_dx, uniform, axis)
    edges = _edges_1 if edge_order == 1 else _edges_2
    first, last = edges(f, s, ax_dx, uniform)
    return concatenate([cast(p, otype) for p in (first, inside, last)], axis)


def _gradient_traced(f, axis: int, coords: _Coordinates, edge_order: int, otype):
    """Traced coordinates: NumPy's value (the uniform formula when they are evenly spaced,
    which under jit is a traced choice), with the derivative of the general formula. At even
    spacing the value is still a function of every coordinate, and only the general formula
    says how it moves with each one (the uniform one reads only the first difference).

    The formula NumPy does not use runs on `f` with its infinities and NaNs set to 0: its
    value is not returned, and so it gives none of the invalid-value warnings (0 * inf,
    inf - inf) NumPy does not give. Under jit both formulas run, each on the `f` it gets by
    the traced choice."""
    diffx = coords.diffx
    flag = all_(bind(ew.equal_p, diffx, diffx[0]))
    known = _known_flag(flag)
    if known is False:
        return _gradient_formula(f, axis, diffx, False, edge_order, otype)
    finite_f = ew.where(bind(ew.isfinite_p, f), f, 0)
    for_general, for_uniform = finite_f, f
    if known is None:
        for_general, for_uniform = ew.where(flag, finite_f, f), ew.where(flag, f, finite_f)
    general = _gradient_formula(for_general, axis, diffx, False, edge_order, otype)
    uniform = _gradient_formula(for_uniform, axis, diffx[0], True, edge_order, otype)
    # uniform - (general - general): the uniform bits (x - +0.0 == x, -0.0 included) and
    # the general derivative; where the general value is not finite, the uniform one as is
    fixed = ew.stop_gradient(general)
    finite = bind(ew.isfinite_p, fixed)
    delta = ew.where(finite, fixed, 0) - ew.where(finite, general, 0)
    blended = ew.where(finite, ew.stop_gradient(uniform) - delta, uniform)
    return blended if known else ew.where(flag, blended, general)


def gradient(f, *varargs, axis=None, edge_order=1):
    """`np.gradient`, NumPy's formulas for edge_order 1 and 2, uniform and non-uniform
    spacing (scalars or coordinate arrays per axis), differentiable in `f` and the spacing."""
    f = as_array(f)
    nd = ndim_of(f)
    axes = tuple(range(nd)) if axis is None else normalize_axis_tuple(axis, nd)
    dx = _spacings(f, axes, varargs)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = dtype_of(f)
    if otype.kind in "mM":
        raise NotImplementedError(
            "tracegrad.numpy.gradient: datetime64 and timedelta64 arrays are not supported"
        )
    if otype.kind not in "fc":  # NumPy: integers are converted to float64 first
        if otype.kind in "iu":
            f = cast(f, _F8)
        otype = _F8
    outvals = []
    for ax, ax_dx in zip(axes, dx):
        if shape_of(f)[ax] < edge_order + 1:
            raise ValueError(
                "Shape of array too small to calculate a numerical gradient, "
                "at least (edge_order + 1) elements are required."
            )
        if isinstance(ax_dx, _Coordinates):
            outvals.append(_gradient_traced(f, ax, ax_dx, edge_order, otype))
        else:
            uniform = ndim_of(ax_dx) == 0
            outvals.append(_gradient_formula(f, ax, ax_dx, uniform, edge_order, otype))
    return outvals[0] if len(axes) == 1 else tuple(outvals)


# -- trapezoid, cumulative_sum, cumulative_prod -----------------------------------------------


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """`np.trapezoid`: sum(d * (y[1:] + y[:-1]) / 2.0) along `axis`, d the spacing."""
    y = as_array(y)
    nd = ndim_of(y)
    if x is None:
        d = dx
    else:
        x = as_array(x)
        if ndim_of(x) == 1:
            d = diff(x)
            shape = [1] * nd
            shape[axis] = shape_of(d)[0]
            d = reshape(d, shape)
        else:
            d = diff(x, axis=axis)
    later, earlier = _along(nd, axis, slice(1, None)), _along(nd, axis, slice(None, -1))
    return sum(d * (y[later] + y[earlier]) / 2.0, axis)


def _cumulative(fname: str, accumulate, identity: int):
    def f(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if out is not None:
            raise NotImplementedError(
                f"tracegrad.numpy.{fname}: the argument out= is not supported (a traced result "
                "cannot be written into an array in place; use the returned value)"
            )
        x = atleast_1d(x)
        if axis is None:
            if ndim_of(x) >= 2:
                raise ValueError(
                    "For arrays which have more than one dimension ``axis`` argument is required."
                )
            axis = 0
        res = accumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            initial_shape = list(shape_of(x))
            initial_shape[axis] = 1
            initial = np.full(initial_shape, identity, dtype_of(res))
            res = concatenate([initial, res], axis=axis)
        return res

    f.__name__ = f.__qualname__ = fname
    f.__doc__ = (
        f"`numpy.{fname}` (NumPy 2.1): the accumulation along `axis` (required above one "
        f"dimension), with the identity {identity} in front when `include_initial`."
    )
    return f


cumulative_sum = _cumulative("cumulative_sum", cumsum, 0)
cumulative_prod = _cumulative("cumulative_prod", cumprod, 1)

# -- interp -----------------------------------------------------------------------------------


def _one_axis_points(a):
    """A one-dimensional operand (interp's xp and fp, correlate's a and v), with the messages
    of NumPy's conversion."""
    a = as_array(a)
    if ndim_of(a) == 0:
        raise ValueError("object of too small depth for desired array")
    if ndim_of(a) > 1:
        raise ValueError("object too deep for desired array")
    return a


def _bound(value, fp):
    """`left` / `right`: a 0-d value (NumPy converts it with float() or complex())."""
    if value is None:
        return None
    value = value if isinstance(value, Boxed) else np.asarray(value)
    if ndim_of(value) != 0:
        raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
    if dtype_of(value).kind == "c" and dtype_of(fp).kind != "c":
        raise TypeError("must be real number, not complex")
    return value


def _periodic(x, xp, fp, period, input_dtype):
    """NumPy's periodic interp: x and xp taken modulo the period, xp sorted (fp with it) and
    extended by one point on each side."""
    if isinstance(period, Boxed):
        raise NotImplementedError(
            "tracegrad.numpy.interp: a traced period is not supported (its derivative is not "
            "taken); pass period as a number"
        )
    if period == 0:
        raise ValueError("period must be a non-zero value")
    period = abs(period)
    x = cast(as_array(x), _F8)
    xp = cast(as_array(xp), _F8)
    fp = cast(fp, input_dtype)
    if ndim_of(xp) != 1 or ndim_of(fp) != 1:
        raise ValueError("Data points must be 1-D sequences")
    if shape_of(xp)[0] != shape_of(fp)[0]:
        raise ValueError("fp and xp are not of the same length")
    x = x % period
    xp = xp % period
    asort_xp = argsort(xp)
    xp = xp[asort_xp]
    fp = fp[asort_xp]
    xp = concatenate((xp[-1:] - period, xp, xp[0:1] + period))
    fp = concatenate((fp[-1:], fp, fp[0:1]))
    return x, xp, fp


def interp(x, xp, fp, left=None, right=None, period=None):
    """`np.interp`: float64 results (complex128 for complex fp), differentiable in x, xp, fp,
    left and right. At a knot the derivative is the one from the right (the interval
    xp[j] <= x < xp[j + 1] that NumPy's search picks); at x == xp[-1] the value is fp[-1], whose
    derivative in x is 0. xp must be increasing, as NumPy requires (it does not check)."""
    fp = as_array(fp)
    input_dtype = _C16 if dtype_of(fp).kind == "c" else _F8
    if period is not None:
        x, xp, fp = _periodic(x, xp, fp, period, input_dtype)
        left = right = None
    fp = _one_axis_points(fp)
    xp = _one_axis_points(xp)
    x = x if isinstance(x, Boxed | float | int) else np.asarray(x)
    if shape_of(xp)[0] == 0:
        raise ValueError("array of sample points is empty")
    if shape_of(fp)[0] != shape_of(xp)[0]:
        raise ValueError("fp and xp are not of the same length.")
    left = fp[0] if left is None else _bound(left, fp)
    right = fp[-1] if right is None else _bound(right, fp)
    return calc.interp(x, xp, fp, left, right)


# -- convolve, correlate ----------------------------------------------------------------------


def _mode_code(mode) -> int:
    """NumPy's convolve/correlate mode: a name, or its code 0, 1, 2, with NumPy's errors."""
    if isinstance(mode, str):
        if mode in calc.MODES:
            return calc.MODES.index(mode)
        if mode[:1].lower() in ("v", "s", "f"):
            raise ValueError("Use one of 'valid', 'same', or 'full' for convolve/correlate mode")
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    if isinstance(mode, int | np.integer) and not isinstance(mode, bool | np.bool_):
        if 0 <= mode <= 2:
            return int(mode)
        raise ValueError("integer convolve/correlate mode must be 0, 1, or 2")
    raise TypeError("convolve/correlate mode not understood")


def _common(a, v):
    dtype = np.result_type(dtype_of(a), dtype_of(v))
    return cast(a, dtype), cast(v, dtype)


def correlate(a, v, mode="valid"):
    """`np.correlate`: sum_n a[n + k] conj(v[n]), differentiable in both operands (complex
    ones by JAX's convention)."""
    code = _mode_code(mode)
    a, v = _common(_one_axis_points(a), _one_axis_points(v))
    return calc.correlate(a, v, code)


def convolve(a, v, mode="full"):
    """`np.convolve`: NumPy computes correlate(a, v[::-1]) with the longer operand first, and so
    does this (one primitive, the same bits)."""
    code = _mode_code(mode)
    a, v = atleast_1d(as_array(a)), atleast_1d(as_array(v))
    if shape_of(a)[0] == 0:
        raise ValueError("a cannot be empty")
    if shape_of(v)[0] == 0:
        raise ValueError("v cannot be empty")
    if shape_of(v)[0] > shape_of(a)[0]:
        a, v = v, a
    a, v = _common(_one_axis_points(a), _one_axis_points(v))
    flipped = v[::-1]
    # correlate conjugates its second operand; convolve's does not: conjugate it first
    if dtype_of(flipped).kind == "c":
        flipped = ew.conjugate(flipped)
    return calc.correlate(a, flipped, code)
