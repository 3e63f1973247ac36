"""Batch, instance, group and local-response normalisation: PyTorch's functions and layers.

Each normalisation is a composition of tensor ops (mean, centring, `rsqrt`), so its gradient is
the primitives' rules. The running statistics are not part of the graph: they are updated in
place from the batch's values (unbiased variance, as PyTorch), the way ATen updates its buffers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.creation_from_data import _check_device, tensor
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.grad_mode import no_grad
from tracegrad.torch.nn import init
from tracegrad.torch.nn.module import Module, Parameter
from tracegrad.torch.ops.conventions import _as_tensor, _named
from tracegrad.torch.tensor import Tensor

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LocalResponseNorm",
    "batch_norm",
    "group_norm",
    "instance_norm",
    "local_response_norm",
]


# -- checks ---------------------------------------------------------------------------------------


def _verify_batch_size(size) -> None:
    """Training statistics of one value per channel would be 0/0: PyTorch refuses them."""
    if math.prod([size[0], *size[2:]]) == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}"
        )


def _verify_spatial_size(size) -> None:
    if math.prod(size[2:]) == 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {size}"
        )


def _check_features(name: str, tensor, expected: int) -> None:
    if tensor is not None and tensor.numel() != expected:
        raise RuntimeError(f"{name} should contain {expected} elements not {tensor.numel()}")


def _check_dtypes(x: Tensor, *tensors) -> None:
    """ATen's CPU rule: the statistics and parameters share the input's dtype."""
    for t in tensors:
        if t is None or t.dtype == x.dtype:
            continue
        if x.dtype == np.float32:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


# -- the shared arithmetic --------------------------------------------------------------------


def _channel_shape(x: Tensor) -> tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _normalize(x: Tensor, dims: tuple[int, ...], eps: float, weight=None, shape=None):
    """`(x - mean) / sqrt(var + eps)` over `dims`, biased variance, times `weight` (reshaped to
    `shape`) when given; also the mean and variance (kept dims) for the running statistics.
    The weight multiplies the small `1 / sqrt(var + eps)`, not the output: one pass over the
    input less, forward and backward."""
    mean = ops.mean(x, dims, keepdim=True)
    centered = ops.sub(x, mean)
    var = ops.mean(ops.square(centered), dims, keepdim=True)
    scale = ops.rsqrt(ops.add(var, eps))
    if weight is not None:
        scale = ops.mul(scale, ops.reshape(_as_tensor(weight), shape))
    return ops.mul(centered, scale), mean, var


def _normalize_with(x: Tensor, mean, var, eps: float, weight, bias, shape) -> Tensor:
    """`(x - mean) / sqrt(var + eps) * weight + bias` with given statistics, as one scale and
    one shift of the input (ATen's eval-mode form)."""
    scale = ops.rsqrt(ops.add(ops.reshape(_as_tensor(var), shape), eps))
    if weight is not None:
        scale = ops.mul(scale, ops.reshape(_as_tensor(weight), shape))
    shift = ops.neg(ops.mul(ops.reshape(_as_tensor(mean), shape), scale))
    if bias is not None:
        shift = ops.add(shift, ops.reshape(_as_tensor(bias), shape))
    return ops.add(ops.mul(x, scale), shift)


def _affine(out: Tensor, weight, bias, shape) -> Tensor:
    if weight is not None:
        out = ops.mul(out, ops.reshape(_as_tensor(weight), shape))
    if bias is not None:
        out = ops.add(out, ops.reshape(_as_tensor(bias), shape))
    return out


def _update(buffer: Tensor | None, batch_value: np.ndarray, momentum: float) -> None:
    """`buffer = (1 - momentum) * buffer + momentum * batch_value`, in place (no graph)."""
    if buffer is None:
        return
    old = buffer._cell.value
    new = momentum * batch_value.reshape(old.shape) + (1 - momentum) * old
    with no_grad():
        buffer.copy_(Tensor._wrap(np.asarray(new, old.dtype)))


def _unbiased(var: Tensor, count: int) -> np.ndarray:
    value = np.asarray(var._cell.value)
    return value * count / (count - 1) if count > 1 else np.full_like(value, np.inf)


# -- functional -----------------------------------------------------------------------------------


def batch_norm(
    input,
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalises each channel (axis 1) over the batch and spatial axes.

    Training: the batch's mean and biased variance normalise, and `running_mean` /
    `running_var` (when given) move towards the batch's mean and *unbiased* variance by
    `momentum`, in place. Otherwise the running statistics normalise. Then `* weight + bias`.
    """
    x = _as_tensor(input)
    if training:
        _verify_batch_size(x.shape)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if x.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    channels = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None and not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
        _check_features(name, t, channels)
    _check_features("weight", weight, channels)
    _check_features("bias", bias, channels)
    _check_dtypes(x, running_mean, running_var, weight, bias)
    shape = _channel_shape(x)
    if training:
        dims = (0, *range(2, x.ndim))
        out, mean, var = _normalize(x, dims, eps, weight, shape)
        out = _affine(out, None, bias, shape)
        if running_mean is not None:
            count = x.numel() // channels
            _update(running_mean, np.asarray(mean._cell.value), momentum)
            _update(running_var, _unbiased(var, count), momentum)
    else:
        out = _normalize_with(x, running_mean, running_var, eps, weight, bias, shape)
    return _named(out, "NativeBatchNormBackward0", (x, weight, bias))


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
):
    """Normalises each (sample, channel) over its spatial axes. With `use_input_stats` the
    running statistics (when given) move towards the batch average of the instances' mean and
    unbiased variance; without it they normalise instead."""
    x = _as_tensor(input)
    if use_input_stats:
        _verify_spatial_size(x.shape)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError(
            "Expected running_mean and running_var to be defined when use_input_stats is false"
        )
    n, channels = x.shape[0], x.shape[1]
    # ATen runs batch_norm on the input seen as (1, N * C, ...): its counts are N * C
    for name, t in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {n * channels} elements not {n * t.numel()}")
    _check_dtypes(x, running_mean, running_var, weight, bias)
    shape = _channel_shape(x)
    if use_input_stats:
        dims = tuple(range(2, x.ndim))
        out, mean, var = _normalize(x, dims, eps, weight, shape)
        out = _affine(out, None, bias, shape)
        if running_mean is not None:
            count = math.prod(x.shape[2:])
            batch_mean = np.asarray(mean._cell.value).reshape(n, channels).mean(0)
            batch_var = _unbiased(var, count).reshape(n, channels).mean(0)
            _update(running_mean, batch_mean, momentum)
            _update(running_var, batch_var, momentum)
    else:
        out = _normalize_with(x, running_mean, running_var, eps, weight, bias, shape)
    return _named(out, "ViewBackward0", (x, weight, bias))


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalises each sample's channels in `num_groups` groups (over the group's channels and
    the spatial axes, biased variance), then `* weight + bias` per channel."""
    x = _as_tensor(input)
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, channels = x.shape[0], x.shape[1]
    _verify_batch_size([n * channels // num_groups, num_groups, *x.shape[2:]])
    if channels % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(x.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != channels):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(t.shape)} and input of shape "
                f"{list(x.shape)}"
            )
    grouped = ops.reshape(x, (n, num_groups, -1))
    out, _, _ = _normalize(grouped, (2,), eps)
    out = _affine(ops.reshape(out, x.shape), weight, bias, _channel_shape(x))
    return _named(out, "NativeGroupNormBackward0", (x, weight, bias))


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """`x / (k + alpha * mean of x**2 over `size` neighbouring channels) ** beta`; the window
    is zero-padded (`size // 2` before, `(size - 1) // 2` after) and always divides by `size`,
    as PyTorch's average pooling with `count_include_pad`."""
    x = _as_tensor(input)
    if x.ndim < 3:
        raise ValueError(
            "Expected 3D or higher dimensionality                          input "
            f"(got {x.ndim} dimensions)"
        )
    if x.numel() == 0:
        return x
    channels = x.shape[1]
    square = ops.mul(x, x)
    before, after = size // 2, (size - 1) // 2
    zeros = [ops.zeros((x.shape[0], p, *x.shape[2:]), dtype=x.dtype) for p in (before, after)]
    padded = ops.cat([zeros[0], square, zeros[1]], 1)
    window = padded[:, 0:channels]
    for j in range(1, size):
        window = ops.add(window, padded[:, j : j + channels])
    div = ops.pow(ops.add(ops.mul(ops.div(window, size), alpha), k), beta)
    return ops.div(x, div)


# -- layers ---------------------------------------------------------------------------------------


class _NormBase(Module):
    """Parameters (`weight` ones, `bias` zeros) and running statistics (`running_mean` zeros,
    `running_var` ones, `num_batches_tracked` an int64 0) shared by batch and instance norm."""

    _version = 2

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        _check_device(device)
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(ops.empty(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(ops.empty(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", ops.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ops.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )

    def _load(self, state_dict, prefix, missing, unexpected, errors, assign, metadata=None):
        # checkpoints older than version 2 (and plain dicts, which carry no version) have no
        # num_batches_tracked: it keeps its value, as PyTorch's `_load_from_state_dict`
        version = (metadata or {}).get(prefix[:-1], {}).get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats:
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked
        super()._load(state_dict, prefix, missing, unexpected, errors, assign, metadata)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        stats = not self.training or self.track_running_stats
        return batch_norm(
            input,
            self.running_mean if stats else None,
            self.running_var if stats else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm over `(N, C)` or `(N, C, L)` inputs."""

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over `(N, C, H, W)` inputs."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm over `(N, C, D, H, W)` inputs."""

    def _check_input_dim(self, input) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    """Instance norm: no affine parameters and no running statistics by default; an input
    without the batch axis is normalised as a batch of one."""

    _no_batch_dim = 0

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def _apply_instance_norm(self, input):
        return instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features "
                    f"({self.num_features}), but got: {input.size(feature_dim)}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence "
                "this warning by not passing in num_features, which is not used because "
                "affine=False",
                stacklevel=2,
            )
        if input.dim() == self._no_batch_dim:
            return ops.squeeze(self._apply_instance_norm(ops.unsqueeze(input, 0)), 0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over `(N, C, L)` or `(C, L)` inputs."""

    _no_batch_dim = 2

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over `(N, C, H, W)` or `(C, H, W)` inputs."""

    _no_batch_dim = 3

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (3, 4):
            raise ValueError(f"expected 3D or 4D input (got {input.dim()}D input)")


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over `(N, C, D, H, W)` or `(C, D, H, W)` inputs."""

    _no_batch_dim = 4

    def _check_input_dim(self, input) -> None:
        if input.dim() not in (4, 5):
            raise ValueError(f"expected 4D or 5D input (got {input.dim()}D input)")


class GroupNorm(Module):
    """Group norm with per-channel `weight` (ones) and `bias` (zeros) when `affine`."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        _check_device(device)
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(ops.empty(num_channels, dtype=dtype))
            if bias:
                self.bias = Parameter(ops.empty(num_channels, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
