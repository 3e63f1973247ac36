"""`tracegrad.numpy.linalg`: NumPy's `np.linalg`, traceable and differentiable in every mode.

`np.linalg.solve(t, y)` on a traced value arrives here (tracegrad.numpy._dispatch). The
functions that call LAPACK are primitives (tracegrad/primitives/linalg/, bound by
`_decompositions`); the ones NumPy writes in Python over those (norms, cond, matrix_rank,
matrix_power, multi_dot, tensorsolve, ...) are written the same way in `_norms` and
`_composites`, so every value is NumPy's bit for bit. docs/linalg.md says where a derivative
exists only under conditions and what tracegrad does there.
"""

# ruff: noqa: F403
from tracegrad.numpy.linalg import _composites, _decompositions, _norms
from tracegrad.numpy.linalg._composites import *
from tracegrad.numpy.linalg._decompositions import *
from tracegrad.numpy.linalg._norms import *

__all__ = _decompositions.__all__ + _norms.__all__ + _composites.__all__
