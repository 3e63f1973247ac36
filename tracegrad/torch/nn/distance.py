"""Distances between vectors, PyTorch's `cosine_similarity`, `pairwise_distance`, `pdist` and
the modules `CosineSimilarity` and `PairwiseDistance`.

Each is a composition of tensor ops, so gradients are the primitives' rules. The p-norms are
written so that a zero vector has PyTorch's gradient (zero) rather than a nan: the root, whose
derivative is infinite at 0, only ever sees a positive input (the double `where`).
`triplet_margin_loss` (in `losses_margin`) is built on `pairwise_distance`.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.nn.module import Module
from tracegrad.torch.tensor import Tensor

__all__ = [
    "CosineSimilarity",
    "PairwiseDistance",
    "cosine_similarity",
    "pairwise_distance",
    "pdist",
]


def _float_tensor(x) -> Tensor:
    """`x` as a tensor; integer and bool inputs become the default float dtype (PyTorch's
    distances accept them and compute in floating point)."""
    t = x if isinstance(x, Tensor) else ops.as_tensor(x)
    return t._astype(get_default_dtype()) if t.dtype.kind in "biu" else t


def broadcast_shape(x: Tensor, y: Tensor) -> tuple[int, ...]:
    """The shape `x` and `y` broadcast to, or PyTorch's message naming the first clash."""
    a, b = tuple(x.shape), tuple(y.shape)
    ndim = max(len(a), len(b))
    a, b = (1,) * (ndim - len(a)) + a, (1,) * (ndim - len(b)) + b
    for i, (sa, sb) in enumerate(zip(a, b)):
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                f"non-singleton dimension {i}"
            )
    return tuple(sb if sa == 1 else sa for sa, sb in zip(a, b))


def vector_norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The p-norm of `x` along `dim` with PyTorch's gradient conventions: at a zero vector the
    gradient is zero (for every p), not the nan of a naive `sqrt`/`pow` chain."""
    if p == 0:  # the count of non-zeros: piecewise constant, a zero gradient (as PyTorch's)
        count = ops.sum(ops.ne(x, 0)._astype(x.dtype), dim, keepdim=keepdim)
        return ops.add(count, ops.mul(ops.sum(x, dim, keepdim=keepdim), 0.0))
    if p == math.inf:
        return ops.amax(ops.abs(x), dim, keepdim=keepdim)
    if p == -math.inf:
        return ops.amin(ops.abs(x), dim, keepdim=keepdim)
    if p == 1:
        return ops.sum(ops.abs(x), dim, keepdim=keepdim)
    powered = ops.mul(x, x) if p == 2 else ops.pow(ops.abs(x), p)
    total = ops.sum(powered, dim, keepdim=keepdim)
    positive = ops.gt(total, 0)
    safe = ops.where(positive, total, 1.0)
    root = ops.sqrt(safe) if p == 2 else ops.pow(safe, 1.0 / p)
    return ops.where(positive, root, 0.0)


def _clamp_without_gradient(t: Tensor, low: float) -> Tensor:
    """`max(t, low)` whose gradient is the identity everywhere: PyTorch clamps these norms in
    place under `no_grad`, so the clamp changes the value but not the backward pass."""
    return ops.add(t, ops.sub(ops.clamp_min(t, low), t).detach())


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """`<x1, x2> / (max(||x1||, eps) * max(||x2||, eps))` along `dim`, as PyTorch computes it
    since 1.12: each input is divided by its own (clamped) norm first, so the result stays in
    [-1, 1] and nothing overflows. The inputs broadcast against each other."""
    a, b = _float_tensor(x1), _float_tensor(x2)
    if a.shape != b.shape:
        shape = broadcast_shape(a, b)
        a, b = ops.expand(a, shape), ops.expand(b, shape)
    norm_a = _clamp_without_gradient(vector_norm(a, 2, dim, keepdim=True), eps)
    norm_b = _clamp_without_gradient(vector_norm(b, 2, dim, keepdim=True), eps)
    return ops.sum(ops.mul(ops.div(a, norm_a), ops.div(b, norm_b)), dim)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """`||x1 - x2 + eps||_p` over the last axis (of the broadcast shape), as PyTorch: the `eps`
    is added to the difference, which keeps the distance (and its gradient) away from 0."""
    a, b = _float_tensor(x1), _float_tensor(x2)
    last = max(a.ndim, b.ndim) - 1
    return vector_norm(ops.add(ops.sub(a, b), eps), p, last, keepdim=keepdim)


def pdist(input, p: float = 2) -> Tensor:
    """The p-norm distance between every pair of rows `i < j` of a 2-D input, in the order of
    the upper triangle (row by row): `n * (n - 1) / 2` values."""
    x = _float_tensor(input)
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = np.triu_indices(x.shape[0], 1)
    left = ops.index_select(x, 0, Tensor(rows.astype(np.int64)))
    right = ops.index_select(x, 0, Tensor(cols.astype(np.int64)))
    return vector_norm(ops.sub(left, right), p, 1)


class CosineSimilarity(Module):
    """`cosine_similarity(x1, x2, dim, eps)` as a module."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """`pairwise_distance(x1, x2, p, eps, keepdim)` as a module."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
