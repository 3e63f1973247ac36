"""PyTorch's padding Modules: `ConstantPad`, `ZeroPad`, `ReflectionPad`, `ReplicationPad` and
`CircularPad`, each in 1, 2 and 3 dimensions.

The constant modes go straight to `resampling.pad`. The other modes go through `pad` here,
which adds what ATen does and `resampling.pad` does not (yet): a negative width crops (reflect
and replicate pad the input and then crop, circular crops and then wraps the rest, as ATen's
kernels do), and ATen's per-kernel checks and messages (empty dimensions, the reflection
limits with their argument numbers, outputs that come out too small). The padding itself is
still `resampling`'s slices, flips and concatenations, so the gradient is dense.
"""

from __future__ import annotations

import collections.abc

from tracegrad.torch.nn import resampling
from tracegrad.torch.nn.module import Module
from tracegrad.torch.ops.conventions import _as_tensor, _named

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]

_MODES = ("constant", "reflect", "replicate", "circular")
_NAMES = {"reflect": "ReflectionPad{}DBackward0", "replicate": "ReplicationPad{}DBackward0"}
_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation."
)


def _ntuple(value, n: int) -> tuple:
    """PyTorch's `_ntuple(n)`: an iterable as a tuple (any length), anything else n times."""
    if isinstance(value, collections.abc.Iterable):
        return tuple(value)
    return (value,) * n


# -- pad ------------------------------------------------------------------------------------------


def pad(input, pad, mode: str = "constant", value=None):
    """`F.pad` with ATen's semantics in every mode, negative widths included (see the module
    docstring); the constant mode is `resampling.pad`'s."""
    x = _as_tensor(input)
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    widths = tuple(int(p) for p in pad)
    if len(widths) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(widths) > 2 * x.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(widths)} and input of dimension {x.ndim}"
        )
    n = len(widths) // 2
    # (axis, low, high) from the first padded axis to the last
    axes = [(x.ndim - 1 - i, widths[2 * i], widths[2 * i + 1]) for i in reversed(range(n))]
    if mode == "constant":
        _check_crops(x, axes)
        return resampling.pad(x, widths, mode, value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if n not in (1, 2, 3) or x.ndim not in (n + 1, n + 2):
        raise NotImplementedError(
            f"Padding size {len(widths)} is not supported for {x.ndim}D input tensor."
        )
    if mode == "circular":
        y = _circular(x, axes)
        return _named(y, "torch::autograd::CopySlices", (input,))
    _check_reflect_replicate(x, axes, mode)
    y = x
    for axis, low, high in reversed(axes):  # the last axis first, as `resampling.pad`
        y = resampling._pad_axis(y, axis, max(low, 0), max(high, 0), mode)
    y = _crop(y, [(axis, max(-low, 0), max(-high, 0)) for axis, low, high in axes])
    return _named(y, _NAMES[mode].format(n), (input,))


def _crop(x, cuts):
    """`x` without `low` elements at the start and `high` at the end of each listed axis."""
    if not any(low or high for _, low, high in cuts):
        return x
    index = [slice(None)] * x.ndim
    for axis, low, high in cuts:
        index[axis] = slice(low, x.shape[axis] - high)
    return x[tuple(index)]


def _check_crops(x, axes) -> None:
    """ATen's `constant_pad_nd` first narrows the input by the negative widths, axis by axis
    and the left one first: a crop longer than what is left fails in `narrow`."""
    for axis, low, high in axes:
        size = x.shape[axis] + min(low, 0)
        if size < 0 or size + min(high, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")


def _check_reflect_replicate(x, axes, mode: str) -> None:
    """ATen's checks of `reflection_padNd` / `replication_padNd`, in its order."""
    n = len(axes)
    shape = list(x.shape)
    if 0 in shape[x.ndim - n - 1 :]:  # the channel and spatial axes (not the batch)
        raise RuntimeError(
            f"Expected {n + 1}D or {n + 2}D (batch mode) tensor with possibly 0 batch size and "
            f"other non-zero dimensions for input, but got: {shape}"
        )
    if mode == "reflect":
        for i, (axis, low, high) in enumerate(reversed(axes)):  # W, then H, then D
            if not (low < shape[axis] and high < shape[axis]):
                raise RuntimeError(
                    f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding "
                    f"input dimension, but got: padding ({low}, {high}) at dimension {axis} of "
                    f"input {shape}"
                )
    sizes = [shape[axis] for axis, _, _ in axes]
    outs = [shape[axis] + low + high for axis, low, high in axes]
    if all(o < 1 for o in outs):
        if n == 1:
            text = f"input (W: {sizes[0]}) is too small. Calculated output W: {outs[0]}"
        elif n == 2:
            gap = " " if mode == "replicate" else ""  # ATen's replication message has it
            text = (
                f"input (H: {sizes[0]}, W: {sizes[1]}{gap}) is too small. Calculated output "
                f"H: {outs[0]} W: {outs[1]}"
            )
        else:
            text = (
                f"input (D: {sizes[0]} H: {sizes[1]}, W: {sizes[2]}) is too small. Calculated "
                f"output D: {outs[0]} H: {outs[1]} W: {outs[2]}"
            )
        raise RuntimeError(text)
    if any(o < 0 for o in outs):
        if mode == "reflect" and n == 2:  # ATen sizes the 2-d reflection output before checking
            raise RuntimeError("numel: integer multiplication overflow")
        full = shape[: x.ndim - n] + outs
        first = next(o for o in outs if o < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {first}: {full}")


def _circular(x, axes):
    """ATen's `_pad_circular`: the input cropped by the negative widths, then each positive
    width copied from the far end of what is left."""
    for axis, low, high in axes:
        size = x.shape[axis]
        if low > size or high > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + low + high < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    y = _crop(x, [(axis, max(-low, 0), max(-high, 0)) for axis, low, high in axes])
    for axis, low, high in reversed(axes):
        low, high = max(low, 0), max(high, 0)
        if low > y.shape[axis] or high > y.shape[axis]:
            raise RuntimeError(_OVERLAP)  # ATen would copy from the padding it is writing
        y = resampling._pad_axis(y, axis, low, high, "circular")
    return y


# -- Modules --------------------------------------------------------------------------------------


class _PadNd(Module):
    """A padding Module: `padding` as PyTorch's `_ntuple` makes it, `F.pad` in `forward`."""

    _n = 0
    _mode = ""

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._n)

    def forward(self, input):
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    _mode = "constant"

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last axis of (C, W) or (N, C, W) with `value`: `padding` is an int or
    (left, right); negative widths crop."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two axes with `value`: (left, right, top, bottom)."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three axes with `value`: (left, right, top, bottom, front, back)."""

    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """`ConstantPad1d` with zeros."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """`ConstantPad2d` with zeros."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """`ConstantPad3d` with zeros."""


class ReflectionPad1d(_PadNd):
    """Mirrors (C, W) or (N, C, W) at its ends without repeating the edge; each width must be
    less than the axis."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeats the edge values of (C, W) or (N, C, W)."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _n, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    """Wraps around: the start of an axis pads its end and the end its start. The input's rank
    is checked first, with PyTorch's ValueError."""

    _mode = "circular"

    def forward(self, input):
        n = self._n
        if input.dim() not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.dim()}D input)")
        return pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    _n = 1


class CircularPad2d(_CircularPadNd):
    _n = 2


class CircularPad3d(_CircularPadNd):
    _n = 3
