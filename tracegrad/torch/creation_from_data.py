"""`torch.tensor(data)`: a new leaf tensor from data (numbers, arrays, tensors, or nested lists
of them), and the device check that every factory of the shim makes.

The conversion of the data to an array is `Tensor`'s own (`tensor._as_array`, which the
constructor uses too); here are the steps `torch.tensor` adds: a detached copy of a tensor that
requires grad, and the values of tensors nested in lists.
"""

from __future__ import annotations

from tracegrad.torch.device import check_device
from tracegrad.torch.tensor import Tensor


def tensor(data, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A new leaf tensor holding a copy of `data` (PyTorch's `torch.tensor`)."""
    _check_device(device)
    if isinstance(data, Tensor) and data._requires_grad:
        data = data._cell.value
    elif isinstance(data, list | tuple) and _holds_tensors(data):
        data = _nested_values(data)
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def _holds_tensors(data) -> bool:
    stack = [data]
    while stack:
        d = stack.pop()
        for x in d:
            if isinstance(x, Tensor):
                return True
            if isinstance(x, list | tuple):
                stack.append(x)
    return False


def _nested_values(data):
    if isinstance(data, Tensor):
        return data._cell.value
    if isinstance(data, list | tuple):
        return [_nested_values(x) for x in data]
    return data


def _check_device(device) -> None:
    """As PyTorch's CPU build: None is the default device, and only the CPU is available."""
    check_device(device)
