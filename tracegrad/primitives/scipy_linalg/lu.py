"""LU factors: `lu_factor` and `lu_solve`; the rules use the factor's two triangles."""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_ALL, READS_OUTPUT, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.linalg._common import fit, matmul, mT, stacked_batch
from tracegrad.primitives.scipy_linalg._common import (
    _batch,
    _check_rhs,
    _check_square,
    _column,
    _dtype,
    _flip,
    _mask,
    _neg,
    _real_only,
    _real_series,
    _sl,
    _uncolumn,
)
from tracegrad.primitives.scipy_linalg.triangular import solve_triangular


def lu_factor(a, check_finite=True):
    """`scipy.linalg.lu_factor(a)`: `(lu, piv)`."""
    return tuple(bind(lu_factor_p, a, check_finite=bool(check_finite)))


def _lu_factor_shape(a: Aval, *, check_finite):
    _check_square("lu_factor", a)
    return Aval(a.shape, _dtype("lu_factor", a.dtype)), Aval(a.shape[:-1], np.int32)


def _parts(lu):
    """L (unit lower) and U (upper) of a packed LU factor."""
    n = shape_of(lu)[-1]
    return _mask(lu, True, -1) + np.eye(n, dtype=dtype_of(lu)), _mask(lu, False)


def _lu_factor_jvp(primals, tangents, *, out, check_finite):
    (a_dot,) = tangents
    _real_only("lu_factor", a_dot)
    if a_dot is None:
        return None, None
    lu, piv = out
    low, up = _parts(lu)
    # X = L^-1 P^T dA U^-1 = U (A^-1 dA) U^-1: the factor's own solves, no permutation needed
    y = matmul(up, lu_solve(lu, piv, a_dot, check_finite=False))
    x = mT(solve_triangular(lu, mT(y), trans=1, check_finite=False))
    lu_dot = matmul(low, _mask(x, True, -1)) + matmul(_mask(x, False), up)
    return lu_dot, None


def _lu_factor_vjp(bar, a, *, out, check_finite):
    lu_bar, _ = bar
    _real_only("lu_factor", a, lu_bar)
    if lu_bar is None or not carries_derivative(a):
        return (None,)
    lu, piv = out
    low, up = _parts(lu)
    x_bar = _mask(matmul(mT(low), _mask(lu_bar, True, -1)), True, -1) + _mask(
        matmul(_mask(lu_bar, False), mT(up)), False
    )
    w = mT(solve_triangular(lu, mT(x_bar), check_finite=False))  # X_bar U^-T
    return (fit(lu_solve(lu, piv, matmul(mT(up), w), trans=1, check_finite=False), a),)


def _lu_factor_taylor(primals, series_in, *, out, check_finite):
    # P^T A = L U with P fixed: L_0 U_k + L_k U_0 = P^T A_k - S_k, S_k = sum_{p=1..k-1} L_p
    # U_{k-p}; X = L_0^-1 (P^T A_k - S_k) U_0^-1 (P^T A_k's part as the jvp forms it, with
    # the factor's solves), then L_k = L_0 (X's strict lower part), U_k = (X's upper part) U_0
    (s,) = series_in
    _real_series("lu_factor", series_in)
    lu, piv = out
    low, up = _parts(lu)
    lows, ups, terms = [low], [up], []
    for k in range(1, len(s) + 1):
        known = series.total(
            matmul(lows[p], ups[k - p])
            for p in range(1, k)
            if lows[p] is not None and ups[k - p] is not None
        )
        y = (
            None
            if s[k - 1] is None
            else matmul(up, lu_solve(lu, piv, s[k - 1], check_finite=False))
        )
        y = series.add(y, None if known is None else _neg(_tsolve(lu, known, 0, True)))
        if y is None:
            lows.append(None)
            ups.append(None)
            terms.append(None)
            continue
        x = mT(solve_triangular(lu, mT(y), trans=1, check_finite=False))
        lows.append(matmul(low, _mask(x, True, -1)))
        ups.append(matmul(_mask(x, False), up))
        terms.append(lows[-1] + ups[-1])
    return terms, None


