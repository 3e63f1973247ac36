"""Resampling: `pad` (constant, reflect, replicate, circular), `interpolate`, `grid_sample`,
`pixel_shuffle` and `pixel_unshuffle`.

Padding is slices, flips and one concatenate per axis, so its gradient is dense. Interpolation
is separable: along each spatial axis the input is multiplied by an (out, in) matrix whose rows
hold PyTorch's source weights (one 1 for nearest, two lambdas for linear), so `bilinear` is two
BLAS matmuls and its gradient two more; `area` is adaptive average pooling, as in PyTorch.
`grid_sample` gathers the four (or one) neighbours of each sample point; its weights are
tensor arithmetic on the grid, so the grid gets its gradient too. Messages are PyTorch's.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.primitives import products, views
from tracegrad.primitives import shape as shape_ops
from tracegrad.torch import ops
from tracegrad.torch.nn.pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from tracegrad.torch.ops.conventions import _as_tensor, _named

__all__ = ["grid_sample", "interpolate", "pad", "pixel_shuffle", "pixel_unshuffle"]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


# -- pad ------------------------------------------------------------------------------------------


def pad(input, pad, mode: str = "constant", value=None):
    """Pads the last `len(pad) // 2` axes, the last axis first: `pad = (left, right, top,
    bottom, ...)`. 'constant' fills with `value` (negative widths crop); 'reflect' mirrors
    without repeating the edge, 'replicate' repeats it, 'circular' wraps around."""
    x = _as_tensor(input)
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    n = len(pad) // 2
    if n > x.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {x.ndim}"
        )
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        return _named(_constant(x, pad, 0.0 if value is None else value), "ConstantPadNdBackward0")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if x.ndim not in (n + 1, n + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {x.ndim}D input tensor."
        )
    y = x
    for i in range(n):
        axis = x.ndim - 1 - i
        low, high = pad[2 * i], pad[2 * i + 1]
        size = x.shape[axis]
        if mode == "reflect" and (low >= size or high >= size):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input "
                f"dimension, but got: padding ({low}, {high}) at dimension {axis} of input "
                f"{list(x.shape)}"
            )
        if mode == "circular" and (low > size or high > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        y = _pad_axis(y, axis, low, high, mode)
    names = {"reflect": "ReflectionPad", "replicate": "ReplicationPad"}
    return _named(
        y,
        f"{names[mode]}{n}DBackward0" if mode in names else "torch::autograd::CopySlices",
        (input,),
    )


def _constant(x, widths, value):
    n = len(widths) // 2
    pairs = [(0, 0)] * x.ndim
    crops = [slice(None)] * x.ndim
    for i in range(n):
        axis = x.ndim - 1 - i
        low, high = widths[2 * i], widths[2 * i + 1]
        pairs[axis] = (max(low, 0), max(high, 0))
        crops[axis] = slice(max(-low, 0), x.shape[axis] - max(-high, 0))
    if any(c != slice(None) for c in crops):
        x = tnp.getitem(x, tuple(crops))
    if any(p != (0, 0) for p in pairs):
        x = shape_ops.pad(x, pairs, value)
    return x


def _take_axis(x, axis: int, start: int, stop: int):
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, stop)
    return tnp.getitem(x, tuple(index))


def _pad_axis(x, axis: int, low: int, high: int, mode: str):
    size = x.shape[axis]
    parts = []
    if low:
        if mode == "reflect":
            parts.append(tnp.flip(_take_axis(x, axis, 1, low + 1), axis))
        elif mode == "replicate":
            shape = list(x.shape)
            shape[axis] = low
            parts.append(tnp.broadcast_to(_take_axis(x, axis, 0, 1), tuple(shape)))
        else:
            parts.append(_take_axis(x, axis, size - low, size))
    parts.append(x)
    if high:
        if mode == "reflect":
            parts.append(tnp.flip(_take_axis(x, axis, size - high - 1, size - 1), axis))
        elif mode == "replicate":
            shape = list(x.shape)
            shape[axis] = high
            parts.append(tnp.broadcast_to(_take_axis(x, axis, size - 1, size), tuple(shape)))
        else:
            parts.append(_take_axis(x, axis, 0, high))
    return parts[0] if len(parts) == 1 else shape_ops.concatenate(parts, axis)


# -- interpolate ----------------------------------------------------------------------------------

_MODES = {"nearest": 0, "nearest-exact": 0, "linear": 1, "bilinear": 2, "trilinear": 3, "area": 0}
_MODES["bicubic"] = 2
_NAMES = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear"}
_NAMES.update({"bilinear": "Bilinear", "trilinear": "Trilinear", "bicubic": "Bicubic"})


def _spatial_arg(value, n: int, what: str, spatial) -> tuple:
    if isinstance(value, list | tuple):
        if len(value) != n:
            of, letter = ("of shape", "s") if what == "scale_factor" else ("of", "o")
            subject = "scale_factor" if what == "scale_factor" else "output"
            raise ValueError(
                f"Input and {subject} must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {list(spatial)} and {what} {of} "
                f"{tuple(value)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                f"and {what} in ({letter}1, {letter}2, ...,{letter}K) format."
            )
        return tuple(value)
    return (value,) * n


def _out_sizes(x, n, size, scale_factor, recompute):
    spatial = x.shape[2:]
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = tuple(int(s) for s in _spatial_arg(size, n, "output size", spatial))
        return sizes, (None,) * n
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = tuple(float(s) for s in _spatial_arg(scale_factor, n, "scale_factor", spatial))
    sizes = tuple(math.floor(float(s) * f) for s, f in zip(spatial, scales))
    return sizes, ((None,) * n if recompute else scales)


def _nearest_matrix(size: int, out: int, scale, exact: bool, dtype) -> np.ndarray:
    """PyTorch's nearest source of each output index, as a one-hot (out, size) matrix:
    floor(dst * scale) (or floor((dst + 0.5) * scale) for 'nearest-exact'), in float32."""
    f = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(size / out)
    dst = np.arange(out, dtype=np.float32)
    if exact:
        src = np.floor((dst + np.float32(0.5)) * f)
    elif out == size:
        src = dst
    elif out == 2 * size:
        src = dst // 2
    else:
        src = np.floor(dst * f)
    src = np.minimum(src.astype(np.int64), size - 1)
    m = np.zeros((out, size), dtype)
    m[np.arange(out), src] = 1
    return m


def _linear_matrix(size: int, out: int, scale, align_corners: bool, dtype) -> np.ndarray:
    """PyTorch's two-tap linear weights of each output index, as an (out, size) matrix."""
    acc = np.float32 if dtype == np.float32 else np.float64
    if align_corners:
        f = acc((size - 1) / (out - 1)) if out > 1 else acc(0)
        src = acc(f) * np.arange(out, dtype=acc)
    else:
        f = acc(1.0 / scale) if scale is not None and scale > 0 else acc(size / out)
        src = np.maximum(f * (np.arange(out, dtype=acc) + acc(0.5)) - acc(0.5), acc(0))
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < size - 1)
    l1 = src - i0.astype(acc)
    l0 = acc(1) - l1
    m = np.zeros((out, size), dtype)
    rows = np.arange(out)
    np.add.at(m, (rows, i0), l0.astype(dtype))
    np.add.at(m, (rows, i1), l1.astype(dtype))
    return m


