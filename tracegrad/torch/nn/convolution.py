"""Convolutions and `unfold`/`fold`, as im2col and one matmul.

A convolution gathers its windows with `sliding.im2col` (strided slices joined by one copy),
lays them out as one (C * K, N * L) matrix and multiplies by the (O, C * K) weight in a single
BLAS call (one batched call per group), so the batch and the output positions are never Python
loops; the gradients are the primitives' (matmul, slice, concatenate). The transposed
convolution is the adjoint: weight.T @ input, then `col2im`. Shapes, defaults and messages are
PyTorch's (its message names the tensor types as NumPy dtype names).
"""

from __future__ import annotations

import numbers
import warnings

from tracegrad import numpy as tnp
from tracegrad.primitives import products, views
from tracegrad.primitives import shape as shape_ops
from tracegrad.torch.nn.sliding import (
    col2im,
    im2col,
    ntuple,
    output_size,
    pad_zeros,
    prod,
    shape_text,
)
from tracegrad.torch.ops.conventions import _as_tensor, _named

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "unfold",
]

_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half"}


def _list(shape) -> str:
    return "[" + shape_text(shape) + "]"


def _conv_arg(name: str, value, n: int) -> tuple[int, ...]:
    out = ntuple(value, n)
    if len(out) != n:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {n} values to match "
            f"the convolution dimensions, but got {name}={list(out)}"
        )
    return out


def _check_input(x, weight, n: int, name: str) -> bool:
    """PyTorch's rank and dtype checks; whether the input is unbatched."""
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got "
            f"input of size: {_list(x.shape)}"
        )
    if weight.ndim != n + 2:
        raise RuntimeError(
            "weight should have at least three dimensions"
            if weight.ndim < 3
            else f"Expected {n + 2}-dimensional weight for {n + 2}-dimensional input "
            f"{_list(x.shape)}, but got {weight.ndim}-dimensional weight of size "
            f"{_list(weight.shape)} instead"
        )
    if x.dtype != weight.dtype:
        raise RuntimeError(
            f"expected scalar type {x.dtype.name} but found {weight.dtype.name}"
            if x.dtype.kind == "f"
            else f"Input type ({x.dtype.name}) and weight type ({weight.dtype.name}) should "
            "be the same"
        )
    return x.ndim == n + 1


def _check_bias(x, weight, bias, out_channels: int) -> None:
    if bias is None:
        return
    if bias.ndim != 1 or bias.shape[0] != out_channels:
        raise RuntimeError(
            f"Given weight of size {_list(weight.shape)}, expected bias to be 1-dimensional "
            f"with {out_channels} elements, but got bias of size {_list(bias.shape)} instead"
        )
    if bias.dtype != x.dtype:
        raise RuntimeError(
            f"Input type ({_C_NAMES.get(x.dtype.name, x.dtype.name)}) and bias type "
            f"({_C_NAMES.get(bias.dtype.name, bias.dtype.name)}) should be the same"
        )


def _check_geometry(stride, padding, dilation) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")


def _same_padding(kernel, dilation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """'same': total d * (k - 1) per axis, the odd element on the high side (as PyTorch)."""
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    low = tuple(t // 2 for t in total)
    if any(t % 2 for t in total):
        warnings.warn(
            "Using padding='same' with even kernel lengths and odd dilation may require a "
            "zero-padded copy of the input be created",
            UserWarning,
            stacklevel=5,
        )
    return low, tuple(t - lo for t, lo in zip(total, low))


def _padding(padding, kernel, stride, dilation, n: int):
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * n, (0,) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            return _same_padding(kernel, dilation)
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    pad = _conv_arg("padding", padding, n)
    return pad, pad


def _check_groups(x, w, groups: int) -> None:
    """PyTorch's checks of a convolution's groups against the weight and input channels."""
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if w.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size [{_list(w.shape)}] instead"
        )
    if x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {_list(w.shape)}, expected "
            f"input{_list(x.shape)} to have {w.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead"
        )


