"""Forward mode: the tangent pass over a graph, and the linearize transform.

`tangent_pass` walks a graph in order, calling each primitive's jvp rule on the forward
values and the tangents of its inputs (None for a symbolic zero: a node none of whose inputs
moves creates nothing). Like the backward pass it binds ordinary primitives, so it computes
when given arrays and records when given tracers; `linearize` traces it with abstract
tangents and splits off the forward work with `linear_split`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrad.ir.graph import Edge, Graph, Node, const_p
from tracegrad.transforms.partial import Split, linear_split
from tracegrad.transforms.vjp import Reader, conform


def tangent_pass(graph: Graph, read: Reader, tangents: Sequence) -> list:
    """Tangents of `graph.outputs` (None where structurally zero) given the inputs' tangents."""
    tans: dict[Node, tuple] = {}  # one tangent (or None) per output of each moving node
    for e, t in zip(graph.inputs, tangents):
        t = conform(t, e.aval, "jvp", "an input")
        if t is not None:
            tans[e.node] = (t,)

    def tangent_of(e: Edge):
        ts = tans.get(e.node)
        return None if ts is None else ts[e.index]

    for node in graph.nodes:
        if node.prim is const_p:
            continue
        ins = [tangent_of(e) for e in node.inputs]
        if all(t is None for t in ins):
            continue
        prim = node.prim
        if prim.jvp is None:
            raise NotImplementedError(
                f"forward mode: the primitive {prim.name!r} has no jvp rule; give it one "
                "(Primitive(..., jvp=...)), or differentiate it in reverse mode (tg.grad)"
            )
        primals = [read(e[0])[e[1]] for e in node.inputs]
        out = prim.result(read(node))
        t_out = prim.jvp(tuple(primals), tuple(ins), out=out, **node.params)
        if t_out is None:
            continue
        ts = tuple(
            conform(t, a, "jvp", prim.name) for t, a in zip(prim.results(t_out), node.out_avals)
        )
        if any(t is not None for t in ts):
            tans[node] = ts
    return [tangent_of(e) for e in graph.outputs]


def linearize_graph(graph: Graph, wrt: Sequence[bool] | None = None) -> Split:
    """Split forward-mode differentiation of `graph`: `split.linear` maps residuals and one
    tangent per input (those in `wrt`) to the output tangents listed in `split.present`."""
    wrt = [True] * len(graph.inputs) if wrt is None else list(wrt)
    idx = [i for i, w in enumerate(wrt) if w]
    avals = [graph.inputs[i].aval.strengthen() for i in idx]

    def run(read, ts):
        full = [None] * len(graph.inputs)
        for i, t in zip(idx, ts):
            full[i] = t
        return tangent_pass(graph, read, full)

    return linear_split(graph, run, avals, "lin")
