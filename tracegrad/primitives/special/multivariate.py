"""`scipy.stats.multivariate_normal.logpdf` as a primitive, SciPy's own call (its
eigendecomposition of cov), with the pseudo-inverse of cov (`psd_pinv`) its derivatives use;
both batch by a loop (`loop_batch`), which gives a loop's bits.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_OUTPUT, Primitive, per_input
from tracegrad.ir.primitive import rule_for as _rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.batching import batch_size
from tracegrad.primitives.broadcasting import (
    sum,  # noqa: A004 - the sum primitive
)
from tracegrad.primitives.products import matmul
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.special._base import (
    _broadcast_like,
    _call_text,
    _real_only,
    _refuse,
    _scipy,
    where,
)
from tracegrad.primitives.views import move_to_front, reshape, transpose

# -- batching by a loop -----------------------------------------------------------------------


def _example(x, dim, i):
    """Example `i` of `x` along its batch axis `dim` (a slice, then the axis dropped)."""
    x = move_to_front(x, dim)
    s = shape_of(x)
    row = slice_static(x, (i,) + (0,) * (len(s) - 1), (i + 1,) + s[1:])
    return reshape(row, s[1:])


def loop_batch(prim):
    """A batching rule that applies `prim` to one example at a time and stacks the results:
    for primitives whose SciPy call factors a matrix per call (an eigendecomposition), where
    one call over the batch would not give a loop's bits."""

    def batch(args, dims, **params):
        n = batch_size(args, dims)
        out_aval = prim.shape(
            *[Aval(_drop(shape_of(a), d), dtype_of(a)) for a, d in zip(args, dims)], **params
        )
        if n == 0:
            return np.zeros((0,) + out_aval.shape, out_aval.dtype), 0
        rows = []
        for i in range(n):
            example = [a if d is None else _example(a, d, i) for a, d in zip(args, dims)]
            rows.append(reshape(bind(prim, *example, **params), (1,) + out_aval.shape))
        return (rows[0] if n == 1 else concatenate(rows, 0)), 0

    return batch


def _drop(shape, dim):
    return shape if dim is None else shape[:dim] + shape[dim + 1 :]


# -- the multivariate normal ------------------------------------------------------------------
# multivariate_normal.logpdf(x, mean, cov, allow_singular) itself, on x of shape (..., d) with at
# least two axes, mean (d,) and cov (d, d) (the tracegrad.scipy wrapper makes them so, as SciPy
# does); the result has x's leading shape. SciPy reads only the lower triangle of cov
# (scipy.linalg.eigh(lower=True)), so the derivative in cov is that of the symmetric matrix built
# from it: with P the pseudo-inverse of cov and w = (x - mean) P, summed over the points,
#   d out / d x = -w,  d out / d mean = w,  d out / d cov = fold(0.5 (w^T w - P)),
# fold(G) = (G + G^T) below the diagonal, G on it. `psd_pinv` (SciPy's `_PSD(cov).pinv`)
# differentiates as -P dS P, so the rules differentiate again. With allow_singular=True the
# derivative in cov is refused (the pseudo-inverse jumps where the rank changes), and points
# outside the support (logpdf -inf) get zero derivatives.

_MVN = "scipy.stats:multivariate_normal.logpdf"
_PSD = "scipy.stats._multivariate:_PSD"


def psd_pinv(cov, allow_singular):
    return bind(psd_pinv_p, cov, allow_singular=bool(allow_singular))


def _masks(d: int, dtype):
    return np.tri(d, k=-1, dtype=dtype), np.eye(d, dtype=dtype)


def _symmetric_from_lower(t):
    """The symmetric matrix SciPy sees when `t` is its input: t's lower triangle mirrored."""
    lower, diag = _masks(shape_of(t)[0], dtype_of(t))
    strict = t * lower
    return strict + transpose(strict, (1, 0)) + t * diag


def _fold_lower(g):
    """The transpose of `_symmetric_from_lower`: a symmetric gradient onto the lower triangle."""
    lower, diag = _masks(shape_of(g)[0], dtype_of(g))
    return (g + transpose(g, (1, 0))) * lower + g * diag


def _check_square(name, cov: Aval):
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValueError(f"{name}: cov must be a square matrix, got shape {cov.shape}")


@functools.lru_cache(maxsize=64)
def _psd_dtype(dtype):
    return _scipy(_PSD)(np.eye(1, dtype=dtype)).pinv.dtype


def _psd_pinv_shape(cov: Aval, *, allow_singular):
    _check_square("psd_pinv", cov)
    return Aval(cov.shape, _psd_dtype(cov.dtype))


def _no_singular_cov(allow_singular):
    if allow_singular:
        raise _refuse(
            "multivariate_normal with allow_singular=True",
            "the derivative in cov is not defined where the rank of cov changes",
        )


def _psd_pinv_jvp(primals, tangents, *, out, allow_singular):
    (t,) = tangents
    if t is None:
        return None
    _no_singular_cov(allow_singular)
    _real_only("multivariate_normal", primals[0])
    return ew.negative(matmul(matmul(out, _symmetric_from_lower(t)), out))


