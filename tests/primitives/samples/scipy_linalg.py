"""SAMPLES rows for SciPy's triangular solve and reusable factorisations
(tracegrad/primitives/scipy_linalg.py), present with SciPy.

The matrices are those of the NumPy rows (decompositions.py): near a multiple of the identity
for the solves, symmetric positive definite for the Cholesky factors, and for LU a
near-identity with its rows permuted, so partial pivoting swaps rows and the choice stays the
same under a finite-difference step. The factors fed to cho_solve and lu_solve are SciPy's own,
so a step moves every entry of a factor (cho_solve never reads `c`'s other triangle: its
derivative there is zero). Real dtypes only: the derivative rules refuse complex matrices.
"""

from __future__ import annotations

import scipy.linalg as sl
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.decompositions import _n, _near_identity, _spd, _stack
from tests.primitives.samples.row import Sample
from tracegrad.primitives import scipy_linalg as sp


def _rhs(data, stack, n, dtype):
    """A 1-D right-hand side (for one matrix) or a stack of matrices with `stack`."""
    if not stack and data.draw(st.booleans(), label="1-D b"):
        return S.array(data, (n,), dtype)
    return S.array(data, stack + (n, data.draw(st.integers(1, 3), label="k")), dtype)


def _solve_triangular(data, dtype):
    stack, n = _stack(data), _n(data)
    params = {
        "trans": data.draw(st.sampled_from([0, 1, 2]), label="trans"),
        "lower": data.draw(st.booleans(), label="lower"),
        "unit_diagonal": data.draw(st.booleans(), label="unit_diagonal"),
        "check_finite": True,
    }
    return (_near_identity(data, stack, n, dtype), _rhs(data, stack, n, dtype)), params


def _trmm(data, dtype):
    stack, n = _stack(data), _n(data)
    b = S.array(data, stack + (n, data.draw(st.integers(1, 3), label="k")), dtype)
    params = {
        "lower": data.draw(st.booleans(), label="lower"),
        "trans": data.draw(st.sampled_from([0, 1]), label="trans"),
    }
    return (_near_identity(data, stack, n, dtype), b), params


def _factor(data, dtype):
    lower = data.draw(st.booleans(), label="lower")
    spd = _spd(data, _stack(data), _n(data), dtype)
    return (spd,), {"lower": lower, "check_finite": True}


def _cho_solve(data, dtype):
    stack, n = _stack(data), _n(data)
    lower = data.draw(st.booleans(), label="lower")
    c = sl.cho_factor(_spd(data, stack, n, dtype), lower=lower)[0]
    return (c, _rhs(data, stack, n, dtype)), {"lower": lower, "check_finite": True}


def _cholesky_vjp(data, dtype):
    """A factor (SciPy's, of either triangle) and a full cotangent: Murray's rule reads only the
    factor triangle of `c`, and `bar`'s other triangle only with `other_triangle`."""
    stack, n = _stack(data), _n(data)
    lower = data.draw(st.booleans(), label="lower")
    c = sl.cho_factor(_spd(data, stack, n, dtype), lower=lower)[0]
    params = {"lower": lower, "other_triangle": data.draw(st.booleans(), label="other")}
    return (c, S.array(data, stack + (n, n), dtype)), params


def _pivoted(data, stack, n, dtype):
    perm = data.draw(st.permutations(range(n)), label="row order")
    return _near_identity(data, stack, n, dtype)[..., perm, :]


def _lu_factor(data, dtype):
    return (_pivoted(data, _stack(data), _n(data), dtype),), {"check_finite": True}


def _lu_solve(data, dtype):
    stack, n = _stack(data), _n(data)
    lu, piv = sl.lu_factor(_pivoted(data, stack, n, dtype))
    trans = data.draw(st.sampled_from([0, 1, 2]), label="trans")
    return (lu, piv, _rhs(data, stack, n, dtype)), {"trans": trans, "check_finite": True}


SAMPLES = {
    sp.solve_triangular_p: Sample(_solve_triangular),
    sp.trmm_p: Sample(_trmm),
    sp.cholesky_p: Sample(_factor, hermitian=(0,)),
    sp.cho_factor_p: Sample(_factor, hermitian=(0,)),
    sp.cho_solve_p: Sample(_cho_solve),
    sp.cholesky_vjp_p: Sample(_cholesky_vjp),
    sp.lu_factor_p: Sample(_lu_factor, fd_outputs=(0,)),
    sp.lu_solve_p: Sample(_lu_solve),
}
