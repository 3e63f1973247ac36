"""PyTorch's tensor factories and the functions of its global random stream.

`zeros`, `ones`, `full`, `arange`, `linspace`, `eye` and their `*_like` forms, plus
`as_tensor`, `from_numpy`, `is_tensor` and `numel` (the random factories are `ops.random`'s).
The global stream is `tracegrad.torch.generator.default_generator`, torch's CPU generator:
`manual_seed`, `seed`, `initial_seed`, `get_rng_state` and `set_rng_state` act on it, as
torch's do, so after the same `manual_seed` the samplers draw PyTorch's numbers. `_rng` is
NumPy's samplers on that same twister, for the draws whose ATen kernels are not reproduced
(same seed, same numbers, not PyTorch's).
"""

from __future__ import annotations

import builtins

import numpy as np

from tracegrad.torch.creation_from_data import _check_device, tensor
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.generator import Generator, default_generator
from tracegrad.torch.ops.conventions import _real_number, _shape_args
from tracegrad.torch.ops.promotion import result_type
from tracegrad.torch.tensor import _FACTORY_FLAG, Tensor

_rng = default_generator._numpy()


def manual_seed(seed) -> Generator:
    """Seeds the global stream (`default_generator`) with `seed`, as `torch.manual_seed`:
    the samplers then draw PyTorch's numbers for that seed. Returns the generator."""
    return default_generator.manual_seed(int(seed))


def seed() -> int:
    """Seeds the global stream from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the global stream was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The global stream's state, torch's uint8 tensor (`Generator.get_state`)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restores the global stream to a state from `get_rng_state` (this library's or torch's)."""
    default_generator.set_state(new_state)


def _bernoulli_mask(shape, p: float) -> np.ndarray:
    """ATen's `bernoulli_(p)` of a tensor of `shape` on the global stream, as booleans: what
    dropout keeps (p = 1 - the dropout probability)."""
    return default_generator._bernoulli(int(np.prod(shape)), p).reshape(shape)


def _factory(values, dtype, requires_grad) -> Tensor:
    t = Tensor._wrap(values if dtype is None else values.astype(dtype, copy=False))
    if requires_grad:
        t._set_requires_grad(True, _FACTORY_FLAG)
    return t


def _float_dtype(dtype):
    return get_default_dtype() if dtype is None else np.dtype(dtype)


def zeros(*size, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    return _factory(np.zeros(_shape_args(size), _float_dtype(dtype)), None, requires_grad)


def ones(*size, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    return _factory(np.ones(_shape_args(size), _float_dtype(dtype)), None, requires_grad)


def empty(*size, dtype=None, requires_grad=False, device=None):
    return zeros(*size, dtype=dtype, requires_grad=requires_grad, device=device)


def full(size, fill_value, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    if isinstance(fill_value, Tensor):  # torch takes a 0-d tensor without grad as its number
        if fill_value._requires_grad or fill_value.ndim != 0:
            raise TypeError("full(): argument 'fill_value' (position 2) must be Number, not Tensor")
        fill_value = fill_value.item()
    if dtype is None:
        dtype = result_type(fill_value) if not isinstance(fill_value, bool) else np.bool_
    fill_value = _real_number(fill_value, dtype)
    return _factory(np.full(tuple(size), fill_value, dtype), None, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    if end is None:
        start, end = 0, start
    if dtype is not None and np.dtype(dtype).kind == "c":
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{np.dtype(dtype).name}'")
    if dtype is None:
        dtype = (
            result_type(start, end, step)
            if builtins.any(isinstance(v, float) for v in (start, end, step))
            else np.int64
        )
    return _factory(np.arange(start, end, step).astype(dtype), None, requires_grad)


def linspace(start, end, steps, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    if dtype is None and builtins.any(isinstance(v, complex) for v in (start, end)):
        dtype = result_type(1j)  # the default complex dtype
    return _factory(np.linspace(start, end, steps).astype(_float_dtype(dtype)), None, requires_grad)


def eye(n, m=None, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    return _factory(np.eye(n, m, dtype=_float_dtype(dtype)), None, requires_grad)


def _like(make):
    def f(input, *, dtype=None, requires_grad=False, device=None):
        return make(
            input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, device=device
        )

    return f


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)


def full_like(input, fill_value, *, dtype=None, requires_grad=False, device=None):
    return full(
        input.shape,
        fill_value,
        dtype=dtype or input.dtype,
        requires_grad=requires_grad,
        device=device,
    )


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and (dtype is None or np.dtype(dtype) == data.dtype):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor of `ndarray`'s values and dtype. Unlike PyTorch it copies: tensors own
    read-only arrays, and in-place tensor methods rebind rather than write."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return tensor(ndarray)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(input) -> int:
    return input.numel()


__all__ = [
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "eye",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "as_tensor",
    "from_numpy",
    "is_tensor",
    "numel",
]
