"""What every pass needs of a graph: the barriers none enters, liveness, and rebuilding.

`BARRIER_PRIMITIVES` is defined here, below both the sweep and the passes, because the sweep
checks it at every node. The package re-exports this same set object: add to it in place
(`BARRIER_PRIMITIVES.add(p)`); rebinding the name on the package would not reach the sweep.
"""

from __future__ import annotations

from tracegrad.ir.graph import Graph, Node

# Primitives no pass looks into or across (a `checkpoint` region: its residuals must be
# recomputed, not shared with the outside). `checkpoint_p` is to be added here when it lands.
BARRIER_PRIMITIVES: set = set()


def _rebuild(graph: Graph, outputs, nodes) -> Graph:
    g = graph
    return Graph(g.inputs, tuple(outputs), tuple(nodes), g.in_tree, g.out_tree, g.name)


def _live(nodes, outputs) -> list[Node]:
    """The nodes (in their order) that some output reads, by one backward sweep."""
    live = {e.node for e in outputs}
    keep = []
    for node in reversed(nodes):
        if node in live:
            keep.append(node)
            live.update(e.node for e in node.inputs)
    keep.reverse()
    return keep


def _is_barrier(node: Node) -> bool:
    if node.prim in BARRIER_PRIMITIVES:
        return True
    for v in node.params.values():
        if isinstance(v, Graph) or (type(v) is tuple and any(isinstance(u, Graph) for u in v)):
            return True
    return False