def _psd_pinv_vjp(bar, cov, *, out, allow_singular):
    if not carries_derivative(cov):
        return (None,)
    _no_singular_cov(allow_singular)
    _real_only("multivariate_normal", cov)
    return (_fold_lower(ew.negative(matmul(matmul(out, bar), out))),)


psd_pinv_p = Primitive(
    "scipy.stats.psd_pinv",
    impl=lambda cov, *, allow_singular: _scipy(_PSD)(cov, allow_singular=allow_singular).pinv,
    shape=_psd_pinv_shape,
    jvp=_psd_pinv_jvp,
    vjp=_psd_pinv_vjp,
    batch=_rule_for(loop_batch),
    emit=lambda c, *, allow_singular: [
        *_call_text(_PSD, [c], f", allow_singular={allow_singular!r}")[:-1],
        _call_text(_PSD, [c], f", allow_singular={allow_singular!r}")[-1] + ".pinv",
    ],
    vjp_reads=READS_OUTPUT,
    layout=Layout.C,
)


def mvn_logpdf(x, mean, cov, allow_singular):
    return bind(mvn_logpdf_p, x, mean, cov, allow_singular=bool(allow_singular))


def _mvn_shape(x: Aval, mean: Aval, cov: Aval, *, allow_singular):
    _check_square("multivariate_normal", cov)
    d = cov.shape[0]
    if x.ndim < 2 or x.shape[-1] != d or mean.shape != (d,):
        raise ValueError(
            f"multivariate_normal: x {x.shape}, mean {mean.shape} and cov {cov.shape} must be "
            f"(..., {d}) with at least two axes, ({d},) and ({d}, {d})"
        )
    return Aval(x.shape[:-1], np.float64)


def _mvn_parts(x, mean, cov, out, allow_singular):
    """(P, w, inside): the pseudo-inverse, (x - mean) P, and where out > -inf."""
    p = psd_pinv(cov, allow_singular)
    w = matmul(x - mean, p)
    inside = bind(ew.not_equal_p, out, -math.inf) if allow_singular else None
    return p, w, inside


def _rows(v):
    return reshape(v, shape_of(v) + (1,))


def _mvn_jvp(primals, tangents, *, out, allow_singular):
    x, mean, cov = primals
    x_dot, mean_dot, cov_dot = tangents
    if x_dot is None and mean_dot is None and cov_dot is None:
        return None
    _real_only("multivariate_normal", x, mean, cov)
    p, w, inside = _mvn_parts(x, mean, cov, out, allow_singular)
    total = None
    last = (len(shape_of(w)) - 1,)
    for t, s in ((x_dot, -1.0), (mean_dot, 1.0)):
        if t is not None:
            term = sum(w * t, last, False) * s
            total = term if total is None else total + term
    if cov_dot is not None:
        _no_singular_cov(allow_singular)
        sym = _symmetric_from_lower(cov_dot)
        quad = sum(matmul(w, sym) * w, last, False) - sum(p * sym, (0, 1), False)
        total = quad * 0.5 if total is None else total + quad * 0.5
    total = _broadcast_like(total, out)
    return total if inside is None else where(inside, total, 0.0)


def _mvn_vjp(i):
    def rule(bar, x, mean, cov, *, out, allow_singular):
        if not carries_derivative((x, mean, cov)[i]):
            return None
        _real_only("multivariate_normal", x, mean, cov)
        if i == 2:
            _no_singular_cov(allow_singular)
        p, w, inside = _mvn_parts(x, mean, cov, out, allow_singular)
        if inside is not None:
            bar = where(inside, bar, 0.0)
        weighted = _rows(bar) * w
        if i == 0:
            return ew.negative(weighted)
        points = tuple(range(len(shape_of(w)) - 1))
        if i == 1:
            return sum(weighted, points, False)
        rows = (math.prod(shape_of(w)[:-1]), shape_of(w)[-1])
        g = matmul(transpose(reshape(w, rows), (1, 0)), reshape(weighted, rows))
        return _fold_lower((g - p * sum(bar, tuple(range(len(shape_of(bar)))), False)) * 0.5)

    return rule


def _mvn_emit(x, mean, cov, *, allow_singular):
    *imports, call = _call_text(_MVN, [x, mean, cov], f", allow_singular={allow_singular!r}")
    return [*imports, f"np.reshape({call}, np.shape({x})[:-1])"]


mvn_logpdf_p = Primitive(
    "scipy.stats.multivariate_normal.logpdf",
    impl=lambda x, mean, cov, *, allow_singular: np.reshape(
        _scipy(_MVN)(x, mean, cov, allow_singular=allow_singular), np.shape(x)[:-1]
    ),
    shape=_mvn_shape,
    jvp=_mvn_jvp,
    vjp=per_input(_mvn_vjp),
    batch=_rule_for(loop_batch),
    emit=_mvn_emit,
)


PRIMITIVES = (psd_pinv_p, mvn_logpdf_p)
