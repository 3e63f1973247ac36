"""`inv`, `solve`, `det`, `slogdet` and the adjugate behind det's derivative.

Forward values are NumPy's own calls (LU factorisations in LAPACK). The derivatives are the
textbook ones, written so that the backward pass reuses what it can and forms no inverse it
does not need: the vjp of `solve` is one more `solve` with the transposed matrix; `slogdet`'s
vjp needs the inverse itself (its cotangent is `A^-T`) and forms it once; `inv`'s rules read
only its output.

`det` differentiates through the adjugate, `d det(A) = tr(adj(A) dA)`, which is finite for a
singular matrix too (HIPS autograd divides by the determinant and fails there). The adjugate
is computed from an SVD, `adj(A) = det(V^H) V diag(prod_{j != i} s_j) det(U) U^H`, which needs
no division; its own derivative (det's second derivative) is the invertible-matrix formula
`(tr(adj dA) adj - adj dA adj) / det`, so a Hessian of det at a singular matrix is not finite.
"""

from __future__ import annotations

import numpy as np
from numpy.linalg import _umath_linalg  # NumPy's gufuncs: cond's inverse, as NumPy calls it

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_INPUTS, READS_OUTPUT, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series
from tracegrad.primitives.broadcasting import broadcast_shapes, sum
from tracegrad.primitives.einsum import einsum
from tracegrad.primitives.linalg._common import (
    LinAlgError,
    check_square,
    fit,
    is_complex,
    matmul,
    mT,
    mul,
    real_dtype,
    real_part,
    result_dtype,
    stacked_batch,
    trace,
)
from tracegrad.primitives.views import expand_dims, move_to_front, squeeze

# -- inv ----------------------------------------------------------------------------------------


def inv(a):
    """`np.linalg.inv(a)`."""
    return bind(inv_p, a)


def _inv_shape(a: Aval):
    check_square("inv", a)
    return Aval(a.shape, result_dtype("inv", a))


def _inv_jvp(primals, tangents, *, out):
    (a_dot,) = tangents
    return None if a_dot is None else -matmul(matmul(out, a_dot), out)


def _inv_vjp(bar, a, *, out):
    if not carries_derivative(a):
        return (None,)
    t = mT(out)
    return (fit(-matmul(matmul(t, bar), t), a),)


def _inv_terms(a_terms, y0) -> list:
    """Y_1..Y_K of Y(t) = A(t)^-1 from A's terms: A Y = I gives Y_k = -Y_0 sum_{i=1..k} A_i
    Y_{k-i} (products with the primal inverse, no new factorisation)."""
    return series.solve_terms(
        lambda r: matmul(y0, r),
        lambda i, y: None if a_terms[i - 1] is None else matmul(a_terms[i - 1], y),
        [None] * len(a_terms),
        y0,
    )


def _inv_taylor(primals, series_in, *, out):
    (s,) = series_in
    return None if s is None else _inv_terms(s, out)


inv_p = Primitive(
    "linalg.inv",
    impl=np.linalg.inv,
    shape=_inv_shape,
    jvp=_inv_jvp,
    vjp=_inv_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a: f"np.linalg.inv({a})",
    vjp_reads=READS_OUTPUT,
    torch_name="LinalgInvExBackward0",
    taylor=_inv_taylor,
)


def inv_or_nan(a):
    """The inverse as `np.linalg.cond` computes it: in double precision (complex128 for complex
    input), NaN instead of an error for a singular matrix, so cond of one is inf."""
    return bind(inv_or_nan_p, a)


def inv_or_nan_impl(a):
    a = np.asarray(a)
    with np.errstate(all="ignore"):
        return _umath_linalg.inv(a, signature="D->D" if a.dtype.kind == "c" else "d->d")


def _inv_or_nan_shape(a: Aval):
    check_square("cond", a)
    result_dtype("cond", a)
    return Aval(a.shape, np.dtype(np.complex128 if a.dtype.kind == "c" else np.float64))


inv_or_nan_p = Primitive(
    "linalg.inv_or_nan",
    impl=inv_or_nan_impl,
    shape=_inv_or_nan_shape,
    jvp=_inv_jvp,
    vjp=_inv_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a: [
        "import tracegrad.primitives.linalg.inverses as _tg_inverses",
        f"_tg_inverses.inv_or_nan_impl({a})",
    ],
    vjp_reads=READS_OUTPUT,
    taylor=_inv_taylor,
)

