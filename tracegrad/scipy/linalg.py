"""`tracegrad.scipy.linalg`: SciPy's triangular solve and reusable factorisations with SciPy's
signatures, differentiable (docs/scipy_linalg.md).

`solve_triangular`, `cholesky`, `cho_factor`/`cho_solve` and `lu_factor`/`lu_solve` are
primitives whose values are SciPy's own calls (tracegrad.primitives.scipy_linalg); a factor
from `cho_factor` or `lu_factor` is reused by the derivatives, never recomputed. `inv`, `det`,
`eigh` and `svd` share NumPy's linalg primitives (values NumPy's LAPACK calls, which may differ
from SciPy's in the last bits); `block_diag` is written with tracegrad's array operations.
`overwrite_a` / `overwrite_b` are accepted and ignored: an input is never overwritten.
"""

from __future__ import annotations

import numpy as np

import tracegrad.numpy as tnp
from tracegrad.numpy._common import asarray_or_tracer, known_value, shape_of
from tracegrad.primitives import scipy_linalg as sl

_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}


def _trans(trans) -> int:
    if isinstance(trans, bool) or trans not in _TRANS:
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return _TRANS[trans]


def _finite(check_finite: bool, *xs) -> None:
    """SciPy's check_finite for the functions that share NumPy's primitives (SciPy's own calls
    check for themselves); skipped under abstract tracing, where no value is known."""
    for x in xs:
        v = known_value(x) if check_finite else None
        if v is not None and np.asarray(v).dtype.kind in "fc" and not np.isfinite(v).all():
            raise ValueError("array must not contain infs or NaNs")


def _with_rhs(fn, a, b):
    """`fn(a, b)` with SciPy's stacks: a 1-D `b` with a stack of matrices is one vector for
    each, and the stack axes broadcast (the primitives take equal stacks)."""
    a, b = asarray_or_tracer(a), asarray_or_tracer(b)
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) < 2 or len(sb) == 0:
        raise ValueError(f"shapes of a {sa} and b {sb} are incompatible")
    if len(sa) == 2 or (len(sb) == 2 and len(sa) == 2):
        return fn(a, b)
    vector = len(sb) == 1
    if vector:
        b = tnp.expand_dims(b, -1)
        sb = shape_of(b)
    stack = np.broadcast_shapes(sa[:-2], sb[:-2])
    a = a if sa[:-2] == stack else tnp.broadcast_to(a, stack + sa[-2:])
    b = b if sb[:-2] == stack else tnp.broadcast_to(b, stack + sb[-2:])
    out = fn(a, b)
    return out[..., 0] if vector else out


def solve_triangular(
    a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True
):
    """`scipy.linalg.solve_triangular`: `x` with `op(a) x = b`, `op` per `trans` (0 or 'N',
    1 or 'T', 2 or 'C'), reading only `a`'s `lower` (else upper) triangle. Differentiable in
    `b` and in that triangle of `a` (its diagonal too unless `unit_diagonal`); the other entries
    get a zero derivative, as SciPy never reads them."""
    t = _trans(trans)
    return _with_rhs(
        lambda a, b: sl.solve_triangular(a, b, t, lower, unit_diagonal, check_finite), a, b
    )


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """`scipy.linalg.cholesky`: the upper (or `lower`) factor of a Hermitian positive definite
    matrix, read from that triangle; its derivative is that of `(a + a^T) / 2`."""
    return sl.cholesky(asarray_or_tracer(a), lower, check_finite)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """`scipy.linalg.cho_factor`: `(c, lower)`. `c`'s `lower` (else upper) triangle is the
    Cholesky factor and carries its derivative; the other triangle holds `a`'s entries as SciPy
    leaves them, and gets a zero derivative (no SciPy function reads it)."""
    return sl.cho_factor(asarray_or_tracer(a), lower, check_finite), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """`scipy.linalg.cho_solve((c, lower), b)`: `x` with `a x = b`, `c` from cho_factor.
    Differentiable in `b` (its vjp a cho_solve with the same `c`) and in `c`'s factor
    triangle (triangular products and the same solve)."""
    c, lower = c_and_lower
    return _with_rhs(lambda c, b: sl.cho_solve(c, b, bool(lower), check_finite), c, b)


