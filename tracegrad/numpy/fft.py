"""`tracegrad.numpy.fft`: NumPy's discrete Fourier transforms, traceable and differentiable.

The fourteen transforms are NumPy's own code paths (numpy/fft/_pocketfft.py) over three
primitives (tracegrad.primitives.fft): the n-D transforms resolve `s` and `axes` as
`_cook_nd_args` does and make one call over distinct axes (NumPy's function itself, so the
same bits); repeated axes, which NumPy accepts, run NumPy's loop of 1-D transforms step by
step. `hfft` is an `irfft` of the conjugate and `ihfft` the conjugate of an `rfft`, with the
norm swapped, as NumPy writes them. The signatures are NumPy 2.4's; `out=` is refused.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from tracegrad.core import Tracer
from tracegrad.numpy._common import as_array, asarray_or_tracer, shape_of
from tracegrad.numpy._shape import roll
from tracegrad.primitives import fft as prim
from tracegrad.primitives.elementwise import conjugate

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftshift",
    "ifftshift",
    "fftfreq",
    "rfftfreq",
]

# -- arguments --------------------------------------------------------------------------------


def _refuse_out(name: str, out) -> None:
    if out is not None:
        raise TypeError(
            f"tracegrad.numpy.fft.{name}: out= would write a traced result into an array in "
            "place, which cannot hold it; drop out= and use the returned value"
        )


def _norm(name: str, norm) -> str:
    """NumPy's `norm` as the primitives take it (None is "backward")."""
    if norm is None:
        return "backward"
    if isinstance(norm, str) and norm in prim.NORMS:
        return norm
    raise ValueError(
        f'tracegrad.numpy.fft.{name}: invalid norm={norm!r}; should be "backward", "ortho" '
        'or "forward" (or None, meaning "backward")'
    )


def _axis(name: str, axis, ndim: int, arg: str = "axis") -> int:
    try:
        return normalize_axis_index(operator.index(axis), ndim)
    except np.exceptions.AxisError:
        raise np.exceptions.AxisError(
            f"tracegrad.numpy.fft.{name}: {arg} {axis} is out of bounds for an array of "
            f"dimension {ndim}"
        ) from None
    except TypeError:
        raise TypeError(
            f"tracegrad.numpy.fft.{name}: {arg} must be an integer, got {axis!r}"
        ) from None


def _integer(name: str, n, arg: str) -> int:
    try:
        return operator.index(n)
    except TypeError:
        raise TypeError(
            f"tracegrad.numpy.fft.{name}: {arg} must be an integer, got {n!r}"
        ) from None


def _length(name: str, n, arg: str) -> int:
    """A number of FFT data points: an integer >= 1 (NumPy's ValueError otherwise)."""
    n = _integer(name, n, arg)
    if n < 1:
        raise ValueError(
            f"tracegrad.numpy.fft.{name}: invalid number of FFT data points ({n}) specified "
            f"by {arg}; it must be at least 1"
        )
    return n


def _array(a):
    return as_array(asarray_or_tracer(a))


# -- the three kinds of transform, one step or one call ---------------------------------------


def _default(kind: str, length: int, last: bool) -> int:
    """NumPy's `n` when None is given: the input's length, (length - 1) * 2 for irfft's."""
    return (length - 1) * 2 if kind == "irfft" and last else length


def _bind(kind: str, a, axes, s, norm):
    if kind in ("fft", "ifft"):
        return prim.fft(a, axes=axes, s=s, norm=norm, inverse=kind == "ifft")
    return getattr(prim, kind)(a, axes=axes, s=s, norm=norm)


def _steps(kind: str, axes, s):
    """NumPy's loop for an n-D transform: (1-D kind, axis, n, resolves like irfft's last)."""
    k = len(axes)
    if kind in ("fft", "ifft"):
        return [(kind, axes[i], s[i], False) for i in reversed(range(k))]
    if kind == "rfft":
        rest = [("fft", axes[i], s[i], False) for i in range(k - 2, -1, -1)]
        return [("rfft", axes[-1], s[-1], False), *rest]
    return [("ifft", axes[i], s[i], False) for i in range(k - 1)] + [
        ("irfft", axes[-1], s[-1], True)
    ]


