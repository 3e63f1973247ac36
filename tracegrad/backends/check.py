"""What the code generator asks of a backend for each node: the NumPy names its text calls,
each with a lowering, or an error that names the primitive, the name and the library; and
the operands of a ufunc cast to the loop NumPy would run, where NumPy promotes across kinds
(an int64 array beside a float64 one) and the array API standard does not."""

from __future__ import annotations

import importlib
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


def lowered_names(prim, backend, lines: list[str]) -> set[str]:
    """The NumPy names `lines` (one node's code) call, each checked to have a lowering for
    `backend`; a module imported by the lines is allowed only where the library's arrays
    pass through its functions (SciPy's special functions are ufuncs, which dask arrays
    take)."""
    names: set[str] = set()
    aliases: dict[str, str] = {}
    for line in lines:
        found = _IMPORT.match(line.strip())
        if found:
            module, alias = found.groups()
            if module != "scipy.special" or backend.name != "dask":
                raise lowering_error(prim, backend, f"its code imports {module}")
            aliases[alias] = module
            continue
        for alias in aliases:
            for name in re.findall(rf"(?<![\w.]){alias}\.(\w+)", line):
                special = importlib.import_module("scipy.special")  # (SciPy is optional)
                if not isinstance(getattr(special, name, None), np.ufunc):
                    raise lowering_error(prim, backend, f"scipy.special.{name} is not a ufunc")
        for name in _NP_NAME.findall(line):
            # a dotted chain may end in an attribute of the result (np.add.reduce(...).T
            # does not occur; np.linalg.solve does): the longest prefix that resolves
            if not backend.resolves(name) and name.startswith("tg_"):  # (lowered.LOWERED)
                raise lowering_error(
                    prim,
                    backend,
                    f"its code needs {name[3:].replace('_', ' ')}, which the "
                    "array API standard lacks and tracegrad lowers for dask, JAX and CuPy only",
                )
            if not backend.resolves(name):
                raise lowering_error(
                    prim,
                    backend,
                    f"its code calls np.{name}, which neither the array API "
                    f"standard nor {backend.name}'s own module has",
                )
            names.add(name)
    return names


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
