"""`tracegrad.scipy.linalg`: SciPy's triangular solve and reusable factorisations with SciPy's
signatures, differentiable (docs/scipy_linalg.md).

`solve_triangular`, `cholesky`, `cho_factor`/`cho_solve` and `lu_factor`/`lu_solve` are
primitives whose values are SciPy's own calls (tracegrad.primitives.scipy_linalg); a factor
from `cho_factor` or `lu_factor` is reused by the derivatives, never recomputed. `inv`, `det`,
`eigh` and `svd` share NumPy's linalg primitives (values NumPy's LAPACK calls, which may differ
from SciPy's in the last bits); `block_diag` is written with tracegrad's array operations.
`overwrite_a` / `overwrite_b` are accepted and ignored: an input is never overwritten.
The matrix functions `expm`, `expm_frechet`, `sqrtm`, `logm` and the solvers
`solve_sylvester`, `solve_continuous_lyapunov`, `solve_banded` are primitives too
(tracegrad.primitives.scipy_matrix_functions), differentiated by their Fréchet derivatives.
"""

from __future__ import annotations

import warnings

import numpy as np

import tracegrad.numpy as tnp
from tracegrad.core import Boxed
from tracegrad.ir.types import Aval, dtype_of
from tracegrad.numpy._common import asarray_or_tracer, known_value, shape_of
from tracegrad.primitives import scipy_linalg as sl
from tracegrad.primitives import scipy_matrix_functions as mf

#: SciPy's "argument not given" for its deprecated `disp` and `blocksize`
_NOT_GIVEN = object()

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


# -- matrix functions and Sylvester-type solvers -------------------------------------------------


def _stacks(*xs):
    """The inputs with their stack axes (all but the last two) broadcast to one shape, as
    SciPy's batched functions broadcast them (the primitives take equal stacks)."""
    xs = [asarray_or_tracer(x) for x in xs]
    shapes = [shape_of(x) for x in xs]
    if any(len(s) < 2 for s in shapes):
        raise ValueError(f"expected matrices (or stacks of them), got shapes {shapes}")
    stack = np.broadcast_shapes(*(s[:-2] for s in shapes))
    return [
        x if s[:-2] == stack else tnp.broadcast_to(x, stack + s[-2:]) for x, s in zip(xs, shapes)
    ]


def _checked(prim, *args, **params):
    """`args`, after `prim`'s shape rule (a trace runs it anyway; a plain call would otherwise
    meet SciPy's own message, which does not name the shapes)."""
    prim.shape(*(Aval(shape_of(x), dtype_of(x)) for x in args), **params)
    return args


def expm(A):
    """`scipy.linalg.expm`: the matrix exponential (of each matrix of a stack), SciPy's bits.
    Its derivative is the Fréchet derivative `L(A, E)`, computed by SciPy's `expm_frechet`
    (reverse mode: `L(A^T, G)`)."""
    return mf.expm(*_checked(mf.expm_p, asarray_or_tracer(A)))


def expm_frechet(A, E, method=None, compute_expm=True, check_finite=True):
    """`scipy.linalg.expm_frechet`: `(expm(A), L(A, E))`, or `L(A, E)` without
    `compute_expm`; SciPy's values (method 'SPS', its default). Differentiable in `A` and `E`
    (through the Fréchet derivative of the block matrix `[[A, E], [0, A]]`); `method=
    'blockEnlarge'` is refused."""
    if method not in (None, "SPS"):
        raise NotImplementedError(
            f"tracegrad.scipy.linalg.expm_frechet: method={method!r} is not supported; use "
            "method=None (SciPy's default, 'SPS')"
        )
    a, e = _checked(mf.expm_frechet_p, *_stacks(A, E), check_finite=bool(check_finite))
    out = mf.expm_frechet(a, e, check_finite)
    return out if compute_expm else out[1]


def _deprecated(name: str, given: bool) -> None:
    if given:  # as SciPy 1.16+ warns
        warnings.warn(
            f"The `{name}` argument is deprecated and will be removed in SciPy 1.18.0.",
            DeprecationWarning,
            stacklevel=3,
        )


