"""`tracegrad.numpy` (`tnp`): NumPy's functions, traceable and differentiable.

The same functions that `np.*` calls on tracers reach (through `__array_function__` and
`__array_ufunc__`), usable directly like `jax.numpy`. On plain arrays outside any trace they
run NumPy itself and return the same values, bit for bit.
"""

# ruff: noqa: F401, F403
from tracegrad.numpy import (
    _at,
    _calculus,
    _counting,
    _creation,
    _dtypes,
    _editing,
    _elementwise,
    _indexing,
    _logic,
    _nanfunctions,
    _products,
    _quantiles,
    _reductions,
    _shape,
    _sorting,
    _statistics,
    _unique,
)
from tracegrad.numpy._at import *
from tracegrad.numpy._calculus import *
from tracegrad.numpy._counting import *
from tracegrad.numpy._creation import *
from tracegrad.numpy._dtypes import *
from tracegrad.numpy._editing import *
from tracegrad.numpy._elementwise import *
from tracegrad.numpy._indexing import *
from tracegrad.numpy._logic import *
from tracegrad.numpy._nanfunctions import *
from tracegrad.numpy._products import *
from tracegrad.numpy._quantiles import *
from tracegrad.numpy._reductions import *
from tracegrad.numpy._shape import *
from tracegrad.numpy._sorting import *
from tracegrad.numpy._statistics import *
from tracegrad.numpy._unique import *

__all__ = (
    _elementwise.__all__
    + _reductions.__all__
    + _shape.__all__
    + _indexing.__all__
    + _products.__all__
    + _creation.__all__
    + _dtypes.__all__
    + _editing.__all__
    + _logic.__all__
    + _sorting.__all__
    + _calculus.__all__
    + _counting.__all__
    + _statistics.__all__
    + _nanfunctions.__all__
    + _quantiles.__all__
    + _unique.__all__
    + _at.__all__
)

# the submodules, as `np.linalg` and `np.fft` (after the rest: they build on it), and
# Tracer's direct operators and ndarray methods (tracegrad.numpy._operators)
from tracegrad.numpy import _operators, fft, linalg  # noqa: E402, F401
