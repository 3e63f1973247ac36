"""Products with NumPy's signatures: matmul, dot, tensordot, einsum, inner, outer, vdot,
kron, cross.

matmul, dot, tensordot and einsum are primitives; inner, outer, vdot, kron and cross are
built from them (and from reshape, indexing and elementwise ops) the way NumPy builds them,
so their values are NumPy's bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.core import Boxed, bind
from tracegrad.numpy._common import asarray_or_tracer, shape_of
from tracegrad.numpy._shape import moveaxis, stack
from tracegrad.primitives import einsum as es
from tracegrad.primitives import elementwise, products, views

__all__ = ["matmul", "dot", "tensordot", "einsum", "inner", "outer", "vdot", "kron", "cross"]


def _strong(x):
    # NumPy's products convert their inputs with asarray: a Python scalar is a strong 0-d array.
    x = asarray_or_tracer(x)
    return x if isinstance(x, Boxed | np.ndarray) else np.asarray(x)


def _no_extras(fname: str, **kwargs):
    bad = sorted(k for k, v in kwargs.items() if v is not None)
    if bad:
        raise NotImplementedError(
            f"tracegrad.numpy.{fname}: argument {bad[0]}= is not supported; drop it and use "
            "the returned value (or cast it with astype)"
        )


def matmul(x1, x2, /, out=None, *, dtype=None):
    """`np.matmul` (`x1 @ x2`)."""
    _no_extras("matmul", out=out, dtype=dtype)
    return products.matmul(asarray_or_tracer(x1), asarray_or_tracer(x2))


def dot(a, b, out=None):
    """`np.dot`."""
    _no_extras("dot", out=out)
    return products.dot(asarray_or_tracer(a), asarray_or_tracer(b))


def tensordot(a, b, axes=2):
    """`np.tensordot`; `axes` is an int or a pair of axes (ints or sequences)."""
    return products.tensordot(asarray_or_tracer(a), asarray_or_tracer(b), axes)


def _sublist_subscripts(args):
    # np.einsum(op0, sublist0, op1, sublist1, ..., [sublistout]); labels as NumPy maps them:
    # 0..25 -> 'A'..'Z', 26..51 -> 'a'..'z', Ellipsis -> '...'
    def term(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int | np.integer) and 0 <= int(s) < 52:
                out.append(es._LETTERS[int(s)])
            else:
                raise ValueError(
                    f"einsum: subscript {s!r} in a sublist must be an int in [0, 52) or Ellipsis"
                )
        return "".join(out)

    ops = list(args[0::2])
    subs = list(args[1::2])
    out = None
    if len(ops) > len(subs):  # an odd count: the last entry is the output sublist
        out = ops.pop()
    spec = ",".join(term(s) for s in subs)
    if out is not None:
        spec += "->" + term(out)
    return spec, ops


def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """`np.einsum` with NumPy's default `optimize=False` (so its values are NumPy's bits).

    Subscripts as a string (`'ij,jk->ik'`, implicit output and `'...'` included) or in the
    interleaved sublist form.
    """
    if optimize is not False:
        raise NotImplementedError(
            f"tracegrad.numpy.einsum: optimize={optimize!r} is not supported (only NumPy's "
            "default optimize=False, whose results tracegrad reproduces bit for bit); chain "
            "einsum calls to choose a contraction order"
        )
    _no_extras("einsum", out=out, dtype=dtype)
    if order != "K" or casting != "safe":
        raise NotImplementedError("tracegrad.numpy.einsum: order= and casting= are not supported")
    if not operands:
        raise ValueError("einsum: no subscripts given")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
    else:
        subscripts, ops = _sublist_subscripts(operands)
    return es.einsum(subscripts, *(asarray_or_tracer(x) for x in ops))


def inner(a, b, /):
    """`np.inner`: NumPy swaps b's last two axes and calls dot; so does this."""
    a, b = _strong(a), _strong(b)
    sa, sb = shape_of(a), shape_of(b)
    if sa and sb and sa[-1] != sb[-1]:
        raise ValueError(
            f"inner: shapes {sa} and {sb} do not align: the last axis of the first ({sa[-1]}) "
            f"must equal the last axis of the second ({sb[-1]})"
        )
    if len(sa) >= 1 and len(sb) >= 2:
        # NumPy converts both to the common dtype before transposing: so do we, so that
        # dot sees the same memory layout (and BLAS call) as np.inner's
        common = np.result_type(a.dtype, b.dtype)
        a = a if a.dtype == common else elementwise.astype(a, common)
        b = b if b.dtype == common else elementwise.astype(b, common)
        n = len(sb)
        b = views.transpose(b, tuple(range(n - 2)) + (n - 1, n - 2))
    return products.dot(a, b)


