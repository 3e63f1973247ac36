"""PyTorch's remaining resampling layers: the `Fold` and `Unfold` Modules (over
`convolution.fold` / `unfold`), `channel_shuffle` and `ChannelShuffle`, and the deprecated
`upsample`, `upsample_nearest`, `upsample_bilinear` with `UpsamplingNearest2d` and
`UpsamplingBilinear2d` (over `resampling.interpolate`, bilinear with `align_corners=True`).

A channel shuffle is a reshape, a transpose and a reshape, so its gradient is the inverse
permutation; `native_channel_shuffle` computes the same values but, as in PyTorch, has no
derivative (a backward pass through it raises PyTorch's error).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.nn import convolution, resampling
from tracegrad.torch.nn.conv_layers import Upsample
from tracegrad.torch.nn.module import Module
from tracegrad.torch.ops.conventions import _as_tensor, _named
from tracegrad.torch.ops.scatter import _refused

__all__ = [
    "ChannelShuffle",
    "Fold",
    "Unfold",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
    "channel_shuffle",
    "native_channel_shuffle",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


# -- Fold / Unfold --------------------------------------------------------------------------------


class Fold(Module):
    """col2im: sums the sliding blocks of (N, C * prod(kernel_size), L) into
    (N, C, *output_size); arguments are stored as given, as PyTorch's."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return convolution.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    """im2col: the sliding blocks of (N, C, H, W) as the columns of (N, C * kh * kw, L)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return convolution.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


# -- channel shuffle ------------------------------------------------------------------------------


def _shuffle_shape(x, groups: int) -> tuple[int, ...]:
    """ATen's checks; the (batch, groups, channels per group, rest) view of `x`."""
    if x.ndim <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(x.shape)}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    channels = x.shape[1]
    if channels % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {channels} channels and "
            f"{groups} groups."
        )
    return (x.shape[0], groups, channels // groups, math.prod(x.shape[2:]))


def channel_shuffle(input, groups: int):
    """(N, C, *) with its C channels, seen as `groups` rows of C / groups, read column by
    column: output channel `j * groups + g` is input channel `g * (C / groups) + j`."""
    x = _as_tensor(input)
    view = _shuffle_shape(x, int(groups))
    y = ops.reshape(ops.transpose(ops.reshape(x, view), 1, 2), x.shape)
    return _named(y, "ChannelShuffleBackward0", (input,))


def native_channel_shuffle(input, groups: int):
    """`channel_shuffle`'s values from ATen's kernel, which PyTorch does not differentiate:
    a backward pass through the result raises its error."""
    x = _as_tensor(input)
    view = _shuffle_shape(x, int(groups))
    value = np.asarray(x._cell.value).reshape(view).swapaxes(1, 2).reshape(x.shape)
    message = "derivative for aten::native_channel_shuffle is not implemented"
    return _refused((x,), value, "torch::autograd::NotImplemented", message)


class ChannelShuffle(Module):
    """`channel_shuffle` with a fixed number of `groups`."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


# -- upsample -------------------------------------------------------------------------------------


def _deprecated(name: str) -> None:
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        UserWarning,
        stacklevel=3,
    )


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
    """Deprecated: `interpolate(input, size, scale_factor, mode, align_corners)`, with
    PyTorch's warning."""
    _deprecated("upsample")
    return resampling.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: `interpolate(..., mode="nearest")`, with PyTorch's warning."""
    _deprecated("upsample_nearest")
    return resampling.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: `interpolate(..., mode="bilinear", align_corners=True)`, with PyTorch's
    warning."""
    _deprecated("upsample_bilinear")
    return resampling.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


class UpsamplingNearest2d(Upsample):
    """`Upsample(size, scale_factor, mode="nearest")`."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """`Upsample(size, scale_factor, mode="bilinear", align_corners=True)`."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
