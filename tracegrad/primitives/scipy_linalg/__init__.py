"""SciPy's triangular solve and its reusable factorisations as primitives: solve_triangular,
cholesky, cho_factor / cho_solve, lu_factor / lu_solve, each value SciPy's own call.

The point of cho_factor and lu_factor is that a factor is computed once and reused: so the
rules never factorise again. The vjp of cho_solve in `b` is a cho_solve with the same factor,
lu_solve's is an lu_solve with `trans` toggled, solve_triangular's a solve with the transposed
flag; the derivatives in a factor are triangular solves and products with its triangles (`trmm`,
BLAS's triangular product, is a primitive of its own for them).
The factors carry derivatives: cho_factor's `c` in its factor triangle, and in the other,
which holds `a`'s entries as LAPACK left them, the derivative of those entries (the identity);
lu_factor's `lu` in L (strict lower) and U (upper); `piv` is integer. Derivatives are for
real dtypes (complex values work). SciPy is imported on first use, never by `import tracegrad`.
"""

from tracegrad.primitives.scipy_linalg.cho import (
    cho_factor,
    cho_factor_p,
    cho_solve,
    cho_solve_p,
    cholesky,
    cholesky_p,
    cholesky_vjp,
    cholesky_vjp_impl,
    cholesky_vjp_p,
)
from tracegrad.primitives.scipy_linalg.lu import lu_factor, lu_factor_p, lu_solve, lu_solve_p
from tracegrad.primitives.scipy_linalg.triangular import (
    solve_triangular,
    solve_triangular_p,
    trmm,
    trmm_impl,
    trmm_p,
)

__all__ = [
    "cho_factor",
    "cho_solve",
    "cholesky",
    "cholesky_vjp",
    "cholesky_vjp_impl",
    "lu_factor",
    "lu_solve",
    "solve_triangular",
    "trmm",
    "trmm_impl",
]
PRIMITIVES = (
    solve_triangular_p,
    trmm_p,
    cholesky_p,
    cho_factor_p,
    cho_solve_p,
    cholesky_vjp_p,
    lu_factor_p,
    lu_solve_p,
)