def _transform(name: str, kind: str, a, axes, s, norm):
    """`kind` over `axes` with lengths `s` (None: NumPy's default): one primitive call when
    the axes are distinct, else NumPy's steps one by one (each resolving its own None)."""
    shape = shape_of(a)
    if kind == "rfft" and np.dtype(a.dtype).kind == "c":
        raise TypeError(
            f"tracegrad.numpy.fft.{name}: the input must be real, got {np.dtype(a.dtype).name} "
            "(NumPy's real transforms have no complex loop); use the complex transform instead"
        )
    arg = "n" if len(axes) == 1 else "s"
    if len(set(axes)) == len(axes):
        last = len(axes) - 1
        s = tuple(
            _length(name, _default(kind, shape[ax], i == last) if n is None else n, arg)
            for i, (ax, n) in enumerate(zip(axes, s))
        )
        return _bind(kind, a, tuple(axes), s, norm)
    for step, ax, n, last in _steps(kind, axes, s):
        n = _default(step, shape_of(a)[ax], last) if n is None else n
        a = _bind(step, a, (ax,), (_length(name, n, arg),), norm)
    return a


def _one(name: str, kind: str, a, n, axis, norm, out):
    _refuse_out(name, out)
    a = _array(a)
    norm = _norm(name, norm)
    axis = _axis(name, axis, len(shape_of(a)))
    return _transform(name, kind, a, (axis,), (n,), norm)


_NO_AXES = (
    "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy 2.0). In a future "
    "version of NumPy, this will raise an error and `s[i]` will correspond to the size along "
    "the transformed axis specified by `axes[i]`. To retain current behaviour, pass a "
    "sequence [0, ..., k-1] to `axes` for an array of dimension k."
)
_NONE_IN_S = (
    "Passing an array containing `None` values to `s` is deprecated in NumPy 2.0 and will "
    "raise an error in a future version of NumPy. To use the default behaviour of the "
    "corresponding 1-D transform, pass the value matching the default for its `n` parameter. "
    "To use the default behaviour for every axis, the `s` argument can be omitted."
)


def _sequence(name: str, value, arg: str) -> list:
    try:
        return list(value)
    except TypeError:
        raise TypeError(
            f"tracegrad.numpy.fft.{name}: {arg} must be a sequence of integers, got {value!r}"
        ) from None


def _cook(name: str, shape, s, axes, invreal: bool):
    """NumPy's `_cook_nd_args`: the lengths (None kept, for NumPy's per-step default) and
    the non-negative axes, with NumPy's deprecation warnings."""
    ndim = len(shape)
    if axes is not None:
        axes = [_axis(name, ax, ndim, "axes entry") for ax in _sequence(name, axes, "axes")]
    shapeless = s is None
    if shapeless:
        s = [shape[ax] for ax in axes] if axes is not None else list(shape)
    s = _sequence(name, s, "s")
    if axes is None:
        if not shapeless:
            warnings.warn(_NO_AXES, DeprecationWarning, stacklevel=4)
        axes = [_axis(name, ax, ndim, "axes entry") for ax in range(-len(s), 0)]
    if len(s) != len(axes):
        raise ValueError(
            f"tracegrad.numpy.fft.{name}: s={tuple(s)} and axes={tuple(axes)} have different "
            "lengths (Shape and axes have different lengths.)"
        )
    if invreal and shapeless and axes:
        s[-1] = (shape[axes[-1]] - 1) * 2
    if None in s:
        warnings.warn(_NONE_IN_S, DeprecationWarning, stacklevel=4)
    s = [None if n is None else _integer(name, n, "s entry") for n in s]
    return [shape[ax] if n == -1 else n for n, ax in zip(s, axes)], axes


def _nd(name: str, kind: str, a, s, axes, norm, out):
    _refuse_out(name, out)
    a = _array(a)
    norm = _norm(name, norm)
    s, axes = _cook(name, shape_of(a), s, axes, invreal=kind == "irfft")
    if not axes:
        if kind in ("fft", "ifft"):
            return a  # NumPy transforms nothing and returns its input as it is
        raise IndexError(
            f"tracegrad.numpy.fft.{name}: axes is empty; a real transform needs at least one "
            "axis (the last one holds the half-spectrum)"
        )
    return _transform(name, kind, a, axes, s, norm)


# -- the public transforms --------------------------------------------------------------------


def fft(a, n=None, axis=-1, norm=None, out=None):
    """`np.fft.fft`: the 1-D discrete Fourier transform."""
    return _one("fft", "fft", a, n, axis, norm, out)


def ifft(a, n=None, axis=-1, norm=None, out=None):
    """`np.fft.ifft`: the 1-D inverse discrete Fourier transform."""
    return _one("ifft", "ifft", a, n, axis, norm, out)


def rfft(a, n=None, axis=-1, norm=None, out=None):
    """`np.fft.rfft`: the first `n // 2 + 1` bins of the transform of a real input."""
    return _one("rfft", "rfft", a, n, axis, norm, out)


def irfft(a, n=None, axis=-1, norm=None, out=None):
    """`np.fft.irfft`: `n` real values (default `2 * (m - 1)`) from a half-spectrum; the
    imaginary parts of the zero-frequency bin (and of the Nyquist bin for even `n`) are
    ignored, so their derivative is zero."""
    return _one("irfft", "irfft", a, n, axis, norm, out)


