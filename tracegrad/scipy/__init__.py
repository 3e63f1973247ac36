"""`tracegrad.scipy` (`tsp`): SciPy's functions, traceable and differentiable, as `jax.scipy`.

`special` (SciPy's special functions, computed by SciPy itself), `stats` (distributions with
SciPy's signatures, differentiable in the data and their continuous parameters),
`optimize.minimize` (SciPy's, with tracegrad's gradients), `linalg` (triangular solves,
Cholesky and LU factorisations whose backward passes reuse the factor, matrix functions and
Sylvester-type solvers), `signal` (SciPy's convolutions, and HIPS autograd's `convolve` as
`autograd_convolve`) and `integrate` (`odeint` and `solve_ivp`, differentiated by integrating
again: the adjoint method; the quadrature of sampled data). SciPy is an optional extra:
`pip install 'tracegrad[scipy]'`.
"""

try:
    import scipy  # noqa: F401 - only to say what is missing
except ImportError as err:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "tracegrad.scipy needs SciPy, an optional extra of tracegrad: install it with "
        "pip install 'tracegrad[scipy]' (or pip install scipy)"
    ) from err

from tracegrad.scipy import integrate, linalg, optimize, signal, special, stats

__all__ = ["integrate", "linalg", "optimize", "signal", "special", "stats"]
