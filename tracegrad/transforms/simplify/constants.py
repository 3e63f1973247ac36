"""Facts about constant values: what the identity rules test, how CSE keys constants and
params, and the guarded evaluation folding relies on.

Bits decide all three: keys compare floats by bit pattern (so 0.0 and -0.0, or two NaN
payloads, are never shared), and folding evaluates with every NumPy warning and floating-point
error raised, so a node whose evaluation would warn is left for run time to warn.
"""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np

from tracegrad.ir.graph import Node, const_node
from tracegrad.ir.types import Aval

# -- constants ------------------------------------------------------------------------------


def _is_one(v) -> bool:
    return bool(np.all(np.asarray(v) == 1))


def _is_two(v) -> bool:
    return bool(np.all(np.asarray(v) == 2))


def _float_zero(v, negative: bool) -> bool:
    a = np.asarray(v)
    if a.dtype.kind != "f":
        return False
    return bool(np.all(a == 0) and np.all(np.signbit(a) == negative))


def _is_negative_zero(v) -> bool:
    """The additive identity of floats: every element is -0.0."""
    return _float_zero(v, True)


def _is_positive_zero(v) -> bool:
    """What `x - c` may subtract from a float `x`: +0.0 (or an integer 0, cast to +0.0)."""
    return _float_zero(v, False) or _is_integer_zero(v)


def _is_integer_zero(v) -> bool:
    a = np.asarray(v)
    return a.dtype.kind in "iub" and bool(np.all(a == 0))


def _const_key(v):
    """Constants equal by this key are interchangeable: Python scalars by type and bits (so
    0.0 and -0.0, or two NaN payloads, stay apart), arrays of one element by dtype, shape and
    bytes, larger arrays by identity (never compared by value)."""
    if isinstance(v, bool | int):
        return (type(v), v)
    if isinstance(v, float):
        return (float, struct.pack("<d", v))
    if isinstance(v, complex):
        return (complex, struct.pack("<dd", v.real, v.imag))
    if isinstance(v, np.ndarray) and v.size <= 1:
        return ("array", v.dtype.str, v.shape, v.tobytes())
    return ("id", id(v))  # the node holding `v` lives in the table, so the id is not reused


def _params_key(params):
    """`params` as a CSE key in which floats compare by bits (a `pad` with -0.0 is not one
    with 0.0), or None when they are unhashable."""
    if not params:
        return ()
    try:
        return tuple((k, _bits_key(v)) for k, v in params.items())
    except TypeError:
        return None


def _bits_key(v):
    if type(v) is float:
        return (float, struct.pack("<d", v))
    if type(v) is tuple:
        return tuple(_bits_key(u) for u in v)
    hash(v)  # raises TypeError for what cannot be a key
    return v


def _footprint(v) -> int:
    """Elements an input holds in memory (a broadcast view holds only its distinct ones)."""
    if not isinstance(v, np.ndarray):
        return 1
    return math.prod(d for d, s in zip(v.shape, v.strides) if s != 0)


def _evaluate(prim, vals, params):
    """`prim.impl(*vals, **params)`, or None if it raises or warns (then it stays a node,
    and the warning or error happens at run time as it would without simplification)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="raise"):
                return prim.impl(*vals, **params)
    except Exception:  # noqa: BLE001 - any failure means "do not fold"
        return None


def _as_const(v, aval: Aval) -> Node | None:
    """A const node holding `v` with exactly `aval`, or None. A weak 0-d value is a Python
    scalar (as `tracegrad.core._weak_value` keeps it); a strong one a read-only 0-d array.
    Arrays keep their strides (no copy): layout is part of the result."""
    if aval.weak_type and not aval.shape:
        if isinstance(v, np.ndarray | np.generic):
            v = v.item()
    elif isinstance(v, np.generic):
        v = np.asarray(v)
    if isinstance(v, np.ndarray) and v.flags.writeable:
        try:
            v.flags.writeable = False
        except ValueError:
            return None
    if not isinstance(v, np.ndarray | bool | int | float | complex):
        return None
    node = const_node(v)
    return node if node.out_avals == (aval,) else None
