"""Known causes of a NaN gradient, recognised from the values at the NaN and from where the
last inf of the pass was born, each with its fix: the where/sqrt pattern (a zero cotangent
times an infinite derivative) and the norm-at-zero pattern (an infinite cotangent times a
zero derivative)."""

from __future__ import annotations

import numpy as np

from tracegrad.diagnostics.provenance import Origin

# primitives whose derivative is infinite somewhere they are finite (sqrt and log at 0, ...)
SINGULAR = frozenset(
    "sqrt cbrt log log2 log10 log1p power arcsin arccos arccosh arctanh reciprocal divide "
    "true_divide float_power".split()
)
_last_inf: list[Origin | None] = [None]


def note_inf(origin: Origin) -> None:
    """Remember where the most recent inf was born (even with debug_infs off)."""
    _last_inf[0] = origin


def explain(kind: str, origin: Origin, product=None, cotangent=None) -> list[str]:
    """Lines naming the pattern behind a NaN born in a backward step, and its fix.

    `product`: the two factors of a backward `multiply` that gave the NaN (which one is the
    cotangent is then told by where the last inf was born); `cotangent`: the cotangent that
    reached the forward primitive at the NaN, when the caller knows it."""
    if kind != "nan" or origin.order == 0:
        return []
    source = _last_inf[0]
    inf_from_here = source is None or source.same_op(origin)
    if cotangent is not None:
        cot = np.asarray(cotangent)
        zero_cot, inf_cot = bool(cot == 0), bool(np.isinf(cot))
    elif product is not None and len(product) == 2 and all(np.ndim(v) == 0 for v in product):
        a, b = (np.asarray(v) for v in product)
        if not ((a == 0 and np.isinf(b)) or (b == 0 and np.isinf(a))):
            return []
        zero_cot, inf_cot = inf_from_here, not inf_from_here
    else:
        return []
    if zero_cot and origin.prim in SINGULAR:
        return _where_pattern(origin)
    if inf_cot and not inf_from_here and source.prim in SINGULAR:
        return _norm_pattern(origin, source)
    return []


def _where_pattern(origin: Origin) -> list[str]:
    f = origin.prim
    return [
        f"Cause: 0 * inf. The cotangent reaching `{f}` is 0 here, but the derivative of `{f}` "
        "is infinite at this input. This is the where pattern when a where (or a mask) did "
        f"not select this value: np.where(x > 0, np.{f}(x), 0.0) still evaluates (and "
        f"differentiates) `{f}` at the unselected, unsafe inputs, and sends them a zero "
        "cotangent.",
        "Fix (the double-where idiom): keep the unsafe input away from the branch too:\n"
        "    safe_x = np.where(x > 0, x, 1.0)\n"
        f"    y = np.where(x > 0, np.{f}(safe_x), 0.0)",
    ]


def _norm_pattern(origin: Origin, source: Origin) -> list[str]:
    return [
        f"Cause: inf * 0. An infinite cotangent reached `{origin.prim}` from the derivative "
        f"of `{source.prim}` at {source.location()}, which is infinite at this point, and the "
        f"derivative of `{origin.prim}` is 0 here. This is the norm-at-zero pattern: "
        "np.sqrt(np.sum(x**2)) (a norm) has no derivative at x = 0.",
        "Fix: choose the derivative at 0 (PyTorch's norm takes 0) with the double where:\n"
        "    sq = np.sum(x**2)\n"
        "    safe = np.where(sq > 0, sq, 1.0)\n"
        "    norm = np.where(sq > 0, np.sqrt(safe), 0.0)",
    ]