def _cubic_matrix(size: int, out: int, scale, align_corners: bool, dtype) -> np.ndarray:
    """PyTorch's four-tap cubic convolution weights (A = -0.75) of each output index, as an
    (out, size) matrix; taps beyond the ends read the edge (ATen clamps the index)."""
    acc = np.float32 if dtype == np.float32 else np.float64
    a = acc(-0.75)
    if align_corners:
        f = acc((size - 1) / (out - 1)) if out > 1 else acc(0)
        src = f * np.arange(out, dtype=acc)
    else:  # no clamp at 0 for the cubic mode
        f = acc(1.0 / scale) if scale is not None and scale > 0 else acc(size / out)
        src = f * (np.arange(out, dtype=acc) + acc(0.5)) - acc(0.5)
    i0 = np.floor(src)
    t = src - i0

    def near(x):  # |x| <= 1
        return ((a + acc(2)) * x - (a + acc(3))) * x * x + acc(1)

    def far(x):  # 1 < |x| < 2
        return ((a * x - acc(5) * a) * x + acc(8) * a) * x - acc(4) * a

    weights = (far(t + acc(1)), near(t), near(acc(1) - t), far(acc(2) - t))
    m = np.zeros((out, size), dtype)
    rows = np.arange(out)
    for k, w in enumerate(weights):
        np.add.at(m, (rows, np.clip(i0.astype(np.int64) - 1 + k, 0, size - 1)), w.astype(dtype))
    return m


def _along(y, dim: int, matrix: np.ndarray):
    """`matrix @ y` along axis `dim` of `y` (one BLAS matmul; a transpose for inner axes)."""
    if dim == y.ndim - 1:
        return products.matmul(y, matrix.T)
    order = list(range(y.ndim))
    order[dim], order[-1] = order[-1], order[dim]
    moved = views.transpose(y, tuple(order))
    return views.transpose(products.matmul(moved, matrix.T), tuple(order))


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias: bool = False,
):
    """Resizes the spatial axes of (N, C, *spatial) to `size` (or `scale_factor` times
    them, floored): 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' and 'bicubic'
    (4-D), 'trilinear' (5-D) and 'area' (adaptive average pooling), with PyTorch's source
    coordinates (`align_corners` for the interpolating modes)."""
    x = _as_tensor(input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by tracegrad")
    n = x.ndim - 2
    if mode not in _MODES or x.ndim not in (3, 4, 5):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
            "modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})"
        )
    need = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}.get(mode)
    if need is not None and x.ndim != need:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {need}D input")
    sizes, scales = _out_sizes(x, n, size, scale_factor, recompute_scale_factor)
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1]
        return pool(x, sizes)
    y = x
    for axis in range(n):
        dim, s, o = axis + 2, x.shape[axis + 2], sizes[axis]
        if mode.startswith("nearest"):
            m = _nearest_matrix(s, o, scales[axis], mode == "nearest-exact", x.dtype)
        elif mode == "bicubic":
            m = _cubic_matrix(s, o, scales[axis], align_corners, x.dtype)
        else:
            m = _linear_matrix(s, o, scales[axis], align_corners, x.dtype)
        y = _along(y, dim, m)
    return _named(y, f"Upsample{_NAMES[mode]}{n}DBackward0", (input,))


# -- grid_sample ----------------------------------------------------------------------------------


def _unnormalize(coord, size: int, align_corners: bool):
    if align_corners:
        return ops.mul(ops.add(coord, 1.0), (size - 1) / 2)
    return ops.div(ops.sub(ops.mul(ops.add(coord, 1.0), float(size)), 1.0), 2.0)


def _clip(coord, size: int):
    """ATen's `clip_coordinates`: into [0, size - 1], with gradient 0 at and beyond the ends."""
    c = coord.detach().numpy()
    inside = ops.as_tensor((c > 0) & (c < size - 1))
    clipped = ops.as_tensor(np.clip(c, 0, size - 1).astype(c.dtype))
    return ops.where(inside, coord, clipped)


