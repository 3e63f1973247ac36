"""Products: matmul, dot, tensordot and NumPy 2.2's vecdot, matvec and vecmat gufuncs
(einsum is in `einsum.py`), multilinear primitives.

Each is linear in every operand, so one rule serves all jvps: the sum of the products with
one operand replaced by its tangent. The vjp has one rule per operand, which contracts the
output cotangent with the other operand (matmul with swapped axes, tensordot/dot with a
tensordot plus a transpose), so a constant operand's cotangent is never computed. Forward
values are NumPy's own functions, so they match NumPy bit for bit; cotangents are cast to
their operand's dtype.

Over 600 lines: the six products share the contraction helpers, the batch-axis batching and
the cotangent casts; split by product, each module would import the others'.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_INPUTS, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.broadcasting import result_dtype, unbroadcast
from tracegrad.primitives.elementwise import astype, conjugate, multiply_p, real
from tracegrad.primitives.shape import ascontiguousarray
from tracegrad.primitives.views import move_to_front, reshape, transpose, transpose_p

# -- shared helpers ---------------------------------------------------------------------------


def strong_result_type(op: str, *avals: Aval) -> np.dtype:
    # dot, tensordot and einsum convert Python scalars with asarray: no weak promotion.
    try:
        return np.result_type(*(a.dtype for a in avals))
    except TypeError as err:
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"{op}: no common dtype for inputs of dtype ({names}): {err}") from None


def cast_like(x_bar, x):
    """`x_bar` in the dtype of the operand `x` (float32 operands of a float64 product). A real
    operand of a complex product (a complex other operand, einsum's `dtype=complex`) takes the
    real part of its complex cotangent, as JAX does (a complex-to-real cast gives the same
    values, with a ComplexWarning)."""
    want = getattr(x, "dtype", None)
    if want is not None and getattr(x_bar, "dtype", None) is want:  # (the common case)
        return x_bar
    want = dtype_of(x)
    if dtype_of(x_bar) == want:
        return x_bar
    if dtype_of(x_bar).kind == "c" and want.kind != "c":
        x_bar = real(x_bar)
    return x_bar if dtype_of(x_bar) == want else astype(x_bar, want)


def conj(x):
    """`x` conjugated when it is complex (real values as they are, with no node)."""
    return conjugate(x) if dtype_of(x).kind == "c" else x


def batch_first(x, d: int):
    """`x` with its batch axis `d` first, and each example's elements contiguous, as each
    example of a loop over the batch is: NumPy's iterator and the BLAS/dot choice of the
    product loops follow the strides, so a batch axis left among an example's axes (a
    transposed view) would change the order of the additions, and the bits."""
    return x if d == 0 else ascontiguousarray(move_to_front(x, d))


def _reshape(x, shape):
    return x if shape_of(x) == tuple(shape) else reshape(x, shape)


def _transpose(x, perm):
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else transpose(x, perm)


def _swap(x):
    """Swap the last two axes."""
    n = len(shape_of(x))
    return _transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def _multilinear_jvp(prim):
    """The jvp of a primitive linear in each operand: the sum of the products with one
    operand replaced by its tangent (symbolic zeros skipped)."""
    ref = weakref.ref(prim)

    def jvp(primals, tangents, *, out, **params):
        prim = ref()
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            args = primals[:i] + (t,) + primals[i + 1 :]
            term = bind(prim, *args, **params)
            total = term if total is None else total + term
        return total

    return jvp


MULTILINEAR_JVP = rule_for(_multilinear_jvp)


def shapes_text(*shapes) -> str:
    return " and ".join(str(tuple(s)) for s in shapes)


# -- matmul -----------------------------------------------------------------------------------


def matmul(x, y):
    """`np.matmul(x, y)` (`x @ y`): 1-D operands are promoted, batch axes broadcast."""
    return bind(matmul_p, x, y)


def _matmul_shape(x: Aval, y: Aval):
    xs, ys = x.shape, y.shape
    if not xs or not ys:
        raise ValueError(
            f"matmul: shapes {shapes_text(xs, ys)}: matmul needs operands with at least one "
            "axis; use multiply (*) to scale by a scalar"
        )
    xk = xs[-1]
    yk, y_axis = (ys[0], "the only axis") if len(ys) == 1 else (ys[-2], "the second-to-last axis")
    if xk != yk:
        raise ValueError(
            f"matmul: shapes {shapes_text(xs, ys)} do not align: the last axis of the first "
            f"({xk}) must equal {y_axis} of the second ({yk}); transpose or reshape an operand"
        )
    xb, yb = xs[:-2], ys[:-2]
    try:
        batch = tuple(np.broadcast_shapes(xb, yb))
    except ValueError:
        raise ValueError(
            f"matmul: shapes {shapes_text(xs, ys)} do not broadcast in their batch axes "
            f"{shapes_text(xb, yb)}: leading axes must be equal or 1; reshape or "
            "expand_dims an operand"
        ) from None
    out = batch + xs[-2:-1] + ys[-1:] if len(ys) >= 2 else batch + xs[-2:-1]
    dtype, _ = result_dtype(np.matmul, x, y, op="matmul")
    return Aval(out, dtype)


def _summed_product(a, b):
    """sum over the batch axes of `a[B]^T @ b[B]`, as one 2-D product.

    a: (B..., p, q), b: (B..., p, r) with equal batch axes. Folding the batch into the
    contracted axis avoids materializing one (q, r) product per batch element.
    """
    sa, sb = shape_of(a), shape_of(b)
    rows = math.prod(sa[:-1])
    a2 = _reshape(a, (rows, sa[-1]))
    b2 = _reshape(b, (rows, sb[-1]))
    return matmul(_transpose(a2, (1, 0)), b2)


def _is_matvec(xs, ys) -> bool:
    return len(xs) <= 2 and len(ys) <= 2 and (len(xs) == 1 or len(ys) == 1)


def _promoted(g, x, y):
    """`(x2, y2, g2, batch)`: the operands with 1-D ones promoted as matmul does ((k,) @ ...
    is (1, k) @ ..., ... @ (k,) is ... @ (k, 1)), the cotangent in that form, and the
    broadcast batch axes."""
    xs, ys = shape_of(x), shape_of(y)
    x2 = x if len(xs) >= 2 else _reshape(x, (1,) + xs)
    y2 = y if len(ys) >= 2 else _reshape(y, ys + (1,))
    x2s, y2s = shape_of(x2), shape_of(y2)
    xb, yb = x2s[:-2], y2s[:-2]
    batch = xb if xb == yb else tuple(np.broadcast_shapes(xb, yb))  # (equal: the common case)
    return x2, y2, _reshape(g, batch + (x2s[-2], y2s[-1])), batch


_SWAP = (1, 0)  # a matrix's transpose (bound directly by the common cases below)


def _matmul_x_bar(g, x, y, *, out):
    if not carries_derivative(x):
        return None
    xs, ys = shape_of(x), shape_of(y)
    if len(xs) == 2 and len(ys) == 2:  # matrices, the common case: what the steps below bind
        return cast_like(matmul(g, bind(transpose_p, y, axes=_SWAP)), x)
    if _is_matvec(xs, ys):
        return cast_like(_matvec_x_bar(g, x, y), x)
    x2, y2, g2, batch = _promoted(g, x, y)
    x2s = shape_of(x2)
    if x2s[:-2] == batch:
        bar = matmul(g2, _swap(y2))
    elif len(x2s) == 2:  # x shared by every batch element (a weight matrix)
        bar = _summed_product(_swap(g2), _swap(y2))
    else:
        bar = unbroadcast(matmul(g2, _swap(y2)), x2s)
    return cast_like(_reshape(bar, xs), x)


def _matmul_y_bar(g, x, y, *, out):
    if not carries_derivative(y):
        return None
    xs, ys = shape_of(x), shape_of(y)
    if len(xs) == 2 and len(ys) == 2:  # matrices, the common case: what the steps below bind
        return cast_like(matmul(bind(transpose_p, x, axes=_SWAP), g), y)
    if _is_matvec(xs, ys):
        return cast_like(_matvec_y_bar(g, x, y), y)
    x2, y2, g2, batch = _promoted(g, x, y)
    y2s = shape_of(y2)
    if y2s[:-2] == batch:
        bar = matmul(_swap(x2), g2)
    elif len(y2s) == 2:  # y shared by every batch element (x @ W with batched x)
        bar = _summed_product(x2, g2)
    else:
        bar = unbroadcast(matmul(_swap(x2), g2), y2s)
    return cast_like(_reshape(bar, ys), y)


# Products with a vector keep vector forms (`g @ A`, an outer product as a broadcast
# multiply) instead of promoting to (k, 1) matrices: batched by vmap (Jacobians, Hessians)
# these stay single matrix products instead of stacks of matrix-vector products.


def _outer(a, b):
    """a (p,), b (q,) -> (p, q), as a broadcast multiply."""
    return bind(multiply_p, _reshape(a, shape_of(a) + (1,)), _reshape(b, (1,) + shape_of(b)))


def _matvec_x_bar(g, x, y):
    if len(shape_of(x)) == 2:  # (n, k) @ (k,) -> (n,)
        return _outer(g, y)
    if len(shape_of(y)) == 2:  # (k,) @ (k, m) -> (m,)
        return matmul(y, g)
    return bind(multiply_p, g, y)  # (k,) @ (k,) -> ()


def _matvec_y_bar(g, x, y):
    if len(shape_of(x)) == 2:
        return matmul(g, x)
    if len(shape_of(y)) == 2:
        return _outer(x, g)
    return bind(multiply_p, g, x)


# Batching: the batch axis rides along in an axis the product treats elementwise (a row of
# x, a column of y, or a leading axis matmul broadcasts), so each rule is one product, and an
# unbatched operand is never copied or broadcast to the batch: `x @ W` with a batch of x is
# one matmul of x's rows with W.


def _ndim(x) -> int:
    return len(shape_of(x))


def _pad_after_batch(x, n: int):
    """`x` (batch axis first) with `n` size-1 axes after its batch axis, so matmul's batch
    broadcasting does not align the batch axis with an axis of the other operand."""
    if n <= 0:
        return x
    s = shape_of(x)
    return _reshape(x, s[:1] + (1,) * n + s[1:])


def _matmul_batch_x(x, dx, rx, y, ry):
    # x batched at dx (rx per-example axes), y unbatched
    if ry <= 2:
        # rows of x times y: every axis of x but its last is a row axis
        if dx == rx:
            x, dx = move_to_front(x, dx), 0
        xs = shape_of(x)
        if len(xs) > 2:  # fold the row axes: one 2-D product instead of a loop of them
            lead = xs[:-1]
            out = matmul(_reshape(x, (math.prod(lead), xs[-1])), y)
            return _reshape(out, lead + shape_of(out)[1:]), dx
        return matmul(x, y), dx
    if rx == 1:  # x @ y = (y^T @ x^T)^T: the batch becomes the columns of x^T
        xt = x if dx == 1 else _transpose(x, (1, 0))
        return matmul(_swap(y), xt), ry - 1
    if dx <= rx - ry:  # a leading axis of x that y's batch axes do not reach
        return matmul(x, y), dx
    return matmul(_pad_after_batch(move_to_front(x, dx), ry - rx), y), 0


def _matmul_batch_y(x, rx, y, dy, ry):
    # y batched at dy (ry per-example axes), x unbatched
    if ry == 1:  # the batch becomes the columns of y: x @ (k, B)
        if rx <= 2 and dy == 0:  # (B, k) rows: y @ x^T
            return matmul(y, _swap(x) if rx == 2 else x), 0
        yt = y if dy == 1 else _transpose(y, (1, 0))
        return matmul(x, yt), rx - 1
    if dy <= ry - max(rx, 2):  # a leading axis of y that x's batch axes do not reach
        return matmul(x, y), dy
    return matmul(x, _pad_after_batch(move_to_front(y, dy), rx - ry)), 0


def _matmul_batch_both(x, dx, rx, y, dy, ry):
    x, y = move_to_front(x, dx), move_to_front(y, dy)
    xs, ys = shape_of(x), shape_of(y)
    if rx == 1:  # promote as matmul does, with the batch axis in front
        x = _reshape(x, xs[:1] + (1,) + xs[1:])
    if ry == 1:
        y = _reshape(y, ys + (1,))
    rx2, ry2 = max(rx, 2), max(ry, 2)
    out = matmul(_pad_after_batch(x, ry2 - rx2), _pad_after_batch(y, rx2 - ry2))
    s = shape_of(out)
    kept = s[:-2] + (s[-2:-1] if rx > 1 else ()) + (s[-1:] if ry > 1 else ())
    return _reshape(out, kept), 0


def _matmul_batch(args, dims):
    (x, y), (dx, dy) = args, dims
    rx, ry = _ndim(x) - (dx is not None), _ndim(y) - (dy is not None)
    if dy is None:
        return _matmul_batch_x(x, dx, rx, y, ry)
    if dx is None:
        return _matmul_batch_y(x, rx, y, dy, ry)
    return _matmul_batch_both(x, dx, rx, y, dy, ry)


def _matmul_torch_name(x: Aval, y: Aval) -> str:
    # PyTorch dispatches matmul by rank: mm, mv, dot, or the general matmul
    nd = (x.ndim, y.ndim)
    return {(2, 2): "MmBackward0", (2, 1): "MvBackward0", (1, 1): "DotBackward0"}.get(
        nd, "MatmulBackward0"
    )


matmul_p = Primitive(
    "matmul",
    impl=np.matmul,
    shape=_matmul_shape,
    jvp=MULTILINEAR_JVP,
    vjp=(_matmul_x_bar, _matmul_y_bar),
    batch=_matmul_batch,
    emit=lambda x, y: f"np.matmul({x}, {y})",
    vjp_reads=READS_INPUTS,
    bilinear=True,
    # a gufunc: its batch axes are allocated in the iterator's order of the inputs' batch
    # axes (C order from C-order inputs, as the core axes always are)
    layout=Layout.KEEPS_C,
    torch_name=_matmul_torch_name,
    taylor=series.MULTILINEAR,
)

# -- tensordot --------------------------------------------------------------------------------


def normalize_tensordot_axes(axes, a_shape, b_shape):
    """`axes` of np.tensordot (an int N, or a pair of ints/sequences) as a pair of tuples of
    non-negative axes, checked against the operands' ranks."""
    na, nb = len(a_shape), len(b_shape)
    if isinstance(axes, int | np.integer):
        n = int(axes)
        if n < 0 or n > min(na, nb):
            raise ValueError(
                f"tensordot: axes={n} contracts the last {n} axes of the first operand with the "
                f"first {n} of the second, but the shapes are {shapes_text(a_shape, b_shape)}"
            )
        return tuple(range(na - n, na)), tuple(range(n))
    try:
        axes_a, axes_b = axes
    except (TypeError, ValueError):
        raise ValueError(
            f"tensordot: axes must be an int or a pair of axis sequences, got {axes!r}"
        ) from None
    axes_a = (axes_a,) if isinstance(axes_a, int | np.integer) else tuple(axes_a)
    axes_b = (axes_b,) if isinstance(axes_b, int | np.integer) else tuple(axes_b)
    return _normalize_axes(axes_a, na, "first", a_shape), _normalize_axes(
        axes_b, nb, "second", b_shape
    )


def _normalize_axes(axes, n, which, shape):
    out = []
    for ax in axes:
        ax = int(ax)
        if not -n <= ax < n:
            raise np.exceptions.AxisError(
                f"tensordot: axis {ax} is out of bounds for the {which} operand of shape "
                f"{tuple(shape)}"
            )
        out.append(ax % n)
    return tuple(out)


def tensordot(a, b, axes=2):
    """`np.tensordot(a, b, axes)`; `axes` is normalized to a pair of tuples of axes."""
    axes = normalize_tensordot_axes(axes, shape_of(a), shape_of(b))
    return bind(tensordot_p, a, b, axes=axes)


def _is_axes_pair(axes) -> bool:
    return (
        isinstance(axes, tuple)
        and len(axes) == 2
        and all(isinstance(t, tuple) and all(type(i) is int for i in t) for t in axes)
    )


def _check_tensordot_axes(a_shape, b_shape, axes):
    if not _is_axes_pair(axes):
        raise ValueError(f"tensordot: axes must be a pair of tuples of ints, got {axes!r:.80}")
    axes_a, axes_b = axes
    shapes = shapes_text(a_shape, b_shape)
    if len(axes_a) != len(axes_b):
        raise ValueError(
            f"tensordot: shapes {shapes}: axes {axes_a} of the first and {axes_b} of the "
            "second must have the same length"
        )
    for which, ax, shape in (("first", axes_a, a_shape), ("second", axes_b, b_shape)):
        if any(not 0 <= i < len(shape) for i in ax):
            raise np.exceptions.AxisError(
                f"tensordot: axes {ax} are out of bounds for the {which} operand of shape "
                f"{tuple(shape)}"
            )
        if len(set(ax)) != len(ax):
            raise ValueError(f"tensordot: axes {ax} of the {which} operand repeat an axis")
    for i, j in zip(axes_a, axes_b):
        if a_shape[i] != b_shape[j]:
            raise ValueError(
                f"tensordot: shapes {shapes} do not align: axis {i} of the first "
                f"({a_shape[i]}) must equal axis {j} of the second ({b_shape[j]}); "
                "contract axes of equal length"
            )


