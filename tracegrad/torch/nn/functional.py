"""`tracegrad.torch.nn.functional`: PyTorch's layer and loss functions over tracegrad tensors.

Each is a composition of the PyTorch-named tensor functions in `tracegrad.torch.ops`, so the
gradients are the primitives' rules. Softmax-based losses go through the stable `log_softmax`
(max subtracted before `exp`), so logits of 1000 give finite losses and gradients. Messages
are PyTorch's, with dtype names written as NumPy's.

Over 600 lines: this is PyTorch's one namespace of layer functions; about half of it
gathers the convolution, pooling, normalisation, loss and attention functions from the
modules beside it that implement them.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.linalg import _floating
from tracegrad.torch.nn.activations import (
    bilinear,
    celu,
    celu_,
    elu_,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu_,
    logsigmoid,
    mish,
    prelu,
    relu6,
    relu_,
    rrelu,
    rrelu_,
    selu,
    selu_,
    softmin,
    softshrink,
    softsign,
    tanhshrink,
    threshold,
    threshold_,
)
from tracegrad.torch.nn.affine_grid import (
    affine_grid,
)
from tracegrad.torch.nn.attention import (
    multi_head_attention_forward,
    scaled_dot_product_attention,
)
from tracegrad.torch.nn.convolution import (
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    unfold,
)
from tracegrad.torch.nn.distance import cosine_similarity, pairwise_distance, pdist
from tracegrad.torch.nn.dropout import (
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from tracegrad.torch.nn.embedding import (
    embedding,
    embedding_bag,
)
from tracegrad.torch.nn.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    ctc_loss,
    gaussian_nll_loss,
    huber_loss,
    kl_div,
    l1_loss,
    poisson_nll_loss,
    resolve_reduction,
    smooth_l1_loss,
)
from tracegrad.torch.nn.losses_extra import (
    multilabel_margin_loss,
    triplet_margin_with_distance_loss,
)
from tracegrad.torch.nn.losses_margin import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from tracegrad.torch.nn.normalization import (
    batch_norm,
    group_norm,
    instance_norm,
    local_response_norm,
)
from tracegrad.torch.nn.padding_layers import (
    pad,
)
from tracegrad.torch.nn.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from tracegrad.torch.nn.pooling_extra import (
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from tracegrad.torch.nn.resampling import (
    grid_sample,
    interpolate,
    pixel_shuffle,
    pixel_unshuffle,
)
from tracegrad.torch.nn.resampling_extra import (
    channel_shuffle,
    native_channel_shuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from tracegrad.torch.nn.rms_norm import (
    rms_norm,
)
from tracegrad.torch.ops import creation
from tracegrad.torch.ops.conventions import _named
from tracegrad.torch.ops.inplace import rebind
from tracegrad.torch.ops.matrices import one_hot
from tracegrad.torch.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "affine_grid",
    "alpha_dropout",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "batch_norm",
    "bilinear",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "celu_",
    "channel_shuffle",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "ctc_loss",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu",
    "elu_",
    "embedding",
    "embedding_bag",
    "feature_alpha_dropout",
    "fold",
    "gaussian_nll_loss",
    "gelu",
    "glu",
    "grid_sample",
    "group_norm",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "hinge_embedding_loss",
    "huber_loss",
    "instance_norm",
    "interpolate",
    "kl_div",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "leaky_relu_",
    "linear",
    "local_response_norm",
    "log_softmax",
    "logsigmoid",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "mish",
    "mse_loss",
    "multi_head_attention_forward",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "native_channel_shuffle",
    "nll_loss",
    "normalize",
    "one_hot",
    "pad",
    "pairwise_distance",
    "pdist",
    "pixel_shuffle",
    "pixel_unshuffle",
    "poisson_nll_loss",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rms_norm",
    "rrelu",
    "rrelu_",
    "scaled_dot_product_attention",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "soft_margin_loss",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
    "unfold",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    return loss


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else ops.as_tensor(x)


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of two shapes, or PyTorch's message naming the first axis that clashes."""
    ndim = max(len(a), len(b))
    out = []
    for i in range(ndim - 1, -1, -1):
        offset = ndim - 1 - i
        sa = a[len(a) - 1 - offset] if offset < len(a) else 1
        sb = b[len(b) - 1 - offset] if offset < len(b) else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(
                f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                f"non-singleton dimension {i}"
            )
        out.append(sa if sb == 1 else sb)
    return tuple(reversed(out))


