"""Tools shared by the rules of the control-flow primitives (`tracegrad.transforms.control`,
`control_batch`): tracing a derived sub-graph (the jvp, the halves of the vjp, the batched form
of a body) once, cached on the graph it comes from, and the small rearrangements of inputs,
outputs and operands every rule needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tracegrad.core import Boxed, Tracer, new_trace
from tracegrad.ir.graph import Edge, Graph, arg_node
from tracegrad.ir.types import Aval, shape_of
from tracegrad.primitives.elementwise import astype

# -- tracing derived sub-graphs ---------------------------------------------------------------


def trace_closed(fn: Callable, avals: Sequence[Aval], name: str) -> Graph:
    """`fn(*tracers) -> list of outputs`, traced abstractly into a graph that reads nothing but
    its inputs (a derived sub-graph never closes over a value of the trace that builds it)."""
    with new_trace(keep_values=False) as trace:
        args = [trace.new_arg(a) for a in avals]
        outs = fn(*args)
        edges = [trace.output_edge(o) for o in outs]
    if trace.captured:
        raise AssertionError(f"internal error: the derived graph {name} closes over a value")
    return trace.graph([t.edge for t in args], edges, name=name)


def cached(graph: Graph, key, build: Callable):
    hit = graph._cache.get(key)
    if hit is None:
        hit = graph._cache[key] = build()
    return hit


def zeros(aval: Aval) -> np.ndarray:
    """A zero derivative of a value of `aval`, materialized (a loop carries arrays)."""
    return np.zeros(aval.shape, aval.strengthen().dtype)


def cast(v, aval: Aval):
    """`v` with exactly `aval`'s dtype and weak type (a loop's carry keeps one type)."""
    if isinstance(v, Tracer):
        return v if v.aval == aval else astype(v, aval.dtype)
    if isinstance(v, Boxed):  # a PyTorch-style tensor: never weak; cast by a recorded astype
        return v if v.dtype == aval.dtype else astype(v, aval.dtype)
    if aval.weak_type and not shape_of(v):
        return v
    return np.asarray(v, aval.dtype)


def strong(v, aval: Aval):
    """A tangent or cotangent operand of a derived loop or branch: of `aval`, never weak."""
    return cast(v, aval.strengthen())


def reorder(graph: Graph, ins: Sequence[int], outs: Sequence[int]) -> Graph:
    """`graph` with its inputs and outputs listed in another order (the same nodes)."""
    return Graph(
        tuple(graph.inputs[i] for i in ins),
        tuple(graph.outputs[i] for i in outs),
        graph.nodes,
        name=graph.name,
    )


def with_inputs(graph: Graph, avals: Sequence[Aval]) -> Graph:
    """`graph` taking extra inputs of `avals` after its own, which it ignores."""
    extra = tuple(Edge(arg_node(a), 0) for a in avals)
    return Graph(graph.inputs + extra, graph.outputs, graph.nodes, name=graph.name)


def depends(graph: Graph, marked: Sequence[bool]) -> list[bool]:
    """For each output: whether it depends on an input marked in `marked` (one loop)."""
    dep = {e.node for e, m in zip(graph.inputs, marked) if m}
    for node in graph.nodes:
        if any(e.node in dep for e in node.inputs):
            dep.add(node)
    return [e.node in dep for e in graph.outputs]


def split(seq, *sizes):
    out, k = [], 0
    for n in sizes:
        out.append(list(seq[k : k + n]))
        k += n
    out.append(list(seq[k:]))
    return out


__all__ = [
    "cached",
    "cast",
    "depends",
    "reorder",
    "split",
    "strong",
    "trace_closed",
    "with_inputs",
    "zeros",
]