def _convolution(input, weight, bias, stride, padding, dilation, groups, n: int, name: str):
    x, w = _as_tensor(input), _as_tensor(weight)
    b = None if bias is None else _as_tensor(bias)
    stride = _conv_arg("stride", stride, n)
    dilation = _conv_arg("dilation", dilation, n)
    unbatched = _check_input(x, w, n, name)
    if unbatched:
        x = views.reshape(x, (1, *x.shape))
    low, high = _padding(padding, w.shape[2:], stride, dilation, n)
    _check_geometry(stride, low, dilation)
    _check_groups(x, w, groups)
    out_channels, kernel = w.shape[0], w.shape[2:]
    batch, channels, spatial = x.shape[0], x.shape[1], x.shape[2:]
    _check_bias(x, w, b, out_channels)
    padded = tuple(s + lo + hi for s, lo, hi in zip(spatial, low, high))
    effective = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(e > p for e, p in zip(effective, padded)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({shape_text(padded, ' x ')}). Kernel "
            f"size: ({shape_text(effective, ' x ')}). Kernel size can't be greater than actual "
            "input size"
        )
    out = tuple(
        output_size(s, k, 0, st, d) for s, k, st, d in zip(padded, kernel, stride, dilation)
    )
    # channels first: (C, N, *spatial) in C order, so the windows come out as (C, K, N, *out)
    # in C order and reshape to the (C * K, N * L) matrix without another copy
    xt = views.transpose(x, (1, 0, *range(2, n + 2)))
    if any(low) or any(high):
        xt = pad_zeros(xt, low, high)  # (a fresh C-ordered array)
    elif channels > 1 and batch > 1:
        xt = shape_ops.ascontiguousarray(xt)
    cols = im2col(xt, kernel, stride, dilation, out)  # (C, K, N, *out)
    y = _grouped_product(cols, w, groups, batch * prod(out))  # (O, N * L)
    if b is not None:
        y = tnp.add(y, views.reshape(b, (out_channels, 1)))
    y = views.reshape(y, (out_channels, batch, *out))
    y = views.transpose(y, (1, 0, *range(2, n + 2)))
    if unbatched:
        y = views.reshape(y, y.shape[1:])
    shown = (input, weight) if bias is None else (input, weight, bias)
    return _named(y, "ConvolutionBackward0", shown)


def _grouped_product(cols, w, groups: int, columns: int):
    """weight (O, C/g, *k) times the windows (C, K, N, *out), per group: one BLAS matmul of
    (O/g, C/g * K) by (C/g * K, N * L) per group (one batched call), the result (O, N * L)."""
    out_channels = w.shape[0]
    width = prod(w.shape[1:])  # C/g * K
    if groups == 1:
        windows = views.reshape(cols, (width, columns))
        return products.matmul(views.reshape(w, (out_channels, width)), windows)
    windows = views.reshape(cols, (groups, width, columns))
    kernels = views.reshape(w, (groups, out_channels // groups, width))
    return views.reshape(products.matmul(kernels, windows), (out_channels, columns))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as PyTorch) of (N, C, L) or (C, L) by (O, C/g, k)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C, H, W) or (C, H, W) by (O, C/g, kh, kw); `padding` may be
    'valid' or 'same' (stride 1; an odd total puts the extra element at the end)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) or (C, D, H, W) by (O, C/g, kd, kh, kw)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


# -- transposed convolution -------------------------------------------------------------------


def _check_transposed(x, w, groups, stride, dilation, output_padding, n: int) -> None:
    """PyTorch's checks of a transposed convolution's groups, channels and output padding."""
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if w.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension "
            f"0, but got weight of size [{_list(w.shape)}] instead"
        )
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {_list(w.shape)}, expected input"
            f"{_list(x.shape)} to have {w.shape[0]} channels, but got {x.shape[1]} channels "
            "instead"
        )
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        axes = ("depth", "height", "width")[-n:] if n > 1 else ("width",)
        parts = [f"output_padding_{a}: {v}" for a, v in zip(axes, output_padding)]
        parts += [f"stride_{a}: {v}" for a, v in zip(axes, stride)]
        parts += [f"dilation_{a}: {v}" for a, v in zip(axes, dilation)]
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            + " ".join(parts)
        )


