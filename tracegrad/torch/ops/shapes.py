"""PyTorch's shape functions.

Views (`reshape`, `transpose`, `permute`, `squeeze`, `expand` ...), joins and splits (`cat`,
`stack`, `chunk`, `split`, `unbind`), selection (`select`, `narrow`, `gather`), and copies and
conversions (`clone`, and `_to` behind `Tensor.to`). `repeat` tiles the whole tensor, as
PyTorch's does.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import views
from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.device import device
from tracegrad.torch.ops.conventions import _alias, _as_tensor, _dims, _named, _shape_args
from tracegrad.torch.ops.promotion import _cast, result_type
from tracegrad.torch.tensor import Tensor


def reshape(input, *shape_):
    x = _as_tensor(input)
    new = _shape_args(shape_)
    known = math.prod(d for d in new if d != -1)
    size = x.numel()
    if list(new).count(-1) > 1 or (
        known != size if -1 not in new else (known == 0 or size % known)
    ):
        raise RuntimeError(f"shape '{list(new)}' is invalid for input of size {size}")
    return _named(tnp.reshape(x, new), "ViewBackward0", (x,))


def view(input, *shape_):
    if len(shape_) == 1 and not isinstance(shape_[0], int | tuple | list):
        return input._astype(shape_[0])  # view(dtype) reinterprets in PyTorch; we convert
    return reshape(input, *shape_)


def view_as(input, other):
    return reshape(input, other.shape)


reshape_as = view_as


def flatten(input, start_dim=0, end_dim=-1):
    x = _as_tensor(input)
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    new = x.shape[:s] + (int(np.prod(x.shape[s : e + 1])),) + x.shape[e + 1 :]
    return reshape(x, new)


def t(input):
    x = _as_tensor(input)
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    if x.ndim < 2:
        return _alias(x, "TBackward0")
    return _named(views.transpose(x, (1, 0)), "TBackward0")


def transpose(input, dim0, dim1):
    x = _as_tensor(input)
    if x.ndim == 0:
        _dims(dim0, 0), _dims(dim1, 0)
        return _alias(x, "TransposeBackward0")
    axes = list(range(x.ndim))
    d0, d1 = _dims(dim0, x.ndim)[0], _dims(dim1, x.ndim)[0]
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return _named(views.transpose(x, tuple(axes)), "TransposeBackward0")


swapaxes = swapdims = transpose


def permute(input, *dims):
    x = _as_tensor(input)
    dims = _shape_args(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{x.ndim} is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(d % x.ndim for d in dims)
    return _named(views.transpose(x, dims), "PermuteBackward0")


def unsqueeze(input, dim):
    x = _as_tensor(input)
    d = dim % (x.ndim + 1)
    return tnp.expand_dims(x, d)


def squeeze(input, dim=None):
    x = _as_tensor(input)
    if dim is None:
        return tnp.squeeze(x)
    dims = _dims(dim, x.ndim)
    dims = tuple(d for d in dims if x.shape[d] == 1)
    if not dims:
        return _alias(x, "SqueezeBackward1")
    return _named(tnp.squeeze(x, axis=dims), "SqueezeBackward1", (x,))


def expand(input, *sizes):
    x = _as_tensor(input)
    sizes = _shape_args(sizes)
    lead = len(sizes) - x.ndim
    target = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    for i in range(x.ndim):
        have, want = x.shape[i], target[i + lead]
        if have != want and have != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({want}) must match the existing size "
                f"({have}) at non-singleton dimension {i + lead}.  Target sizes: "
                f"{list(target)}.  Tensor sizes: {list(x.shape)}"
            )
    return tnp.broadcast_to(x, target)


def expand_as(input, other):
    return expand(input, other.shape)


def repeat(input, *sizes):
    """PyTorch's repeat tiles the whole tensor (NumPy's tile)."""
    return tnp.tile(_as_tensor(input), _shape_args(sizes))


def flip(input, dims):
    x = _as_tensor(input)
    return tnp.flip(x, axis=_dims(dims, x.ndim))


def cat(tensors, dim=0):
    """ATen's cat: its checks and messages, and its legacy rule that a 1-D tensor of size 0
    joins any shape (it is skipped)."""
    tensors = [_as_tensor(x) for x in tensors]
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    dtype = result_type(*tensors)
    kept = [t for t in tensors if t.shape != (0,)]
    if not kept:
        return tnp.concatenate([_cast(x, dtype) for x in tensors])
    first = kept[0]
    d = _dims(dim, first.ndim)[0]
    for i, t in enumerate(tensors):
        if t.shape == (0,):
            continue
        if t.ndim != first.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {first.ndim} and {t.ndim}"
            )
        for k in range(first.ndim):
            if k != d and t.shape[k] != first.shape[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{first.shape[k]} but got size {t.shape[k]} for tensor number {i} in the "
                    "list."
                )
    empty = first.shape[:d] + (0,) + first.shape[d + 1 :]  # a skipped tensor, joined as this
    parts = [reshape(x, empty) if x.shape == (0,) else x for x in tensors]
    return tnp.concatenate([_cast(x, dtype) for x in parts], axis=d)


concat = concatenate = cat


def stack(tensors, dim=0):
    tensors = [_as_tensor(x) for x in tensors]
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != tensors[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} "
                f"at entry 0 and {list(t.shape)} at entry {i}"
            )
    dim = _dims(dim, tensors[0].ndim + 1)[0]
    dtype = result_type(*tensors)
    out = tnp.stack([_cast(x, dtype) for x in tensors], axis=dim)
    return _named(out, "StackBackward0", tensors)


def chunk(input, chunks, dim=0):
    x = _as_tensor(input)
    size = -(-x.shape[dim] // chunks)
    return split(x, size, dim)


def split(input, split_size_or_sections, dim=0):
    x = _as_tensor(input)
    n = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        bounds = list(range(split_size_or_sections, n, split_size_or_sections))
    else:
        bounds = list(np.cumsum(split_size_or_sections)[:-1])
    return tuple(tnp.split(x, bounds, axis=dim))


def unbind(input, dim=0):
    x = _as_tensor(input)
    return tuple(select(x, dim, i) for i in range(x.shape[dim]))


def select(input, dim, index):
    x = _as_tensor(input)
    key = (slice(None),) * (dim % x.ndim) + (index,)
    return _named(x[key], "SelectBackward0", (x,))


def narrow(input, dim, start, length):
    """ATen's narrow: `start` may count from the end; the window must fit (no clipping, as a
    slice would)."""
    x = _as_tensor(input)
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _dims(dim, x.ndim)[0]
    size = x.shape[d]
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:
        start += size
    if start > size - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    return x[key]


def gather(input, dim, index):
    return tnp.take_along_axis(_as_tensor(input), _as_tensor(index), axis=dim)


def index_select(input, dim, index):
    return _named(tnp.take(_as_tensor(input), _as_tensor(index), axis=dim), "IndexSelectBackward0")


def triu(input, diagonal=0):
    return _named(tnp.triu(_as_tensor(input), diagonal), "TriuBackward0")


def tril(input, diagonal=0):
    return _named(tnp.tril(_as_tensor(input), diagonal), "TrilBackward0")


def clone(input):
    out = bind(ew.positive_p, _as_tensor(input))  # a copy that keeps 0-d tensors 0-d
    return _named(out, "CloneBackward0")


def contiguous(input):
    """The tensor itself, or a copy of a view (PyTorch copies a non-contiguous one; the copy
    is not a view, so in-place updates of it are allowed)."""
    return clone(input) if input._base is not None else input


def _to(input, *args, copy=False, non_blocking=False, memory_format=None, **kwargs):
    """`Tensor.to(device, dtype)`, `to(dtype)`, `to(other)`: the tensor itself when nothing
    changes (and `copy` is False), as PyTorch's; a device other than the CPU is refused."""
    dtype = kwargs.pop("dtype", None)
    if kwargs.get("device") is not None:
        _check_device(kwargs.pop("device"))
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str | device):
            _check_device(a)
        elif a is not None:
            dtype = a
    if dtype is None or np.dtype(dtype) == input.dtype:
        return clone(input) if copy else input
    return input._astype(dtype)


# PyTorch's legacy tensor-type names of the CPU dtypes, as `Tensor.type()` gives them
_TYPE_NAMES = {
    np.dtype(np.float32): "FloatTensor",
    np.dtype(np.float64): "DoubleTensor",
    np.dtype(np.float16): "HalfTensor",
    np.dtype(np.uint8): "ByteTensor",
    np.dtype(np.int8): "CharTensor",
    np.dtype(np.int16): "ShortTensor",
    np.dtype(np.int32): "IntTensor",
    np.dtype(np.int64): "LongTensor",
    np.dtype(np.bool_): "BoolTensor",
    np.dtype(np.complex64): "ComplexFloatTensor",
    np.dtype(np.complex128): "ComplexDoubleTensor",
}
_TYPES_BY_NAME = {f"torch.{name}": dtype for dtype, name in _TYPE_NAMES.items()}


def _type(input, dtype=None, non_blocking=False, **kwargs):
    """`Tensor.type()`: the type's name (`'torch.FloatTensor'`); `type(dtype)` or
    `type('torch.DoubleTensor')`: the tensor cast as `to(dtype)` (itself if unchanged)."""
    dtype = kwargs.pop("dtype", dtype)
    if dtype is None:
        return f"torch.{_TYPE_NAMES[input.dtype]}"
    if isinstance(dtype, str):
        if dtype not in _TYPES_BY_NAME:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = _TYPES_BY_NAME[dtype]
    return _to(input, dtype)


__all__ = [
    "reshape",
    "view",
    "view_as",
    "reshape_as",
    "flatten",
    "t",
    "transpose",
    "swapaxes",
    "swapdims",
    "permute",
    "unsqueeze",
    "squeeze",
    "expand",
    "expand_as",
    "repeat",
    "flip",
    "cat",
    "concat",
    "concatenate",
    "stack",
    "chunk",
    "split",
    "unbind",
    "select",
    "narrow",
    "gather",
    "index_select",
    "triu",
    "tril",
    "clone",
    "contiguous",
]
