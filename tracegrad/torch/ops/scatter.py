"""PyTorch's scatter and index-update family, and the gathers `take` and `take_along_dim`.

Each function is one write (or read) through tracegrad's scatter / gather primitives, with an
index of one integer array per axis (`_grid`). PyTorch reads index values eagerly, so they are
checked here with its messages and become constant NumPy arrays; the derivatives are the
primitives' (a "set" sends nothing back to what it overwrote, an "add" gathers the cotangent
for its updates, min/max split it among ties as PyTorch's amax/amin do). `scatter_reduce`
with "prod" multiplies in rounds in which no position repeats, so its derivative is exact with
repeated indices and zeros, as PyTorch's is.
"""

from __future__ import annotations

import warnings

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.primitives import scatter as _primitive
from tracegrad.torch.function import Function
from tracegrad.torch.grad_mode import _enabled
from tracegrad.torch.ops.conventions import _as_tensor, _dims, _named, _real_number
from tracegrad.torch.ops.shapes import clone, expand
from tracegrad.torch.tensor import Tensor

_INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))
_LONG = np.dtype(np.int64)
_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_UINT8_INDEX = "indexing with dtype uint8 is now deprecated, please use a dtype bool instead."
_DEPRECATED_REDUCE = (
    "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in "
    "a future PyTorch release. Use torch.scatter_reduce instead for more reduction options."
)


# -- shared pieces -----------------------------------------------------------------------------


def _dim(dim, ndim: int) -> int:
    """`dim` wrapped into [0, ndim) (a 0-d tensor counts as 1-d, as PyTorch's checks do)."""
    return (_dims(dim, ndim) or (0,))[0]


def _values(index) -> np.ndarray:
    return np.asarray(_as_tensor(index)._cell.value)


def _as_1d(t):
    """PyTorch indexes a 0-d tensor as one of shape (1,)."""
    return tnp.reshape(t, (1,)) if isinstance(t, Tensor) and t.ndim == 0 else t


def _restore(out, like: Tensor):
    return tnp.reshape(out, ()) if like.ndim == 0 else out


def _grid(shape, dim: int, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """An index of one array per axis selecting a block of `shape`: `idx` (broadcastable to
    `shape`) on axis `dim`, the positions themselves on the other axes."""
    n = len(shape)
    return tuple(
        idx if d == dim else np.arange(s).reshape((1,) * d + (s,) + (1,) * (n - d - 1))
        for d, s in enumerate(shape)
    )


def _write(x, updates, arrays, mode: str, unique: bool = False):
    """`x` with `updates` (x's dtype, the shape `arrays` broadcast to) written at `arrays`."""
    arrays = tuple(np.asarray(a, np.intp) for a in arrays)
    index = ("array",) * len(arrays)
    return _primitive.scatter(x, updates, *arrays, index=index, mode=mode, unique=unique)


def _first_bad(idx: np.ndarray, lo: int, hi: int):
    bad = (idx < lo) | (idx >= hi)
    return int(idx[bad][0]) if bad.any() else None


def _out_of_bounds(idx, size: int, dim: int, *, negative=False, error=RuntimeError, prefix=""):
    """Refuse an index outside the axis (or inside [-size, size) when `negative`), with
    PyTorch's message; returns the indices made non-negative."""
    v = _first_bad(idx, -size if negative else 0, size)
    if v is not None:
        raise error(f"{prefix}index {v} is out of bounds for dimension {dim} with size {size}")
    return idx % size if negative and size else idx


def _broadcast_shape(a, b) -> tuple[int, ...]:
    """PyTorch's `infer_size(a, b)`, with its message for sizes that do not broadcast."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i, (da, db) in enumerate(zip(a, b)):
        if da != db and da != 1 and db != 1:
            raise RuntimeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                f"non-singleton dimension {i}"
            )
    return tuple(db if da == 1 else da for da, db in zip(a, b))


def _constant(shape, value, dtype) -> np.ndarray:
    return np.full(shape, bool(value) if dtype.kind == "b" else _real_number(value, dtype), dtype)


class _NoDerivative(Function):
    """A node whose derivative PyTorch refuses (`scatter(..., reduce=...)`, and the "max" and
    "min" spellings of `scatter_reduce`): the forward value, and PyTorch's error when a
    backward pass reaches it."""

    @staticmethod
    def forward(ctx, *inputs, value, message):
        ctx.message = message
        return Tensor._wrap(value)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.message)


def _refused(inputs, value: np.ndarray, name: str, message: str) -> Tensor:
    if not (_enabled.get() and any(t._requires_grad for t in inputs)):
        return Tensor._wrap(value)
    return _named(_NoDerivative.apply(*inputs, value=value, message=message), name)


# -- scatter, scatter_add, scatter_reduce ----------------------------------------------------------


def _scatter_checks(x: Tensor, dim, index, src):
    """PyTorch's checks of a scatter along `dim`, in its order: `(dim, index values)`, the
    values None when the index is empty (PyTorch then returns the input unchanged)."""
    d = _dim(dim, x.ndim)
    index = _as_tensor(index)
    if index.dtype not in _INDEX_TYPES:
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src is not None and src.dtype != x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    idx = _values(index)
    if idx.size == 0:
        return d, None
    n = max(x.ndim, 1)
    if max(idx.ndim, 1) != n:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and 0 < src.ndim < n:  # PyTorch reads src.size(d) for every d first
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-src.ndim}, "
            f"{src.ndim - 1}], but got {src.ndim})"
        )
    if src is not None and max(src.ndim, 1) != n:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    idx = idx.reshape(idx.shape or (1,))
    xs = x.shape or (1,)
    larger = any(idx.shape[k] > xs[k] for k in range(n) if k != d)
    if src is not None:
        larger = larger or any(i > s for i, s in zip(idx.shape, src.shape or (1,)))
    if larger:
        also = f" and to be no larger size than src {list(src.shape)}" if src is not None else ""
        raise RuntimeError(
            f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} "
            f"apart from dimension {d}{also}"
        )
    return d, _out_of_bounds(idx, xs[d], d)


def _block(src: Tensor, shape):
    """The leading block of `src` that an index of `shape` reads (PyTorch ignores the rest)."""
    src = _as_1d(src)
    if src.shape == tuple(shape):
        return src
    return src[tuple(slice(0, s) for s in shape)]


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """`input` with `src` (or the number `value`) written along `dim` at `index`
    (`out[i][index[i][j]] = src[i][j]` for dim 1). `reduce` ("add", "multiply") is
    PyTorch's deprecated form, which it does not differentiate."""
    x = _as_tensor(input)
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError(
            "scatter() received an invalid combination of arguments - got (Tensor, int, "
            "Tensor), but expected one of:"
        )
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(value, Tensor):  # PyTorch's `value` is a Scalar: a tensor gives its number
        value = value.item()
    d, idx = _scatter_checks(x, dim, index, src)
    if idx is None:
        return clone(x)
    arrays = _grid(idx.shape, d, idx)
    if reduce is None:
        updates = (
            _block(src, idx.shape) if src is not None else _constant(idx.shape, value, x.dtype)
        )
        out = _restore(_write(_as_1d(x), updates, arrays, "set"), x)
        if src is None:
            return _named(out, "ScatterBackward1", (x,))
        return _named(out, "ScatterBackward0", (x, src))
    if src is not None:
        warnings.warn(_DEPRECATED_REDUCE, UserWarning, stacklevel=2)
        block = tuple(slice(0, k) for k in idx.shape)
        updates = src._cell.value.reshape(src.shape or (1,))[block]
    else:
        updates = _constant(idx.shape, value, x.dtype)
    plain = np.array(x._cell.value.reshape(x.shape or (1,)), copy=True)
    (np.add if reduce == "add" else np.multiply).at(plain, arrays, updates)
    inputs = (x,) if src is None else (x, src)
    message = "derivative for aten::scatter is not implemented"
    return _refused(inputs, plain.reshape(x.shape), "torch::autograd::NotImplemented", message)


def _src_tensor(src, name: str) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(
            f"{name}(): argument 'src' (position 4) must be Tensor, not {type(src).__name__}"
        )
    return src


def scatter_add(input, dim, index, src):
    """`input` with `src` added along `dim` at `index`; repeated indices accumulate."""
    x, src = _as_tensor(input), _src_tensor(src, "scatter_add")
    d, idx = _scatter_checks(x, dim, index, src)
    if idx is None:
        return clone(x)
    out = _write(_as_1d(x), _block(src, idx.shape), _grid(idx.shape, d, idx), "add")
    return _named(_restore(out, x), "ScatterAddBackward0", (x, src))


def _identity(reduce: str, dtype: np.dtype):
    """What a position holds before the reduction when `include_self=False`."""
    if reduce in ("sum", "mean", "prod"):
        return int(reduce == "prod")
    high = reduce == "amin"
    if dtype.kind in "iu":
        return np.iinfo(dtype).max if high else np.iinfo(dtype).min
    return high if dtype.kind == "b" else np.inf if high else -np.inf


def _multiply_rounds(x, updates, arrays):
    """`x` times `updates` at `arrays`, repeats included: in rounds, the k-th update of each
    position in round k, so that no round repeats a position and each is an exactly
    differentiable product (the multiply primitive's derivative needs unique positions)."""
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    flat = [np.broadcast_to(a, shape).ravel() for a in arrays]
    target = np.ravel_multi_index(flat, x.shape)
    order = np.argsort(target, kind="stable")
    ts = target[order]
    starts = np.r_[True, ts[1:] != ts[:-1]]
    positions = np.arange(ts.size)
    rank = np.empty_like(positions)
    rank[order] = positions - np.maximum.accumulate(np.where(starts, positions, 0))
    if rank.max() == 0:
        return _write(x, updates, arrays, "multiply", unique=True)
    flat_updates = tnp.reshape(updates, (-1,))
    for r in range(int(rank.max()) + 1):
        chosen = np.flatnonzero(rank == r)
        part = tnp.take(flat_updates, chosen)
        x = _write(x, part, tuple(f[chosen] for f in flat), "multiply", unique=True)
    return x


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """`input` with the values of `src` reduced (`sum`, `prod`, `mean`, `amax`, `amin`) into the
    positions `index` names along `dim`, the input's own value included or not. (With
    `include_self=False`, PyTorch's amax/amin also count an input equal to the result among
    the ties sharing the gradient, though it is excluded; here only the sources share it.)"""
    x, src = _as_tensor(input), _src_tensor(src, "scatter_reduce")
    if reduce in ("max", "min"):  # accepted by PyTorch, but not differentiated
        plain = scatter_reduce(x.detach(), dim, index, src.detach(), "a" + reduce,
                               include_self=include_self)  # fmt: skip
        message = (
            "Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got "
            f"{reduce}."
        )
        return _refused((x, src), plain._cell.value, "ScatterReduceBackward0", message)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    d, idx = _scatter_checks(x, dim, index, src)
    if idx is None:
        return clone(x)
    updates, arrays = _block(src, idx.shape), _grid(idx.shape, d, idx)
    base = _as_1d(x)
    if not include_self:
        fill = _constant(idx.shape, _identity(reduce, x.dtype), x.dtype)
        base = _write(base, fill, arrays, "set")
    if reduce == "prod":
        out = _multiply_rounds(base, updates, arrays)
    elif reduce in ("amax", "amin"):
        out = _write(base, updates, arrays, "max" if reduce == "amax" else "min")
    else:
        out = _write(base, updates, arrays, "add")
    if reduce == "mean":
        count = np.full(x.shape or (1,), int(bool(include_self)), x.dtype)
        np.add.at(count, tuple(np.asarray(a, np.intp) for a in arrays), 1)
        count[count == 0] = 1
        out = tnp.divide(out, count) if x.dtype.kind in "fc" else tnp.floor_divide(out, count)
    return _named(_restore(out, x), "ScatterReduceBackward0", (x, src))


# -- index_add, index_copy, index_fill ---------------------------------------------------------


def _along(x1, d: int, idx: np.ndarray):
    """The updates' shape and index for a write of whole slices at positions `idx` along `d`."""
    shape = x1.shape[:d] + (idx.size,) + x1.shape[d + 1 :]
    placed = idx.reshape((1,) * d + (-1,) + (1,) * (len(shape) - d - 1))
    return shape, _grid(shape, d, placed)


def _sliced(shape, d: int, drop=True) -> list[int]:
    return [s for k, s in enumerate(shape) if not (drop and k == d)]


def _slice_write(x, d: int, idx: np.ndarray, source, mode: str):
    """`x` with the slices of `source` written (`mode`) at positions `idx` along `d`."""
    x1 = _as_1d(x)
    shape, arrays = _along(x1, d, idx)
    updates = tnp.reshape(source, shape) if source.shape != shape else source
    return _restore(_write(x1, updates, arrays, mode), x)


def index_add(input, dim, index, source, *, alpha=1):
    """`input` with `alpha * source` added at the positions `index` names along `dim`;
    repeated positions accumulate."""
    x, source, index = _as_tensor(input), _as_tensor(source), _as_tensor(index)
    d = _dim(dim, x.ndim)
    if index.ndim > 1:
        raise IndexError(
            f"index_add_(): Index is supposed to be a vector, but got dim: {index.ndim} with "
            f"type: {index.dtype.name} and size: {list(index.shape)}"
        )
    if index.dtype not in _INDEX_TYPES:
        raise RuntimeError(
            f"index_add_(): Expected dtype int32/int64 for index but got: {index.dtype.name}"
        )
    if x.dtype != source.dtype:
        raise RuntimeError(
            f"index_add_(): self ({x.dtype.name}) and source ({source.dtype.name}) must have "
            "the same scalar type"
        )
    if not (d == 0 or d < source.ndim):
        raise RuntimeError(
            f"index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim "
            f"{source.ndim}"
        )
    n = index.numel()
    if source.ndim and n != source.shape[d]:
        raise RuntimeError(
            f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): "
            f"({source.shape[d]}), for dim: {d}"
        )
    whole = not (source.ndim and x.ndim)  # a 0-d side is compared whole
    if _sliced(x.shape, d, not whole) != _sliced(source.shape, d, not whole):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}"
        )
    idx = _out_of_bounds(_values(index).reshape(-1), (x.shape or (1,))[d], d)
    scaled = source
    if alpha != 1:
        factor = int(alpha) if x.dtype.kind in "iub" else alpha
        scaled = tnp.multiply(source, np.asarray(factor, x.dtype))
    return _named(_slice_write(x, d, idx, scaled, "add"), "IndexAddBackward0", (x, source))


def index_copy(input, dim, index, source):
    """`input` with the slices of `source` copied to the positions `index` names along `dim`."""
    x, source, index = _as_tensor(input), _as_tensor(source), _as_tensor(index)
    d = _dim(dim, x.ndim)
    if index.ndim >= 2:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    n = index.numel()
    if source.ndim == 0 and n != 1:
        raise IndexError(
            f"index_copy_(): When source is scalar, index should have one element (got {n})"
        )
    if source.ndim != x.ndim and source.ndim and x.ndim:
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their dimensionality "
            f"must match. Source dimensionality ({source.ndim}), destination dimensionality "
            f"({x.ndim})"
        )
    if index.dtype != _LONG:
        raise RuntimeError(
            f"index_copy_(): Expected a long tensor for index, but got {index.dtype.name}"
        )
    if x.dtype != source.dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{x.dtype.name} and (source) {source.dtype.name}"
        )
    mine, theirs = _sliced(x.shape, d), _sliced(source.shape, d)
    if mine != theirs:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. Destination "
            f"slice shape: {' '.join(map(str, mine))} at dimension {d} and source slice shape: "
            f"{' '.join(map(str, theirs))} at dimension 0."
        )
    if source.ndim and n != source.shape[d]:
        raise IndexError(
            f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
            f"({source.shape[d]})"
        )
    idx, size = _values(index).reshape(-1), (x.shape or (1,))[d]
    idx = _out_of_bounds(idx, size, d, error=IndexError, prefix="index_copy_(): ")
    return _named(_slice_write(x, d, idx, source, "set"), "IndexCopyBackward0", (x, source))


