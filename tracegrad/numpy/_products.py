"""Products with NumPy's signatures: matmul, dot, tensordot, einsum, vecdot, matvec, vecmat,
inner, outer, vdot, kron, cross.

matmul, dot, tensordot, einsum and the gufuncs vecdot, matvec and vecmat are primitives
(the gufuncs' `axis=`/`axes=` move their core axes last, as views, so NumPy's loops see the
same strides); inner, outer, vdot, kron and cross are built from them (and from reshape,
indexing and elementwise ops) the way NumPy builds them, so their values are NumPy's bit
for bit.
"""

from __future__ import annotations

import math
import operator
import string

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.types import dtype_of
from tracegrad.numpy._common import as_array, asarray_or_tracer, shape_of
from tracegrad.numpy._shape import expand_dims, moveaxis, stack
from tracegrad.primitives import einsum as es
from tracegrad.primitives import elementwise, products, views

__all__ = [
    "matmul",
    "dot",
    "tensordot",
    "einsum",
    "vecdot",
    "matvec",
    "vecmat",
    "inner",
    "outer",
    "vdot",
    "kron",
    "cross",
]


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


matmul.primitive = products.matmul_p  # all it binds: Tracer's `@` binds it directly


def dot(a, b, out=None):
    """`np.dot`."""
    _no_extras("dot", out=out)
    return products.dot(asarray_or_tracer(a), asarray_or_tracer(b))


def tensordot(a, b, axes=2):
    """`np.tensordot`; `axes` is an int or a pair of axes (ints or sequences)."""
    return products.tensordot(asarray_or_tracer(a), asarray_or_tracer(b), axes)


def _sublist_subscripts(args, letters):
    # np.einsum(op0, sublist0, op1, sublist1, ..., [sublistout]), labels as NumPy maps them:
    # `letters[i]` for int i (c_einsum: 'A'..'Z' then 'a'..'z'; with optimize, NumPy's Python
    # parser: 'a'..'z' then 'A'..'Z'), Ellipsis -> '...'
    def term(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int | np.integer) and 0 <= int(s) < 52:
                out.append(letters[int(s)])
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


_PYTHON_LETTERS = string.ascii_lowercase + string.ascii_uppercase  # einsumfunc.einsum_symbols


def _einsum_dtype(ops, dtype, casting):
    """The dtype= argument, checked as NumPy checks it: every operand cast with `casting`."""
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(
            f"einsum: casting must be one of 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', "
            f"got {casting!r}"
        )
    if dtype is None:
        return None
    dtype = np.dtype(dtype)
    for i, x in enumerate(ops):
        have = dtype_of(x)
        if not np.can_cast(have, dtype, casting):
            raise TypeError(
                f"einsum: cannot cast operand {i} from dtype('{have}') to dtype('{dtype}') "
                f"according to the rule '{casting}'"
            )
    return dtype


def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """`np.einsum`, with NumPy's bits for each `optimize` (False, True, 'greedy', 'optimal',
    a (name, memory_limit) pair or an `['einsum_path', ...]` list: the path is resolved from
    the shapes and followed exactly as NumPy follows it) and for `dtype=`/`casting=`.

    Subscripts as a string (`'ij,jk->ik'`, implicit output and `'...'` included) or in the
    interleaved sublist form.
    """
    _no_extras("einsum", out=out)
    if order != "K":
        raise NotImplementedError(
            f"tracegrad.numpy.einsum: order={order!r} is not supported (only 'K'); traced "
            "arrays have no memory order to choose"
        )
    if not operands:
        raise ValueError("einsum: no subscripts given")
    if isinstance(operands[0], str):
        subscripts, ops = operands[0], list(operands[1:])
    else:
        letters = es._LETTERS if optimize is False else _PYTHON_LETTERS
        subscripts, ops = _sublist_subscripts(operands, letters)
    ops = [asarray_or_tracer(x) for x in ops]
    dtype = _einsum_dtype(ops, dtype, casting)
    return es.einsum(subscripts, *ops, optimize=optimize, dtype=dtype)


# -- vecdot, matvec, vecmat: NumPy 2.2's gufuncs ----------------------------------------------

# core axes of (x1, x2, out) in each signature
_CORES = {"vecdot": (1, 1, 0), "matvec": (2, 1, 1), "vecmat": (1, 2, 1)}


def _gufunc_options(fname, out, casting, order, dtype, subok, signature):
    _no_extras(fname, out=out, dtype=dtype, signature=signature)
    for arg, value, default in (("casting", casting, "same_kind"), ("order", order, "K")):
        if value != default:
            raise NotImplementedError(
                f"tracegrad.numpy.{fname}: argument {arg}={value!r} is not supported (only "
                f"{default!r})"
            )
    if subok is not True:
        raise NotImplementedError(f"tracegrad.numpy.{fname}: argument subok= is not supported")