def lu_factor(a, overwrite_a=False, check_finite=True):
    """`scipy.linalg.lu_factor`: `(lu, piv)` of a square matrix (SciPy also takes rectangular
    ones; tracegrad refuses them). `lu` carries the derivative in L (strict lower) and U
    (upper); `piv` is integer."""
    a = asarray_or_tracer(a)
    if len(shape_of(a)) < 2 or shape_of(a)[-1] != shape_of(a)[-2]:
        # SciPy factorises rectangular matrices too; their derivative is not written yet
        raise ValueError(f"lu_factor: expected a square matrix, got shape {shape_of(a)}")
    return sl.lu_factor(a, check_finite)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """`scipy.linalg.lu_solve((lu, piv), b, trans)`. Differentiable in `b` (its vjp an
    lu_solve with `trans` toggled, the same factor) and in `lu`."""
    lu, piv = lu_and_piv
    t, piv = _trans(trans), asarray_or_tracer(piv)
    if len(shape_of(piv)) > 1 or len(shape_of(lu)) > 2:
        stack = shape_of(lu)[:-2]
        piv = tnp.broadcast_to(piv, stack + shape_of(piv)[-1:])
    return _with_rhs(lambda lu, b: sl.lu_solve(lu, piv, b, t, check_finite), lu, b)


def block_diag(*arrs):
    """`scipy.linalg.block_diag`: the inputs (each at most 2-D) on the diagonal of one matrix,
    zeros elsewhere, in their common dtype."""
    if arrs == ():
        arrs = ([],)
    arrs = [tnp.atleast_2d(asarray_or_tracer(a)) for a in arrs]
    bad = [k for k, a in enumerate(arrs) if len(shape_of(a)) > 2]
    if bad:
        raise ValueError(
            f"arguments in the following positions have dimension greater than 2: {bad}"
        )
    dtype = tnp.result_type(*arrs)
    shapes = [shape_of(a) for a in arrs]
    width = sum(s[1] for s in shapes)
    rows, col = [], 0
    for a, (r, c) in zip(arrs, shapes):
        parts = [tnp.zeros((r, col), dtype), tnp.asarray(a).astype(dtype), None]
        parts[2] = tnp.zeros((r, width - col - c), dtype)
        rows.append(tnp.concatenate(parts, axis=1))
        col += c
    return tnp.concatenate(rows, axis=0)


def inv(a, overwrite_a=False, check_finite=True):
    """`scipy.linalg.inv` on NumPy's inv primitive: the values are np.linalg.inv's (LAPACK's
    gesv, where SciPy calls getrf/getri: equal up to rounding, not bit for bit)."""
    _finite(check_finite, a)
    return tnp.linalg.inv(a)


def det(a, overwrite_a=False, check_finite=True):
    """`scipy.linalg.det` on NumPy's det primitive (np.linalg.det's values; its derivative is
    finite at singular matrices)."""
    _finite(check_finite, a)
    return tnp.linalg.det(a)


def eigh(
    a,
    b=None,
    *,
    lower=True,
    eigvals_only=False,
    overwrite_a=False,
    overwrite_b=False,
    type=1,  # noqa: A002 - SciPy's name
    check_finite=True,
    subset_by_index=None,
    subset_by_value=None,
    driver=None,
):
    """`scipy.linalg.eigh` of one Hermitian matrix, on NumPy's eigh primitive (`lower` is
    NumPy's `UPLO`): `(w, v)`, or `w` with `eigvals_only`. The generalized problem (`b`),
    subsets and drivers are refused."""
    if b is not None or subset_by_index is not None or subset_by_value is not None:
        raise NotImplementedError(
            "tracegrad.scipy.linalg.eigh: the generalized problem (b) and eigenvalue subsets "
            "are not supported; pass a alone"
        )
    if driver is not None or type != 1:
        raise NotImplementedError("tracegrad.scipy.linalg.eigh: driver and type are not supported")
    _finite(check_finite, a)
    uplo = "L" if lower else "U"
    if eigvals_only:
        return tnp.linalg.eigvalsh(a, UPLO=uplo)
    return tuple(tnp.linalg.eigh(a, UPLO=uplo))


def svd(
    a,
    full_matrices=True,
    compute_uv=True,
    overwrite_a=False,
    check_finite=True,
    lapack_driver="gesdd",
):
    """`scipy.linalg.svd` on NumPy's svd primitive (LAPACK's gesdd, as SciPy's default):
    `(U, s, Vh)`, or `s` without `compute_uv`. `lapack_driver='gesvd'` is refused."""
    if lapack_driver != "gesdd":
        raise NotImplementedError(
            "tracegrad.scipy.linalg.svd: only lapack_driver='gesdd' (NumPy's) is supported"
        )
    _finite(check_finite, a)
    out = tnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "det",
    "eigh",
    "inv",
    "lu_factor",
    "lu_solve",
    "solve_triangular",
    "svd",
]