def _lu_factor_impl(a, *, check_finite):
    lu, piv = _sl().lu_factor(a, check_finite=check_finite)
    return lu, piv


lu_factor_p = Primitive(
    "scipy.linalg.lu_factor",
    impl=_lu_factor_impl,
    shape=_lu_factor_shape,
    jvp=_lu_factor_jvp,
    vjp=_lu_factor_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a, *, check_finite: [
        "import scipy.linalg as _scipy_linalg",
        f"tuple(_scipy_linalg.lu_factor({a}, check_finite={check_finite!r}))",
    ],
    multiple_results=True,
    vjp_reads=READS_OUTPUT,
    taylor=_lu_factor_taylor,
)

# -- lu_solve -----------------------------------------------------------------------------------


def lu_solve(lu, piv, b, trans=0, check_finite=True):
    """`scipy.linalg.lu_solve((lu, piv), b, trans)`."""
    return bind(lu_solve_p, lu, piv, b, trans=int(trans), check_finite=bool(check_finite))


def _lu_solve_shape(lu: Aval, piv: Aval, b: Aval, *, trans, check_finite):
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans}")
    _check_square("lu_solve", lu)
    _check_rhs("lu_solve", lu, b)
    if piv.shape != lu.shape[:-1] or piv.dtype.kind not in "iu":
        raise ValueError(f"lu_solve: piv must be integers of shape {lu.shape[:-1]}, got {piv}")
    return Aval(b.shape, _dtype("lu_solve", lu.dtype, b.dtype))


def _tsolve(lu, x, trans, lower):
    """A solve with one triangle of a packed LU factor (L has a unit diagonal)."""
    return solve_triangular(
        lu, x, trans=trans, lower=lower, unit_diagonal=lower, check_finite=False
    )


def _lu_solve_jvp(primals, tangents, *, out, trans, check_finite):
    (lu, piv, b), (lu_dot, _, b_dot) = primals, tangents
    _real_only("lu_solve", lu_dot, b_dot)
    vector = len(shape_of(b)) == 1
    t = 0 if trans == 0 else 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if lu_dot is not None:
        low_dot, up_dot = _mask(lu_dot, True, -1), _mask(lu_dot, False)
        up = _mask(lu, False)
        if t == 0:  # dx = -U^-1 (L^-1 dL U x + dU x), with the lu_solve of db added below
            x = _column(out, vector)
            inner = _tsolve(lu, matmul(low_dot, matmul(up, x)), 0, True) + matmul(up_dot, x)
            dx = _neg(_tsolve(lu, inner, 0, False))
            if rhs is None:
                return _uncolumn(dx, vector)
            return _uncolumn(dx + lu_solve(lu, piv, rhs, trans=0, check_finite=False), vector)
        # A^T dx = db - dA^T x, dA^T x = dU^T s + U^T dL^T v with s = U^-T b, v = L^-T s
        s = _tsolve(lu, _column(b, vector), 1, False)
        v = _tsolve(lu, s, 1, True)
        da_x = matmul(mT(up_dot), s) + matmul(mT(up), matmul(mT(low_dot), v))
        rhs = _neg(da_x) if rhs is None else rhs - da_x
    if rhs is None:
        return None
    return _uncolumn(lu_solve(lu, piv, rhs, trans=t, check_finite=False), vector)


def _lu_solve_vjp(bar, lu, piv, b, *, out, trans, check_finite):
    _real_only("lu_solve", lu, bar)
    vector = len(shape_of(b)) == 1
    t = 0 if trans == 0 else 1
    x_bar = _column(bar, vector)
    g = lu_solve(lu, piv, x_bar, trans=_flip(t), check_finite=False)  # the same factor
    lu_bar = None
    if carries_derivative(lu):
        up = _mask(lu, False)
        if t == 0:
            x = _column(out, vector)
            h = _tsolve(lu, x_bar, 1, False)
            k = _tsolve(lu, h, 1, True)
            low_bar, up_bar = matmul(k, mT(matmul(up, x))), matmul(h, mT(x))
        else:
            s = _tsolve(lu, _column(b, vector), 1, False)
            v = _tsolve(lu, s, 1, True)
            low_bar, up_bar = matmul(v, mT(matmul(up, g))), matmul(s, mT(g))
        lu_bar = fit(_neg(_mask(low_bar, True, -1) + _mask(up_bar, False)), lu)
    b_bar = fit(_uncolumn(g, vector), b) if carries_derivative(b) else None
    return lu_bar, None, b_bar


