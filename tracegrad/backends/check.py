"""What the code generator asks of a backend for each node: the NumPy names its text calls,
each with a lowering, or an error that names the primitive, the name and the library; and
the operands of a ufunc cast to the loop NumPy would run, where NumPy promotes across kinds
(an int64 array beside a float64 one) and the array API standard does not."""

from __future__ import annotations

import re

import numpy as np

from tracegrad.backends.libraries import LoweringError
from tracegrad.ir.layout import Layout

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
_PYTHON = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


def scalar_only(node) -> bool:
    """A node of Python scalars only (weak 0-d inputs and output): NumPy computes it, as in
    the NumPy code, since no array of the library is involved (the library would make a
    strong value of it, or refuse two scalars)."""
    avals = [e.aval for e in node.inputs]
    out = node.out_avals
    return (
        bool(avals) and len(out) == 1 and all(a.weak_type and not a.shape for a in (*avals, *out))
    )


def promoted_args(node, args: list[str], backend) -> list[str]:
    """`args` of a node, each array operand cast to the dtype NumPy computes it in, where
    NumPy promotes across kinds (an int64 array beside a float64 one) and a library may not
    (array_api_strict refuses; JAX has promotion rules of its own): for a ufunc the loop
    NumPy picks (`ufunc.resolve_dtypes`, Python scalars weak as NEP 50 has them); for another
    elementwise primitive (`where`, `clip`) the output's dtype, conditions left bool. A
    Python scalar of another kind than its loop is cast as a Python scalar (it stays weak);
    under JAX, whose weak types follow NEP 50 too, scalars are left alone."""
    prim = node.prim
    ufunc = prim.impl
    avals = [e.aval for e in node.inputs]
    weak = [a.weak_type and not a.shape for a in avals]
    if isinstance(ufunc, np.ufunc):
        key = tuple(_WEAK[a.dtype.kind] if w else a.dtype for a, w in zip(avals, weak))
        try:
            wanted = ufunc.resolve_dtypes(key + (None,) * ufunc.nout)[: ufunc.nin]
        except (TypeError, ValueError):  # no loop: the impl would refuse these dtypes too
            return args
    elif prim.layout is Layout.ELEMENTWISE and len(avals) > 1 and len(node.out_avals) == 1:
        dtype = node.out_avals[0].dtype
        wanted = [a.dtype if a.dtype.kind == "b" != dtype.kind else dtype for a in avals]
    else:
        return args
    out = []
    for a, w, name, want in zip(avals, weak, args, wanted):
        if a.dtype == want or (w and (a.dtype.kind == want.kind or backend.name == "jax")):
            out.append(name)
        elif w:
            out.append(f"{_PYTHON[want.kind]}({name})")
        else:
            out.append(f"np.astype({name}, np.dtype({want.name!r}))")
    return out
