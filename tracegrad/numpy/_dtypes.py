"""NumPy's constants, scalar types and dtype helpers, re-exported (`tnp.pi`, `tnp.float32`,
`tnp.finfo`), as `jax.numpy` has them: they are NumPy's own objects."""

import numpy as np

_CONSTANTS = ("pi", "e", "inf", "nan", "newaxis", "euler_gamma")
_TYPES = (
    "bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "intp", "uintp", "float16", "float32", "float64", "complex64", "complex128", "dtype",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
    "complexfloating",
)  # fmt: skip
_HELPERS = ("finfo", "iinfo", "issubdtype", "promote_types")

__all__ = [*_CONSTANTS, *_TYPES, *_HELPERS]

globals().update({name: getattr(np, name) for name in __all__})
