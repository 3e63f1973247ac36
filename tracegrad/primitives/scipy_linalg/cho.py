"""Cholesky factors: `cholesky`, `cho_factor` and `cho_solve`, and `cholesky_vjp`, the
fused backward pass of the two factorisations."""

from __future__ import annotations

import functools
import importlib

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_ALL, READS_OUTPUT, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.linalg import factorizations as _fa
from tracegrad.primitives.linalg._common import fit, matmul, mT, mul, stacked_batch, sym, transposed
from tracegrad.primitives.scipy_linalg._common import (
    _batch,
    _check_rhs,
    _check_square,
    _column,
    _dtype,
    _emit,
    _mask,
    _neg,
    _real_only,
    _real_series,
    _sl,
    _uncolumn,
)
from tracegrad.primitives.scipy_linalg.triangular import solve_triangular, trmm
from tracegrad.primitives.shape import concatenate


def cholesky(a, lower=False, check_finite=True):
    """`scipy.linalg.cholesky(a, lower)`: the factor, zeros in its other triangle."""
    return bind(cholesky_p, a, lower=bool(lower), check_finite=bool(check_finite))


def cho_factor(a, lower=False, check_finite=True):
    """`scipy.linalg.cho_factor(a, lower)[0]`: the factor `c`, `a`'s entries in the other
    triangle."""
    return bind(cho_factor_p, a, lower=bool(lower), check_finite=bool(check_finite))


def _factor_shape(name):
    def shape(a: Aval, *, lower, check_finite):
        _check_square(name, a)
        return Aval(a.shape, _dtype(name, a.dtype))

    return shape


def _other(x, lower):
    """The triangle cho_factor leaves as `a` (strictly above the diagonal of a lower factor)."""
    return _mask(x, not lower, -1)


@functools.lru_cache(maxsize=64)
def _half_phi_const(n: int, dtype: np.dtype) -> np.ndarray:
    m = _fa._phi_mask(np.zeros((n, n), dtype)) * 0.5  # Phi's mask with sym's 1/2 folded in
    m.flags.writeable = False
    return m


def _half_phi(x):
    return _half_phi_const(shape_of(x)[-1], np.dtype(dtype_of(x)))


def _factor_jvp(name):
    # dL = L Phi(L^-1 sym(dA) L^-T) (NumPy's cholesky rule, with triangular solves on the
    # factor in place of its inverse); cho_factor's other triangle is `a`'s: its tangent is da's
    def jvp(primals, tangents, *, out, lower, check_finite):
        (a_dot,) = tangents
        _real_only(name, a_dot)
        if a_dot is None:
            return None
        t = 0 if lower else 1  # L^-1 is U^-T for an upper factor U = L^T
        r = solve_triangular(out, sym(a_dot), trans=t, lower=lower, check_finite=False)
        x = mT(solve_triangular(out, mT(r), trans=t, lower=lower, check_finite=False))
        low_dot = matmul(_lower_factor(out, lower), mul(x, _fa._phi_mask(x)))
        c_dot = low_dot if lower else mT(low_dot)
        return c_dot + _other(a_dot, lower) if name == "cho_factor" else c_dot

    return jvp


def _factor_vjp(name):
    # Murray's rule, A_bar = sym(L^-T Phi(L^T L_bar) L^-1), fused into one primitive (below)
    def vjp(bar, a, *, out, lower, check_finite):
        _real_only(name, a, bar)
        if not carries_derivative(a):
            return (None,)
        other = name == "cho_factor"  # c's other triangle holds a's entries as they are
        return (fit(cholesky_vjp(out, bar, lower=lower, other_triangle=other), a),)

    return vjp


