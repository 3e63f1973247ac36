"""More of PyTorch's elementwise functions: `fmod`, `frac`, `float_power`, `copysign`,
`heaviside`, `logaddexp`, `logit`, `nan_to_num`, predicates (`signbit`, `isneginf`, `isin`,
...), integer functions (`gcd`, `lcm`, bitwise operations), `ldexp`, `frexp`, `nextafter`,
`mvlgamma`, `igamma` and `igammac`.

Each is the tracegrad primitive of the same meaning (NumPy's, whose vjp rule is its derivative)
or a composition of the shim's differentiable functions, with PyTorch's type promotion
(`promotion`), its refusals of dtypes its kernels lack (messages with NumPy dtype names) and its
gradients. Functions PyTorch does not differentiate (`nextafter`, predicates, integer
functions) compute on the detached values.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from tracegrad.primitives import elementwise as ew
from tracegrad.torch.ops.arithmetic import (
    _integer_zero_divisor,
    add,
    clamp,
    div,
    log,
    mul,
    pow,
    sub,
    trunc,
    where,
)
from tracegrad.torch.ops.comparisons import eq, gt, isinf, isnan, lt
from tracegrad.torch.ops.complex_numbers import complex as complex_
from tracegrad.torch.ops.conventions import _as_tensor, _named, _no_complex
from tracegrad.torch.ops.promotion import _apply, _binary, _cast, result_type
from tracegrad.torch.ops.special_math import _floating, _sp, lgamma
from tracegrad.torch.tensor import Tensor

__all__ = [
    "fmod",
    "frac",
    "float_power",
    "copysign",
    "heaviside",
    "logaddexp",
    "logaddexp2",
    "logit",
    "nan_to_num",
    "signbit",
    "isneginf",
    "isposinf",
    "isreal",
    "isin",
    "is_floating_point",
    "is_nonzero",
    "deg2rad",
    "rad2deg",
    "fmax",
    "fmin",
    "gcd",
    "lcm",
    "ldexp",
    "frexp",
    "nextafter",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "mvlgamma",
    "igamma",
    "igammac",
]


def _value(x):
    """The NumPy value of a tensor (detached) or a number."""
    return x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)


def _not_implemented(kernel: str, dtype) -> NotImplementedError:
    return NotImplementedError(f"\"{kernel}\" not implemented for '{np.dtype(dtype).name}'")


def fmod(input, other):
    """C's fmod: the remainder with the dividend's sign; d/dx 1, d/dy -trunc(x / y)."""
    _no_complex("\"fmod_cpu\" not implemented for '{}'", input, other)
    _integer_zero_divisor(input, other)
    name = "FmodBackward1" if isinstance(other, Tensor) else "FmodBackward0"
    return _named(_binary(ew.fmod_p, input, other), name)


def frac(input):
    """x - trunc(x), with x's sign; floats only, as PyTorch's kernel."""
    x = _as_tensor(input)
    if x.dtype.kind != "f":
        raise _not_implemented("frac_cpu", x.dtype)
    return _named(sub(x, trunc(x)), "FracBackward0", (x,))


def float_power(input, exponent):
    """pow in double precision (complex128 when either side is complex)."""
    complex_ = any(
        isinstance(v, complex) or isinstance(v, Tensor) and v.dtype.kind == "c"
        for v in (input, exponent)
    )
    dtype = np.dtype(np.complex128 if complex_ else np.float64)
    a = _cast(input, dtype) if isinstance(input, Tensor) else input
    b = _cast(exponent, dtype) if isinstance(exponent, Tensor) else exponent
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("float_power(): at least one of input and exponent must be a Tensor")
    if not isinstance(a, Tensor):
        a = _as_tensor(np.asarray(a, dtype))
    return pow(a, b)


def copysign(input, other):
    """|x| with y's sign, in floating point; the derivative in y is 0, as PyTorch's."""
    _no_complex("\"copysign_cpu\" not implemented for '{}'", input, other)
    return _named(_binary(ew.copysign_p, input, other, floating=True), "CopysignBackward0")


def heaviside(input, values):
    """0 below 0, 1 above, `values` at 0: both of one dtype, as PyTorch requires."""
    x, v = _as_tensor(input), _as_tensor(values)
    if x.dtype.kind == "c" or v.dtype.kind == "c":
        raise NotImplementedError("heaviside is not yet implemented for complex tensors.")
    if x.dtype != v.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    x, v = x.detach(), v.detach()
    return where(eq(x, 0), v, _cast(gt(x, 0), x.dtype))  # nan > 0 is False: 0, as PyTorch's


def _tensors(name: str, input, other) -> None:
    """PyTorch's functions that take two tensors and no Python number."""
    for position, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )


def _log_add(prim, kernel: str):
    def f(input, other):
        _tensors(kernel.split("_cpu")[0], input, other)
        _no_complex(f"\"{kernel}\" not implemented for '{{}}'", input, other)
        dtype = result_type(input, other)
        if dtype.kind in "biu":
            raise _not_implemented(kernel, dtype)
        name = "".join(p.capitalize() for p in kernel.split("_cpu")[0].split("_"))
        return _named(_binary(prim, input, other), name + "Backward0")

    f.__name__ = f.__qualname__ = prim.name
    return f


logaddexp = _log_add(ew.logaddexp_p, "logaddexp_cpu")
logaddexp2 = _log_add(ew.logaddexp2_p, "logaddexp2_cpu")


def logit(input, eps=None):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps]: the gradient is 0 outside."""
    x = _floating(input)
    _no_complex("\"logit_cpu\" not implemented for '{}'", x)
    z = x if eps is None else clamp(x, eps, 1.0 - eps)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 and 1 give -inf and inf
        return _named(log(div(z, sub(1.0, z))), "LogitBackward0", (x,))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """nan, inf and -inf replaced (by the dtype's largest and smallest finite values by
    default); the gradient passes only where the input was finite."""
    x = _as_tensor(input)
    if x.dtype.kind == "c":  # each part on its own, as PyTorch's
        parts = (nan_to_num(part, nan, posinf, neginf) for part in (ew.real(x), ew.imag(x)))
        return complex_(*parts)
    if x.dtype.kind != "f":
        return _named(_apply(ew.positive_p, x), "NanToNumBackward0")  # a copy
    info = np.finfo(x.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    v = x.detach()
    out = where(isnan(v), nan, x)
    out = where(isposinf(v), posinf, out)
    out = where(isneginf(v), neginf, out)
    return _named(out, "NanToNumBackward0", (x,))


def signbit(input):
    x = _as_tensor(input)
    _no_complex("signbit is not implemented for complex tensors.", x)
    if x.dtype.kind in "biu":
        return lt(x.detach(), 0)
    return _apply(ew.signbit_p, x.detach())


def _infinite(sign: str):
    def f(input):
        x = _as_tensor(input)
        if x.dtype.kind == "c":
            raise RuntimeError(f"is{sign}inf does not support complex inputs.")
        v = x.detach()
        if x.dtype.kind != "f":
            return _as_tensor(np.zeros(x.shape, bool))
        return isinf(v) & (lt(v, 0) if sign == "neg" else gt(v, 0))

    f.__name__ = f.__qualname__ = f"is{sign}inf"
    return f


isneginf = _infinite("neg")
isposinf = _infinite("pos")


def isreal(input):
    x = _as_tensor(input)
    if x.dtype.kind != "c":
        return _as_tensor(np.ones(x.shape, bool))
    return eq(ew.imag(x.detach()), 0)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(
            "isin() received an invalid combination of arguments - got "
            f"({type(elements).__name__}, {type(test_elements).__name__}), but expected one of:"
        )
    found = np.isin(_value(elements), _value(test_elements), invert=invert)
    return _as_tensor(np.asarray(found, bool))


def is_floating_point(input) -> bool:
    if not isinstance(input, Tensor):
        raise TypeError(
            "is_floating_point(): argument 'input' (position 1) must be Tensor, not "
            f"{type(input).__name__}"
        )
    return input.dtype.kind == "f"


def is_nonzero(input) -> bool:
    x = _as_tensor(input)
    if x.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if x.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(_value(x).reshape(()) != 0)


def _angle(factor: float, torch_name: str):
    """x times a constant, as PyTorch's (the constant rounded to x's dtype)."""

    def f(input):
        x = _floating(input)
        _no_complex(f"{torch_name} is not supported for complex tensors.", x, error=RuntimeError)
        name = torch_name.capitalize().replace("2rad", "2Rad").replace("2deg", "2Deg")
        return _named(mul(x, factor), name + "Backward0", (x,))

    f.__name__ = f.__qualname__ = torch_name
    return f


deg2rad = _angle(math.pi / 180, "deg2rad")
rad2deg = _angle(180 / math.pi, "rad2deg")


def _nan_ignoring(name: str, larger: bool):
    """fmax/fmin: the larger (smaller) ignoring nan; PyTorch's gradient goes to `input` where
    it is chosen or `other` is nan (both nan: to `input`), else to `other`."""

    def f(input, other):
        _tensors(name, input, other)
        _no_complex(
            f"{name} not implemented for complex tensors.", input, other, error=RuntimeError
        )
        dtype = result_type(input, other)
        a, b = _cast(input, dtype), _cast(other, dtype)
        av, bv = a.detach(), b.detach()
        chosen = (av >= bv) if larger else (av <= bv)
        out = where(chosen | isnan(bv), a, b)
        return _named(out, name.capitalize() + "Backward0", (input, other))

    f.__name__ = f.__qualname__ = name
    return f


fmax = _nan_ignoring("fmax", True)
fmin = _nan_ignoring("fmin", False)


def _integer_binary(prim, kernel: str):
    def f(input, other):
        if "bitwise" not in kernel:
            _tensors(kernel.split("_cpu")[0], input, other)
        dtype = result_type(input, other)
        if dtype.kind not in "iu" and not (dtype.kind == "b" and "bitwise" in kernel):
            raise _not_implemented(kernel, dtype)
        a = input.detach() if isinstance(input, Tensor) else input
        b = other.detach() if isinstance(other, Tensor) else other
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            raise TypeError(f"{kernel.split('_cpu')[0]}() expects at least one Tensor argument")
        return _binary(prim, a, b)

    f.__name__ = f.__qualname__ = kernel.split("_cpu")[0]
    return f


gcd = _integer_binary(ew.gcd_p, "gcd_cpu")
lcm = _integer_binary(ew.lcm_p, "lcm_cpu")
bitwise_and = _integer_binary(ew.bitwise_and_p, "bitwise_and_cpu")
bitwise_or = _integer_binary(ew.bitwise_or_p, "bitwise_or_cpu")
bitwise_xor = _integer_binary(ew.bitwise_xor_p, "bitwise_xor_cpu")


def bitwise_not(input):
    x = _as_tensor(input)
    if x.dtype.kind not in "biu":
        raise _not_implemented("bitwise_not_cpu", x.dtype)
    return _apply(ew.invert_p, x.detach())


def logical_xor(input, other):
    a, b = (_value(v) != 0 for v in (input, other))
    return _as_tensor(np.asarray(np.logical_xor(a, b), bool))


def ldexp(input, other):
    """input * 2 ** other, PyTorch's composition (so its dtype). PyTorch's derivative in
    `input` is 2 ** other computed in `other`'s integer dtype: 0 for a negative integer
    exponent; so it is here."""
    other = _as_tensor(other)
    out = mul(input, pow(2.0, other))
    if other.dtype.kind in "iu" and isinstance(input, Tensor):
        dead = lt(other, 0)
        out = where(dead, mul(input.detach(), pow(2.0, other)), out)
    return out


frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


def frexp(input):
    """(mantissa, exponent): input = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1; the
    exponent is int32 and the mantissa input / 2 ** exponent (its gradient PyTorch's)."""
    x = _as_tensor(input)
    if x.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    _, exponent = np.frexp(_value(x))
    exponent = _as_tensor(np.asarray(exponent, np.int32))
    scale = _as_tensor(np.ldexp(np.ones((), x.dtype), -_value(exponent)).astype(x.dtype))
    return frexp_result(_named(mul(x, scale), "FrexpBackward0", (x,)), exponent)


def nextafter(input, other):
    dtype = result_type(input, other)
    if dtype.kind != "f":
        raise _not_implemented("nextafter_cpu", dtype)
    a, b = (np.asarray(_value(v), dtype) for v in (input, other))
    return _as_tensor(np.asarray(np.nextafter(a, b), dtype))


def mvlgamma(input, p):
    """The multivariate log-gamma: sum over i < p of lgamma(x - i / 2), plus
    p (p - 1) / 4 log(pi); every element must exceed (p - 1) / 2."""
    x = _as_tensor(input)
    if x.dtype.kind not in "f":
        raise RuntimeError("mvlgamma is not implemented for " + x.dtype.name)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    out = None
    for i in range(p):
        term = lgamma(sub(x, i / 2) if i else x)
        out = term if out is None else add(out, term)
    return _named(add(out, p * (p - 1) / 4 * math.log(math.pi)), "MvlgammaBackward0", (x,))


def _incomplete_gamma(prim: str, torch_name: str):
    def f(input, other):
        dtype = result_type(input, other)
        if dtype.kind != "f":
            raise _not_implemented(f"{torch_name}_cpu", dtype)
        a, x = (_as_tensor(_cast(v, dtype)) for v in (input, other))
        a = a.detach()  # PyTorch does not differentiate in a
        name = torch_name.capitalize() + "Backward0"
        return _named(_apply(getattr(_sp(torch_name), prim), a, x), name)

    f.__name__ = f.__qualname__ = torch_name
    return f


igamma = _incomplete_gamma("gammainc_p", "igamma")
igammac = _incomplete_gamma("gammaincc_p", "igammac")
