"""More of PyTorch's reductions and data functions: `nansum`, `nanmean`, `quantile`,
`nanquantile`, `count_nonzero`, `bincount`, `bucketize`, `searchsorted`, `histc`, `diff`,
`gradient`, `trapezoid` (`trapz`), `cumulative_trapezoid`, `std_mean`, `var_mean`, `aminmax`,
`unique_consecutive`, `unravel_index`, `cov` and `corrcoef`.

The differentiable ones are PyTorch's own compositions (ATen's `quantile` sorts, gathers and
lerps; `trapezoid`, `cov` and `corrcoef` are written in ATen the way they are here) over the
shim's functions, so values, dtypes and gradients are PyTorch's; counts, bins and indices are
computed on the detached values.
"""

from __future__ import annotations

import builtins
import operator
import warnings
from collections import namedtuple

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.torch.ops.arithmetic import add, clamp, div, mul, sqrt, sub, where
from tracegrad.torch.ops.comparisons import isnan, logical_not
from tracegrad.torch.ops.conventions import _as_tensor, _dims, _named, _no_complex
from tracegrad.torch.ops.math_extra import logical_xor
from tracegrad.torch.ops.reductions import amax, amin, cumsum, mean, std, sum, var
from tracegrad.torch.ops.selection import sort
from tracegrad.torch.ops.shapes import cat, flatten, narrow, reshape, select, squeeze, unsqueeze
from tracegrad.torch.tensor import Tensor

__all__ = [
    "nansum",
    "nanmean",
    "quantile",
    "nanquantile",
    "count_nonzero",
    "bincount",
    "bucketize",
    "searchsorted",
    "histc",
    "diff",
    "gradient",
    "trapezoid",
    "trapz",
    "cumulative_trapezoid",
    "std_mean",
    "var_mean",
    "aminmax",
    "unique_consecutive",
    "unravel_index",
    "cov",
    "corrcoef",
]


def _value(x):
    return x.detach().numpy() if isinstance(x, Tensor) else np.asarray(x)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    x = _as_tensor(input)
    if x.dtype.kind == "c":
        raise RuntimeError("nansum does not support complex inputs")
    if x.dtype.kind == "f":
        x = where(isnan(x.detach()), 0.0, x)
    return _named(sum(x, dim, keepdim, dtype=dtype), "NansumBackward0", (input,))


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    x = _as_tensor(input)
    if x.dtype.kind not in "fc":
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{x.dtype.name}"
        )
    count = sum(logical_not(isnan(x.detach())), dim, keepdim)
    with np.errstate(invalid="ignore", divide="ignore"):  # nothing but nan: 0 / 0, quietly
        return div(nansum(x, dim, keepdim, dtype=dtype), count)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _lerp(start, end, weight):
    """ATen's lerp: from `start` for weights below 0.5, from `end` above."""
    small = _as_tensor(weight < 0.5)
    weight = _as_tensor(weight)
    return where(
        small, add(start, mul(weight, sub(end, start))), sub(end, mul(sub(end, start), 1 - weight))
    )


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    x = _as_tensor(input)
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if x.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != x.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qv = _value(q)
        if not np.all((qv >= 0) & (qv <= 1)):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        qv = np.asarray(q)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}"
        )
    scalar_q = qv.ndim == 0
    qv = qv.astype(x.dtype).reshape(-1)
    if dim is None:
        src, out_shape = flatten(x), ()
        kept = (1,) * x.ndim
    else:
        (d,) = _dims(dim, x.ndim) or (0,)
        src = tnp.moveaxis(x, d, -1) if x.ndim else reshape(x, (1,))
        out_shape = tuple(s for i, s in enumerate(x.shape) if i != d)
        kept = tuple(1 if i == d else s for i, s in enumerate(x.shape))
    ordered = sort(src, -1).values
    values = _value(ordered)
    n = values.shape[-1]
    nans = np.isnan(values)
    if ignore_nan:
        ranks = qv * (np.sum(~nans, -1, keepdims=True) - 1).astype(x.dtype)
        ranks = np.where(ranks < 0, 0, ranks).astype(x.dtype)
    else:
        ranks = np.where(nans.any(-1, keepdims=True), n - 1, qv * x.dtype.type(n - 1))
        ranks = ranks.astype(x.dtype)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    below = ranks.astype(np.int64)
    out = tnp.take_along_axis(ordered, _as_tensor(below), axis=-1)
    if interpolation in ("linear", "midpoint"):
        weights = np.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        above = tnp.take_along_axis(ordered, _as_tensor(np.ceil(ranks).astype(np.int64)), -1)
        out = _lerp(out, above, weights.astype(x.dtype))
    out = tnp.moveaxis(out, -1, 0)  # (q, ...)
    out = reshape(out, (len(qv), *(kept if keepdim else out_shape)))
    return out[0] if scalar_q else out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def count_nonzero(input, dim=None):
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    return _as_tensor(np.asarray(np.count_nonzero(_value(x), axis=axes), np.int64))


def bincount(input, weights=None, minlength=0):
    x = _as_tensor(input)
    values = _value(x)
    if x.ndim != 1 or x.dtype.kind not in "iub" or (values.size and values.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _as_tensor(np.bincount(values, minlength=minlength).astype(np.int64))
    w = _as_tensor(weights)
    if w.ndim != 1 or w.shape[0] != x.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dtype = np.float32 if w.dtype == np.float32 else np.float64
    counts = np.bincount(values, weights=_value(w).astype(dtype), minlength=minlength)
    return _as_tensor(counts.astype(dtype))


def _search(sequence, values, right):
    side = "right" if right else "left"
    if sequence.ndim <= 1:
        return np.searchsorted(sequence, values, side=side)
    lead = sequence.shape[:-1]
    out = np.empty(values.shape, np.int64)
    for index in np.ndindex(*lead):
        out[index] = np.searchsorted(sequence[index], values[index], side=side)
    return out


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    sequence = _value(sorted_sequence)
    if sorter is not None:
        sequence = np.take_along_axis(sequence, _value(sorter), -1)
    values = _value(input)
    if sequence.ndim > 1 and sequence.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(sequence.shape)} and input value tensor "
            f"{list(values.shape)}"
        )
    found = _search(sequence, values, right)
    return _as_tensor(np.asarray(found, np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    b = _as_tensor(boundaries)
    if b.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({b.ndim})")
    return searchsorted(b, input, out_int32=out_int32, right=right)


def histc(input, bins=100, min=0, max=0):  # noqa: A002 - PyTorch's names
    x = _as_tensor(input)
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{x.dtype.name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    values = _value(x).reshape(-1)
    lo, hi = x.dtype.type(min), x.dtype.type(max)
    if lo == hi and values.size:
        lo, hi = values.min(), values.max()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    inside = values[(values >= lo) & (values <= hi)]
    pos = ((inside - lo) * x.dtype.type(bins) / (hi - lo)).astype(np.int64)
    pos[pos == bins] = bins - 1
    return _as_tensor(np.bincount(pos, minlength=bins).astype(x.dtype))


def diff(input, n=1, dim=-1, prepend=None, append=None):
    x = _as_tensor(input)
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    (d,) = _dims(dim, x.ndim)
    parts = [_as_tensor(p) for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = cat(parts, d)
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        later, earlier = narrow(x, d, 1, length - 1), narrow(x, d, 0, length - 1)
        x = logical_xor(later, earlier) if x.dtype == np.bool_ else sub(later, earlier)
    return x


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """NumPy's `gradient` (second-order central differences, `edge_order` at the ends) with
    PyTorch's arguments: `spacing` a number, or one number or coordinate tensor per `dim`."""
    x = _as_tensor(input)
    dims = tuple(range(x.ndim)) if dim is None else _dims(dim, x.ndim)
    if isinstance(dim, int):
        dims = (dims[0],)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    for d in dims:
        if x.shape[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1"
            )
    if isinstance(spacing, list | tuple):
        steps = [s.detach().numpy() if isinstance(s, Tensor) else s for s in spacing]
        if len(steps) != len(dims):
            raise RuntimeError(
                "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                f"dim arguments to have the same length, but got a spacing argument of length "
                f"{len(steps)} and a dim argument of length {len(dims)}."
            )
    else:
        steps = [spacing] * len(dims)
    if x.dtype.kind in "biu":
        x = x._astype(np.float32)
    out = tnp.gradient(x, *steps, axis=dims, edge_order=edge_order)
    return tuple(out) if isinstance(out, list | tuple) else (out,)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    y = _as_tensor(y)
    (d,) = _dims(dim, y.ndim)
    length = y.shape[d]
    if x is not None:
        if dx is not None:
            raise TypeError("trapezoid() received an invalid combination of arguments")
        x = _as_tensor(x)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[d] = x.shape[0]
            x = reshape(x, tuple(shape))
            spacing = diff(x, dim=d)
        else:
            spacing = diff(x, dim=dim)
        if length == 0:
            return sum(mul(y, 0), d)
        pairs = add(narrow(y, d, 1, length - 1), narrow(y, d, 0, length - 1))
        return div(sum(mul(spacing, pairs), d), 2.0)
    dx = 1 if dx is None else dx
    if length == 0:
        return sum(mul(y, 0), d)
    ends = mul(add(select(y, d, 0), select(y, d, -1)), 0.5)
    return mul(sub(sum(y, d), ends), dx)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    y = _as_tensor(y)
    (d,) = _dims(dim, y.ndim)
    length = y.shape[d]
    if x is not None:
        x = _as_tensor(x)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[d] = x.shape[0]
            x = reshape(x, tuple(shape))
        spacing = diff(x, dim=d)
    else:
        spacing = 1 if dx is None else dx
    if length == 0:
        return mul(y, 0)
    pairs = add(narrow(y, d, 1, length - 1), narrow(y, d, 0, length - 1))
    return cumsum(mul(div(spacing, 2.0), pairs), d)


def _moments(spread, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):  # std_mean(input, unbiased)
        dim, unbiased = None, dim
    kwargs = {"keepdim": keepdim}
    if unbiased is not None:
        kwargs["unbiased"] = unbiased
    elif correction is not None:
        kwargs["correction"] = correction
    return spread(input, dim, **kwargs), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _moments(std, input, dim, unbiased, keepdim, correction)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _moments(var, input, dim, unbiased, keepdim, correction)


aminmax_result = namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):
    x = _as_tensor(input)
    _no_complex("\"aminmax_cpu\" not implemented for '{}'", x)
    if x.numel() == 0 and dim is None:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    if dim is None:
        low, high = amin(x, (), keepdim), amax(x, (), keepdim)
    else:
        low, high = amin(x, dim, keepdim), amax(x, dim, keepdim)
    return aminmax_result(low, high)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    x = _as_tensor(input)
    values = _value(x)
    if dim is None:
        values, axis = values.reshape(-1), 0
    else:
        (axis,) = _dims(dim, x.ndim)
    moved = np.moveaxis(values, axis, 0)
    length = moved.shape[0]
    if length:
        flat = moved.reshape(length, -1)
        change = np.concatenate([[True], np.any(flat[1:] != flat[:-1], axis=1)])
    else:
        change = np.zeros(0, bool)
    starts = np.flatnonzero(change)
    out = [_as_tensor(np.ascontiguousarray(np.moveaxis(moved[starts], 0, axis)))]
    if return_inverse:
        inverse = np.cumsum(change) - 1
        out.append(_as_tensor(inverse.reshape(x.shape if dim is None else -1).astype(np.int64)))
    if return_counts:
        out.append(_as_tensor(np.diff(np.append(starts, length)).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unravel_index(indices, shape):
    if isinstance(indices, Tensor) and indices.dtype.kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got " + indices.dtype.name)
    shape = (operator.index(shape),) if isinstance(shape, int) else tuple(shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    flat = np.asarray(_value(indices), np.int64)
    size = int(np.prod(shape))
    if np.any((flat < -size) | (flat >= size)):
        raise ValueError("'indices' must be in range [-" + f"{size}, {size - 1}]")
    found = np.unravel_index(np.where(flat < 0, flat + size, flat), shape)
    return tuple(_as_tensor(np.asarray(i, np.int64)) for i in found)


def cov(input, *, correction=1, fweights=None, aweights=None):
    x = _as_tensor(input)
    if x.ndim > 2:
        raise RuntimeError(
            f"cov(): expected input to have two or fewer dimensions but got an "
            f"input with {x.ndim} dimensions"
        )
    if x.ndim < 2:
        x = reshape(x, (1, -1))
    observations = x.shape[1]
    w = None
    if fweights is not None:
        w = _as_tensor(fweights)
    if aweights is not None:
        a = _as_tensor(aweights)
        w = a if w is None else mul(w, a)
    w_sum = sum(w) if w is not None else observations
    avg = div(sum(mul(x, w) if w is not None else x, 1), w_sum)
    if w is not None and correction != 0:
        factor = sum(mul(w, aweights)) / w_sum if aweights is not None else 1
        norm = sub(w_sum, mul(factor, correction))
    else:
        norm = sub(_as_tensor(np.asarray(w_sum)), correction) if w is None else w_sum
    if float(_value(norm)) <= 0:
        warnings.warn(
            "cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "number of observations.",
            UserWarning,
            stacklevel=2,
        )
        norm = mul(norm, 0)
    centered = sub(x, unsqueeze(avg, 1))
    weighted = mul(centered, w) if w is not None else centered
    other = weighted.conj() if weighted.dtype.kind == "c" else weighted
    products = tnp.matmul(centered, tnp.swapaxes(other, 0, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return squeeze(div(products, norm))


def corrcoef(input):
    c = cov(input)
    if c.ndim == 0:
        return div(c, c)
    d = tnp.diagonal(c)
    if d.dtype.kind == "c":
        d = d.real
    s = sqrt(d)
    c = div(c, unsqueeze(s, 1))
    c = div(c, unsqueeze(s, 0))
    if c.dtype.kind == "c":
        return c
    return clamp(c, -1, 1)
