"""PyTorch's dtype names (NumPy dtypes, so `t.dtype == torch.float32` holds) and the default
dtype that Python floats become (float32 unless changed, as in PyTorch)."""

from __future__ import annotations

import numpy as np

float16, float32, float64 = (np.dtype(t) for t in ("float16", "float32", "float64"))
half, float, double = float16, float32, float64  # noqa: A001 - PyTorch's names
int8, int16, int32, int64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
uint8, bool = np.dtype("uint8"), np.dtype("bool")  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
complex64, complex128 = np.dtype("complex64"), np.dtype("complex128")
cfloat, cdouble = complex64, complex128

DTYPES = (
    "float16",
    "float32",
    "float64",
    "half",
    "float",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "short",
    "int",
    "long",
    "complex64",
    "complex128",
    "cfloat",
    "cdouble",
)

__all__ = list(DTYPES)

_default_dtype = np.dtype(np.float32)


def set_default_dtype(dtype) -> None:
    """The dtype Python floats become (float32 unless changed, as in PyTorch)."""
    global _default_dtype
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got {dtype}")
    _default_dtype = dtype


def get_default_dtype() -> np.dtype:
    return _default_dtype


def _default_complex() -> np.dtype:
    return np.dtype(np.complex64 if _default_dtype == np.float32 else np.complex128)
