"""PyTorch's margin and embedding losses: `margin_ranking_loss`, `hinge_embedding_loss`,
`soft_margin_loss`, `multilabel_soft_margin_loss`, `multi_margin_loss`,
`cosine_embedding_loss` and `triplet_margin_loss`.

As in `losses`, each is ATen's formula in tensor ops (gradients from the primitives' rules),
with the reductions and the legacy `size_average` / `reduce` handling shared from there. The
hinges `max(0, z)` are written `where(z > 0, z, 0)` where PyTorch's backward passes no gradient
at `z == 0`, and `clamp_min` where it passes one (its `clamp_min` rule), so gradients agree at
the kinks too.
"""

from __future__ import annotations

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.nn.distance import pairwise_distance
from tracegrad.torch.nn.losses import (
    apply_reduction,
    as_tensor,
    log_sigmoid,
    resolve_reduction,
)
from tracegrad.torch.tensor import Tensor

__all__ = [
    "cosine_embedding_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_soft_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
]

_EPSILON = 1e-12  # ATen's, added to the squared norms of cosine_embedding_loss


def _sizes(t: Tensor) -> str:
    return "[" + ", ".join(str(d) for d in t.shape) + "]"


def margin_ranking_loss(
    input1,
    input2,
    target,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """`max(0, -y * (x1 - x2) + margin)`: zero when `x1` ranks above `x2` by the margin for
    `y = 1` (and below it for `y = -1`)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x1, x2, y = as_tensor(input1), as_tensor(input2), as_tensor(target)
    if x1.ndim != x2.ndim or x1.ndim != y.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {x1.shape}, input2: {x2.shape}, target: {y.shape} "
        )
    z = ops.add(ops.mul(ops.neg(y), ops.sub(x1, x2)), margin)
    return apply_reduction(ops.clamp_min(z, 0), reduction)


def hinge_embedding_loss(
    input,
    target,
    margin: float = 1.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """`x` where `y = 1`, `max(0, margin - x)` where `y = -1` (ATen adds both terms where `y`
    is neither, as here)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, y = as_tensor(input), as_tensor(target)
    below_margin = ops.where(ops.ne(y, 1), ops.clamp_min(ops.rsub(x, margin), 0), 0.0)
    itself = ops.where(ops.ne(y, -1), x, 0.0)
    return apply_reduction(ops.add(below_margin, itself), reduction)


def soft_margin_loss(
    input, target, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """`log(1 + exp(-y * x))`, the logistic loss for labels +-1. ATen evaluates it as written
    (it overflows for `-y * x` above ~700); here it is `-log_sigmoid(y * x)`, equal where
    ATen's is finite and finite everywhere."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, y = as_tensor(input), as_tensor(target)
    return apply_reduction(ops.neg(log_sigmoid(ops.mul(y, x))), reduction)


def multilabel_soft_margin_loss(
    input,
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross entropy with logits per class, averaged over the classes (the last axis):
    `-(y * log_sigmoid(x) + (1 - y) * log_sigmoid(-x))`, times `weight`, one loss per sample."""
    if size_average is not None or reduce is not None:
        reduction = resolve_reduction(size_average, reduce, reduction)
    x, y = as_tensor(input), as_tensor(target)
    loss = ops.neg(
        ops.add(ops.mul(y, log_sigmoid(x)), ops.mul(ops.rsub(y, 1.0), log_sigmoid(ops.neg(x))))
    )
    if weight is not None:
        loss = ops.mul(loss, as_tensor(weight))
    class_dim = x.ndim - 1
    loss = ops.div(ops.sum(loss, class_dim), x.shape[class_dim])
    if reduction == "none":
        return loss
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    raise ValueError(f"{reduction} is not valid")


def _multi_margin_checks(x: Tensor, y: Tensor, weight) -> tuple[int, int]:
    """(samples, classes), after ATen's shape checks."""
    if not (x.ndim <= 2 and x.numel() > 0):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{_sizes(x)}"
        )
    n_samples = 1 if x.ndim <= 1 else x.shape[0]
    n_classes = 1 if x.ndim == 0 else x.shape[-1]
    if not (y.ndim <= 1 and y.numel() == n_samples):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{n_samples}], but got "
            f"{_sizes(y)}. Input has shape {_sizes(x)}."
        )
    if weight is not None:
        w = as_tensor(weight)
        if not (w.ndim <= 1 and w.numel() == n_classes):
            raise RuntimeError(
                f"inconsistent weight size, expected {n_classes} but got {_sizes(w)}"
            )
    if y.dtype != np.int64:
        raise RuntimeError(f"expected scalar type int64 but found {y.dtype.name}")
    return n_samples, n_classes


def multi_margin_loss(
    input,
    target,
    p: int = 1,
    margin: float = 1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: per sample, `sum_{j != y} max(0, margin - x[y] + x[j])**p`
    (times `weight[y]`) over the number of classes. `p` is 1 or 2."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and as_tensor(weight).ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, y = as_tensor(input), as_tensor(target)
    n_samples, n_classes = _multi_margin_checks(x, y, weight)
    labels = y.detach().numpy().reshape(n_samples)
    if ((labels < 0) | (labels >= n_classes)).any():
        raise RuntimeError("target out of range")
    rows = ops.reshape(x, (n_samples, n_classes))
    index = Tensor(labels.reshape(n_samples, 1))
    z = ops.sub(rows, ops.sub(ops.gather(rows, 1, index), margin))
    hinge = ops.where(ops.gt(z, 0), z, 0.0)  # ATen adds nothing (and no gradient) at z == 0
    if p == 2:
        hinge = ops.mul(hinge, hinge)
    others = np.ones((n_samples, n_classes), dtype=x.dtype)
    others[np.arange(n_samples), labels] = 0
    hinge = ops.mul(hinge, Tensor(others))
    if weight is not None:
        hinge = ops.mul(hinge, ops.gather(as_tensor(weight), 0, Tensor(labels)).reshape(-1, 1))
    loss = ops.div(ops.sum(hinge, 1), n_classes)
    if reduction == "none":
        return loss if y.ndim > 0 else ops.reshape(loss, ())
    return apply_reduction(loss, reduction)


def cosine_embedding_loss(
    input1,
    input2,
    target,
    margin: float = 0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """`1 - cos(x1, x2)` where `y = 1`, `max(0, cos(x1, x2) - margin)` where `y = -1`, with
    ATen's cosine `<x1, x2> / sqrt((|x1|^2 + 1e-12) * (|x2|^2 + 1e-12))` along the last axis."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x1, x2, y = as_tensor(input1), as_tensor(input2), as_tensor(target)
    if y.ndim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    expected = 2 if y.ndim == 1 else 1
    if x1.ndim != expected or x2.ndim != expected:
        raise RuntimeError(
            f"{y.ndim}D target tensor expects {expected}D input tensors, but found inputs with "
            f"sizes {_sizes(x1)} and {_sizes(x2)}."
        )
    dim = y.ndim
    dot = ops.sum(ops.mul(x1, x2), dim)
    square1 = ops.add(ops.sum(ops.mul(x1, x1), dim), _EPSILON)
    square2 = ops.add(ops.sum(ops.mul(x2, x2), dim), _EPSILON)
    cos = ops.div(dot, ops.sqrt(ops.mul(square1, square2)))
    positive = ops.where(ops.eq(y, 1), ops.rsub(cos, 1.0), 0.0)
    negative = ops.where(ops.eq(y, -1), ops.clamp_min(ops.sub(cos, margin), 0), 0.0)
    return apply_reduction(ops.add(positive, negative), reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """`max(0, margin + d(a, p) - d(a, n))` with `d = pairwise_distance(., ., p, eps)`; with
    `swap`, `d(a, n)` is replaced by `min(d(a, n), d(p, n))` (the harder negative)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pos, neg = as_tensor(anchor), as_tensor(positive), as_tensor(negative)
    if not (a.ndim == pos.ndim == neg.ndim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative "
            f"{neg.ndim}D inputs"
        )
    d_pos = pairwise_distance(a, pos, p, eps)
    d_neg = pairwise_distance(a, neg, p, eps)
    if swap:
        d_neg = ops.minimum(d_neg, pairwise_distance(pos, neg, p, eps))
    loss = ops.clamp_min(ops.add(ops.sub(d_pos, d_neg), margin), 0)
    return apply_reduction(loss, reduction)