def index_fill(input, dim, index, value):
    """`input` with `value` (a number, or a 0-d tensor, which gets the gradient) written over
    the slices `index` names along `dim` (negative positions count from the end)."""
    x, index = _as_tensor(input), _as_tensor(index)
    is_tensor = isinstance(value, Tensor)
    if is_tensor and value.ndim != 0:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    if index.dtype != _LONG:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    d = _dim(dim, x.ndim)
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    number = value.item() if is_tensor else value
    if isinstance(number, complex) and x.dtype.kind != "c":
        raise RuntimeError(
            "index_fill_(): Converting complex Scalar to non-complex type is not supported"
        )
    size = (x.shape or (1,))[d]
    idx = _out_of_bounds(_values(index).reshape(-1), size, d, negative=True, error=IndexError)
    shape = _along(_as_1d(x), d, idx)[0]
    if is_tensor and value._requires_grad and x.dtype.kind in "fc":
        fill = tnp.broadcast_to(value._astype(x.dtype) if value.dtype != x.dtype else value, shape)
    else:
        fill = _constant(shape, number, x.dtype)
    out = _slice_write(x, d, idx, fill, "set")
    name, inputs = ("IndexFillBackward1", (x, value)) if is_tensor else ("IndexFillBackward0", (x,))
    return _named(out, name, inputs)


