"""The built-in primitives, one family per module, and `ALL`, the explicit table of them.

The families import each other in one direction (views -> broadcasting -> slicing,
batching -> elementwise -> reduction, shape, indexing -> products -> einsum, masked; indexing ->
sorting, scatter; products, sorting -> calculus; products, einsum, shape -> linalg, fft), so
every rule can be written with the operations of the families below its own.
"""

import importlib.util

from tracegrad.primitives import (
    broadcasting,
    calculus,
    complex_parts,
    control,
    custom,
    einsum,
    elementwise,
    fft,
    indexing,
    linalg,
    masked,
    products,
    reduction,
    scatter,
    shape,
    slicing,
    sorting,
    views,
)

ALL = (
    elementwise.PRIMITIVES
    + views.PRIMITIVES
    + broadcasting.PRIMITIVES
    + slicing.PRIMITIVES
    + reduction.PRIMITIVES
    + shape.PRIMITIVES
    + indexing.PRIMITIVES
    + products.PRIMITIVES
    + einsum.PRIMITIVES
    + sorting.PRIMITIVES
    + scatter.PRIMITIVES
    + calculus.PRIMITIVES
    + masked.PRIMITIVES
    + complex_parts.PRIMITIVES
    + control.PRIMITIVES
    + custom.PRIMITIVES
    + linalg.PRIMITIVES
    + fft.PRIMITIVES
)


def _scipy_installed() -> bool:
    """Whether SciPy can be imported, found without importing it (an import hook may also
    refuse it outright: then it is missing too)."""
    try:
        return importlib.util.find_spec("scipy") is not None
    except ImportError:
        return False


# SciPy's special functions, when SciPy (an optional extra) is installed. Importing the module
# imports nothing from SciPy (it resolves SciPy's functions on first use), so `import tracegrad`
# stays as fast with SciPy as without; without SciPy the module is never imported.
if _scipy_installed():
    from tracegrad.primitives import scipy_linalg, scipy_matrix_functions, special

    ALL = ALL + special.PRIMITIVES + scipy_linalg.PRIMITIVES + scipy_matrix_functions.PRIMITIVES
    # SciPy's ODE solvers (issue 17): their rules import SciPy on first use too
    from tracegrad.primitives import ode

    ALL = ALL + ode.PRIMITIVES
    # SciPy's convolutions (issue 17): scipy.signal is imported on first use too
    from tracegrad.primitives import scipy_signal

    ALL = ALL + scipy_signal.PRIMITIVES
