"""PyTorch's sorting and selection: sort, topk, kthvalue, median, mode, cummax, unique, nonzero.

Each chooses *which* entries to return from the detached values (NumPy, eagerly, with the tie
rules PyTorch's CPU kernels follow) and then reads them with one differentiable gather
(`take_along_axis`), so the gradient goes to the chosen entries, as PyTorch's index-based
backward formulas send it. The all-reduce `median()` shares it evenly among equal entries, as
PyTorch's. `unique`, `nonzero` and `argwhere` have data-dependent shapes and no derivative.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.primitives import broadcasting
from tracegrad.torch.function import Function
from tracegrad.torch.grad_mode import _enabled
from tracegrad.torch.ops.arithmetic import add, div, sub, where
from tracegrad.torch.ops.conventions import _alias, _as_tensor, _dims, _named, _no_complex
from tracegrad.torch.ops.promotion import _mismatch
from tracegrad.torch.ops.reductions import logsumexp
from tracegrad.torch.ops.shapes import expand, reshape, squeeze, unsqueeze
from tracegrad.torch.tensor import Tensor

# PyTorch's `torch.return_types.<name>`: indexable, unpackable, `.values` and `.indices`
sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
kthvalue_result = namedtuple("kthvalue", ["values", "indices"])
median_result = namedtuple("median", ["values", "indices"])
nanmedian_result = namedtuple("nanmedian", ["values", "indices"])
mode_result = namedtuple("mode", ["values", "indices"])
cummax_result = namedtuple("cummax", ["values", "indices"])
cummin_result = namedtuple("cummin", ["values", "indices"])


def _long(a) -> Tensor:
    return _as_tensor(np.asarray(a, np.int64))


def _dim(x: Tensor, dim) -> int | None:
    """`dim` range-checked and made non-negative; None for a 0-d tensor (nothing to choose)."""
    (d,) = _dims(dim, x.ndim) or (None,)
    return d


def _pick(x: Tensor, index: np.ndarray, d: int, name: str, keepdim=True) -> Tensor:
    """`x`'s entries at `index` along `d`, one gather: its vjp scatters to the chosen entries."""
    values = tnp.take_along_axis(x, _long(index), axis=d)
    if not keepdim:
        values = squeeze(values, d)
    _named(values, name, (x,))
    values._base = None  # a new tensor in PyTorch, not a view: in-place on it is fine
    return values


def _stable_order(a: np.ndarray, d: int, descending: bool) -> np.ndarray:
    """PyTorch's stable order (NaN the largest): equal entries keep their order either way.
    Descending is the ascending order of the reversed axis, reversed (NumPy has no stable
    descending sort, and negating fails for unsigned and bool)."""
    if not descending:
        return np.argsort(a, axis=d, kind="stable")
    n = a.shape[d]
    return n - 1 - np.flip(np.argsort(np.flip(a, d), axis=d, kind="stable"), d)


def _refuse_complex(x: Tensor, what: str) -> None:
    _no_complex(f" {what} does not support complex dtypes on CPU", x, error=RuntimeError)


def sort(input, dim=-1, descending=False, *, stable=None):
    """`torch.sort`, always stable: equal entries keep their order, as `stable=True` promises
    and PyTorch's CPU sort does without it too (`stable=` only changes the node's name)."""
    x = _as_tensor(input)
    _refuse_complex(x, "Sort")
    name = "SortBackward0" if stable is None else "SortBackward1"
    d = _dim(x, dim)
    if d is None:
        return sort_result(_alias(x, name), _long(0))
    index = _stable_order(x.detach().numpy(), d, descending)
    return sort_result(_pick(x, index, d, name), _long(index))


def argsort(input, dim=-1, descending=False, *, stable=False):
    """`sort`'s indices alone: int64, no derivative."""
    x = _as_tensor(input)
    _refuse_complex(x, "Sort")
    d = _dim(x, dim)
    if d is None:
        return _long(0)
    return _long(_stable_order(x.detach().numpy(), d, descending))


