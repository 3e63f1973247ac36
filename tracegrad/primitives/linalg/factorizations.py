"""`cholesky` and `qr`: the factorisations whose factors are triangular.

`cholesky` reads one triangle of its input (LAPACK's potrf), as `eigh` does; its derivative is
that of the Hermitian part `(A + A^H) / 2`, as in JAX and PyTorch, so a gradient is Hermitian
and a tangent's other triangle counts (half of it). A matrix that is not positive definite
raises NumPy's LinAlgError when the value is computed, never a NaN.

`qr`'s derivative (JAX's rule, from the orthogonality of q and the triangularity of r) exists
for `mode='reduced'` and `'r'` at any shape and for `'complete'` when the matrix is square or
wide; a tall `'complete'` q has extra columns that are any orthonormal basis of the
complement, so it has no derivative, and `'raw'` returns LAPACK's Householder reflectors: both
are refused under differentiation, naming the mode to use instead.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_OUTPUT, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series
from tracegrad.primitives.linalg._common import (
    H,
    check_square,
    check_stacked,
    columns,
    conj,
    fit,
    is_complex,
    matmul,
    mT,
    mul,
    real_dtype,
    result_dtype,
    stacked_batch,
    sym,
    transposed,
)
from tracegrad.primitives.linalg.inverses import inv
from tracegrad.primitives.shape import concatenate

# -- cholesky -----------------------------------------------------------------------------------


def cholesky(a, upper: bool = False):
    """`np.linalg.cholesky(a, upper=upper)`."""
    return bind(cholesky_p, a, upper=bool(upper))


def _cholesky_shape(a: Aval, *, upper):
    check_square("cholesky", a)
    return Aval(a.shape, result_dtype("cholesky", a))


def _phi_mask(x) -> np.ndarray:
    """The strict lower triangle and half the diagonal (`Phi` of Murray's derivation)."""
    n = shape_of(x)[-1]
    return np.tri(n, k=-1, dtype=real_dtype(dtype_of(x))) + 0.5 * np.eye(
        n, dtype=real_dtype(dtype_of(x))
    )


def _cholesky_jvp(primals, tangents, *, out, upper):
    (a_dot,) = tangents
    if a_dot is None:
        return None
    low = H(out) if upper else out
    low_inv = inv(low)
    # dL = L Phi(L^-1 sym(dA) L^-H)
    x = matmul(matmul(low_inv, sym(a_dot)), H(low_inv))
    low_dot = matmul(low, mul(x, _phi_mask(x)))
    return H(low_dot) if upper else low_dot


def _cholesky_vjp(bar, a, *, out, upper):
    if not carries_derivative(a):
        return (None,)
    low = H(out) if upper else out
    low_bar = H(bar) if upper else bar
    # entries above the diagonal are zeros whatever the input: their cotangent is dropped
    low_bar = mul(low_bar, np.tri(shape_of(low)[-1], dtype=real_dtype(dtype_of(low))))
    low_inv = inv(low)
    p = mul(matmul(mT(low), low_bar), _phi_mask(low))
    q = matmul(matmul(mT(low_inv), p), conj(low_inv))
    return (fit(sym(q), a),)


def _cholesky_taylor(primals, series_in, *, out, upper):
    # L L^H = sym(A): L_0 L_k^H + L_k L_0^H = R_k = sym(A_k) - sum_{i=1..k-1} L_i L_{k-i}^H,
    # which the jvp's formula solves: L_k = L_0 Phi(L_0^-1 R_k L_0^-H)
    (s,) = series_in
    if s is None:
        return None
    low = H(out) if upper else out
    low_inv = inv(low)
    terms = [low]
    for k in range(1, len(s) + 1):
        known = series.total(
            matmul(terms[i], H(terms[k - i]))
            for i in range(1, k)
            if terms[i] is not None and terms[k - i] is not None
        )
        r = series.add(
            None if s[k - 1] is None else sym(s[k - 1]), None if known is None else -known
        )
        if r is None:
            terms.append(None)
            continue
        x = matmul(matmul(low_inv, r), H(low_inv))
        terms.append(matmul(low, mul(x, _phi_mask(x))))
    return [H(t) if upper and t is not None else t for t in terms[1:]]


cholesky_p = Primitive(
    "linalg.cholesky",
    impl=lambda a, *, upper: np.linalg.cholesky(a, upper=upper),
    shape=_cholesky_shape,
    jvp=_cholesky_jvp,
    vjp=_cholesky_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a, *, upper: f"np.linalg.cholesky({a}, upper={upper!r})",
    vjp_reads=READS_OUTPUT,
    torch_name="LinalgCholeskyExBackward0",
    taylor=_cholesky_taylor,
)

# -- qr -----------------------------------------------------------------------------------------

_QR_MODES = ("reduced", "complete", "r", "raw")


def qr(a, mode: str = "reduced"):
    """`np.linalg.qr(a, mode)`: the pair `(q, r)`, `(r,)` for mode 'r', `(h, tau)` for 'raw'."""
    return tuple(bind(qr_p, a, mode=mode))


def _qr_shape(a: Aval, *, mode):
    if mode not in _QR_MODES:
        raise ValueError(f"qr: Unrecognized mode {mode!r}; use 'reduced', 'complete', 'r' or 'raw'")
    check_stacked("qr", a)
    dtype = result_dtype("qr", a)
    *stack, m, n = a.shape
    k = min(m, n)
    stack = tuple(stack)
    if mode == "reduced":
        return Aval(stack + (m, k), dtype), Aval(stack + (k, n), dtype)
    if mode == "complete":
        return Aval(stack + (m, m), dtype), Aval(stack + (m, n), dtype)
    if mode == "r":
        return (Aval(stack + (k, n), dtype),)
    return Aval(stack + (n, m), dtype), Aval(stack + (k,), dtype)


def _qr_impl(a, *, mode):
    out = np.linalg.qr(a, mode=mode)
    return (out,) if mode == "r" else tuple(out)


def _qr_emit(a, *, mode):
    call = f"np.linalg.qr({a}, mode={mode!r})"
    return f"({call},)" if mode == "r" else f"tuple({call})"


def _square_qr_jvp(q, r, dx):
    """JAX's rule for `x = q r` with r square (m >= n, reduced): `dq`, `dr`."""
    dx_rinv = matmul(dx, inv(r))
    qt_dx_rinv = matmul(H(q), dx_rinv)
    n = shape_of(r)[-1]
    low = mul(qt_dx_rinv, np.tri(n, k=-1, dtype=real_dtype(dtype_of(r))))
    do = low - H(low)  # skew-Hermitian
    if is_complex(qt_dx_rinv):  # the diagonal's imaginary part, which no skew part fixes
        do = do + mul(mul(ew.imag(qt_dx_rinv), 1j), np.eye(n, dtype=real_dtype(dtype_of(r))))
    dq = matmul(q, do - qt_dx_rinv) + dx_rinv
    dr = matmul(qt_dx_rinv - do, r)
    return dq, dr


def _refuse_mode(mode, m: int, n: int) -> None:
    if mode == "raw" or (mode == "complete" and m > n):
        why = (
            "mode='raw' returns LAPACK's Householder reflectors"
            if mode == "raw"
            else f"mode='complete' of a tall matrix ({m} x {n}) has {m - n} extra columns of q "
            "that are any orthonormal basis of the complement"
        )
        raise NotImplementedError(
            f"qr: {why}, which have no derivative; differentiate mode='reduced' (or 'r') instead"
        )


def _qr_jvp(primals, tangents, *, out, mode):
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return (None,) * len(out)
    m, n = shape_of(a)[-2:]
    _refuse_mode(mode, m, n)
    q, r = (bind(qr_p, a, mode="reduced")) if mode == "r" else out
    if m >= n:
        dq, dr = _square_qr_jvp(q, r, a_dot)
    else:  # wide: x = q [r1 | r2], the first m columns square, r2 = q^H y
        dq, dr1 = _square_qr_jvp(q, columns(r, 0, m), columns(a_dot, 0, m))
        y, y_dot = columns(a, m, n), columns(a_dot, m, n)
        dr2 = matmul(H(dq), y) + matmul(H(q), y_dot)
        dr = concatenate([dr1, dr2], len(shape_of(dr1)) - 1)
    return (dr,) if mode == "r" else (dq, dr)


# qr's Taylor rule (m >= n; a wide matrix as in the jvp): with X_k = A_k - sum_{i=1..k-1} Q_i
# R_{k-i}, the order-k terms satisfy Q_0 R_k + Q_k R_0 = X_k. With M = Q_0^H X_k R_0^-1 and
# C = Q_0^H Q_k, M = R_k R_0^-1 + C, the first upper triangular; orthogonality gives C + C^H =
# -S_k, S_k = sum_{i=1..k-1} Q_i^H Q_{k-i}, and the jvp's gauge (R's diagonal stays real) gives
# Im diag(C) = Im diag(M). So C = L - L^H - triu(S_k, 1) - diag(S_k) / 2 + i Im diag(M) (L the
# strict lower part of M), R_k = (M - C) R_0 and Q_k = X_k R_0^-1 - Q_0 (M - C).


def _square_qr_terms(a_terms, q, r) -> tuple[list, list]:
    n = shape_of(r)[-1]
    rinv, eye = inv(r), np.eye(n, dtype=real_dtype(dtype_of(r)))
    strict, upper = np.tri(n, k=-1, dtype=eye.dtype), np.tri(n, k=-1, dtype=eye.dtype).T
    qs, rs = [q], [r]
    for k in range(1, len(a_terms) + 1):
        pairs = [(i, k - i) for i in range(1, k) if qs[i] is not None]
        x = series.total(
            [a_terms[k - 1], *(-matmul(qs[i], rs[j]) for i, j in pairs if rs[j] is not None)]
        )
        s = series.total(matmul(H(qs[i]), qs[j]) for i, j in pairs if qs[j] is not None)
        if x is None and s is None:
            qs.append(None)
            rs.append(None)
            continue
        y = None if x is None else matmul(x, rinv)
        m = None if y is None else matmul(H(q), y)
        c = None
        if m is not None:
            low = mul(m, strict)
            c = low - H(low)
            if is_complex(m):
                c = c + mul(mul(ew.imag(m), 1j), eye)
        if s is not None:
            c = series.add(c, -(mul(s, upper) + mul(s, eye * 0.5)))
        p = c * -1.0 if m is None else m - c  # R_k R_0^-1
        rs.append(matmul(p, r))
        qs.append(series.add(y, -matmul(q, p)))
    return qs[1:], rs[1:]


def _joined(r1, r2, r, m: int):
    """[r1 | r2] (zeros for a None part, None if both are), r's shape."""
    if r1 is None and r2 is None:
        return None
    shape = shape_of(r)
    zeros = (
        np.zeros(shape[:-1] + (m,), dtype_of(r)),
        np.zeros(shape[:-1] + (shape[-1] - m,), dtype_of(r)),
    )
    parts = [zeros[0] if r1 is None else r1, zeros[1] if r2 is None else r2]
    return concatenate(parts, len(shape) - 1)


def _qr_taylor(primals, series_in, *, out, mode):
    ((a,), (s,)) = primals, series_in
    m, n = shape_of(a)[-2:]
    _refuse_mode(mode, m, n)
    q, r = (bind(qr_p, a, mode="reduced")) if mode == "r" else out
    if m >= n:
        qs, rs = _square_qr_terms(s, q, r)
    else:  # wide: the first m columns square, r2 = q^H y
        left = [None if t is None else columns(t, 0, m) for t in s]
        qs, r1s = _square_qr_terms(left, q, columns(r, 0, m))
        ys = [columns(a, m, n), *(None if t is None else columns(t, m, n) for t in s)]
        full_q = [q, *qs]
        r2s = [
            series.convolve(full_q, ys, k, lambda u, v: matmul(H(u), v))
            for k in range(1, len(s) + 1)
        ]
        rs = [_joined(r1, r2, r, m) for r1, r2 in zip(r1s, r2s)]
    return (rs,) if mode == "r" else (qs, rs)


qr_p = Primitive(
    "linalg.qr",
    impl=_qr_impl,
    shape=_qr_shape,
    jvp=_qr_jvp,
    vjp=transposed(_qr_jvp, "qr", multiple_results=True),
    batch=rule_for(stacked_batch),
    emit=_qr_emit,
    multiple_results=True,
    torch_name="LinalgQrBackward0",
    taylor=_qr_taylor,
)

__all__ = ["cholesky", "qr"]
PRIMITIVES = (cholesky_p, qr_p)
