"""Channel-wise and self-normalising dropout (`dropout1d/2d/3d`, `alpha_dropout`,
`feature_alpha_dropout` and their layers), and `Unflatten`.

Channel-wise ("feature") dropout draws one keep-or-drop per (sample, channel) and broadcasts it
over the spatial axes, so a whole feature map is zeroed at once. The masks are ATen's
`bernoulli_(1 - p)` on the global stream (`torch.manual_seed`), so the same seed drops the
same units as PyTorch. The gradient is the mask times the scale, from the multiplication.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.nn.module import Module
from tracegrad.torch.ops import creation
from tracegrad.torch.ops.conventions import _as_tensor
from tracegrad.torch.ops.inplace import rebind
from tracegrad.torch.tensor import Tensor

__all__ = [
    "AlphaDropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "FeatureAlphaDropout",
    "Unflatten",
    "alpha_dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "feature_alpha_dropout",
    "unflatten",
]

_ALPHA = 1.7580993408473766  # SELU's alpha * scale: the value a dropped unit takes, negated


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_impl(x: Tensor, p: float, training: bool, feature: bool, alpha: bool) -> Tensor:
    """ATen's `_dropout_impl`: a mask drawn per element (or per (sample, channel) when
    `feature`), scaled by 1 / (1 - p); alpha dropout instead maps kept units to `a * x + c`
    and dropped ones to the SELU saturation value, keeping mean 0 and variance 1."""
    if p == 0 or not training or x.numel() == 0:
        return x
    if p == 1:
        return ops.mul(x, Tensor._wrap(np.zeros((), x.dtype)))
    shape = (*x.shape[:2], *(1,) * (x.ndim - 2)) if feature else x.shape
    noise = creation._bernoulli_mask(shape, 1 - p).astype(x.dtype)  # ATen: bernoulli_(1 - p)
    if not alpha:
        return ops.mul(x, Tensor._wrap(noise / np.asarray(1 - p, x.dtype)))
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
    return ops.add(ops.mul(x, Tensor._wrap(noise * a)), Tensor._wrap(b.astype(x.dtype)))


def _run(input, p, training, inplace, feature: bool, alpha: bool) -> Tensor:
    x = _as_tensor(input)
    if inplace:
        x._check_inplace()
        return rebind(x, _dropout_impl(x._snapshot(), p, training, feature, alpha))
    return _dropout_impl(x, p, training, feature, alpha)


def _feature_unbatched(input, p, training, inplace, batched: bool) -> Tensor:
    """Feature dropout, on an input without its batch axis seen as a batch of one."""
    if batched:
        return _run(input, p, training, inplace, True, False)
    x = _as_tensor(input)
    if inplace:
        x._check_inplace()
        out = _run(ops.unsqueeze(x._snapshot(), 0), p, training, False, True, False)
        return rebind(x, ops.squeeze(out, 0))
    return ops.squeeze(_run(ops.unsqueeze(x, 0), p, training, False, True, False), 0)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zeroes whole channels of `(N, C, L)` or `(C, L)` inputs with probability `p`."""
    _check_p(p)
    ndim = input.dim()
    if ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs)."
        )
    return _feature_unbatched(input, p, training, inplace, ndim == 3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zeroes whole channels of `(N, C, H, W)` inputs; a 3D input is taken as `(N, C, L)`, as
    PyTorch does (with its warning)."""
    _check_p(p)
    ndim = input.dim()
    if ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {ndim}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _run(input, p, training, inplace, True, False)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Zeroes whole channels of `(N, C, D, H, W)` or `(C, D, H, W)` inputs."""
    _check_p(p)
    ndim = input.dim()
    if ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {ndim}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _feature_unbatched(input, p, training, inplace, ndim == 5)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout for SELU networks: keeps the input's mean and variance (0 and 1)."""
    _check_p(p)
    return _run(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Alpha dropout of whole channels."""
    _check_p(p)
    return _run(input, p, training, inplace, True, True)


def unflatten(input, dim: int, sizes) -> Tensor:
    """`input` with axis `dim` split into `sizes` (one entry may be -1), PyTorch's
    `Tensor.unflatten`."""
    x = _as_tensor(input)
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    ndim = max(x.ndim, 1)
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but "
            f"got {dim})"
        )
    dim %= ndim
    size = x.shape[dim]
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("unflatten got an unexpected error:")
    known = math.prod(s for s in sizes if s != -1)
    if unknown and known and size % known == 0:
        resolved = [size // known if s == -1 else s for s in sizes]
    else:
        resolved = sizes
    if math.prod(resolved) != size:
        raise RuntimeError(
            f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
            f"({size}) in the input tensor"
        )
    return ops.reshape(x, (*x.shape[:dim], *resolved, *x.shape[dim + 1 :]))


# -- layers ---------------------------------------------------------------------------------------


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    def forward(self, input):
        return dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    def forward(self, input):
        return dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    def forward(self, input):
        return dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    def forward(self, input):
        return alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    def forward(self, input):
        return feature_alpha_dropout(input, self.p, self.training)


class Unflatten(Module):
    """Splits axis `dim` into `unflattened_size` (the inverse of `Flatten`)."""

    def __init__(self, dim: int, unflattened_size) -> None:
        super().__init__()
        if not isinstance(unflattened_size, tuple | list):
            raise TypeError(
                "unflattened_size must be a tuple of ints, but found type "
                f"{type(unflattened_size).__name__}"
            )
        for idx, elem in enumerate(unflattened_size):
            if not isinstance(elem, int):
                raise TypeError(
                    "unflattened_size must be tuple of ints, but found element of type "
                    f"{type(elem).__name__} at pos {idx}"
                )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