# -- layers and activations ----------------------------------------------------------------------


def linear(input, weight, bias=None):
    """`input @ weight.T + bias`: weight is (out_features, in_features)."""
    x, w = _tensor(input), _tensor(weight)
    if w.ndim == 2 and x.ndim >= 1 and x.shape[-1] != w.shape[1]:
        rows = int(np.prod(x.shape[:-1]))
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and "
            f"{w.shape[1]}x{w.shape[0]})"
        )
    if x.dtype != w.dtype:
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {x.dtype.name} and {w.dtype.name}"
        )
    out = ops.matmul(x, ops.t(w))
    return out if bias is None else ops.add(out, bias)


def relu(input, inplace: bool = False):
    return input.relu_() if inplace else ops.relu(input)


def tanh(input):
    return ops.tanh(input)


def sigmoid(input):
    return ops.sigmoid(input)


def _softmax_dim(name: str, ndim: int, dim, stacklevel: int) -> int:
    if dim is not None:
        return dim
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    x = _tensor(input)
    return ops.softmax(x, _softmax_dim("softmax", x.ndim, dim, _stacklevel), dtype=dtype)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    x = _tensor(input)
    return ops.log_softmax(x, _softmax_dim("log_softmax", x.ndim, dim, _stacklevel), dtype=dtype)


# -- smooth activations --------------------------------------------------------------------------
#
# Each is written so that neither branch of a `where` overflows: the unselected branch of
# `where` receives a zero cotangent, and 0 * inf would be a nan gradient (the "double where":
# the input of the unselected branch is replaced by a harmless value first).


def _inplace(input, fn):
    """`fn(input)` written back into `input` (PyTorch's `inplace=True`)."""
    x = _tensor(input)
    x._check_inplace()
    return rebind(x, fn(x._snapshot()))


def _sigmoid(x):
    """Stable logistic: with z = exp(-|x|) in (0, 1], 1 / (1 + z) for x >= 0 and z / (1 + z)
    for x < 0; no exp overflows, so the gradient is finite at any |x|."""
    negative = ops.lt(x, 0)
    z = ops.exp(ops.where(negative, x, ops.neg(x)))
    one_plus = ops.add(z, 1.0)
    return ops.where(negative, ops.div(z, one_plus), ops.reciprocal(one_plus))


def silu(input, inplace: bool = False):
    """`x * sigmoid(x)` (swish), with a sigmoid whose gradient is finite at any |x|."""
    if inplace:
        return _inplace(input, silu)
    x = _float(input, "silu_cpu")
    return _named(ops.mul(x, _sigmoid(x)), "SiluBackward0", (x,))


def softplus(input, beta=1, threshold=20):
    """`log(1 + exp(beta * x)) / beta`, and `x` itself where `beta * x > threshold` (as
    PyTorch); the exponential only sees inputs below the threshold, so no overflow."""
    x = _float(input, "softplus_cpu")
    bx = x if beta == 1 else ops.mul(x, beta)
    linear_part = ops.gt(bx, threshold)
    safe = ops.where(linear_part, 0.0, bx)
    soft = ops.log1p(ops.exp(safe))
    if beta != 1:
        soft = ops.div(soft, beta)
    return _named(ops.where(linear_part, x, soft), "SoftplusBackward0", (x,))


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    """`x` where `x > 0`, else `negative_slope * x` (the gradient at 0 is `negative_slope`,
    as PyTorch's)."""
    if inplace:
        return _inplace(input, lambda t: leaky_relu(t, negative_slope))
    x = _float(input, "leaky_relu_cpu")
    out = ops.where(ops.gt(x, 0), x, ops.mul(x, negative_slope))
    return _named(out, "LeakyReluBackward0", (x,))