def _real_or_scipy(prim, scipy_name: str, A):
    """A plain array goes to SciPy as it is (a real matrix may get a complex result there);
    a traced one gets a result of its own kind, or the primitive's clear refusal."""
    (a,) = _checked(prim, asarray_or_tracer(A))
    if isinstance(a, Boxed):
        return prim.bind(a)
    return getattr(mf._sl(), scipy_name)(a)


def sqrtm(A, disp=_NOT_GIVEN, blocksize=_NOT_GIVEN):
    """`scipy.linalg.sqrtm`: the principal square root, SciPy's bits. Its derivative solves
    the Sylvester equation `X dX + dX X = dA`. A real matrix with no real square root: SciPy's
    complex result for a plain array; traced (grad, jit, vmap), a ValueError that says to pass
    a complex matrix (whose values work; complex derivatives are refused). `disp` and
    `blocksize` are deprecated in SciPy 1.16 and warn as there; `disp=False` also returns
    SciPy's error estimate `||X X - A||_F^2 / ||A||_F`."""
    _deprecated("disp", disp is not _NOT_GIVEN)
    _deprecated("blocksize", blocksize is not _NOT_GIVEN)
    x = _real_or_scipy(mf.sqrtm_p, "sqrtm", A)
    if disp is False:
        a = asarray_or_tracer(A)
        return x, tnp.linalg.norm(x @ x - a, "fro") ** 2 / tnp.linalg.norm(a, "fro")
    return x


def logm(A, disp=_NOT_GIVEN):
    """`scipy.linalg.logm`: the principal logarithm, SciPy's bits. Its derivative is the
    Fréchet derivative, the top-right block of `logm([[A, E], [0, A]])`. A real matrix with no
    real logarithm behaves as in `sqrtm`. `disp` is deprecated in SciPy 1.16 and warns as
    there; `disp=False` also returns SciPy's estimate `||expm(F) - A||_1 / ||A||_1`."""
    _deprecated("disp", disp is not _NOT_GIVEN)
    f = _real_or_scipy(mf.logm_p, "logm", A)
    if disp is False:
        a = asarray_or_tracer(A)
        return f, tnp.linalg.norm(expm(f) - a, 1) / tnp.linalg.norm(a, 1)
    return f


def solve_sylvester(a, b, q):
    """`scipy.linalg.solve_sylvester`: `X` with `a X + X b = q`. Derivatives are two more
    Sylvester solves with the same `a`, `b` (forward) or their transposes (reverse)."""
    return mf.solve_sylvester(*_checked(mf.solve_sylvester_p, *_stacks(a, b, q)))


def solve_continuous_lyapunov(a, q):
    """`scipy.linalg.solve_continuous_lyapunov`: `X` with `a X + X a^H = q`, SciPy's own call;
    derivatives are Lyapunov solves with `a` (forward) and `a^T` (reverse)."""
    return mf.solve_continuous_lyapunov(*_checked(mf.lyapunov_p, *_stacks(a, q)))


def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """`scipy.linalg.solve_banded`: `x` with `A x = b`, `A` given by its diagonals
    (`ab[u + i - j, j] = A[i, j]`, `l` below and `u` above the main one, static ints).
    Differentiable in `b` (a banded solve with A^T's band storage, built from `ab`) and in the
    entries of `ab` that hold A (`-g x^T` on the band; the unused corners get zero)."""
    nlower, nupper = (int(v) for v in l_and_u)
    ab, b = asarray_or_tracer(ab), asarray_or_tracer(b)
    params = dict(nlower=nlower, nupper=nupper, check_finite=bool(check_finite))
    _checked(mf.solve_banded_p, ab, b, **params)
    return mf.solve_banded(ab, b, **params)


__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "det",
    "eigh",
    "expm",
    "expm_frechet",
    "inv",
    "logm",
    "lu_factor",
    "lu_solve",
    "solve_banded",
    "solve_continuous_lyapunov",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
    "svd",
]
