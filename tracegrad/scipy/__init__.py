"""`tracegrad.scipy` (`tsp`): SciPy's functions, traceable and differentiable, as `jax.scipy`.

`special` (SciPy's special functions, computed by SciPy itself), `stats` (distributions with
SciPy's signatures, differentiable in the data and their continuous parameters),
`optimize.minimize` (SciPy's, with tracegrad's gradients) and `linalg` (triangular solves and
Cholesky and LU factorisations whose backward passes reuse the factor). SciPy is an optional extra:
`pip install 'tracegrad[scipy]'`.
"""

try:
    import scipy  # noqa: F401 - only to say what is missing
except ImportError as err:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "tracegrad.scipy needs SciPy, an optional extra of tracegrad: install it with "
        "pip install 'tracegrad[scipy]' (or pip install scipy)"
    ) from err

from tracegrad.scipy import integrate, linalg, optimize, special, stats

__all__ = ["integrate", "linalg", "optimize", "special", "stats"]
