"""Root-mean-square normalisation: PyTorch's `rms_norm` and the `RMSNorm` Module.

`x * rsqrt(mean(x ** 2 over the trailing normalized_shape axes) + eps) * weight`, composed of
tensor ops as ATen's CPU composite is, so the gradient is the primitives' rules. `eps=None`
means the machine epsilon of the input's computation type (float32 for half precision, which
is computed in float32 and rounded back, as ATen's opmath upcast does).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.nn import init
from tracegrad.torch.nn.module import Module, Parameter
from tracegrad.torch.ops.conventions import _as_tensor

__all__ = ["RMSNorm", "rms_norm"]

_C_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double"}


def _shape_list(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _check(x, shape: tuple[int, ...], weight) -> None:
    """ATen's `_check_rms_norm_inputs`, in its order (its shape is printed `[*3, 4]`, unlike
    layer_norm's `[*, 3, 4]`)."""
    k = len(shape)
    if k == 0:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            f"one element, but got normalized_shape = {_shape_list(shape)}"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{_shape_list(weight.shape)} and normalized_shape = {_shape_list(shape)}"
        )
    if x.ndim < k:
        raise ValueError(f"Input tensor must have at least {k} dimensions, but got {x.ndim}")
    if tuple(x.shape[x.ndim - k :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={_shape_list(shape)}, expected input with shape "
            f"[*{', '.join(str(d) for d in shape)}], but got input of size{_shape_list(x.shape)}"
        )


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divides `input` by the root mean square of its trailing `normalized_shape` axes (plus
    `eps` under the root), then multiplies by `weight` (of that shape) when given."""
    x = _as_tensor(input)
    if isinstance(normalized_shape, numbers.Integral):
        raise TypeError(
            "rms_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int"
        )
    shape = tuple(int(d) for d in normalized_shape)
    w = None if weight is None else _as_tensor(weight)
    _check(x, shape, w)
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"rms_norm\" not implemented for '{x.dtype.name}'")
    if w is not None and w.dtype != x.dtype:
        warnings.warn(
            "Mismatch dtype between input and weight: input dtype = "
            f"{_C_NAMES.get(x.dtype.name, x.dtype.name)}, weight dtype = "
            f"{_C_NAMES.get(w.dtype.name, w.dtype.name)}, Cannot dispatch to fused "
            "implementation.",
            UserWarning,
            stacklevel=2,
        )
    compute = np.dtype(np.float32) if x.dtype.itemsize < 4 else x.dtype
    if eps is None:
        eps = float(np.finfo(compute).eps)
    wide = x if compute == x.dtype else x._astype(compute)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    scale = ops.rsqrt(ops.add(ops.mean(ops.square(wide), dims, keepdim=True), eps))
    out = ops.mul(wide, scale)
    if compute != x.dtype:
        out = out._astype(x.dtype)
    if w is not None:
        out = ops.mul(out, w)
        if out.dtype != x.dtype:  # ATen's composite returns the input's dtype
            out = out._astype(x.dtype)
    return out


class RMSNorm(Module):
    """RMS normalisation over the trailing `normalized_shape` axes; with
    `elementwise_affine`, times a `weight` of that shape (initialised to ones)."""

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        _check_device(device)
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ops.empty(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )
