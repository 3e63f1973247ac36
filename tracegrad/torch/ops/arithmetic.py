"""PyTorch's arithmetic and elementwise math.

The binary operators (`add` ... `matmul`, with PyTorch's `alpha` and `rounding_mode`), the unary
functions (integer inputs become the default float dtype where PyTorch's do), and composites with
PyTorch's gradients and rounding: `relu` and `clamp` pass the gradient at the boundary, `lerp`
and `addcdiv` round as PyTorch does.
"""

from __future__ import annotations

import builtins

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import products
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.ops.comparisons import gt, lt
from tracegrad.torch.ops.conventions import _as_tensor, _named, _no_complex
from tracegrad.torch.ops.promotion import _apply, _binary, _cast, result_type
from tracegrad.torch.ops.shapes import clone, unsqueeze
from tracegrad.torch.tensor import Tensor


def add(input, other, *, alpha=1):
    if alpha != 1:
        other = mul(other, alpha)
    return _binary(ew.add_p, input, other)


_BOOL_SUB = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)


def _is_bool(x) -> bool:
    if isinstance(x, Tensor):
        return x._cell.value.dtype.kind == "b"
    return isinstance(x, np.ndarray) and x.dtype.kind == "b"


def sub(input, other, *, alpha=1):
    input_bool, other_bool = _is_bool(input), _is_bool(other)
    if input_bool and other_bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if input_bool or other_bool:
        raise RuntimeError(_BOOL_SUB)
    if alpha != 1:
        other = mul(other, alpha)
    return _binary(ew.subtract_p, input, other)


def rsub(input, other, *, alpha=1):
    return _named(sub(other, input * alpha if alpha != 1 else input), "RsubBackward1", (input,))


def mul(input, other):
    return _binary(ew.multiply_p, input, other)


def div(input, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _binary(ew.divide_p, input, other, floating=True)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return trunc(_binary(ew.divide_p, input, other, floating=True))._astype(
            result_type(input, other)
        )
    raise ValueError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


def pow(input, exponent):  # noqa: A001 - PyTorch's name
    if not isinstance(input, Tensor):
        return _binary(ew.power_p, input, exponent)
    return _binary(ew.power_p, input, exponent)


def _integer_zero_divisor(input, other) -> None:
    """PyTorch refuses integer division by zero (NumPy returns 0 with a warning)."""
    if result_type(input, other).kind in "biu":
        divisor = other._cell.value if isinstance(other, Tensor) else np.asarray(other)
        if np.any(divisor == 0):
            raise RuntimeError("ZeroDivisionError")


def remainder(input, other):
    _no_complex("\"remainder_cpu\" not implemented for '{}'", input, other)
    _integer_zero_divisor(input, other)
    return _binary(ew.remainder_p, input, other)


def floor_divide(input, other):
    _no_complex("\"div_floor_cpu\" not implemented for '{}'", input, other)
    _integer_zero_divisor(input, other)
    return _binary(ew.floor_divide_p, input, other)


def matmul(input, other):
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        a, b = input._cell.value.shape, other._cell.value.shape
        if len(a) == len(b) == 2 and a[1] != b[0]:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({a[0]}x{a[1]} and {b[0]}x{b[1]})"
            )
    return _binary(products.matmul_p, input, other)


def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(
            f"mm: expected 2-D tensors, got shapes {input.shape} and {mat2.shape}; use matmul"
        )
    return matmul(input, mat2)


def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(
            f"bmm: expected 3-D tensors, got shapes {input.shape} and {mat2.shape}; use matmul"
        )
    return _named(matmul(input, mat2), "BmmBackward0")


def mv(input, vec):
    return matmul(input, vec)


def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


def einsum(equation, *operands):
    """`torch.einsum(equation, *operands)` (operands may also come as one list)."""
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    operands = [_as_tensor(x) for x in operands]
    dtype = result_type(*operands)
    return _named(tnp.einsum(equation, *[_cast(x, dtype) for x in operands]), "EinsumBackward0")


def outer(input, vec2):
    return mul(unsqueeze(input, 1), unsqueeze(vec2, 0))


def neg(input):
    return bind(ew.negative_p, input)


negative = neg


def _unary(prim, torch_name=None, *, floating=True):
    def f(input):
        x = _as_tensor(input)
        if floating and x._cell.value.dtype.kind in "biu":
            x = x._astype(get_default_dtype())
        out = _apply(prim, x)
        return _named(out, torch_name) if torch_name else out

    f.__name__ = torch_name or prim.name
    return f


exp = _unary(ew.exp_p)
exp2 = _unary(ew.exp2_p)
expm1 = _unary(ew.expm1_p)
log = _unary(ew.log_p)
log2 = _unary(ew.log2_p)
log10 = _unary(ew.log10_p)
log1p = _unary(ew.log1p_p)
sin = _unary(ew.sin_p)
cos = _unary(ew.cos_p)
tan = _unary(ew.tan_p)
sinh = _unary(ew.sinh_p)
cosh = _unary(ew.cosh_p)
tanh = _unary(ew.tanh_p)
asin = arcsin = _unary(ew.arcsin_p)
acos = arccos = _unary(ew.arccos_p)
atan = arctan = _unary(ew.arctan_p)
asinh = arcsinh = _unary(ew.arcsinh_p)
acosh = arccosh = _unary(ew.arccosh_p)
atanh = arctanh = _unary(ew.arctanh_p)
sqrt = _unary(ew.sqrt_p)
reciprocal = _unary(ew.reciprocal_p)
abs = _unary(ew.absolute_p, floating=False)  # noqa: A001 - PyTorch's name
absolute = abs
_sign = _unary(ew.sign_p, floating=False)


def sign(input):
    """PyTorch's sign, which refuses complex numbers (NumPy's is z / |z|: that is `sgn`)."""
    if isinstance(input, Tensor) and input.dtype.kind == "c":
        raise NotImplementedError(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
            "torch.sgn instead."
        )
    return _sign(input)


def _rounding(prim):
    """floor, ceil, trunc: PyTorch refuses complex inputs (NumPy has no loop for them)."""
    f = _unary(prim, floating=False)

    def rounded(input):
        _no_complex(f"{prim.name} is not supported for complex inputs", input)
        return f(input)

    rounded.__name__ = prim.name
    return rounded


floor = _rounding(ew.floor_p)
ceil = _rounding(ew.ceil_p)
trunc = _rounding(ew.trunc_p)
_rint = _unary(ew.rint_p, floating=False)


def round(input, *, decimals=0):  # noqa: A001 - PyTorch's name (half to even)
    x = _as_tensor(input)
    kernel = "round_cpu" if decimals else "round_vml_cpu"
    _no_complex(f"\"{kernel}\" not implemented for '{{}}'", x)
    if x.dtype.kind in "biu":
        return clone(x)  # integers are already round (NumPy's rint would make floats)
    if decimals:
        scale = 10.0**decimals
        return div(_rint(mul(x, scale)), scale)
    return _rint(x)


square = _unary(ew.square_p, "PowBackward0", floating=False)


def rsqrt(input):
    return _named(reciprocal(sqrt(input)), "RsqrtBackward0", (input,))


def sigmoid(input):
    x = _as_tensor(input)
    if x.dtype.kind in "biu":
        x = x._astype(get_default_dtype())
    if x.dtype.kind == "c":  # PyTorch's complex kernel: 1 / (1 + exp(-z))
        return _named(reciprocal(add(exp(neg(x)), 1.0)), "SigmoidBackward0", (x,))
    # exp of -|x| never overflows, so neither the value nor the gradient meets inf (a plain
    # 1 / (1 + exp(-x)) gives 0 * inf = nan in the gradient at x = -1000)
    negative = lt(x, 0)
    z = exp(where(negative, x, neg(x)))
    one_plus = add(z, 1.0)
    out = where(negative, div(z, one_plus), reciprocal(one_plus))
    return _named(out, "SigmoidBackward0", (x,))