def _transposed(input, weight, bias, stride, padding, output_padding, groups, dilation, n, name):
    x, w = _as_tensor(input), _as_tensor(weight)
    b = None if bias is None else _as_tensor(bias)
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    stride = _conv_arg("stride", stride, n)
    dilation = _conv_arg("dilation", dilation, n)
    padding = _conv_arg("padding", padding, n)
    output_padding = _conv_arg("output_padding", output_padding, n)
    unbatched = _check_input(x, w, n, name)
    if unbatched:
        x = views.reshape(x, (1, *x.shape))
    _check_geometry(stride, padding, dilation)
    _check_transposed(x, w, groups, stride, dilation, output_padding, n)
    in_channels, group_out, kernel = w.shape[0], w.shape[1], w.shape[2:]
    batch, spatial = x.shape[0], x.shape[2:]
    out_channels = group_out * groups
    _check_bias(x, w, b, out_channels)
    out = tuple(
        (i - 1) * s - 2 * p + d * (k - 1) + op + 1
        for i, s, p, d, k, op in zip(spatial, stride, padding, dilation, kernel, output_padding)
    )
    if any(o <= 0 for o in out):
        raise RuntimeError(
            f"Given input size per channel: ({shape_text(spatial, ' x ')}). Calculated output "
            f"size per channel: ({shape_text(out, ' x ')}). Output size is too small"
        )
    # cols = weight.T @ input per group: (g, O/g * K, C/g) by (g, C/g, N * L)
    positions = prod(spatial)
    width = group_out * prod(kernel)
    per_group = in_channels // groups
    kernels = views.transpose(views.reshape(w, (groups, per_group, width)), (0, 2, 1))
    inputs = views.reshape(x, (batch, groups, per_group, positions))
    inputs = views.reshape(views.transpose(inputs, (1, 2, 0, 3)), (groups, per_group, -1))
    cols = products.matmul(kernels, inputs)  # (g, O/g * K, N * L)
    cols = views.reshape(cols, (out_channels, prod(kernel), batch, *spatial))
    full = tuple(p + o for p, o in zip(padding, out))  # room for the padding and output_padding
    full = tuple(
        max(f, (i - 1) * s + d * (k - 1) + 1)
        for f, i, s, d, k in zip(full, spatial, stride, dilation, kernel)
    )
    y = col2im(cols, full, kernel, stride, dilation)  # (O, N, *full)
    y = _crop(y, padding, out)
    if b is not None:
        y = tnp.add(y, views.reshape(b, (out_channels,) + (1,) * (n + 1)))
    y = views.transpose(y, (1, 0, *range(2, n + 2)))
    if unbatched:
        y = views.reshape(y, y.shape[1:])
    shown = (input, weight) if bias is None else (input, weight, bias)
    return _named(y, "ConvolutionBackward0", shown)