# -- solve --------------------------------------------------------------------------------------
# NumPy 2: `b` is one right-hand side when it is 1-D (shape (M,), result (..., M)); otherwise
# a stack of (M, K) matrices, its stack axes broadcasting against a's. The rules treat a 1-D
# `b` as one column.


def solve(a, b):
    """`np.linalg.solve(a, b)`."""
    return bind(solve_p, a, b)


def _solve_shape(a: Aval, b: Aval):
    check_square("solve", a)
    m = a.shape[-1]
    dtype = result_dtype("solve", a, b)
    if b.ndim == 1:
        if b.shape[0] != m:
            raise ValueError(
                f"solve: b of shape {b.shape} does not match a of shape {a.shape}: a 1-D b "
                f"needs {m} elements (one per row of a)"
            )
        return Aval(a.shape[:-1], dtype)
    if b.ndim == 0 or b.shape[-2] != m:
        raise ValueError(
            f"solve: b of shape {b.shape} does not match a of shape {a.shape}: b must be 1-D "
            f"of length {m} or a stack of ({m}, K) matrices"
        )
    stack = broadcast_shapes("solve", a.shape[:-2], b.shape[:-2])
    return Aval(stack + b.shape[-2:], dtype)


def _column(x, vector: bool):
    return expand_dims(x, (len(shape_of(x)),)) if vector else x


def _uncolumn(x, vector: bool):
    return squeeze(x, (len(shape_of(x)) - 1,)) if vector else x


def _solve_jvp(primals, tangents, *, out):
    a, b = primals
    a_dot, b_dot = tangents
    vector = len(shape_of(b)) == 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if a_dot is not None:
        da_x = matmul(a_dot, _column(out, vector))
        rhs = -da_x if rhs is None else rhs - da_x
    if rhs is None:
        return None
    # a 1-D b's column broadcast against a's stack axes: solve it as a stack of columns
    return _uncolumn(solve(a, rhs), vector)


def _solve_vjp(bar, a, b, *, out):
    vector = len(shape_of(b)) == 1
    # the transpose of x = A^-1 b: b_bar = A^-T x_bar (one more solve), A_bar = -b_bar x^T
    b_bar = solve(mT(a), _column(bar, vector))
    a_bar = None
    if carries_derivative(a):
        a_bar = fit(-matmul(b_bar, mT(_column(out, vector))), a)
    if not carries_derivative(b):
        return a_bar, None
    if vector:  # sum the stack of columns down to b's one column
        b_bar = _uncolumn(b_bar, True)
        lead = len(shape_of(b_bar)) - 1
        b_bar = sum(b_bar, tuple(range(lead)), False) if lead else b_bar
    return a_bar, fit(b_bar, b)


def _solve_taylor(primals, series_in, *, out):
    # A X = B: A_0 X_k = B_k - sum_{i=1..k} A_i X_{k-i}, one solve with A_0 per order
    (a, b), (sa, sb) = primals, series_in
    vector = len(shape_of(b)) == 1
    k = series.order_of(series_in)
    rhs = [None if t is None else _column(t, vector) for t in (sb or [None] * k)]
    terms = series.solve_terms(
        lambda r: solve(a, r),
        lambda i, x: None if sa is None or sa[i - 1] is None else matmul(sa[i - 1], x),
        rhs,
        _column(out, vector),
    )
    return [None if t is None else _uncolumn(t, vector) for t in terms]


def _solve_batch(args, dims):
    (a, b), (da, db) = args, dims
    a = expand_dims(a, (0,)) if da is None else move_to_front(a, da)
    b_rank = len(shape_of(b)) - (db is not None)
    if db is None and b_rank == 1:  # one column for every example (and every stack)
        return solve(a, b), 0
    b = expand_dims(b, (0,)) if db is None else move_to_front(b, db)
    stack = len(shape_of(a)) - 3
    if b_rank == 1:
        # a per-example vector: one column, a's stack axes between the batch axis and it
        out = solve(a, expand_dims(b, tuple(range(1, 1 + stack)) + (2 + stack,)))
        return squeeze(out, (len(shape_of(out)) - 1,)), 0
    # stack axes align from the right, the batch axes (first) must too: pad the shorter stack
    lead = stack - (b_rank - 2)
    if lead < 0:
        a = expand_dims(a, tuple(range(1, 1 - lead)))
    elif lead > 0:
        b = expand_dims(b, tuple(range(1, 1 + lead)))
    return solve(a, b), 0