def msort(input):
    """`torch.msort`: sorted along the first dimension."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The `k` largest (smallest) along `dim`, sorted. Among equal values, the first in stable
    order (PyTorch documents no tie rule; its CPU partial sort can pick others). `sorted=False`
    returns them sorted too (PyTorch leaves that order unspecified)."""
    x = _as_tensor(input)
    _refuse_complex(x, "topk")
    d = _dim(x, dim)
    n = x.shape[d] if d is not None else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if d is None:
        return topk_result(_alias(x, "TopkBackward0"), _long(0))
    index = np.take(_stable_order(x.detach().numpy(), d, largest), np.arange(k), axis=d)
    return topk_result(_pick(x, index, d, "TopkBackward0"), _long(index))


def _nonempty(x: Tensor, d: int, fname: str) -> None:
    if x.shape[d] == 0:
        raise IndexError(f"{fname}(): Expected reduction dim {d} to have non-zero size.")


def _at_rank(x: Tensor, d: int, rank: np.ndarray, keepdim: bool, result, name: str):
    """(values, indices) of the entries of stable-sorted rank `rank` (per row) along `d`."""
    order = _stable_order(x.detach().numpy(), d, False)
    index = np.take_along_axis(order, np.expand_dims(rank, d), axis=d)
    values = _pick(x, index, d, name, keepdim)
    return result(values, _long(index if keepdim else np.squeeze(index, d)))


def kthvalue(input, k, dim=-1, keepdim=False):
    """The `k`-th smallest along `dim` (1-based); among equal values, the `k`-th in stable
    sorted order (PyTorch documents no tie rule; its CPU selection agreed where probed)."""
    x = _as_tensor(input)
    _no_complex("\"kthvalue_cpu\" not implemented for '{}'", x)
    d = _dim(x, dim)
    if d is None:
        if k != 1:
            raise RuntimeError("kthvalue(): selected number k out of range for dimension 0")
        return kthvalue_result(_alias(x, "KthvalueBackward0"), _long(0))
    _nonempty(x, d, "kthvalue")
    if not 1 <= k <= x.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    rank = np.full(np.delete(x.shape, d), k - 1)
    return _at_rank(x, d, rank, keepdim, kthvalue_result, "KthvalueBackward0")


def _median_dim(x: Tensor, dim, keepdim: bool, ignore_nan: bool):
    fname = "nanmedian" if ignore_nan else "median"
    result = nanmedian_result if ignore_nan else median_result
    name = f"{fname.capitalize()}Backward1"
    d = _dim(x, dim)
    if d is None:
        return result(_alias(x, name), _long(0))
    _nonempty(x, d, fname)
    a = x.detach().numpy()
    nan = np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)
    if ignore_nan:  # the lower median of the numbers (NaNs sort last); all NaN: the first
        rank = np.maximum((np.sum(~nan, axis=d) - 1) // 2, 0)
    else:  # a row with a NaN has the median NaN, at its first NaN (the first one sorted)
        count = a.shape[d]
        rank = np.where(nan.any(axis=d), count - np.sum(nan, axis=d), (count - 1) // 2)
    return _at_rank(x, d, rank, keepdim, result, name)


def _evenly(x: Tensor, value, name: str) -> Tensor:
    """PyTorch's all-reduce median: `value`, its gradient shared evenly by the entries equal to
    it (NaN entries when it is NaN). The value is kept exact: `value + (s - s)` with `s` the
    mean of the equal entries, whose sum of equal floats can round."""
    a = x.detach().numpy()
    mask = np.isnan(a) if np.isnan(value) else a == value
    picked = where(_as_tensor(mask), x, 0)
    s = div(broadcasting.sum(picked, tuple(range(x.ndim)), False), int(mask.sum()))
    if np.isfinite(value):
        s = add(_as_tensor(np.asarray(value, a.dtype)), sub(s, s.detach()))
    return _named(s, name, (x,))


def _median_all(x: Tensor, ignore_nan: bool) -> Tensor:
    fname = "nanmedian" if ignore_nan else "median"
    _no_complex("\"median_cpu\" not implemented for '{}'", x)
    a = x.detach().numpy().ravel()
    if ignore_nan and a.dtype.kind == "f":
        a = a[~np.isnan(a)]
    if a.size == 0:
        return _as_tensor(np.asarray(np.nan, x.dtype))
    if a.dtype.kind == "f" and np.isnan(a).any():
        value = np.asarray(np.nan, a.dtype)
    else:
        value = np.sort(a, kind="stable")[(a.size - 1) // 2]
    if x.dtype.kind != "f":
        return _as_tensor(np.asarray(value, x.dtype))
    return _evenly(x, value, f"{fname.capitalize()}Backward0")


def median(input, dim=None, keepdim=False):
    """Without `dim`, the lower median (NaN if any is NaN); with it, (values, indices)."""
    x = _as_tensor(input)
    if dim is None:
        return _median_all(x, False)
    _no_complex("\"median_out\" not implemented for '{}'", x)
    return _median_dim(x, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    """`median` of the entries that are not NaN (NaN where all are)."""
    x = _as_tensor(input)
    if dim is None:
        return _median_all(x, True)
    _no_complex("\"median_out\" not implemented for '{}'", x)
    return _median_dim(x, dim, keepdim, True)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along `dim`: the smallest of the most frequent, at its last
    occurrence, as PyTorch's CPU kernel returns them: a stable sort, then the first longest
    run, whose last entry has the largest original index."""
    x = _as_tensor(input)
    _no_complex("\"mode_cpu\" not implemented for '{}'", x)
    d = _dim(x, dim)
    if d is None:
        return mode_result(_alias(x, "ModeBackward0"), _long(0))
    _nonempty(x, d, "mode")
    a = np.moveaxis(x.detach().numpy(), d, -1)
    order = np.argsort(a, axis=-1, kind="stable")
    s = np.take_along_axis(a, order, axis=-1)
    n = a.shape[-1]
    position = np.broadcast_to(np.arange(n), s.shape)
    starts = np.ones(s.shape, bool)
    starts[..., 1:] = s[..., 1:] != s[..., :-1]
    run_start = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)
    ends = np.ones(s.shape, bool)
    ends[..., :-1] = starts[..., 1:]
    length = np.where(ends, position - run_start + 1, 0)
    best = np.argmax(length, axis=-1)[..., None]  # the first longest run: the smallest value
    index = np.moveaxis(np.take_along_axis(order, best, axis=-1), -1, d)
    values = _pick(x, index, d, "ModeBackward0", keepdim)
    return mode_result(values, _long(index if keepdim else np.squeeze(index, d)))


def _cumulative(which: str):
    """cummax/cummin: PyTorch's CPU scan takes entry i when it is NaN, or when nothing so far
    was NaN and it is >= (<=) the running extreme, so ties go to the last one, and a NaN holds
    the index of the latest NaN."""
    accumulate = np.maximum.accumulate if which == "max" else np.minimum.accumulate
    name = f"Cum{which}Backward0"
    result = cummax_result if which == "max" else cummin_result

    def f(input, dim):
        x = _as_tensor(input)
        _no_complex(f"\"cum{which}_cpu\" not implemented for '{{}}'", x)
        d = _dim(x, dim)
        if d is None:
            return result(_alias(x, name), _long(0))
        a = x.detach().numpy()
        if a.dtype.kind == "f":
            nan = np.isnan(a)
            bound = -np.inf if which == "max" else np.inf
            extreme = accumulate(np.where(nan, bound, a), axis=d)
            nan_before = np.cumsum(nan, axis=d) - nan > 0
        else:
            nan = nan_before = np.zeros(a.shape, bool)
            extreme = accumulate(a, axis=d)
        takes = nan | (~nan_before & (a == extreme))
        shape = [1] * a.ndim
        shape[d] = a.shape[d]
        position = np.arange(a.shape[d]).reshape(shape)
        index = np.maximum.accumulate(np.where(takes, position, 0), axis=d)
        return result(_pick(x, index, d, name), _long(index))

    f.__name__ = f.__qualname__ = f"cum{which}"
    return f


cummax = _cumulative("max")
cummin = _cumulative("min")


def logcumsumexp(input, dim):
    """log(cumsum(exp(x))) along `dim`, as the logsumexp of each prefix: every prefix is shifted
    by its own maximum, so neither tiny early terms nor large later ones lose digits, and the
    gradient is the prefix softmax, as PyTorch's. It costs n^2 per row of length n."""
    x = _as_tensor(input)
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{x.dtype.name}'")
    d = _dim(x, dim)
    if d is None:
        return _alias(x, "LogcumsumexpBackward0")
    n = x.shape[d]
    moved = tnp.moveaxis(x, d, -1)
    prefix = np.tril(np.ones((n, n), bool))  # row i keeps the entries j <= i
    rows = where(_as_tensor(prefix), unsqueeze(moved, -2), float("-inf"))
    out = tnp.moveaxis(logsumexp(rows, -1), -1, d)
    return _named(out, "LogcumsumexpBackward0", (x,))


def masked_select(input, mask):
    """The entries of `input` where `mask` (both broadcast) is True, as a 1-D tensor."""
    x = _as_tensor(input)
    m = _as_tensor(mask)
    if m.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    message = _mismatch(m, x)  # PyTorch broadcasts the mask first
    if message is not None:
        raise RuntimeError(message)
    shape = np.broadcast_shapes(x.shape, m.shape)
    flat = reshape(expand(x, shape) if x.shape != shape else x, -1)
    chosen = np.flatnonzero(np.broadcast_to(m.numpy(), shape))
    out = tnp.take(flat, _long(chosen), axis=0)
    return _named(out, "MaskedSelectBackward0", (x,))


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero entries: rows of an (n, ndim) int64 tensor, or one 1-D
    tensor per dimension (`as_tuple`; a 0-d input counts as 1-d)."""
    a = _as_tensor(input).detach().numpy()
    if as_tuple:
        return tuple(_long(i) for i in np.nonzero(np.atleast_1d(a)))
    return _long(np.argwhere(a))


def argwhere(input):
    return nonzero(input)


class _Unique2(Function):
    """The node PyTorch records for `unique` on a tensor that requires grad: its result
    requires grad too, but has no derivative."""

    @staticmethod
    def forward(ctx, x, values, message):
        ctx.message = message
        return _as_tensor(values)

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError(ctx.message)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (rows along `dim`), sorted (as PyTorch's CPU kernel returns them
    also for `sorted=False`), with the inverse indices and counts on request."""
    x = _as_tensor(input)
    _no_complex("\"unique\" not implemented for '{}'", x)
    a = x.detach().numpy()
    if dim is not None:
        d = _dim(x, dim)
        d = 0 if d is None else d
        values, inverse, counts = np.unique(
            a, return_inverse=True, return_counts=True, axis=d, equal_nan=False
        )
        inverse = inverse.reshape(-1)
        name, op = "UniqueDimBackward0", "unique_dim"
    else:
        values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(a.shape)
        name, op = "Unique2Backward0", "_unique2"
    values = np.asarray(values, a.dtype)
    if x.requires_grad and _enabled.get():
        message = f"the derivative for '{op}' is not implemented."
        out = _named(_Unique2.apply(x, values, message), name, (x,))
    else:
        out = _as_tensor(values)
    if not (return_inverse or return_counts):
        return out
    extra = ((_long(inverse),) if return_inverse else ()) + (
        (_long(counts),) if return_counts else ()
    )
    return (out, *extra)


__all__ = [
    "sort",
    "argsort",
    "msort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
    "cummax",
    "cummin",
    "logcumsumexp",
    "masked_select",
    "nonzero",
    "argwhere",
    "unique",
]
