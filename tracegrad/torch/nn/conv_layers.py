"""PyTorch's convolution, pooling and resampling Modules over the functions of this package.

Each keeps PyTorch's constructor signature, checks, parameter shapes and initialisation
(kaiming-uniform weights with a = sqrt(5), biases uniform in +-1/sqrt(fan_in), drawn from
tracegrad's generator) and its `extra_repr`. A non-zero `padding_mode` pads with `F.pad`
first and convolves without padding, as PyTorch's `_conv_forward` does.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.nn import convolution, init, pooling, resampling
from tracegrad.torch.nn.module import Module, Parameter
from tracegrad.torch.nn.sliding import ntuple
from tracegrad.torch.ops import empty

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "MaxPool1d",
    "MaxPool2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "Upsample",
]

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """The parameters and checks every convolution shares (PyTorch's `_ConvNd`)."""

    _n = 0
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
        output_padding=0,
    ):
        super().__init__()
        _check_device(device)
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = (ntuple(v, n) for v in (kernel_size, stride, dilation))
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                # a set, as PyTorch's: the order it prints in is the process's string hashing
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = ntuple(padding, n)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {_PADDING_MODES}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = self._transposed
        self.output_padding = ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's order: the last axis first, each (left, right)
        if isinstance(padding, str):
            pairs = [(0, 0)] * n
            if padding == "same":
                for i, (d, k) in enumerate(zip(dilation, kernel_size)):
                    total = d * (k - 1)
                    pairs[i] = (total // 2, total - total // 2)
        else:
            pairs = [(p, p) for p in padding]
        self._reversed_padding_repeated_twice = [v for pair in reversed(pairs) for v in pair]
        if self._transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        n = len(self.kernel_size)
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def _conv_forward(self, input, weight, bias):
        conv = (convolution.conv1d, convolution.conv2d, convolution.conv3d)[self._n - 1]
        if self.padding_mode != "zeros":
            padded = resampling.pad(input, self._reversed_padding_repeated_twice, self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) or (C_in, L); weight (C_out, C_in / groups, k)."""

    _n = 1


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W); weight
    (C_out, C_in / groups, kh, kw)."""

    _n = 2


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W)."""

    _n = 3


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            output_padding,
        )

    def _output_padding(self, input, output_size) -> tuple[int, ...]:
        """PyTorch's `_output_padding`: the extra size that reaches `output_size`."""
        if output_size is None:
            return self.output_padding
        n = self._n
        sizes = tuple(output_size)[-n:]
        spatial = input.shape[-n:]
        out = []
        for i in range(n):
            smallest = (
                (spatial[i] - 1) * self.stride[i]
                - 2 * self.padding[i]
                + self.dilation[i] * (self.kernel_size[i] - 1)
                + 1
            )
            largest = smallest + self.stride[i] - 1
            if not smallest <= sizes[i] <= largest:
                raise ValueError(
                    f"requested an output size of {list(sizes)}, but valid sizes range from "
                    f"{[smallest]} to {[largest]} (for an input of {list(spatial)})"
                )
            out.append(sizes[i] - smallest)
        return tuple(out)

    def forward(self, input, output_size=None):
        conv = (
            convolution.conv_transpose1d,
            convolution.conv_transpose2d,
            convolution.conv_transpose3d,
        )[self._n - 1]
        output_padding = self._output_padding(input, output_size)
        return conv(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """The adjoint of Conv1d; weight (C_in, C_out / groups, k)."""

    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """The adjoint of Conv2d; weight (C_in, C_out / groups, kh, kw)."""

    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """The adjoint of Conv3d; weight (C_in, C_out / groups, kd, kh, kw)."""

    _n = 3


# -- pooling ------------------------------------------------------------------------------------


class _MaxPoolNd(Module):
    _pool = None  # the functional form, set by each subclass

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )

    def forward(self, input):
        return type(self)._pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool1d(_MaxPoolNd):
    _pool = staticmethod(pooling.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    _pool = staticmethod(pooling.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    _pool = staticmethod(pooling.max_pool3d)


class _AvgPool(Module):
    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPool):
    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ):
        super().__init__()
        self.kernel_size = ntuple(kernel_size, 1)
        self.stride = ntuple(stride if (stride is not None) else kernel_size, 1)
        self.padding = ntuple(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return pooling.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )


class _AvgPoolNd(_AvgPool):
    """AvgPool2d and AvgPool3d: AvgPool1d's arguments kept as given, and `divisor_override`."""

    _pool = None

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return type(self)._pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AvgPool2d(_AvgPoolNd):
    _pool = staticmethod(pooling.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    _pool = staticmethod(pooling.avg_pool3d)


class _AdaptivePool(Module):
    _pool = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input):
        return type(self)._pool(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptivePool):
    _pool = staticmethod(pooling.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    _pool = staticmethod(pooling.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptivePool):
    _pool = staticmethod(pooling.adaptive_avg_pool3d)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._pool(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    _pool = staticmethod(pooling.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    _pool = staticmethod(pooling.adaptive_max_pool2d)


# -- resampling ---------------------------------------------------------------------------------


class Upsample(Module):
    """`F.interpolate` with fixed `size` or `scale_factor` (a float scale, as PyTorch
    stores it)."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return resampling.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return resampling.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return resampling.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
