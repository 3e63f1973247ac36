"""Taylor mode: the series pass over a graph.

`taylor_pass` walks a graph in order, as the tangent pass does, calling each primitive's
`taylor` rule on the forward values and the truncated Taylor series of its inputs (a list of
K coefficients, each None for a structural zero; None for an input that does not move). It
binds ordinary primitives, so it computes when given arrays and records when given tracers:
`jit`, `grad` and `vmap` of a jet are ordinary traces of this pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrad.ir.graph import Edge, Graph, Node, const_p
from tracegrad.transforms.vjp import Reader, conform


def _conform_series(s, aval, name: str):
    """One value's coefficients as the value needs them (None for an integer value, which
    carries no derivative; each term its shape and dtype), None if all are zero."""
    if s is None:
        return None
    terms = [conform(t, aval, "jvp", name) for t in s]
    return None if all(t is None for t in terms) else terms


def _missing_rule(prim) -> NotImplementedError:
    return NotImplementedError(
        f"jet: the primitive {prim.name!r} has no Taylor rule, so tracegrad cannot propagate a "
        "Taylor series through it. Give it one (Primitive(..., taylor=...); "
        "tracegrad.primitives.series has the shared constructors), take higher derivatives of "
        "this function by nesting tg.jvp or tg.grad instead, or keep the value out of the "
        "series (tg.stop_gradient) if its derivatives are meant to be zero."
    )


def taylor_pass(graph: Graph, read: Reader, series: Sequence) -> list:
    """Series of `graph.outputs` (None where structurally zero) given the inputs' series."""
    sers: dict[Node, tuple] = {}  # one series (or None) per output of each moving node
    for e, s in zip(graph.inputs, series):
        s = _conform_series(s, e.aval, "an input")
        if s is not None:
            sers[e.node] = (s,)

    def series_of(e: Edge):
        ss = sers.get(e.node)
        return None if ss is None else ss[e.index]

    for node in graph.nodes:
        if node.prim is const_p:
            continue
        ins = [series_of(e) for e in node.inputs]
        if all(s is None for s in ins):
            continue
        prim = node.prim
        if not prim.differentiable:
            continue  # its outputs carry no derivative (comparisons, floor, argmax)
        if prim.taylor is None:
            raise _missing_rule(prim)
        primals = [read(e[0])[e[1]] for e in node.inputs]
        out = prim.result(read(node))
        s_out = prim.taylor(tuple(primals), tuple(ins), out=out, **node.params)
        if s_out is None:
            continue
        ss = tuple(
            _conform_series(s, a, prim.name) for s, a in zip(prim.results(s_out), node.out_avals)
        )
        if any(s is not None for s in ss):
            sers[node] = ss
    return [series_of(e) for e in graph.outputs]