def elu(input, alpha: float = 1.0, inplace: bool = False):
    """`x` where `x > 0`, else `alpha * expm1(x)` (the gradient at 0 is `alpha`, as
    PyTorch's); `expm1` only sees non-positive inputs, so no overflow at large x."""
    if inplace:
        return _inplace(input, lambda t: elu(t, alpha))
    x = _float(input, "elu_cpu")
    positive = ops.gt(x, 0)
    negative_part = ops.mul(ops.expm1(ops.where(positive, 0.0, x)), alpha)
    return _named(ops.where(positive, x, negative_part), "EluBackward0", (x,))


_GELU_BETA = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5  # sqrt(2 / pi), as ATen's
_GELU_KAPPA = 0.044715
_SQRT1_2 = math.sqrt(0.5)  # M_SQRT1_2


def gelu(input, approximate: str = "none"):
    """GELU, evaluated as ATen evaluates it: the exact form (PyTorch's default)
    `x * 0.5 * (1 + erf(x / sqrt(2)))`, or with `approximate='tanh'`
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))`. The exact form's erf is
    SciPy's (`pip install 'tracegrad[scipy]'`)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if approximate == "none":
        x = _float(input, "GeluKernelImpl")
        erf = ops.erf(ops.mul(x, _SQRT1_2))
        return _named(ops.mul(ops.mul(x, 0.5), ops.add(erf, 1.0)), "GeluBackward0", (x,))
    x = _float(input, "GeluKernelImpl")
    cube = ops.mul(ops.mul(x, x), x)
    inner = ops.mul(ops.add(x, ops.mul(cube, _GELU_KAPPA)), _GELU_BETA)
    out = ops.mul(ops.mul(x, 0.5), ops.add(ops.tanh(inner), 1.0))
    return _named(out, "GeluBackward0", (x,))


def _float(input, kernel: str) -> Tensor:
    """The input as a tensor, refused as ATen's `kernel` refuses integer and bool tensors."""
    x = _tensor(input)
    if x.dtype.kind in "biu":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{x.dtype.name}'")
    return x


# -- regularisation and normalisation ------------------------------------------------------------


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Inverted dropout: each element is kept with probability `1 - p` and scaled by
    `1 / (1 - p)`, so the expectation is the input. The mask comes from tracegrad's generator
    (`tg.manual_seed`); the gradient is the same mask times `1 / (1 - p)`. The input itself
    when not training or `p == 0`; zeros (times the input) when `p == 1`."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if inplace:
        return _inplace(input, lambda t: dropout(t, p, training))
    x = _tensor(input)
    if p == 1.0:
        return ops.mul(x, Tensor(np.zeros((), x.dtype)))
    keep = creation._bernoulli_mask(x.shape, 1 - p)
    return ops.mul(ops.mul(x, Tensor(keep.astype(x.dtype))), 1.0 / (1.0 - p))


