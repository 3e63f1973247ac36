"""`debug_nans` / `debug_infs`: the first NaN (inf) a primitive produces raises
FloatingPointError naming the primitive, and for a node of a backward pass the forward
primitive it differentiates and the user's line that created it.

The rule (no false alarms): a primitive is blamed only for a NaN it *creates*, that is when
its output holds a NaN and none of its inputs does (likewise inf with `debug_infs`). A NaN the
user passed in, or one that merely propagates, is never reported; `nan - nan` is not, but
`inf - inf` is (the NaN is born there).
"""

from __future__ import annotations

import numpy as np

from tracegrad import config
from tracegrad.diagnostics import patterns
from tracegrad.diagnostics.provenance import Origin, current, origin_of, user_site

_ORDINALS = {1: "derivative", 2: "second derivative", 3: "third derivative"}


def checking() -> bool:
    return config.debug_nans or config.debug_infs


def checked_impl(prim, args, params):
    """`prim.impl(*args, **params)`, checked: the eager path of `bind` in debug mode."""
    out = prim.impl(*args, **params)
    check(prim.name, args, prim.results(out), current())
    return out


def check_node(node, args, outs) -> None:
    """Check the values a concrete trace computed for `node` (its origin recorded)."""
    check(node.prim.name, args, outs, origin_of(node) or current())


def check(prim_name: str, args, outs, origin: Origin | None) -> None:
    """Raise FloatingPointError if one of `outs` holds a NaN (inf) that no input held."""
    in_nan = in_inf = None
    for out in outs:
        nan, inf = _flags(out)
        if not (nan or inf):
            continue
        if in_nan is None:
            in_nan, in_inf = _input_flags(args)
        if inf and not in_inf:
            patterns.note_inf(origin or Origin(prim_name, user_site(), 0))
            if config.debug_infs:
                _fail("inf", prim_name, args, out, origin)
        if nan and not in_nan and config.debug_nans:
            _fail("nan", prim_name, args, out, origin)


def _flags(value) -> tuple[bool, bool]:
    """(has NaN, has inf) of a floating-point or complex value; (False, False) otherwise."""
    if not isinstance(value, np.ndarray | np.generic | float | complex):
        return False, False
    a = np.asarray(value)
    if a.dtype.kind not in "fc":
        return False, False
    if np.isfinite(a).all():
        return False, False
    return bool(np.isnan(a).any()), bool(np.isinf(a).any())


def _input_flags(args) -> tuple[bool, bool]:
    nan = inf = False
    for a in args:
        n, i = _flags(a)
        nan, inf = nan or n, inf or i
    return nan, inf


def _fail(kind: str, prim_name: str, args, out, origin: Origin | None) -> None:
    out = np.asarray(out)
    test = np.isnan if kind == "nan" else np.isinf
    index = tuple(int(i) for i in np.argwhere(test(out))[0]) if out.ndim else ()
    operands = _operands_at(args, out.shape, index)
    if origin is None:
        origin = Origin(prim_name, user_site(), 0)
    lines = [_headline(kind, prim_name, origin), _detail(prim_name, operands, out[index], index)]
    lines += patterns.explain(kind, origin, operands if prim_name == "multiply" else None)
    raise FloatingPointError("\n".join(line for line in lines if line))


def check_step(origin: Origin, bar, primals, out, in_bars) -> None:
    """Check one node's vjp step on arrays (rules use NumPy's operators there, which no
    `bind` sees): a NaN (inf) in an input cotangent that neither the output cotangent nor
    the forward values held was born in the derivative of `origin`."""
    found = [(i, b) + _flags(b) for i, b in enumerate(in_bars) if b is not None]
    if not any(nan or inf for _, _, nan, inf in found):
        return
    given = [*_leaves(bar), *primals, *_leaves(out)]
    in_nan, in_inf = _input_flags(given)
    for i, b, nan, inf in found:
        if inf and not in_inf:
            patterns.note_inf(origin)
            if config.debug_infs:
                _fail_step("inf", origin, i, b, bar, primals)
        if nan and not in_nan and config.debug_nans:
            _fail_step("nan", origin, i, b, bar, primals)


def _leaves(v) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _fail_step(kind: str, origin: Origin, i: int, b, bar, primals) -> None:
    b = np.asarray(b)
    test = np.isnan if kind == "nan" else np.isinf
    index = tuple(int(k) for k in np.argwhere(test(b))[0]) if b.ndim else ()
    cot = None if isinstance(bar, tuple) else _operands_at([bar], b.shape, index)
    cot = None if not cot else cot[0]
    x = _operands_at([primals[i]], b.shape, index) if i < len(primals) else None
    at = f" at index {index}" if index else ""
    detail = f"The cotangent of input {i} of `{origin.prim}` is {_fmt(b[index])}{at}"
    if cot is not None:
        detail += f"; the cotangent reaching `{origin.prim}` there is {_fmt(cot)}"
    if x:
        detail += f" and its input {_fmt(x[0])}"
    lines = [_headline(kind, None, origin), detail + "."]
    lines += patterns.explain(kind, origin, None, cotangent=cot)
    raise FloatingPointError("\n".join(lines))


def _headline(kind: str, prim_name: str | None, origin: Origin) -> str:
    what = "invalid value (nan)" if kind == "nan" else "infinite value (inf)"
    flag = "debug_nans" if kind == "nan" else "debug_infs"
    if origin.order == 0:
        where = f"`{prim_name}`" + (
            f" (forward `{origin.prim}`)" if origin.prim != prim_name else ""
        )
        return f"tracegrad ({flag}): {what} produced by {where} at {origin.location()}"
    nth = _ORDINALS.get(origin.order, f"order-{origin.order} derivative")
    step = f"`{prim_name}` in its vjp rule" if prim_name else "its vjp rule"
    return (
        f"tracegrad ({flag}): {what} produced in the backward pass, in the {nth} of "
        f"`{origin.prim}` created at {origin.location()}, by {step}"
    )


def _operands_at(args, shape, index) -> list | None:
    """Each array input's element at `index` of the output (after broadcasting), or None
    when the output is not elementwise in its inputs (a reduction, a matmul)."""
    vals = []
    for a in args:
        if not isinstance(a, np.ndarray | np.generic | bool | int | float | complex):
            continue
        arr = np.asarray(a)
        try:
            vals.append(np.broadcast_to(arr, shape)[index])
        except ValueError:
            return None
    return vals


def _detail(prim_name, operands, value, index) -> str:
    at = f" at index {index}" if index else ""
    if operands is None:
        return f"The result is {value}{at}; its inputs hold no such value."
    shown = ", ".join(_fmt(v) for v in operands)
    return f"{prim_name}({shown}) = {_fmt(value)}{at}."


def _fmt(v) -> str:
    v = np.asarray(v)
    return repr(v.item()) if v.ndim == 0 else repr(v)