# -- index_put, masked_scatter -----------------------------------------------------------------


def _put_arrays(x: Tensor, indices) -> tuple[list[np.ndarray], int]:
    """The index arrays of `x[indices]` (masks as their nonzero positions, negative positions
    wrapped) and how many axes they consume, checked with PyTorch's messages."""
    for k, i in enumerate(indices):
        if not isinstance(i, Tensor):
            raise TypeError(
                f"expected Tensor as element {k} in argument 0, but got {type(i).__name__}"
            )
        if i.dtype.kind not in "iub" or (i.dtype.kind == "u" and i.dtype != np.uint8):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    used = sum(i.ndim if i.dtype.kind in "bu" else 1 for i in indices)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got {used})")
    arrays, axis = [], 0
    for i in indices:
        v = _values(i)
        if i.dtype.kind in "bu":
            if i.dtype.kind == "u":
                warnings.warn(_UINT8_INDEX, UserWarning, stacklevel=3)
            for j, s in enumerate(v.shape):
                if s != x.shape[axis + j]:
                    raise IndexError(
                        f"The shape of the mask {list(v.shape)} at index {j} does not match the "
                        f"shape of the indexed tensor {list(x.shape)} at index {axis + j}"
                    )
            arrays.extend(np.nonzero(v.astype(bool)))
            axis += v.ndim
        else:
            arrays.append(_out_of_bounds(v, x.shape[axis], axis, negative=True, error=IndexError))
            axis += 1
    return arrays, axis


