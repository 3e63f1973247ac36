"""Covariance and correlation with NumPy's signatures: cov and corrcoef.

Both are NumPy's own compositions (numpy/lib/_function_base_impl.py): `average` with the
weights, the deviations, `dot` with the conjugated transpose (a copy, so BLAS runs gemm as in
NumPy, never syrk), the scaling by 1/fact in float64; so the bits match and the derivatives (in
the data and in `aweights`) are those of the composition. NumPy's checks of the weights' values
run where the values are known (outside a trace, or concrete tracing) and are skipped under jit.
"""

from __future__ import annotations

import warnings

import numpy as np

from tracegrad.core import Boxed, bind
from tracegrad.ir.types import dtype_of
from tracegrad.numpy._common import as_array, cast, known_value, ndim_of, shape_of
from tracegrad.numpy._indexing import diagonal
from tracegrad.numpy._products import dot
from tracegrad.numpy._reductions import average
from tracegrad.numpy._reductions import sum as sum_
from tracegrad.numpy._shape import concatenate, reshape, squeeze, transpose
from tracegrad.primitives import elementwise as ew

__all__ = ["cov", "corrcoef"]

_F8 = np.dtype(np.float64)


def _ndmin2(a, dtype):
    """`np.array(a, ndmin=2, dtype=dtype)`: leading axes of length 1 added."""
    a = cast(a, dtype)
    nd = ndim_of(a)
    return reshape(a, (1,) * (2 - nd) + shape_of(a)) if nd < 2 else a


def _weights(w, name: str, n: int):
    """fweights / aweights as float64, with NumPy's checks (its messages and exception types)."""
    w = cast(as_array(w), _F8)
    value = known_value(w)
    if name == "fweights" and value is not None and not np.all(value == np.around(value)):
        raise TypeError("fweights must be integer")
    if ndim_of(w) > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if shape_of(w)[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if value is not None and np.any(value < 0):
        raise ValueError(f"{name} cannot be negative")
    return w


def _normalization(X, w, aweights, w_sum, ddof):
    """NumPy's `fact`, clamped to 0.0 (with its warning) where it is not positive."""
    if w is None:
        fact = shape_of(X)[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * sum_(w * aweights) / w_sum
    if not isinstance(fact, Boxed):
        if fact <= 0:
            warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
            fact = 0.0
        return fact
    known = known_value(fact)
    if known is not None and known <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
    return ew.where(bind(ew.less_equal_p, fact, 0), 0.0, fact)


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """`np.cov`: differentiable in m, y and aweights (fweights are counts)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = as_array(m)
    if ndim_of(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = as_array(y)
        if ndim_of(y) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtypes = [dtype_of(m)] + ([] if y is None else [dtype_of(y)])
        dtype = np.result_type(*dtypes, np.float64)
    X = _ndmin2(m, dtype)
    if not rowvar and ndim_of(m) != 1:
        X = transpose(X)
    if shape_of(X)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = _ndmin2(y, dtype)
        if not rowvar and shape_of(y)[0] != 1:
            y = transpose(y)
        X = concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        w = fweights = _weights(fweights, "fweights", shape_of(X)[1])
    if aweights is not None:
        aweights = _weights(aweights, "aweights", shape_of(X)[1])
        w = aweights if w is None else w * aweights
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    fact = _normalization(X, w, aweights, w_sum[0], ddof)
    X = cast(X - avg[:, None], dtype_of(X))  # NumPy subtracts in place: X keeps its dtype
    X_T = transpose(X) if w is None else transpose(X * w)
    c = dot(X, ew.conjugate(X_T))
    c = cast(c * np.true_divide(1, fact), dtype_of(c))  # in place, as NumPy's `c *= ...`
    return squeeze(c)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """`np.corrcoef`: cov divided by the outer product of the standard deviations, clipped to
    [-1, 1]. Complex inputs are refused: NumPy clips their real and imaginary parts in place,
    which no composition here reproduces exactly."""
    given = [np.dtype(dtype)] if dtype is not None else []
    given += [dtype_of(as_array(a)) for a in (x, y) if a is not None]
    if any(d.kind == "c" for d in given):
        raise NotImplementedError(
            "tracegrad.numpy.corrcoef: complex inputs are not supported yet (NumPy clips the "
            "real and imaginary parts separately); use cov and divide by the deviations"
        )
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim_of(c) == 0:  # a single variable: nan where the variance is nan, inf or 0, else 1
        return c / c
    stddev = ew.sqrt(diagonal(c))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    return ew.clip(c, -1, 1)
