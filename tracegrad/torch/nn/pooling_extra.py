"""The rest of PyTorch's pooling: power-average pooling (`lp_pool1d/2d/3d`, `LPPool1d/2d/3d`),
max unpooling (`max_unpool1d/2d/3d`, `MaxUnpool1d/2d/3d`), `adaptive_max_pool3d` with
`AdaptiveMaxPool3d`, and the `*_with_indices` forms of the max poolings.

Each is composed as PyTorch's Python or ATen code composes it, so gradients are the
primitives' rules: `lp_pool` is the average pooling of `x ** p` times the window size, with
PyTorch's `sign(out) * relu(|out|)` before the root (so an all-zero window gets its zero
gradient, not a nan); `max_unpool` scatters the values into zeros at their indices;
`max_pool1d_with_indices` is `max_pool2d` over an inserted axis of size one, as in ATen.
"""

from __future__ import annotations

import collections.abc
import math
import numbers

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.nn import pooling
from tracegrad.torch.nn.conv_layers import _AdaptiveMaxPool
from tracegrad.torch.nn.module import Module
from tracegrad.torch.ops.conventions import _as_tensor, _named
from tracegrad.torch.tensor import Tensor

__all__ = [
    "AdaptiveMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]


def _ntuple(value, n: int) -> tuple:
    """PyTorch's `_single` / `_pair` / `_triple`: an iterable as a tuple, else n copies."""
    if isinstance(value, collections.abc.Iterable):
        return tuple(value)
    return (value,) * n


def _sizes(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# -- lp_pool --------------------------------------------------------------------------------------


def _lp_pool(input, n: int, norm_type, kernel_size, stride, ceil_mode):
    x = _as_tensor(input)
    max_pool = (pooling.max_pool1d, pooling.max_pool2d, pooling.max_pool3d)[n - 1]
    avg_pool = (pooling.avg_pool1d, pooling.avg_pool2d, pooling.avg_pool3d)[n - 1]
    if isinstance(norm_type, int | float):
        if norm_type == math.inf:
            out = max_pool(ops.abs(x), kernel_size, stride, 0, 1, ceil_mode)
            # PyTorch's max_pool1d is max_pool2d over (..., 1, L), then a squeeze
            return _named(out, "SqueezeBackward1") if n == 1 else out
        if norm_type == -math.inf:
            return ops.neg(max_pool(ops.neg(ops.abs(x)), kernel_size, stride, 0, 1, ceil_mode))
    window = math.prod(_ntuple(kernel_size, n))
    if stride is not None:
        out = avg_pool(ops.pow(x, norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(ops.pow(x, norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    # sign(out) * relu(|out|) is `out`, but as PyTorch writes it: its derivative at 0 is relu's
    # zero, which keeps the root's infinite derivative there from becoming a nan
    clipped = ops.mul(ops.sign(out), ops.relu(ops.abs(out)))
    return ops.pow(ops.mul(clipped, window), 1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """`(sum over each window of x ** p) ** (1 / p)` along the last axis of (N, C, L) or
    (C, L); `p = inf` is max pooling of |x|, `p = -inf` minus that of -|x|."""
    return _lp_pool(input, 1, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """`lp_pool1d` over windows of the last two axes."""
    return _lp_pool(input, 2, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    """`lp_pool1d` over windows of the last three axes."""
    return _lp_pool(input, 3, norm_type, kernel_size, stride, ceil_mode)


class _LPPoolNd(Module):
    _pool = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        pool = type(self)._pool
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    _pool = staticmethod(lp_pool1d)


class LPPool2d(_LPPoolNd):
    _pool = staticmethod(lp_pool2d)


class LPPool3d(_LPPoolNd):
    _pool = staticmethod(lp_pool3d)


# -- max_unpool -----------------------------------------------------------------------------------


def _unpool_output_size(input, kernel_size, stride, padding, output_size) -> list[int]:
    """PyTorch's `_unpool_output_size`: the inverse of the pooling's size by default, or the
    requested size (with or without its two leading axes) when within a stride of it."""
    shape = _as_tensor(input).shape
    n = len(kernel_size)
    default = [(shape[d - n] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        sizes = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        if len(output_size) != n:
            raise ValueError(
                f"output_size should be a sequence containing {n} or {n + 2} elements, but it "
                f"has a length of '{len(output_size)}'"
            )
        for d in range(n):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(
                    f'invalid output_size "{output_size}" (dim {d} must be between {low} and '
                    f"{high})"
                )
        sizes = output_size
    for d in range(n):
        if sizes[d] < 0:
            raise ValueError(
                "max_unpooling: output_size must contain non-negative spatial dimensions, but "
                f"got output_size[{d}]={sizes[d]}"
            )
    return [int(s) for s in sizes]


def _check_unpool(x: Tensor, indices: Tensor, n: int, stride) -> None:
    """ATen's `max_unpooling{2,3}d` checks, in its order."""
    if indices.dtype != np.int64:
        but = f" but got: {indices.dtype.name}" if n == 2 else ""
        raise RuntimeError(f"elements in indices should be type int64{but}")
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"Input to max_unpooling{n}d should be a {n + 1}d or {n + 2}d Tensor, but got a "
            f"tensor with {x.ndim} dimensions."
        )
    if x.shape != indices.shape:
        raise RuntimeError(
            "Expected shape of indices to be same as that of the input tensor "
            f"({_sizes(x.shape)}) but got indices tensor with shape: {_sizes(indices.shape)}"
        )
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(
                f"max_unpooling{n}d_forward_out_cpu(): Expected input to have non-zero size for "
                f"non-batch dimensions, but got {_sizes(x.shape)} with dimension {i} being empty."
            )
    if stride is not None and any(s <= 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: {_sizes(stride)}")


def _unpool(input, indices, sizes, n: int, stride=None):
    """ATen's `max_unpooling{n}d`: zeros of the output's size with each input value written
    at its index (flat in its (N, C) plane)."""
    x, index = _as_tensor(input), _as_tensor(indices)
    _check_unpool(x, index, n, stride)
    lead = x.shape[:-n]
    planes, size_in, size_out = math.prod(lead), math.prod(x.shape[-n:]), math.prod(sizes)
    idx = np.asarray(index._cell.value).reshape(planes, size_in)
    bad = (idx < 0) | (idx >= size_out)
    if bad.any():  # ATen reports the last invalid index its (one-thread) loop meets
        raise RuntimeError(
            f"Found an invalid max index: {idx[bad][-1]} (output volumes are of size "
            f"{'x'.join(str(s) for s in sizes)})"
        )
    flat = ops.reshape(x, (planes, size_in))
    where = Tensor(np.ascontiguousarray(idx, dtype=np.int64))
    zeros = ops.zeros((planes, size_out), dtype=x.dtype)
    y = ops.scatter(zeros, 1, where, flat)  # the last write wins, as in ATen's loop
    # PyTorch's derivative gathers the output's gradient at every index, a repeated (lost)
    # write included; those writes are added here as exact zeros that carry that gradient
    rows = np.arange(planes)[:, None]
    position = np.full((planes, size_out), -1, np.int64)
    position[rows, idx] = np.arange(size_in)
    lost = position[rows, idx] != np.arange(size_in)
    if lost.any():
        a = np.asarray(x._cell.value).reshape(planes, size_in)
        keep = Tensor(lost & np.isfinite(a) if a.dtype.kind == "f" else lost)
        zero = ops.where(keep, ops.sub(flat, flat.detach()), 0.0)
        y = ops.scatter_add(y, 1, where, zero)
    y = ops.reshape(y, (*lead, *sizes))
    return _named(y, f"MaxUnpool{n}DBackward0", (input,))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of `max_pool1d`: each value of (N, C, L) or (C, L) at the position
    its index names, zeros elsewhere (length `(L - 1) * stride + kernel - 2 * padding` or
    `output_size`)."""
    kernel_size = _ntuple(kernel_size, 1)
    stride = _ntuple(stride, 1) if stride is not None else kernel_size
    padding = _ntuple(padding, 1)
    sizes = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    # as ATen: the two-dimensional unpooling of the input with a trailing axis of size one
    x, index = ops.unsqueeze(_as_tensor(input), -1), ops.unsqueeze(_as_tensor(indices), -1)
    return ops.squeeze(_unpool(x, index, (*sizes, 1), 2), -1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of `max_pool2d(..., return_indices=True)`: values placed at their
    flat in-plane indices `h * W + w` of a zero (N, C, H_out, W_out) tensor."""
    kernel_size = _ntuple(kernel_size, 2)
    stride = _ntuple(stride, 2) if stride is not None else kernel_size
    padding = _ntuple(padding, 2)
    sizes = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _unpool(input, indices, tuple(sizes), 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of `max_pool3d(..., return_indices=True)`."""
    kernel_size = _ntuple(kernel_size, 3)
    stride = _ntuple(stride, 3) if stride is not None else kernel_size
    padding = _ntuple(padding, 3)
    sizes = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _unpool(input, indices, tuple(sizes), 3, stride)


class _MaxUnpoolNd(Module):
    _n = 0
    _unpool = None

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._n
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, n)
        self.padding = _ntuple(padding, n)

    def forward(self, input, indices, output_size=None):
        unpool = type(self)._unpool
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _n = 1
    _unpool = staticmethod(max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    _n = 2
    _unpool = staticmethod(max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _n = 3
    _unpool = staticmethod(max_unpool3d)


# -- adaptive_max_pool3d --------------------------------------------------------------------------


def _list_with_default(out_size, defaults):
    """PyTorch's `_list_with_default`: None entries of `out_size` take the input's sizes."""
    if isinstance(out_size, numbers.Integral):
        return out_size
    out_size = list(out_size)
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = False):
    """(max over PyTorch's adaptive windows of (N, C, D, H, W) or (C, D, H, W), the flat
    in-volume position `(d * H + h) * W + w` of each winner)."""
    x = _as_tensor(input)
    name = "adaptive_max_pool3d"
    sizes = _list_with_default(output_size, x.shape)
    sizes = (int(sizes),) * 3 if isinstance(sizes, numbers.Integral) else tuple(sizes)
    if x.ndim not in (4, 5):
        raise RuntimeError(f"{name}(): Expected 4D or 5D tensor, but got: {_sizes(x.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {_sizes(x.shape)} with dimension {i} being empty"
            )
    if len(sizes) != 3:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be 3")
    shape = (*x.shape[:-3], *sizes)
    if any(s < 0 for s in sizes):
        first = next(s for s in sizes if s < 0)
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {first}: {_sizes(shape)}"
        )
    if 0 in sizes:  # an empty output: nothing to compare
        y = ops.reshape(ops.flatten(x)[:0], shape)
        out = _named(y, "AdaptiveMaxPool3DBackward0", (input,)), Tensor(np.zeros(shape, np.int64))
    else:
        out = pooling._adaptive_max(x, 3, sizes, True, name)
    return out


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):
    """`adaptive_max_pool3d_with_indices`, its first result unless `return_indices`."""
    out, indices = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, indices) if return_indices else out


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    _pool = staticmethod(adaptive_max_pool3d)


# -- *_with_indices -------------------------------------------------------------------------------


def _one_int(name: str, value) -> int:
    """ATen's `int[1]` argument: an int, or a sequence of exactly one."""
    if isinstance(value, numbers.Integral):
        return int(value)
    value = tuple(value)
    if len(value) != 1:
        raise RuntimeError(
            f"max_pool1d() argument '{name}' should contain one int (got {len(value)})"
        )
    return int(value[0])


def max_pool1d_with_indices(
    input,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """(max pooling of (N, C, L) or (C, L), each winner's position): ATen's
    `max_pool1d_with_indices`, which is `max_pool2d_with_indices` over (..., 1, L), with its
    checks and messages. `return_indices` is ignored (both are returned), as PyTorch's."""
    k = _one_int("kernel_size", kernel_size)
    no_stride = stride is None or (not isinstance(stride, numbers.Integral) and not stride)
    s = k if no_stride else _one_int("stride", stride)  # `[]` means the kernel size too
    p, d = _one_int("padding", padding), _one_int("dilation", dilation)
    x = _as_tensor(input)
    if x.ndim not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
            "'self' (while checking arguments for max_pool1d)"
        )
    # ATen's `pooling_output_shape` and `pool2d_shape_check`, for the width, in its order
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > ((k - 1) * d + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={p}, "
            f"kernel_size={k} and dilation={d}"
        )
    checks = (
        (k > 0, f"kernel size should be greater than zero, but got kH: 1 kW: {k}"),
        (s > 0, f"stride should be greater than zero, but got dH: 1 dW: {s}"),
        (d > 0, f"dilation should be greater than zero, but got dilationH: 1 dilationW: {d}"),
    )
    for ok, message in checks:
        if not ok:
            raise RuntimeError(message)
    wide = ops.unsqueeze(x, -2)
    if 0 in wide.shape[-3:]:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{_sizes(wide.shape)}"
        )
    if k // 2 < p:
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got "
            f"padW = {p}, padH = 0, kW = {k}, kH = 1"
        )
    out, index = pooling.max_pool2d(wide, (1, k), (1, s), (0, p), (1, d), ceil_mode, True)
    return ops.squeeze(out, -2), ops.squeeze(index, -2)


def max_pool2d_with_indices(
    input,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """`max_pool2d(..., return_indices=True)`: always (values, indices), as PyTorch's."""
    return pooling.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(
    input,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """`max_pool3d(..., return_indices=True)`: always (values, indices), as PyTorch's."""
    return pooling.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = False):
    """`adaptive_max_pool1d(..., return_indices=True)`: always (values, indices)."""
    out, indices = pooling.adaptive_max_pool1d(input, output_size, True)
    # PyTorch's is adaptive_max_pool2d over (..., 1, L), then a squeeze
    return _named(out, "SqueezeBackward1"), indices


def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = False):
    """`adaptive_max_pool2d(..., return_indices=True)`: always (values, indices)."""
    return pooling.adaptive_max_pool2d(input, output_size, True)