def _factor_taylor(name):
    # L L^T = sym(A): L_0 L_k^T + L_k L_0^T = sym(A_k) - sum_{i=1..k-1} L_i L_{k-i}^T, solved
    # by the jvp's formula (the symmetric right side in place of sym(dA)); cho_factor's other
    # triangle is a's, its terms A_k's
    step = _factor_jvp("cholesky")

    def rule(primals, series_in, *, out, lower, check_finite):
        (s,) = series_in
        _real_series(name, series_in)
        terms = [_lower_factor(out, lower)]
        for k in range(1, len(s) + 1):
            known = series.total(
                matmul(terms[i], mT(terms[k - i]))
                for i in range(1, k)
                if terms[i] is not None and terms[k - i] is not None
            )
            r = series.add(None if s[k - 1] is None else sym(s[k - 1]), _negated(known))
            c_k = (
                None if r is None else step(primals, (r,), out=out, lower=lower, check_finite=False)
            )
            terms.append(None if c_k is None else c_k if lower else mT(c_k))
        terms = [None if t is None else t if lower else mT(t) for t in terms[1:]]
        if name == "cho_factor":
            terms = [
                series.add(t, None if a_k is None else _other(a_k, lower))
                for t, a_k in zip(terms, s)
            ]
        return terms

    return rule


def _negated(x):
    return None if x is None else _neg(x)


def _factor_impl(name):
    def impl(a, *, lower, check_finite):
        out = getattr(_sl(), name)(a, lower=lower, check_finite=check_finite)
        return out[0] if name == "cho_factor" else out

    return impl


def _factor_emit(name):
    index = "[0]" if name == "cho_factor" else ""  # cho_factor's (c, lower): c

    def emit(a, *, lower, check_finite):
        *imports, call = _emit(name, (a,), lower=lower, check_finite=check_finite)
        return [*imports, call + index]

    return emit


def _factor(name):
    return Primitive(
        f"scipy.linalg.{name}",
        impl=_factor_impl(name),
        shape=_factor_shape(name),
        jvp=_factor_jvp(name),
        vjp=_factor_vjp(name),
        batch=rule_for(stacked_batch),
        emit=_factor_emit(name),
        vjp_reads=READS_OUTPUT,
        taylor=_factor_taylor(name),
    )


cholesky_p = _factor("cholesky")
cho_factor_p = _factor("cho_factor")

# -- cho_solve ----------------------------------------------------------------------------------


def cho_solve(c, b, lower=False, check_finite=True):
    """`scipy.linalg.cho_solve((c, lower), b)`: `x` with `(L L^T) x = b`."""
    return bind(cho_solve_p, c, b, lower=bool(lower), check_finite=bool(check_finite))


def _cho_solve_shape(c: Aval, b: Aval, *, lower, check_finite):
    _check_square("cho_solve", c)
    _check_rhs("cho_solve", c, b)
    return Aval(b.shape, _dtype("cho_solve", c.dtype, b.dtype))


def _lower_factor(c, lower):
    """L of `A = L L^T` from cho_factor's `c` (U^T for an upper factor)."""
    return _mask(c, True) if lower else mT(_mask(c, False))


def _cho_solve_jvp(primals, tangents, *, out, lower, check_finite):
    (c, b), (c_dot, b_dot) = primals, tangents
    _real_only("cho_solve", c_dot, b_dot)
    vector = len(shape_of(b)) == 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if c_dot is not None:  # A dx = db - dA x, dA = dL L^T + L dL^T
        low, low_dot, x = _lower_factor(c, lower), _lower_factor(c_dot, lower), _column(out, vector)
        da_x = matmul(low_dot, matmul(mT(low), x)) + matmul(low, matmul(mT(low_dot), x))
        rhs = _neg(da_x) if rhs is None else rhs - da_x
    if rhs is None:
        return None
    return _uncolumn(cho_solve(c, rhs, lower=lower, check_finite=False), vector)


