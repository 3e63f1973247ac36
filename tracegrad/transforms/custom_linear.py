"""Is a traced rule linear in some of its inputs? Transposing a custom rule (a custom_vjp's bwd
for forward mode, a custom_jvp's tangent map for reverse mode) is right only if it is.

The check is structural and conservative: every node that reads a marked input (directly or
through other such nodes) must be a primitive linear in what it reads of them: a structural
operation (reshape, slicing, sums, concatenation...), addition, negation, a conversion, a
product with exactly one such operand (the primitives declared `bilinear`), a division whose
numerator alone is such, `where` with a condition that is not. Anything else is refused with
the primitive's name, rather than transposed into a wrong derivative.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrad.ir.graph import Graph
from tracegrad.primitives import (
    broadcasting,
    complex_parts,
    elementwise,
    indexing,
    reduction,
    scatter,
    shape,
    slicing,
    views,
)

E = elementwise

#: linear in every input (each of them may carry the linear variable)
LINEAR = frozenset(
    {
        E.add_p, E.subtract_p, E.negative_p, E.positive_p, E.astype_p, E.real_p, E.imag_p,
        E.conjugate_p, E.stop_gradient_p, complex_parts.complex_p,
        broadcasting.broadcast_to_p, broadcasting.sum_p, reduction.cumsum_p,
        views.reshape_p, views.transpose_p, views.expand_dims_p, views.squeeze_p, views.flip_p,
        shape.concatenate_p, shape.split_p, shape.repeat_p, shape.tile_p, shape.pad_p,
        shape.ascontiguousarray_p, slicing.slice_p, slicing.pad_strided_p,
        indexing.gather_p, indexing.scatter_add_p, scatter.add_at_p,
    }
)  # fmt: skip


def _linear_in(node, marked: list[bool]) -> bool:
    prim = node.prim
    if prim in LINEAR or not prim.differentiable:
        return True
    if prim.bilinear:
        return sum(marked) == 1
    if prim is E.divide_p or prim is E.multiply_p:
        return not marked[1] if prim is E.divide_p else sum(marked) == 1
    if prim is E.where_p:  # where(cond, x, y): linear in x and y
        return not marked[0]
    return False


def check_linear(graph: Graph, lin: Sequence[bool], what: str, of: str) -> None:
    """Raise TypeError naming the first node of `graph` that is not linear in the inputs
    marked in `lin` (`what`: the rule, `of`: what those inputs are, for the message)."""
    dep = {e.node for e, m in zip(graph.inputs, lin) if m}
    for node in graph.nodes:
        marked = [e.node in dep for e in node.inputs]
        if not any(marked):
            continue
        if not _linear_in(node, marked):
            raise TypeError(
                f"{what} is not linear in its {of} as far as tracegrad can tell (it applies "
                f"{node.prim.name!r} to them), so it cannot be transposed into the other mode "
                "of differentiation: that mode is unavailable for this function. (Transposing "
                f"takes a rule built from sums, products with one {of[:-1]} operand, "
                "divisions by values that are not, and structural operations: no loops.)"
            )
        dep.add(node)


__all__ = ["LINEAR", "check_linear"]