def outer(a, b, out=None):
    """`np.outer`: `a.ravel()[:, None] * b.ravel()[None, :]`."""
    _no_extras("outer", out=out)
    a, b = _strong(a), _strong(b)
    a = views.reshape(a, (math.prod(shape_of(a)), 1))
    b = views.reshape(b, (1, math.prod(shape_of(b))))
    return _multiply(a, b)


def vdot(a, b, /):
    """`np.vdot` of real arrays: dot of the flattened operands (NumPy does the same)."""
    a, b = _strong(a), _strong(b)
    na, nb = math.prod(shape_of(a)), math.prod(shape_of(b))
    if na != nb:
        raise ValueError(
            f"vdot: shapes {shape_of(a)} and {shape_of(b)} have {na} and {nb} elements; "
            "vdot needs the same number of elements in both"
        )
    for x in (a, b):
        if np.dtype(x.dtype).kind == "c":
            raise NotImplementedError("tracegrad.numpy.vdot: complex operands are not supported")
    return products.dot(_flat(a), _flat(b))


def _multiply(a, b):
    return bind(elementwise.multiply_p, a, b)


def _flat(x):
    return views.reshape(x, (math.prod(shape_of(x)),))


def kron(a, b):
    """`np.kron`, built as NumPy builds it: expand both, multiply, reshape."""
    b = _strong(b)
    a = _strong(a)
    na, nb = len(shape_of(a)), len(shape_of(b))
    if na < nb:  # np.array(a, ndmin=b.ndim)
        a = views.reshape(a, (1,) * (nb - na) + shape_of(a))
        na = nb
    if na == 0 or nb == 0:
        return _multiply(a, b)
    nd = max(na, nb)
    as_ = (1,) * (nd - na) + shape_of(a)
    bs = (1,) * (nd - nb) + shape_of(b)
    # interleave: a's axes at even positions, b's at odd ones
    a_arr = views.reshape(a, tuple(d for s in as_ for d in (s, 1)))
    b_arr = views.reshape(b, tuple(d for s in bs for d in (1, s)))
    return views.reshape(_multiply(a_arr, b_arr), tuple(x * y for x, y in zip(as_, bs)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """`np.cross` of 3-vectors, computed as NumPy computes it (component products, then
    differences, stacked and moved to `axisc`)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _strong(a), _strong(b)
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise ValueError(
            f"cross: shapes {sa} and {sb}: both operands need at least one axis (the vectors)"
        )
    a = moveaxis(a, axisa, -1)
    b = moveaxis(b, axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(
            f"cross: shapes {sa} and {sb}: the vector axes have lengths {na} and {nb}, but a "
            "cross product needs vectors of length 3"
        )
    if na == 2 or nb == 2:
        raise NotImplementedError(
            "tracegrad.numpy.cross: 2-element vectors (deprecated in NumPy 2.0) are not "
            "supported; append a zero third component"
        )
    common = np.promote_types(a.dtype, b.dtype)
    a = a if a.dtype == common else elementwise.astype(a, common)
    b = b if b.dtype == common else elementwise.astype(b, common)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    sub = elementwise.subtract_p
    cp = stack(
        [
            bind(sub, _multiply(a1, b2), _multiply(a2, b1)),
            bind(sub, _multiply(a2, b0), _multiply(a0, b2)),
            bind(sub, _multiply(a0, b1), _multiply(a1, b0)),
        ],
        axis=-1,
    )
    return moveaxis(cp, -1, axisc)
