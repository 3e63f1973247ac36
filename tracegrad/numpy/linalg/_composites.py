"""`np.linalg`'s functions that NumPy writes in Python over other operations: matrix_power,
multi_dot, tensorsolve, tensorinv, and the array-API names (outer, cross, trace, diagonal,
matrix_transpose, tensordot, vecdot, matmul, svdvals).

Each repeats NumPy 2.4's sequence of calls (numpy/linalg/_linalg.py) with tracegrad
operations: matrix_power's binary decomposition with matmul, multi_dot's cheapest order of the
chain of dots, tensorsolve/tensorinv's reshapes around `solve`/`inv`. So the values are
NumPy's bit for bit and the derivatives come from the operations' rules. The array-API names
differ from their `np.*` namesakes only in what they accept (1-D operands for `outer`,
3-vectors for `cross`, the last two axes for `trace` and `diagonal`), checked here first.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from tracegrad.numpy import _indexing, _products, _reductions, _shape
from tracegrad.numpy._common import as_array, shape_of
from tracegrad.numpy.linalg._norms import _assert_stacked_square, _svdvals
from tracegrad.primitives import linalg as primitives

__all__ = [
    "matrix_power",
    "multi_dot",
    "tensorsolve",
    "tensorinv",
    "outer",
    "cross",
    "trace",
    "diagonal",
    "matrix_transpose",
    "tensordot",
    "vecdot",
    "matmul",
    "svdvals",
]

LinAlgError = np.linalg.LinAlgError


# -- matrix_power -------------------------------------------------------------------------------


def matrix_power(a, n):
    """`np.linalg.matrix_power`: `inv` first for n < 0, then NumPy's products: a, a @ a,
    (a @ a) @ a, and for |n| > 3 the binary decomposition (squares from the lowest bit up,
    multiplied into the result where a bit is set). n = 0 gives identities, a constant."""
    a = as_array(a)
    _assert_stacked_square(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        out = np.empty(shape_of(a), a.dtype)
        out[...] = np.eye(shape_of(a)[-2], dtype=a.dtype)
        return out
    if n < 0:
        a = primitives.inv(a)
        n = abs(n)
    if n == 1:
        return a
    if n == 2:
        return _products.matmul(a, a)
    if n == 3:
        return _products.matmul(_products.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else _products.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _products.matmul(result, z)
    return result


# -- multi_dot ----------------------------------------------------------------------------------


def multi_dot(arrays, *, out=None):
    """`np.linalg.multi_dot`: the chain of `dot`s in the order with the fewest scalar
    multiplications (NumPy's cost formula for three, its dynamic programme beyond), a 1-D first
    or last operand as a row or column."""
    if out is not None:
        raise NotImplementedError(
            "tracegrad.numpy.linalg.multi_dot: argument out= is not supported; drop it and "
            "use the returned value"
        )
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return _products.dot(arrays[0], arrays[1])
    arrays = [as_array(a) for a in arrays]
    ndim_first, ndim_last = arrays[0].ndim, arrays[-1].ndim
    if ndim_first == 1:
        arrays[0] = _shape.atleast_2d(arrays[0])
    if ndim_last == 1:
        arrays[-1] = _shape.transpose(_shape.atleast_2d(arrays[-1]))
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(
                f"{a.ndim}-dimensional array given. Array must be two-dimensional "
                "(multi_dot takes matrices, and a vector only first or last)"
            )
    if n == 3:
        result = _multi_dot_three(*arrays)
    else:
        result = _multi_dot(arrays, _chain_order(arrays), 0, n - 1)
    if ndim_first == 1 and ndim_last == 1:
        return result[0, 0]
    if ndim_first == 1 or ndim_last == 1:
        return _shape.ravel(result)
    return result


def _multi_dot_three(A, B, C):
    a0, a1b0 = shape_of(A)
    b1c0, c1 = shape_of(C)
    cost1 = a0 * b1c0 * (a1b0 + c1)  # (AB)C
    cost2 = a1b0 * c1 * (a0 + b1c0)  # A(BC)
    if cost1 < cost2:
        return _products.dot(_products.dot(A, B), C)
    return _products.dot(A, _products.dot(B, C))


def _chain_order(arrays):
    """NumPy's `_multi_dot_matrix_chain_order` (Cormen's dynamic programme): s[i][j] is where
    the product of arrays i..j splits. Costs are float64, as NumPy's table is."""
    n = len(arrays)
    p = [shape_of(a)[0] for a in arrays] + [shape_of(arrays[-1])[1]]
    m = [[0.0] * n for _ in range(n)]
    s = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            m[i][j] = math.inf
            for k in range(i, j):
                q = m[i][k] + m[k + 1][j] + float(p[i] * p[k + 1] * p[j + 1])
                if q < m[i][j]:
                    m[i][j] = q
                    s[i][j] = k
    return s


