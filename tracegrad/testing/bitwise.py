"""Running a program two ways, as plain NumPy (the oracle) and traced by tracegrad, and
comparing the results bit for bit: equal pytree structure, shapes, dtypes and bits.
"""

from __future__ import annotations

import numpy as np

from tracegrad import tree
from tracegrad.api.jit import make_graph


def run_numpy(program, args):
    """The program run as plain NumPy (the oracle)."""
    fn = getattr(program, "fn", program)
    return fn(*args)


def run_traced(program, args):
    """The program traced with `tracegrad.make_graph` and run by the interpreter."""
    fn = getattr(program, "fn", program)
    graph = make_graph(fn)(*args)
    return graph(*args)


def _leaf_text(x) -> str:
    x = np.asarray(x)
    if x.dtype.kind == "f" and x.ndim == 0:
        return f"{x.item()!r} ({float(x).hex()})"
    return repr(x.item()) if x.ndim == 0 else repr(x)


def assert_bitwise_equal(actual, expected, err_msg: str = "", *, nan_payloads: bool = True) -> None:
    """Equal pytree structure, and per leaf equal shape, dtype and bits (signed zeros and NaN
    payloads included). NumPy scalars and 0-d arrays compare alike; Python scalars compare as
    the NumPy values they promote like (float64, int64, bool).

    `nan_payloads=False` accepts any NaN for a NaN: when two NaNs meet, NumPy's scalar path
    (`a + b` on NumPy scalars) and its array path (`np.add`) keep different ones, so code that
    may take either (the code generator writes 0-d arithmetic as operators) agrees on every
    bit except which NaN survives."""
    prefix = f"{err_msg}: " if err_msg else ""
    a_leaves, a_tree = tree.flatten(actual)
    e_leaves, e_tree = tree.flatten(expected)
    if a_tree != e_tree:
        raise AssertionError(f"{prefix}structures differ: got {a_tree}, expected {e_tree}")
    for k, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        where = f"leaf {k}: " if len(a_leaves) > 1 else ""
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape:
            raise AssertionError(f"{prefix}{where}shapes differ: got {a.shape}, expected {e.shape}")
        if a.dtype != e.dtype:
            raise AssertionError(f"{prefix}{where}dtypes differ: got {a.dtype}, expected {e.dtype}")
        mask = _bits(a) != _bits(e)
        if a.dtype.kind == "c":
            mask = mask.any(axis=-1)
        if not nan_payloads and a.dtype.kind in "fc":
            mask &= ~(np.isnan(a) & np.isnan(e))
        if mask.any():
            first = np.unravel_index(int(np.flatnonzero(mask)[0]), a.shape)
            idx = tuple(int(i) for i in first)
            raise AssertionError(
                f"{prefix}{where}values differ at {int(mask.sum())} of {a.size} elements; first "
                f"at index {idx}: got {_leaf_text(a[idx])}, expected {_leaf_text(e[idx])}"
            )


def _bits(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    if x.dtype.kind == "f" and x.dtype.itemsize in (2, 4, 8):
        return x.view(f"u{x.dtype.itemsize}")
    if x.dtype.kind == "c":  # the real and imaginary parts' bits on a last axis of two
        return x.view(f"u{x.dtype.itemsize // 2}").reshape(*x.shape, 2)
    return x
