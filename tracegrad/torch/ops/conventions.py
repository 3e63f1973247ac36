"""PyTorch's calling conventions, shared by every family of the shim.

Any input becomes a tensor (`_as_tensor`); `dim` is range-checked and normalized (`_dims`);
sizes come as varargs or one sequence (`_shape_args`); NumPy's `axis` and `keepdims` are
accepted for `dim` and `keepdim` (`_numpy_names`); and the node of a composite's result gets
PyTorch's `grad_fn` name and `next_functions` (`_named`, `_alias`); functions PyTorch does not
define on complex numbers refuse them with its messages (`_no_complex`).
"""

from __future__ import annotations

import builtins
import functools

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.graph import edge_and_fn
from tracegrad.torch.ops.promotion import result_type
from tracegrad.torch.tensor import Tensor


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else tensor(x)


def _named(t, name: str, inputs=None):
    """Give the node of composite result `t` PyTorch's name, and, when `inputs` are given,
    PyTorch's `next_functions` (the composite's own inputs, not its internal nodes)."""
    if isinstance(t, Tensor) and t._grad_fn is not None:
        fn = t._grad_fn
        fn._name = name
        if inputs is not None:
            fn._shown = tuple(
                edge_and_fn(x)[1] if isinstance(x, Tensor) else (None, 0) for x in inputs
            )
    return t


def _numpy_names(fn):
    """PyTorch's NumPy-compatible keyword aliases: `axis` for `dim`, `keepdims` for
    `keepdim`. An empty `axis=()` keeps NumPy's meaning (reduce nothing)."""

    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):
        if "axis" in kwargs:
            axis = kwargs.pop("axis")
            if isinstance(axis, tuple | list) and len(axis) == 0:
                kwargs.pop("keepdims", None)
                return _as_tensor(input)
            kwargs["dim"] = axis
        if "keepdims" in kwargs:
            kwargs["keepdim"] = kwargs.pop("keepdims")
        return fn(input, *args, **kwargs)

    return wrapper


def _dims(dim, ndim: int) -> tuple[int, ...] | None:
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if not -builtins.max(ndim, 1) <= d < builtins.max(ndim, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of "
                f"[{-builtins.max(ndim, 1)}, {builtins.max(ndim, 1) - 1}], but got {d})"
            )
        if ndim:  # a 0-d tensor accepts dim 0 and -1, and has nothing to reduce
            out.append(d % ndim)
    return tuple(sorted(out))


def _alias(x, name: str):
    """A new tensor with `x`'s value (PyTorch returns a new view, never the input itself)."""
    return _named(tnp.reshape(x, x.shape), name, (x,))


def _shape_args(args) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], tuple | list):
        return tuple(args[0])
    return tuple(args)


def _no_complex(message: str, *operands, error=NotImplementedError) -> None:
    """Refuse complex operands as PyTorch does (NumPy would order, round or clip them):
    `message` names the dtype the operands promote to where it has `{}` (PyTorch's scalar type,
    `ComplexDouble`, written as NumPy's `complex128`)."""
    if builtins.any(
        isinstance(x, Tensor) and x.dtype.kind == "c" or isinstance(x, complex) for x in operands
    ):
        raise error(message.format(result_type(*operands).name))


_C_TYPES = {"float16": "c10::Half", "float32": "float", "float64": "double", "int64": "int64_t"}
_C_TYPES.update({"int32": "int", "int16": "short", "int8": "int8_t", "uint8": "uint8_t"})


def _real_number(value, dtype):
    """A Python number written into a real tensor of `dtype` (`x[0] = v`, `full`): a complex
    one only when it is real, with PyTorch's message otherwise (NumPy would drop the
    imaginary part, or raise a TypeError)."""
    if isinstance(value, complex) and np.dtype(dtype).kind != "c":
        if value.imag != 0:
            c_type = _C_TYPES.get(np.dtype(dtype).name, np.dtype(dtype).name)
            raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
        return value.real
    return value
