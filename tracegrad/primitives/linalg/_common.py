"""What every linear-algebra primitive shares: NumPy's dtype and shape checks, the matrix
helpers the derivative rules are written with, and the batching rule of a stacked operation.

NumPy's `np.linalg` functions work on stacks of matrices (every axis before the last two is a
stack axis), so a batched call is one more stack axis: the batching rule moves the batch axis
to the front and binds the primitive once. The rules use only tracegrad operations (matmul,
einsum, elementwise), so a derivative of a derivative is again a graph of primitives.
"""

from __future__ import annotations

import weakref

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.broadcasting import unbroadcast
from tracegrad.primitives.einsum import einsum
from tracegrad.primitives.products import cast_like, matmul
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import expand_dims, move_to_front, transpose

LinAlgError = np.linalg.LinAlgError


# -- dtypes and shapes, as NumPy checks them ----------------------------------------------------


def result_dtype(name: str, *avals: Aval) -> np.dtype:
    """The dtype NumPy's linalg returns for these inputs: integers and bools compute in double,
    float32 and complex64 stay single (NumPy computes in double and rounds back), float16 and
    extended precision are refused as NumPy refuses them."""
    dtypes = [a.dtype for a in avals]
    for d in dtypes:
        if d.kind not in "biufc" or d in (np.float16, np.longdouble, np.clongdouble):
            raise TypeError(
                f"{name}: array type {d.name} is unsupported in linalg; convert it to float64 "
                "(or float32, complex64, complex128) first"
            )
    single = all(d in (np.float32, np.complex64) for d in dtypes)
    cplx = any(d.kind == "c" for d in dtypes)
    if single:
        return np.dtype(np.complex64 if cplx else np.float32)
    return np.dtype(np.complex128 if cplx else np.float64)


def check_stacked(name: str, a: Aval) -> None:
    if a.ndim < 2:
        raise LinAlgError(
            f"{name}: {a.ndim}-dimensional array given. Array must be at least "
            "two-dimensional (a matrix, or a stack of them)"
        )


def check_square(name: str, a: Aval) -> None:
    check_stacked(name, a)
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError(
            f"{name}: Last 2 dimensions of the array must be square, got shape {a.shape}"
        )


def real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype in (np.float32, np.complex64) else np.float64)


# -- matrix helpers for the rules ---------------------------------------------------------------


def mT(x):
    """The matrix transpose of a stack (swap the last two axes)."""
    n = len(shape_of(x))
    return transpose(x, tuple(range(n - 2)) + (n - 1, n - 2))


def is_complex(x) -> bool:
    return dtype_of(x).kind == "c"


def conj(x):
    return ew.conjugate(x) if is_complex(x) else x


def H(x):
    """The conjugate transpose of a stack."""
    return conj(mT(x))


def real_part(x):
    return ew.real(x) if is_complex(x) else x


def diagonal(x):
    """The diagonal of each matrix of a stack, as its last axis."""
    return einsum("...ii->...i", x)


def trace(x):
    return einsum("...ii->...", x)


def diag(v):
    """Square matrices with `v`'s last axis on their diagonals (zeros elsewhere)."""
    n = shape_of(v)[-1]
    return mul(expand_dims(v, (len(shape_of(v)),)), np.eye(n, dtype=real_dtype(dtype_of(v))))


def eye_like(x):
    """The identity in `x`'s matrix shape and dtype (a constant)."""
    return np.eye(shape_of(x)[-1], dtype=dtype_of(x))


def sym(x):
    """`(x + x^H) / 2`: the Hermitian part, what a rule of an operation that reads only one
    triangle of its input (cholesky, eigh) differentiates, as JAX and PyTorch do."""
    return (x + H(x)) * 0.5


def columns(x, start: int, stop: int):
    """Columns `start:stop` of each matrix of a stack."""
    shape = shape_of(x)
    return slice_static(x, (0,) * (len(shape) - 1) + (start,), shape[:-1] + (stop,))


def mul(x, y):
    """`x * y`, elementwise with broadcasting (tracers or arrays alike)."""
    return bind(ew.multiply_p, x, y)


def fit(bar, x):
    """A cotangent for the input `x`: summed over the stack axes that broadcasting added, in
    `x`'s dtype (the real part for a real input of a complex result, as JAX)."""
    if bar is None:
        return None
    return cast_like(unbroadcast(bar, shape_of(x)), x)


# -- reverse mode as the transpose of forward mode --------------------------------------------


def _transposition():
    # a vjp by transposition traces the jvp rule and runs the backward pass over the trace,
    # which are transforms (DESIGN.md §7)
    from tracegrad.transforms import custom

    return custom


def transposed(jvp, name: str, multiple_results: bool):
    """The vjp rule that is the transpose of `jvp` (linear in the tangents, the primals and
    outputs fixed): for the factorisations whose reverse-mode formulas would repeat the
    forward ones backwards (svd, eig, qr, pinv), reverse mode is derived, as JAX derives it,
    so the two modes cannot disagree. The jvp is traced once per input signature."""
    graphs: dict = {}

    def vjp(bar, *primals, out, **params):
        custom = _transposition()
        outs = list(out) if multiple_results else [out]
        wanted = [carries_derivative(p) for p in primals]
        if not any(wanted):
            return (None,) * len(primals)
        avals = [custom.aval_like(x) for x in [*primals, *outs]]
        key = (tuple(avals), tuple(sorted(params.items())))
        graph = graphs.get(key)
        n, k = len(primals), len(outs)
        if graph is None:

            def tangent_map(*xs):
                tangents = iter(xs[n + k :])
                ts = [next(tangents) if w else None for w in wanted]
                o = tuple(xs[n : n + k]) if multiple_results else xs[n]
                t_out = jvp(list(xs[:n]), ts, out=o, **params)
                return list(t_out) if multiple_results else [t_out]

            lin = [a.strengthen() for a, w in zip(avals, wanted) if w]
            graph = custom.trace_rule(tangent_map, avals + lin, f"{name}_jvp", f"{name}'s jvp")
            graphs[key] = graph
        cts = list(bar) if multiple_results else [bar]
        bars = iter(custom.transpose(graph, n + k, [*primals, *outs], cts))
        return tuple(fit(next(bars), p) if w else None for p, w in zip(primals, wanted))

    return vjp


# -- batching -----------------------------------------------------------------------------------


def stacked_batch(prim):
    """The batching rule of a one-input operation on stacks: the batch axis becomes the first
    stack axis. Holds the primitive weakly (a primitive must not keep itself alive)."""
    ref = weakref.ref(prim)

    def batch(args, dims, **params):
        (x,), (d,) = args, dims
        out = bind(ref(), move_to_front(x, d), **params)
        return out, (tuple(0 for _ in out) if isinstance(out, tuple | list) else 0)

    return batch


__all__ = [
    "LinAlgError",
    "H",
    "check_square",
    "check_stacked",
    "columns",
    "conj",
    "diag",
    "diagonal",
    "eye_like",
    "fit",
    "is_complex",
    "mT",
    "matmul",
    "mul",
    "real_dtype",
    "real_part",
    "result_dtype",
    "stacked_batch",
    "sym",
    "trace",
    "transposed",
]
