"""The interpreter: runs a graph node by node, dropping each value right after its last use.

Every node is applied with `bind`, so running a graph on tracers records it into the
enclosing trace: that is how a graph traced at one level is re-traced by a transform above it.
"""

from __future__ import annotations

from tracegrad import config, tree
from tracegrad.core import Tracer, bind
from tracegrad.diagnostics import provenance
from tracegrad.ir.analysis import free_schedule
from tracegrad.ir.graph import Graph, Node, const_p
from tracegrad.primitives.control import keep_effect


def eval_graph(graph: Graph, args, known: dict[Node, tuple] | None = None, keep_all: bool = False):
    """Values of `graph.outputs` given one value per input edge.

    The value table holds one tuple of output values per node (one code path for primitives
    with one output and with several). `known` maps nodes to values already computed (the
    values a concrete trace kept), so a transform that extends a traced graph does not
    recompute what the trace already did. With `keep_all`, nothing is freed and the whole
    value table is returned.
    """
    if len(args) != len(graph.inputs):
        raise TypeError(f"graph {graph.name!r} takes {len(graph.inputs)} inputs, got {len(args)}")
    env: dict[Node, tuple] = {}
    for e, a in zip(graph.inputs, args):
        env[e.node] = (a,)
    frees = free_schedule(graph) if not keep_all else [()] * len(graph.nodes)
    diagnose = config.provenance or config.debug_nans or config.debug_infs
    for node, free in zip(graph.nodes, frees):
        prim = node.prim
        if known is not None and node in known:
            env[node] = known[node]
        elif prim is const_p:
            env[node] = (node.params["value"],)
        else:
            vals = [env[e.node][e.index] if e.node in env else _unlisted(e) for e in node.inputs]
            if diagnose:  # tracegrad.diagnostics: a re-bound node keeps its origin
                out = provenance.rebind(bind, node, vals)
            else:
                out = bind(prim, *vals, **node.params)
            if prim.effect:  # (a print re-run into an enclosing trace stays in its graph)
                keep_effect(out)
            aval = node.out_avals[0]
            if (
                not prim.multiple_results
                and aval.weak_type
                and not aval.shape
                and type(out) not in (bool, int, float, complex)  # np.float64 is a float too
                and not isinstance(out, Tracer)
            ):
                out = out.item()  # a weak value stands for a Python scalar (NEP 50 promotion)
            env[node] = prim.results(out)
        for dead in free:
            env.pop(dead, None)  # (a constant listed after its reader was never stored)
    if keep_all:
        return env
    return [env[e.node][e.index] if e.node in env else _unlisted(e) for e in graph.outputs]


def _unlisted(e):
    # Graphs may read constants without listing them (verify allows it); anything else
    # missing from the value table is a malformed graph.
    if e.node.prim is const_p:
        return e.node.params["value"]
    raise ValueError(f"eval_graph: a {e.node.prim.name} node is read before it is computed")


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
