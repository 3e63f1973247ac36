"""Discrete Fourier transforms: three primitives, each NumPy's own pocketfft call.

(Named `fft.fft`, `fft.rfft`, `fft.irfft`, as the linear-algebra ones are `linalg.*`: a
primitive name is shared with users' own, who may well call theirs `fft`.)

`fft` (complex to complex, forward or inverse), `rfft` (real to the Hermitian half-spectrum)
and `irfft` (half-spectrum to real) take normalized params: `axes` (distinct, non-negative),
`s` (the length each axis is cropped or zero-padded to before the transform; for `irfft` the
output length along the last axis), and `norm` ("backward", "ortho" or "forward"). The
impl calls `np.fft.<name>` with one axis or `np.fft.<name>n` with several, the very function a
user's `np.fft` call reaches, so the bits are NumPy's. `tracegrad.numpy.fft` builds NumPy's
fourteen transforms on these three.

The transforms are linear, so the jvp is the same transform of the tangent. The vjp is the
transpose under JAX's pairing `Re(sum(a * b))` (jax/_src/lax/fft.py): a complex transform's
matrix is symmetric, so its transpose is the same transform; rfft's is an irfft of the
conjugate cotangent whose interior bins are halved (irfft counts each of them twice, once
for its Hermitian mirror), and irfft's is the conjugate of an rfft whose interior bins are
doubled. The `norm` scale moves with the swap backward <-> forward. Cropping and padding
transpose to padding and cropping.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_NOTHING, Primitive
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series
from tracegrad.primitives.axes import at
from tracegrad.primitives.shape import pad
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import linear_jvp, unary_batch

#: NumPy's normalizations (the `norm` param is one of them, never None)
NORMS = ("backward", "ortho", "forward")
#: the norm whose scale the opposite direction applies: backward <-> forward
SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _check(name: str, x: Aval, axes, s, norm) -> None:
    """Raise unless the params are normalized ones for `x` (the public functions normalize)."""
    ok = (
        type(axes) is tuple
        and type(s) is tuple
        and len(axes) == len(s) >= 1
        and len(set(axes)) == len(axes)
        and all(type(a) is int and 0 <= a < x.ndim for a in axes)
        and all(type(n) is int and n >= 1 for n in s)
    )
    if not ok:
        raise ValueError(
            f"{name}: axes={axes!r} and s={s!r} do not fit an array of shape {x.shape}; pass "
            "as many distinct non-negative axes as lengths >= 1 (tracegrad.numpy.fft."
            f"{name} normalizes NumPy's arguments)"
        )
    if type(norm) is not str or norm not in NORMS:
        raise ValueError(f'{name}: norm={norm!r}; pass "backward", "ortho" or "forward"')


def _resized(shape, axes, s) -> tuple[int, ...]:
    out = list(shape)
    for a, n in zip(axes, s):
        out[a] = n
    return tuple(out)


def _np_call(name: str, axes, s, norm) -> tuple:
    """NumPy's function and its keyword arguments: the 1-D one for one axis, else the n-D."""
    if len(axes) == 1:
        return getattr(np.fft, name), dict(n=s[0], axis=axes[0], norm=norm)
    return getattr(np.fft, name + "n"), dict(s=s, axes=axes, norm=norm)


def _np_text(name: str, x: str, axes, s, norm) -> str:
    if len(axes) == 1:
        return f"np.fft.{name}({x}, n={s[0]!r}, axis={axes[0]!r}, norm={norm!r})"
    return f"np.fft.{name}n({x}, s={s!r}, axes={axes!r}, norm={norm!r})"


def _fitted_back(bar, shape, axes):
    """The transpose of cropping or zero-padding each axis in `axes` to `bar`'s length: `bar`
    cropped where the input was shorter (padding's transpose), zero-padded where it was
    longer (cropping's)."""
    bar_shape = shape_of(bar)
    if any(bar_shape[a] > shape[a] for a in axes):
        bar = slice_static(
            bar, (0,) * len(shape), tuple(min(b, d) for b, d in zip(bar_shape, shape))
        )
    if any(bar_shape[a] < shape[a] for a in axes):
        widths = [(0, 0)] * len(shape)
        for a in axes:
            widths[a] = (0, max(shape[a] - bar_shape[a], 0))
        bar = pad(bar, widths, 0.0)
    return bar