def _tensordot_shape(a: Aval, b: Aval, *, axes):
    _check_tensordot_axes(a.shape, b.shape, axes)
    axes_a, axes_b = axes
    out = tuple(d for i, d in enumerate(a.shape) if i not in axes_a) + tuple(
        d for i, d in enumerate(b.shape) if i not in axes_b
    )
    return Aval(out, strong_result_type("tensordot", a, b))


# The cotangents of `tensordot(a, b, axes)`: `g` contracted with the other operand over its
# free axes, then transposed back into the operand's axis order.


def _free_axes(n: int, contracted) -> tuple[int, ...]:
    return tuple(i for i in range(n) if i not in contracted)


def _tensordot_a_bar(g, a, b, axes):
    axes_a, axes_b = axes
    na, nb = len(shape_of(a)), len(shape_of(b))
    free_a, free_b = _free_axes(na, axes_a), _free_axes(nb, axes_b)
    nfa = len(free_a)
    # axes of r: a's free axes, then b's contracted axes in increasing order
    r = bind(tensordot_p, g, b, axes=(tuple(range(nfa, nfa + len(free_b))), free_b))
    order_b = sorted(axes_b)
    perm = [0] * na
    for i, ax in enumerate(free_a):
        perm[ax] = i
    for ax, bx in zip(axes_a, axes_b):
        perm[ax] = nfa + order_b.index(bx)
    return cast_like(_transpose(r, perm), a)


def _tensordot_b_bar(g, a, b, axes):
    axes_a, axes_b = axes
    na, nb = len(shape_of(a)), len(shape_of(b))
    free_a, free_b = _free_axes(na, axes_a), _free_axes(nb, axes_b)
    # axes of r: a's contracted axes in increasing order, then b's free axes
    r = bind(tensordot_p, a, g, axes=(free_a, tuple(range(len(free_a)))))
    order_a = sorted(axes_a)
    perm = [0] * nb
    for ax, bx in zip(axes_a, axes_b):
        perm[bx] = order_a.index(ax)
    for j, bx in enumerate(free_b):
        perm[bx] = len(axes_b) + j
    return cast_like(_transpose(r, perm), b)


def _tensordot_vjp_a(g, a, b, *, out, axes):
    return _tensordot_a_bar(g, a, b, axes) if carries_derivative(a) else None


def _tensordot_vjp_b(g, a, b, *, out, axes):
    return _tensordot_b_bar(g, a, b, axes) if carries_derivative(b) else None


def _batched_contraction(a, da, b, db, axes_a, axes_b):
    """`tensordot(a[i], b[i], (axes_a, axes_b))` for every i of a batch both operands have,
    with the batch first: free and contracted axes grouped (as np.tensordot does) and one
    batched matmul of shape (B, free_a, k) @ (B, k, free_b)."""
    a, b = move_to_front(a, da), move_to_front(b, db)
    sa, sb = shape_of(a), shape_of(b)
    n = sa[0]
    sa, sb = sa[1:], sb[1:]
    free_a = tuple(i for i in range(len(sa)) if i not in axes_a)
    free_b = tuple(j for j in range(len(sb)) if j not in axes_b)
    at = _transpose(a, (0,) + tuple(1 + i for i in free_a + tuple(axes_a)))
    bt = _transpose(b, (0,) + tuple(1 + j for j in tuple(axes_b) + free_b))
    fa, fb = tuple(sa[i] for i in free_a), tuple(sb[j] for j in free_b)
    k = math.prod(sa[i] for i in axes_a)
    out = matmul(_reshape(at, (n, math.prod(fa), k)), _reshape(bt, (n, k, math.prod(fb))))
    return _reshape(out, (n,) + fa + fb)


