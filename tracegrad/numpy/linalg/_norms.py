"""`np.linalg`'s norms, `cond` and `matrix_rank`, written as NumPy 2.4 writes them
(numpy/linalg/_linalg.py) with tracegrad operations: the same calls in the same order and
dtypes, so the values are NumPy's bit for bit, and the derivatives come from the operations'
rules (the singular values' from `svd`'s, the inverse's from `inv`'s).

One decision is ours: a norm at zero has the finite subgradient 0, as in PyTorch (JAX and HIPS
autograd give NaN there, from `sqrt`'s infinite slope times a zero). The square root of the
2-norm and Frobenius norm and the `1/p` power of the p-norms go through JAX's double `where`
(`_root`), which leaves every value's bits unchanged and gives zero derivatives of every order
at a zero sum; `|x|**p` with `0 < p < 2` gets the same at zero elements, as PyTorch masks them.

NumPy reads an array in memory order (`ravel(order='K')`) for the default norm over all
axes; traced values are read in C order, so for a non-C-contiguous argument the last bits of
that one case may differ from NumPy's (the value of every other case does not depend on it).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from tracegrad.core import Tracer
from tracegrad.numpy import _elementwise as ew
from tracegrad.numpy import _products, _reductions, _shape, _sorting
from tracegrad.numpy._common import as_array, shape_of
from tracegrad.primitives import linalg as primitives

__all__ = ["norm", "vector_norm", "matrix_norm", "cond", "matrix_rank"]

LinAlgError = np.linalg.LinAlgError
_inf = np.inf


def _dtype(x) -> np.dtype:
    return np.dtype(x.dtype)


def _is_complex(x) -> bool:
    return _dtype(x).kind == "c"


def _abs2(x):
    """`(x.conj() * x).real`: for a real x the same values without the two extra calls."""
    if not _is_complex(x):
        return ew.multiply(x, x)
    return ew.real(ew.multiply(ew.conjugate(x), x))


def _root(s, r):
    """`s ** r` for `s >= 0` (`sqrt(s)` for r = 1/2), whose derivatives at s == 0 are all 0.

    JAX's double where: the power only ever sees s where s != 0 (and 1 elsewhere), so its
    infinite slope at 0 never meets the zero cotangent that the outer where sends there. The
    values are the power's own: `where` picks them unchanged, and 0 where s == 0, which is what
    `0 ** r` is for r > 0."""
    zero = ew.equal(s, 0)
    safe = ew.where(zero, 1, s)
    return _scalar(ew.where(zero, 0, ew.sqrt(safe) if r == 0.5 else ew.power(safe, r)))


def _scalar(r):
    """A 0-d NumPy result as the NumPy scalar that NumPy's arithmetic returns (`where` gives a
    0-d array); traced values as they are."""
    return r[()] if isinstance(r, np.ndarray) and r.ndim == 0 else r


def _svdvals(x, hermitian=False):
    """The singular values (the svd primitive returns them as a 1-tuple)."""
    (s,) = primitives.svd(x, compute_uv=False, hermitian=hermitian)
    return s


# -- norm ---------------------------------------------------------------------------------------


def norm(x, ord=None, axis=None, keepdims=False):
    """`np.linalg.norm`: every vector order (inf, -inf, 0, 1, 2 and any other number) and every
    matrix order (2, -2, 1, -1, inf, -inf, 'fro', 'nuc'), with NumPy's errors; the derivative
    at a zero norm is 0 (see the module docstring)."""
    x = as_array(x)
    if _dtype(x).kind not in "fc":
        x = ew.astype(x, np.float64)

    # NumPy's fast path: the Euclidean or Frobenius norm over the whole array, from a dot
    if axis is None:
        ndim = x.ndim
        if ord is None or (ord in ("f", "fro") and ndim == 2) or (ord == 2 and ndim == 1):
            ret = _root(_squared_norm(x), 0.5)
            if keepdims:
                ret = _shape.reshape(ret, ndim * [1])
            return ret

    nd = x.ndim
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = int(axis)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
        axis = (axis,)

    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _squared_norm(x):
    """`x.dot(x)` over the ravelled array, the real and imaginary parts apart when complex."""
    if isinstance(x, np.ndarray):
        x = np.ravel(x, order="K")  # memory order, as NumPy (see the module docstring)
    else:
        x = _shape.ravel(x)
    if _is_complex(x):
        re, im = ew.real(x), ew.imag(x)
        return ew.add(_products.dot(re, re), _products.dot(im, im))
    return _products.dot(x, x)


def _vector_norm(x, ord, axis, keepdims):
    if ord == _inf:
        return _reductions.max(ew.absolute(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -_inf:
        return _reductions.min(ew.absolute(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        nonzero = ew.astype(ew.not_equal(x, 0), ew.real(x).dtype if _is_complex(x) else x.dtype)
        return _reductions.sum(nonzero, axis=axis, keepdims=keepdims)
    if ord == 1:
        return _reductions.sum(ew.absolute(x), axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        s = _reductions.sum(_abs2(x), axis=axis, keepdims=keepdims)
        return _root(s, 0.5)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    absx = _power_in_place(ew.absolute(x), ord)
    ret = _reductions.sum(absx, axis=axis, keepdims=keepdims)
    # `ret **= reciprocal(ord, dtype=ret.dtype)`: the exponent rounded to ret's dtype
    r = np.reciprocal(ord, dtype=ret.dtype)
    return _root(ret, r) if r > 0 else ew.power(ret, r)


def _power_in_place(absx, p):
    """`absx **= p`: the power in the promoted dtype, written back in absx's (NumPy's in-place
    ufunc casts 'same_kind'); `0 < p < 2` through `_root`, whose derivative at 0 is 0 where
    `p * |x|**(p - 1)` would be infinite (PyTorch's masked subgradient)."""
    have = _dtype(absx)
    if not np.can_cast(np.result_type(np.zeros((), have), p), have, "same_kind"):
        np.power(np.ones((), have), p, out=np.ones((), have))  # NumPy's own casting error
    out = _root(absx, p) if 0 < p < 2 else ew.power(absx, p)
    return out if _dtype(out) == have else ew.astype(out, have)


def _matrix_norm(x, ord, axis, keepdims):
    nd = x.ndim
    row_axis, col_axis = axis
    row_axis = normalize_axis_index(row_axis, nd)
    col_axis = normalize_axis_index(col_axis, nd)
    if row_axis == col_axis:
        raise ValueError("Duplicate axes given.")
    if ord == 2:
        ret = _reductions.max(_svd_norm_values(x, row_axis, col_axis), axis=-1, initial=0)
    elif ord == -2:
        ret = _reductions.min(_svd_norm_values(x, row_axis, col_axis), axis=-1)
    elif ord in (1, -1):
        col = col_axis - 1 if col_axis > row_axis else col_axis
        sums = _reductions.sum(ew.absolute(x), axis=row_axis)
        ret = _extreme(sums, col, ord > 0)
    elif ord in (_inf, -_inf):
        row = row_axis - 1 if row_axis > col_axis else row_axis
        sums = _reductions.sum(ew.absolute(x), axis=col_axis)
        ret = _extreme(sums, row, ord > 0)
    elif ord in [None, "fro", "f"]:
        ret = _root(_reductions.sum(_abs2(x), axis=axis), 0.5)
    elif ord == "nuc":
        ret = _reductions.sum(_svd_norm_values(x, row_axis, col_axis), axis=-1, initial=0)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        ret_shape = list(x.shape)
        ret_shape[axis[0]] = 1
        ret_shape[axis[1]] = 1
        ret = _shape.reshape(ret, ret_shape)
    return ret


def _extreme(x, axis, largest: bool):
    """`x.max(axis=axis, initial=0)` or `x.min(axis=axis)`, as NumPy's matrix norms reduce."""
    if largest:
        return _reductions.max(x, axis=axis, initial=0)
    return _reductions.min(x, axis=axis)


def _svd_norm_values(x, row_axis, col_axis):
    """The singular values of the matrices on (row_axis, col_axis) (`_multi_svd_norm`)."""
    return _svdvals(_shape.moveaxis(x, (row_axis, col_axis), (-2, -1)))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """`np.linalg.matrix_norm`: `norm` over the last two axes."""
    return norm(as_array(x), axis=(-2, -1), keepdims=keepdims, ord=ord)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """`np.linalg.vector_norm`: any number of axes, moved to the front and flattened into one,
    then `norm` over it (NumPy's reshape, so its order of the elements)."""
    x = as_array(x)
    shape = list(x.shape)
    if axis is None:
        x = _shape.ravel(x)
        _axis = 0
    elif isinstance(axis, tuple):
        normalized = normalize_axis_tuple(axis, x.ndim)
        rest = tuple(i for i in range(x.ndim) if i not in normalized)
        x = _shape.reshape(
            _shape.transpose(x, axis + rest),
            (math.prod([x.shape[i] for i in axis]), *[x.shape[i] for i in rest]),
        )
        _axis = 0
    else:
        _axis = axis
    res = norm(x, axis=_axis, ord=ord)
    if keepdims:
        _axis = normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape))
        for i in _axis:
            shape[i] = 1
        res = _shape.reshape(res, tuple(shape))
    return res


