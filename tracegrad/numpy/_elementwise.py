"""Elementwise functions with NumPy's names and signatures, over the elementwise primitives."""

from __future__ import annotations

import operator

import numpy as np

from tracegrad.core import Tracer, bind
from tracegrad.numpy._common import as_array, asarray_or_tracer
from tracegrad.primitives import elementwise as ew

__all__ = []


def _export(name, prim, doc=None):
    if prim.impl.nin == 1:

        def f(x, /):
            return bind(prim, x)
    else:

        def f(x, y, /):
            return bind(prim, x, y)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc or f"`numpy.{prim.impl.__name__}`, traceable and differentiable."
    f.primitive = prim  # all the function does: Tracer's operators bind it directly
    globals()[name] = f
    __all__.append(name)
    return f


for _p in ew.UNARY + ew.BINARY + (ew.conjugate_p,):
    _export(_p.name, _p)

# NumPy's other names for the same ufuncs (np.abs is np.absolute, and so on)
_ALIASES = {
    "abs": "absolute",
    "true_divide": "divide",
    "mod": "remainder",
    "pow": "power",
    "acos": "arccos",
    "asin": "arcsin",
    "atan": "arctan",
    "acosh": "arccosh",
    "asinh": "arcsinh",
    "atanh": "arctanh",
    "atan2": "arctan2",
    "radians": "deg2rad",
    "degrees": "rad2deg",
    "conj": "conjugate",
    "bitwise_not": "invert",
    "bitwise_invert": "invert",
    "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift",
}
for _alias, _name in _ALIASES.items():
    globals()[_alias] = globals()[_name]
    __all__.append(_alias)


def round(a, decimals=0, out=None):  # noqa: A001 - NumPy's name
    """`np.round`: NumPy's own computation, `rint(a * 10**d) / 10**d` (or `rint(a / 10**-d) *
    10**-d` for negative `decimals`) with the power of ten as a Python float, so the bits match
    (halves round to even). Integers are returned unchanged for `decimals >= 0` and rounded in
    float64 then cast back otherwise. Piecewise constant: the derivative is zero."""
    if out is not None:
        raise TypeError(_OUT_REFUSED.format(name="round"))
    decimals = operator.index(decimals)
    a = asarray_or_tracer(a)
    kind = np.dtype(a.dtype).kind if hasattr(a, "dtype") else np.asarray(a).dtype.kind
    if decimals == 0 and kind not in "iu":  # bools too: rint gives float16, as NumPy's
        return bind(ew.rint_p, a)
    if kind in "iu" and decimals >= 0:
        return a
    if kind == "b":  # NumPy writes the scaled value back into a bool array
        op = "multiply" if decimals > 0 else "divide"
        raise TypeError(
            f"Cannot cast ufunc '{op}' output from dtype('float64') to dtype('bool') with "
            "casting rule 'same_kind'"
        )
    if kind == "c":
        raise NotImplementedError(
            "tracegrad.numpy.round: decimals != 0 of complex values is not supported yet "
            "(NumPy rounds the real and imaginary parts separately); round np.real(z) and "
            "np.imag(z)"
        )
    f = _power_of_ten(abs(decimals))
    if decimals >= 0:
        return bind(ew.divide_p, bind(ew.rint_p, bind(ew.multiply_p, a, f)), f)
    y = bind(ew.multiply_p, bind(ew.rint_p, bind(ew.divide_p, a, f)), f)
    return ew.astype(y, a.dtype) if kind in "biu" else y


def _power_of_ten(n: int) -> float:
    """10**n as NumPy's round computes it: exact up to 1e8, then repeated multiplication by 10
    (which differs from Python's correctly rounded 10.0**n for large n)."""
    if n < 9:
        return float(10**n)
    ret = 1e9
    for _ in range(n - 9):
        ret *= 10.0
    return ret


around = round


def where(condition, x, y, /):
    """`np.where(condition, x, y)` (the public `tnp.where`, with the one-argument form, is in
    _sorting.py)."""
    return ew.where(condition, x, y)


