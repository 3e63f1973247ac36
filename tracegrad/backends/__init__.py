"""Other array libraries under `jit`: dask (and dask.distributed), JAX, CuPy, array-api-strict.

tracegrad's graphs are plain array programs, so the code generator's text runs on any
library whose namespace follows the Python array API standard: NumPy runs it as it is (the
fast path, today's code bit for bit); for another library the same text runs with `np` bound
to that library's lowered names (`lowered`). `jit` picks the backend from the arrays of a
call (`libraries.backend_of`); see docs/backends.md for what each one is for.
"""

from tracegrad.backends.libraries import (
    Backend,
    BackendError,
    LoweringError,
    backend_of,
    get_backend,
    library_of,
)

__all__ = ["Backend", "BackendError", "LoweringError", "backend_of", "get_backend", "library_of"]