# -- cond, matrix_rank --------------------------------------------------------------------------


def cond(x, p=None):
    """`np.linalg.cond`: the ratio of extreme singular values for p in (None, 2, -2), else
    `norm(x, p) * norm(inv(x), p)` with the inverse in double precision as NumPy computes it;
    NaN results become inf unless x has NaNs (NumPy's convention for singular matrices).

    NumPy inverts with its errors ignored, so a singular matrix gives inf for every p; so does
    the `inv_or_nan` primitive used here (the inverse as NumPy's cond computes it)."""
    x = as_array(x)
    shape = shape_of(x)
    if math.prod(shape) == 0 and math.prod(shape[-2:]) == 0:
        raise LinAlgError("cond is not defined on empty arrays")
    if p is None or p in {2, -2}:
        s = _svdvals(x)
        first, last = s[..., 0], s[..., -1]
        r = _quiet_divide(last, first) if p == -2 else _quiet_divide(first, last)
    else:
        _assert_stacked_square(x)
        single = _dtype(x) in (np.float32, np.complex64)
        invx = primitives.inv_or_nan(x)
        r = ew.multiply(norm(x, p, axis=(-2, -1)), norm(invx, p, axis=(-2, -1)))
        r = ew.astype(r, np.float32) if single else r
    nan_mask = ew.logical_and(
        ew.isnan(r), ew.logical_not(_reductions.any(ew.isnan(x), axis=(-2, -1)))
    )
    return _scalar(ew.where(nan_mask, np.asarray(_inf, _dtype(r)), r))


def _quiet_divide(num, den):
    """`num / den` for singular values, as NumPy divides them under `errstate(all='ignore')`
    (inf for a positive numerator over 0, NaN for 0 / 0 or a NaN) but with no division by zero
    left in the graph, whose warning a traced program run later would give."""
    zero = ew.equal(den, 0)
    at_zero = ew.where(ew.greater(num, 0), np.asarray(_inf, _dtype(num)), np.nan)
    return ew.where(zero, at_zero, ew.divide(num, ew.where(zero, 1, den)))


def _assert_stacked_square(x):
    shape = shape_of(x)
    if len(shape) < 2:
        raise LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    if shape[-2] != shape[-1]:
        raise LinAlgError("Last 2 dimensions of the array must be square")


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """`np.linalg.matrix_rank`: the count of singular values above the tolerance, an integer
    with no derivative. For fewer than two dimensions NumPy returns a Python int; a traced
    argument gives a traced intp 0-d array."""
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = as_array(A)
    if A.ndim < 2:
        if not isinstance(A, Tracer):
            return int(not np.all(A == 0))
        return ew.astype(_reductions.any(ew.not_equal(A, 0)), np.intp)
    S = _svdvals(A, hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(A.shape[-2:]) * np.finfo(S.dtype).eps
        else:
            rtol = _shape.expand_dims(as_array(rtol), -1)
        tol = ew.multiply(_reductions.max(S, axis=-1, keepdims=True, initial=0), rtol)
    else:
        tol = _shape.expand_dims(as_array(tol), -1)
    return _sorting.count_nonzero(ew.greater(S, tol), axis=-1)