def _shift_axes(axes, dim):
    """Per-example axes as axes of the batched operand whose batch axis is `dim`."""
    return tuple(i + (i >= dim) for i in axes)


def _free_before(dim, axes):
    """How many free (uncontracted) per-example axes come before the batch axis `dim`."""
    return sum(1 for i in range(dim) if i not in axes)


def _tensordot_batch(args, dims, *, axes):
    # the batch axis is one more free axis of its operand (kept in place: free axes keep
    # their order in the output); with both operands batched it is a batched matmul
    (a, b), (da, db) = args, dims
    axes_a, axes_b = axes
    if db is None:
        out = bind(tensordot_p, a, b, axes=(_shift_axes(axes_a, da), axes_b))
        return out, _free_before(da, axes_a)
    if da is None:
        out = bind(tensordot_p, a, b, axes=(axes_a, _shift_axes(axes_b, db)))
        return out, _ndim(a) - len(axes_a) + _free_before(db, axes_b)
    return _batched_contraction(a, da, b, db, axes_a, axes_b), 0


tensordot_p = Primitive(
    "tensordot",
    impl=lambda a, b, *, axes: np.tensordot(a, b, axes=axes),
    shape=_tensordot_shape,
    jvp=MULTILINEAR_JVP,
    vjp=(_tensordot_vjp_a, _tensordot_vjp_b),
    batch=_tensordot_batch,
    emit=lambda a, b, *, axes: f"np.tensordot({a}, {b}, axes={axes!r})",
    vjp_reads=READS_INPUTS,
    bilinear=True,
    layout=Layout.C,
    taylor=series.MULTILINEAR,
)

# -- dot --------------------------------------------------------------------------------------


def dot(a, b):
    """`np.dot(a, b)`: multiply for scalars, else contract a's last axis with b's
    second-to-last (its only axis when 1-D)."""
    return bind(dot_p, a, b)


def _dot_axes(na: int, nb: int):
    return (na - 1,), (max(nb - 2, 0),)


def _dot_shape(a: Aval, b: Aval):
    dtype = strong_result_type("dot", a, b)
    if a.ndim == 0 or b.ndim == 0:
        return Aval(b.shape if a.ndim == 0 else a.shape, dtype)
    (i,), (j,) = _dot_axes(a.ndim, b.ndim)
    if a.shape[i] != b.shape[j]:
        which = "the only axis" if b.ndim == 1 else "the second-to-last axis"
        raise ValueError(
            f"dot: shapes {shapes_text(a.shape, b.shape)} do not align: the last axis of the "
            f"first ({a.shape[i]}) must equal {which} of the second ({b.shape[j]}); transpose "
            "or reshape an operand"
        )
    return Aval(a.shape[:-1] + b.shape[:j] + b.shape[j + 1 :], dtype)


def _dot_a_bar(g, a, b, *, out):
    if not carries_derivative(a):
        return None
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:  # np.dot of a scalar is a (broadcasting) multiply
        return cast_like(unbroadcast(g * b, sa), a)
    return _tensordot_a_bar(g, a, b, _dot_axes(len(sa), len(sb)))


def _dot_b_bar(g, a, b, *, out):
    if not carries_derivative(b):
        return None
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        return cast_like(unbroadcast(g * a, sb), b)
    return _tensordot_b_bar(g, a, b, _dot_axes(len(sa), len(sb)))


def _multiply(a, b):
    return bind(multiply_p, a, b)


def _dot_scalar_batch(a, da, na, b, db, nb):
    # np.dot with a 0-d operand is a multiply (of arrays: no weak Python-scalar promotion)
    if na == 0 and da is None:
        return dot(a, b), db
    if nb == 0 and db is None:
        return dot(a, b), da
    # the 0-d operand is batched, a (B,) vector: give it size-1 axes to broadcast along the
    # other operand's axes (batch first)
    a, b = move_to_front(a, da), move_to_front(b, db)
    if na == 0:
        a = _reshape(a, shape_of(a)[:1] + (1,) * nb)
    if nb == 0:
        b = _reshape(b, shape_of(b)[:1] + (1,) * na)
    return _multiply(a, b), 0


