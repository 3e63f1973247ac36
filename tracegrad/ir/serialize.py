"""`dumps`/`loads`: a graph as a versioned JSON document, validated on load (no pickle, no eval).

Re-exports only: the format and its limits live in `document`, the encoder in `encode`, the
decoder (which treats its input as hostile) in `decode`, and the types of params in `param_types`.
"""

from tracegrad.ir.decode import loads
from tracegrad.ir.document import (
    FORMAT,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_MESSAGE,
    MAX_NDIM,
    VERSION,
)
from tracegrad.ir.encode import dumps
from tracegrad.ir.param_types import PARAM_TYPES

__all__ = [
    "FORMAT",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ELEMENTS",
    "MAX_MESSAGE",
    "MAX_NDIM",
    "PARAM_TYPES",
    "VERSION",
    "dumps",
    "loads",
]
