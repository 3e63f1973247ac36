"""Pooling: `max_pool1d/2d/3d`, `avg_pool1d/2d/3d`, adaptive average and max pooling.

Max pooling finds each window's winner in NumPy (PyTorch's rule: the first maximum in scan
order, a NaN wins, padding never does), then gathers the winners from the flattened input in
one recorded op, so the gradient goes to exactly those elements, as PyTorch's; the indices it
returns are the same positions. Average pooling sums the windows (`sliding.im2col`) and
divides by PyTorch's per-window divisor; adaptive average pooling multiplies each spatial axis
by an averaging matrix (one BLAS matmul per axis). Messages are PyTorch's.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.primitives import products, views
from tracegrad.torch.nn.sliding import (
    im2col,
    ntuple,
    pad_zeros,
    pool_output_size,
    prod,
    shape_text,
    taps,
)
from tracegrad.torch.ops.conventions import _as_tensor, _named
from tracegrad.torch.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
]


def _pool_arg(value, n: int, what: str, name: str, allow_empty: bool = False):
    if allow_empty and (value is None or (not isinstance(value, numbers.Integral) and not value)):
        return None
    out = ntuple(value, n)
    if len(out) == 1:
        out = out * n
    if len(out) != n:
        count = {1: "one int", 2: "two ints", 3: "three ints"}[n]
        raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of {count}")
    return out


def _batched(x: Tensor, n: int, message: str):
    """(input with a batch axis, whether it was added); PyTorch's message for other ranks."""
    if x.ndim not in (n + 1, n + 2) or (x.ndim == n + 2 and 0 in x.shape[1:]):
        raise RuntimeError(message)
    if x.ndim == n + 1:
        return views.reshape(x, (1, *x.shape)), True
    return x, False


def _rank_message(name: str, n: int, x: Tensor) -> str:
    if n == 1:
        return (
            f"{name}: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
            f"input, but got:{list(x.shape)}"
        )
    return f"non-empty {n + 1}D or {n + 2}D (batch mode) tensor expected for input"


def _check_windows(kernel, stride, padding, dilation, spatial, out, channels) -> None:
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    for k, p, d in zip(kernel, padding, dilation):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    if any(o < 1 for o in out):
        raise RuntimeError(
            f"Given input size: ({shape_text((channels, *spatial), 'x')}). Calculated output "
            f"size: ({shape_text((channels, *out), 'x')}). Output size is too small"
        )


def _geometry(x, n, kernel_size, stride, padding, dilation, ceil_mode, name):
    kernel = _pool_arg(kernel_size, n, "kernel_size", name)
    stride = _pool_arg(stride, n, "stride", name, allow_empty=True) or kernel
    padding = _pool_arg(padding, n, "padding", name)
    dilation = _pool_arg(dilation, n, "dilation", name)
    spatial = x.shape[2:]
    out = tuple(
        pool_output_size(s, k, p, st, d, ceil_mode) if st else 1
        for s, k, p, st, d in zip(spatial, kernel, padding, stride, dilation)
    )
    _check_windows(kernel, stride, padding, dilation, spatial, out, x.shape[1])
    if n == 2 and any(k // 2 < p for k, p in zip(kernel, padding)):
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got "
            f"padW = {padding[1]}, padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}"
        )
    # room for the last window when ceil_mode lets it hang over the end
    high = tuple(
        max(p, (o - 1) * st + d * (k - 1) + 1 - s - p)
        for s, k, p, st, d, o in zip(spatial, kernel, padding, stride, dilation, out)
    )
    return kernel, stride, padding, dilation, out, high


# -- max pooling ------------------------------------------------------------------------------


