"""`torch.testing.assert_close`: tensors, numbers, and sequences and mappings of them, compared
with PyTorch's default tolerances for their dtypes and failing with PyTorch's messages.

The checks run in PyTorch's order (the pairing of containers, then shape, then dtype, then the
values), and a failure inside a container names the item (`The failure occurred for item
[1]['w']`), so a test that moves from PyTorch to the shim reads the same report. Shapes are
written as tuples and dtypes by NumPy's names (`float32`), as everywhere in the shim.
"""

from __future__ import annotations

import cmath
from collections.abc import Mapping, Sequence

import numpy as np

from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.tensor import Tensor

__all__ = ["assert_close"]

# {dtype: (rtol, atol)}, PyTorch's `_DTYPE_PRECISIONS`; other dtypes compare exactly
_PRECISIONS = {
    np.dtype(np.float16): (0.001, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
    np.dtype(np.complex64): (1.3e-6, 1e-5),
    np.dtype(np.complex128): (1e-7, 1e-7),
}
_NUMBER_DTYPES = {int: np.dtype(np.int64), float: np.dtype(np.float64)}
_NUMBER_DTYPES[complex] = np.dtype(np.complex128)


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, the message, and the item's path."""

    def __init__(self, kind: type[Exception], message: str, path: tuple = ()):
        super().__init__(message)
        self.kind, self.message, self.path = kind, message, path

    def error(self, msg) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        message = self.message
        if self.path:
            message += "\n\nThe failure occurred for item " + "".join(
                str([item]) for item in self.path
            )
        return self.kind(msg(message) if callable(msg) else message)


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses=True,
    rtol=None,
    atol=None,
    equal_nan=False,
    check_device=True,
    check_dtype=True,
    check_layout=True,
    check_stride=False,
    msg=None,
):
    """Raises an AssertionError unless `actual` and `expected` are close:
    `|actual - expected| <= atol + rtol * |expected|` elementwise, with the default `rtol` and
    `atol` of their dtypes (float32: 1.3e-6 and 1e-5; float64: 1e-7 and 1e-7; integers and
    booleans: exact) when neither is given. NaNs are equal only with `equal_nan`."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}."
        )
    options = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "check_dtype": check_dtype}
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as mismatch:
        raise mismatch.error(msg) from None


def _compare(actual, expected, path: tuple, options: dict) -> None:
    if actual is None and expected is None:
        return
    if isinstance(actual, bool | np.bool_) and isinstance(expected, bool | np.bool_):
        if bool(actual) != bool(expected):
            raise _Mismatch(
                AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", path
            )
        return None
    if _is_array(actual) and isinstance(expected, type(actual) if _is_array(actual) else ()):
        return _compare_tensors(_array(actual), _array(expected), path, options)
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, path, options)
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(
                AssertionError,
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                path,
            )
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _compare(a, e, (*path, i), options)
        return None
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            raise _Mismatch(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(set(expected) - set(actual))}\n"
                f"Additional keys in the actual mapping: {sorted(set(actual) - set(expected))}",
                path,
            )
        for key in _sorted(actual):
            _compare(actual[key], expected[key], (*path, key), options)
        return None
    raise _Mismatch(
        TypeError,
        f"No comparison pair was able to handle inputs of type {type(actual)} and "
        f"{type(expected)}.",
        path,
    )


def _is_array(x) -> bool:
    return isinstance(x, Tensor | np.ndarray)


def _array(x) -> np.ndarray:
    return x._cell.value if isinstance(x, Tensor) else x


def _is_number(x) -> bool:
    return isinstance(x, int | float | complex | np.number) and not isinstance(x, bool)


def _is_sequence(x) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str)


def _sorted(keys):
    try:
        return sorted(keys)
    except TypeError:  # keys of mixed types: in the mapping's order, as PyTorch
        return list(keys)


def _tolerances(dtypes, options) -> tuple[float, float]:
    if options["rtol"] is not None:
        return options["rtol"], options["atol"]
    rtols, atols = zip(*(_PRECISIONS.get(np.dtype(d), (0.0, 0.0)) for d in dtypes), strict=True)
    return max(rtols), max(atols)


def _compare_numbers(actual, expected, path, options) -> None:
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    if options["check_dtype"] and type(actual) is not type(expected):
        raise _Mismatch(
            AssertionError,
            f"The (d)types do not match: {type(actual)} != {type(expected)}.",
            path,
        )
    if actual == expected:
        return
    if options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected):
        return
    rtol, atol = _tolerances([_NUMBER_DTYPES[type(x)] for x in (actual, expected)], options)
    abs_diff = abs(actual - expected)
    if abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol), path)


def _scalar_message(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _message("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol,
                    rel_diff, None, rtol)  # fmt: skip


def _message(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    """PyTorch's `_make_mismatch_msg`: "equal" when both tolerances are zero."""

    equality = rtol == 0 and atol == 0

    def line(kind, diff, idx, tol):
        text = f"{kind.title()} difference: {diff}"
        if idx is not None:
            text = f"Greatest {kind} difference: {diff} at index {idx}"
        return text + ("" if equality else f" (up to {tol} allowed)") + "\n"

    text = f"{identifier} are not {'equal' if equality else 'close'}!\n\n{extra.strip()}\n"
    text += line("absolute", abs_diff, abs_idx, atol) + line("relative", rel_diff, rel_idx, rtol)
    return text.strip()