def _cho_solve_vjp(bar, c, b, *, out, lower, check_finite):
    _real_only("cho_solve", c, bar)
    vector = len(shape_of(b)) == 1
    g = cho_solve(c, _column(bar, vector), lower=lower, check_finite=False)  # A is symmetric
    c_bar = None
    if carries_derivative(c):
        x = _column(out, vector)
        # L_bar = -(g y^T + x z^T), y = L^T x, z = L^T g: one product [g, x] [-y, -z]^T
        axis = len(shape_of(x)) - 1
        left, swapped = concatenate([g, x], axis), concatenate([x, g], axis)
        # L^T [x, g] = [y, z] with a product on c's factor triangle (no mask of c)
        low_t = trmm(c, swapped, lower, 1 if lower else 0)
        low_bar = _mask(matmul(left, mT(_neg(low_t))), True)
        c_bar = fit(low_bar if lower else mT(low_bar), c)
    b_bar = fit(_uncolumn(g, vector), b) if carries_derivative(b) else None
    return c_bar, b_bar


def _cho_solve_taylor(primals, series_in, *, out, lower, check_finite):
    # A(t) = L(t) L(t)^T from the factor's series: A_0 x_k = b_k - sum_{i=1..k} A_i x_{k-i},
    # A_i = sum_{p+q=i} L_p L_q^T
    (c, b), (sc, sb) = primals, series_in
    _real_series("cho_solve", series_in)
    vector = len(shape_of(b)) == 1
    k = series.order_of(series_in)
    lows = [_lower_factor(c, lower)]
    lows += [None if t is None else _lower_factor(t, lower) for t in sc or [None] * k]

    def apply(i, x):
        return series.total(
            matmul(lows[p], matmul(mT(lows[i - p]), x))
            for p in range(i + 1)
            if lows[p] is not None and lows[i - p] is not None
        )

    rhs = [None if t is None else _column(t, vector) for t in sb or [None] * k]
    terms = series.solve_terms(
        lambda r: cho_solve(c, r, lower=lower, check_finite=False), apply, rhs, _column(out, vector)
    )
    return [None if t is None else _uncolumn(t, vector) for t in terms]


cho_solve_p = Primitive(
    "scipy.linalg.cho_solve",
    impl=lambda c, b, *, lower, check_finite: _sl().cho_solve(
        (c, lower), b, check_finite=check_finite
    ),
    shape=_cho_solve_shape,
    jvp=_cho_solve_jvp,
    vjp=_cho_solve_vjp,
    batch=rule_for(lambda p: _batch(p, 1)),
    emit=lambda c, b, *, lower, check_finite: [
        "import scipy.linalg as _scipy_linalg",
        f"_scipy_linalg.cho_solve(({c}, {lower!r}), {b}, check_finite={check_finite!r})",
    ],
    vjp_reads=READS_ALL,
    taylor=_cho_solve_taylor,
)

# -- the backward pass of cholesky and cho_factor, one primitive ---------------------------------
#
# Murray's matrix rule, sym(L^-T Phi(L^T L_bar) L^-1), costs a triangular product and two n x n
# triangular solves (3n^3 flops), more than the K^-1 a closed form computes with the same factor
# (2n^3), and as separate primitives each step allocates, masks and copies into Fortran order.
# One primitive runs Murray's blocked algorithm instead (2n^3/3 flops in BLAS-3 panel products,
# one buffer updated in place). Its jvp is the matrix rule differentiated, written with the
# triangular primitives (so second derivatives need no blocked code); its vjp is that jvp
# transposed (`transposed`), so the two modes cannot disagree.


def cholesky_vjp(c, bar, *, lower, other_triangle):
    """The cotangent of `a` from `bar`, that of `c = cholesky(a, lower)` (or cho_factor's `c`
    if `other_triangle`: then `bar`'s entries off the factor triangle are passed through)."""
    return bind(cholesky_vjp_p, c, bar, lower=bool(lower), other_triangle=bool(other_triangle))


def cholesky_vjp_impl(c, bar, *, lower, other_triangle):
    """Murray's blocked algorithm on one matrix or each matrix of a stack."""
    c, bar = np.asarray(c), np.asarray(bar)
    dtype = np.result_type(c.dtype, bar.dtype)
    if c.ndim == 2:
        return _vjp_one(c, bar, lower, other_triangle, dtype)
    out = np.empty(bar.shape, dtype)
    for i in np.ndindex(c.shape[:-2]):
        out[i] = _vjp_one(c[i], bar[i], lower, other_triangle, dtype)
    return out


