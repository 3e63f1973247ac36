"""`np.linalg`'s LAPACK-backed functions with NumPy's signatures and result types: inv, solve,
det, slogdet, cholesky, eigh, eigvalsh, eig, eigvals, svd, qr, pinv, lstsq.

Each checks its arguments as NumPy does and binds the primitive of the same name
(tracegrad/primitives/linalg/). Results that NumPy returns as named tuples (`slogdet`, `eigh`,
`eig`, `svd`, `qr`) are NumPy's own named-tuple classes, so `np.linalg.slogdet(K).logabsdet`
and `np.linalg.slogdet(K)[1]` both work on traced values.
"""

from __future__ import annotations

import numpy as np
from numpy.linalg import _linalg as _numpy_linalg

from tracegrad.numpy._common import asarray_or_tracer, shape_of
from tracegrad.primitives import linalg as primitives

__all__ = [
    "LinAlgError",
    "inv",
    "solve",
    "det",
    "slogdet",
    "cholesky",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "svd",
    "qr",
    "pinv",
    "lstsq",
]

LinAlgError = np.linalg.LinAlgError


def inv(a):
    """`np.linalg.inv`: the inverse of each matrix of a stack."""
    return primitives.inv(asarray_or_tracer(a))


def solve(a, b):
    """`np.linalg.solve` (NumPy 2: a 1-D `b` is one right-hand side, otherwise a stack of
    matrices broadcasting against `a`)."""
    return primitives.solve(asarray_or_tracer(a), asarray_or_tracer(b))


def det(a):
    """`np.linalg.det`. Its derivative is finite at singular matrices (through the adjugate)."""
    return primitives.det(asarray_or_tracer(a))


def slogdet(a):
    """`np.linalg.slogdet`: `SlogdetResult(sign, logabsdet)`."""
    return _numpy_linalg.SlogdetResult(*primitives.slogdet(asarray_or_tracer(a)))


def cholesky(a, /, *, upper=False):
    """`np.linalg.cholesky`: lower (or, with `upper=True`, upper) triangular factor. Its
    derivative is that of the Hermitian part of `a` (docs/linalg.md)."""
    return primitives.cholesky(asarray_or_tracer(a), upper=upper)


def eigh(a, UPLO="L"):  # noqa: N803 - NumPy's name
    """`np.linalg.eigh`: `EighResult(eigenvalues, eigenvectors)`."""
    return _numpy_linalg.EighResult(*primitives.eigh(asarray_or_tracer(a), UPLO))


def eigvalsh(a, UPLO="L"):  # noqa: N803 - NumPy's name
    """`np.linalg.eigvalsh`: the eigenvalues in ascending order."""
    return primitives.eigvalsh(asarray_or_tracer(a), UPLO)


def eig(a):
    """`np.linalg.eig`: `EigResult(eigenvalues, eigenvectors)`, complex even for a real matrix
    with real eigenvalues (a traced dtype cannot depend on values; JAX does the same)."""
    return _numpy_linalg.EigResult(*primitives.eig(asarray_or_tracer(a)))


def eigvals(a):
    """`np.linalg.eigvals`, complex (as `eig`)."""
    return primitives.eigvals(asarray_or_tracer(a))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """`np.linalg.svd`: `SVDResult(U, S, Vh)`, or the singular values without compute_uv."""
    out = primitives.svd(asarray_or_tracer(a), full_matrices, compute_uv, hermitian)
    return _numpy_linalg.SVDResult(*out) if compute_uv else out[0]


def qr(a, mode="reduced"):
    """`np.linalg.qr`: `QRResult(Q, R)`, `R` alone for mode 'r', `(h, tau)` for 'raw'."""
    out = primitives.qr(asarray_or_tracer(a), mode)
    if mode == "r":
        return out[0]
    return out if mode == "raw" else _numpy_linalg.QRResult(*out)


_NO_VALUE = np._NoValue


def pinv(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
    """`np.linalg.pinv`; `rcond` and `rtol` are numbers (or None)."""
    rtol = primitives.least_squares._UNSET if rtol is _NO_VALUE else rtol
    return primitives.pinv(asarray_or_tracer(a), rcond, hermitian, rtol=rtol)


def lstsq(a, b, rcond=None):
    """`np.linalg.lstsq`: `(x, residuals, rank, s)` for one matrix `a`; `residuals` as JAX's
    when `a` is rank deficient (tracegrad/primitives/linalg/least_squares.py)."""
    a, b = asarray_or_tracer(a), asarray_or_tracer(b)
    for name, x, ranks in (("a", a, (2,)), ("b", b, (1, 2))):
        if len(shape_of(x)) not in ranks:
            raise LinAlgError(
                f"lstsq: {len(shape_of(x))}-dimensional array given as {name}. Array must be "
                + ("two-dimensional" if ranks == (2,) else "one- or two-dimensional")
            )
    return primitives.lstsq(a, b, rcond)
