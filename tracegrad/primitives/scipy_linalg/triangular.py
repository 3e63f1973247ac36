"""`solve_triangular` and `trmm` (BLAS's triangular product, the Cholesky rules' primitive): a
triangular solve's vjp is one more solve with the transposed flag."""

from __future__ import annotations

import importlib

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_ALL, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.linalg._common import fit, matmul, mT
from tracegrad.primitives.scipy_linalg._common import (
    _batch,
    _check_rhs,
    _check_square,
    _column,
    _dtype,
    _emit,
    _flip,
    _mask,
    _neg,
    _real_only,
    _real_series,
    _sl,
    _tri,
    _uncolumn,
)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, check_finite=True):
    """`scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal)` (`trans` 0, 1, 2)."""
    params = dict(trans=int(trans), lower=bool(lower), unit_diagonal=bool(unit_diagonal))
    return bind(solve_triangular_p, a, b, **params, check_finite=bool(check_finite))


def _solve_triangular_shape(a: Aval, b: Aval, *, trans, lower, unit_diagonal, check_finite):
    if trans not in (0, 1, 2):
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans}")
    _check_square("solve_triangular", a)
    _check_rhs("solve_triangular", a, b)
    return Aval(b.shape, _dtype("solve_triangular", a.dtype, b.dtype))


def _op(m, trans: int):
    return m if trans == 0 else mT(m)


def _solve_triangular_jvp(primals, tangents, *, out, trans, lower, unit_diagonal, check_finite):
    (a, b), (a_dot, b_dot) = primals, tangents
    _real_only("solve_triangular", a_dot, b_dot)
    vector = len(shape_of(b)) == 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if a_dot is not None:  # d(op(T) x) = db: op(T) dx = db - op(dT) x
        da_x = matmul(_op(_tri(a_dot, lower, unit_diagonal), trans), _column(out, vector))
        rhs = _neg(da_x) if rhs is None else rhs - da_x
    if rhs is None:
        return None
    params = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
    return _uncolumn(solve_triangular(a, rhs, **params), vector)


def _solve_triangular_vjp(bar, a, b, *, out, trans, lower, unit_diagonal, check_finite):
    _real_only("solve_triangular", a, bar)
    vector = len(shape_of(b)) == 1
    params = dict(lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
    # b_bar = op(T)^-T x_bar: the same triangle, the other flag
    g = solve_triangular(a, _column(bar, vector), trans=_flip(trans), **params)
    a_bar = None
    if carries_derivative(a):
        x = _column(out, vector)
        outer = matmul(g, mT(x)) if trans == 0 else matmul(x, mT(g))
        a_bar = fit(_neg(_tri(outer, lower, unit_diagonal)), a)
    b_bar = fit(_uncolumn(g, vector), b) if carries_derivative(b) else None
    return a_bar, b_bar


def _solve_triangular_taylor(primals, series_in, *, out, trans, lower, unit_diagonal, check_finite):
    # op(T_0) x_k = b_k - sum_{i=1..k} op(T_i) x_{k-i}: one triangular solve per order
    (a, b), (sa, sb) = primals, series_in
    _real_series("solve_triangular", series_in)
    vector = len(shape_of(b)) == 1
    params = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)

    def apply(i, x):
        t = None if sa is None else sa[i - 1]
        return None if t is None else matmul(_op(_tri(t, lower, unit_diagonal), trans), x)

    rhs = [None if t is None else _column(t, vector) for t in sb or [None] * len(sa)]
    terms = series.solve_terms(
        lambda r: solve_triangular(a, r, **params), apply, rhs, _column(out, vector)
    )
    return [None if t is None else _uncolumn(t, vector) for t in terms]


def _solve_triangular_emit(a, b, *, trans, lower, unit_diagonal, check_finite):
    params = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    return _emit("solve_triangular", (a, b), **params, check_finite=check_finite)


solve_triangular_p = Primitive(
    "scipy.linalg.solve_triangular",
    impl=lambda a, b, **params: _sl().solve_triangular(a, b, **params),
    shape=_solve_triangular_shape,
    jvp=_solve_triangular_jvp,
    vjp=_solve_triangular_vjp,
    batch=rule_for(lambda p: _batch(p, 1)),
    emit=_solve_triangular_emit,
    vjp_reads=READS_ALL,
    taylor=_solve_triangular_taylor,
)

# -- trmm: a product with one triangle, for the rules ----------------------------------------


def trmm(a, b, lower=False, trans=0):
    """`op(T) @ b` with `T` the `lower` (else upper) triangle of `a` and `op` the transpose if
    `trans`: BLAS's trmm, half the work of a full product. Used by the Cholesky rules."""
    return bind(trmm_p, a, b, lower=bool(lower), trans=int(trans))


def trmm_impl(a, b, *, lower, trans):
    """BLAS's trmm (through SciPy) on one matrix or each matrix of a stack."""
    blas = importlib.import_module("scipy.linalg.blas")
    a, b = np.asarray(a), np.asarray(b)
    fn = blas.get_blas_funcs("trmm", (a, b))
    out = np.empty(b.shape, fn.dtype)
    for i in np.ndindex(a.shape[:-2]):
        out[i] = fn(1.0, a[i], b[i], lower=int(lower), trans_a=int(trans))
    return out


def _trmm_shape(a: Aval, b: Aval, *, lower, trans):
    _check_square("trmm", a)
    if b.ndim != a.ndim or b.shape[:-1] != a.shape[:-1] or a.dtype.kind not in "fc":
        raise ValueError(f"trmm: a {a} and b {b} do not match")
    return Aval(b.shape, np.result_type(a.dtype, b.dtype))


def _trmm_jvp(primals, tangents, *, out, lower, trans):
    (a, b), (a_dot, b_dot) = primals, tangents
    terms = [trmm(a_dot, b, lower, trans) if a_dot is not None else None]
    terms.append(trmm(a, b_dot, lower, trans) if b_dot is not None else None)
    terms = [t for t in terms if t is not None]
    return None if not terms else terms[0] if len(terms) == 1 else terms[0] + terms[1]


def _trmm_vjp(bar, a, b, *, out, lower, trans):
    a_bar = b_bar = None
    if carries_derivative(a):
        outer = matmul(bar, mT(b)) if trans == 0 else matmul(b, mT(bar))
        a_bar = fit(_mask(outer, lower), a)
    if carries_derivative(b):
        b_bar = fit(trmm(a, bar, lower, 1 - trans), b)
    return a_bar, b_bar


trmm_p = Primitive(
    "scipy.linalg.blas.trmm",
    impl=trmm_impl,
    shape=_trmm_shape,
    jvp=_trmm_jvp,
    vjp=_trmm_vjp,
    batch=rule_for(lambda p: _batch(p, 1)),
    emit=lambda a, b, *, lower, trans: [
        "import tracegrad.primitives.scipy_linalg as _tracegrad_scipy_linalg",
        f"_tracegrad_scipy_linalg.trmm_impl({a}, {b}, lower={lower!r}, trans={trans!r})",
    ],
    vjp_reads=READS_ALL,
    bilinear=True,
    taylor=series.MULTILINEAR,
)
