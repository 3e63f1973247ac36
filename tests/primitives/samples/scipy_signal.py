"""SAMPLES rows for SciPy's convolutions (tracegrad/primitives/scipy_signal.py), present with
SciPy.

Convolutions are bilinear, so every input is in the smooth domain; the rows draw the shapes:
one to three axes (two for convolve2d / correlate2d), every mode, the second operand smaller,
larger, or (for 'full' and 'same') neither in every axis, so 'valid' sees SciPy's swap and
'same' both roundings of an even kernel's centre. convolve and correlate draw each method
('direct' is np.convolve in 1-D, SciPy's own loop otherwise) and sometimes a stack axis
(`batch_dims`, what vmap adds); fftconvolve draws its axes (in any order) and broadcasts
length-1 axes among the others. Complex operands everywhere, one of them real at times.
The params `mode`, `method` and `boundary` are codes (indices into `MODES`, `METHODS`,
`BOUNDARIES`); convolve2d and correlate2d draw every boundary and a fill value 0 or 1.5.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import FLOATS, Sample
from tracegrad.primitives import scipy_signal as sg

_MODES = st.sampled_from(["full", "same", "valid"])


def _sizes(data, ndim, mode):
    """Two shapes of `ndim` axes; for 'valid', the second at most (or at least) the first in
    every axis, as SciPy requires."""
    a = tuple(data.draw(st.integers(1, 4), label="a side") for _ in range(ndim))
    b = tuple(data.draw(st.integers(1, 4), label="b side") for _ in range(ndim))
    if mode == "valid":
        smaller = data.draw(st.booleans(), label="b the smaller")
        b = tuple(min(i, j) if smaller else max(i, j) for i, j in zip(a, b))
    return a, b


def _nd(data, dtype):
    mode = data.draw(_MODES, label="mode")
    a, b = _sizes(data, data.draw(st.integers(1, 3), label="ndim"), mode)
    stack = data.draw(st.sampled_from([(), (2,)]), label="stack")
    params = {
        "mode": sg.MODES.index(mode),
        "method": data.draw(st.integers(0, 2), label="method"),
        "batch_dims": len(stack),
    }
    return (S.array(data, stack + a, dtype), S.array(data, stack + b, dtype)), params


def _2d(data, dtype):
    mode = data.draw(_MODES, label="mode")
    a, b = _sizes(data, 2, mode)
    stack = data.draw(st.sampled_from([(), (2,)]), label="stack")
    params = {
        "mode": sg.MODES.index(mode),
        "boundary": data.draw(st.integers(0, 2), label="boundary"),
        "fillvalue": data.draw(st.sampled_from([0, 1.5]), label="fillvalue"),
        "batch_dims": len(stack),
    }
    return (S.array(data, stack + a, dtype), S.array(data, stack + b, dtype)), params


def _fft(data, dtype):
    mode = data.draw(_MODES, label="mode")
    ndim = data.draw(st.integers(1, 3), label="ndim")
    axes = data.draw(st.permutations(range(ndim)), label="axes order")
    axes = tuple(axes[: data.draw(st.integers(1, ndim), label="n axes")])
    a, b = list(_sizes(data, ndim, mode)[0]), list(_sizes(data, ndim, mode)[1])
    a_conv, b_conv = _sizes(data, len(axes), mode)
    for k, i in enumerate(axes):
        a[i], b[i] = a_conv[k], b_conv[k]
    for i in set(range(ndim)) - set(axes):  # broadcast: equal, or 1 in one operand
        b[i] = data.draw(st.sampled_from([a[i], 1]), label="b other side")
    params = {"mode": sg.MODES.index(mode), "axes": axes}
    return (S.array(data, tuple(a), dtype), S.array(data, tuple(b), dtype)), params


SAMPLES = {
    sg.convolve_p: Sample(_nd, complex=FLOATS, mixed=True),
    sg.correlate_p: Sample(_nd, complex=FLOATS, mixed=True),
    sg.fftconvolve_p: Sample(_fft, complex=FLOATS, mixed=True),
    sg.convolve2d_p: Sample(_2d, complex=FLOATS, mixed=True),
    sg.correlate2d_p: Sample(_2d, complex=FLOATS, mixed=True),
}