def relu(input):
    x = _as_tensor(input)
    _no_complex("clamp is not supported for complex types", x)
    return _named(where(gt(x, 0), x, 0), "ReluBackward0", (x,))


def atan2(input, other):
    _no_complex("\"atan2_cpu\" not implemented for '{}'", input, other)
    return _binary(ew.arctan2_p, input, other, floating=True)


def maximum(input, other):
    _no_complex("maximum not implemented for complex tensors.", input, other, error=RuntimeError)
    return _binary(ew.maximum_p, input, other)


def minimum(input, other):
    _no_complex("minimum not implemented for complex tensors.", input, other, error=RuntimeError)
    return _binary(ew.minimum_p, input, other)


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """PyTorch's clamp: the gradient passes where min <= x <= max, boundaries included."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    x = _as_tensor(input)
    _no_complex("clamp is not supported for complex types", x)
    out = x
    if min is not None:
        out = where(lt(x, min), _cast(min, x.dtype) if isinstance(min, Tensor) else min, out)
    if max is not None:
        out = where(gt(x, max), _cast(max, x.dtype) if isinstance(max, Tensor) else max, out)
    bounds = [b for b in (min, max) if isinstance(b, Tensor)]
    return _named(out, "ClampBackward1" if not bounds else "ClampBackward0", (x, *bounds))


clip = clamp


def clamp_min(input, min):  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    return clamp(input, max=max)


def where(condition, input=None, other=None):
    condition = _as_tensor(condition)
    if input is None and other is None:  # `torch.where(condition)`: nonzero(as_tuple=True)
        found = np.nonzero(np.atleast_1d(condition.detach().numpy()))
        return tuple(Tensor._wrap(i.astype(np.int64)) for i in found)
    if condition.dtype != np.bool_:
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype.name}"
        )
    dtype = result_type(input, other)
    input, other = _cast(input, dtype), _cast(other, dtype)
    if not isinstance(input, Tensor | np.ndarray) and not isinstance(other, Tensor | np.ndarray):
        # two Python numbers: no tensor gives the result its dtype, torch's default does
        input = np.asarray(input, dtype)
    return bind(ew.where_p, condition, input, other)


def lerp(input, end, weight):
    """PyTorch's rounding: from `input` for small weights, from `end` for large ones."""
    if isinstance(weight, int | float) and builtins.abs(weight) >= 0.5:
        return sub(end, mul(sub(end, input), 1 - weight))
    return add(input, mul(weight, sub(end, input)))


def addcmul(input, tensor1, tensor2, *, value=1):
    return add(input, mul(mul(tensor1, tensor2), value) if value != 1 else mul(tensor1, tensor2))


def addcdiv(input, tensor1, tensor2, *, value=1):
    # PyTorch's order: (value * tensor1) / tensor2
    return add(input, div(mul(tensor1, value) if value != 1 else tensor1, tensor2))


def masked_fill(input, mask, value):
    return where(mask, value, input)


__all__ = [
    "add",
    "sub",
    "rsub",
    "mul",
    "div",
    "pow",
    "remainder",
    "floor_divide",
    "matmul",
    "mm",
    "bmm",
    "mv",
    "dot",
    "outer",
    "einsum",
    "neg",
    "negative",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "asin",
    "arcsin",
    "acos",
    "arccos",
    "atan",
    "arctan",
    "asinh",
    "arcsinh",
    "acosh",
    "arccosh",
    "atanh",
    "arctanh",
    "sqrt",
    "reciprocal",
    "abs",
    "absolute",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "round",
    "square",
    "rsqrt",
    "sigmoid",
    "relu",
    "atan2",
    "maximum",
    "minimum",
    "clamp",
    "clip",
    "clamp_min",
    "clamp_max",
    "where",
    "lerp",
    "addcmul",
    "addcdiv",
    "masked_fill",
]
