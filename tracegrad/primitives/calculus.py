"""Primitives of NumPy's one-dimensional numerics whose bits come from NumPy's own C loops:
`correlate` (under both `np.correlate` and `np.convolve`) and `interp` (whose derivative reads
the knot interval np.interp's binary search brackets each point with: `searchsorted`). A
composition cannot reproduce either loop (correlate sums each lag with the dtype's dot, BLAS
for floats; interp evaluates `slope * (x - xp[j]) + fp[j]` in C), so `impl` calls NumPy, and
every rule is written with tracegrad's own operations.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_INPUTS, Primitive
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.broadcasting import broadcast_to, sum
from tracegrad.primitives.indexing import gather, scatter_add
from tracegrad.primitives.products import conj
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.sorting import searchsorted
from tracegrad.primitives.views import flip, move_to_front, reshape

_F8 = np.dtype(np.float64)
_C16 = np.dtype(np.complex128)

# -- correlate --------------------------------------------------------------------------------
# out[k] = sum_n a[n + k - s] * conj(v[n]) over the last axis, zero-padded, where the mode keeps
# lags `start .. start + length` of the full correlation and s = len(v) - 1 - start. NumPy swaps
# the operands when v is the longer one and reverses the result; the formula is the same. It is
# linear in a and conjugate-linear in v, so (JAX's convention for complex values; L = len(bar))
#   a_bar[i] = sum_k bar[k] conj(v[i - k + s])      = full correlate(bar, flip(v))[i + s]
#   v_bar[n] = sum_k conj(a[n + k - s]) conj(bar[k]) = full correlate(conj(a), bar)[n + L - 1 - s]
# np.convolve(a, v) is correlate(a, conj(flip(v))) with the longer operand first: the same bits.
# Leading axes (equal in a and v) are a batch: NumPy has no batched correlate, so each row is its
# own np.correlate call, exactly as a loop over the rows would make it.

#: the modes by NumPy's own codes (NPY_VALID, NPY_SAME, NPY_FULL): the param is the code, an
#: int, which the code generator writes as a validated literal (it writes no strings)
MODES = ("valid", "same", "full")
_FULL = 2


def correlate(a, v, mode: str | int):
    """`np.correlate(a, v, mode)` along the last axis (`mode` a name or its code); `a` and `v`
    have one dtype and equal leading (batch) axes."""
    return bind(correlate_p, a, v, mode=MODES.index(mode) if isinstance(mode, str) else mode)


def lags(mode: int, n1: int, n2: int) -> tuple[int, int]:
    """(start, length): the lags of the full correlation (all n1 + n2 - 1 of them) that
    `mode` keeps, as NumPy's `_pyarray_correlate` picks them (also when it swaps operands)."""
    mode = MODES[mode]
    short, long = min(n1, n2), max(n1, n2)
    if mode == "full":
        return 0, n1 + n2 - 1
    if mode == "valid":
        return short - 1, long - short + 1
    # 'same' centres the short operand; swapped (n1 < n2), the result is reversed
    return (n2 - 1 - n2 // 2 if n1 >= n2 else n1 // 2), long


_LENGTH = {
    "full": "_a.shape[-1] + _v.shape[-1] - 1",
    "same": "max(_a.shape[-1], _v.shape[-1])",
    "valid": "abs(_a.shape[-1] - _v.shape[-1]) + 1",
}


def _correlate_text(a: str, v: str, mode: int) -> str:
    """The NumPy expression of correlate: one np.correlate call per row."""
    mode = MODES[mode]
    rows = (
        f"np.array([np.correlate(_x, _y, {mode!r}) for _x, _y in "
        "zip(_a.reshape(-1, _a.shape[-1]), _v.reshape(-1, _v.shape[-1]))], _a.dtype)"
        f".reshape(_a.shape[:-1] + ({_LENGTH[mode]},))"
    )
    return f"(lambda _a, _v: np.correlate(_a, _v, {mode!r}) if _a.ndim == 1 else {rows})({a}, {v})"


_CORRELATE_IMPLS = {
    # the emitted text, compiled once per mode (our own text, no user input): impl and the
    # code generator run the same NumPy calls
    mode: eval(compile(f"lambda a, v: {_correlate_text('a', 'v', mode)}", "<correlate>", "eval"))  # noqa: S307
    for mode in range(len(MODES))
}


def _correlate_impl(a, v, *, mode):
    return _CORRELATE_IMPLS[mode](np.asarray(a), np.asarray(v))


def _correlate_shape(a: Aval, v: Aval, *, mode):
    if type(mode) is not int or not 0 <= mode < len(MODES):
        raise ValueError(f"correlate: mode must be 0 (valid), 1 (same) or 2 (full), got {mode!r}")
    if a.ndim < 1 or v.ndim != a.ndim or a.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"correlate: a {list(a.shape)} and v {list(v.shape)} must have one or more axes and "
            "equal leading (batch) axes"
        )
    if a.dtype != v.dtype:
        raise TypeError(f"correlate: a and v must have one dtype, got {a.dtype} and {v.dtype}")
    n1, n2 = a.shape[-1], v.shape[-1]
    if n1 == 0 or n2 == 0:
        which = "first" if n1 == 0 else "second"
        raise ValueError(f"correlate: {which} array argument cannot be empty")
    return Aval(a.shape[:-1] + (lags(mode, n1, n2)[1],), a.dtype)


def _last_axis_slice(x, start: int, length: int):
    shape = shape_of(x)
    starts = (0,) * (len(shape) - 1) + (start,)
    return slice_static(x, starts, shape[:-1] + (start + length,))


def _correlate_jvp(primals, tangents, *, out, mode):
    (a, v), (a_dot, v_dot) = primals, tangents
    terms = []
    if a_dot is not None and carries_derivative(a):
        terms.append(correlate(a_dot, v, mode))
    if v_dot is not None and carries_derivative(v):
        terms.append(correlate(a, v_dot, mode))
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


def _shift(mode, a, v) -> int:
    """s = len(v) - 1 - start: out[k] reads a[n + k - s] against v[n]."""
    n1, n2 = shape_of(a)[-1], shape_of(v)[-1]
    return n2 - 1 - lags(mode, n1, n2)[0]


def _correlate_a_bar(bar, a, v, *, out, mode):
    if not carries_derivative(a):
        return None
    s = _shift(mode, a, v)
    full = correlate(bar, flip(v, (len(shape_of(v)) - 1,)), _FULL)
    return _last_axis_slice(full, s, shape_of(a)[-1])


def _correlate_v_bar(bar, a, v, *, out, mode):
    if not carries_derivative(v):
        return None
    s = _shift(mode, a, v)
    full = correlate(conj(a), bar, _FULL)
    return _last_axis_slice(full, shape_of(bar)[-1] - 1 - s, shape_of(v)[-1])


def _correlate_batch(args, dims, *, mode):
    size = batch_size(args, dims)
    a, v = (materialize(x, d, size) for x, d in zip(args, dims))
    return correlate(a, v, mode), 0


correlate_p = Primitive(
    "correlate",
    impl=_correlate_impl,
    shape=_correlate_shape,
    jvp=_correlate_jvp,
    vjp=(_correlate_a_bar, _correlate_v_bar),
    batch=_correlate_batch,
    emit=lambda a, v, *, mode: _correlate_text(a, v, mode),
    vjp_reads=READS_INPUTS,
    bilinear=True,
    layout=Layout.C,
    taylor=series.MULTILINEAR,
)

# -- interp -----------------------------------------------------------------------------------
# out = np.interp(x, xp, fp, left, right): fp[j] + slope * (x - xp[j]) for xp[j] <= x <
# xp[j + 1], slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]); `left` below xp[0], `right`
# above xp[-1], fp[-1] at x == xp[-1] (the wrapper passes fp[0] and fp[-1] as left and right when
# they are not given, so their derivatives reach fp). At the knots the derivative is one-sided:
# the half-open interval NumPy's search picks, xp[j] <= x < xp[j + 1], i.e. the derivative from
# the right (JAX's choice too); at x == xp[-1] the value is fp[-1], whose x-derivative is 0. NaN
# points get no derivative. With t = (x - xp[j]) / h, h = xp[j + 1] - xp[j]:
#   d/dx = slope, d/dfp[j] = 1 - t, d/dfp[j+1] = t, d/dxp[j] = slope (t - 1), d/dxp[j+1] = -slope t.
# Complex fp follows JAX: fp's cotangent is the transpose (no conjugate), a real input's is the
# real part.


def interp(x, xp, fp, left, right):
    """`np.interp(x, xp, fp, left, right)` (left and right 0-d values); float64 or complex128."""
    return bind(interp_p, x, xp, fp, left, right)


def _interp_shape(x: Aval, xp: Aval, fp: Aval, left: Aval, right: Aval):
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("interp: xp and fp must be one-dimensional")
    if xp.shape[0] == 0:
        raise ValueError("interp: array of sample points is empty")
    if fp.shape != xp.shape:
        raise ValueError("interp: fp and xp are not of the same length.")
    if left.ndim or right.ndim:
        raise ValueError("interp: left and right must be 0-d values")
    real = [a for a in (x, xp) if a.dtype.kind not in "biuf"]
    complex_out = fp.dtype.kind == "c"
    if not complex_out:
        real += [a for a in (fp, left, right) if a.dtype.kind not in "biuf"]
    if real or fp.dtype.kind not in "biufc":
        raise TypeError(
            "interp: x, xp (and left, right and fp unless fp is complex) must be real numbers"
        )
    return Aval(x.shape, _C16 if complex_out else _F8)


def _f64(x):
    return x if dtype_of(x) == _F8 else ew.astype(x, _F8)


def _take(v, idx):
    return gather(v, idx, index=("array",))


def _put(updates, idx, n: int):
    return scatter_add(updates, idx, shape=(n,), index=("array",))


class _Pieces:
    """What interp's derivatives read, for one call: the regions of the points and, inside
    [xp[0], xp[-1]), the interval j, its slope and the position t in it."""

    def __init__(self, x, xp, fp):
        n = shape_of(xp)[0]
        self.n = n
        x, xp = _f64(x), _f64(xp)
        fp = fp if dtype_of(fp).kind == "c" else _f64(fp)
        last = _take(xp, np.asarray(n - 1))
        first = _take(xp, np.asarray(0))
        self.below = bind(ew.less_p, x, first)
        self.beyond = bind(ew.greater_p, x, last)
        if n == 1:  # NumPy: (x < xp) ? left : (x > xp) ? right : fp[0], NaN included
            self.at_end = bind(ew.logical_not_p, bind(ew.logical_or_p, self.below, self.beyond))
            self.inside = None
            return
        self.at_end = bind(ew.equal_p, x, last)
        # the interval np.interp's binary search brackets x with: xp[k - 1] <= x < xp[k]
        k = searchsorted(xp, x, right=True)
        self.inside = bind(
            ew.logical_and_p, bind(ew.greater_equal_p, k, 1), bind(ew.less_equal_p, k, n - 1)
        )
        self.j = ew.clip(k - 1, 0, n - 2)
        self.j1 = self.j + 1
        xj = _take(xp, self.j)
        # a safe width outside: the masked-out branches stay finite, so their (zero)
        # cotangents never meet an inf (0 * inf = nan) in a second derivative
        h = ew.where(self.inside, _take(xp, self.j1) - xj, 1.0)
        self.slope = (_take(fp, self.j1) - _take(fp, self.j)) / h
        self.t = (x - xj) / h

    def inside_only(self, v):
        return ew.where(self.inside, v, 0.0)


def _to_input(c, like):
    """A cotangent of `like`'s kind: the real part for a real input (JAX's convention), in
    its dtype."""
    if dtype_of(c).kind == "c" and dtype_of(like).kind != "c":
        c = ew.real(c)
    return c if dtype_of(c) == dtype_of(like) else ew.astype(c, dtype_of(like))


def _interp_jvp(primals, tangents, *, out):
    x, xp, fp, left, right = primals
    x_dot, xp_dot, fp_dot, left_dot, right_dot = (
        t if t is not None and carries_derivative(p) else None for p, t in zip(primals, tangents)
    )
    if all(t is None for t in (x_dot, xp_dot, fp_dot, left_dot, right_dot)):
        return None
    p = _Pieces(x, xp, fp)
    terms = []
    if fp_dot is not None:
        terms.append(ew.where(p.at_end, _take(fp_dot, np.asarray(p.n - 1)), 0.0))
    if left_dot is not None:
        terms.append(ew.where(p.below, left_dot, 0.0))
    if right_dot is not None:
        terms.append(ew.where(p.beyond, right_dot, 0.0))
    if p.inside is not None:
        if x_dot is not None:
            terms.append(p.inside_only(p.slope * _f64(x_dot)))
        if fp_dot is not None:
            moved = (1.0 - p.t) * _take(fp_dot, p.j) + p.t * _take(fp_dot, p.j1)
            terms.append(p.inside_only(moved))
        if xp_dot is not None:
            xp_dot = _f64(xp_dot)
            moved = (p.t - 1.0) * _take(xp_dot, p.j) - p.t * _take(xp_dot, p.j1)
            terms.append(p.inside_only(p.slope * moved))
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    total = broadcast_to(total, shape_of(out)) if shape_of(total) != shape_of(out) else total
    return total if dtype_of(total) == dtype_of(out) else ew.astype(total, dtype_of(out))


def _interp_x_bar(bar, x, xp, fp, left, right, *, out):
    if not carries_derivative(x):
        return None
    p = _Pieces(x, xp, fp)
    if p.inside is None:  # one knot: the value does not move with x
        return None
    return _to_input(p.inside_only(bar * p.slope), x)


