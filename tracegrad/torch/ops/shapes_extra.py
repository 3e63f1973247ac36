"""More of PyTorch's shape functions: NumPy-style names (`moveaxis`, `fliplr`, `hstack`,
`tensor_split`, `atleast_2d`, `broadcast_to`, `ravel`, `tile`), `unflatten`,
`repeat_interleave`, the out-of-place scatters into slices (`select_scatter`, `slice_scatter`,
`diagonal_scatter`), `block_diag`, `cartesian_prod`, `combinations` and `meshgrid`.

All are compositions of the shim's shape functions and tracegrad's take, pad and concatenate,
so their derivatives are those primitives'. The scatters gather from the concatenation of
`input` and `src` (each output element taken from exactly one of them), so each input gets
the gradient of the elements it supplied and zero elsewhere, as PyTorch's.
"""

from __future__ import annotations

import builtins
import itertools
import warnings

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.torch.ops.conventions import _alias, _as_tensor, _dims, _named
from tracegrad.torch.ops.promotion import _cast, result_type
from tracegrad.torch.ops.shapes import (
    cat,
    clone,
    expand,
    flatten,
    flip,
    narrow,
    permute,
    repeat,
    reshape,
    stack,
)


def _dim(dim, ndim: int) -> int:
    return _dims(dim, ndim)[0] if ndim else 0


def movedim(input, source, destination):
    """`torch.movedim` (`moveaxis`): the dims `source` moved to `destination`."""
    x = _as_tensor(input)
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
            f"the same number of dims as destination ({dst} dims)"
        )
    s = [_dim(d, x.ndim) for d in src]
    d = [_dim(d, x.ndim) for d in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(d)) != len(d):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    if x.ndim == 0:
        return _alias(x, "AliasBackward0")
    order = [i for i in builtins.range(x.ndim) if i not in s]
    perm = [None] * x.ndim
    for a, b in zip(s, d, strict=True):
        perm[b] = a
    rest = iter(order)
    perm = [next(rest) if p is None else p for p in perm]
    return permute(x, perm)


moveaxis = movedim


def fliplr(input):
    x = _as_tensor(input)
    if x.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(x, 1)


def flipud(input):
    x = _as_tensor(input)
    if x.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(x, 0)


