"""NumPy's linear algebra as primitives: every `np.linalg` function that calls LAPACK.

One module per kind of operation: `inverses` (inv, solve, det, slogdet and the adjugate),
`factorizations` (cholesky, qr), `spectral` (eigh, eigvalsh, eig, eigvals, svd),
`least_squares` (pinv, lstsq). The functions NumPy writes in Python on top of these (norms,
cond, matrix_rank, matrix_power, multi_dot, tensorsolve, ...) are written the same way in
`tracegrad.numpy.linalg`, so their values are NumPy's bit for bit and their derivatives come
from these rules. `_common` holds NumPy's dtype and shape checks and the matrix helpers.
"""

from tracegrad.primitives.linalg import factorizations, inverses, least_squares, spectral
from tracegrad.primitives.linalg.factorizations import cholesky, qr
from tracegrad.primitives.linalg.inverses import adjugate, det, inv, inv_or_nan, slogdet, solve
from tracegrad.primitives.linalg.least_squares import lstsq, pinv
from tracegrad.primitives.linalg.spectral import eig, eigh, eigvals, eigvalsh, svd

PRIMITIVES = (
    inverses.PRIMITIVES + factorizations.PRIMITIVES + spectral.PRIMITIVES + least_squares.PRIMITIVES
)

__all__ = [
    "adjugate",
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "inv_or_nan",
    "lstsq",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
]