def _interp_xp_bar(bar, x, xp, fp, left, right, *, out):
    if not carries_derivative(xp):
        return None
    p = _Pieces(x, xp, fp)
    if p.inside is None:  # one knot: the value does not move with it
        return None
    g = bar * p.slope
    at_j = _put(p.inside_only(g * (p.t - 1.0)), p.j, p.n)
    at_j1 = _put(p.inside_only(-(g * p.t)), p.j1, p.n)
    return _to_input(at_j + at_j1, xp)


def _interp_fp_bar(bar, x, xp, fp, left, right, *, out):
    if not carries_derivative(fp):
        return None
    p = _Pieces(x, xp, fp)
    last = np.full(shape_of(x), p.n - 1, np.intp)
    total = _put(ew.where(p.at_end, bar, 0.0), last, p.n)
    if p.inside is not None:
        total = total + _put(p.inside_only(bar * (1.0 - p.t)), p.j, p.n)
        total = total + _put(p.inside_only(bar * p.t), p.j1, p.n)
    return _to_input(total, fp)


def _interp_bound_bar(region: str):
    def rule(bar, x, xp, fp, left, right, *, out):
        value = left if region == "below" else right
        if not carries_derivative(value):
            return None
        mask = getattr(_Pieces(x, xp, fp), region)
        picked = ew.where(mask, bar, 0.0)
        return _to_input(sum(picked, tuple(range(len(shape_of(picked)))), False), value)

    return rule


def _interp_taylor(primals, series_in, *, out):
    # the interval each point falls in is fixed along the series (piecewise): the series of
    # fp[j] + (fp[j + 1] - fp[j]) (x - xp[j]) / (xp[j + 1] - xp[j]) there (bilinear in fp and
    # x, rational in xp), of left / right / fp[-1] in the other regions, by a Taylor pass
    p = _Pieces(*primals[:3])

    def pieces(x, xp, fp, left, right):
        y = ew.where(p.at_end, _take(fp, np.asarray(p.n - 1)), 0.0)
        if p.inside is not None:
            x, xp = _f64(x), _f64(xp)
            fp = fp if dtype_of(fp).kind == "c" else _f64(fp)
            xj, fj = _take(xp, p.j), _take(fp, p.j)
            h = ew.where(p.inside, _take(xp, p.j1) - xj, 1.0)
            y = ew.where(p.inside, fj + (_take(fp, p.j1) - fj) * ((x - xj) / h), y)
        y = ew.where(p.below, left, ew.where(p.beyond, right, y))
        y = broadcast_to(y, shape_of(out)) if shape_of(y) != shape_of(out) else y
        return y if dtype_of(y) == dtype_of(out) else ew.astype(y, dtype_of(out))

    return series.of_function(pieces, primals, series_in)


def _example(a, d, b: int):
    """Example `b` of `a` (batch axis `d`), or `a` itself when it is not batched."""
    if d is None:
        return a
    a = move_to_front(a, d)
    shape = shape_of(a)
    part = slice_static(a, (b,) + (0,) * (len(shape) - 1), (b + 1,) + shape[1:])
    return reshape(part, shape[1:])


def _interp_batch(args, dims):
    x, dx = args[0], dims[0]
    if all(d is None for d in dims[1:]):  # one set of knots: x of any shape, batch axis kept
        return interp(*args), dx
    # NumPy has no batched interp: each example is its own call, as a loop would make it
    size = batch_size(args, dims)
    per_example = Aval(
        shape_of(x)[:dx] + shape_of(x)[dx + 1 :] if dx is not None else shape_of(x),
        _C16 if dtype_of(args[2]).kind == "c" else _F8,
    )
    if size == 0:
        return np.zeros((0,) + per_example.shape, per_example.dtype), 0
    rows = [interp(*(_example(a, d, b) for a, d in zip(args, dims))) for b in range(size)]
    return concatenate([reshape(r, (1,) + per_example.shape) for r in rows], 0), 0


def _interp_impl(x, xp, fp, left, right):
    # left and right as NumPy scalars: np.interp cannot convert a 0-d complex array
    return np.interp(x, xp, fp, np.asarray(left)[()], np.asarray(right)[()])


def _interp_emit(x, xp, fp, left, right):
    return f"np.interp({x}, {xp}, {fp}, np.asarray({left})[()], np.asarray({right})[()])"


interp_p = Primitive(
    "interp",
    impl=_interp_impl,
    shape=_interp_shape,
    jvp=_interp_jvp,
    vjp=(
        _interp_x_bar,
        _interp_xp_bar,
        _interp_fp_bar,
        _interp_bound_bar("below"),
        _interp_bound_bar("beyond"),
    ),
    batch=_interp_batch,
    emit=_interp_emit,
    vjp_reads=READS_INPUTS,
    layout=Layout.C,
    taylor=_interp_taylor,
)

PRIMITIVES = (correlate_p, interp_p)
