"""PyTorch's special functions: `erf`, `erfc`, `erfinv`, `lgamma`, `digamma`, `polygamma`,
`i0`, `sinc`, `xlogy` and `hypot`.

Each is the SciPy-special (or NumPy) primitive of `tracegrad.scipy.special`, whose value is
SciPy's and whose derivatives are closed forms that differentiate again, with PyTorch's dtypes
(integers become the default float dtype), `grad_fn` names and refusals of complex inputs.
`xlogy` is composed so that its derivative in `x` is 0 where `x == 0`, as PyTorch's is.
"""

from __future__ import annotations

import importlib
import math
import operator

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.primitives import _scipy_installed
from tracegrad.primitives import elementwise as ew
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.ops.arithmetic import log, mul, where
from tracegrad.torch.ops.comparisons import (
    eq,
    gt,
    isnan,
    logical_and,
    logical_not,
    logical_or,
    lt,
)
from tracegrad.torch.ops.conventions import _as_tensor, _named, _no_complex
from tracegrad.torch.ops.promotion import _apply, _binary, _cast, result_type
from tracegrad.torch.tensor import Tensor


def _floating(input):
    """The input as a tensor, integers and booleans in the default float dtype (PyTorch's
    special functions compute in floating point)."""
    x = _as_tensor(input)
    return x._astype(get_default_dtype()) if x.dtype.kind in "biu" else x


def _sp(torch_name: str):
    """tracegrad.primitives.special, the primitives of SciPy's special functions, loaded on
    first use: SciPy is an optional extra, and `import tracegrad` neither needs nor imports it."""
    if not _scipy_installed():
        raise ImportError(
            f"torch.{torch_name} computes with SciPy's special functions, an optional extra of "
            "tracegrad: install it with pip install 'tracegrad[scipy]' (or pip install scipy)"
        )
    return importlib.import_module("tracegrad.primitives.special")


def _special(prim: str, torch_name: str, kernel: str):
    """`torch_name(input)`: the primitive `prim` of tracegrad.primitives.special on floats,
    named `<Name>Backward0` as in PyTorch, and complex inputs refused with the message of
    PyTorch's CPU kernel `kernel`."""
    backward = "".join(p.capitalize() for p in torch_name.split("_")) + "Backward0"

    def f(input):
        x = _floating(input)
        _no_complex(f"\"{kernel}\" not implemented for '{{}}'", x)
        return _named(_apply(getattr(_sp(torch_name), prim), x), backward)

    f.__name__ = f.__qualname__ = torch_name
    f.__doc__ = f"`torch.{torch_name}`: SciPy's values (`{prim}`), its closed-form derivative."
    return f


erf = _special("erf_p", "erf", "erf_vml_cpu")
erfc = _special("erfc_p", "erfc", "erfc_vml_cpu")
erfinv = _special("erfinv_p", "erfinv", "erfinv_vml_cpu")
lgamma = _special("gammaln_p", "lgamma", "lgamma_vml_cpu")  # log|gamma(x)|, as SciPy's
digamma = _special("psi_p", "digamma", "digamma")
i0 = _special("i0_p", "i0", "i0_vml_cpu")


def polygamma(n, input):
    """`torch.polygamma(n, input)`: `digamma` for n = 0, else SciPy's formula (-1)**(n+1) n!
    zeta(n + 1, x); the Hurwitz zeta's derivative in x is the next polygamma, so this
    differentiates again. The constants are Python numbers, so the dtype stays the input's."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(
            f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}"
        )
    n = operator.index(n)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _floating(input)
    kernel = ("digamma", "trigamma")[n] if n < 2 else "polygamma"
    _no_complex(f"\"{kernel}\" not implemented for '{{}}'", x)
    if n == 0:
        out = _apply(_sp("polygamma").psi_p, x)
    else:
        order = np.asarray(n + 1, x.dtype)  # the zeta's order, a constant of x's dtype
        scale = float((-1) ** (n + 1) * math.factorial(n))
        out = mul(_apply(_sp("polygamma").hurwitz_zeta_p, order, x), scale)
    return _named(out, "PolygammaBackward0", (x,))


def _polygamma_method(input, n):
    """`Tensor.polygamma(n)`: the tensor comes first in the method (and in `polygamma_`)."""
    return polygamma(n, input)


def sinc(input):
    """`torch.sinc`: sin(pi x) / (pi x), 1 at 0 with derivative 0 there (NumPy's `sinc`)."""
    return _named(tnp.sinc(_floating(input)), "SincBackward0")


def _scalar_pair(name: str, input, other) -> None:
    """PyTorch's binary functions take at most one Python number."""
    if not isinstance(input, Tensor | np.ndarray) and not isinstance(other, Tensor | np.ndarray):
        raise TypeError(
            f"{name}() received an invalid combination of arguments - got "
            f"({type(input).__name__}, {type(other).__name__}), but expected one of:"
        )


def xlogy(input, other):
    """`torch.xlogy(input, other)`: x log(y), 0 where x == 0 unless y is nan.

    Composed rather than SciPy's primitive, for PyTorch's derivatives: in x, log(y) except
    where x == 0 and y <= 0, where it is 0 (SciPy's rule gives -inf or nan there); in y,
    x / y. Those points (and x == 0, y == inf, whose value is 0) are `trivial`: the result
    there is the constant 0, and the logarithm reads 1 instead of y, so no -inf meets the
    zero cotangent (0 * -inf would be nan). Two corners differ from PyTorch: at x == y == 0
    the derivative in y is 0 here (PyTorch's 0 / 0 is nan), and at x == 0, y == inf the
    derivative in x is 0 (PyTorch's log(inf) is inf). A Python number on either side gives
    PyTorch's `XlogyBackward1` (number x) or `XlogyBackward2` (number y)."""
    _scalar_pair("xlogy", input, other)
    _no_complex("\"xlogy_cpu\" not implemented for '{}'", input, other)
    dtype = result_type(input, other)
    if dtype.kind in "biu":
        dtype = get_default_dtype()
    x, y = (_as_tensor(_cast(v, dtype)) for v in (input, other))
    x, y = (v if v.dtype == dtype else v._astype(dtype) for v in (x, y))  # numbers: 0-d
    y_value = y.detach()
    regular = logical_and(gt(y_value, 0), lt(y_value, float("inf")))
    trivial = logical_and(eq(x.detach(), 0), logical_not(logical_or(regular, isnan(y_value))))
    out = where(trivial, 0.0, mul(x, log(where(trivial, 1.0, y))))
    name = "XlogyBackward1" if not isinstance(input, Tensor) else "XlogyBackward0"
    if not isinstance(other, Tensor):
        name = "XlogyBackward2"
    return _named(out, name, [v for v in (input, other) if isinstance(v, Tensor)])


def hypot(input, other):
    """`torch.hypot`: sqrt(x**2 + y**2) without overflow (NumPy's); floats only, as PyTorch's
    kernel (integers are refused, not converted). Its derivative x / out is nan at 0, as
    PyTorch's."""
    for position, (name, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"hypot(): argument '{name}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )
    dtype = result_type(input, other)
    if dtype.kind != "f":
        raise NotImplementedError(f"\"hypot_cpu\" not implemented for '{dtype.name}'")
    return _named(_binary(ew.hypot_p, input, other), "HypotBackward0")


__all__ = [
    "erf",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "polygamma",
    "i0",
    "sinc",
    "xlogy",
    "hypot",
]
