"""Embeddings: `embedding` / `Embedding` (row lookup) and `embedding_bag` / `EmbeddingBag` (sums,
means or maxima of bags of rows), PyTorch's functions and layers.

A lookup is `index_select` on the weight, so its gradient is a scatter-add into the looked-up
rows. PyTorch's gradient variants keep the forward value exactly and only change the backward:
the `padding_idx` row gets no gradient (a `where` picking the detached row there) and
`scale_grad_by_freq` divides each row's gradient by its count in the batch
(`stop(out) + (out - stop(out)) * scale`, whose value is `stop(out)`). `max_norm` renormalises
the looked-up rows of the weight in place, before the lookup, as PyTorch's `embedding_renorm_`.
"""

from __future__ import annotations

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.grad_mode import no_grad
from tracegrad.torch.nn import init
from tracegrad.torch.nn.module import Module, Parameter
from tracegrad.torch.ops.conventions import _as_tensor, _named
from tracegrad.torch.tensor import Tensor

__all__ = ["Embedding", "EmbeddingBag", "embedding", "embedding_bag"]

_INDEX_TYPES = (np.dtype(np.int64), np.dtype(np.int32))
_TYPE_NAMES = {"int64": "Long", "int32": "Int"}  # as ATen lists them (`Long, Int`)


def _check_indices(indices: Tensor, where: str) -> None:
    if indices.dtype not in _INDEX_TYPES:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {indices.dtype.name} instead (while checking arguments "
            f"for {where})"
        )


def _padding_index(padding_idx, rows: int, message: str):
    """`padding_idx` as a row number (negative counts from the end), or None."""
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= rows:
        raise AssertionError(message)
    if padding_idx < 0:
        if padding_idx < -rows:
            raise AssertionError(message)
        padding_idx = rows + padding_idx
    return padding_idx


def _renorm_(weight: Tensor, indices: np.ndarray, max_norm: float, norm_type: float) -> None:
    """Rows of `weight` used by `indices` whose `norm_type`-norm exceeds `max_norm` are scaled
    to `max_norm / (norm + 1e-7)` of themselves, in place and outside the graph."""
    rows = np.unique(indices)
    if rows.size == 0:
        return
    w = np.array(weight._cell.value)
    used = w[rows]
    norms = (
        np.linalg.norm(used, ord=norm_type, axis=1)
        if norm_type != 2
        else np.sqrt(np.sum(used * used, axis=1))
    )
    big = norms > max_norm
    if not big.any():
        return
    scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
    w[rows[big]] = used[big] * scale[:, None]
    with no_grad():
        weight.copy_(Tensor._wrap(w))


def _scale_gradient(out: Tensor, scale: np.ndarray) -> Tensor:
    """`out` with the same value, whose gradient is multiplied by `scale` (per row)."""
    fixed = out.detach()
    factor = Tensor._wrap(scale.astype(out.dtype)[:, None])
    return ops.add(fixed, ops.mul(ops.sub(out, fixed), factor))


def _inverse_counts(indices: np.ndarray) -> np.ndarray:
    _, inverse, counts = np.unique(indices, return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse.reshape(-1)]


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
):
    """The rows of `weight` (num_embeddings, embedding_dim) at the integer `input`: shape
    `input.shape + (embedding_dim,)`."""
    w = _as_tensor(weight)
    indices = _as_tensor(input)
    padding_idx = _padding_index(
        padding_idx, w.shape[0], "Padding_idx must be within num_embeddings"
    )
    _check_indices(indices, "embedding")
    flat = np.asarray(indices._cell.value).reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= w.shape[0]):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_(w, flat, max_norm, norm_type)
    out = ops.index_select(w, 0, Tensor._wrap(flat.astype(np.int64)))
    if scale_grad_by_freq and flat.size:
        out = _scale_gradient(out, _inverse_counts(flat))
    if padding_idx is not None and (flat == padding_idx).any():
        keep = Tensor._wrap((flat != padding_idx)[:, None])
        out = ops.where(keep, out, out.detach())
    out = ops.reshape(out, (*indices.shape, w.shape[1]))
    return _named(out, "EmbeddingBackward0", (w, indices))