def clip(a, a_min=None, a_max=None, /, **kwargs):
    """`np.clip`; NumPy lowers a one-sided clip to maximum/minimum, and so do we (same bits)."""
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise NotImplementedError(f"tracegrad.numpy.clip: unsupported arguments {sorted(kwargs)}")
    if a_min is None and a_max is None:
        raise ValueError("clip: at least one of a_min and a_max must be given")
    if a_min is None:
        return bind(ew.minimum_p, a, a_max)
    if a_max is None:
        return bind(ew.maximum_p, a, a_min)
    return ew.clip(a, a_min, a_max)


def astype(x, dtype, /, *, copy=True):
    return ew.astype(x, dtype)


_OUT_REFUSED = (
    "tracegrad.numpy.{name}: out= would write a traced result into an array in place, which "
    "cannot hold it; drop out= and use the returned value"
)


def sign(x, /):
    """`np.sign`. For complex z NumPy's sign is z / |z| (0 at 0), which is not piecewise
    constant: its derivative is that of z / |z| where z is finite and nonzero, and 0 elsewhere
    (JAX returns 0 everywhere, a wrong number). The value stays NumPy's own bits: the
    derivative rides on `out - (stop_gradient(s) - s)`, and `stop_gradient(s) - s` is +0."""
    out = bind(ew.sign_p, x)
    if not isinstance(x, Tracer) or x.aval.dtype.kind != "c":
        return out
    ok = bind(ew.logical_and_p, bind(ew.not_equal_p, x, 0), bind(ew.isfinite_p, x))
    safe = bind(ew.where_p, ok, x, 1)
    s = bind(ew.where_p, ok, bind(ew.divide_p, safe, bind(ew.absolute_p, safe)), 0)
    return bind(ew.subtract_p, out, bind(ew.subtract_p, ew.stop_gradient(s), s))


def real(val):
    """`np.real`: the real part (the input itself for a real array)."""
    return ew.real(asarray_or_tracer(val))


def imag(val):
    """`np.imag`: the imaginary part (zeros for a real array, with no derivative)."""
    return ew.imag(asarray_or_tracer(val))


def angle(z, deg=False):
    """`np.angle`, as NumPy computes it: arctan2(imag, real), with 0 for the imaginary part of
    a real input."""
    z = as_array(z)
    if np.dtype(z.dtype).kind == "c":
        a = bind(ew.arctan2_p, ew.imag(z), ew.real(z))
    else:
        a = bind(ew.arctan2_p, 0, z)
    return bind(ew.multiply_p, a, 180 / np.pi) if deg else a


def sinc(x):
    """`np.sinc`, sin(pi x) / (pi x); derivatives of every order are exact at 0."""
    return ew.sinc(as_array(x))


def fix(x, out=None):
    """`np.fix`: rounds toward zero (NumPy computes it as trunc); the derivative is zero."""
    if out is not None:
        raise TypeError(_OUT_REFUSED.format(name="fix"))
    return bind(ew.trunc_p, as_array(x))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """`np.nan_to_num`: NaN, +inf and -inf replaced (by default with 0 and the largest finite
    values of x's dtype), as NumPy's copyto with a mask does; elsewhere x, so the derivative is
    1 at finite values and 0 at the replaced ones. Integer arrays are returned as they are."""
    x = as_array(x)
    dtype = np.dtype(x.dtype)
    if dtype.kind not in "fc":
        return x
    if dtype.kind == "c":
        raise NotImplementedError(
            "tracegrad.numpy.nan_to_num: complex inputs are not supported yet; apply it to "
            "np.real(x) and np.imag(x) separately"
        )
    info = np.finfo(dtype)
    maxf = info.max if posinf is None else posinf
    minf = info.min if neginf is None else neginf
    # NumPy writes nan, then +inf's value, then -inf's, each cast to x's dtype
    y = ew.where(bind(ew.isnan_p, x), _cast(nan, dtype), x)
    is_inf = bind(ew.isinf_p, x)
    negative = bind(ew.signbit_p, x)
    y = ew.where(
        bind(ew.logical_and_p, is_inf, bind(ew.logical_not_p, negative)), _cast(maxf, dtype), y
    )
    return ew.where(bind(ew.logical_and_p, is_inf, negative), _cast(minf, dtype), y)


def _cast(value, dtype):
    return (
        np.asarray(value).astype(dtype) if not hasattr(value, "aval") else ew.astype(value, dtype)
    )


__all__ += [
    "round",
    "around",
    "clip",
    "astype",
    "real",
    "imag",
    "angle",
    "sinc",
    "fix",
    "nan_to_num",
]