def _as_cotangent_of(bar, x):
    """`bar` with `x`'s dtype: the real part for a real input, cast for float16 (whose
    transforms run in single precision)."""
    return ew.convert(bar, dtype_of(x))


def _half_weights(n: int, bins: int, axis: int, ndim: int, dtype) -> np.ndarray:
    """1 for the bins irfft counts once (zero frequency, and Nyquist for even n), 2 for the
    interior ones it counts twice, shaped to broadcast along `axis`."""
    w = np.full(bins, 2.0, dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.reshape((bins,) + (1,) * (ndim - 1 - axis))


def _real_of(dtype: np.dtype) -> np.dtype:
    return np.finfo(dtype).dtype if dtype.kind == "c" else dtype


def _axes_batch(fn):
    """The batching rule: the batch axis stays where it is and the transformed axes shift
    past it (one call on the whole batch, no transpose)."""

    @unary_batch
    def batch(x, dim, *, axes, **params):
        if dim is None:
            return fn(x, axes=axes, **params), None
        return fn(x, axes=tuple(at(a, dim) for a in axes), **params), dim

    return batch


# -- fft: complex to complex ------------------------------------------------------------------


def fft(x, *, axes, s, norm="backward", inverse=False):
    """`np.fft.fftn(x, s, axes, norm)` (`ifftn` if `inverse`), with normalized params."""
    return bind(fft_p, x, axes=tuple(axes), s=tuple(s), norm=norm, inverse=bool(inverse))


def _fft_shape(x: Aval, *, axes, s, norm, inverse):
    _check("ifft" if inverse else "fft", x, axes, s, norm)
    return Aval(_resized(x.shape, axes, s), np.result_type(x.dtype, 1j))


def _fft_impl(x, *, axes, s, norm, inverse):
    fn, kwargs = _np_call("ifft" if inverse else "fft", axes, s, norm)
    return fn(x, **kwargs)


def _fft_vjp(bar, x, *, out, axes, s, norm, inverse):
    if not carries_derivative(x):
        return (None,)
    # the DFT matrix (times its scale) is symmetric: its transpose is itself
    x_bar = fft(bar, axes=axes, s=tuple(shape_of(bar)[a] for a in axes), norm=norm, inverse=inverse)
    return (_as_cotangent_of(_fitted_back(x_bar, shape_of(x), axes), x),)


fft_p = Primitive(
    "fft.fft",
    impl=_fft_impl,
    shape=_fft_shape,
    jvp=linear_jvp(fft),
    vjp=_fft_vjp,
    batch=_axes_batch(fft),
    emit=lambda x, *, axes, s, norm, inverse: _np_text(
        "ifft" if inverse else "fft", x, axes, s, norm
    ),
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
    taylor=series.LINEAR,
)

# -- rfft: real to the half-spectrum ----------------------------------------------------------


def rfft(x, *, axes, s, norm="backward"):
    """`np.fft.rfftn(x, s, axes, norm)`: the half-spectrum along `axes[-1]`, with normalized
    params."""
    return bind(rfft_p, x, axes=tuple(axes), s=tuple(s), norm=norm)


def _rfft_shape(x: Aval, *, axes, s, norm):
    _check("rfft", x, axes, s, norm)
    if x.dtype.kind == "c":
        raise TypeError(
            f"rfft: the input must be real, got {x.dtype.name} (NumPy's rfft has no complex "
            "loop); use fft for complex input"
        )
    shape = _resized(x.shape, axes, s[:-1] + (s[-1] // 2 + 1,))
    return Aval(shape, np.result_type(x.dtype, 1j))


def _rfft_impl(x, *, axes, s, norm):
    fn, kwargs = _np_call("rfft", axes, s, norm)
    return fn(x, **kwargs)


def _rfft_vjp(bar, x, *, out, axes, s, norm):
    if not carries_derivative(x):
        return (None,)
    # x_bar = Re(sum_k bar_k e^{-2 pi i j k / n}) over the half-spectrum: irfft sums each
    # interior bin and its mirror (2 Re), so those bins enter halved, conjugated to turn the
    # inverse transform's e^{+...} into e^{-...}; irfft ignores the imaginary parts of the
    # bins it counts once, as Re does. Along the other axes conj(fft(b)) = ifft(conj(b)).
    last = axes[-1]
    bins = shape_of(bar)[last]
    w = _half_weights(s[-1], bins, last, len(shape_of(bar)), _real_of(dtype_of(bar)))
    weighted = ew.conjugate(bind(ew.multiply_p, bar, np.reciprocal(w)))
    x_bar = irfft(weighted, axes=axes, s=s, norm=SWAP[norm])
    return (_as_cotangent_of(_fitted_back(x_bar, shape_of(x), axes), x),)


rfft_p = Primitive(
    "fft.rfft",
    impl=_rfft_impl,
    shape=_rfft_shape,
    jvp=linear_jvp(rfft),
    vjp=_rfft_vjp,
    batch=_axes_batch(rfft),
    emit=lambda x, *, axes, s, norm: _np_text("rfft", x, axes, s, norm),
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
    taylor=series.LINEAR,
)

# -- irfft: the half-spectrum to real ---------------------------------------------------------


def irfft(x, *, axes, s, norm="backward"):
    """`np.fft.irfftn(x, s, axes, norm)`: `s[-1]` real outputs along `axes[-1]` from its
    first `s[-1] // 2 + 1` bins, with normalized params."""
    return bind(irfft_p, x, axes=tuple(axes), s=tuple(s), norm=norm)


def _irfft_shape(x: Aval, *, axes, s, norm):
    _check("irfft", x, axes, s, norm)
    # NumPy's irfft returns result_type(a.real.dtype, 1.0) (float16 stays float16); irfftn's
    # complex transforms along the other axes come first (a real input becomes complex)
    src = x.dtype if len(axes) == 1 else np.result_type(x.dtype, 1j)
    return Aval(_resized(x.shape, axes, s), np.result_type(_real_of(src), 1.0))


def _irfft_impl(x, *, axes, s, norm):
    fn, kwargs = _np_call("irfft", axes, s, norm)
    return fn(x, **kwargs)


def _irfft_vjp(bar, x, *, out, axes, s, norm):
    if not carries_derivative(x):
        return (None,)
    # irfft(y) = Re(sum_k w_k y_k e^{+2 pi i j k / n}) with w = 1 or 2 (see _half_weights), so
    # y_bar_k = w_k sum_j bar_j e^{+...} = w_k conj(rfft(bar))_k for a real bar; along the
    # other axes ifft(conj(b)) = conj(fft(b)) again.
    spectrum = rfft(bar, axes=axes, s=s, norm=SWAP[norm])
    last = axes[-1]
    bins = shape_of(spectrum)[last]
    w = _half_weights(s[-1], bins, last, len(shape_of(bar)), _real_of(dtype_of(spectrum)))
    y_bar = bind(ew.multiply_p, ew.conjugate(spectrum), w)
    return (_as_cotangent_of(_fitted_back(y_bar, shape_of(x), axes), x),)


irfft_p = Primitive(
    "fft.irfft",
    impl=_irfft_impl,
    shape=_irfft_shape,
    jvp=linear_jvp(irfft),
    vjp=_irfft_vjp,
    batch=_axes_batch(irfft),
    emit=lambda x, *, axes, s, norm: _np_text("irfft", x, axes, s, norm),
    vjp_reads=READS_NOTHING,
    layout=Layout.KEEPS_C,
    taylor=series.LINEAR,
)

PRIMITIVES = (fft_p, rfft_p, irfft_p)