# -- bags -----------------------------------------------------------------------------------------


def _bags_2d(indices: Tensor, offsets, per_sample_weights):
    if offsets is not None:
        raise ValueError(
            "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
            f"fixed length sequences. However, found offsets of type {type(offsets)}"
        )
    n, length = indices.shape
    flat = np.asarray(indices._cell.value).reshape(-1)
    bounds = np.arange(n + 1) * length
    if per_sample_weights is not None:
        per_sample_weights = ops.reshape(per_sample_weights, (-1,))
    return flat, bounds, per_sample_weights


def _bags_1d(indices: Tensor, offsets, include_last_offset: bool):
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    offsets = _as_tensor(offsets)
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    _check_indices(offsets, "embedding_bag")
    flat = np.asarray(indices._cell.value)
    starts = np.asarray(offsets._cell.value).astype(np.int64)
    if starts.size and starts[0] != 0:
        raise RuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
            f"from position 0. However, got {starts[0]}"
        )
    if starts.size and starts[-1] > flat.size:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {flat.size} but got "
            f"offsets[-1] of {starts[-1]}"
        )
    bounds = starts if include_last_offset else np.append(starts, flat.size)
    return flat, bounds


def _bag_max(rows: Tensor, segment: np.ndarray, n_bags: int) -> Tensor:
    """Per-bag maxima of `rows` (one row per element, `segment` its bag), 0 for an empty bag:
    the rows padded into (bags, longest, dim) with -inf, then `max` over the bag axis (whose
    gradient goes to the one row that won, as PyTorch's)."""
    dim = rows.shape[1]
    counts = np.bincount(segment, minlength=n_bags)
    longest = max(int(counts.max()) if counts.size else 0, 1)
    position = np.full((n_bags, longest), rows.shape[0], np.int64)  # the -inf row
    rank = np.arange(segment.size) - np.repeat(np.cumsum(counts) - counts, counts)
    position[segment, rank] = np.arange(segment.size)
    padded = ops.cat([rows, Tensor._wrap(np.full((1, dim), -np.inf, rows.dtype))], 0)
    gathered = ops.reshape(
        ops.index_select(padded, 0, Tensor._wrap(position.reshape(-1))), (n_bags, longest, dim)
    )
    values = ops.max(gathered, 1).values
    return ops.where(Tensor._wrap((counts > 0)[:, None]), values, 0.0)


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights=None,
    include_last_offset: bool = False,
    padding_idx=None,
):
    """Sum, mean or max of the rows of `weight` in each bag. A 2D `input` is one bag per row;
    a 1D `input` is cut into bags at `offsets` (the last offset ends the last bag when
    `include_last_offset`). `per_sample_weights` (mode 'sum') weigh the rows; entries equal to
    `padding_idx` are left out (of the count too); an empty bag gives zeros."""
    indices, w = _as_tensor(input), _as_tensor(weight)
    if per_sample_weights is not None and indices.shape != per_sample_weights.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({indices.shape})"
        )
    if w.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {w.ndim}")
    if indices.ndim == 2:
        flat, bounds, per_sample_weights = _bags_2d(indices, offsets, per_sample_weights)
    elif indices.ndim == 1:
        flat, bounds = _bags_1d(indices, offsets, include_last_offset)
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {indices.ndim}"
        )
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    _check_indices(indices, "embedding_bag")
    if max_norm is not None:
        _renorm_(w, flat, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub."
        )
    rows_count = w.shape[0]
    if padding_idx is not None:
        if not -rows_count <= padding_idx < rows_count:
            raise RuntimeError(
                "padding_idx must be within the number of embeddings, "
                f"{-rows_count} through {rows_count - 1}, but got {padding_idx}"
            )
        padding_idx %= rows_count
    bad = np.flatnonzero((flat < 0) | (flat >= rows_count))
    if bad.size:
        raise RuntimeError(
            f"Index {bad[0]} of input takes value {flat[bad[0]]} which is not in the valid "
            f"range [0, {rows_count})"
        )
    n_bags = bounds.size - 1
    segment = np.repeat(np.arange(n_bags), np.diff(bounds))
    keep = np.arange(flat.size) < bounds[-1]  # elements after the last offset are in no bag
    if padding_idx is not None:
        keep &= flat != padding_idx
    kept = np.flatnonzero(keep)
    used, segment = flat[kept], segment[kept]
    rows = ops.index_select(w, 0, Tensor._wrap(used.astype(np.int64)))
    if scale_grad_by_freq and used.size:
        rows = _scale_gradient(rows, _inverse_counts(used))
    if mode == "max":
        out = _bag_max(rows, segment, n_bags)
    else:
        if per_sample_weights is not None:
            psw = ops.index_select(_as_tensor(per_sample_weights), 0, Tensor._wrap(kept))
            rows = ops.mul(rows, ops.unsqueeze(psw, 1))
        zeros = Tensor._wrap(np.zeros((n_bags, w.shape[1]), w.dtype))
        out = ops.index_add(zeros, 0, Tensor._wrap(segment.astype(np.int64)), rows)
        if mode == "mean":
            counts = np.maximum(np.bincount(segment, minlength=n_bags), 1)
            out = ops.div(out, Tensor._wrap(counts.astype(w.dtype)[:, None]))
    return _named(out, "EmbeddingBagBackward0", (w, indices, offsets, per_sample_weights))


