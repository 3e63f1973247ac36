"""SAMPLES rows for SciPy's matrix functions and Sylvester-type solvers
(tracegrad/primitives/scipy_matrix_functions.py), present with SciPy.

The matrices are near a multiple of the identity: for expm of either sign, for sqrtm and logm
of a positive one (eigenvalues near 1.5, far from the negative real axis, so the root and the
logarithm are real and smooth; logm in float64 only), for solve_sylvester two positive ones
(the eigenvalue sums never near zero), for solve_continuous_lyapunov either sign.
solve_banded's band has a dominant main diagonal; its corners, which SciPy never reads, hold
values too (their derivative is zero). Real dtypes only: the rules refuse complex matrices.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.decompositions import _n, _near_identity, _noise, _stack
from tests.primitives.samples.row import Sample
from tracegrad.primitives import scipy_matrix_functions as mf


def _positive(data, stack, n, dtype):
    return (1.5 * np.eye(n) + _noise(data, stack + (n, n), 0.4 / n)).astype(dtype)


def _one(data, dtype):
    return (_near_identity(data, _stack(data), _n(data), dtype),), {}


def _positive_one(data, dtype):
    return (_positive(data, _stack(data), _n(data), dtype),), {}


def _logm(data, dtype):
    # float64 for every row: SciPy's float32 logm computes in float64 and returns complex128
    # wherever float32 rounding leaves imaginary parts above its float64 tolerance (most
    # matrices), which a trace refuses (a dtype fixed before the value is known)
    return _positive_one(data, np.float64)


def _expm_frechet(data, dtype):
    stack, n = _stack(data), _n(data)
    a = _near_identity(data, stack, n, dtype)
    return (a, S.array(data, stack + (n, n), dtype)), {"check_finite": True}


def _sylvester(data, dtype):
    stack, n = _stack(data), _n(data)
    m = data.draw(st.integers(1, 3), label="m")
    a, b = _positive(data, stack, n, dtype), _positive(data, stack, m, dtype)
    return (a, b, S.array(data, stack + (n, m), dtype)), {}


def _lyapunov(data, dtype):
    stack, n = _stack(data), _n(data)
    return (_near_identity(data, stack, n, dtype), S.array(data, stack + (n, n), dtype)), {}


def _banded(data, dtype):
    n = _n(data, 1, 5)
    nlower = data.draw(st.integers(0, 2), label="l")
    nupper = data.draw(st.integers(0, 2), label="u")
    stack = data.draw(st.sampled_from([(), (2,)]), label="stack")
    ab = S.array(data, stack + (nlower + nupper + 1, n), dtype, -0.4, 0.4)
    ab[..., nupper, :] += 3.0
    if not stack and data.draw(st.booleans(), label="1-D b"):
        b = S.array(data, (n,), dtype)
    else:
        b = S.array(data, stack + (n, data.draw(st.integers(1, 3), label="k")), dtype)
    return (ab, b), {"nlower": nlower, "nupper": nupper, "check_finite": True}


SAMPLES = {
    mf.expm_p: Sample(_one),
    mf.expm_frechet_p: Sample(_expm_frechet),
    mf.sqrtm_p: Sample(_positive_one),
    mf.logm_p: Sample(_logm),
    mf.solve_sylvester_p: Sample(_sylvester),
    mf.lyapunov_p: Sample(_lyapunov),
    mf.solve_banded_p: Sample(_banded),
}
