"""The array libraries `jit` runs on besides NumPy, and what it needs to know of each.

A `Backend` is found from the arrays of a call (`backend_of`): the library each leaf belongs
to, read from its type's module, so no library is imported to ask. NumPy arrays, NumPy and
Python scalars belong to none (NumPy is the fast path, with today's generated code); two
other libraries in one call are an error. Each backend holds the array-API namespace of its
library (`array_api_compat.array_namespace`), the library's own module for what the standard
lacks, and its copy of the lowered names (`lowered`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math

import attrs
import numpy as np

from tracegrad.backends import lowered
from tracegrad.ir.types import Aval

# a type's top-level module -> the library's name
_MODULES = {
    "dask": "dask",
    "jax": "jax",
    "jaxlib": "jax",
    "cupy": "cupy",
    "array_api_strict": "array_api_strict",
}
# the library's own module, for the functions the standard lacks
_OWN = {
    "dask": "dask.array",
    "jax": "jax.numpy",
    "cupy": "cupy",
    "array_api_strict": "array_api_strict",
}
_EXTRA = {"dask": "tracegrad[dask]", "array_api_strict": "tracegrad[array-api]"}


class BackendError(TypeError):
    """Arrays of a call that no backend can run together, or run at all."""


class LoweringError(NotImplementedError):
    """A primitive whose generated code calls a function the backend has no lowering for."""


def library_of(x) -> str | None:
    """The array library `x` belongs to, or None for NumPy's arrays and scalars, Python's
    scalars and anything else (whose error, if any, is the caller's)."""
    module = type(x).__module__.partition(".")[0]
    return _MODULES.get(module)


@attrs.frozen(eq=False)
class Backend:
    """One array library as `jit` runs on it; see the module docstring."""

    name: str
    xp: object  # the array-API namespace
    lib: object  # the library's own module
    lowered: dict  # this library's copy of `tracegrad.backends.lowered`'s globals

    def names(self, used):
        """The `np` of a generated function that calls `used` (dotted NumPy names)."""
        return self.lowered["namespace"](used)

    def resolves(self, name: str) -> bool:
        try:
            self.lowered["resolve"](name)
        except KeyError:
            return False
        return True

    def take(self, x):
        """A NumPy array (a constant of the graph, or a NumPy argument beside this library's
        arrays) as this library's array; for dask one chunk, computed once per call."""
        if library_of(x) == self.name or type(x) in (bool, int, float, complex):
            return x
        if self.name == "dask":
            a = np.asarray(x)
            return self.lib.from_array(a, chunks=a.shape, name=False) if a.ndim else a
        return self.xp.asarray(np.asarray(x))

    def compile(self, fn):
        """`fn` as the library runs a whole function: under JAX `jax.jit(fn)` (one XLA
        program, as JAX users expect); elsewhere op by op (dask builds its graph that way)."""
        if self.name == "jax":
            return importlib.import_module("jax").jit(fn)
        return fn

    def aval(self, x, where: str) -> Aval:
        shape = tuple(x.shape)
        if any(d is None or (isinstance(d, float) and math.isnan(d)) for d in shape):
            raise BackendError(
                f"{where}: a {self.name} array of unknown shape {shape} (unknown chunk sizes); "
                "call x.compute_chunk_sizes() (dask) before passing it to a jitted function"
            )
        return Aval(shape, numpy_dtype(x.dtype))

    def __repr__(self) -> str:
        return f"<Backend {self.name}>"


def numpy_dtype(dtype) -> np.dtype:
    """NumPy's dtype for a library's dtype (array_api_strict's are objects of their own)."""
    inner = getattr(dtype, "_np_dtype", None)
    return np.dtype(inner if inner is not None else dtype)


@functools.cache
def get_backend(name: str) -> Backend:
    try:
        lib = importlib.import_module(_OWN[name])
        array_api_compat = importlib.import_module("array_api_compat")
    except ImportError as err:
        extra = _EXTRA.get(name, "array-api-compat")
        raise BackendError(
            f"jit on {name} arrays needs array-api-compat and {name}: pip install '{extra}' ({err})"
        ) from None
    probe = lib.zeros((1,))
    xp = array_api_compat.array_namespace(probe)
    namespace: dict = {"__name__": f"tracegrad.backends.lowered[{name}]"}
    exec(compile(inspect.getsource(lowered), lowered.__file__, "exec"), namespace)
    namespace["bind"](xp, lib, name)
    return Backend(name, xp, lib, namespace)


def backend_of(leaves, where: str) -> Backend | None:
    """The backend the arrays among `leaves` ask for: None when all are NumPy's (or
    scalars); an error naming both when two libraries meet."""
    found = None
    for i, x in enumerate(leaves):
        name = library_of(x)
        if name is None or name == found:
            continue
        if found is not None:
            raise BackendError(
                f"{where}: arguments from two array libraries, {found} and {name} (leaf {i}); "
                f"convert them to one library (NumPy arrays may accompany either)"
            )
        found = name
    return None if found is None else get_backend(found)
