"""Abstract values: what the IR knows about an array without holding it.

An `Aval` is a shape, a dtype and a weak-type flag. The flag marks values that came from
Python scalars, so NumPy 2's promotion rules (NEP 50: Python scalars do not widen arrays)
are reproduced while tracing.
"""

from __future__ import annotations

import math

import attrs
import numpy as np


def int_tuple(s) -> tuple[int, ...]:
    """`tuple(int(d) for d in s)`: a shape or axes as Python ints, returning a tuple of ints
    itself (the common case, without a generator: binding functions ask on every call)."""
    if type(s) is tuple:
        for d in s:
            if type(d) is not int:
                break
        else:
            return s  # already a tuple of Python ints: the common case, kept cheap
    return tuple(int(d) for d in s)


@attrs.frozen(repr=False, cache_hash=True)
class Aval:
    shape: tuple[int, ...] = attrs.field(converter=int_tuple)
    dtype: np.dtype = attrs.field(converter=np.dtype)
    weak_type: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def strengthen(self) -> Aval:
        return Aval(self.shape, self.dtype) if self.weak_type else self

    def str_short(self) -> str:
        """`f64[3,4]`, the form the printer uses; weak types get a `~` (jaxprs' `weak_type`)."""
        weak = "~" if self.weak_type else ""
        return f"{dtype_short(self.dtype)}{weak}[{','.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Aval({self.shape}, {self.dtype.name}{weak})"


_SHORT = {"f": "f", "i": "i", "u": "u", "b": "bool", "c": "c"}


def dtype_short(dtype: np.dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return "bool"
    return f"{_SHORT.get(dtype.kind, dtype.kind)}{dtype.itemsize * 8}"


def is_float(dtype) -> bool:
    """Only inexact values carry derivatives; integer and bool values get no cotangent."""
    return np.dtype(dtype).kind in "fc"


_INTERNED: dict = {}


def interned_aval(shape: tuple, dtype: np.dtype, weak_type: bool = False) -> Aval:
    """The one `Aval` of a shape, a dtype and a weak flag that the eager paths share: building
    one costs a microsecond (its converters), and tables keyed by avals (the shape rules'
    memo) compare shared ones by identity."""
    key = (shape, dtype, weak_type)
    aval = _INTERNED.get(key)
    if aval is None:
        if len(_INTERNED) > 10_000:
            _INTERNED.clear()
        aval = _INTERNED[key] = Aval(shape, dtype, weak_type)
    return aval


#: the avals of Python scalars by type (weak, but for bool)
SCALAR_AVALS = {
    bool: Aval((), np.bool_, False),
    int: Aval((), np.int64, True),
    float: Aval((), np.float64, True),
    complex: Aval((), np.complex128, True),
}


def aval_of(x) -> Aval:
    """The aval of a concrete value: Python scalars are weak, NumPy values are not."""
    if isinstance(x, np.ndarray | np.generic):
        return interned_aval(x.shape, x.dtype)
    scalar = SCALAR_AVALS.get(type(x))
    if scalar is not None:
        return scalar
    if isinstance(x, bool):
        return SCALAR_AVALS[bool]
    if isinstance(x, int):
        return SCALAR_AVALS[int]
    if isinstance(x, float):
        return SCALAR_AVALS[float]
    if isinstance(x, complex):
        return SCALAR_AVALS[complex]
    if type(x).__name__ in ("Tensor", "Parameter"):
        raise TypeError(
            f"tracegrad: the functional transforms take arrays, got a {type(x).__name__}; pass "
            "t.detach().numpy(), or differentiate tensors with .backward() / "
            "tg.autograd.grad"
        )
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # another library's array
        library = type(x).__module__.partition(".")[0]
        raise TypeError(
            f"tracegrad: eager transforms run on NumPy arrays, got a {library} "
            f"{type(x).__name__}; jit runs on {library}'s arrays (tracegrad.backends): call "
            "tg.jit(tg.grad(f))(x), or convert with np.asarray(x)"
        )
    raise TypeError(
        f"tracegrad: expected an array or a Python scalar, got {type(x).__name__}; "
        "wrap lists with np.asarray or tracegrad.numpy.array"
    )


def shape_of(x) -> tuple[int, ...]:
    """Shape of an array, NumPy scalar, Python scalar or tracer, without NumPy dispatch."""
    s = getattr(x, "shape", None)
    if s is None:
        return ()
    return s if type(s) is tuple else tuple(s)


_PY_DTYPES = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


def dtype_of(x) -> np.dtype:
    """Dtype of an array, NumPy scalar, tracer or Python scalar (NumPy's default for it)."""
    d = getattr(x, "dtype", None)
    if d is not None:
        return d if isinstance(d, np.dtype) else np.dtype(d)
    found = _PY_DTYPES.get(type(x))
    return found if found is not None else np.asarray(x).dtype


def carries_derivative(x) -> bool:
    """Whether a value of this kind takes a tangent or cotangent: floats and complex only.
    (`is_float(dtype_of(x))` without building a dtype: rules ask it on every call.)"""
    d = getattr(x, "dtype", None)
    if d is not None:
        return d.kind in "fc"
    return isinstance(x, float | complex)


def avals_short(avals) -> str:
    """`(f64[3], i64[])`: several avals in messages, as the printer writes each."""
    return "(" + ", ".join(a.str_short() for a in avals) + ")"
