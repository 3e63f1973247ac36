"""The rest of PyTorch's activation functions (`celu` ... `threshold`, `prelu`, `bilinear`).

Each is a composition of the tensor functions in `tracegrad.torch.ops`, so the gradients are
the primitives' rules. A piecewise function is a `where` whose condition is the one of ATen's
backward kernel, so the gradient at a kink is PyTorch's (`hardtanh` passes none at `min_val`
or `max_val`, `hardswish` 0 at -3 and 1 at 3, `threshold` none at `x == threshold`). A NaN
input gives a NaN value; its gradient follows ATen's scalar kernels (PyTorch's vectorised
kernels, which run on most elements of a long tensor, may give another one). The
exponentials only see inputs that cannot overflow (`logsigmoid` is `-softplus(-x)` with
`softplus(x) = max(x, 0) + log1p(exp(-|x|))`; `softmin` is `softmax(-x)`).

The in-place forms (`inplace=True`, `celu_`, ...) compute out of place and rebind the input,
as `functional.relu` and `functional.elu` do; their `grad_fn` takes PyTorch's name
(`EluBackward1` ...). Messages are PyTorch's, with dtype names written as NumPy's.

Kept free of `tracegrad.torch.nn.functional`, which re-exports these functions.
"""

from __future__ import annotations

import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.generator import default_generator
from tracegrad.torch.ops.conventions import _dims, _named
from tracegrad.torch.ops.inplace import rebind
from tracegrad.torch.tensor import Tensor

__all__ = [
    "bilinear",
    "celu",
    "celu_",
    "elu_",
    "glu",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu_",
    "logsigmoid",
    "mish",
    "prelu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "softmin",
    "softshrink",
    "softsign",
    "tanhshrink",
    "threshold",
    "threshold_",
]

# SELU's constants (Klambauer et al. 2017), as ATen writes them
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# -- conventions ---------------------------------------------------------------------------------


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else ops.as_tensor(x)


def _floating_kernel(x: Tensor, kernel: str) -> None:
    """PyTorch's refusal of an integer, bool or complex input by a real floating kernel."""
    if x.dtype.kind in "biuc":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{x.dtype.name}'")


def _inplace(input, fn, name: str | None = None) -> Tensor:
    """`fn(input)` written back into `input` (PyTorch's in-place form), its node named `name`."""
    x = _tensor(input)
    x._check_inplace()
    out = fn(x._snapshot())
    if name is not None:
        _named(out, name)
    return rebind(x, out)


def _integral_bound(x: Tensor, value):
    """A bound compared with, or written into, an integer tensor: ATen converts it to the
    tensor's type first (truncating, so -0.5 is 0)."""
    return int(value) if x.dtype.kind in "iu" else value


# -- the ELU family ------------------------------------------------------------------------------


def _elu(x: Tensor, alpha: float, scale: float = 1.0, input_scale: float = 1.0) -> Tensor:
    """ATen's elu kernel: `x * scale` where `x > 0`, else `expm1(x * input_scale) * alpha *
    scale` (so the gradient at 0 is `alpha * scale * input_scale`, and a NaN takes the linear
    branch); `expm1` only sees non-positive inputs, so nothing overflows."""
    _floating_kernel(x, "elu_cpu")
    negative = ops.le(x, 0)
    safe = ops.where(negative, x, 0.0)
    if input_scale != 1.0:
        safe = ops.mul(safe, input_scale)
    negative_part = ops.mul(ops.expm1(safe), alpha * scale)
    positive_part = x if scale == 1.0 else ops.mul(x, scale)
    return ops.where(negative, negative_part, positive_part)


def _celu(x: Tensor, alpha: float, name: str) -> Tensor:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _named(_elu(x, alpha, 1.0, 1.0 / alpha), name, (x,))


def celu(input, alpha: float = 1.0, inplace: bool = False):
    """`max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`, evaluated as ATen does (an ELU with
    input scale `1 / alpha`); the gradient at 0 is 1."""
    if inplace:
        return celu_(input, alpha)
    return _celu(_tensor(input), alpha, "CeluBackward0")


def celu_(input, alpha: float = 1.0):
    return _inplace(input, lambda t: _celu(t, alpha, "CeluBackward1"))


def selu(input, inplace: bool = False):
    """`scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))` with PyTorch's constants; the
    gradient at 0 is `alpha * scale`, as PyTorch's."""
    if inplace:
        return selu_(input)
    x = _tensor(input)
    return _named(_elu(x, _SELU_ALPHA, _SELU_SCALE), "EluBackward0", (x,))


def selu_(input):
    return _inplace(input, lambda t: _elu(t, _SELU_ALPHA, _SELU_SCALE), "EluBackward1")


def elu_(input, alpha: float = 1.0):
    """`functional.elu(input, alpha, inplace=True)`."""
    return _inplace(input, lambda t: _elu(t, alpha), "EluBackward1")


# -- piecewise linear ----------------------------------------------------------------------------


def _leaky(x: Tensor, slope: float) -> Tensor:
    """`x` where `x > 0`, else `slope * x`: the gradient at 0 (and at NaN) is the slope."""
    _floating_kernel(x, "leaky_relu_cpu")
    return ops.where(ops.gt(x, 0), x, ops.mul(x, slope))


def leaky_relu_(input, negative_slope: float = 0.01):
    """`functional.leaky_relu(input, negative_slope, inplace=True)`."""
    return _inplace(input, lambda t: _leaky(t, negative_slope), "LeakyReluBackward1")


def relu_(input):
    """`functional.relu(input, inplace=True)`."""
    return _tensor(input).relu_()


def _hardtanh(x: Tensor, min_val, max_val) -> Tensor:
    """ATen's `clamp(x, min_val, max_val)` (so `max_val` wins when `min_val > max_val`), whose
    gradient passes only where `min_val < x < max_val`: none at either bound, and NaN's."""
    if x.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    low, high = _integral_bound(x, min_val), _integral_bound(x, max_val)
    above_low = ops.where(ops.le(x, low), low, x)
    out = ops.where(ops.ge(above_low, high), high, above_low)
    return _named(out, "HardtanhBackward0", (x,))


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """`x` clamped to `[min_val, max_val]`; no gradient at the bounds (PyTorch's)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return hardtanh_(input, min_val, max_val)
    return _hardtanh(_tensor(input), min_val, max_val)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """In-place `hardtanh`; like PyTorch's, it does not refuse `min_val > max_val`."""
    return _inplace(input, lambda t: _hardtanh(t, min_val, max_val))


def relu6(input, inplace: bool = False):
    """`hardtanh(x, 0, 6)`: no gradient at 0 or 6 (PyTorch's `HardtanhBackward0`)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _hardsigmoid(x: Tensor) -> Tensor:
    """`clamp(x + 3, 0, 6) / 6`; the gradient 1/6 passes only where `-3 < x < 3` (none at
    either end, nor at NaN): outside, the value is computed from `x.detach()`. ATen's kernel
    multiplies by the float32 constant `1.0f / 6.0f` even in float64 (0.1666666716...); this
    gradient is 1/6 in the input's precision (3e-8 apart in float64)."""
    _floating_kernel(x, "hardsigmoid_cpu")
    inside = ops.logical_and(ops.gt(x, -3.0), ops.lt(x, 3.0))
    live = ops.div(ops.add(x, 3.0), 6.0)
    dead = ops.div(ops.clamp(ops.add(x.detach(), 3.0), 0.0, 6.0), 6.0)
    return _named(ops.where(inside, live, dead), "HardsigmoidBackward0", (x,))


def hardsigmoid(input, inplace: bool = False):
    if inplace:
        return _inplace(input, _hardsigmoid)
    return _hardsigmoid(_tensor(input))