def _lu_solve_taylor(primals, series_in, *, out, trans, check_finite):
    # A(t) = P L(t) U(t), P fixed. trans 0: L U x = P^T b, so x_k = A_0^-1 b_k - U_0^-1 L_0^-1
    # sum_{i=1..k} M_i x_{k-i}, M_i = sum_{p+q=i} L_p U_q. trans 1: U^T L^T z = b with
    # x = P z: z_k = L_0^-T U_0^-T r_k, x_k = A_0^-T r_k, r_k = b_k - sum_i M_i^T z_{k-i}
    (lu, piv, b), (slu, _, sb) = primals, series_in
    _real_series("lu_solve", series_in)
    vector, t = len(shape_of(b)) == 1, 0 if trans == 0 else 1
    k = series.order_of(series_in)
    bs = [None if v is None else _column(v, vector) for v in sb or [None] * k]
    low, up = _parts(lu)
    lows, ups = [low], [up]
    for v in slu or [None] * k:
        lows.append(None if v is None else _mask(v, True, -1))
        ups.append(None if v is None else _mask(v, False))

    def moved(i, x):  # M_i x, or M_i^T x
        pairs = [(lows[p], ups[i - p]) for p in range(i + 1)]
        pairs = [(lo, u) for lo, u in pairs if lo is not None and u is not None]
        if t == 0:
            return series.total(matmul(lo, matmul(u, x)) for lo, u in pairs)
        return series.total(matmul(mT(u), matmul(mT(lo), x)) for lo, u in pairs)

    def solve0(r):
        return lu_solve(lu, piv, r, trans=t, check_finite=False)

    if t == 0:
        xs = [_column(out, vector)]
        for order in range(1, k + 1):
            known = series.total(
                moved(i, xs[order - i]) for i in range(1, order + 1) if xs[order - i] is not None
            )
            back = None if known is None else _tsolve(lu, _tsolve(lu, known, 0, True), 0, False)
            rhs = None if bs[order - 1] is None else solve0(bs[order - 1])
            xs.append(series.add(rhs, None if back is None else _neg(back)))
        terms = xs[1:]
    else:
        zs, terms = [_tsolve(lu, _tsolve(lu, _column(b, vector), 1, False), 1, True)], []
        for order in range(1, k + 1):
            known = series.total(
                moved(i, zs[order - i]) for i in range(1, order + 1) if zs[order - i] is not None
            )
            r = series.add(bs[order - 1], None if known is None else _neg(known))
            zs.append(None if r is None else _tsolve(lu, _tsolve(lu, r, 1, False), 1, True))
            terms.append(None if r is None else solve0(r))
    return [None if v is None else _uncolumn(v, vector) for v in terms]


lu_solve_p = Primitive(
    "scipy.linalg.lu_solve",
    impl=lambda lu, piv, b, *, trans, check_finite: _sl().lu_solve(
        (lu, piv), b, trans=trans, check_finite=check_finite
    ),
    shape=_lu_solve_shape,
    jvp=_lu_solve_jvp,
    vjp=_lu_solve_vjp,
    batch=rule_for(lambda p: _batch(p, 2)),
    emit=lambda lu, piv, b, *, trans, check_finite: [
        "import scipy.linalg as _scipy_linalg",
        f"_scipy_linalg.lu_solve(({lu}, {piv}), {b}, trans={trans!r}, "
        f"check_finite={check_finite!r})",
    ],
    vjp_reads=READS_ALL,
    taylor=_lu_solve_taylor,
)
