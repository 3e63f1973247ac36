"""`Primitive`: one operation with every rule that tracegrad knows about it.

Rules live on the primitive (as in JAX), so one block in `tracegrad/primitives/` says all there
is to say about an operation: how it runs (`impl`), what it returns (`shape`), how it
differentiates (`jvp`, `vjp`), how it batches (`batch`) and how the code generator writes it
(`emit`). Calling a primitive binds it to its arguments through `tracegrad.core.bind`.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs


@attrs.frozen(eq=False, repr=False)
class Primitive:
    name: str
    impl: Callable
    shape: Callable
    jvp: Callable | None = None
    vjp: Callable | None = None
    batch: Callable | None = None
    emit: Callable | None = None
    multiple_results: bool = False
    # Index of the input whose buffer the output may share (reshape, transpose, basic
    # indexing): the memory analysis counts no bytes for it and keeps the base alive.
    view_of: int | None = None
    # False for operations whose outputs carry no derivative (comparisons, floor, argmax):
    # their vjp is "no gradient" by construction, not an omission.
    differentiable: bool = True

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__
