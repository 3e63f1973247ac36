"""PyTorch's reductions, scans and normalizations, with its signatures and semantics.

`dim` and `keepdim` (NumPy's `axis` and `keepdims` too); `std` and `var` are unbiased by default;
`max(dim)` and `min(dim)` return values and indices; integer sums accumulate in int64;
`softmax`, `log_softmax` and `logsumexp` shift by the (detached) maximum.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.primitives import broadcasting, reduction
from tracegrad.primitives import elementwise as ew
from tracegrad.torch.ops.arithmetic import (
    abs,
    add,
    div,
    exp,
    log,
    maximum,
    minimum,
    mul,
    pow,
    sqrt,
    sub,
    where,
)
from tracegrad.torch.ops.comparisons import eq, isfinite
from tracegrad.torch.ops.conventions import (
    _alias,
    _as_tensor,
    _dims,
    _named,
    _no_complex,
    _numpy_names,
)
from tracegrad.torch.ops.shapes import squeeze
from tracegrad.torch.tensor import Tensor

_values_indices = namedtuple("return_types", ["values", "indices"])


@_numpy_names
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - PyTorch's name
    x = _as_tensor(input)
    if dtype is not None:
        x = x._astype(dtype)
    elif x.dtype.kind in "bi" and x.dtype != np.int64 or x.dtype.kind == "u":
        x = x._astype(np.int64)
    axes = _dims(dim, x.ndim)
    out = broadcasting.sum(x, tuple(range(x.ndim)) if axes is None else axes, keepdim)
    return _named(out, "SumBackward0" if dim is None else "SumBackward1", (input,))


@_numpy_names
def mean(input, dim=None, keepdim=False, *, dtype=None):
    x = _as_tensor(input)
    if dtype is not None:
        x = x._astype(dtype)
    if x.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {x.dtype.name}"
        )
    axes = _dims(dim, x.ndim)
    axes = tuple(range(x.ndim)) if axes is None else axes
    if x._cell.value.size:
        out = broadcasting.mean(x, axes, keepdim)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):  # an empty mean is nan, quietly
            out = broadcasting.mean(x, axes, keepdim)
    return _named(out, "MeanBackward0" if dim is None else "MeanBackward1", (input,))


@_numpy_names
def prod(input, dim=None, keepdim=False, *, dtype=None):
    x = _as_tensor(input)
    if dtype is not None:
        x = x._astype(dtype)
    axes = _dims(dim, x.ndim)
    return tnp.prod(x, axis=axes, keepdims=keepdim)


@_numpy_names
def var(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    if unbiased is not None:
        correction = 1 if unbiased else 0
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    axes = tuple(range(x.ndim)) if axes is None else axes
    shape = x.shape
    n = math.prod([shape[a] for a in axes])  # (1 for no axes)
    centered = sub(x, mean(x, axes, keepdim=True))
    if x.dtype.kind == "c":  # |z - mean|^2, real, as PyTorch's (and NumPy's) variance
        re, im = ew.real(centered), ew.imag(centered)
        squares = add(mul(re, re), mul(im, im))
    else:
        squares = mul(centered, centered)
    total = broadcasting.sum(squares, axes, keepdim)
    return _named(div(total, builtins.max(n - correction, 0)), "VarBackward0", (input,))


@_numpy_names
def std(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    v = var(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased)
    # PyTorch's gradient where the deviation is 0 is 0 (sqrt's would be inf * 0 = nan)
    zero = eq(v.detach(), 0)
    out = where(zero, 0.0, sqrt(where(zero, 1.0, v)))
    return _named(out, "StdBackward0", (input,))


def _reduce_choose(which: str):
    full = reduction.max if which == "max" else reduction.min
    arg = reduction.argmax if which == "max" else reduction.argmin
    pair = maximum if which == "max" else minimum

    def f(input, dim=None, keepdim=False):
        if isinstance(dim, Tensor):  # torch.max(a, b) is maximum
            return pair(input, dim)
        x = _as_tensor(input)
        if dim is None:
            _no_complex(f"\"{which}_all\" not implemented for '{{}}'", x)
            if x.numel() == 0:
                raise RuntimeError(
                    f"{which}(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument."
                )
            # all-reduce: ties share the gradient evenly, as PyTorch's MaxBackward1
            return _named(full(x, tuple(range(x.ndim)), False), f"{which.capitalize()}Backward1")
        _no_complex(f"{which}(): does not support complex input", x, error=RuntimeError)
        (d,) = _dims(dim, x.ndim) or (None,)
        if d is None:  # a 0-d tensor: itself, at index 0
            values = _alias(x, f"{which.capitalize()}Backward0")
            return _values_indices(values, _as_tensor(np.zeros((), np.int64)))
        index = arg(x.detach(), d, True)
        values = tnp.take_along_axis(x, index, axis=d)
        if not keepdim and x.ndim:
            values = squeeze(values, d)
            index = squeeze(index, d)
        _named(values, f"{which.capitalize()}Backward0", (x,))
        values._base = None  # a new tensor in PyTorch, not a view: in-place on it is fine
        return _values_indices(values, _as_tensor(index))

    f.__name__ = which
    return _numpy_names(f)


max = _reduce_choose("max")  # noqa: A001 - PyTorch's name
min = _reduce_choose("min")  # noqa: A001 - PyTorch's name


def _extreme(reduce, name: str):
    """amax/amin: PyTorch's `dim=()` (the default) reduces every axis."""

    def f(input, dim=(), keepdim=False):
        x = _as_tensor(input)
        _no_complex(f"\"{name[1:]}_values_cpu\" not implemented for '{{}}'", x)
        axes = _dims(dim, x.ndim) if dim != () else tuple(range(x.ndim))
        return reduce(x, axes, keepdim)

    f.__name__ = f.__qualname__ = name
    return _numpy_names(f)


amax = _extreme(reduction.max, "amax")
amin = _extreme(reduction.min, "amin")


def _arg(np_fn, tnp_fn, name: str):
    """argmax/argmin: the flat index without `dim`, as PyTorch (never differentiable)."""

    def f(input, dim=None, keepdim=False):
        x = _as_tensor(input).detach()
        _no_complex(f"{name}(): does not support complex input", x, error=RuntimeError)
        axes = None if dim is None else _dims(dim, x.ndim)
        if not axes:
            return _as_tensor(np_fn(x.numpy()))
        return tnp_fn(x, axis=axes[0], keepdims=keepdim)

    f.__name__ = f.__qualname__ = name
    return _numpy_names(f)


argmax = _arg(np.argmax, tnp.argmax, "argmax")
argmin = _arg(np.argmin, tnp.argmin, "argmin")


@_numpy_names
def logsumexp(input, dim, keepdim=False):
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    # shifted by the largest real part, as PyTorch's (a complex number has no maximum)
    m = reduction.max(ew.real(x.detach()) if x.dtype.kind == "c" else x.detach(), axes, True)
    m = where(isfinite(m), m, 0.0)
    out = add(log(broadcasting.sum(exp(sub(x, m)), axes, True)), m)
    return _named(out if keepdim else squeeze(out, axes), "LogsumexpBackward0", (input,))


def _softmax_kernel(name: str, x, axes) -> str:
    """PyTorch's message for a complex softmax names its kernel: the last-axis one or not."""
    last = not axes or axes[0] == x.ndim - 1
    return f"\"{name}{'_lastdim' if last else ''}_kernel_impl\" not implemented for '{{}}'"


@_numpy_names
def softmax(input, dim, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    axes = _dims(dim, x.ndim)
    _no_complex(_softmax_kernel("softmax", x, axes), x)
    e = exp(sub(x, reduction.max(x.detach(), axes, True)))
    return _named(div(e, broadcasting.sum(e, axes, True)), "SoftmaxBackward0", (input,))


@_numpy_names
def log_softmax(input, dim, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    axes = _dims(dim, x.ndim)
    _no_complex(_softmax_kernel("log_softmax", x, axes), x)
    m = reduction.max(x.detach(), axes, True)
    shifted = sub(x, where(isfinite(m), m, 0.0))  # (x - max) - log(sum(exp(x - max)))
    out = sub(shifted, log(broadcasting.sum(exp(shifted), axes, True)))
    return _named(out, "LogSoftmaxBackward0", (input,))


def norm(input, p="fro", dim=None, keepdim=False):
    x = _as_tensor(input)
    if p in ("fro", 2, 2.0):
        # PyTorch's gradient at a zero vector is 0 (sqrt's would be inf * 0 = nan)
        if x.dtype.kind == "c":  # the modulus: a real norm, as PyTorch's
            re, im = ew.real(x), ew.imag(x)
            squares = sum(add(mul(re, re), mul(im, im)), dim, keepdim)
        else:
            squares = sum(mul(x, x), dim, keepdim)
        zero = eq(squares.detach(), 0)
        return _named(where(zero, 0.0, sqrt(where(zero, 1.0, squares))), "NormBackward1", (x,))
    if p in (1, 1.0):
        return sum(abs(x), dim, keepdim)
    if p == float("inf"):
        return amax(abs(x), dim if dim is not None else (), keepdim)
    # the root only of positive sums: its derivative at 0 is infinite (PyTorch gives 0)
    total = sum(pow(abs(x), p), dim, keepdim)
    zero = eq(total.detach(), 0)
    return where(zero, 0.0, pow(where(zero, 1.0, total), 1.0 / p))


@_numpy_names
def all(input, dim=None, keepdim=False):  # noqa: A001
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    return reduction.all(x, tuple(range(x.ndim)) if axes is None else axes, keepdim)


@_numpy_names
def any(input, dim=None, keepdim=False):  # noqa: A001
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    return reduction.any(x, tuple(range(x.ndim)) if axes is None else axes, keepdim)


@_numpy_names
def cumsum(input, dim, *, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    (d,) = _dims(dim, x.ndim) or (None,)
    if d is None:
        return _alias(x, "CumsumBackward0")
    return tnp.cumsum(x, axis=d)


@_numpy_names
def cumprod(input, dim, *, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    (d,) = _dims(dim, x.ndim) or (None,)
    if d is None:
        return _alias(x, "CumprodBackward0")
    return tnp.cumprod(x, axis=d)


__all__ = [
    "sum",
    "mean",
    "prod",
    "var",
    "std",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "logsumexp",
    "softmax",
    "log_softmax",
    "norm",
    "all",
    "any",
    "cumsum",
    "cumprod",
]
