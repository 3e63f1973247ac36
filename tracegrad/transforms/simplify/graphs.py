"""What every pass needs of a graph: the barriers none enters, liveness, and rebuilding.

`BARRIER_PRIMITIVES` is defined here, below both the sweep and the passes, because the sweep
checks it at every node. The package re-exports this same set object: add to it in place
(`BARRIER_PRIMITIVES.add(p)`); rebinding the name on the package would not reach the sweep.
"""

from __future__ import annotations

from tracegrad.ir.graph import Graph, Node, sub_graphs
from tracegrad.primitives import control, custom

# Primitives no pass looks into or across (a `checkpoint` region: its residuals must be
# recomputed, not shared with the outside).
BARRIER_PRIMITIVES: set = {custom.checkpoint_p}

# Primitives holding sub-graphs that are simplified, each on its own, and shared when equal:
# control flow, whose bodies are plain functions of their inputs. A node of any other
# primitive holding a sub-graph is opaque (it may be a `checkpoint` or a user's rule).
OPEN_PRIMITIVES: set = {control.cond_p, control.while_loop_p, control.scan_p}


def _rebuild(graph: Graph, outputs, nodes) -> Graph:
    g = graph
    return Graph(g.inputs, tuple(outputs), tuple(nodes), g.in_tree, g.out_tree, g.name)


def _live(nodes, outputs) -> list[Node]:
    """The nodes (in their order) that some output reads, and effectful ones (a print runs
    though nothing reads it), by one backward sweep."""
    live = {e.node for e in outputs}
    keep = []
    for node in reversed(nodes):
        if node in live or node.prim.effect:
            keep.append(node)
            live.update(e.node for e in node.inputs)
    keep.reverse()
    return keep


def _is_barrier(node: Node) -> bool:
    if node.prim in BARRIER_PRIMITIVES or node.prim.effect:
        return True
    return _holds_graphs(node)


def _holds_graphs(node: Node) -> bool:
    return bool(node.params) and bool(sub_graphs(node))
