"""PyTorch's regression and likelihood losses (`binary_cross_entropy[_with_logits]`, `l1_loss`,
`smooth_l1_loss`, `huber_loss`, `kl_div`, `poisson_nll_loss`, `gaussian_nll_loss`) and the
reduction machinery every loss shares; the margin and embedding losses are in `losses_margin`.

Each loss is the formula ATen evaluates, written with tensor ops, so the gradients are the
primitives' rules and agree with PyTorch's hand-written backward formulas wherever those are
the derivative of the value (everywhere except the points named in a docstring). Where ATen
evaluates a formula that can overflow, the stable equivalent is used and the docstring says so.
`reduction` is 'none', 'mean' or 'sum' (and 'batchmean' for `kl_div`); the deprecated
`size_average` / `reduce` pair overrides it with PyTorch's warning, as in PyTorch.
CTC is out of scope: `ctc_loss` raises `NotImplementedError`.
"""

from __future__ import annotations

import math
import numbers
import warnings

from tracegrad.torch import ops
from tracegrad.torch.nn.distance import broadcast_shape
from tracegrad.torch.tensor import Tensor

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "ctc_loss",
    "gaussian_nll_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
]

_REDUCTIONS = ("none", "mean", "sum")


# -- reductions (shared with losses_margin and loss_layers) ---------------------------------------


def legacy_reduction(size_average, reduce, emit_warning: bool = True) -> str:
    """The `reduction` the deprecated pair stands for (PyTorch's
    `_Reduction.legacy_get_string`): `reduce=False` is 'none', else `size_average=False` is
    'sum', else 'mean'; a `None` counts as True. Warns as PyTorch does."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        result = "mean"
    elif reduce:
        result = "sum"
    else:
        result = "none"
    if emit_warning:
        warnings.warn(
            f"size_average and reduce args will be deprecated, please use reduction='{result}' "
            "instead.",
            UserWarning,
            stacklevel=3,
        )
    return result


def resolve_reduction(size_average, reduce, reduction: str) -> str:
    """`reduction`, or the legacy pair's meaning when either is given; checked."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    check_reduction(reduction)
    return reduction


def check_reduction(reduction) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def apply_reduction(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    return loss


def as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else ops.as_tensor(x)


def log_sigmoid(x: Tensor) -> Tensor:
    """`log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))`, ATen's stable form: the exponential
    only sees non-positive arguments. `-|x|` is written as a `where` that picks `-x` at 0, so
    the gradient at 0 is PyTorch's 1/2."""
    negative = ops.lt(x, 0)
    minus_abs = ops.where(negative, x, ops.neg(x))
    return ops.sub(ops.where(negative, x, 0.0), ops.log1p(ops.exp(minus_abs)))


def _warn_size_mismatch(x: Tensor, y: Tensor) -> None:
    if x.shape != y.shape:
        warnings.warn(
            f"Using a target size ({y.shape}) that is different to the input size ({x.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they "
            "have the same size.",
            UserWarning,
            stacklevel=3,
        )


def _broadcast(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Both expanded to their broadcast shape (PyTorch's message if there is none)."""
    if x.shape == y.shape:
        return x, y
    shape = broadcast_shape(x, y)
    return ops.expand(x, shape), ops.expand(y, shape)


# -- binary cross entropy -------------------------------------------------------------------------


def _clamped_log(x: Tensor, one_minus: bool) -> Tensor:
    """`max(log(x), -100)` (or `max(log1p(-x), -100)`), PyTorch's clamp that keeps BCE finite
    at probabilities of exactly 0 or 1. The log only sees an argument inside its domain (the
    double `where`), so the clamped points get a zero gradient instead of a nan; PyTorch's own
    backward gives `(x - t) / 1e-12` there, the one place the gradients differ."""
    inside = ops.lt(x, 1.0) if one_minus else ops.gt(x, 0.0)
    if one_minus:
        logged = ops.log1p(ops.neg(ops.where(inside, x, 0.0)))
    else:
        logged = ops.log(ops.where(inside, x, 1.0))
    return ops.clamp_min(ops.where(inside, logged, -100.0), -100.0)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """`-w * (t * log(x) + (1 - t) * log(1 - x))` with each log clamped at -100, as PyTorch.
    `input` holds probabilities in [0, 1]; `target` must have its shape; `weight` broadcasts."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t = as_tensor(input), as_tensor(target)
    if t.shape != x.shape:
        raise ValueError(
            f"Using a target size ({t.shape}) that is different to the input size ({x.shape}) "
            "is deprecated. Please ensure they have the same size."
        )
    values = x.detach().numpy()
    if ((values < 0) | (values > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x = _clamped_log(x, one_minus=False)
    log_1mx = _clamped_log(x, one_minus=True)
    loss = ops.sub(ops.mul(ops.sub(t, 1.0), log_1mx), ops.mul(t, log_x))
    if weight is not None:
        loss = ops.mul(loss, as_tensor(weight))
    return apply_reduction(loss, reduction)


def binary_cross_entropy_with_logits(
    input,
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    pos_weight=None,
) -> Tensor:
    """`(1 - t) * x - (1 + (pos_weight - 1) * t) * log_sigmoid(x)`, times `weight`: ATen's
    formula, stable at any |x| because `log_sigmoid` is."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t = as_tensor(input), as_tensor(target)
    if t.shape != x.shape:
        raise ValueError(f"Target size ({t.shape}) must be the same as input size ({x.shape})")
    log_sig = log_sigmoid(x)
    if pos_weight is not None:
        log_sig = ops.mul(log_sig, ops.add(ops.mul(ops.sub(as_tensor(pos_weight), 1.0), t), 1.0))
    loss = ops.sub(ops.mul(ops.rsub(t, 1.0), x), log_sig)
    if weight is not None:
        loss = ops.mul(loss, as_tensor(weight))
    return apply_reduction(loss, reduction)


# -- regression -----------------------------------------------------------------------------------


def _weighted(loss: Tensor, x: Tensor, weight) -> Tensor:
    """PyTorch 2.13's optional per-element `weight` of `l1_loss` and `huber_loss`."""
    w = as_tensor(weight)
    if w.shape != x.shape:
        raise ValueError("Weights and input must have the same size.")
    return ops.mul(loss, w)


def l1_loss(
    input,
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    weight=None,
) -> Tensor:
    """`|x - t|`, reduced; with `weight` (PyTorch 2.13) the weighted errors, and for 'mean'
    their sum over the sum of the weights. A target of another shape warns and broadcasts."""
    x, t = as_tensor(input), as_tensor(target)
    _warn_size_mismatch(x, t)
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t = _broadcast(x, t)
    loss = ops.abs(ops.sub(x, t))
    if weight is None:
        return apply_reduction(loss, reduction)
    loss = _weighted(loss, x, weight)
    if reduction == "mean":
        return ops.div(ops.sum(loss), ops.sum(as_tensor(weight)))
    return apply_reduction(loss, reduction)


def _huber(x: Tensor, t: Tensor, delta: float) -> Tensor:
    """`0.5 * d**2` where `|d| < delta`, else `delta * (|d| - 0.5 * delta)` (ATen's)."""
    z = ops.abs(ops.sub(x, t))
    quadratic = ops.mul(ops.mul(z, z), 0.5)
    linear = ops.mul(ops.sub(z, 0.5 * delta), delta)
    return ops.where(ops.lt(z, delta), quadratic, linear)


def smooth_l1_loss(
    input,
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """`0.5 * d**2 / beta` where `|d| < beta`, else `|d| - 0.5 * beta`; `beta=0` is `l1_loss`.
    Equal to `huber_loss(delta=beta) / beta`."""
    x, t = as_tensor(input), as_tensor(target)
    _warn_size_mismatch(x, t)
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t = _broadcast(x, t)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return apply_reduction(ops.abs(ops.sub(x, t)), reduction)
    z = ops.abs(ops.sub(x, t))
    quadratic = ops.div(ops.mul(ops.mul(z, z), 0.5), beta)
    linear = ops.sub(z, 0.5 * beta)
    return apply_reduction(ops.where(ops.lt(z, beta), quadratic, linear), reduction)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None) -> Tensor:
    """`0.5 * d**2` where `|d| < delta`, else `delta * (|d| - 0.5 * delta)`; with `weight`
    (PyTorch 2.13) the weighted losses, and for 'mean' their plain mean."""
    x, t = as_tensor(input), as_tensor(target)
    _warn_size_mismatch(x, t)
    check_reduction(reduction)
    x, t = _broadcast(x, t)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    loss = _huber(x, t, delta)
    if weight is not None:
        loss = _weighted(loss, x, weight)
    return apply_reduction(loss, reduction)


# -- likelihoods ----------------------------------------------------------------------------------


def kl_div(
    input,
    target,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Pointwise KL divergence of the distribution `target` from `input` (log-probabilities):
    `xlogy(t, t) - t * x`, or `exp(t) * (t - x)` with `log_target`. 'batchmean' divides the sum
    by the batch size (the true KL divergence); 'mean' by the element count, with PyTorch's
    warning that it will change."""
    legacy = size_average is not None or reduce is not None
    if legacy:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            UserWarning,
            stacklevel=2,
        )
    if reduction != "batchmean":
        check_reduction(reduction)
    x, t = as_tensor(input), as_tensor(target)
    if log_target:
        loss = ops.mul(ops.exp(t), ops.sub(t, x))
    else:
        loss = ops.sub(ops.xlogy(t, t), ops.mul(t, x))
    if reduction != "batchmean":
        return apply_reduction(loss, reduction)
    total = ops.sum(loss)
    return total if x.ndim == 0 else ops.div(total, x.shape[0])


_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


def poisson_nll_loss(
    input,
    target,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Poisson negative log likelihood of `target` given the rate: `exp(x) - t * x` when the
    input is the log-rate, else `x - t * log(x + eps)`. `full` adds Stirling's approximation of
    `log(t!)`, `t * log(t) - t + 0.5 * log(2 * pi * t)`, where `t > 1` (zero elsewhere)."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t = as_tensor(input), as_tensor(target)
    if log_input:
        loss = ops.sub(ops.exp(x), ops.mul(t, x))
    else:
        loss = ops.sub(x, ops.mul(t, ops.log(ops.add(x, eps))))
    if full:
        counted = ops.gt(t, 1)
        safe = ops.where(counted, t, 2.0)  # the logs only see t > 1 (no nan gradient at 0)
        stirling = ops.add(
            ops.sub(ops.mul(safe, ops.log(safe)), safe),
            ops.mul(ops.log(ops.mul(safe, 2 * math.pi)), 0.5),
        )
        loss = ops.add(loss, ops.where(counted, stirling, 0.0))
    return apply_reduction(loss, reduction)


def _gaussian_variance(x: Tensor, var) -> Tensor:
    """`var` as a tensor broadcastable to `x`, checked as PyTorch checks it."""
    if isinstance(var, numbers.Real) and not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        return ops.mul(ops.ones_like(x), float(var))
    v = as_tensor(var)
    if (v.detach().numpy() < 0).any():
        raise ValueError("var has negative entry/entries")
    if v.shape != x.shape:
        if tuple(x.shape[:-1]) == tuple(v.shape):  # one variance per row: homoscedastic
            v = ops.unsqueeze(v, -1)
        elif not (x.ndim == v.ndim and sum(b for a, b in zip(x.shape, v.shape) if a != b) == 1):
            raise ValueError("var is of incorrect size")
    return v


def gaussian_nll_loss(
    input, target, var, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """`0.5 * (log(var) + (x - t)**2 / var)` (plus `0.5 * log(2 * pi)` when `full`). The
    variance is clamped at `eps` for the value only: PyTorch clamps a clone in place under
    `no_grad`, so its gradient passes through the clamp unchanged."""
    x, t = as_tensor(input), as_tensor(target)
    v = _gaussian_variance(x, var)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not valid")
    v = ops.add(v, ops.sub(ops.clamp_min(v, eps), v).detach())
    diff = ops.sub(x, t)
    loss = ops.mul(ops.add(ops.log(v), ops.div(ops.mul(diff, diff), v)), 0.5)
    if full:
        loss = ops.add(loss, _HALF_LOG_TWO_PI)
    return apply_reduction(loss, reduction)


def ctc_loss(
    log_probs,
    targets,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
):
    """Not implemented: the connectionist temporal classification loss is out of scope."""
    raise NotImplementedError(
        "ctc_loss (CTCLoss) is out of scope for tracegrad.torch: its forward-backward dynamic "
        "programme is not implemented"
    )
