"""PyTorch's type promotion, and the dispatch of binary operations built on it.

A dimensioned tensor's dtype wins over a 0-d tensor's of the same kind, and Python scalars only
choose the kind (a Python float makes an integer tensor the default float dtype). Every binary
function of the shim goes through `_binary` or `_compare`, which cast the operands to
`result_type` (or take the eager fast path, `_apply`, when the dtypes already agree).
"""

from __future__ import annotations

import builtins

import numpy as np

from tracegrad.core import _current_trace, bind
from tracegrad.primitives import elementwise as ew
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.recording import record
from tracegrad.torch.tensor import Tensor

_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _rank(dtype) -> int:
    return _KIND_RANK[np.dtype(dtype).kind]


def _to_complex(dtype) -> np.dtype:
    """The complex dtype whose parts are `dtype` (float16 has no NumPy complex: complex64)."""
    return np.dtype(np.complex128 if np.dtype(dtype) == np.float64 else np.complex64)


def _promote(a, b):
    """c10's `promoteTypes` within one group of operands: the higher kind wins (an int64 and
    a float16 make float16), and a complex meeting a wider float widens (complex64 and float64
    make complex128)."""
    if a is None:
        return b
    if b is None:
        return a
    ra, rb = _rank(a), _rank(b)
    if ra == rb:
        return np.promote_types(a, b)
    high, low = (a, b) if ra > rb else (b, a)
    if high.kind == "c" and low.kind == "f":
        return np.promote_types(high, _to_complex(low))
    return high


def _combine(higher, lower):
    """c10's `combine_categories`: a lower-priority group (0-d tensors, then Python numbers)
    only changes the result when its kind is higher; a complex one makes a float result
    complex at the float's precision (float64 and a complex64 0-d tensor make complex128)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.kind == "c":
        return higher
    if lower.kind == "c":
        return _to_complex(higher) if higher.kind == "f" else lower
    if higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return _promote(higher, lower)
    return higher


def result_type(*operands) -> np.dtype:
    """`torch.result_type` for tensors, NumPy arrays (as tensors) and Python scalars: three
    groups (dimensioned tensors, 0-d tensors, Python numbers), each promoted within, combined
    by priority as c10 does."""
    dims = zeros = None
    scalar_rank = -1
    for x in operands:
        if isinstance(x, Tensor | np.ndarray):
            if x.ndim:
                dims = _promote(dims, x.dtype)
            else:
                zeros = _promote(zeros, x.dtype)
        elif isinstance(x, np.generic):  # NumPy scalars count as Python numbers, as in torch
            scalar_rank = builtins.max(scalar_rank, _rank(x.dtype))
        elif isinstance(x, bool):
            scalar_rank = builtins.max(scalar_rank, 0)
        elif isinstance(x, int):
            scalar_rank = builtins.max(scalar_rank, 1)
        elif isinstance(x, float):
            scalar_rank = builtins.max(scalar_rank, 2)
        elif isinstance(x, complex):
            scalar_rank = builtins.max(scalar_rank, 3)
    scalars = None
    if scalar_rank >= 0:
        default = get_default_dtype()
        scalars = np.dtype((np.bool_, np.int64, default, _to_complex(default))[scalar_rank])
    return np.dtype(_combine(dims, _combine(zeros, scalars)))


def _cast(x, dtype):
    if isinstance(x, Tensor):
        return x if x.dtype == dtype else ew.astype(x, dtype)
    if isinstance(x, np.ndarray):
        return x.astype(dtype, copy=False)
    if isinstance(x, np.generic):
        return x.item()
    return x  # Python scalars stay weak: NumPy computes in the array's dtype


_NO_PARAMS: dict = {}


def _apply(prim, *args):
    """`bind(prim, *args)` with tensors: straight to `record` when no trace is active (the
    eager path, two calls shorter); inside a trace, `bind` decides."""
    if _current_trace.get() is None:
        return record(prim, args, _NO_PARAMS)
    return bind(prim, *args)


def _binary(prim, a, b, *, floating=False):
    try:
        return _binary_op(prim, a, b, floating)
    except ValueError:
        message = _mismatch(a, b) if prim.name != "matmul" else None
        if message is None:
            raise
        raise RuntimeError(message) from None


def _mismatch(a, b) -> str | None:
    """PyTorch's message for shapes that do not broadcast (None if they do)."""
    sa, sb = np.shape(a), np.shape(b)
    for k in range(1, min(len(sa), len(sb)) + 1):
        da, db = sa[-k], sb[-k]
        if da != db and da != 1 and db != 1:
            dim = max(len(sa), len(sb)) - k
            return (
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                f"non-singleton dimension {dim}"
            )
    return None


def _binary_op(prim, a, b, floating):
    # fast paths: the same dtype on both sides, or a float tensor with a Python number; on
    # them, no trace active, straight to `record` (`_apply` written out: every binary operator
    # of the tensors passes here)
    if isinstance(a, Tensor):
        da = a._cell.value.dtype
        if isinstance(b, Tensor):
            if da == b._cell.value.dtype and (not floating or da.kind in "fc"):
                if _current_trace.get() is None:
                    return record(prim, (a, b), _NO_PARAMS)
                return bind(prim, a, b)
        elif type(b) in (int, float) and da.kind in "fc":
            if _current_trace.get() is None:
                return record(prim, (a, b), _NO_PARAMS)
            return bind(prim, a, b)
    elif type(a) in (int, float) and isinstance(b, Tensor) and b._cell.value.dtype.kind in "fc":
        return _apply(prim, a, b)
    dtype = result_type(a, b)
    if floating and dtype.kind in "biu":
        dtype = get_default_dtype()
    return bind(prim, _cast(a, dtype), _cast(b, dtype))


def _compare(prim, a, b):
    dtype = result_type(a, b)
    return bind(prim, _cast(a, dtype), _cast(b, dtype))
