"""The Module forms of `tracegrad.torch.nn.activations`, plus `Softmax2d` and `Bilinear`.

Each keeps PyTorch's constructor signature, defaults, attributes and `repr`; `forward` calls
the function in `activations`. `PReLU` and `Bilinear` hold `Parameter`s initialised as
PyTorch's (a constant `init`; U(-1/sqrt(in1_features), 1/sqrt(in1_features))), drawn from
tracegrad's generator (`tg.manual_seed`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.nn import activations as A
from tracegrad.torch.nn.init import constant_, uniform_
from tracegrad.torch.nn.module import Module, Parameter

__all__ = [
    "CELU",
    "GLU",
    "SELU",
    "Bilinear",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LogSigmoid",
    "Mish",
    "PReLU",
    "ReLU6",
    "RReLU",
    "Softmax2d",
    "Softmin",
    "Softshrink",
    "Softsign",
    "Tanhshrink",
    "Threshold",
]


def _inplace_str(inplace: bool, first: bool = False) -> str:
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Inplace(Module):
    """An activation whose only argument is `inplace` (its repr shows nothing else)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace


class CELU(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return A.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class SELU(_Inplace):
    def forward(self, input):
        return A.selu(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class GLU(Module):
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return A.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return A.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardsigmoid(_Inplace):
    """`relu6(x + 3) / 6`; like PyTorch's, its repr does not show `inplace`."""

    def forward(self, input):
        return A.hardsigmoid(input, self.inplace)


class Hardswish(_Inplace):
    """`x * relu6(x + 3) / 6`; like PyTorch's, its repr does not show `inplace`."""

    def forward(self, input):
        return A.hardswish(input, self.inplace)


class Mish(_Inplace):
    def forward(self, input):
        return A.mish(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class Hardtanh(Module):
    """Clamps to `[min_val, max_val]`; `min_value` and `max_value` are PyTorch's deprecated
    spellings (a FutureWarning each), and `max_val <= min_val` is PyTorch's AssertionError."""

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ):
        super().__init__()
        if min_value is not None:
            warnings.warn(
                "keyword argument `min_value` is deprecated and renamed to `min_val`",
                FutureWarning,
                stacklevel=2,
            )
            min_val = min_value
        if max_value is not None:
            warnings.warn(
                "keyword argument `max_value` is deprecated and renamed to `max_val`",
                FutureWarning,
                stacklevel=2,
            )
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(
                f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})"
            )

    def forward(self, input):
        return A.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class LogSigmoid(Module):
    def forward(self, input):
        return A.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):
        return A.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):
        return A.tanhshrink(input)


class RReLU(Module):
    """Random slopes in U(lower, upper) while training, `(lower + upper) / 2` in eval mode
    (see `activations.rrelu`: tracegrad's generator, not PyTorch's stream)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return A.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Threshold(Module):
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return A.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Softmin(Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return A.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels (axis -3) of a 3-D or 4-D input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead"
            )
        return ops.softmax(input, -3)


class PReLU(Module):
    """`x` where `x > 0`, else `weight * x`: `num_parameters` slopes (1, or one per channel),
    a `Parameter` initialised to `init`."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        _check_device(device)
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(ops.empty(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        constant_(self.weight, self.init)

    def forward(self, input):
        return A.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Bilinear(Module):
    """`y = x1^T A x2 + b`: weight (out_features, in1_features, in2_features) and bias
    (out_features,), both drawn from U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as
    PyTorch's (tracegrad's generator: `tg.manual_seed`)."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        _check_device(device)
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        shape = (out_features, in1_features, in2_features)
        self.weight = Parameter(ops.empty(shape, dtype=dtype))
        if bias:
            self.bias = Parameter(ops.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(
                f"in1_features must be > 0, but got (in1_features={self.in1_features})"
            )
        bound = 1 / math.sqrt(self.weight.shape[1])
        uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return A.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