def _shape_list(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """Normalises over the trailing `normalized_shape` axes: `(x - mean) / sqrt(var + eps)`
    with the biased variance (as PyTorch), then `* weight + bias` when given."""
    x = _tensor(input)
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    shape = tuple(int(d) for d in normalized_shape)
    k = len(shape)
    if k == 0 or x.ndim < k or tuple(x.shape[x.ndim - k :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={_shape_list(shape)}, expected input with shape "
            f"{_shape_list(('*', *shape))}, but got input of size{_shape_list(x.shape)}"
        )
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and tuple(param.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {_shape_list(param.shape)} and normalized_shape = {_shape_list(shape)}"
            )
    dims = tuple(range(x.ndim - k, x.ndim))
    centered = ops.sub(x, ops.mean(x, dims, keepdim=True))
    variance = ops.mean(ops.mul(centered, centered), dims, keepdim=True)
    out = ops.mul(centered, ops.rsqrt(ops.add(variance, eps)))
    if weight is not None:
        out = ops.mul(out, weight)
    if bias is not None:
        out = ops.add(out, bias)
    shown = (x, *(t for t in (weight, bias) if t is not None))
    return _named(out, "NativeLayerNormBackward0", shown)


def _safe_norm(x, p, dim):
    """The p-norm over `dim` (kept), with a finite gradient at a zero vector: the root whose
    derivative is infinite at 0 only sees a positive input (the double `where`)."""
    if p == math.inf:
        return ops.amax(ops.abs(x), dim, keepdim=True)
    if p == -math.inf:
        return ops.amin(ops.abs(x), dim, keepdim=True)
    if p == 1:
        return ops.sum(ops.abs(x), dim, keepdim=True)
    powered = ops.mul(x, x) if p == 2 else ops.pow(ops.abs(x), p)
    total = ops.sum(powered, dim, keepdim=True)
    positive = ops.gt(total, 0)
    safe = ops.where(positive, total, 1.0)
    root = ops.sqrt(safe) if p == 2 else ops.pow(safe, 1.0 / p)
    return ops.where(positive, root, 0.0)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """`x / max(||x||_p, eps)` along `dim`. At a zero vector the value is 0 and the gradient
    is PyTorch's finite one (`grad / eps`: the clamp holds the norm at `eps`)."""
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported by tracegrad; use the result")
    x = _floating("linalg.vector_norm", input)
    denom = ops.clamp_min(_safe_norm(x, p, dim), eps)
    return ops.div(x, ops.expand_as(denom, x))


# -- losses ------------------------------------------------------------------------------------


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """Mean (or sum, or none) of the squared differences; a target of another shape warns, as
    in PyTorch, and is broadcast."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, y = _tensor(input), _tensor(target)
    if x.shape != y.shape:
        warnings.warn(
            f"Using a target size ({y.shape}) that is different to the input size ({x.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they "
            "have the same size.",
            UserWarning,
            stacklevel=2,
        )
        broadcast_shapes(x.shape, y.shape)
    return _reduce(ops.square(ops.sub(x, y)), reduction)


_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.uint8))


def _class_weight(weight, n_classes: int):
    if weight is None:
        return None
    w = weight._cell.value if isinstance(weight, Tensor) else np.asarray(weight)
    if w.ndim != 1 or w.shape[0] != n_classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(w.shape)}"
        )
    return weight


def _check_targets(x: Tensor, t: Tensor) -> None:
    if x.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {x.ndim})")
    batch = t.shape[0] if t.ndim else 0
    if x.ndim != 1 and x.shape[0] != batch:
        raise ValueError(
            f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({batch})."
        )
    if x.ndim == 1 and t.ndim == 1 and t.shape[0] != 1:
        raise ValueError(
            f"For 1D input, 1D target must have size 1, but got target size: {t.shape[0]}"
        )
    if x.ndim <= 2:
        if t.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    else:
        expected = (x.shape[0], *x.shape[2:])
        if t.shape != expected:
            raise RuntimeError(f"Expected target size {list(expected)}, got {list(t.shape)}")
    if t.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"expected target dtype to be int64 or uint8, but got {t.dtype.name}")


def nll_loss(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
):
    """Negative log likelihood of the class `target[i]` given log-probabilities `input` (the
    class axis is 1, or 0 for a 1-D input); `weight` weighs classes, `ignore_index` skips."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t = _tensor(input), _tensor(target)
    _check_targets(x, t)
    class_dim = 0 if x.ndim == 1 else 1
    n_classes = x.shape[class_dim]
    weight = _class_weight(weight, n_classes)
    labels = t._cell.value.astype(np.int64)
    if x.ndim == 1:
        labels = labels.reshape(())
    kept = labels != ignore_index
    bad = kept & ((labels < 0) | (labels >= n_classes))
    if bad.any():
        raise IndexError(f"Target {labels[bad].flat[0]} is out of bounds.")
    index = np.expand_dims(np.where(kept, labels, 0), class_dim)
    picked = ops.squeeze(ops.gather(x, class_dim, Tensor(index)), class_dim)
    if weight is None and kept.all():
        loss = ops.neg(picked)
        total = None
    else:
        w = kept.astype(x.dtype)
        if weight is not None:
            w = ops.mul(
                ops.gather(_tensor(weight), 0, Tensor(index.reshape(-1))).reshape(labels.shape),
                Tensor(w),
            )
        else:
            w = Tensor(w)
        loss = ops.neg(ops.mul(picked, w))
        total = ops.sum(w)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ops.sum(loss)
    if total is None:
        return ops.mean(loss)
    with np.errstate(invalid="ignore"):  # every target ignored: 0 / 0 is PyTorch's nan
        return ops.div(ops.sum(loss), total)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
):
    """Cross entropy of `softmax(input)` over the class axis (1, or 0 for a 1-D input) against
    class indices (integer `target`) or class probabilities (a float `target` shaped like
    `input`), computed from the stable `log_softmax`."""
    reduction = resolve_reduction(size_average, reduce, reduction)
    x, t = _tensor(input), _tensor(target)
    class_dim = 0 if x.ndim == 1 else 1
    if x.shape == t.shape:
        return _cross_entropy_probs(x, t, weight, ignore_index, reduction, label_smoothing)
    if label_smoothing > 1.0:  # a negative one is no smoothing, as in PyTorch
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    logp = ops.log_softmax(x, class_dim)
    nll = nll_loss(logp, t, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0.0:  # PyTorch ignores a negative one
        return nll
    n_classes = x.shape[class_dim]
    labels = t._cell.value.astype(np.int64)
    ignored = labels == ignore_index
    if weight is not None:
        shape = [1] * x.ndim
        shape[class_dim] = n_classes
        smooth = ops.neg(ops.sum(ops.mul(logp, ops.reshape(_tensor(weight), shape)), class_dim))
    else:
        smooth = ops.neg(ops.sum(logp, class_dim))
    if ignored.any():
        smooth = ops.where(Tensor(ignored), 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            w = _tensor(weight)._cell.value
            smooth = ops.div(ops.sum(smooth), float(w[labels[~ignored]].sum()))
        else:
            smooth = ops.div(ops.sum(smooth), int((~ignored).sum()))
    elif reduction == "sum":
        smooth = ops.sum(smooth)
    return ops.add(ops.mul(nll, 1 - label_smoothing), ops.mul(smooth, label_smoothing / n_classes))


def _cross_entropy_probs(x, t, weight, ignore_index, reduction, label_smoothing):
    if t.dtype.kind not in "fc":
        raise RuntimeError(
            f"Expected floating point type for target with class probabilities, got {t.dtype.name}"
        )
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if label_smoothing > 1.0:  # a negative one is no smoothing, as in PyTorch
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if x.ndim == 1 else 1
    n_classes = x.shape[class_dim]
    if label_smoothing > 0.0:
        t = ops.add(ops.mul(t, 1 - label_smoothing), label_smoothing / n_classes)
    terms = ops.mul(ops.log_softmax(x, class_dim), t)
    if weight is not None:
        _class_weight(weight, n_classes)
        shape = [1] * x.ndim
        shape[class_dim] = n_classes
        terms = ops.mul(terms, ops.reshape(_tensor(weight), shape))
    if reduction == "none":
        return ops.neg(ops.sum(terms, class_dim))
    total = ops.neg(ops.sum(terms))
    if reduction == "sum":
        return total
    if x.numel() == 0:
        return ops.mul(total, float("nan"))
    return ops.div(total, x.numel() // n_classes)
