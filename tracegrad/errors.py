"""Exceptions users meet, and the helper that points them at their own source line."""

from __future__ import annotations

import linecache
import os
import sys

import numpy as np

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


class ConcretizationError(TypeError):
    """A traced value was needed as a concrete Python value (control flow, `int()`, a shape).

    Raised under abstract tracing (`make_graph`, `jit`), where tracers carry only shapes and
    dtypes. A `TypeError`, like JAX's `ConcretizationTypeError`.
    """


class EscapedTracerError(RuntimeError):
    """A tracer was used after the trace that made it had ended (stored in a global, say)."""


def _user_frame():
    frame = sys._getframe(2)
    while frame is not None:
        fname = frame.f_code.co_filename
        if not (
            fname.startswith(_PKG_DIR)
            or fname.startswith(_NUMPY_DIR)
            or fname.startswith("<tracegrad")
            or fname.startswith("<__array_function__")
        ):
            return frame
        frame = frame.f_back
    return None


def user_frame_location() -> str:
    """`file.py:12` of the innermost frame outside tracegrad and NumPy, or `<unknown>`."""
    frame = _user_frame()
    return "<unknown>" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def user_frame_source() -> str:
    """`file.py:12` and, when the source is available, that line's code in backticks."""
    frame = _user_frame()
    if frame is None:
        return "<unknown>"
    fname, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(fname, line).strip()
    return f"{fname}:{line}" + (f" (`{text[:120]}`)" if text else "")


def array_conversion_error(aval, instead: str = "") -> TypeError:
    """The error of `np.asarray(tracer)`: converting would silently drop the derivative.
    `instead` is a last line naming a replacement (a SciPy function's tracegrad.scipy twin)."""
    return TypeError(
        f"tracegrad: cannot convert a traced {aval.str_short()} value to a NumPy array "
        f"(np.asarray/np.array would silently drop its gradient), at {user_frame_location()}."
        "\nBuild arrays of traced values with tracegrad.numpy.array or tracegrad.numpy.stack, "
        "write into one with x.at[i].set(v), or take a constant on purpose with x.item() or "
        "tg.stop_gradient(x)." + (f"\n{instead}" if instead else "")
    )