def _dot_batch(args, dims):
    # np.dot treats a's leading axes as rows and b's axes other than the contracted one as
    # columns: a batch axis in either stays there (one dot); both batched: a batched matmul
    (a, b), (da, db) = args, dims
    na, nb = _ndim(a) - (da is not None), _ndim(b) - (db is not None)
    if na == 0 or nb == 0:
        return _dot_scalar_batch(a, da, na, b, db, nb)
    if db is None:
        if da == na:  # after the contracted axis: make it a row axis
            a, da = move_to_front(a, da), 0
        return dot(a, b), da
    if da is None:
        if nb == 1:  # (k, B): the batch is b's columns
            return dot(a, b if db == 1 else _transpose(b, (1, 0))), na - 1
        if db > nb - 2:  # at or after the contracted (second-to-last) axis
            b, db = move_to_front(b, db), 0
        return dot(a, b), na - 1 + db
    return _batched_contraction(a, da, b, db, *_dot_axes(na, nb)), 0


dot_p = Primitive(
    "dot",
    impl=np.dot,
    shape=_dot_shape,
    jvp=MULTILINEAR_JVP,
    vjp=(_dot_a_bar, _dot_b_bar),
    batch=_dot_batch,
    emit=lambda a, b: f"np.dot({a}, {b})",
    vjp_reads=READS_INPUTS,
    bilinear=True,
    layout=Layout.C,
    taylor=series.MULTILINEAR,
)


# -- vecdot, matvec, vecmat -------------------------------------------------------------------
# NumPy 2.2's product gufuncs: loop axes broadcast as a ufunc's do, core axes last:
# vecdot (n),(n)->() conjugates x1, matvec (m,n),(n)->(m) conjugates nothing, vecmat
# (n),(n,m)->(m) conjugates the vector. Their loops call BLAS dot/gemv/gemm or NumPy's own
# dot, chosen by the core axes' strides, so `impl` is the gufunc itself. Each is R-linear in
# each operand (conjugation is), so the multilinear jvp holds for complex operands too; the
# cotangents follow JAX's convention (the transpose without conjugation, then the
# conjugation's own transpose `conj`).


def _core_rank_error(name, signature, which, aval, need):
    return ValueError(
        f"{name}: operand {which} of shape {aval.shape} has {aval.ndim} axes, but the "
        f"signature {signature} needs at least {need} (its core axes come last)"
    )


def _gufunc_shape(ufunc: np.ufunc, core: tuple[int, int], core_out):
    """The shape rule of a two-operand product gufunc whose operands have `core` core axes
    and whose output core is `core_out(x_shape, y_shape)` (after checking the sizes)."""
    name, signature = ufunc.__name__, ufunc.signature

    def shape(x: Aval, y: Aval):
        for which, a, need in ((0, x, core[0]), (1, y, core[1])):
            if a.ndim < need:
                raise _core_rank_error(name, signature, which, a, need)
        out_core = core_out(x.shape, y.shape)
        lx, ly = x.shape[: x.ndim - core[0]], y.shape[: y.ndim - core[1]]
        try:
            loop = tuple(np.broadcast_shapes(lx, ly))
        except ValueError:
            raise ValueError(
                f"{name}: shapes {shapes_text(x.shape, y.shape)} do not broadcast in their "
                f"loop axes {shapes_text(lx, ly)} (the axes before the core axes of "
                f"{signature}): they must be equal or 1"
            ) from None
        try:
            dtype = ufunc.resolve_dtypes((x.dtype, y.dtype, None))[2]
        except TypeError as err:
            raise TypeError(
                f"{name}: no loop for inputs of dtype ({x.dtype.name}, {y.dtype.name}): {err}"
            ) from None
        return Aval(loop + out_core, dtype)

    return shape


def _core_check(name, signature, what, sizes, out):
    """The output core of a gufunc, `out(xs, ys)`, after checking that the two core sizes
    `sizes(xs, ys)` (one axis of each operand) agree."""

    def check(xs, ys):
        a, b = sizes(xs, ys)
        if a != b:
            raise ValueError(
                f"{name}: shapes {shapes_text(xs, ys)} do not align for {signature}: {what} "
                f"({a} and {b}) must be equal"
            )
        return out(xs, ys)

    return check


_vecdot_core = _core_check(
    "vecdot", "(n),(n)->()", "the last axes", lambda xs, ys: (xs[-1], ys[-1]), lambda xs, ys: ()
)
_matvec_core = _core_check(
    "matvec",
    "(m,n),(n)->(m)",
    "the matrix's last axis and the vector's",
    lambda xs, ys: (xs[-1], ys[-1]),
    lambda xs, ys: xs[-2:-1],
)
_vecmat_core = _core_check(
    "vecmat",
    "(n),(n,m)->(m)",
    "the vector's axis and the matrix's second-to-last",
    lambda xs, ys: (xs[-1], ys[-2]),
    lambda xs, ys: ys[-1:],
)


def _expand(x, axes):
    """`x` with size-1 axes inserted at the (negative) positions `axes`."""
    s = list(shape_of(x))
    for a in sorted(axes):
        s.insert(len(s) + a + 1, 1)
    return _reshape(x, tuple(s))


def _bars(x_rule, y_rule):
    """The per-operand vjp rules of a product gufunc from `rule(g, x, y)` for each operand:
    operands carrying no derivative are skipped, cotangents summed back over broadcast loop
    axes and cast to the operand's dtype."""

    def bar(i, rule):
        def vjp(g, x, y, *, out):
            operand = (x, y)[i]
            if not carries_derivative(operand):
                return None
            return cast_like(unbroadcast(rule(g, x, y), shape_of(operand)), operand)

        return vjp

    return bar(0, x_rule), bar(1, y_rule)


def _mul(a, b):
    return bind(multiply_p, a, b)


# out = sum(conj(x) * y): the transpose of x -> conj(x) * y is conj(g * y)
_VECDOT_BARS = _bars(
    lambda g, x, y: conj(_mul(_expand(g, (-1,)), y)),
    lambda g, x, y: _mul(_expand(g, (-1,)), conj(x)),
)
# out = x @ y: the outer product g y^T, and x^T g
_MATVEC_BARS = _bars(
    lambda g, x, y: _mul(_expand(g, (-1,)), _expand(y, (-2,))),
    lambda g, x, y: matvec(_swap(x), g),
)
# out = conj(x) @ y: conj(y g), and the outer product conj(x) g^T
_VECMAT_BARS = _bars(
    lambda g, x, y: conj(matvec(y, g)),
    lambda g, x, y: _mul(_expand(conj(x), (-1,)), _expand(g, (-2,))),
)


def _gufunc_batch(core: tuple[int, int]):
    """Batching of a product gufunc: batched operands get the batch axis first and size-1
    axes after it, so it broadcasts as one more loop axis; unbatched ones broadcast as they
    are. Each loop element is one independent product, as in the loop over the batch."""

    def factory(prim):
        ref = weakref.ref(prim)

        def batch(args, dims):
            loops = [_ndim(a) - (d is not None) - c for a, d, c in zip(args, dims, core)]
            n = max(loops)
            new = [
                a if d is None else _pad_after_batch(batch_first(a, d), n - r)
                for a, d, r in zip(args, dims, loops)
            ]
            return bind(ref(), *new), 0

        return batch

    return rule_for(factory)


def _gufunc(ufunc: np.ufunc, core, core_out, bars):
    return Primitive(
        ufunc.__name__,
        impl=ufunc,
        shape=_gufunc_shape(ufunc, core, core_out),
        jvp=MULTILINEAR_JVP,
        vjp=bars,
        batch=_gufunc_batch(core),
        emit=lambda x, y, _name=ufunc.__name__: f"np.{_name}({x}, {y})",
        vjp_reads=READS_INPUTS,
        bilinear=True,
        layout=Layout.KEEPS_C,  # as matmul: loop axes in the inputs' order, C from C
        taylor=series.MULTILINEAR,
    )


def vecdot(x, y):
    """`np.vecdot(x, y)`: `sum(conj(x) * y, axis=-1)` over broadcast loop axes."""
    return bind(vecdot_p, x, y)


def matvec(x, y):
    """`np.matvec(x, y)`: matrix (..., m, n) times vector (..., n), no conjugation."""
    return bind(matvec_p, x, y)


def vecmat(x, y):
    """`np.vecmat(x, y)`: conj(vector (..., n)) times matrix (..., n, m)."""
    return bind(vecmat_p, x, y)


vecdot_p = _gufunc(np.vecdot, (1, 1), _vecdot_core, _VECDOT_BARS)
matvec_p = _gufunc(np.matvec, (2, 1), _matvec_core, _MATVEC_BARS)
vecmat_p = _gufunc(np.vecmat, (1, 2), _vecmat_core, _VECMAT_BARS)

PRIMITIVES = (matmul_p, dot_p, tensordot_p, vecdot_p, matvec_p, vecmat_p)