def _hardswish(x: Tensor) -> Tensor:
    """`x * clamp(x + 3, 0, 6) / 6`, in ATen's order. The gradient is ATen's: 0 where
    `x <= -3`, `x / 3 + 1 / 2` where `-3 < x < 3`, else 1 (so 0 at -3 and 1 at 3): outside the
    open interval the clamp is a constant, 0 or 6."""
    _floating_kernel(x, "hardswish_cpu")
    middle = ops.logical_and(ops.gt(x, -3.0), ops.lt(x, 3.0))
    clamped = ops.where(middle, ops.add(x, 3.0), ops.where(ops.le(x, -3.0), 0.0, 6.0))
    out = ops.div(ops.mul(x, clamped), 6.0)
    return _named(out, "HardswishBackward0", (x,))


def hardswish(input, inplace: bool = False):
    if inplace:
        return _inplace(input, _hardswish)
    return _hardswish(_tensor(input))


def _inside(x: Tensor, lambd: float) -> Tensor:
    """`-lambd <= x <= lambd`: where the shrinks pass no gradient (false at NaN)."""
    return ops.logical_and(ops.ge(x, -lambd), ops.le(x, lambd))


def hardshrink(input, lambd: float = 0.5):
    """`x` where `|x| > lambd`, else 0; no gradient at `|x| == lambd`."""
    x = _tensor(input)
    _floating_kernel(x, "hardshrink_cpu")
    return _named(ops.where(_inside(x, lambd), 0.0, x), "HardshrinkBackward0", (x,))


def softshrink(input, lambd: float = 0.5):
    """`x - lambd` where `x > lambd`, `x + lambd` where `x < -lambd`, else `x * 0` (ATen's,
    so the sign of zero follows `x`); no gradient at `|x| == lambd`."""
    x = _tensor(input)
    _floating_kernel(x, "softshrink_check")
    largest = float(np.finfo(x.dtype).max)
    if not 0 <= lambd <= largest:
        raise RuntimeError(
            f"lambda must be in range [0, {largest:g}] for input dtype {x.dtype.name}, but "
            f"found {lambd:g}"
        )
    shrunk = ops.where(ops.gt(x, lambd), ops.sub(x, lambd), ops.add(x, lambd))
    out = ops.where(_inside(x, lambd), ops.mul(x, 0.0), shrunk)
    return _named(out, "SoftshrinkBackward0", (x,))


def _threshold(x: Tensor, threshold, value, name: str) -> Tensor:
    """`value` where `x <= threshold`, else `x` (NaN included); no gradient at the threshold."""
    if x.dtype.kind in "bc":
        raise NotImplementedError(f"\"threshold_cpu\" not implemented for '{x.dtype.name}'")
    below = ops.le(x, _integral_bound(x, threshold))
    return _named(ops.where(below, _integral_bound(x, value), x), name, (x,))


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """`x` where `x > threshold`, else `value` (PyTorch's signature: `threshold` is both)."""
    if inplace:
        return threshold_(input, threshold, value)
    return _threshold(_tensor(input), threshold, value, "ThresholdBackward0")


def threshold_(input, threshold: float, value: float):
    return _inplace(input, lambda t: _threshold(t, threshold, value, "ThresholdBackward1"))


def _rrelu(x: Tensor, lower: float, upper: float, training: bool, name: str) -> Tensor:
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return _named(_leaky(x, (lower + upper) / 2), name, (x,))
    _floating_kernel(x, "rrelu_with_noise_out_cpu")
    # ATen's loop: in order, each element <= 0 draws `uniform_real_distribution<double>(lower,
    # upper)` (the bounds first cast to the op's math type) on the global generator; the
    # others (and NaN) keep slope 1
    math_type = np.float64 if x.dtype == np.float64 else np.float32
    low, high = float(math_type(lower)), float(math_type(upper))
    values = x.detach().numpy()
    negative = values <= 0
    u = default_generator._unit(int(negative.sum()), np.float64)
    noise = np.ones(values.shape, x.dtype)
    noise[negative] = (u * (high - low) + low).astype(math_type).astype(x.dtype)  # unfused here
    return _named(ops.mul(x, Tensor(noise)), name, (x,))


