"""`tracegrad.torch.nn.init`: PyTorch's in-place initialisers, run under `no_grad`.

The draws run ATen's kernels on the `generator=` given, or on the global stream that
`torch.manual_seed` seeds, so `uniform_`, `normal_`, the Xavier and Kaiming initialisers,
`trunc_normal_` (PyTorch's own rejection sampler, ported step by step; its rarely taken
branch for narrow bounds compares against float32 logs, which may differ in the last bit),
`sparse_`, and with them the modules' default initialisation, give PyTorch's numbers for the
same seed. `orthogonal_` draws PyTorch's normals, then factorises them with NumPy's QR, not
torch's LAPACK: equal to rounding. The bounds and scales are PyTorch's formulas; the messages
are its messages.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.grad_mode import no_grad
from tracegrad.torch.tensor import Tensor

__all__ = [
    "calculate_gain",
    "constant",
    "constant_",
    "dirac",
    "dirac_",
    "eye",
    "eye_",
    "kaiming_normal",
    "kaiming_normal_",
    "kaiming_uniform",
    "kaiming_uniform_",
    "normal",
    "normal_",
    "ones_",
    "orthogonal",
    "orthogonal_",
    "sparse",
    "sparse_",
    "trunc_normal_",
    "uniform",
    "uniform_",
    "xavier_normal",
    "xavier_normal_",
    "xavier_uniform",
    "xavier_uniform_",
    "zeros_",
]

_LINEAR_FNS = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
)


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for `nonlinearity` (PyTorch's table)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _set(tensor: Tensor, value: np.ndarray) -> Tensor:
    """`tensor` takes `value` (in its dtype) in place, outside the graph."""
    with no_grad():
        return tensor.copy_(Tensor._wrap(np.asarray(value, tensor.dtype)))


# -- constants ------------------------------------------------------------------------------------


def constant_(tensor, val: float):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity matrix (rectangular: ones on the main diagonal) in a 2-D tensor."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _set(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups: int = 1):
    """The Dirac delta in a 3-, 4- or 5-D convolution weight: each of the first
    `min(out_channels // groups, in_channels)` output channels of each group copies its input
    channel at the kernel's centre, so the convolution passes its input through."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    value = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            value[(g * out_per_group + d, d, *centre)] = 1
    return _set(tensor, value)


# -- random ---------------------------------------------------------------------------------------


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode: str) -> int:
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(
    tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
):
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He); `Linear` uses a=sqrt(5)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * (calculate_gain(nonlinearity, a) / math.sqrt(fan))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
):
    """N(0, std^2) with std = gain / sqrt(fan) (He)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(
    tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None
):
    """N(mean, std^2) restricted to [a, b]. PyTorch's sampler: where [a, b] holds more than
    30% of the mass, normal draws outside are redrawn; otherwise uniform candidates on [a, b]
    are accepted with the normal density's ratio to its peak on [a, b]."""
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
            "values may be incorrect.",
            stacklevel=2,
        )
    with no_grad():
        if _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std) > 0.3:
            _redraw_outside(tensor, mean, std, a, b, generator)
        else:
            _accept_reject(tensor, mean, std, a, b, generator)
    return tensor


def _redraw_outside(tensor, mean, std, a, b, generator) -> None:
    lo = np.asarray(a, tensor.dtype).item()  # the bounds in the tensor's precision
    hi = np.asarray(b, tensor.dtype).item()
    result = tensor.normal_(mean, std, generator=generator)
    while True:
        mask = ops.logical_or(ops.lt(result, lo), ops.gt(result, hi))
        if not bool(ops.any(mask)):
            break
        result = ops.where(
            mask, ops.empty_like(result).normal_(mean, std, generator=generator), result
        )
    if tensor is not result:
        tensor.copy_(result)


def _log_density(candidates, mean, std, log_peak):
    return candidates.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)


def _accept_reject(tensor, mean, std, a, b, generator) -> None:
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2
    candidates = ops.empty_like(tensor)
    accept_buf = ops.empty_like(tensor)
    tensor.uniform_(a, b, generator=generator)
    candidates.copy_(tensor)
    _log_density(candidates, mean, std, log_peak)
    pending = accept_buf.uniform_(generator=generator).log_().gt(candidates)
    if not bool(ops.any(pending)):
        return
    result = tensor
    while True:
        candidates.uniform_(a, b, generator=generator)
        result = ops.where(pending, candidates, result)
        _log_density(candidates, mean, std, log_peak)
        pending = ops.where(
            pending, accept_buf.uniform_(generator=generator).log_().gt(candidates), pending
        )
        if not bool(ops.any(pending)):
            break
    tensor.copy_(result)


def orthogonal_(tensor, gain: float = 1, generator=None):
    """A (semi-)orthogonal matrix (trailing axes flattened): Q of the QR factorisation of a
    normal draw, its columns' signs fixed by R's diagonal (so Q is Haar-distributed)."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = ops.empty((rows, cols), dtype=tensor.dtype).normal_(0, 1, generator=generator)
    value = np.asarray(flat._cell.value)
    if rows < cols:
        value = value.T
    q, r = np.linalg.qr(value)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _set(tensor, q.reshape(tensor.shape) * gain)


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """N(0, std^2) entries in a 2-D tensor, then `ceil(sparsity * rows)` of each column's
    entries, at random rows (`randperm` on the global stream, as PyTorch's), set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
    value = np.array(tensor._cell.value)
    for col in range(cols):
        zero_rows = np.asarray(ops.randperm(rows)._cell.value)[:num_zeros]
        value[zero_rows, col] = 0
    return _set(tensor, value)


# -- PyTorch's deprecated spellings without the underscore ----------------------------------------


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
            FutureWarning,
            stacklevel=2,
        )
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated: use `{new_name}`."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
