"""What the code generator asks of a backend for each node: the NumPy names its text calls,
each with a lowering, or an error that names the primitive, the name and the library; and
the operands of a ufunc cast to the loop NumPy would run, where NumPy promotes across kinds
(an int64 array beside a float64 one) and the array API standard does not."""

from __future__ import annotations

import re

import numpy as np

from tracegrad.backends.libraries import LoweringError

_NP_NAME = re.compile(r"(?<![\w.])np\.([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)")
_IMPORT = re.compile(r"^import ([\w.]+) as (\w+)$")


def lowering_error(prim, backend, why: str) -> LoweringError:
    return LoweringError(
        f"jit: the primitive {prim.name} has no lowering for {backend.name} arrays: {why}. "
        f"Run this function on NumPy arrays (np.asarray), or leave {prim.name} out of it"
    )


def lowered_code(prim, backend, statements: list[str], expr: str, used: set[str]):
    """One node's code for `backend`: (its statements, its expression), with SciPy's special
    functions read as lowered names too (`import scipy.special as _s` dropped, `_s.erf(x)`
    written `np.scipy.special.erf(x)`), every name called checked to have a lowering and added
    to `used`; another import, or a name without a lowering, is refused."""
    aliases: dict[str, str] = {}
    kept = []
    for line in statements:
        found = _IMPORT.match(line.strip())
        if found is None:
            kept.append(line)
            continue
        module, alias = found.groups()
        if module != "scipy.special":
            raise lowering_error(prim, backend, f"its code imports {module}")
        aliases[alias] = module

    def rewrite(line: str) -> str:
        for alias, module in aliases.items():
            line = re.sub(rf"(?<![\w.]){alias}\.", f"np.{module}.", line)
        return line

    kept, expr = [rewrite(line) for line in kept], rewrite(expr)
    for line in (*kept, expr):
        for name in _NP_NAME.findall(line):
            if backend.resolves(name):
                used.add(name)
            elif name.startswith("tg_"):  # (lowered.LOWERED)
                raise lowering_error(
                    prim,
                    backend,
                    f"its code needs {name[3:].replace('_', ' ')}, which the "
                    "array API standard lacks and tracegrad lowers for dask, JAX and CuPy only",
                )
            elif name.startswith("scipy."):
                raise lowering_error(
                    prim, backend, f"{backend.name} has no {name} that tracegrad knows of"
                )
            else:
                raise lowering_error(
                    prim,
                    backend,
                    f"its code calls np.{name}, which neither the array API "
                    f"standard nor {backend.name}'s own module has",
                )
    return kept, expr


_WEAK = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def promoted_args(node, args: list[str]) -> list[str]:
    """`args` of a ufunc node, each operand whose dtype differs from the loop NumPy picks for
    these operands (`ufunc.resolve_dtypes`, Python scalars weak as NEP 50 has them) cast to
    it: the same values NumPy computes, written so a library that promotes only within a
    kind (array_api_strict) takes them."""
    ufunc = node.prim.impl
    if not isinstance(ufunc, np.ufunc) or ufunc.nin < 2:
        return args
    avals = [e.aval for e in node.inputs]
    weak = [a.weak_type and not a.shape for a in avals]
    key = tuple(_WEAK[a.dtype.kind] if w else a.dtype for a, w in zip(avals, weak))
    try:
        loop = ufunc.resolve_dtypes(key + (None,) * ufunc.nout)
    except (TypeError, ValueError):  # no loop: the impl would refuse these dtypes too
        return args
    out = []
    for a, w, name, want in zip(avals, weak, args, loop):
        if a.dtype == want or (w and a.dtype.kind == want.kind):
            out.append(name)
        else:
            out.append(f"np.astype({name}, np.dtype({want.name!r}))")
    return out
