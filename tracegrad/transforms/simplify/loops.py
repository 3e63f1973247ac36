"""Dead outputs of control flow: a scan's ys or a cond's outputs that nothing reads.

Dead-code elimination drops whole nodes; a control-flow node whose other outputs are read
stays, and would still compute (and stack, for a scan) the dead ones every step. `prune_outputs`
rebuilds such a node with a sub-graph that no longer returns them, so the work that only fed
them goes too (the reverse scan of a gradient computes the xs' cotangents whether or not they
are wanted, for instance). A scan's carries are never dropped: each step reads them.
"""

from __future__ import annotations

from tracegrad.ir.graph import Edge, Graph, Node, Params, with_consts
from tracegrad.primitives import control


def _outputs_graph(graph: Graph, keep: list[int]) -> Graph:
    """`graph` returning only the outputs at `keep`, with the nodes they need (and effects)."""
    outputs = tuple(graph.outputs[k] for k in keep)
    reach: set[Node] = set()
    stack = [e.node for e in outputs] + [n for n in graph.nodes if n.prim.effect]
    while stack:
        n = stack.pop()
        if n not in reach:
            reach.add(n)
            stack.extend(e.node for e in n.inputs)
    nodes = with_consts([n for n in graph.nodes if n in reach], outputs)
    pruned = Graph(graph.inputs, outputs, nodes, name=graph.name)
    if "residual_of" in graph._cache:
        pruned._cache["residual_of"] = graph._cache["residual_of"]
    return pruned


def _kept(node: Node, used: set) -> list[int] | None:
    """Positions of the outputs `node` keeps, or None when it keeps them all."""
    n_out = len(node.out_avals)
    if node.prim is control.scan_p:
        first = node.params["n_carry"]
    elif node.prim is control.cond_p:
        first = 0
    else:
        return None
    keep = list(range(first)) + [k for k in range(first, n_out) if Edge(node, k) in used]
    return keep if 0 < len(keep) < n_out else None


def prune_outputs(graph: Graph) -> Graph:
    """`graph` with the dead outputs of its scans and conds dropped (itself when none is)."""
    used: set = set(graph.outputs)
    for node in graph.nodes:
        used.update(node.inputs)
    remap: dict = {}
    nodes: list[Node] = []
    changed = False
    for node in graph.nodes:
        ins = tuple(remap.get(e, e) for e in node.inputs)
        keep = _kept(node, used)
        if keep is None:
            if ins != node.inputs:
                new = Node(node.prim, ins, node.params, node.out_avals)
                for i in range(len(node.out_avals)):
                    remap[Edge(node, i)] = Edge(new, i)
                node, changed = new, True
            nodes.append(node)
            continue
        params = dict(node.params)
        if node.prim is control.scan_p:
            params["body"] = _outputs_graph(params["body"], keep)
        else:
            params["branches"] = tuple(_outputs_graph(b, keep) for b in params["branches"])
        new = Node(node.prim, ins, Params(params), tuple(node.out_avals[k] for k in keep))
        for i, k in enumerate(keep):
            remap[Edge(node, k)] = Edge(new, i)
        nodes.append(new)
        changed = True
    if not changed:
        return graph
    outputs = tuple(remap.get(e, e) for e in graph.outputs)
    return Graph(graph.inputs, outputs, tuple(nodes), graph.in_tree, graph.out_tree, graph.name)