#: the block size of the blocked backward pass: the panels' products are BLAS-3 calls this wide,
#: the diagonal blocks' rule costs O(_BLOCK^3) each (measured at n = 500 and 1000 on one thread:
#: 64 to 192 within 10% of each other, 256 and up slower)
_BLOCK = 128


def _vjp_one(c, bar, lower: bool, other: bool, dtype: np.dtype) -> np.ndarray:
    """Murray's blocked algorithm ("Differentiation of the Cholesky decomposition", 2016):
    LAPACK's blocked potrf run backwards over the factor's block columns, last first. It costs
    2n^3/3 flops in panel products, where the matrix formula (a trmm and two n x n triangular
    solves) costs 3n^3; the diagonal blocks take the formula. In the lower-triangle convention
    (`u`, the cotangent of the lower triangle of `a`, which potrf reads) throughout; the result
    is its symmetric part, the derivative of the factor of `(a + a^T) / 2`."""
    blas = importlib.import_module("scipy.linalg.blas")
    trmm_, trsm = blas.get_blas_funcs(("trmm", "trsm"), dtype=dtype)
    low = c if lower else c.T  # L in its lower triangle (the other holds a's entries)
    low_bar = bar if lower else bar.T
    n = c.shape[-1]
    blocks = [(max(0, k - _BLOCK), k) for k in range(n, 0, -_BLOCK)]
    u = np.zeros((n, n), dtype, order="F")  # the cotangent of L's entries, its lower triangle
    for j, k in blocks:
        u[k:, j:k] = low_bar[k:, j:k]
        u[j:k, j:k] = np.tril(low_bar[j:k, j:k])
    for j, k in blocks:
        t = np.array(low[j:k, j:k], dtype, order="F")  # the diagonal block T
        if k < n:
            below = u[k:, j:k]  # the panel under T: its cotangent becomes (.) T^-1
            below[...] = trsm(1.0, t, below, side=1, lower=1)
            u[j:k, j:k] -= np.tril(below.T @ low[k:, j:k])
            if j:
                u[k:, :j] -= below @ low[j:k, :j]
                u[j:k, :j] -= below.T @ low[k:, :j]
        s = _formula(trmm_, trsm, t, u[j:k, j:k])  # symmetric; its lower-triangle convention:
        u[j:k, j:k] = np.tril(s) + np.tril(s, -1)  # the off-diagonal entries counted twice
        if j:
            d = u[j:k, j:k]
            u[j:k, :j] -= (d + d.T) @ low[j:k, :j]
    u *= 0.5
    out = u + u.T  # the symmetric part: u's diagonal, half of each other entry on either side
    if other:  # bar's entries off the factor triangle, a block column at a time (no n x n mask)
        for j, k in blocks:
            if lower:
                out[:j, j:k] += bar[:j, j:k]
                out[j:k, j:k] += np.triu(bar[j:k, j:k], 1)
            else:
                out[k:, j:k] += bar[k:, j:k]
                out[j:k, j:k] += np.tril(bar[j:k, j:k], -1)
    return out


def _formula(trmm_, trsm, t, t_bar):
    """Murray's matrix formula, sym(T^-T Phi(T^T T_bar) T^-1), for a lower-triangular `t`
    (Fortran order) and the lower triangle of `t_bar`: one Fortran-ordered buffer that trmm
    and two trsm (one from each side, so no transposes) overwrite in place."""
    m = t.shape[-1]
    half_phi = np.asfortranarray(_half_phi_const(m, t.dtype))
    p = np.array(np.tril(t_bar), t.dtype, order="F")
    p = trmm_(1.0, t, p, lower=1, trans_a=1, overwrite_b=1)  # T^T T_bar
    np.multiply(p, half_phi, out=p)  # Phi, and sym's 1/2
    p = trsm(1.0, t, p, lower=1, trans_a=1, overwrite_b=1)  # T^-T P
    p = trsm(1.0, t, p, side=1, lower=1, overwrite_b=1)  # (.) T^-1
    return p + p.T