def _reflect(coord, twice_low: int, twice_high: int):
    """ATen's `reflect_coordinates`: `coord` folded into [low, high] by reflections at the
    ends, the gradient's sign flipping with each reflection (as its `_set_grad` form)."""
    if twice_low == twice_high:
        return ops.mul(coord, 0.0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    shifted = ops.sub(coord, low)
    c = shifted.detach().numpy()
    sign = np.where(c < 0, -1, 1).astype(c.dtype)
    distance = ops.mul(shifted, ops.as_tensor(sign))  # |coord - low|, gradient +1 at 0
    d = distance.detach().numpy()
    flips = np.floor(d / c.dtype.type(span))
    extra = ops.sub(distance, ops.as_tensor((d - np.fmod(d, c.dtype.type(span))).astype(c.dtype)))
    even = ops.as_tensor(flips % 2 == 0)
    return ops.where(even, ops.add(extra, low), ops.add(ops.rsub(extra, span), low))


def _padded_coordinates(coord, size: int, padding_mode: str, align_corners: bool):
    """ATen's `compute_coordinates`: 'border' clips, 'reflection' reflects, then clips."""
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return _clip(coord, size)
    return coord


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples (N, C, H, W) at the points of `grid` (N, Ho, Wo, 2), x then y in [-1, 1]:
    'bilinear' or 'nearest', 'zeros', 'border' or 'reflection' padding (ATen's coordinate
    arithmetic). Gradients reach the input and, for 'bilinear', the grid."""
    x, g = _as_tensor(input), _as_tensor(grid)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported by tracegrad")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(
            "Default grid_sample and affine_grid behavior has changed to align_corners=False "
            "since 1.3.0. Please specify align_corners=True if the old behavior is desired. See "
            "the documentation of grid_sample for details.",
            UserWarning,
            stacklevel=2,
        )
        align_corners = False
    if g.ndim != 4 or g.shape[-1] != 2:
        raise RuntimeError(
            "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with "
            f"sizes {list(g.shape)}"
        )
    if x.ndim != 4:
        raise NotImplementedError("grid_sample: only 4-D input is supported by tracegrad")
    n, c, h, w = x.shape
    _, ho, wo, _ = g.shape
    ix = _unnormalize(ops.select(g, 3, 0), w, align_corners)
    iy = _unnormalize(ops.select(g, 3, 1), h, align_corners)
    ix = _padded_coordinates(ix, w, padding_mode, align_corners)
    iy = _padded_coordinates(iy, h, padding_mode, align_corners)
    flat = views.reshape(x, (n, c, h * w))

    def corner(cx, cy):
        """The input at integer points (cx, cy) (NumPy), zero outside: (N, C, Ho, Wo)."""
        inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
        index = np.where(inside, np.clip(cy, 0, h - 1) * w + np.clip(cx, 0, w - 1), 0)
        index = np.broadcast_to(index.reshape(n, 1, ho * wo), (n, c, ho * wo))
        values = ops.gather(flat, 2, ops.as_tensor(np.ascontiguousarray(index)))
        values = views.reshape(values, (n, c, ho, wo))
        return ops.mul(values, ops.as_tensor(inside[:, None].astype(x.dtype)))

    if mode == "nearest":
        cx = np.rint(ix.detach().numpy()).astype(np.int64)
        cy = np.rint(iy.detach().numpy()).astype(np.int64)
        # the grid gets PyTorch's zero gradient: the nearest point does not move with it
        still = ops.mul(ops.unsqueeze(ops.add(ix, iy), 1), 0.0)
        return _named(ops.add(corner(cx, cy), still), "GridSampler2DBackward0", (input, grid))
    x0 = np.floor(ix.detach().numpy()).astype(np.int64)
    y0 = np.floor(iy.detach().numpy()).astype(np.int64)
    wx1 = ops.unsqueeze(ops.sub(ix, ops.as_tensor(x0.astype(x.dtype))), 1)
    wy1 = ops.unsqueeze(ops.sub(iy, ops.as_tensor(y0.astype(x.dtype))), 1)
    wx0, wy0 = ops.rsub(wx1, 1.0), ops.rsub(wy1, 1.0)
    top = ops.add(ops.mul(corner(x0, y0), wx0), ops.mul(corner(x0 + 1, y0), wx1))
    bottom = ops.add(ops.mul(corner(x0, y0 + 1), wx0), ops.mul(corner(x0 + 1, y0 + 1), wx1))
    out = ops.add(ops.mul(top, wy0), ops.mul(bottom, wy1))
    return _named(out, "GridSampler2DBackward0", (input, grid))


# -- pixel shuffle --------------------------------------------------------------------------------


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): channel blocks become r x r pixels."""
    x = _as_tensor(input)
    r = int(upscale_factor)
    if x.ndim < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{x.ndim} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
            f"square of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    k = len(lead)
    y = views.reshape(x, (*lead, c // (r * r), r, r, h, w))
    y = views.transpose(y, (*range(k), k, k + 3, k + 1, k + 4, k + 2))
    y = views.reshape(y, (*lead, c // (r * r), h * r, w * r))
    return _named(y, "PixelShuffleBackward0", (input,))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W): the inverse of `pixel_shuffle`."""
    x = _as_tensor(input)
    r = int(downscale_factor)
    if x.ndim < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{x.ndim} dimension(s)"
        )
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = x.shape
    for what, size, axis in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                f"input.size({axis})={size} is not divisible by {r}"
            )
    k = len(lead)
    y = views.reshape(x, (*lead, c, h // r, r, w // r, r))
    y = views.transpose(y, (*range(k), k, k + 2, k + 4, k + 1, k + 3))
    y = views.reshape(y, (*lead, c * r * r, h // r, w // r))
    return _named(y, "PixelUnshuffleBackward0", (input,))
