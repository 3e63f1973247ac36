"""The row type of the per-primitive table `SAMPLES` (merged in this package's __init__)."""

from __future__ import annotations

from collections.abc import Callable

import attrs


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
    """

    draw: Callable
    tol: float = 1e-6
    fd: bool = True
    ints: tuple = ()
