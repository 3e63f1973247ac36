"""`tracegrad.scipy.signal`: SciPy's convolutions with SciPy's signatures, differentiable
(docs/scipy_signal.md), and HIPS autograd's `convolve` as `autograd_convolve`.

`convolve`, `correlate`, `fftconvolve`, `convolve2d` and `correlate2d` are primitives whose values
are SciPy's own calls with the arguments as given (`method='auto'` is passed through: SciPy
chooses, per call, as it would without tracegrad). `autograd_convolve` is written with
tracegrad's array operations (windows gathered from the padded operand and one einsum, the
algorithm autograd's as_strided view runs), so its derivatives are those operations' rules.
"""

from __future__ import annotations

import operator

import numpy as np

import tracegrad.numpy as tnp
from tracegrad.numpy._common import asarray_or_tracer, shape_of
from tracegrad.primitives import scipy_signal as ss


def _pair(in1, in2):
    return asarray_or_tracer(in1), asarray_or_tracer(in2)


def convolve(in1, in2, mode="full", method="auto"):
    """`scipy.signal.convolve`: the n-d convolution of `in1` and `in2` (same number of axes),
    `mode` 'full', 'same' (`in1`'s shape, centred) or 'valid' (one input at least as large as
    the other in every axis), `method` 'auto', 'direct' or 'fft'. Differentiable in both
    (complex too, JAX's convention); the rules are convolutions with this function."""
    return ss.convolve(*_pair(in1, in2), mode, method)


def correlate(in1, in2, mode="full", method="auto"):
    """`scipy.signal.correlate`: `convolve(in1, flip(conj(in2)))` as SciPy computes it.
    Differentiable in both (conjugate-linear in `in2`)."""
    return ss.correlate(*_pair(in1, in2), mode, method)


def fftconvolve(in1, in2, mode="full", axes=None):
    """`scipy.signal.fftconvolve`: the convolution over `axes` (default all) by FFTs; the other
    axes broadcast (equal or 1). Differentiable in both; the rules are fftconvolves."""
    a, b = _pair(in1, in2)
    ndim = len(shape_of(a))
    if axes is None:
        axes = tuple(range(ndim))
    else:
        axes = (axes,) if isinstance(axes, int | np.integer) else tuple(axes)
        if not axes:
            raise ValueError("scipy.signal.fftconvolve: when provided, axes cannot be empty")
        axes = tuple(operator.index(i) + ndim if i < 0 else operator.index(i) for i in axes)
        if len(set(axes)) != len(axes) or not all(0 <= i < ndim for i in axes):
            raise ValueError(
                f"scipy.signal.fftconvolve: axes {axes} must be distinct axes of an array with "
                f"{ndim} axes"
            )
    return ss.fftconvolve(a, b, mode, axes)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """`scipy.signal.convolve2d` of two 2-D arrays, every `boundary` ('fill', 'wrap', 'symm')
    and `fillvalue`. Differentiable in both: a boundary other than zeros is `in1` extended
    (np.pad's 'wrap', 'symmetric' or constant), whose rules are one-hot products."""
    return ss.convolve2d(*_pair(in1, in2), mode, boundary, _scalar(fillvalue))


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """`scipy.signal.correlate2d` of two 2-D arrays (its 'same' window is centred rounding up,
    as SciPy's). Derivatives as convolve2d's."""
    return ss.correlate2d(*_pair(in1, in2), mode, boundary, _scalar(fillvalue))


def _scalar(v):
    """fillvalue as a plain Python number (a param, written into generated code)."""
    v = np.asarray(v)
    if v.ndim != 0 or v.dtype.kind not in "biufc":
        raise ValueError(f"fillvalue must be a scalar number, got {v!r}")
    return v.item()


# -- HIPS autograd's convolve ---------------------------------------------------------------------


def _windows(b, a_shape, axes):
    """autograd's `as_strided` view of `b`: each convolved axis `ax_b` of `b` becomes `a`'s
    length there, and one new last axis per convolved pair walks the windows
    (`view[..., i, ..., j] = b[..., i + j, ...]`), gathered with `take`."""
    for ax_a, ax_b in zip(*axes):
        n, m = a_shape[ax_a], shape_of(b)[ax_b]
        idx = np.arange(n)[:, None] + np.arange(abs(m - n) + 1)[None, :]
        b = tnp.moveaxis(tnp.take(b, idx, axis=ax_b), ax_b + 1, -1)
    return b


def _tensordot(x, y, axes):
    """autograd's `einsum_tensordot`: contract `x`'s axes `axes[0]` with `y`'s `axes[1]`,
    output `x`'s free axes then `y`'s."""
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    xs = [next(letters) for _ in range(len(shape_of(x)))]
    ys = [next(letters) for _ in range(len(shape_of(y)))]
    for i, j in zip(*axes):
        ys[j] = xs[i]
    free = [c for c in xs if c not in ys] + [c for c in ys if c not in xs]
    return tnp.einsum(f"{''.join(xs)},{''.join(ys)}->{''.join(free)}", x, y)


def _pad(b, a_shape, axes, mode):
    widths = [(0, 0)] * len(shape_of(b))
    for ax_b, ax_a in zip(*axes):
        n = a_shape[ax_a] - 1
        widths[ax_b] = (n, n) if mode == "full" else (n - n // 2, n // 2)
    return tnp.pad(b, widths, mode="constant")


def autograd_convolve(A, B, axes=None, dot_axes=((), ()), mode="full"):  # noqa: N803
    """HIPS autograd's `autograd.scipy.signal.convolve(A, B, axes, dot_axes, mode)`: convolve
    `A`'s axes `axes[0]` with `B`'s `axes[1]` (default all), contract `dot_axes[0]` with
    `dot_axes[1]`, output `A`'s other axes, then `B`'s, then the convolved ones. A program
    written for autograd runs after replacing `autograd.scipy.signal.convolve` with this.
    Written with tracegrad's operations (pad, take, einsum), as autograd computes it."""
    if mode not in ("valid", "full", "same"):
        raise ValueError(
            f"autograd_convolve: mode {mode!r} undefined, it can be one of 'valid', 'full', "
            "and 'same'"
        )
    A, B = _pair(A, B)  # noqa: N806
    sa, sb = shape_of(A), shape_of(B)
    axes = [list(range(len(sa))), list(range(len(sa)))] if axes is None else list(axes)
    axes, dot_axes = [list(axes[0]), list(axes[1])], [list(dot_axes[0]), list(dot_axes[1])]
    if len(axes[0]) != len(axes[1]) or len(dot_axes[0]) != len(dot_axes[1]):
        raise ValueError(
            f"autograd_convolve: axes {axes} and dot_axes {dot_axes} must pair axes of A with "
            "as many axes of B"
        )
    if any(sb[j] < sa[i] for i, j in zip(*axes)):  # autograd's swap, and its tie breaker
        if mode == "valid" and not all(sb[j] <= sa[i] for i, j in zip(*axes)):
            raise ValueError(
                f"autograd_convolve: one array must be larger than the other along all "
                f"convolved dimensions; got {sa} and {sb} along {axes}"
            )
        if mode == "valid" or (mode == "full" and np.prod(sb) <= np.prod(sa)):
            i1 = len(sb) - len(dot_axes[1]) - len(axes[1])
            i2 = i1 + len(sa) - len(dot_axes[0]) - len(axes[0])
            order = list(range(i1, i2)) + list(range(i1)) + list(range(i2, i2 + len(axes[0])))
            out = autograd_convolve(B, A, axes[::-1], dot_axes[::-1], mode)
            return tnp.transpose(out, order)
    if mode == "same":  # autograd slides the original A over the original B, padded
        A, B, sa, sb = B, A, sb, sa  # noqa: N806
        axes, dot_axes = axes[::-1], dot_axes[::-1]
    if mode != "valid":
        B = _pad(B, sa, axes[::-1], mode)  # noqa: N806
    b_view = _windows(B, sa, axes)
    a_view = tnp.flip(A, axis=tuple(axes[0])) if axes[0] else A
    all_axes = [axes[i] + dot_axes[i] for i in (0, 1)]
    if mode != "same":
        return _tensordot(a_view, b_view, all_axes)
    i1 = len(shape_of(B)) - len(dot_axes[1]) - len(axes[1])
    i2 = i1 + len(axes[0])
    i3 = i2 + len(sa) - len(dot_axes[0]) - len(axes[0])
    order = list(range(i1)) + list(range(i2, i3)) + list(range(i1, i2))
    return tnp.transpose(_tensordot(b_view, a_view, all_axes[::-1]), order)


__all__ = [
    "autograd_convolve",
    "convolve",
    "convolve2d",
    "correlate",
    "correlate2d",
    "fftconvolve",
]