def index_put(input, indices, values, accumulate=False):
    """`input` with `values` written (or added, with `accumulate`) at `input[indices]`, for a
    tuple of index tensors (integer or boolean), as `x[indices] = values` does."""
    x = _as_tensor(input)
    if not isinstance(values, Tensor):
        raise TypeError(
            "index_put(): argument 'values' (position 3) must be Tensor, not "
            f"{type(values).__name__}"
        )
    if values.dtype != x.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{x.dtype.name} for the destination and {values.dtype.name} for the source."
        )
    arrays, used = _put_arrays(x, tuple(indices))
    try:
        lead = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(str(list(a.shape)) for a in arrays)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}"
        ) from None
    rest = x.shape[used:]
    shape = lead + rest
    grid = [a.reshape(a.shape + (1,) * len(rest)) for a in arrays]
    grid += _grid(shape, -1, None)[len(lead) :]  # the positions on the axes not indexed
    try:
        fits = np.broadcast_shapes(values.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
            f"indexing result of shape {list(shape)}"
        )
    updates = tnp.broadcast_to(values, shape) if values.shape != shape else values
    out = _write(x, updates, grid, "add" if accumulate else "set")
    return _named(out, "IndexPutBackward0", (x, values))


def masked_scatter(input, mask, source):
    """`input` (broadcast with `mask`) with the first elements of `source`, in order, written
    where `mask` is True."""
    x, mask, source = _as_tensor(input), _as_tensor(mask), _as_tensor(source)
    shape = _broadcast_shape(mask.shape, x.shape)
    if x.dtype != source.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{x.dtype.name} and {source.dtype.name}"
        )
    if mask.dtype != np.bool_:
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            f"{mask.dtype.name}"
        )
    where = np.flatnonzero(np.broadcast_to(_values(mask), shape))
    if source.numel() < where.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    flat = tnp.reshape(expand(x, shape) if x.shape != shape else x, (-1,))
    updates = tnp.reshape(source, (-1,))[: where.size]  # PyTorch ignores the rest
    out = tnp.reshape(_write(flat, updates, (where,), "set"), shape)
    return _named(out, "MaskedScatterBackward0", (x, source))


# -- take, take_along_dim -----------------------------------------------------------------------


def take(input, index):
    """The elements of `input`, read as if flattened, at `index` (negative positions count
    from the end); the result has the index's shape."""
    x, index = _as_tensor(input), _as_tensor(index)
    if index.dtype != _LONG:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.name}")
    idx, n = _values(index), x.numel()
    if n == 0 and idx.size:
        raise IndexError("take(): tried to take from an empty tensor")
    v = _first_bad(idx, -n, n)
    if v is not None:
        raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} elements.")
    out = tnp.take(tnp.reshape(x, (-1,)), idx % n if n else idx)
    return _named(out, "TakeBackward0", (x,))


def take_along_dim(input, indices, dim=None):
    """`input` read along `dim` at `indices` (broadcast against each other on the other axes);
    with `dim=None`, both flattened. Along a `dim`, PyTorch 2.13 wraps positions modulo the
    axis length (out-of-range ones included); flattened, it refuses them."""
    x, indices = _as_tensor(input), _as_tensor(indices)
    if indices.dtype != _LONG:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be int64 but got {indices.dtype.name}"
        )
    idx = _values(indices)
    if dim is None:
        flat = tnp.reshape(x, (-1,))
        idx = _out_of_bounds(idx.reshape(-1), x.numel(), 0)
        return _named(tnp.take_along_axis(flat, idx, axis=0), "GatherBackward0")
    if x.ndim != indices.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {x.ndim} dimensions for input, and {indices.ndim} dimensions "
            "for indices"
        )
    d = _dim(dim, x.ndim)
    x1, idx = _as_1d(x), idx.reshape(idx.shape or (1,))

    def along(shape, size):  # `shape` with `size` on axis d
        return shape[:d] + (size,) + shape[d + 1 :]

    idx = np.broadcast_to(idx, _broadcast_shape(along(x1.shape, idx.shape[d]), idx.shape))
    target = _broadcast_shape(along(idx.shape, x1.shape[d]), x1.shape)
    xb = expand(x1, target) if x1.shape != target else x1
    out = tnp.take_along_axis(xb, idx % x1.shape[d] if x1.shape[d] else idx, axis=d)
    return _named(_restore(out, x), "GatherBackward0")


__all__ = """scatter scatter_add scatter_reduce index_add index_copy index_fill index_put
masked_scatter take take_along_dim""".split()