def _crop(y, starts, sizes):
    """The window `starts : starts + sizes` of the trailing axes of `y`."""
    if not any(starts) and tuple(sizes) == tuple(y.shape[2:]):
        return y
    return tnp.getitem(
        y, (slice(None), slice(None), *(slice(s, s + n) for s, n in zip(starts, sizes)))
    )


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """The adjoint of conv1d in its input: (N, C, L) by weight (C, O/g, k) to (N, O, L_out),
    L_out = (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1."""
    return _transposed(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        1,
        "conv_transpose1d",
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """The adjoint of conv2d in its input: (N, C, H, W) by weight (C, O/g, kh, kw)."""
    return _transposed(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        2,
        "conv_transpose2d",
    )


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """The adjoint of conv3d in its input: (N, C, D, H, W) by weight (C, O/g, kd, kh, kw)."""
    return _transposed(
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
        3,
        "conv_transpose3d",
    )


# -- unfold / fold ---------------------------------------------------------------------------


def _pair(value, name: str) -> tuple[int, int]:
    """unfold's and fold's two-element arguments: an int, or exactly two (PyTorch's check)."""
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(value)}")
    return value


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: the sliding blocks of (N, C, H, W) (or (C, H, W)) as (N, C * kh * kw, L),
    each column one block, its rows in (channel, kernel row, kernel column) order."""
    x = _as_tensor(input)
    if x.ndim not in (3, 4) or 0 in x.shape[-3:]:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(x.shape)}"
        )
    kernel, dilation = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    padding, stride = _pair(padding, "padding"), _pair(stride, "stride")
    unbatched = x.ndim == 3
    if unbatched:
        x = views.reshape(x, (1, *x.shape))
    n, c, *spatial = x.shape
    out = tuple(
        output_size(s, k, 2 * p, st, d)
        for s, k, p, st, d in zip(spatial, kernel, padding, stride, dilation)
    )
    if any(o <= 0 for o in out):
        raise RuntimeError(
            f"Given input with spatial size ({shape_text(spatial, ', ')}), kernel_size="
            f"({shape_text(kernel, ', ')}), dilation=({shape_text(dilation, ', ')}), padding="
            f"({shape_text(padding, ', ')}), calculated shape of the array of sliding blocks as "
            f"({shape_text(out, ', ')}), but its components must be at least one."
        )
    padded = pad_zeros(x, padding, padding)
    planes = views.reshape(padded, (n * c, 1, *padded.shape[2:]))
    cols = im2col(planes, kernel, stride, dilation, out)  # (N * C, K, 1, *out)
    cols = views.reshape(cols, (n, c * prod(kernel), prod(out)))
    if unbatched:
        cols = views.reshape(cols, cols.shape[1:])
    return _named(cols, "Im2ColBackward0", (input,))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: sums the columns of (N, C * kh * kw, L) (or (C * kh * kw, L)) back into
    (N, C, *output_size); overlapping blocks add."""
    x = _as_tensor(input)
    if x.ndim not in (2, 3):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(x.shape)}"
        )
    size, kernel = _pair(output_size, "output_size"), _pair(kernel_size, "kernel_size")
    dilation, padding = _pair(dilation, "dilation"), _pair(padding, "padding")
    stride = _pair(stride, "stride")
    unbatched = x.ndim == 2
    if unbatched:
        x = views.reshape(x, (1, *x.shape))
    n, rows, length = x.shape
    k = prod(kernel)
    if rows % k:
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={rows} and kernel_size=({shape_text(kernel)})."
        )
    blocks = tuple(
        output_size_(s, kk, p, st, d)
        for s, kk, p, st, d in zip(size, kernel, padding, stride, dilation)
    )
    if prod(blocks) != length:
        raise RuntimeError(
            f"Given output_size=({shape_text(size)}), kernel_size=({shape_text(kernel)}), "
            f"dilation=({shape_text(dilation)}), padding=({shape_text(padding)}), stride="
            f"({shape_text(stride)}), expected size of input's dimension 2 to match the "
            f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {prod(blocks)}, "
            f"but got input.size(2)={length}."
        )
    c = rows // k
    cols = views.reshape(x, (n * c, k, 1, *blocks))
    padded = tuple(s + 2 * p for s, p in zip(size, padding))
    y = col2im(cols, padded, kernel, stride, dilation)  # (N * C, 1, *padded)
    y = views.reshape(y, (n, c, *padded))
    y = _crop(y, padding, size)
    if unbatched:
        y = views.reshape(y, y.shape[1:])
    return _named(y, "Col2ImBackward0", (input,))


def output_size_(size, kernel, pad, stride, dilation) -> int:
    return output_size(size, kernel, 2 * pad, stride, dilation)
