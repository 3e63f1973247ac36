"""`Tensor.__getitem__` and `Tensor.__setitem__`.

Assignment is functional: `x[index] = value` rebinds `x` to a new value, recorded for autograd
(as the vjp of indexing, which places `value` where `x[index]` reads) when `x` or `value`
requires grad.
"""

from __future__ import annotations

import builtins

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.torch.engine import grad as _grad
from tracegrad.torch.grad_mode import _enabled
from tracegrad.torch.ops.arithmetic import add, where
from tracegrad.torch.ops.conventions import _as_tensor, _named, _real_number
from tracegrad.torch.ops.creation import zeros
from tracegrad.torch.ops.inplace import rebind
from tracegrad.torch.ops.shapes import expand, reshape
from tracegrad.torch.tensor import VIEW_OF_LEAF_IN_PLACE, Tensor


def _getitem(self, index):
    out = tnp.getitem(self, index)
    if isinstance(index, int) or (
        isinstance(index, tuple)
        and builtins.all(isinstance(i, int | slice) for i in index)
        and builtins.any(isinstance(i, int) for i in index)
    ):
        _named(out, "SelectBackward0", (self,))
    return out


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return builtins.all(
        i is None or i is Ellipsis or isinstance(i, int | slice) and not isinstance(i, bool)
        for i in items
    )


def _setitem(self, index, value):
    """`x[index] = value`, as a new value for `x` (functional), recorded when needed."""
    basic = _is_basic(index)
    if basic and _enabled.get() and self._requires_grad and self._grad_fn is None:
        raise RuntimeError(VIEW_OF_LEAF_IN_PLACE)
    self._check_inplace()
    target = np.empty(self.shape, bool)[tnp_index(index)].shape
    vshape = value.shape if isinstance(value, Tensor) else np.shape(value)
    try:
        np.broadcast_shapes(vshape, target)
        if len(vshape) > len(target) and builtins.any(
            d != 1 for d in vshape[: len(vshape) - len(target)]
        ):
            raise ValueError
    except ValueError:
        raise RuntimeError(_expand_message(vshape, target)) from None
    old = self._snapshot()
    if not isinstance(value, Tensor):
        value = np.asarray(_real_number(value, self.dtype), dtype=self.dtype)
    elif value.dtype != self.dtype:
        value = value._astype(self.dtype)
    records = old._requires_grad or (isinstance(value, Tensor) and value._requires_grad)
    if not (records and _enabled.get()):
        arr = old._cell.value.copy()
        arr[tnp_index(index)] = value._cell.value if isinstance(value, Tensor) else value
        return rebind(self, Tensor._wrap(arr))
    keep = np.ones(self.shape, bool)
    keep[tnp_index(index)] = False
    # the transpose of indexing places `value` where `x[index]` reads: a vjp of getitem
    z = zeros(self.shape, dtype=self.dtype, requires_grad=True)
    picked = z[index]
    value = _as_tensor(value)
    if value.ndim > picked.ndim:
        value = reshape(value, picked.shape)
    placed = _grad(picked, z, grad_outputs=expand(value, picked.shape), create_graph=True)[0]
    name = "torch::autograd::CopySlices" if basic else "IndexPutBackward0"
    return rebind(self, _named(add(where(keep, old, 0), placed), name, (old, value)))


def _expand_message(vshape, target) -> str:
    return (
        f"The expanded size of the tensor ({target[-1] if target else 1}) must match the "
        f"existing size ({vshape[-1] if vshape else 1}) at non-singleton dimension "
        f"{builtins.max(len(target) - 1, 0)}.  Target sizes: {list(target)}.  "
        f"Tensor sizes: {list(vshape)}"
    )


def tnp_index(index):
    if isinstance(index, Tensor):
        return index.numpy()
    if isinstance(index, tuple):
        return tuple(i.numpy() if isinstance(i, Tensor) else i for i in index)
    return index