def _multi_dot(arrays, order, i, j):
    if i == j:
        return arrays[i]
    k = order[i][j]
    return _products.dot(_multi_dot(arrays, order, i, k), _multi_dot(arrays, order, k + 1, j))


# -- tensorsolve, tensorinv ---------------------------------------------------------------------


def tensorsolve(a, b, axes=None):
    """`np.linalg.tensorsolve`: `a`'s `axes` moved to the end, then one `solve` of the
    flattened square system, reshaped to the unknown's shape."""
    a, b = as_array(a), as_array(b)
    an = a.ndim
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = _shape.transpose(a, allaxes)
    oldshape = shape_of(a)[-(an - b.ndim) :]
    prod = math.prod(oldshape)
    if math.prod(shape_of(a)) != prod**2:
        raise LinAlgError(
            "Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
            f"prod(a.shape[:b.ndim]); got a of shape {shape_of(a)} (after axes=) and b of "
            f"shape {shape_of(b)}"
        )
    res = primitives.solve(_shape.reshape(a, (prod, prod)), _shape.ravel(b))
    return _shape.reshape(res, oldshape)


def tensorinv(a, ind=2):
    """`np.linalg.tensorinv`: the inverse of `a` seen as a matrix of its first `ind` axes by
    the rest, reshaped to the rest's shape followed by the first `ind` axes' shape."""
    a = as_array(a)
    oldshape = shape_of(a)
    if ind > 0:
        invshape = oldshape[ind:] + oldshape[:ind]
        prod = math.prod(oldshape[ind:])
    else:
        raise ValueError(f"Invalid ind argument: ind must be a positive integer, got {ind!r}.")
    ia = primitives.inv(_shape.reshape(a, (prod, -1)))
    return _shape.reshape(ia, invshape)


# -- the array-API names ------------------------------------------------------------------------


def outer(x1, x2, /):
    """`np.linalg.outer`: `np.outer` of two 1-D arrays (NumPy refuses other shapes here)."""
    x1, x2 = as_array(x1), as_array(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(
            "Input arrays must be one-dimensional, but they are "
            f"x1.ndim={x1.ndim} and x2.ndim={x2.ndim}."
        )
    return _products.outer(x1, x2)


def cross(x1, x2, /, *, axis=-1):
    """`np.linalg.cross`: `np.cross` of 3-vectors along `axis` only (no 2-vectors)."""
    x1, x2 = as_array(x1), as_array(x2)
    if shape_of(x1)[axis] != 3 or shape_of(x2)[axis] != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
            f"{shape_of(x1)[axis]} and {shape_of(x2)[axis]} dimensional instead."
        )
    return _products.cross(x1, x2, axis=axis)


def diagonal(x, /, *, offset=0):
    """`np.linalg.diagonal`: the diagonals of the last two axes (in the memory order of NumPy's
    view, which `tnp.diagonal` keeps, so a reduction over them adds as NumPy's does)."""
    return _indexing.diagonal(as_array(x), offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    """`np.linalg.trace`: the sums of the diagonals of the last two axes, in `dtype` (NumPy
    sums the diagonal view with it, in its C order)."""
    return _reductions.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def matrix_transpose(x, /):
    """`np.linalg.matrix_transpose`: the last two axes swapped."""
    return _shape.matrix_transpose(as_array(x))


def tensordot(x1, x2, /, *, axes=2):
    """`np.linalg.tensordot`: `np.tensordot` with `axes` keyword-only."""
    return _products.tensordot(x1, x2, axes)


def vecdot(x1, x2, /, *, axis=-1):
    """`np.linalg.vecdot`: `np.vecdot` (the first operand conjugated) along `axis`."""
    return _products.vecdot(x1, x2, axis=axis)


def matmul(x1, x2, /):
    """`np.linalg.matmul`: `np.matmul` with positional operands only."""
    return _products.matmul(x1, x2)


def svdvals(x, /):
    """`np.linalg.svdvals`: the singular values, `svd(x, compute_uv=False)`."""
    return _svdvals(as_array(x))
