"""SAMPLES rows for the linear-algebra primitives (tracegrad/primitives/linalg/).

Each row draws matrices whose derivative exists and is well conditioned, so central finite
differences are a fair oracle: square matrices near a multiple of the identity (inverses,
solves, determinants), symmetric positive definite ones (cholesky), symmetric ones with
eigenvalues at least 1 apart (eigh), real diagonalizable ones with real eigenvalues 1 apart
(eig: a real eigenvector's only freedom is its sign, which a small step keeps), and products
`u diag(s) v^T` with singular values 1 apart (svd, pinv, lstsq, qr). Stacks of 0 to 2 axes.

Complex inputs where the derivative has no gauge freedom (inverses, solves, determinants,
pinv, lstsq); the factorisations of complex matrices (a phase per eigenvector or singular
vector) are checked on invariant quantities in tests/linalg/. The eigenvectors of `eig` and
`eigh` are left out of the finite differences (`fd_outputs`): LAPACK's sign for them can jump
between the two ends of a float32-sized step; the adjoint identity checks them here, JAX (on
projectors) in tests/linalg/. `svd`'s singular pairs, whose sign can jump likewise, are
checked in a sign gauge that cannot (`_svd_signs`).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import tracegrad.numpy as tnp
from tests import strategies as S
from tests.primitives.samples.row import FLOATS, Sample
from tracegrad.primitives.linalg import factorizations as fa
from tracegrad.primitives.linalg import inverses as inv_
from tracegrad.primitives.linalg import least_squares as ls
from tracegrad.primitives.linalg import spectral as sp


def _stack(data):
    return S.shapes(data, max_dims=2, min_side=1, max_side=2)


def _n(data, lo=1, hi=4):
    return data.draw(st.integers(lo, hi), label="n")


def _noise(data, shape, scale):
    return S.array(data, shape, np.float64, -1.0, 1.0) * scale


def _generic(n):
    """A fixed matrix with no structure: added to drawn noise so that a factorisation's input
    is never diagonal or triangular even when hypothesis draws zeros (LAPACK's choice of signs
    jumps at such structured matrices, where finite differences then fail)."""
    return np.sin(1.0 + np.arange(n * n)).reshape(n, n)


def _orthogonal(data, stack, n):
    q, _ = np.linalg.qr(np.eye(n) + _generic(n) + _noise(data, stack + (n, n), 0.5))
    return q


def _near_identity(data, stack, n, dtype):
    sign = data.draw(st.sampled_from([1.0, -1.0]), label="sign")
    a = sign * 1.5 * np.eye(n) + _noise(data, stack + (n, n), 0.4 / n)
    return a.astype(dtype)


def _spd(data, stack, n, dtype):
    b = _noise(data, stack + (n, n), 1.0)
    return (b @ np.swapaxes(b, -1, -2) / n + np.eye(n)).astype(dtype)


def _spaced(data, stack, n, lo=-2.0):
    """Values `lo, lo + 1, ...` each moved by at most 0.25: at least 0.5 apart."""
    return lo + np.arange(n) + _noise(data, stack + (n,), 0.25)


def _symmetric(data, stack, n, dtype):
    q = _orthogonal(data, stack, n)
    w = _spaced(data, stack, n)
    return ((q * w[..., None, :]) @ np.swapaxes(q, -1, -2)).astype(dtype)


def _rectangular(data, stack, m, n, dtype):
    """`u diag(s) v^T` with singular values 1, 2, ... (each moved by at most 0.25)."""
    k = min(m, n)
    u = _orthogonal(data, stack, m)[..., :, :k]
    v = _orthogonal(data, stack, n)[..., :, :k]
    s = 1.0 + np.arange(k)[::-1] + _noise(data, stack + (k,), 0.25)
    return ((u * s[..., None, :]) @ np.swapaxes(v, -1, -2)).astype(dtype)


def _square(data, dtype):
    return (_near_identity(data, _stack(data), _n(data), dtype),), {}


def _solve(data, dtype):
    stack, n = _stack(data), _n(data)
    a = _near_identity(data, stack, n, dtype)
    if data.draw(st.booleans(), label="1-D b"):
        return (a, S.array(data, (n,), dtype)), {}
    b_stack = stack[data.draw(st.integers(0, len(stack)), label="b stack") :]
    k = data.draw(st.integers(1, 3), label="k")
    return (a, S.array(data, b_stack + (n, k), dtype)), {}


def _cholesky(data, dtype):
    upper = data.draw(st.booleans(), label="upper")
    return (_spd(data, _stack(data), _n(data), dtype),), {"upper": upper}


def _eigh(data, dtype):
    uplo = data.draw(st.sampled_from(["L", "U"]), label="UPLO")
    return (_symmetric(data, _stack(data), _n(data), dtype),), {"UPLO": uplo}


def _eig(data, dtype):
    stack, n = _stack(data), _n(data)
    p = _near_identity(data, stack, n, np.float64) + 0.3 * _generic(n) / n
    w = _spaced(data, stack, n, 0.5)  # no eigenvalue near 0, where LAPACK's signs jump
    return (((p * w[..., None, :]) @ np.linalg.inv(p)).astype(dtype),), {}


def _mn(data):
    return _n(data), _n(data)


def _svd(data, dtype):
    m, n = _mn(data)
    # full_matrices of a non-square matrix: the extra columns of u (rows of vh) are any basis
    # of a complement, LAPACK's and the derivative's gauges differ (tests/linalg checks the
    # invariant projector); square, both are the reduced SVD
    full = m == n and data.draw(st.booleans(), label="full_matrices")
    uv = data.draw(st.booleans(), label="compute_uv")
    params = {"full_matrices": full, "compute_uv": uv, "hermitian": False}
    return (_rectangular(data, _stack(data), m, n, dtype),), params


def _svd_signs(outs):
    """svd's outputs with each singular pair's sign fixed: the one that makes a fixed generic
    vector's product with the left singular vector positive. LAPACK's sign of a pair can jump
    between two nearby inputs (finite differences then see a jump of 2|u|); this one cannot
    away from the inputs where the product vanishes, and is constant near any other input,
    so it adds nothing to the derivative."""
    if len(outs) == 1:  # compute_uv=False: the singular values alone
        return outs
    u, s, vh = outs
    c = np.sin(2.0 + np.arange(np.shape(u)[-2]))[:, None]
    sign = tnp.sign(tnp.sum(u * c, axis=-2))  # one per pair
    return u * sign[..., None, :], s, vh * sign[..., :, None]


def _qr(data, dtype):
    m, n = _mn(data)
    modes = ["reduced", "r"] + (["complete"] if m <= n else [])
    mode = data.draw(st.sampled_from(modes), label="mode")
    return (_rectangular(data, _stack(data), m, n, dtype),), {"mode": mode}


def _pinv(data, dtype):
    m, n = _mn(data)
    params = {"rcond": None, "hermitian": False, "rtol": "unset"}
    return (_rectangular(data, _stack(data), m, n, dtype),), params


def _lstsq(data, dtype):
    m, n = _mn(data)
    a = _rectangular(data, (), m, n, dtype)
    shape = (m,) if data.draw(st.booleans(), label="1-D b") else (m, data.draw(st.integers(1, 2)))
    return (a, S.array(data, shape, dtype)), {"rcond": None}


SAMPLES = {
    inv_.inv_p: Sample(_square, complex=FLOATS),
    inv_.inv_or_nan_p: Sample(_square, complex=FLOATS),
    inv_.solve_p: Sample(_solve, complex=FLOATS, mixed=True),
    inv_.adjugate_p: Sample(_square, complex=FLOATS, tol=1e-5),
    inv_.det_p: Sample(_square, complex=FLOATS),
    inv_.slogdet_p: Sample(_square, complex=FLOATS),
    fa.cholesky_p: Sample(_cholesky, hermitian=(0,)),
    fa.qr_p: Sample(_qr, tol=1e-5),
    sp.eigh_p: Sample(_eigh, hermitian=(0,), tol=1e-5, fd_outputs=(0,)),
    sp.eigvalsh_p: Sample(_eigh, hermitian=(0,)),
    sp.eig_p: Sample(_eig, tol=1e-5, fd_outputs=(0,), fd_unordered=(0,)),
    sp.eigvals_p: Sample(_eig, tol=1e-5, fd_unordered=(0,)),
    sp.svd_p: Sample(_svd, tol=1e-5, fd_gauge=_svd_signs),
    ls.pinv_p: Sample(_pinv, complex=FLOATS, tol=1e-5),
    ls.lstsq_p: Sample(_lstsq, complex=FLOATS, mixed=True, tol=1e-5),
}
