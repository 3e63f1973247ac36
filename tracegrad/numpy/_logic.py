"""NumPy's predicates: isclose, allclose, array_equal, array_equiv, isin, the type predicates
(isreal, iscomplex, isscalar, ...), result_type, can_cast, real_if_close. Their results are
bools, which carry no derivative (real_if_close of a real input is the input). Each repeats
NumPy's own steps (numpy/_core/numeric.py, lib/_type_check_impl.py, lib/_arraysetops_impl.py),
so the values agree bit for bit.
"""

from __future__ import annotations

import warnings

import numpy as np

from tracegrad.core import Boxed, Tracer, bind
from tracegrad.numpy._common import as_array, cast, concrete_value, known_value, shape_of
from tracegrad.numpy._elementwise import imag, real
from tracegrad.numpy._indexing import getitem
from tracegrad.numpy._reductions import all as _all
from tracegrad.numpy._reductions import any as _any
from tracegrad.numpy._shape import expand_dims, ravel, reshape
from tracegrad.numpy._sorting import searchsorted, sort
from tracegrad.primitives import elementwise as ew

# fmt: off
__all__ = [
    "isclose", "allclose", "array_equal", "array_equiv", "isreal", "iscomplex", "iscomplexobj",
    "isrealobj", "isscalar", "isneginf", "isposinf", "result_type", "can_cast", "real_if_close",
    "isin",
]
# fmt: on

_INTP = np.dtype(np.intp)
_F8 = np.dtype(np.float64)


# -- helpers ----------------------------------------------------------------------------------


def _boxed(*xs) -> bool:
    return any(isinstance(x, Boxed) for x in xs)


def _predicate(result):
    """What NumPy returns as a Python bool: a traced 0-d bool array under a trace (as
    jax.numpy does, so `if np.allclose(a, b):` works on concrete values and is data under
    jit), NumPy's Python bool otherwise."""
    return result if isinstance(result, Tracer) else bool(result)


def _static_predicate(value: bool, *xs):
    """A result known from shapes alone: a 0-d bool array when traced (as jax.numpy returns),
    NumPy's Python bool otherwise."""
    return np.asarray(value) if any(isinstance(x, Tracer) for x in xs) else value


def _as_arrays_or_false(a1, a2):
    """NumPy's `asarray` of both arguments, or None where NumPy would answer False (ragged
    lists). A list of traced values is not such a case: it raises, naming the fix."""
    try:
        return as_array(a1), as_array(a2)
    except TypeError as e:
        if str(e).startswith("tracegrad:"):
            raise
        return None
    except ValueError:
        return None


# -- isclose, allclose, array_equal, array_equiv ----------------------------------------------


def _weak_or_array(v):
    return v if isinstance(v, int | float | complex) else as_array(v)


def _tolerances_finite(atol, rtol) -> None:
    """NumPy's warning (or error, per np.seterr) for a non-finite tolerance, when the
    tolerances are known now."""
    values = [known_value(t) for t in (atol, rtol)]
    if any(v is None for v in values):
        return
    if np.all(np.isfinite(values[0])) and np.all(np.isfinite(values[1])):
        return
    err_s = np.geterr()["invalid"]
    err_msg = f"One of rtol or atol is not valid, atol: {values[0]}, rtol: {values[1]}"
    if err_s == "warn":
        warnings.warn(err_msg, RuntimeWarning, stacklevel=3)
    elif err_s == "raise":
        raise FloatingPointError(err_msg)
    elif err_s == "print":
        print(err_msg)


def _finite_or_one(y, finite_y):
    """y where it is finite and 1 elsewhere, for isclose's first term, which `& isfinite(y)`
    masks there anyway: on the infinities it would compute inf - inf, whose invalid-value
    warning NumPy's errstate silences but a traced graph, run later, would give. (A traced
    Python scalar is kept: `where` would make it a strong float64 and change the promotion.)"""
    if isinstance(y, int | float | complex):
        return y if np.isfinite(y) else 1.0
    if getattr(getattr(y, "aval", None), "weak_type", False):
        return y
    return ew.where(finite_y, y, 1)


