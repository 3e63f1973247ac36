"""PyTorch's older top-level linear-algebra names, over `tracegrad.torch.linalg`:
`cholesky(upper=)`, `qr(some=)`, `svd(some=, compute_uv=)` (V, not Vh), `slogdet`, `logdet`,
`matrix_power`, `matrix_exp`, `pinverse` and `triangular_solve` (solution and a copy of the
coefficients). `matrix_exp` and `triangular_solve` are `tracegrad.scipy.linalg`'s `expm` and
`solve_triangular`, differentiable primitives, on one matrix or a loop over a batch.
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from tracegrad.torch import linalg
from tracegrad.torch.ops.arithmetic import add, log, where
from tracegrad.torch.ops.comparisons import lt
from tracegrad.torch.ops.conventions import _as_tensor
from tracegrad.torch.ops.shapes import clone, reshape, stack, transpose
from tracegrad.torch.tensor import Tensor

__all__ = [
    "cholesky",
    "qr",
    "svd",
    "slogdet",
    "logdet",
    "matrix_power",
    "matrix_exp",
    "pinverse",
    "triangular_solve",
]


def _scipy_linalg():
    """`tracegrad.scipy.linalg`, imported at first use: `import tracegrad` must not need SciPy
    (an optional extra); matrix_exp and triangular_solve do."""
    from tracegrad.scipy import linalg  # (not at import: SciPy is an optional extra)

    return linalg


qr_result = namedtuple("qr", ["Q", "R"])
svd_result = namedtuple("svd", ["U", "S", "V"])
slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])
triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


_warned: set[str] = set()


def _deprecated(name: str, replacement: str) -> None:
    """PyTorch's deprecation warning, once per process (its TORCH_WARN_ONCE)."""
    if name not in _warned:
        _warned.add(name)
        warnings.warn(
            f"torch.{name} is deprecated in favor of torch.linalg.{replacement} will be "
            "removed in a future PyTorch release.",
            UserWarning,
            stacklevel=3,
        )


def _mH(x):  # noqa: N802 - PyTorch's name
    x = transpose(x, -2, -1)
    return x.conj() if x.dtype.kind == "c" else x


def cholesky(input, upper=False):
    _deprecated("cholesky", "cholesky and")
    return linalg.cholesky(input, upper=upper)


def qr(input, some=True):
    _deprecated("qr", "qr and")
    return qr_result(*linalg.qr(input, mode="reduced" if some else "complete"))


def svd(input, some=True, compute_uv=True):
    """`(U, S, V)`: V, not Vh; `some=False` makes U and V square. Without `compute_uv`, U and V
    are zeros (square), as PyTorch's."""
    A = _as_tensor(input)
    if not compute_uv:
        s = linalg.svdvals(A)
        m, n = A.shape[-2:]
        batch = A.shape[:-2]
        u = _as_tensor(np.zeros((*batch, m, m), A.dtype))
        v = _as_tensor(np.zeros((*batch, n, n), A.dtype))
        return svd_result(u, s, v)
    u, s, vh = linalg.svd(A, full_matrices=not some)
    return svd_result(u, s, _mH(vh))


def slogdet(input):
    return slogdet_result(*linalg.slogdet(input))


def logdet(input):
    """log(det): nan for a negative determinant, -inf for a singular matrix."""
    sign, logabsdet = linalg.slogdet(input)
    if sign.dtype.kind == "c":  # log(sign) + log|det|, complex
        return add(log(sign), logabsdet)
    return where(lt(sign.detach(), 0), float("nan"), logabsdet)


def matrix_power(input, n):
    return linalg.matrix_power(input, n)


def _square(name: str, A: Tensor) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices"
        )


def _batched(fn, *tensors):
    """`fn` on each matrix of a (common) batch, the results stacked."""
    first = tensors[0]
    if first.ndim == 2:
        return fn(*tensors)
    batch = first.shape[:-2]
    flat = [reshape(t, (-1, *t.shape[-2:])) for t in tensors]
    out = stack([fn(*(t[i] for t in flat)) for i in range(flat[0].shape[0])])
    return reshape(out, (*batch, *out.shape[-2:]))


def matrix_exp(input):
    A = _as_tensor(input)
    _square("linalg.matrix_exp", A)
    if A.dtype.kind not in "fc":
        raise RuntimeError(
            f"linalg.matrix_exp: Expected a floating point or complex tensor as input. Got "
            f"{linalg.scalar_type(A.dtype)}"
        )
    if A.shape[-1] == 0 or A.numel() == 0:
        return clone(A)
    return _batched(_scipy_linalg().expm, A)


def pinverse(input, rcond=1e-15):
    return linalg.pinv(input, rtol=rcond)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """Solve A X = b (A^T X = b with `transpose`) for triangular A; returns `(X, A.clone())`."""
    _deprecated("triangular_solve", "solve_triangularand")  # PyTorch's message lacks a space
    b, A = _as_tensor(input), _as_tensor(A)
    if b.ndim < 2 or A.ndim < 2:
        raise RuntimeError(
            f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
            f"{b.ndim} dimensions instead"
            if b.ndim < 2
            else f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
            f"{A.ndim} dimensions instead"
        )
    if b.dtype != A.dtype:
        raise RuntimeError(
            "Expected b and A to have the same dtype, but found b of type "
            f"{linalg.scalar_type(b.dtype)} and A of type {linalg.scalar_type(A.dtype)} instead."
        )
    batch = np.broadcast_shapes(b.shape[:-2], A.shape[:-2])
    bb = b.expand(*batch, *b.shape[-2:]) if b.shape[:-2] != batch else b
    AA = A.expand(*batch, *A.shape[-2:]) if A.shape[:-2] != batch else A

    def solve(a, rhs):
        return _scipy_linalg().solve_triangular(
            a, rhs, lower=not upper, trans=1 if transpose else 0, unit_diagonal=unitriangular
        )

    return triangular_solve_result(_batched(solve, AA, bb), clone(AA))
