"""What the code generator asks of a backend for each node: the NumPy names its text calls,
each with a lowering, or an error that names the primitive, the name and the library."""

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
            if not backend.resolves(name):
                raise lowering_error(
                    prim,
                    backend,
                    f"its code calls np.{name}, which neither the array API "
                    f"standard nor {backend.name}'s own module has",
                )
            names.add(name)
    return names