def _cholesky_vjp_shape(c: Aval, bar: Aval, *, lower, other_triangle):
    _check_square("cholesky_vjp", c)
    if bar.shape != c.shape:
        raise ValueError(f"cholesky_vjp: the factor {c.shape} and its cotangent {bar.shape} differ")
    return Aval(bar.shape, np.result_type(c.dtype, bar.dtype))


def _cholesky_vjp_jvp(primals, tangents, *, out, lower, other_triangle):
    # the rule A_bar = Q + Q^T, Q = L^-T P L^-1, P = Phi(L^T L_bar) / 2, differentiated:
    # dP = Phi(dL^T L_bar + L^T dL_bar) / 2, dR = L^-T (dP - dL^T R), dQ = (dR - Q dL) L^-1
    (c, bar), (c_dot, bar_dot) = primals, tangents
    _real_only("cholesky_vjp", c_dot, bar_dot)
    if c_dot is None and bar_dot is None:
        return None
    low = _lower_factor(c, lower)
    lb = _mask(bar if lower else mT(bar), True)
    half_phi = _half_phi(lb)

    def left(x):  # L^-T x
        return solve_triangular(low, x, trans=1, lower=True, check_finite=False)

    def right(x):  # x L^-1
        return mT(left(mT(x)))

    r = left(mul(matmul(mT(low), lb), half_phi))
    terms_p, terms_r = [], []
    if bar_dot is not None:
        terms_p.append(matmul(mT(low), _mask(bar_dot if lower else mT(bar_dot), True)))
    if c_dot is not None:
        low_dot = _lower_factor(c_dot, lower)
        terms_p.append(matmul(mT(low_dot), lb))
        terms_r.append(matmul(mT(low_dot), r))
    dp = mul(terms_p[0] if len(terms_p) == 1 else terms_p[0] + terms_p[1], half_phi)
    dr = left(dp - terms_r[0] if terms_r else dp)
    dq = right(dr - matmul(right(r), low_dot) if c_dot is not None else dr)
    a_dot = dq + mT(dq)
    if other_triangle and bar_dot is not None:
        a_dot = a_dot + _other(bar_dot, lower)
    return a_dot


def _cholesky_vjp_formula(c, bar, *, lower, other_triangle):
    """Murray's matrix rule written with the triangular primitives (what the blocked impl
    computes): its Taylor pass is the primitive's series (jet of a gradient through a factor)."""
    low = _lower_factor(c, lower)
    lb = _mask(bar if lower else mT(bar), True)

    def left(x):  # L^-T x
        return solve_triangular(low, x, trans=1, lower=True, check_finite=False)

    q = mT(left(mT(left(mul(matmul(mT(low), lb), _half_phi(lb))))))  # L^-T P L^-1
    a_bar = q + mT(q)
    return a_bar + _other(bar, lower) if other_triangle else a_bar


cholesky_vjp_p = Primitive(
    "scipy.linalg.cholesky_vjp",
    impl=cholesky_vjp_impl,
    shape=_cholesky_vjp_shape,
    jvp=_cholesky_vjp_jvp,
    vjp=transposed(_cholesky_vjp_jvp, "scipy.linalg.cholesky_vjp", multiple_results=False),
    batch=rule_for(lambda p: _batch(p, 1)),
    emit=lambda c, bar, *, lower, other_triangle: [
        "import tracegrad.primitives.scipy_linalg as _tracegrad_scipy_linalg",
        f"_tracegrad_scipy_linalg.cholesky_vjp_impl({c}, {bar}, lower={lower!r}, "
        f"other_triangle={other_triangle!r})",
    ],
    vjp_reads=READS_ALL,
    taylor=series.composite(_cholesky_vjp_formula),
)