def _compare_tensors(actual, expected, path, options) -> None:
    if actual.shape != expected.shape:
        raise _Mismatch(
            AssertionError,
            f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}.",
            path,
        )
    if options["check_dtype"] and actual.dtype != expected.dtype:
        raise _Mismatch(
            AssertionError,
            f"The values for attribute 'dtype' do not match: {actual.dtype.name} != "
            f"{expected.dtype.name}.",
            path,
        )
    rtol, atol = _tolerances([actual.dtype, expected.dtype], options)
    common = np.promote_types(actual.dtype, expected.dtype)
    actual, expected = actual.astype(common), expected.astype(common)
    matches = _isclose(actual, expected, rtol, atol, options["equal_nan"])
    if matches.all():
        return
    if actual.shape == ():
        message = _scalar_message(actual.item(), expected.item(), rtol, atol)
    else:
        message = _tensor_message(actual, expected, matches, rtol, atol)
    raise _Mismatch(AssertionError, message, path)


def _isclose(actual, expected, rtol, atol, equal_nan) -> np.ndarray:
    """`torch.isclose`: equal values (infinities included) always match; NaNs only with
    `equal_nan`; otherwise `|a - e| <= atol + rtol * |e|`, for finite values."""
    if actual.dtype.kind in "biu" and rtol == 0 and atol == 0:
        return actual == expected
    with np.errstate(invalid="ignore", over="ignore"):
        close = actual == expected
        if equal_nan:
            close |= np.isnan(actual) & np.isnan(expected)
        if actual.dtype.kind in "biu":
            actual, expected = actual.astype(np.float64), expected.astype(np.float64)
        diff = np.abs(actual - expected)
        bound = atol + rtol * np.abs(expected)
        return close | (np.isfinite(diff) & (diff <= bound))


def _tensor_message(actual, expected, matches, rtol, atol) -> str:
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, m = actual.ravel(), expected.ravel(), matches.ravel()
    if a.dtype.kind in "biu":  # PyTorch subtracts integers (and booleans) as int64
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[m] = 0
        rel_diff = abs_diff / np.abs(e)
    if a.dtype.kind == "i":  # int64 / int64 is of the default float dtype in PyTorch
        rel_diff = rel_diff.astype(get_default_dtype())
    rel_diff[m] = 0
    abs_i, rel_i = _argmax(abs_diff), _argmax(rel_diff)
    return _message("Tensor-likes", extra, abs_diff[abs_i].item(), _index(abs_i, actual.shape),
                    atol, rel_diff[rel_i].item(), _index(rel_i, actual.shape), rtol)  # fmt: skip


def _argmax(values: np.ndarray) -> int:
    """`torch.max(values, 0)`'s index: the first NaN if there is one (NaN propagates)."""
    nans = np.flatnonzero(np.isnan(values)) if values.dtype.kind in "fc" else ()
    return int(nans[0]) if len(nans) else int(np.argmax(values))


def _index(flat: int, shape) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape))
