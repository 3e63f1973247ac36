"""The row type of the per-primitive table `SAMPLES` (merged in this package's __init__)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np
from hypothesis import strategies as st

#: the real dtype in which a complex row draws its real parts
REAL_OF = {
    np.dtype(np.complex64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.float64),
}


#: `Sample(complex=FLOATS)`: every float operand may be complex (operands of any number)
FLOATS = "floats"


@attrs.frozen
class Sample:
    """How to exercise one primitive.

    `draw(data, dtype)` returns `(args, params)`: the positional inputs of `bind(prim, *args,
    **params)` (NumPy arrays; the float ones of `dtype`; ints/bools for index-like inputs) and
    its params, drawn with hypothesis (`data` is a `st.DataObject`). Values stay inside the
    primitive's smooth domain, away from kinks and ties, so central finite differences are a
    fair oracle. `tol` is the relative tolerance of derivative checks in float64; `fd=False`
    marks primitives that are not differentiable (their vjp must give no cotangent).

    `ints` lists the operands that may be integers instead: `(position, lo, hi, scalars)`,
    values in [lo, hi] inside the smooth domain, as an integer array of the operand's shape
    or, when `scalars`, also a Python int or a NumPy integer scalar (which broadcast).

    `complex` says how the row draws complex inputs (for complex64 and complex128), where NumPy
    accepts them: a tuple of the operands that become complex (the row's own real draw, in the
    matching real dtype, plus `1j` times an imaginary part in [-imag, imag]: the real parts keep
    the row's domain, order and distinctness, and a branch cut on the real axis stays away), or
    a function `draw(data, complex_dtype)` of its own, or `FLOATS` for every float operand.
    `mixed`: the row is also drawn with one of
    those operands real (the promotion boundary, where a real operand takes the real part of
    its cotangent). An empty `complex`: NumPy refuses complex here, or
    the operation has no complex meaning (an index array).

    `hermitian`: the operands (stacks of square matrices) of which the primitive reads one
    triangle and differentiates the Hermitian part (cholesky, eigh): derivative checks move
    them only in Hermitian directions. `fd_outputs`: the outputs finite differences check
    (None: all); the others are defined up to a gauge LAPACK picks (the sign of `eig`'s
    eigenvectors, which can jump between nearby inputs) and are checked by the adjoint
    identity here and on invariant quantities in their own tests. `fd_unordered`: outputs
    whose last axis is a set in an order LAPACK picks (`eig`'s eigenvalues, which a nearby
    input can list in another order): finite differences match each entry to the nearest of
    the unmoved input's before differencing. `fd_gauge`: a function of the outputs that fixes
    a gauge LAPACK picks, constant near any input (the sign of each of `svd`'s singular
    pairs); the derivative checks then differentiate `fd_gauge(f(x))`, through the rules.
    """

    draw: Callable
    tol: float = 1e-6
    fd: bool = True
    ints: tuple = ()
    complex: tuple | str | Callable = ()
    mixed: bool = False
    imag: float = 0.5
    hermitian: tuple = ()
    fd_outputs: tuple | None = None
    fd_unordered: tuple = ()
    fd_gauge: Callable | None = None

    @property
    def takes_complex(self) -> bool:
        return bool(self.complex)

    def draw_complex(self, data, dtype, mixed: bool = False):
        """`(args, params)` with complex inputs of `dtype` (complex64 or complex128); with
        `mixed` (for a `mixed` row of two or more such operands), one of them stays real."""
        dtype = np.dtype(dtype)
        if callable(self.complex):
            return self.complex(data, dtype)
        args, params = self.draw(data, REAL_OF[dtype])
        if self.complex == FLOATS:
            positions = [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]
        else:
            positions = list(self.complex)
        if mixed and self.mixed and len(positions) > 1:
            positions.remove(data.draw(st.sampled_from(positions), label="the real operand"))
        args = list(args)
        for i in positions:
            args[i] = with_imaginary(data, args[i], dtype, self.imag)
        return tuple(args), params


def with_imaginary(data, x, dtype, imag: float = 0.5):
    """`x` (real) plus `1j` times an imaginary part in [-imag, imag], as `dtype` (complex)."""
    x = np.asarray(x)
    n = int(x.size)
    parts = data.draw(
        st.lists(st.floats(-imag, imag, allow_nan=False, width=32), min_size=n, max_size=n),
        label="imaginary parts",
    )
    im = np.asarray(parts, np.float64).reshape(x.shape)
    z = np.empty_like(x, dtype=dtype)  # x's memory layout kept (a transposed view stays one)
    z[...] = x + 1j * im
    return z
