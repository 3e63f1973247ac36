"""Params as Python literals: the only values from a graph that the generated text spells out.

An emit rule writes a node's params into the source with `{v!r}`, and that text is executed,
so every param is first checked here (`_Params`) to be a plain value whose repr is code that
evaluates to exactly it: None, bools, ints, floats and complexes (non-finite ones get a repr
that spells them; NaNs other than the two standard ones have none), tuples of those, a fixed
list of dtypes, einsum subscripts and index structures. Anything else is refused rather than
written as the repr of an arbitrary object. Constants that are exact Python scalars become
literals too (`_scalar_text`); everything else is passed in as an argument.
"""

from __future__ import annotations

import re
import reprlib
import struct

import numpy as np

from tracegrad.ir.graph import Node

# -- literals ---------------------------------------------------------------------------------

_DTYPE_NAMES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    + ["float16", "float32", "float64", "complex64", "complex128"]
)
_SUBSCRIPTS = re.compile(r"[a-zA-Z.,>-]*")
#: a string param written as a literal: one word (a mode: 'reduced', 'L', 'ortho'), nothing
#: that could close the quotes or hold an escape, and only for the params that are words
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_WORD_PARAMS = frozenset({"mode", "UPLO", "norm", "rtol"})
_INDEX_WORDS = frozenset(["array", "newaxis", "..."])
# the bits of float('nan') and float('-nan'): the only NaNs a literal can spell
_NAN_TEXT = {
    struct.pack("<d", float("nan")): "float('nan')",
    struct.pack("<d", float("-nan")): "float('-nan')",
}


def _float_text(v: float) -> str | None:
    """Python text that evaluates to exactly `v` (signed zeros, infinities, the two standard
    NaNs), or None for a NaN with another payload."""
    if v != v:
        return _NAN_TEXT.get(struct.pack("<d", v))
    if v in (float("inf"), float("-inf")):
        return "float('inf')" if v > 0 else "float('-inf')"
    return repr(v)  # shortest repr round-trips exactly; -0.0 reads back as -0.0


def _scalar_text(v) -> str | None:
    """The literal of a Python scalar constant (exact types only), or None if it has none.

    Only exact `bool`, `int`, `float`, `complex` qualify: NumPy scalars (even np.float64, a
    float subclass) promote differently and are passed in as arguments instead.
    """
    t = type(v)
    if t is bool or t is int:
        return repr(v)
    if t is float:
        return _float_text(v)
    if t is complex:
        re_, im = _float_text(v.real), _float_text(v.imag)
        return None if re_ is None or im is None else f"complex({re_}, {im})"
    return None


class _FloatParam(float):
    """A non-finite float param whose repr is valid code, so an emit's `{v!r}` writes it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _float_text(float(self))


def _param_text(v) -> str:
    """A validated param (see `_Params`) as Python text: dtypes as `np.dtype('name')`."""
    if isinstance(v, np.dtype):
        return f"np.dtype({v.name!r})"
    if type(v) is tuple:
        return "(" + "".join(_param_text(x) + ", " for x in v) + ")"
    return repr(v)


class _ComplexParam(complex):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"complex({_float_text(self.real)}, {_float_text(self.imag)})"


# -- params -----------------------------------------------------------------------------------


class _Params:
    """Validates a node's params before its emit rule writes them as literals."""

    def __init__(self, node: Node, name: str):
        self.node = node
        self.name = name

    def error(self, key: str, value, why: str) -> ValueError:
        return ValueError(
            f"codegen: cannot write param {key}={reprlib.repr(value)} of node {self.name!r} "
            f"({self.node.prim.name}) as a literal: {why}. Params written into generated code "
            "must be ints, floats, bools, None, tuples of them, dtypes, einsum subscripts, index "
            "structures, or one word for the params named mode, UPLO, norm and rtol"
        )

    def check(self, key: str, value):
        if key == "subscripts" and type(value) is str:
            if _SUBSCRIPTS.fullmatch(value):
                return value
            raise self.error(key, value, "einsum subscripts may hold only letters, '.', ',', '->'")
        if key == "index" and type(value) is tuple:
            return tuple(self.index_item(key, item) for item in value)
        return self.plain(key, value)

    def plain(self, key: str, value):
        t = type(value)
        if value is None or t is bool or t is int:
            return value
        if t is float or isinstance(value, np.float64):
            return self.float_(key, float(value))
        if t is complex or isinstance(value, np.complex128):
            value = complex(value)
            if _float_text(value.real) is None or _float_text(value.imag) is None:
                raise self.error(key, value, "a NaN with a payload has no literal")
            return value if np.isfinite(value) else _ComplexParam(value)
        if t is tuple:
            return tuple(self.plain(key, v) for v in value)
        if t is str and key in _WORD_PARAMS and _WORD.fullmatch(value):
            return value
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.dtype) or (
            isinstance(value, type) and issubclass(value, np.generic)
        ):
            try:
                dt = np.dtype(value)
            except TypeError:
                dt = None
            if dt is not None and dt.name in _DTYPE_NAMES and dt == np.dtype(dt.name):
                return dt
            raise self.error(key, value, f"only the dtypes {sorted(_DTYPE_NAMES)} are written")
        raise self.error(key, value, f"a {t.__name__} value has no validated literal")

    def float_(self, key: str, v: float):
        text = _float_text(v)
        if text is None:
            raise self.error(key, v, "a NaN with a payload has no literal")
        return v if text == repr(v) else _FloatParam(v)

    def index_item(self, key: str, item):
        t = type(item)
        if t is int:
            return item
        if isinstance(item, np.integer) and t is not np.bool_:
            return int(item)
        if t is str and item in _INDEX_WORDS:
            return item
        if t is tuple and len(item) == 4 and item[0] == "slice":
            if all(type(v) is int for v in item[1:]):
                return item
        if t is tuple and len(item) == 2 and item[0] == "bool" and type(item[1]) is bool:
            return item
        raise self.error(
            key,
            item,
            "an index item must be an int, 'array', 'newaxis', '...', ('slice', start, limit, "
            "stride) or ('bool', b)",
        )