def rrelu(
    input,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
):
    """Randomized leaky ReLU. Not training: `leaky_relu` with slope `(lower + upper) / 2`,
    exactly as PyTorch. Training: each non-positive element gets its own slope drawn from
    U(lower, upper), and its gradient is that slope (the gradient at 0 too, as PyTorch's).
    The slopes are drawn as ATen draws them, on the global generator, so after
    `torch.manual_seed` they are PyTorch's."""
    if inplace:
        return rrelu_(input, lower, upper, training)
    return _rrelu(_tensor(input), lower, upper, training, "RreluWithNoiseBackward0")


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return _inplace(input, lambda t: _rrelu(t, lower, upper, training, "RreluWithNoiseBackward1"))


def prelu(input, weight):
    """`x` where `x > 0`, else `weight * x`, with one weight per channel (axis 1) or a single
    one. The gradient at 0 is `weight` for the input and 0 for the weight, as PyTorch's."""
    x, w = _tensor(input), _tensor(weight)
    if x.dtype != w.dtype:
        raise RuntimeError(
            f"prelu: Type promoting not supported. Got {x.dtype.name} and {w.dtype.name}"
        )
    count = w.numel()
    if count != 1:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = x.shape[1] if x.ndim > 1 else 1
        if channels != count:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {count} and channel size = {channels}."
            )
    if w.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {w.ndim}"
        )
    _floating_kernel(x, "prelu_cpu")
    if x.ndim != w.ndim:  # ATen's: the weights along axis 1, broadcast over the others
        shape = [1] * x.ndim
        if x.ndim > 1:
            shape[1] = count
        w = ops.reshape(w, tuple(shape))
    out = ops.where(ops.gt(x, 0), x, ops.mul(w, x))
    return _named(out, "PreluKernelBackward0", (x, _tensor(weight)))


# -- smooth --------------------------------------------------------------------------------------


def _softplus(x: Tensor) -> Tensor:
    """`log(1 + exp(x))` as `max(x, 0) + log1p(exp(-|x|))`: no overflow at any `x`, and the
    same branch for both terms, so the gradient at 0 is 1/2."""
    nonnegative = ops.ge(x, 0)
    tail = ops.log1p(ops.exp(ops.where(nonnegative, ops.neg(x), x)))
    return ops.add(ops.where(nonnegative, x, 0.0), tail)


def logsigmoid(input):
    """`log(sigmoid(x))`, as `-softplus(-x)`: finite value and gradient at any `x`."""
    x = _tensor(input)
    _floating_kernel(x, "log_sigmoid_cpu")
    return _named(ops.neg(_softplus(ops.neg(x))), "LogSigmoidBackward0", (x,))


def _mish(x: Tensor) -> Tensor:
    _floating_kernel(x, "mish_cpu")
    return _named(ops.mul(x, ops.tanh(_softplus(x))), "MishBackward0", (x,))


def mish(input, inplace: bool = False):
    """`x * tanh(softplus(x))`, with an overflow-free softplus."""
    if inplace:
        return _inplace(input, _mish)
    return _mish(_tensor(input))


def softsign(input):
    """`x / (1 + |x|)`, PyTorch's composition (`DivBackward0`; gradient 1 at 0)."""
    x = _tensor(input)
    return ops.div(x, ops.add(ops.abs(x), 1))


