"""`pinv` and `lstsq`: the pseudo-inverse and least squares, both through an SVD in LAPACK.

The pseudo-inverse jumps where the rank changes (a singular value crossing the cutoff); its
derivative is that of the pseudo-inverse of fixed rank (Golub and Pereyra), as PyTorch's:

    dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P

`lstsq`'s solution is `pinv(a) @ b` (the minimum-norm solution, with the same cutoff), so it
differentiates through the same formula; its residuals and singular values differentiate as
the functions they are. Its outputs need static shapes under tracing, so `residuals` is as in
JAX: NumPy's value whenever NumPy returns one (more rows than columns and full rank), the sum
of squared residuals computed the same way when the rank is deficient (NumPy returns an empty
array there), and empty when there are no more rows than columns. `rank` has no derivative.
Reverse mode is the transpose of forward mode.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive, rule_for
from tracegrad.ir.types import Aval, shape_of
from tracegrad.primitives.broadcasting import broadcast_to, sum
from tracegrad.primitives.linalg._common import (
    H,
    check_stacked,
    conj,
    diagonal,
    eye_like,
    matmul,
    real_dtype,
    real_part,
    result_dtype,
    stacked_batch,
    transposed,
)
from tracegrad.primitives.linalg.spectral import svd
from tracegrad.primitives.views import expand_dims, move_to_front, squeeze

# -- pinv ---------------------------------------------------------------------------------------


_UNSET = "unset"  # NumPy's `rtol=<no value>`: a word, so the code generator can write it


def pinv(a, rcond=None, hermitian: bool = False, *, rtol=_UNSET):
    """`np.linalg.pinv(a, rcond, hermitian, rtol=rtol)`; `rcond`, `rtol` numbers (or None)."""
    rcond = None if rcond is None else float(rcond)
    rtol = rtol if rtol is None or rtol is _UNSET else float(rtol)
    if rcond is not None and rtol is not _UNSET:
        raise ValueError("pinv: `rtol` and `rcond` can't be both set.")
    return bind(pinv_p, a, rcond=rcond, hermitian=bool(hermitian), rtol=rtol)


def _pinv_impl(a, *, rcond, hermitian, rtol):
    if rtol == _UNSET:
        return np.linalg.pinv(a, rcond, hermitian)
    return np.linalg.pinv(a, rcond, hermitian, rtol=rtol)


def _pinv_emit(a, *, rcond, hermitian, rtol):
    extra = "" if rtol == _UNSET else f", rtol={rtol!r}"
    return f"np.linalg.pinv({a}, {rcond!r}, {hermitian!r}{extra})"


def _pinv_shape(a: Aval, *, rcond, hermitian, rtol):
    check_stacked("pinv", a)
    return Aval(a.shape[:-2] + a.shape[:-3:-1], result_dtype("pinv", a))


def _pinv_tangent(a, a_dot, p):
    """Golub and Pereyra's derivative of the pseudo-inverse `p` of `a`, of fixed rank."""
    a_dot_h = H(a_dot)
    left = eye_like(matmul(a, p)) - matmul(a, p)  # I - A P (m x m)
    right = eye_like(matmul(p, a)) - matmul(p, a)  # I - P A (n x n)
    return (
        -matmul(matmul(p, a_dot), p)
        + matmul(matmul(matmul(p, H(p)), a_dot_h), left)
        + matmul(matmul(right, a_dot_h), matmul(H(p), p))
    )


def _pinv_jvp(primals, tangents, *, out, rcond, hermitian, rtol):
    (a,), (a_dot,) = primals, tangents
    # hermitian=True too: the general formula, as PyTorch's (whose pinv(hermitian=True) is
    # differentiated so); JAX's matches no formula off the Hermitian directions
    return None if a_dot is None else _pinv_tangent(a, a_dot, out)


pinv_p = Primitive(
    "linalg.pinv",
    impl=_pinv_impl,
    shape=_pinv_shape,
    jvp=_pinv_jvp,
    vjp=transposed(_pinv_jvp, "pinv", multiple_results=False),
    batch=rule_for(stacked_batch),
    emit=_pinv_emit,
    torch_name="LinalgPinvBackward0",
)

# -- lstsq --------------------------------------------------------------------------------------


def lstsq(a, b, rcond=None):
    """`np.linalg.lstsq(a, b, rcond)`: `(x, residuals, rank, s)`; `a` may be a stack here
    (what vmap makes of it), NumPy's function takes one matrix."""
    rcond = None if rcond is None else float(rcond)
    return tuple(bind(lstsq_p, a, b, rcond=rcond))