solve_p = Primitive(
    "linalg.solve",
    impl=np.linalg.solve,
    shape=_solve_shape,
    jvp=_solve_jvp,
    vjp=_solve_vjp,
    batch=_solve_batch,
    emit=lambda a, b: f"np.linalg.solve({a}, {b})",
    torch_name="LinalgSolveExBackward0",
    taylor=_solve_taylor,
)

# -- adjugate and det ---------------------------------------------------------------------------


def adjugate(a):
    """The adjugate (the transposed cofactor matrix) of each matrix of a stack."""
    return bind(adjugate_p, a)


def adjugate_impl(a):
    """`adj(A) = det(V^H) V diag(prod_{j != i} s_j) det(U) U^H` from `A = U diag(s) V^H`:
    products of the other singular values (prefix and suffix products, no division), so a
    singular matrix has its adjugate too."""
    a = np.asarray(a)
    dtype = np.result_type(a.dtype, np.float32) if a.dtype.kind in "fc" else np.float64
    n = a.shape[-1]
    if n == 0:
        return np.zeros(a.shape, dtype)
    u, s, vh = np.linalg.svd(a)
    ones = np.ones(s.shape[:-1] + (1,), s.dtype)
    before = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    others = before * after
    phase = np.linalg.det(u) * np.linalg.det(vh)
    vh_h = np.conj(np.swapaxes(vh, -1, -2))
    u_h = np.conj(np.swapaxes(u, -1, -2))
    adj = (vh_h * others[..., None, :]) @ u_h * phase[..., None, None]
    return adj.astype(dtype, copy=False)


def _adjugate_shape(a: Aval):
    check_square("adjugate", a)
    return Aval(a.shape, result_dtype("adjugate", a))


def _adjugate_jvp(primals, tangents, *, out):
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return None
    d = expand_dims(det(a), (len(shape_of(a)) - 2, len(shape_of(a)) - 1))
    t = expand_dims(trace(matmul(out, a_dot)), (len(shape_of(a)) - 2, len(shape_of(a)) - 1))
    return (mul(t, out) - matmul(matmul(out, a_dot), out)) / d


def _adjugate_vjp(bar, a, *, out):
    if not carries_derivative(a):
        return (None,)
    n = len(shape_of(a))
    d = expand_dims(det(a), (n - 2, n - 1))
    s = expand_dims(sum(mul(bar, out), (n - 2, n - 1), False), (n - 2, n - 1))
    t = mT(out)
    return (fit((mul(s, t) - matmul(matmul(t, bar), t)) / d, a),)


def _log_det_terms(a, s) -> tuple[list, list]:
    """(the inverse's full series [A^-1, Y_1, ..., Y_K], [None, u_1, ..., u_K]) where u is
    the series of log det A(t) less its constant: u' = tr(A^-1 A'), so k u_k = sum_{j=1..k}
    j tr(Y_{k-j} A_j). Needs an invertible A_0 (as det's second derivative does)."""
    k = len(s)
    y0 = inv(a)
    ys = [y0, *_inv_terms(s, y0)]
    u = [None]
    for order in range(1, k + 1):
        acc = series.total(
            series.scale(einsum("...ij,...ji->...", ys[order - j], s[j - 1]), j)
            for j in range(1, order + 1)
            if s[j - 1] is not None and ys[order - j] is not None
        )
        u.append(series.scale(acc, 1.0 / order))
    return ys, u


def _adjugate_taylor(primals, series_in, *, out):
    # adj(A) = det(A) A^-1: the product of det's series and the inverse's
    ((a,), (s,)) = primals, series_in
    if s is None:
        return None
    k = len(s)
    ys, u = _log_det_terms(a, s)
    d = det(a)
    nd = len(shape_of(a))
    ds = [d, *series.exp_terms(u, d)]
    ds = [None if t is None else expand_dims(t, (nd - 2, nd - 1)) for t in ds]
    return [series.convolve(ds, ys, i, mul) for i in range(1, k + 1)]