def hfft(a, n=None, axis=-1, norm=None, out=None):
    """`np.fft.hfft`: the transform of a Hermitian-symmetric signal given by its first half,
    `irfft(conj(a), n, axis, norm=<swapped>)` as NumPy computes it."""
    _refuse_out("hfft", out)
    a = _array(a)
    swapped = prim.SWAP[_norm("hfft", norm)]
    axis = _axis("hfft", axis, len(shape_of(a)))
    return _transform("hfft", "irfft", conjugate(a), (axis,), (n,), swapped)


def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """`np.fft.ihfft`: `conj(rfft(a, n, axis, norm=<swapped>))`, as NumPy computes it."""
    _refuse_out("ihfft", out)
    a = _array(a)
    swapped = prim.SWAP[_norm("ihfft", norm)]
    axis = _axis("ihfft", axis, len(shape_of(a)))
    return conjugate(_transform("ihfft", "rfft", a, (axis,), (n,), swapped))


def fftn(a, s=None, axes=None, norm=None, out=None):
    """`np.fft.fftn`: the n-D discrete Fourier transform."""
    return _nd("fftn", "fft", a, s, axes, norm, out)


def ifftn(a, s=None, axes=None, norm=None, out=None):
    """`np.fft.ifftn`: the n-D inverse discrete Fourier transform."""
    return _nd("ifftn", "ifft", a, s, axes, norm, out)


def rfftn(a, s=None, axes=None, norm=None, out=None):
    """`np.fft.rfftn`: the half-spectrum along the last of `axes`, full along the others."""
    return _nd("rfftn", "rfft", a, s, axes, norm, out)


def irfftn(a, s=None, axes=None, norm=None, out=None):
    """`np.fft.irfftn`: the inverse of `rfftn`, real values out."""
    return _nd("irfftn", "irfft", a, s, axes, norm, out)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`np.fft.fft2`: `fftn` over the last two axes by default."""
    return _nd("fft2", "fft", a, s, axes, norm, out)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`np.fft.ifft2`: `ifftn` over the last two axes by default."""
    return _nd("ifft2", "ifft", a, s, axes, norm, out)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`np.fft.rfft2`: `rfftn` over the last two axes by default."""
    return _nd("rfft2", "rfft", a, s, axes, norm, out)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """`np.fft.irfft2`: `irfftn` over the last two axes by default."""
    return _nd("irfft2", "irfft", a, s, axes, norm, out)


# -- helpers: shifts and frequencies ----------------------------------------------------------


def _shift(name: str, x, axes, sign: int):
    x = _array(x)
    shape = shape_of(x)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift = [sign * (d // 2) for d in shape]
    elif isinstance(axes, int | np.integer):
        shift = sign * (shape[_axis(name, axes, len(shape), "axes")] // 2)
    else:
        shift = [sign * (shape[_axis(name, ax, len(shape), "axes")] // 2) for ax in axes]
    return roll(x, shift, axes)


def fftshift(x, axes=None):
    """`np.fft.fftshift`: the zero-frequency bin moved to the middle (a roll)."""
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """`np.fft.ifftshift`: the inverse of `fftshift` (a roll the other way)."""
    return _shift("ifftshift", x, axes, -1)


def _freq_checks(name: str, n, device) -> None:
    if not isinstance(n, int | np.integer):
        raise ValueError(f"tracegrad.numpy.fft.{name}: n should be an integer, got {n!r}")
    if device not in (None, "cpu"):
        raise ValueError(
            f'tracegrad.numpy.fft.{name}: Device not understood. Only "cpu" is allowed, but '
            f"received: {device}"
        )


def fftfreq(n, d=1.0, device=None):
    """`np.fft.fftfreq`: the sample frequencies, NumPy's array. A traced spacing `d` gives
    a traced result, computed as NumPy does (`integers * (1.0 / (n * d))`)."""
    _freq_checks("fftfreq", n, device)
    if not isinstance(d, Tracer):
        return np.fft.fftfreq(n, d, device=device)
    half = (n - 1) // 2 + 1
    integers = np.concatenate([np.arange(0, half), np.arange(-(n // 2), 0)])
    return integers * (1.0 / (n * d))


def rfftfreq(n, d=1.0, device=None):
    """`np.fft.rfftfreq`: the sample frequencies of `rfft`'s bins, NumPy's array (traced for a
    traced `d`, as `fftfreq`)."""
    _freq_checks("rfftfreq", n, device)
    if not isinstance(d, Tracer):
        return np.fft.rfftfreq(n, d, device=device)
    return np.arange(0, n // 2 + 1) * (1.0 / (n * d))