def _lstsq_shape(a: Aval, b: Aval, *, rcond):
    check_stacked("lstsq", a)
    *stack, m, n = a.shape
    stack = tuple(stack)
    vector = b.ndim == len(stack) + 1
    if b.ndim not in (len(stack) + 1, len(stack) + 2) or b.shape[len(stack)] != m:
        raise np.linalg.LinAlgError(
            f"lstsq: Incompatible dimensions: a has shape {a.shape} and b {b.shape}; b must be "
            f"1-D of length {m} or a ({m}, K) matrix"
        )
    if b.shape[: len(stack)] != stack:
        raise ValueError(f"lstsq: a of shape {a.shape} and b of shape {b.shape} do not stack")
    k = 1 if vector else b.shape[-1]
    dtype = result_dtype("lstsq", a, b)
    x = Aval(stack + ((n,) if vector else (n, k)), dtype)
    residuals = Aval(stack + ((k,) if m > n else (0,)), real_dtype(dtype))
    return (
        x,
        residuals,
        Aval(stack, np.dtype(np.int32)),
        Aval(stack + (min(m, n),), real_dtype(dtype)),
    )


def _one_lstsq(a, b, rcond):
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=rcond)
    m, n = a.shape
    if m > n and residuals.size == 0:  # rank deficient: NumPy returns none (module docstring)
        r = b - a @ x
        residuals = np.sum((r.conj() * r).real, axis=0)
        residuals = residuals.reshape(-1) if residuals.ndim else residuals[None]
    return x, residuals, np.int32(rank), s


def _lstsq_impl(a, b, *, rcond):
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 2:
        return _one_lstsq(a, b, rcond)
    stack = a.shape[:-2]
    parts = [_one_lstsq(a[i], b[i], rcond) for i in np.ndindex(stack)]
    return tuple(np.stack(p).reshape(stack + p[0].shape) for p in zip(*parts))


def _lstsq_jvp(primals, tangents, *, out, rcond):
    a, b = primals
    a_dot, b_dot = tangents
    x, residuals, _, s = out
    vector = len(shape_of(b)) == len(shape_of(a)) - 1
    col = (lambda v: expand_dims(v, (len(shape_of(v)),))) if vector else (lambda v: v)
    m, n = shape_of(a)[-2:]
    # LAPACK's cutoff for lstsq (NumPy computes in double: its epsilon whatever the dtype)
    p = pinv(a, np.finfo(np.float64).eps * max(m, n) if rcond is None else rcond)
    x_dot = None if b_dot is None else matmul(p, col(b_dot))
    if a_dot is not None:
        t = matmul(_pinv_tangent(a, a_dot, p), col(b))
        x_dot = t if x_dot is None else x_dot + t
    # residuals = sum |b - a x|^2 over rows: d = 2 Re sum conj(r) (db - da x - a dx)
    res_dot = None
    if m > n:
        r = col(b) - matmul(a, col(x))
        dr = -matmul(a, x_dot)
        if a_dot is not None:
            dr = dr - matmul(a_dot, col(x))
        if b_dot is not None:
            dr = dr + col(b_dot)
        res_dot = real_part(sum(conj(r) * dr, (len(shape_of(r)) - 2,), False)) * 2.0
    s_dot = None
    if a_dot is not None:
        s_dot = _singular_values_tangent(a, a_dot)
    if vector:
        x_dot = squeeze(x_dot, (len(shape_of(x_dot)) - 1,))
    return x_dot, res_dot, None, s_dot


def _singular_values_tangent(a, a_dot):
    """`Re diag(u^H dA v)`: the tangent of the singular values (the reduced SVD's)."""
    u, _, vh = svd(a, False, True)
    return real_part(diagonal(matmul(matmul(H(u), a_dot), H(vh))))


def _lstsq_batch(args, dims, *, rcond):
    (a, b), (da, db) = args, dims
    size = shape_of(a)[da] if da is not None else shape_of(b)[db]

    def front(x, d):
        if d is not None:
            return move_to_front(x, d)
        return broadcast_to(expand_dims(x, (0,)), (size,) + shape_of(x))

    return lstsq(front(a, da), front(b, db), rcond), (0, 0, 0, 0)


lstsq_p = Primitive(
    "linalg.lstsq",
    impl=_lstsq_impl,
    shape=_lstsq_shape,
    jvp=_lstsq_jvp,
    vjp=transposed(_lstsq_jvp, "lstsq", multiple_results=True),
    batch=_lstsq_batch,
    emit=lambda a, b, *, rcond: [
        "import tracegrad.primitives.linalg.least_squares as _tg_least_squares",
        f"_tg_least_squares._lstsq_impl({a}, {b}, rcond={rcond!r})",
    ],
    multiple_results=True,
    torch_name="LinalgLstsqBackward0",
)

__all__ = ["lstsq", "pinv"]
PRIMITIVES = (pinv_p, lstsq_p)