adjugate_p = Primitive(
    "linalg.adjugate",
    impl=adjugate_impl,
    shape=_adjugate_shape,
    jvp=_adjugate_jvp,
    vjp=_adjugate_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a: [
        "import tracegrad.primitives.linalg.inverses as _tg_inverses",
        f"_tg_inverses.adjugate_impl({a})",
    ],
    taylor=_adjugate_taylor,
)


def det(a):
    """`np.linalg.det(a)`."""
    return bind(det_p, a)


def _det_shape(a: Aval):
    check_square("det", a)
    return Aval(a.shape[:-2], result_dtype("det", a))


def _det_jvp(primals, tangents, *, out):
    (a,), (a_dot,) = primals, tangents
    return None if a_dot is None else trace(matmul(adjugate(a), a_dot))


def _det_vjp(bar, a, *, out):
    if not carries_derivative(a):
        return (None,)
    n = len(shape_of(a))
    return (fit(mul(expand_dims(bar, (n - 2, n - 1)), mT(adjugate(a))), a),)


def _det_taylor(primals, series_in, *, out):
    # det = exp(log det): the exponential's recurrence on log det's series
    ((a,), (s,)) = primals, series_in
    return None if s is None else series.exp_terms(_log_det_terms(a, s)[1], out)


det_p = Primitive(
    "linalg.det",
    impl=np.linalg.det,
    shape=_det_shape,
    jvp=_det_jvp,
    vjp=_det_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a: f"np.linalg.det({a})",
    vjp_reads=READS_INPUTS,
    torch_name="LinalgDetBackward0",
    taylor=_det_taylor,
)

# -- slogdet ------------------------------------------------------------------------------------


def slogdet(a):
    """`np.linalg.slogdet(a)` as the pair `(sign, logabsdet)`."""
    return tuple(bind(slogdet_p, a))


def _slogdet_shape(a: Aval):
    check_square("slogdet", a)
    dtype = result_dtype("slogdet", a)
    return Aval(a.shape[:-2], dtype), Aval(a.shape[:-2], real_dtype(dtype))


def _slogdet_jvp(primals, tangents, *, out):
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return None, None
    # d log det A = tr(A^-1 dA): its real part moves log|det|, its imaginary part the phase
    t = trace(solve(a, a_dot))
    sign, _ = out
    sign_dot = mul(sign, mul(ew.imag(t), 1j)) if is_complex(t) else None
    return sign_dot, real_part(t)


def _slogdet_vjp(bar, a, *, out):
    if not carries_derivative(a):
        return (None,)
    sign_bar, logdet_bar = bar
    sign, _ = out
    # the transpose of the jvp: A_bar = c A^-T, c = logdet_bar for a real matrix, and for a
    # complex one also -i Re(i sign_bar sign) from the phase (JAX's convention)
    c = logdet_bar
    if is_complex(sign) and sign_bar is not None:
        phase = ew.real(mul(mul(sign_bar, sign), 1j))
        c = mul(phase, -1j) if c is None else c - mul(phase, 1j)
    if c is None:
        return (None,)
    n = len(shape_of(a))
    return (fit(mul(expand_dims(c, (n - 2, n - 1)), mT(inv(a))), a),)


def _slogdet_taylor(primals, series_in, *, out):
    # log det's series: its real part is log|det|'s; the sign of a real matrix is constant,
    # that of a complex one exp(i Im(log det)) (the exponential's recurrence)
    ((a,), (s,)) = primals, series_in
    if s is None:
        return None, None
    u = _log_det_terms(a, s)[1]
    if not is_complex(out[0]):
        return None, u[1:]
    phase = [None, *(None if t is None else mul(ew.imag(t), 1j) for t in u[1:])]
    return series.exp_terms(phase, out[0]), [None if t is None else ew.real(t) for t in u[1:]]


slogdet_p = Primitive(
    "linalg.slogdet",
    impl=lambda a: tuple(np.linalg.slogdet(a)),
    shape=_slogdet_shape,
    jvp=_slogdet_jvp,
    vjp=_slogdet_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a: f"tuple(np.linalg.slogdet({a}))",
    multiple_results=True,
    torch_name="LinalgSlogdetBackward0",
    taylor=_slogdet_taylor,
)

__all__ = ["LinAlgError", "adjugate", "det", "inv", "inv_or_nan", "slogdet", "solve"]
PRIMITIVES = (inv_p, inv_or_nan_p, solve_p, adjugate_p, det_p, slogdet_p)