def _winners(a: np.ndarray, kernel, stride, padding, dilation, out, high) -> np.ndarray:
    """The tap (C-order kernel position) of each window's winner, PyTorch's way: the first
    strict maximum in scan order, a NaN always wins, padding never does (a window of -inf
    keeps its first real tap). NaN is looked for only when a window's maximum is NaN."""
    lowest = -np.inf if a.dtype.kind == "f" else np.iinfo(a.dtype).min
    widths = ((0, 0), (0, 0), *zip(padding, high))
    padded = np.pad(a, widths, constant_values=lowest) if any(padding) or any(high) else a
    kernel_taps = taps(kernel)
    # per axis, the first tap of each window inside the real input: the default winner
    first = []
    for k, p, st, d, o in zip(kernel, padding, stride, dilation, out):
        starts = np.arange(o) * st - p
        first.append(np.minimum(np.maximum(-(starts // d), 0), k - 1))  # ceil(-start / d)
    dtype = np.int32 if len(kernel_taps) > 127 else np.int8
    default = np.ravel_multi_index(np.ix_(*first), kernel).astype(dtype)
    windows = [
        padded[
            (slice(None), slice(None))
            + tuple(
                slice(t * d, t * d + st * (o - 1) + 1, st)
                for t, d, st, o in zip(tap, dilation, stride, out)
            )
        ]
        for tap in kernel_taps
    ]
    shape = a.shape[:2] + tuple(out)
    inside = not default.any()  # every window's first tap is real: start from it
    for has_nan in (False, True):
        if inside:
            best, arg, first = windows[0], np.zeros(shape, dtype), 1
        else:
            best, first = np.full(shape, lowest, dtype=a.dtype), 0
            arg = np.broadcast_to(default, shape)
        for index, window in enumerate(windows[first:], first):
            wins = window > best
            if has_nan:
                wins |= np.isnan(window)
                best = np.where(wins, window, best)
            else:
                best = np.maximum(best, window)  # a NaN propagates: seen after the loop
            arg = arg + wins * (dtype(index) - arg)
        if has_nan or a.dtype.kind != "f" or not np.isnan(best).any():
            return arg
    raise AssertionError("unreachable")


def _tap_offsets(kernel, dilation, spatial) -> np.ndarray:
    """The flat in-plane offset of each tap from its window's origin."""
    plane_strides = [math.prod(spatial[i + 1 :]) for i in range(len(spatial))]
    return np.array(
        [sum(t * d * ps for t, d, ps in zip(tap, dilation, plane_strides)) for tap in taps(kernel)],
        np.int64,
    )


def _origins(spatial, stride, padding, out) -> np.ndarray:
    """The flat in-plane position of each window's origin (its top-left tap, maybe in the
    padding), shaped like the output's spatial axes."""
    origin = np.zeros((), np.int64)
    for s, st, p, o in zip(spatial, stride, padding, out):
        origin = np.add.outer(origin * s, np.arange(o, dtype=np.int64) * st - p)
    return origin


def _max_pool(input, n, kernel_size, stride, padding, dilation, ceil_mode, return_indices, name):
    x = _as_tensor(input)
    x, unbatched = _batched(x, n, _rank_message(name, n, x))
    kernel, stride, padding, dilation, out, high = _geometry(
        x, n, kernel_size, stride, padding, dilation, ceil_mode, name
    )
    arg = _winners(x._cell.value, kernel, stride, padding, dilation, out, high)
    spatial = x.shape[2:]
    size = prod(spatial)
    # in-plane position of each winner: its window's origin plus its tap's offset
    plane = _origins(spatial, stride, padding, out) + _tap_offsets(kernel, dilation, spatial)[arg]
    batch, channels = x.shape[:2]
    source, order = x, np.arange(batch * channels, dtype=np.int64).reshape(batch, channels)
    if not x._cell.value.flags.c_contiguous and np.swapaxes(x._cell.value, 0, 1).flags.c_contiguous:
        # a channels-first array (a convolution's output): gather from its own memory order
        source = views.transpose(x, (1, 0, *range(2, n + 2)))
        order = order.reshape(channels, batch).T
    flat = plane + (order * size).reshape(batch, channels, *(1,) * n)
    y = views.reshape(tnp.take(source, flat.reshape(-1)), arg.shape)
    if unbatched:
        y = views.reshape(y, y.shape[1:])
        plane = plane[0]
    y = _named(y, f"MaxPool{n}DWithIndicesBackward0", (input,))
    if return_indices:
        return y, Tensor(plane)
    return y


def max_pool1d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode=False,
    return_indices=False,
):
    """Max over windows of (N, C, L) or (C, L); with `return_indices`, also each winner's
    position in its row (as `MaxUnpool1d` reads it)."""
    return _max_pool(
        input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool1d"
    )


def max_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode=False,
    return_indices=False,
):
    """Max over windows of (N, C, H, W) or (C, H, W) (`stride` defaults to `kernel_size`;
    padding is -inf); with `return_indices`, each winner's flat position `h * W + w`."""
    return _max_pool(
        input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool2d"
    )


def max_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode=False,
    return_indices=False,
):
    """Max over windows of (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool(
        input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool3d"
    )


# -- average pooling --------------------------------------------------------------------------


def _divisors(spatial, kernel, stride, padding, out, count_include_pad: bool) -> np.ndarray:
    """PyTorch's divisor per window: the window clipped to the padded input (with
    `count_include_pad`) or to the input itself; a product of one factor per axis."""
    total = np.ones((), np.int64)
    for s, k, st, p, o in zip(spatial, kernel, stride, padding, out):
        start = np.arange(o) * st - p
        end = np.minimum(start + k, s + p)
        if not count_include_pad:
            end = np.minimum(end, s)
            start = np.maximum(start, 0)
        total = np.multiply.outer(total, end - start)
    return total


def _avg_pool(input, n, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor, name):
    x = _as_tensor(input)
    if x.ndim not in (n + 1, n + 2):
        if n == 1:
            raise RuntimeError(
                f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument "
                f"#1 'self' (while checking arguments for {name})"
            )
        raise RuntimeError(_rank_message(name, n, x))
    unbatched = x.ndim == n + 1
    if unbatched:
        x = views.reshape(x, (1, *x.shape))
    kernel, stride, padding, dilation, out, high = _geometry(
        x, n, kernel_size, stride, padding, 1, ceil_mode, name
    )
    if divisor is not None and divisor == 0:
        raise RuntimeError("divisor must be not zero")
    padded = pad_zeros(x, padding, high)
    planes = views.reshape(padded, (x.shape[0] * x.shape[1], 1, *padded.shape[2:]))
    cols = im2col(planes, kernel, stride, dilation, out)  # (N * C, K, 1, *out)
    total = views.reshape(tnp.sum(cols, axis=1), (*x.shape[:2], *out))
    if divisor is not None:
        y = tnp.divide(total, np.asarray(divisor, x.dtype))
    else:
        divisors = _divisors(x.shape[2:], kernel, stride, padding, out, count_include_pad)
        y = tnp.divide(total, divisors.astype(x.dtype))
    if unbatched:
        y = views.reshape(y, y.shape[1:])
    return _named(y, f"AvgPool{n}DBackward0", (input,))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of (N, C, L) or (C, L); zero padding counts unless
    `count_include_pad=False`."""
    return _avg_pool(
        input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None, "avg_pool1d"
    )


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over windows of (N, C, H, W) or (C, H, W); `divisor_override` replaces the
    window size as divisor."""
    return _avg_pool(
        input,
        2,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        "avg_pool2d",
    )


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Mean over windows of (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool(
        input,
        3,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
        "avg_pool3d",
    )


# -- adaptive pooling -------------------------------------------------------------------------


def _adaptive_sizes(x: Tensor, n: int, output_size, name: str) -> tuple[int, ...]:
    """The output's spatial sizes (None keeps the input's), refused as PyTorch refuses them:
    one per spatial axis, none negative (its 1-d forms run as 2-d ones, and say so)."""
    if isinstance(output_size, numbers.Integral):
        sizes = (int(output_size),) * n
    else:
        sizes = tuple(output_size)
        if n == 1 and len(sizes) != 1:
            raise RuntimeError(
                f"{name}() argument 'output_size' should contain one int (got {len(sizes)})"
            )
        if len(sizes) != n:
            if "max" in name:
                raise RuntimeError(f"{name}(): internal error: output_size.size() must be {n}")
            raise RuntimeError(f"{name}: output_size must be {n}")
    out = tuple(s if o is None else int(o) for o, s in zip(sizes, x.shape[-n:]))
    if min(out, default=0) < 0:
        shown = (1, *out) if n == 1 else out
        if "max" in name:
            shape = [*x.shape[:-n], *shown]
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {min(out)}: {shape}"
            )
        raise RuntimeError(
            f"{name.replace('1d', '2d')}: elements of output_size must be greater than or equal "
            f"to 0 but received {{{', '.join(map(str, shown))}}}"
        )
    return out


def _bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = np.arange(out)
    return (i * size) // out, -(-((i + 1) * size) // out)


def _averaging(size: int, out: int, dtype) -> np.ndarray:
    """The (out, size) matrix whose row i averages window i."""
    start, end = _bins(size, out)
    cols = np.arange(size)
    inside = (cols >= start[:, None]) & (cols < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _adaptive_rank(x: Tensor, n: int, name: str) -> None:
    if x.ndim not in (n + 1, n + 2):
        if n == 1:
            raise RuntimeError(
                f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument "
                f"#1 'self' (while checking arguments for {name})"
            )
        sep = ": " if "max" in name else " "
        raise RuntimeError(
            f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got{sep}{list(x.shape)}"
        )


def _adaptive_avg(input, n: int, output_size, name: str):
    x = _as_tensor(input)
    _adaptive_rank(x, n, name)
    sizes = _adaptive_sizes(x, n, output_size, name)
    y = x
    for axis in range(n):  # one matmul per spatial axis: x @ A.T along the last axis
        dim = x.ndim - n + axis
        a = _averaging(x.shape[dim], sizes[axis], x.dtype)
        if dim == x.ndim - 1:
            y = products.matmul(y, a.T)
        else:
            moved = views.transpose(y, _swap(y.ndim, dim))
            y = views.transpose(products.matmul(moved, a.T), _swap(y.ndim, dim))
    return _named(y, f"AdaptiveAvgPool{n}DBackward0", (input,))


def _swap(ndim: int, dim: int) -> tuple[int, ...]:
    order = list(range(ndim))
    order[dim], order[-1] = order[-1], order[dim]
    return tuple(order)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg(input, 1, output_size, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Averages over PyTorch's adaptive windows of (N, C, H, W) or (C, H, W) to
    `output_size` (an int, or a pair whose None entries keep the input's size)."""
    return _adaptive_avg(input, 2, output_size, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(input, 3, output_size, "adaptive_avg_pool3d")


def _adaptive_max(input, n: int, output_size, return_indices: bool, name: str):
    x = _as_tensor(input)
    _adaptive_rank(x, n, name)
    sizes = _adaptive_sizes(x, n, output_size, name)
    unbatched = x.ndim == n + 1
    if unbatched:
        x = views.reshape(x, (1, *x.shape))
    a = x._cell.value
    spatial = a.shape[2:]
    # per axis: the taps of each window (padded to the widest window) and which are real
    index, valid = [], []
    for s, o in zip(spatial, sizes):
        start, end = _bins(s, o)
        width = int((end - start).max())
        t = start[:, None] + np.arange(width)
        valid.append(t < end[:, None])
        index.append(np.minimum(t, s - 1))
    # windows as (N, C, o1, ..., on, w1, ..., wn)
    grids = []
    masks = np.ones((), bool)
    for axis in range(n):
        shape = [1] * (2 * n)
        shape[axis], shape[n + axis] = index[axis].shape
        grids.append(index[axis].reshape(shape))
        masks = masks & valid[axis].reshape(shape)
    windows = a[(slice(None), slice(None), *grids)]
    windows = np.where(masks, windows, -np.inf).reshape(*a.shape[:2], *sizes, -1)
    arg = windows.argmax(-1)
    if a.dtype.kind == "f":  # PyTorch: a NaN wins, the last one in scan order
        nan = np.isnan(windows)
        last = nan.shape[-1] - 1 - nan[..., ::-1].argmax(-1)
        arg = np.where(nan.any(-1), last, arg)
    widths = tuple(v.shape[1] for v in valid)
    taps_ = np.unravel_index(arg, widths)
    plane = np.zeros(arg.shape, np.int64)
    for axis, (t, s, o) in enumerate(zip(taps_, spatial, sizes)):
        shape = [1] * (n + 2)
        shape[axis + 2] = o
        start = _bins(s, o)[0].reshape(shape)
        plane = plane * s + start + t
    size = math.prod(spatial)
    planes = np.arange(a.shape[0] * a.shape[1], dtype=np.int64).reshape(*a.shape[:2], *(1,) * n)
    y = views.reshape(tnp.take(x, (planes * size + plane).reshape(-1)), arg.shape)
    if unbatched:
        y = views.reshape(y, y.shape[1:])
        plane = plane[0]
    y = _named(y, f"AdaptiveMaxPool{n}DBackward0", (input,))
    return (y, Tensor(plane)) if return_indices else y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(input, 1, output_size, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over PyTorch's adaptive windows; with `return_indices`, each winner's flat
    position `h * W + w` in its plane."""
    return _adaptive_max(input, 2, output_size, return_indices, "adaptive_max_pool2d")
