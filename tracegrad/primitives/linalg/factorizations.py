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


def _qr_jvp(primals, tangents, *, out, mode):
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return (None,) * len(out)
    m, n = shape_of(a)[-2:]
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
    q, r = (bind(qr_p, a, mode="reduced")) if mode == "r" else out
    if m >= n:
        dq, dr = _square_qr_jvp(q, r, a_dot)
    else:  # wide: x = q [r1 | r2], the first m columns square, r2 = q^H y
        dq, dr1 = _square_qr_jvp(q, columns(r, 0, m), columns(a_dot, 0, m))
        y, y_dot = columns(a, m, n), columns(a_dot, m, n)
        dr2 = matmul(H(dq), y) + matmul(H(q), y_dot)
        dr = concatenate([dr1, dr2], len(shape_of(dr1)) - 1)
    return (dr,) if mode == "r" else (dq, dr)


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
)

__all__ = ["cholesky", "qr"]
PRIMITIVES = (cholesky_p, qr_p)