# -- layers ---------------------------------------------------------------------------------------


def _zero_row_(weight: Tensor, row) -> None:
    """`weight[row] = 0` in place, outside the graph."""
    if row is None:
        return
    w = np.array(weight._cell.value)
    w[row] = 0
    with no_grad():
        weight.copy_(Tensor._wrap(w))


def _new_weight(num_embeddings: int, embedding_dim: int, _weight, device, dtype, requires_grad):
    _check_device(device)
    if _weight is None:
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        return Parameter(
            ops.empty((num_embeddings, embedding_dim), dtype=dtype), requires_grad=requires_grad
        ), True
    if list(_weight.shape) != [num_embeddings, embedding_dim]:
        raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
    return Parameter(_weight, requires_grad=requires_grad), False


class Embedding(Module):
    """A lookup table of `num_embeddings` rows of size `embedding_dim`, drawn from N(0, 1) (the
    `padding_idx` row zero)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx=None,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight=None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_index(
            padding_idx, num_embeddings, "Padding_idx must be within num_embeddings"
        )
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.weight, fresh = _new_weight(
            num_embeddings, embedding_dim, _weight, device, dtype, not _freeze
        )
        if fresh:
            self.reset_parameters()
        self.sparse = sparse

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        _zero_row_(self.weight, self.padding_idx)

    def forward(self, input):
        return embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze: bool = True,
        padding_idx=None,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An `Embedding` whose weight is `embeddings` (shared, not copied); frozen by default."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            _freeze=freeze,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
        )


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, without materialising the lookups'
    intermediate (batch, bag, dim) tensor for 'sum' and 'mean'."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight=None,
        include_last_offset: bool = False,
        padding_idx=None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _padding_index(
            padding_idx, num_embeddings, "padding_idx must be within num_embeddings"
        )
        self.weight, fresh = _new_weight(
            num_embeddings, embedding_dim, _weight, device, dtype, True
        )
        if fresh:
            self.reset_parameters()
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        _zero_row_(self.weight, self.padding_idx)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings!r}, {self.embedding_dim!r}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze: bool = True,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx=None,
    ) -> EmbeddingBag:
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(
            num_embeddings=rows,
            embedding_dim=cols,
            _weight=embeddings,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag
