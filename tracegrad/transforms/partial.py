"""Partial evaluation: split a pass over a graph into forward work and linear work.

Both `vjp` and `linearize` run a pass (the backward pass, the tangent pass) that reads the
forward values of a graph and some new inputs (cotangents, tangents). Traced with those new
inputs abstract, the pass records nodes; the ones that do not depend on a new input are
forward work (say `cos(x)` for the derivative of `sin`), computed once with the forward
graph, and their values that the rest reads become residuals. The rest is the linear graph:
residuals and new inputs in, results out (DESIGN.md §4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from tracegrad import config
from tracegrad.core import Tracer, new_trace
from tracegrad.diagnostics import provenance
from tracegrad.ir.graph import Edge, Graph, Node, arg_node, const_p, with_consts
from tracegrad.ir.types import Aval
from tracegrad.ir.verify import verify


@attrs.frozen
class Split:
    """`forward`: graph inputs -> graph outputs + residuals. `linear`: residuals + the new
    inputs -> the pass's results listed in `present` (positions in the pass's result list;
    the others were symbolically zero)."""

    forward: Graph
    linear: Graph
    n_outputs: int
    present: tuple[int, ...]


def linear_split(graph: Graph, run_pass: Callable, new_avals: Sequence[Aval], name: str) -> Split:
    """Trace `run_pass(read, new_tracers) -> results (None for zero)` and split it."""
    with new_trace() as trace:
        cache: dict[Node, tuple] = {}

        def read(node: Node) -> tuple:
            # forward values are the graph's own edges: nodes are reused, never copied
            ts = cache.get(node)
            if ts is None:
                if node.prim is const_p:
                    ts = (node.params["value"],)
                else:
                    ts = tuple(Tracer(trace, e, e.aval, None) for e in node.outputs)
                cache[node] = ts
            return ts

        new_tracers = [trace.new_arg(a) for a in new_avals]
        results = run_pass(read, new_tracers)
        present = tuple(i for i, r in enumerate(results) if r is not None)
        result_edges = [trace.output_edge(results[i]) for i in present]
    new_nodes = trace.nodes
    on_new: set[Node] = {t.edge.node for t in new_tracers}
    for node in new_nodes:
        if any(e.node in on_new for e in node.inputs):
            on_new.add(node)
    linear_nodes = _needed(new_nodes, [e.node for e in result_edges], on_new)
    # residuals: forward values (not constants) that linear nodes or results read
    residuals: list[Edge] = []
    seen: set[Edge] = set()
    for e in [e for n in linear_nodes for e in n.inputs] + result_edges:
        if e.node not in on_new and e.node.prim is not const_p and e not in seen:
            seen.add(e)
            residuals.append(e)
    own = {n for n in new_nodes if n not in on_new}
    forward_extra = _needed(new_nodes, [e.node for e in residuals if e.node in own], own)
    forward = Graph(
        graph.inputs,
        tuple(graph.outputs) + tuple(residuals),
        with_consts(tuple(graph.nodes) + tuple(forward_extra)),
        graph.in_tree,
        None,
        name=f"{graph.name}_fwd",
    )
    linear = _rebuild(
        residuals, [t.edge for t in new_tracers], linear_nodes, result_edges, f"{graph.name}_{name}"
    )
    if config.debug:
        verify(forward)
        verify(linear)
    return Split(forward, linear, len(graph.outputs), present)


def _needed(nodes: list[Node], roots: list[Node], allowed: set[Node]) -> list[Node]:
    """The nodes of `allowed` that `roots` depend on, in the order of `nodes`."""
    needed: set[Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in needed or n not in allowed:
            continue
        needed.add(n)
        stack.extend(e.node for e in n.inputs)
    return [n for n in nodes if n in needed]


def _rebuild(residuals, new_inputs, nodes, result_edges, name) -> Graph:
    """`nodes` again, reading residuals from fresh `arg` inputs."""
    remap: dict[Edge, Edge] = {}
    inputs = []
    for e in residuals:
        new = Edge(arg_node(e.aval), 0)
        remap[e] = new
        inputs.append(new)
    inputs.extend(new_inputs)
    rebuilt: list[Node] = []
    for n in nodes:
        new_ins = tuple(remap.get(e, e) for e in n.inputs)
        if new_ins == n.inputs:
            new = n
        else:
            new = Node(n.prim, new_ins, n.params, n.out_avals)
            provenance.inherit(n, new)  # tracegrad.diagnostics: keep the user's line
            for i in range(len(n.out_avals)):
                remap[Edge(n, i)] = Edge(new, i)
        rebuilt.append(new)
    outputs = tuple(remap.get(e, e) for e in result_edges)
    return Graph(tuple(inputs), outputs, with_consts(rebuilt, outputs), None, None, name=name)
