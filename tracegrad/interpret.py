"""The interpreter: runs a graph node by node, dropping each value right after its last use.

Every node is applied with `bind`, so running a graph on tracers records it into the
enclosing trace: that is how a graph traced at one level is re-traced by a transform above it.
"""

from __future__ import annotations

from tracegrad import tree
from tracegrad.core import Tracer, bind
from tracegrad.ir.analysis import free_schedule
from tracegrad.ir.graph import Graph, Node, const_p


def eval_graph(graph: Graph, args, known: dict[Node, object] | None = None, keep_all: bool = False):
    """Values of `graph.outputs` given one value per input edge.

    `known` maps nodes to values already computed (the values a concrete trace kept), so a
    transform that extends a traced graph does not recompute what the trace already did.
    With `keep_all`, nothing is freed and the whole value table (per node) is returned.
    """
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph {graph.name!r} takes {len(graph.inputs)} inputs, got {len(args)}")
    env: dict[Node, object] = {}
    for e, a in zip(graph.inputs, args):
        env[e.node] = a
    frees = free_schedule(graph) if not keep_all else [()] * len(graph.nodes)
    for node, free in zip(graph.nodes, frees):
        if known is not None and node in known:
            env[node] = known[node]
        elif node.prim is const_p:
            env[node] = node.params["value"]
        else:
            vals = []
            for e in node.inputs:
                v = env[e.node] if e.node in env else _unlisted_const(e.node)
                vals.append(v[e.index] if e.node.prim.multiple_results else v)
            out = bind(node.prim, *vals, **node.params)
            if (
                node.out_avals[0].weak_type
                and not node.out_avals[0].shape
                and type(out) not in (bool, int, float, complex)  # np.float64 is a float too
                and not isinstance(out, Tracer)
            ):
                out = out.item()  # a weak value stands for a Python scalar (NEP 50 promotion)
            env[node] = out
        for dead in free:
            env.pop(dead, None)  # (a constant listed after its reader was never stored)
    if keep_all:
        return env
    outs = []
    for e in graph.outputs:
        v = env[e.node] if e.node in env else _unlisted_const(e.node)
        outs.append(v[e.index] if e.node.prim.multiple_results else v)
    return outs


def _unlisted_const(node: Node):
    # Graphs may read constants without listing them (verify allows it); anything else
    # missing from the value table is a malformed graph.
    if node.prim is const_p:
        return node.params["value"]
    raise ValueError(f"eval_graph: a {node.prim.name} node is read before it is computed")


def call_graph(graph: Graph, args, kwargs):
    """Run `graph` like the function it was traced from: same pytree of arguments and results."""
    flat, in_tree = tree.flatten((tuple(args), dict(kwargs)))
    if graph.in_tree is not None and in_tree != graph.in_tree:
        raise TypeError(
            f"graph {graph.name!r} was traced for arguments structured as {graph.in_tree}, "
            f"but was called with {in_tree}"
        )
    outs = eval_graph(graph, flat)
    if graph.out_tree is None:
        return outs
    return tree.unflatten(graph.out_tree, outs)