def _axes_entries(fname, axes, axis, keepdims, cores):
    """`axes=`/`axis=` as one tuple of core axes per operand and the output (None: the last
    ones), as NumPy reads them."""
    nin_core = cores[:2]
    if axis is not None:
        if axes is not None:
            raise TypeError(f"{fname}: cannot specify both 'axis' and 'axes'")
        if fname != "vecdot":
            raise TypeError(
                f"{fname}: axis can only be used with a single shared core dimension, not with "
                f"the 2 distinct ones implied by its signature; use axes="
            )
        return [(axis,), (axis,), (axis,) if keepdims else ()]
    if axes is None:
        return [None, None, None]
    if not isinstance(axes, list):
        raise TypeError(f"{fname}: axes should be a list, got {type(axes).__name__}")
    out_core = cores[2] + (1 if keepdims else 0)
    if len(axes) not in ((2, 3) if cores[2] == 0 else (3,)):
        raise ValueError(
            f"{fname}: axes should be a list with an entry for all 3 inputs and outputs; "
            "entries for outputs can only be omitted if none of them has core axes"
        )
    entries = [_axes_entry(fname, e, n, i) for i, (e, n) in enumerate(zip(axes, nin_core))]
    out_entry = _axes_entry(fname, axes[2], out_core, 2) if len(axes) == 3 else None
    return entries + [out_entry]


def _axes_entry(fname, entry, ncore, which):
    if isinstance(entry, int | np.integer) and ncore == 1:
        entry = (entry,)
    try:
        entry = tuple(operator.index(a) for a in entry)
    except TypeError:
        raise TypeError(
            f"{fname}: each entry of axes must be a tuple of ints (or an int for one core "
            f"axis), got {entry!r}"
        ) from None
    if len(entry) != ncore:
        raise ValueError(
            f"{fname}: operand {which} has {ncore} core dimensions, but {len(entry)} "
            "dimensions are specified by axes tuple."
        )
    return entry


def _core_last(x, entry, ncore):
    """`x` with the core axes `entry` moved last, in order (a view: the same strides)."""
    nd = len(shape_of(x))
    if entry is None or nd < ncore:  # (too few axes: the shape rule names the operand)
        return x
    return moveaxis(x, entry, tuple(range(nd - ncore, nd)))


def _gufunc_call(fname, product, x1, x2, axes, axis, keepdims):
    cores = _CORES[fname]
    if keepdims and cores[2]:
        raise TypeError(
            f"{fname} does not support keepdims: its inputs have different numbers of core "
            "dimensions and its output has one"
        )
    entries = _axes_entries(fname, axes, axis, keepdims, cores)
    x1 = _core_last(as_array(x1), entries[0], cores[0])
    x2 = _core_last(as_array(x2), entries[1], cores[1])
    out = product(x1, x2)
    out_core = cores[2] + (1 if keepdims else 0)
    if keepdims:
        out = expand_dims(out, -1)
    if out_core and entries[2] is not None:
        out = moveaxis(out, -1, entries[2][0])
    return out


def vecdot(
    x1,
    x2,
    /,
    out=None,
    *,
    casting="same_kind",
    order="K",
    dtype=None,
    subok=True,
    signature=None,
    axes=None,
    axis=None,
    keepdims=False,
):
    """`np.vecdot`: `sum(conj(x1) * x2)` over the core axis (`axis`, default -1), loop axes
    broadcast; complex derivatives follow JAX's convention."""
    _gufunc_options("vecdot", out, casting, order, dtype, subok, signature)
    return _gufunc_call("vecdot", products.vecdot, x1, x2, axes, axis, keepdims)


def matvec(
    x1,
    x2,
    /,
    out=None,
    *,
    casting="same_kind",
    order="K",
    dtype=None,
    subok=True,
    signature=None,
    axes=None,
    axis=None,
    keepdims=False,
):
    """`np.matvec`: matrices (..., m, n) times vectors (..., n), no conjugation."""
    _gufunc_options("matvec", out, casting, order, dtype, subok, signature)
    return _gufunc_call("matvec", products.matvec, x1, x2, axes, axis, keepdims)


def vecmat(
    x1,
    x2,
    /,
    out=None,
    *,
    casting="same_kind",
    order="K",
    dtype=None,
    subok=True,
    signature=None,
    axes=None,
    axis=None,
    keepdims=False,
):
    """`np.vecmat`: conjugated vectors (..., n) times matrices (..., n, m)."""
    _gufunc_options("vecmat", out, casting, order, dtype, subok, signature)
    return _gufunc_call("vecmat", products.vecmat, x1, x2, axes, axis, keepdims)


def inner(a, b, /):
    """`np.inner`: NumPy swaps b's last two axes and calls dot; so does this."""
    a, b = as_array(a), as_array(b)
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
    a, b = as_array(a), as_array(b)
    a = views.reshape(a, (math.prod(shape_of(a)), 1))
    b = views.reshape(b, (1, math.prod(shape_of(b))))
    return _multiply(a, b)


def vdot(a, b, /):
    """`np.vdot`: dot of the flattened operands, the first conjugated when complex (NumPy's
    conjugating BLAS dot gives the same bits as a dot of the conjugate)."""
    a, b = as_array(a), as_array(b)
    na, nb = math.prod(shape_of(a)), math.prod(shape_of(b))
    if na != nb:
        raise ValueError(
            f"vdot: shapes {shape_of(a)} and {shape_of(b)} have {na} and {nb} elements; "
            "vdot needs the same number of elements in both"
        )
    a = _flat(a)
    if np.dtype(a.dtype).kind == "c":
        a = bind(elementwise.conjugate_p, a)
    return products.dot(a, _flat(b))


def _multiply(a, b):
    return bind(elementwise.multiply_p, a, b)


def _flat(x):
    return views.reshape(x, (math.prod(shape_of(x)),))


def kron(a, b):
    """`np.kron`, built as NumPy builds it: expand both, multiply, reshape."""
    b = as_array(b)
    a = as_array(a)
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
    a, b = as_array(a), as_array(b)
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