def isclose(a, b, rtol=1.0e-5, atol=1.0e-8, equal_nan=False):
    """`numpy.isclose`, NumPy's formula step by step: `(|x - y| <= atol + rtol * |y|) &
    isfinite(y) | (x == y)`, with `y` made inexact first. A bool result: no derivative."""
    x, y, atol, rtol = (_weak_or_array(v) for v in (a, b, atol, rtol))
    dtype = getattr(y, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind != "m":
        if getattr(getattr(y, "aval", None), "weak_type", False) and dtype.kind in "iu":
            y = bind(ew.multiply_p, y, 1.0)  # a traced Python int: NumPy's float(y), still weak
        else:
            y = cast(y, np.result_type(np.dtype(dtype), 1.0))
    elif isinstance(y, int):
        y = float(y)
    _tolerances_finite(atol, rtol)
    finite_y = bind(ew.isfinite_p, y)
    with np.errstate(invalid="ignore"):
        y_safe = _finite_or_one(y, finite_y)
        diff = bind(ew.absolute_p, bind(ew.subtract_p, x, y_safe))
        bound = bind(ew.add_p, atol, bind(ew.multiply_p, rtol, bind(ew.absolute_p, y_safe)))
        close = bind(ew.logical_and_p, bind(ew.less_equal_p, diff, bound), finite_y)
        result = bind(ew.logical_or_p, close, bind(ew.equal_p, x, y))
        if equal_nan:
            both_nan = bind(ew.logical_and_p, bind(ew.isnan_p, x), bind(ew.isnan_p, y))
            result = bind(ew.logical_or_p, result, both_nan)
    return result if isinstance(result, Boxed) else result[()]


def allclose(a, b, rtol=1.0e-5, atol=1.0e-8, equal_nan=False):
    """`numpy.allclose`: `all(isclose(...))`. NumPy's Python bool outside a trace; a traced
    0-d bool array under one (bool() of it works under concrete tracing). No derivative."""
    return _predicate(_all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def array_equal(a1, a2, equal_nan=False):
    """`numpy.array_equal`: same shape and equal elements (NaNs equal with `equal_nan`).
    NumPy's Python bool outside a trace; a 0-d bool array under one. No derivative."""
    if not _boxed(a1, a2):
        return np.array_equal(a1, a2, equal_nan=equal_nan)
    arrays = _as_arrays_or_false(a1, a2)
    if arrays is None:
        return _static_predicate(False, a1, a2)
    a1, a2 = arrays
    if shape_of(a1) != shape_of(a2):
        return _static_predicate(False, a1, a2)
    if equal_nan and a1 is a2:
        return _static_predicate(True, a1)
    equal = bind(ew.equal_p, a1, a2)
    if not equal_nan or all(np.dtype(a.dtype).kind in "biu" for a in (a1, a2)):
        return _predicate(_all(equal))
    # NumPy compares the non-NaN elements once the NaNs sit at the same places; without
    # masks (whose shapes depend on values): NaN positions agree, and elsewhere a1 == a2
    a1nan, a2nan = bind(ew.isnan_p, a1), bind(ew.isnan_p, a2)
    same_nans = _all(bind(ew.equal_p, a1nan, a2nan))
    rest_equal = _all(bind(ew.logical_or_p, a1nan, equal))
    return _predicate(bind(ew.logical_and_p, same_nans, rest_equal))


def array_equiv(a1, a2):
    """`numpy.array_equiv`: shapes that broadcast together and equal elements. NumPy's Python
    bool outside a trace; a 0-d bool array under one. No derivative."""
    if not _boxed(a1, a2):
        return np.array_equiv(a1, a2)
    arrays = _as_arrays_or_false(a1, a2)
    if arrays is None:
        return _static_predicate(False, a1, a2)
    a1, a2 = arrays
    try:
        np.broadcast_shapes(shape_of(a1), shape_of(a2))
    except ValueError:
        return _static_predicate(False, a1, a2)
    return _predicate(_all(bind(ew.equal_p, a1, a2)))


# -- type predicates --------------------------------------------------------------------------


def _is_complex(x) -> bool:
    return np.dtype(x.dtype).kind == "c"


def isreal(x):
    """`numpy.isreal`: `imag(x) == 0`, all True for a real array. A bool result: no
    derivative."""
    if not isinstance(x, Boxed):
        return np.isreal(x)
    if _is_complex(x):
        return bind(ew.equal_p, imag(x), 0)
    return np.ones(shape_of(x), bool)


def iscomplex(x):
    """`numpy.iscomplex`: `imag(x) != 0`, all False for a real array. A bool result: no
    derivative."""
    if not isinstance(x, Boxed):
        return np.iscomplex(x)
    if _is_complex(x):
        return bind(ew.not_equal_p, imag(x), 0)
    return np.zeros(shape_of(x), bool)[()]


def iscomplexobj(x):
    """`numpy.iscomplexobj`: whether the dtype is complex (a Python bool: a fact of the type,
    known while tracing)."""
    if isinstance(x, Boxed):
        return _is_complex(x)
    return np.iscomplexobj(x)


def isrealobj(x):
    """`numpy.isrealobj`: not `iscomplexobj` (a Python bool)."""
    return not iscomplexobj(x)


def isscalar(element):
    """`numpy.isscalar`, NumPy's answer: False for a traced array (even a 0-d one), as
    np.isscalar itself gives on a tracer (it is not dispatched to tracegrad); jax.numpy's
    differs here (True for 0-d arrays)."""
    return np.isscalar(element)


def _is_signed_inf(name: str, negative: bool):
    def f(x, out=None):
        if out is not None:
            raise NotImplementedError(
                f"tracegrad.numpy.{name}: the argument out= is not supported (a traced result "
                "cannot be written into an array in place; use the returned value)"
            )
        dtype = np.dtype(x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype)
        if dtype.kind == "c":
            raise TypeError(
                f"This operation is not supported for {dtype} values because it would be ambiguous."
            )
        signbit = bind(ew.signbit_p, x)
        if not negative:
            signbit = bind(ew.logical_not_p, signbit)
        return bind(ew.logical_and_p, bind(ew.isinf_p, x), signbit)

    f.__name__ = f.__qualname__ = name
    sign = "-" if negative else "+"
    f.__doc__ = (
        f"`numpy.{name}`: `isinf(x) & {'' if negative else '~'}signbit(x)` ({sign}inf), as "
        "NumPy computes it. A bool result: no derivative."
    )
    return f


isneginf = _is_signed_inf("isneginf", negative=True)
isposinf = _is_signed_inf("isposinf", negative=False)


# -- dtypes: result_type, can_cast ------------------------------------------------------------

_WEAK_EXAMPLE = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def _dtype_or_self(x):
    """A traced array counts as an array of its dtype; a traced Python scalar (a weak value)
    as the Python scalar NumPy 2 would have seen (NEP 50)."""
    if not isinstance(x, Boxed):
        return x
    aval = getattr(x, "aval", None)
    if aval is not None and aval.weak_type:
        return _WEAK_EXAMPLE[aval.dtype.kind]
    return np.dtype(x.dtype)


def result_type(*arrays_and_dtypes):
    """`numpy.result_type`, with traced arrays standing for arrays of their dtype (NumPy 2's
    rules: values never matter, Python scalars are weak)."""
    return np.result_type(*(_dtype_or_self(a) for a in arrays_and_dtypes))


def can_cast(from_, to, casting="safe"):
    """`numpy.can_cast`, a traced array standing for its dtype."""
    if isinstance(from_, Boxed):
        from_ = np.dtype(from_.dtype)
    return np.can_cast(from_, to, casting=casting)


# -- real_if_close ----------------------------------------------------------------------------


def real_if_close(a, tol=100):
    """`numpy.real_if_close`: the real part when every imaginary part is below `tol` machine
    epsilons, else `a` (a real `a` is returned as it is: the identity, differentiable).

    Which of the two it returns (and so the output dtype) depends on the values: it needs
    them (concrete tracing: grad, jvp, vjp of a call) and raises ConcretizationError under
    jit, vmap and make_graph. The derivative is that of `real(a)` or of `a`.
    """
    if not isinstance(a, Boxed):
        return np.real_if_close(a, tol=tol)
    if not _is_complex(a):
        return a
    if tol > 1:
        tol = np.finfo(np.dtype(a.dtype).type).eps * tol
    value = concrete_value(
        a,
        "real_if_close's output dtype (real or complex)",
        "Take the real part with tracegrad.numpy.real(a), or keep a complex, explicitly.",
    )
    if np.all(np.absolute(value.imag) < tol):
        return real(a)
    return a


# -- isin -------------------------------------------------------------------------------------


_PAIRS = 1 << 16  # above this many (element, test) pairs isin searches a sorted copy instead


def _found(ar1, ar2):
    """Whether each of ar1 (1-d) equals some element of ar2 (1-d, not empty), by NumPy's `==`:
    every pair compared when there are few, else ar1 searched in a sorted ar2 (the first
    element not less than it is equal to it, or none is)."""
    n1, n2 = shape_of(ar1)[0], shape_of(ar2)[0]
    if n1 * n2 <= _PAIRS:
        return _any(bind(ew.equal_p, expand_dims(ar1, 1), expand_dims(ar2, 0)), axis=1)
    s = sort(ar2)
    first = bind(ew.minimum_p, searchsorted(s, ar1, "left"), n2 - 1)
    return bind(ew.equal_p, getitem(s, first), ar1)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """`numpy.isin`: whether each element equals some test element (NumPy's `==`: NaN is in
    nothing, -0.0 is 0.0), of element's shape. Any correct method gives NumPy's answer, so
    `assume_unique` and `kind` only choose among NumPy's methods (their errors are NumPy's;
    with `assume_unique=True` and repeated values NumPy's answer is unspecified, this one is
    still right). A bool result: no derivative."""
    element, test = as_array(element), as_array(test_elements)
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    if kind == "table" and not all(np.dtype(a.dtype).kind in "uib" for a in (element, test)):
        raise ValueError(
            "The 'table' method is only supported for boolean or integer arrays. Please select "
            "'sort' or None for kind."
        )
    shape = shape_of(element)
    if np.prod(shape_of(test)) == 0:
        return np.full(shape, bool(invert))
    found = _found(ravel(element), ravel(test))
    if invert:
        found = bind(ew.logical_not_p, found)
    return reshape(found, shape)
