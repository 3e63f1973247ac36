"""`affine_grid`: the sampling grid of a batch of affine maps, for `grid_sample`.

As ATen's `affine_grid_generator`: a constant base grid of normalised output coordinates
(x, y[, z], 1), built with PyTorch's `linspace` rounding, times the transposed matrices in one
batched matmul, so `theta` gets the matmul's gradient. `size` is (N, C, H, W) for 2-D maps
(theta N x 2 x 3) or (N, C, D, H, W) for 3-D ones (theta N x 3 x 4).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.ops.conventions import _as_tensor, _named
from tracegrad.torch.tensor import Tensor

__all__ = ["affine_grid"]


def _fma(a, k: int, c: float, dtype: np.dtype):
    """`a * k + c` rounded once, as the fused multiply-add that ATen's compiled linspace
    loop uses: exactly in float64 for float32 (24-bit operands), by fractions for float64."""
    if dtype == np.float64:
        return float(Fraction(float(a)) * k + Fraction(c))
    return np.float64(a) * k + np.float64(c)


def _linspace_from_neg_one(steps: int, align_corners: bool, dtype: np.dtype) -> np.ndarray:
    """ATen's `linspace(-1, 1, steps)` (the first half stepped up from -1, the second down
    from 1, each with a fused multiply-add), scaled by (steps - 1) / steps unless
    `align_corners`; a single 0 for one step."""
    if steps <= 1:
        return np.zeros(1, dtype)
    step = (dtype.type(1) - dtype.type(-1)) / dtype.type(steps - 1)
    half = steps // 2
    values = [
        _fma(step, i, -1.0, dtype) if i < half else _fma(-step, steps - i - 1, 1.0, dtype)
        for i in range(steps)
    ]
    values = np.array(values).astype(dtype)
    if not align_corners:
        values = values * dtype.type(steps - 1) / dtype.type(steps)
    return values.astype(dtype)


def _base_grid(spatial, align_corners: bool, dtype) -> np.ndarray:
    """(*spatial, n + 1): the coordinates of each output point, x (the last axis) first,
    then a 1."""
    n = len(spatial)
    grid = np.ones((*spatial, n + 1), dtype)
    for k in range(n):  # coordinate k runs along spatial axis n - 1 - k
        axis = n - 1 - k
        shape = [1] * n
        shape[axis] = spatial[axis]
        line = _linspace_from_neg_one(spatial[axis], align_corners, dtype)
        grid[..., k] = np.broadcast_to(line.reshape(shape), spatial)
    return grid


def _check(theta: Tensor, size) -> tuple[int, ...]:
    """PyTorch's checks of `affine_grid`; the spatial sizes."""
    if theta.dtype.kind not in "fc":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    shown = tuple(theta.shape)
    if len(size) == 4:
        if theta.ndim != 3 or shown[-2:] != (2, 3):
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                f"{shown}."
            )
        return tuple(size[-2:])
    if len(size) == 5:
        if theta.ndim != 3 or shown[-2:] != (3, 4):
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                f"{shown}."
            )
        return tuple(size[-3:])
    raise NotImplementedError(
        "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
        f"respectively. Got size {size}."
    )


def affine_grid(theta, size, align_corners=None):
    """The (N, H, W, 2) (or (N, D, H, W, 3)) grid of the points that the affine maps `theta`
    send the output's normalised coordinates to; `align_corners` as in `grid_sample`."""
    t = _as_tensor(theta)
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. See "
            "the documentation of grid_sample for details.",
            UserWarning,
            stacklevel=2,
        )
        align_corners = False
    spatial = _check(t, size)
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            UserWarning,
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, points, dims = int(size[0]), math.prod(spatial), len(spatial)
    if t.shape[0] != n:  # ATen's bmm of the (N, points, dims + 1) base grid with theta^T
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {dims + 1}] "
            f"but got: [{t.shape[0]}, {dims + 1}]."
        )
    base = _base_grid(tuple(int(s) for s in spatial), align_corners, t.dtype)
    # one base grid for the whole batch: the matmul broadcasts it (and sums theta's gradient)
    grid = ops.matmul(Tensor(base.reshape(points, dims + 1)), ops.transpose(t, 1, 2))
    grid = ops.reshape(grid, (n, *spatial, dims))
    return _named(grid, "AffineGridGeneratorBackward0", (theta,))