def tanhshrink(input):
    """`x - tanh(x)`, PyTorch's composition (`SubBackward0`)."""
    x = _tensor(input)
    return ops.sub(x, ops.tanh(x))


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    """`softmax(-x, dim)` (the negation first, then the cast to `dtype`, as PyTorch's); without
    `dim`, PyTorch's deprecation warning and its implicit choice."""
    x = _tensor(input)
    if dim is None:
        dim = _softmax_dim("softmin", x.ndim, _stacklevel)
    return ops.softmax(ops.neg(x), dim, dtype=dtype)


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim=-1):
    """PyTorch's: `softmax((logits + g) / tau)` for Gumbel noise `g = -log(E)`, E exponential
    draws on the global generator (PyTorch's draws after the same seed); with `hard`, the
    one-hot of the argmax, with the soft sample's gradient (straight through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    x = _tensor(logits)
    gumbels = ops.neg(ops.log(ops.empty_like(x).exponential_()))
    y_soft = ops.softmax(ops.div(ops.add(x, gumbels), tau), dim)
    if not hard:
        return y_soft
    index = ops.max(y_soft, dim, keepdim=True)[1]
    y_hard = ops.zeros_like(x).scatter_(dim, index, 1.0)
    return ops.add(ops.sub(y_hard, y_soft.detach()), y_soft)


def glu(input, dim: int = -1):
    """The gated linear unit: `a * sigmoid(b)` for the two halves `a`, `b` of `dim`."""
    x = _tensor(input)
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    (axis,) = _dims(dim, x.ndim)
    size = x.shape[axis]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {axis} is size {size}")
    _floating_kernel(x, "glu_cpu")
    half = size // 2
    a, b = ops.narrow(x, axis, 0, half), ops.narrow(x, axis, half, half)
    return _named(ops.mul(a, ops.sigmoid(b)), "GluBackward0", (x,))


# -- bilinear ------------------------------------------------------------------------------------


def _size(t: Tensor, dim: int) -> int:
    """`t.size(dim)`, with ATen's IndexError for a 0-d tensor or a dimension out of range."""
    if t.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    (axis,) = _dims(dim, t.ndim)
    return t.shape[axis]


def _check_bilinear(x1: Tensor, x2: Tensor, w: Tensor, b: Tensor | None) -> None:
    """ATen's checks of `bilinear`'s arguments, in its order and with its messages."""
    tensors = [("input1", x1), ("input2", x2), ("weight", w)]
    if b is not None:
        tensors.append(("bias", b))
    if len({t.dtype for _, t in tensors}) > 1:
        listed = ", ".join(f"{name}: {t.dtype.name}" for name, t in tensors)
        raise RuntimeError(f"All tensors must have the same dtype, got {listed}")
    if x1.ndim != x2.ndim:
        raise RuntimeError(
            f"bilinear(): input dimensions do not match: got {x1.ndim} and {x2.ndim}"
        )
    for i in range(x1.ndim - 1):
        if x1.shape[i] != x2.shape[i]:
            raise RuntimeError(
                f"bilinear(): input batch dimensions do not match at dim {i}: got "
                f"{x1.shape[i]} and {x2.shape[i]}"
            )
    for name, x, axis in (("input1", x1, 1), ("input2", x2, 2)):
        got, expected = _size(x, -1), _size(w, axis)
        if got != expected:
            raise RuntimeError(
                f"bilinear(): {name} size does not match weight size: got {got} but "
                f"expected {expected}"
            )
    if b is not None and _size(b, 0) != _size(w, 0):
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {_size(b, 0)} but "
            f"expected {_size(w, 0)}"
        )


def bilinear(input1, input2, weight, bias=None):
    """`y[..., o] = sum_ij input1[..., i] * weight[o, i, j] * input2[..., j] + bias[o]`,
    as ATen's: the batch axes flattened, one contraction, then reshaped back."""
    x1, x2, w = _tensor(input1), _tensor(input2), _tensor(weight)
    b = None if bias is None else _tensor(bias)
    _check_bilinear(x1, x2, w, b)
    out_shape = (*x1.shape[:-1], w.shape[0])
    flat1 = ops.reshape(x1, (-1, x1.shape[-1]))
    flat2 = ops.reshape(x2, (-1, x2.shape[-1]))
    out = ops.reshape(ops.einsum("bi,oij,bj->bo", flat1, w, flat2), out_shape)
    return out if b is None else ops.add(out, b)