def _atleast(n: int, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        return tuple(_atleast(n, (t,)) for t in tensors[0])
    if len(tensors) != 1:
        return tuple(_atleast(n, (t,)) for t in tensors)
    x = _as_tensor(tensors[0])
    if x.ndim >= n:
        return x
    if n == 3 and x.ndim == 2:
        return reshape(x, (*x.shape, 1))
    if n == 3 and x.ndim == 1:
        return reshape(x, (1, x.shape[0], 1))
    return reshape(x, (1,) * (n - x.ndim) + x.shape)


def atleast_1d(*tensors):
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    return _atleast(3, tensors)


def _nonempty(name: str, tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    tensors = [atleast_1d(t) for t in _nonempty("hstack", tensors)]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat([atleast_2d(t) for t in _nonempty("vstack", tensors)], 0)


row_stack = vstack


def dstack(tensors):
    return cat([atleast_3d(t) for t in _nonempty("dstack", tensors)], 2)


def column_stack(tensors):
    tensors = [_as_tensor(t) for t in _nonempty("column_stack", tensors)]
    return cat([reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors], 1)


def tensor_split(input, indices_or_sections, dim=0):
    """`torch.tensor_split`: `n` nearly equal parts (the first `size % n` one longer), or
    the parts between the given indices."""
    x = _as_tensor(input)
    if x.ndim == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    d = _dim(dim, x.ndim)
    n = x.shape[d]
    sections = indices_or_sections
    if hasattr(sections, "ndim") and sections.ndim == 0:
        sections = int(sections.item())
    if isinstance(sections, int | np.integer):
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        size, extra = divmod(n, int(sections))
        bounds = list(itertools.accumulate(size + (i < extra) for i in builtins.range(sections)))
        starts = [0, *bounds[:-1]]
    else:
        if hasattr(sections, "tolist"):
            sections = sections.tolist()
        ends = [
            builtins.min(builtins.max(int(i) if i >= 0 else n + int(i), 0), n) for i in sections
        ]
        starts, bounds = [0, *ends], [*ends, n]
    return tuple(
        narrow(x, d, s, builtins.max(e - s, 0)) for s, e in zip(starts, bounds, strict=True)
    )


def _split_along(name: str, x, dim: int, least: int, indices_or_sections):
    x = _as_tensor(x)
    if x.ndim < least:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {least} dimension, but got a tensor "
            f"with {x.ndim} dimensions!"
        )
    if isinstance(indices_or_sections, int) and (
        indices_or_sections == 0 or x.shape[dim] % indices_or_sections
    ):
        raise RuntimeError(
            f"torch.{name} attempted to split along dimension {dim}, but the size of the "
            f"dimension {x.shape[dim]} is not divisible by the split_size {indices_or_sections}!"
        )
    return tensor_split(x, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    x = _as_tensor(input)
    return _split_along("hsplit", x, 1 if x.ndim >= 2 else 0, 1, indices_or_sections)


def vsplit(input, indices_or_sections):
    return _split_along("vsplit", input, 0, 2, indices_or_sections)


def dsplit(input, indices_or_sections):
    return _split_along("dsplit", input, 2, 3, indices_or_sections)


def broadcast_shapes(*shapes):
    """`torch.broadcast_shapes`: the shape the given shapes broadcast to (a tuple)."""
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    out = [1] * builtins.max((len(s) for s in shapes), default=0)
    for k, shape in enumerate(shapes):
        for i in builtins.range(1, len(shape) + 1):
            have, want = shape[-i], out[-i]
            if have == want or have == 1:
                continue
            if want != 1:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {have} at -{i}! Mismatching "
                    f"argument at index {k} had {shape}; but expected shape should be "
                    f"broadcastable to {out}"
                )
            out[-i] = have
    return tuple(out)


def broadcast_to(input, size):
    x, size = _as_tensor(input), tuple(size)
    if x.ndim > len(size):
        raise RuntimeError(
            f"expand({x.dtype.name}{{{list(x.shape)}}}, size={list(size)}): the number of sizes "
            f"provided ({len(size)}) must be greater or equal to the number of dimensions in the "
            f"tensor ({x.ndim})"
        )
    return expand(x, size)


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tensors[0]
    tensors = [_as_tensor(t) for t in tensors]
    ndim = builtins.max((t.ndim for t in tensors), default=0)
    out = [1] * ndim
    for t in tensors:
        for i in builtins.range(1, t.ndim + 1):
            if t.shape[-i] != 1 and out[-i] not in (1, t.shape[-i]):
                raise RuntimeError(
                    f"The size of tensor a ({out[-i]}) must match the size of tensor b "
                    f"({t.shape[-i]}) at non-singleton dimension {ndim - i}"
                )
            if t.shape[-i] != 1:
                out[-i] = t.shape[-i]
    return tuple(expand(t, out) for t in tensors)


def ravel(input):
    return reshape(input, -1)


def tile(input, dims):
    x = _as_tensor(input)
    dims = tuple(dims)
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


def unflatten(input, dim, sizes):
    x = _as_tensor(input)
    d = _dim(dim, x.ndim)
    sizes = list(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = x.shape[d] if x.ndim else 1
    known = int(np.prod([s for s in sizes if s != -1]))
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if (known != n) if -1 not in sizes else (known == 0 or n % known):
        raise RuntimeError(
            f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
            f"({n}) in the input tensor"
        )
    sizes = [n // known if s == -1 else s for s in sizes]
    return reshape(x, (*x.shape[:d], *sizes, *x.shape[d + 1 :]))


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """`torch.repeat_interleave`: each element (or slice along `dim`) `repeats` times; with
    only an int64 tensor of repeats, the indices 0, 1, ... each repeated that often."""
    if repeats is None:  # repeat_interleave(repeats)
        r = _as_tensor(input)
        if r.dtype.kind not in "iu":
            raise NotImplementedError(
                f"\"repeat_interleave_cpu\" not implemented for '{r.dtype.name}'"
            )
        counts = _counts(r, r.shape[0] if r.ndim else 1)
        return _as_tensor(np.repeat(np.arange(len(counts)), counts).astype(r.dtype))
    x = _as_tensor(input)
    if dim is None:
        x, d = flatten(x), 0
    else:
        d = _dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if isinstance(repeats, int | np.integer):
        counts = np.full(n, int(repeats))
        if repeats < 0:
            raise RuntimeError("repeats can not be negative")
    else:
        r = _as_tensor(repeats)
        counts = _counts(r, n, d)
    index = np.repeat(np.arange(n), counts)
    if output_size is not None and output_size != len(index):
        raise RuntimeError("allocated size does not match required size")
    if x.ndim == 0:
        x = reshape(x, 1)
    return _named(tnp.take(x, index, axis=d), "IndexSelectBackward0", (x,))


def _counts(r, n: int, d: int = 0) -> np.ndarray:
    counts = r.detach().numpy().reshape(-1)
    if r.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if counts.size == 1 and r.ndim == 0:
        counts = np.full(n, int(counts[0]))
    elif counts.size != n:
        raise RuntimeError(
            "repeats must have the same size as input along dim, but got "
            f"repeats.size(0) = {counts.size} and input.size({d}) = {n}"
        )
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    return counts.astype(np.int64)


def narrow_copy(input, dim, start, length):
    return clone(narrow(_as_tensor(input), dim, start, length))


# -- scatters into slices ------------------------------------------------------------------------


def _scatter_positions(input, src, positions: np.ndarray, name: str):
    """`input` with the elements at flat `positions` (in C order) replaced by `src`'s in
    order: a gather from the concatenation of both, flattened."""
    x, s = _as_tensor(input), _as_tensor(src)
    slice_shape = positions.shape
    if s.shape != slice_shape:
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(s.shape)}, slice size = {list(slice_shape)}"
        )
    s = _cast(s, x.dtype) if s.dtype != x.dtype else s
    both = cat([reshape(x, -1), reshape(s, -1)])
    index = np.arange(x.numel())
    index[positions.reshape(-1)] = x.numel() + np.arange(positions.size)
    out = reshape(tnp.take(both, index, axis=0), x.shape)
    return _named(out, name, (x, s))


def select_scatter(input, src, dim, index):
    x = _as_tensor(input)
    d = _dim(dim, x.ndim)
    grid = np.arange(x.numel()).reshape(x.shape)
    positions = np.take(grid, index, axis=d)
    return _scatter_positions(x, src, positions, "SelectScatterBackward0")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    x = _as_tensor(input)
    d = _dim(dim, x.ndim)
    grid = np.arange(x.numel()).reshape(x.shape)
    key = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_positions(x, src, grid[key], "SliceScatterBackward0")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    x = _as_tensor(input)
    d1, d2 = _dims(dim1, x.ndim)[0], _dims(dim2, x.ndim)[0]
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    grid = np.arange(x.numel()).reshape(x.shape)
    positions = np.diagonal(grid, offset, d1, d2)
    return _scatter_positions(x, src, positions, "DiagonalScatterBackward0")


# -- joins of several tensors --------------------------------------------------------------------


def block_diag(*tensors):
    """`torch.block_diag`: the tensors (0-d as 1x1, 1-d as one row) on the diagonal."""
    mats = []
    for i, t in enumerate(tensors):
        t = _as_tensor(t)
        if t.ndim > 2:
            raise RuntimeError(
                "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                f"{i} has {t.ndim} dimensions"
            )
        mats.append(
            reshape(t, (1, 1) if t.ndim == 0 else (1, t.shape[0]) if t.ndim == 1 else t.shape)
        )
    if not mats:
        return _as_tensor(np.zeros((1, 0), np.float32))
    dtype = result_type(*mats)
    cols = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        right = cols - left - m.shape[1]
        rows.append(tnp.pad(_cast(m, dtype), [(0, 0), (left, right)]))
        left += m.shape[1]
    return cat(rows, 0)


def _vectors(tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def meshgrid(*tensors, indexing=None):
    """`torch.meshgrid`: 'ij' (the default, with PyTorch's warning) or 'xy' grids."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tensors[0]
    tensors = [_as_tensor(t) for t in tensors]
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
            "argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("xy", "ij"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                + " ".join(f" {s}" for s in t.shape)
            )
    swap = indexing == "xy" and len(tensors) >= 2  # 'xy': the first two axes swapped
    order = list(tensors)
    if swap:
        order[0], order[1] = order[1], order[0]
    shape = tuple(t.numel() for t in order)
    grids = []
    for i, t in enumerate(order):
        view = [1] * len(order)
        view[i] = t.numel()
        grids.append(expand(reshape(t, view), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    tensors = [_as_tensor(t) for t in tensors]
    _vectors(tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, -1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    x = _as_tensor(input)
    _vectors([x])
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _as_tensor(np.zeros(0, x.dtype))
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = np.array(list(choose(builtins.range(x.shape[0]), r)), np.intp).reshape(-1, r)
    return tnp.take(x, index, axis=0)


__all__ = [
    "movedim",
    "moveaxis",
    "fliplr",
    "flipud",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "hstack",
    "vstack",
    "row_stack",
    "dstack",
    "column_stack",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "broadcast_shapes",
    "broadcast_to",
    "broadcast_tensors",
    "ravel",
    "tile",
    "unflatten",
    "repeat_interleave",
    "narrow_copy",
    "select_scatter",
    "slice_scatter",
    "diagonal_scatter",
    "block_diag",
    "meshgrid",
    "cartesian_prod",
    "combinations",
]
