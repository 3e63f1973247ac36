"""PyTorch's `multilabel_margin_loss` and `triplet_margin_with_distance_loss`, with their
Modules `MultiLabelMarginLoss` and `TripletMarginWithDistanceLoss`.

As in `losses_margin`, each is ATen's (or PyTorch's Python) formula in tensor ops, so the
gradients are the primitives' rules. The multi-label hinge is written `where(z > 0, z, 0)`
because ATen's backward passes nothing at `z == 0`; the triplet hinge is `clamp_min`, which
passes the gradient there, as PyTorch's does.
"""

from __future__ import annotations

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.nn.distance import PairwiseDistance, pairwise_distance
from tracegrad.torch.nn.loss_layers import _Loss
from tracegrad.torch.nn.losses import as_tensor, check_reduction, resolve_reduction
from tracegrad.torch.ops.conventions import _named
from tracegrad.torch.tensor import Tensor

__all__ = [
    "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss",
    "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _sizes(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# -- multilabel_margin_loss -----------------------------------------------------------------------


def _multilabel_checks(x: Tensor, y: Tensor) -> tuple[int, int]:
    """(samples, classes), after ATen's checks in its order."""
    if not (x.ndim == 0 or (x.ndim == 1 and x.shape[0]) or (x.ndim == 2 and x.shape[1])):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{_sizes(x.shape)}"
        )
    if x.ndim <= 1:
        n, dim = 1, (1 if x.ndim == 0 else x.shape[0])
        ok = y.ndim <= 1 and y.numel() == dim
    else:
        n, dim = x.shape
        ok = y.ndim == 2 and y.shape == x.shape
    if not ok:
        raise RuntimeError(
            f"inconsistent target size: {_sizes(y.shape)} for input of size: {_sizes(x.shape)}"
        )
    if y.dtype != np.int64:
        raise RuntimeError(f"expected scalar type int64 but found {y.dtype.name}")
    labels = np.asarray(y._cell.value)
    if labels.size and (labels.min() < -1 or labels.max() >= dim):
        raise RuntimeError("argument #2 'target' is out of range")
    return n, dim


def multilabel_margin_loss(
    input, target, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Multi-class multi-label hinge loss: per sample, the target classes are the leading
    entries of `target` before the first -1, and the loss is
    `sum over targets j and non-targets i of max(0, 1 - (x[j] - x[i]))`, over the number of
    classes."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, y = as_tensor(input), as_tensor(target)
    n, dim = _multilabel_checks(x, y)
    labels = np.asarray(y._cell.value).reshape(n, dim)
    # the target slots of each sample: those before its first -1
    first_stop = np.where((labels < 0).any(1), (labels < 0).argmax(1), dim)
    valid = np.arange(dim) < first_stop[:, None]
    is_target = np.zeros((n, dim), bool)
    rows = np.broadcast_to(np.arange(n)[:, None], (n, dim))
    is_target[rows[valid], labels[valid]] = True
    rows_x = ops.reshape(x, (n, dim))
    picked = ops.gather(rows_x, 1, Tensor(np.where(valid, labels, 0)))  # x at each target slot
    z = ops.add(ops.sub(ops.unsqueeze(rows_x, 1), ops.unsqueeze(picked, 2)), 1.0)
    counted = Tensor(valid[:, :, None] & ~is_target[:, None, :])
    hinge = ops.where(ops.logical_and(counted, ops.gt(z, 0)), z, 0.0)
    loss = ops.div(ops.sum(hinge, (1, 2)), dim)
    if reduction == "none":
        loss = loss if x.ndim == 2 else ops.reshape(loss, ())
    elif reduction == "mean":
        loss = ops.mean(loss)
    else:
        loss = ops.sum(loss)
    return _named(loss, "MultilabelMarginLossBackward0", (input,))


class MultiLabelMarginLoss(_Loss):
    """`multilabel_margin_loss` with a fixed `reduction`."""

    def forward(self, input, target):
        return multilabel_margin_loss(input, target, reduction=self.reduction)


# -- triplet_margin_with_distance_loss ------------------------------------------------------------


def triplet_margin_with_distance_loss(
    anchor,
    positive,
    negative,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """`max(0, margin + d(a, p) - d(a, n))` for any distance `d` (default
    `pairwise_distance`); with `swap`, `d(a, n)` becomes `min(d(a, n), d(p, n))`."""
    check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pos, neg = as_tensor(anchor), as_tensor(positive), as_tensor(negative)
    if not (a.ndim == pos.ndim == neg.ndim):
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number "
            f"of dimensions, but got: anchor {a.ndim}D, positive {pos.ndim}D, and negative "
            f"{neg.ndim}D inputs"
        )
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(a, pos)
    dist_neg = distance(a, neg)
    if swap:
        dist_neg = ops.minimum(dist_neg, distance(pos, neg))
    loss = _named(
        ops.clamp_min(ops.sub(ops.add(dist_pos, margin), dist_neg), 0), "ClampMinBackward0"
    )
    if reduction == "sum":
        return ops.sum(loss)
    if reduction == "mean":
        return ops.mean(loss)
    return loss


class TripletMarginWithDistanceLoss(_Loss):
    """`triplet_margin_with_distance_loss` with fixed options; the default distance is a
    `PairwiseDistance()` child module, as PyTorch's."""

    def __init__(
        self,
        *,
        distance_function=None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(
                "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                f"{margin} instead"
            )
        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )
