"""Sliding windows for convolution and pooling: im2col as strided slices, col2im as their sum.

`im2col` reads every kernel tap as one strided `slice` of the input (a view) and joins the taps
with one `concatenate`, so the window matrix costs one copy and its derivative is dense
(`pad_strided` per tap, added), never a scatter of repeated indices; a convolution is then one
BLAS matmul over it. `col2im` is the transpose: each tap's block goes back to its strided place
(`pad_strided`) and the taps are summed, which is what `fold` and the transposed convolution
compute. The argument helpers (`ntuple`, `output_size`) are PyTorch's conventions, shared by
the convolution and pooling functions.
"""

from __future__ import annotations

import itertools
import math
import numbers

from tracegrad import numpy as tnp
from tracegrad.primitives import shape as shape_ops
from tracegrad.primitives import slicing, views


def ntuple(value, n: int) -> tuple[int, ...]:
    """`value` as n ints: an int repeats, a sequence of length n is kept (as PyTorch's
    `_ntuple`); any other length is returned as given for the caller's message."""
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    return tuple(int(v) for v in value)


def taps(kernel: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The kernel positions in C order (the order of a flattened kernel)."""
    return list(itertools.product(*(range(k) for k in kernel)))


def pad_zeros(x, low: tuple[int, ...], high: tuple[int, ...], value: float = 0.0):
    """`x` (N, C, *spatial) with `low`/`high` constant padding on the spatial axes."""
    if not any(low) and not any(high):
        return x
    widths = ((0, 0), (0, 0), *zip(low, high))
    return shape_ops.pad(x, widths, value)


def im2col(x, kernel, stride, dilation, out):
    """The windows of `x` (A, B, *spatial, already padded) as (A, K, B, *out), K = prod(kernel)
    in C order: `cols[a, k, b, i] = x[a, b, i * stride + tap_k * dilation]`. With `x` in
    C order the result is too (concatenate keeps its operands' layout)."""
    a, b = x.shape[:2]
    expanded = views.reshape(x, (a, 1, b, *x.shape[2:]))
    parts = []
    for tap in taps(kernel):
        starts = tuple(t * d for t, d in zip(tap, dilation))
        limits = tuple(s0 + s * (o - 1) + 1 for s0, s, o in zip(starts, stride, out))
        parts.append(
            slicing.slice_static(
                expanded, (0, 0, 0, *starts), (a, 1, b, *limits), (1, 1, 1, *stride)
            )
        )
    return parts[0] if len(parts) == 1 else shape_ops.concatenate(parts, 1)


def col2im(cols, shape, kernel, stride, dilation):
    """The transpose of `im2col`: `cols` (P, K, Q, *grid) summed into (P, Q, *shape), tap k of
    window i adding into position `i * stride + tap_k * dilation`."""
    p, _, q = cols.shape[:3]
    grid = cols.shape[3:]
    total = None
    for k, tap in enumerate(taps(kernel)):
        block = slicing.slice_static(
            cols, (0, k, 0, *(0,) * len(grid)), (p, k + 1, q, *grid), (1,) * cols.ndim
        )
        starts = tuple(t * d for t, d in zip(tap, dilation))
        placed = slicing.pad_strided(
            block, (p, 1, q, *shape), (0, 0, 0, *starts), (1, 1, 1, *stride)
        )
        total = placed if total is None else tnp.add(total, placed)
    return views.reshape(total, (p, q, *shape))


def output_size(size: int, kernel: int, pad_total: int, stride: int, dilation: int) -> int:
    """Windows along one axis: floor((size + pads - dilation * (kernel - 1) - 1) / stride) + 1."""
    return (size + pad_total - dilation * (kernel - 1) - 1) // stride + 1


def pool_output_size(size, kernel, pad, stride, dilation, ceil_mode: bool) -> int:
    """PyTorch's `pooling_output_shape`: with `ceil_mode` the last window may hang over the
    end, but must start inside the input or its left padding."""
    extra = stride - 1 if ceil_mode else 0
    out = (size + 2 * pad - dilation * (kernel - 1) - 1 + extra) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def shape_text(shape, sep: str = ", ") -> str:
    return sep.join(str(d) for d in shape)


def prod(values) -> int:
    return math.prod(values)
