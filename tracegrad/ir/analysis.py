"""Analyses of a graph: use counts, last uses, and the predicted peak of live bytes.

All are computed from the graph in one pass and cached on it; the interpreter and the code
generator read them to free each intermediate right after its last use.
"""

from __future__ import annotations

from tracegrad.ir.graph import Graph, Node, arg_p, const_p, sub_graphs


def use_counts(graph: Graph) -> dict[Node, int]:
    """How many times each node's outputs are read by nodes of the graph or by its outputs."""
    counts: dict[Node, int] = {}
    for node in graph.nodes:
        for e in node.inputs:
            counts[e.node] = counts.get(e.node, 0) + 1
    for e in graph.outputs:
        counts[e.node] = counts.get(e.node, 0) + 1
    return counts


def last_use(graph: Graph) -> dict[Node, int]:
    """Index (in `graph.nodes`) of the last node that reads each value; outputs never die."""
    cached = graph._cache.get("last_use")
    if cached is not None:
        return cached
    last: dict[Node, int] = {}
    for i, node in enumerate(graph.nodes):
        for e in node.inputs:
            last[e.node] = i
    n = len(graph.nodes)
    for e in graph.outputs:
        last[e.node] = n
    graph._cache["last_use"] = last
    return last


def free_schedule(graph: Graph) -> list[tuple[Node, ...]]:
    """For each node position, the values that die right after it runs.

    A node nobody reads dies right after it is computed. Inputs are freed too (the caller
    still holds its own arguments; the interpreter drops only its reference).
    """
    cached = graph._cache.get("free_schedule")
    if cached is not None:
        return cached
    last = last_use(graph)
    n = len(graph.nodes)
    sched: list[list[Node]] = [[] for _ in range(n)]
    for i, node in enumerate(graph.nodes):
        j = last.get(node, i)
        if j < n:
            sched[j].append(node)
    for e in graph.inputs:
        j = last.get(e.node)
        if j is not None and j < n and e.node not in sched[j]:
            sched[j].append(e.node)
    result = [tuple(s) for s in sched]
    graph._cache["free_schedule"] = result
    return result


def _base(node: Node, bases: dict[Node, Node]) -> Node:
    return bases.get(node, node)


def _inner_peak(node: Node) -> int:
    """What a node holding sub-graphs (control flow) keeps alive while it runs, besides its
    inputs and outputs: the largest peak of one run of a sub-graph. (A loop's carry outputs
    are the last step's outputs, which that peak counts; while a step runs, the carry it
    replaces takes the place the node's outputs are counted in.)"""
    if not node.params:
        return 0
    subs = sub_graphs(node)
    if not subs:
        return 0
    return max(peak_bytes(g) for g in subs)


def peak_bytes(graph: Graph) -> int:
    """Predicted peak of live intermediate bytes while the interpreter runs `graph`.

    Inputs and constants are the caller's and count nothing. A view (a primitive with
    `view_of`) counts no bytes of its own and keeps its base alive as long as it lives.
    While a node runs, its inputs and its new outputs are alive together, and so is what a
    node holding sub-graphs needs for one run of them (`_inner_peak`). Cached on the graph.
    """
    hit = graph._cache.get("peak_bytes")
    if hit is None:
        hit = graph._cache["peak_bytes"] = _peak_bytes(graph)
    return hit


def _peak_bytes(graph: Graph) -> int:
    last = dict(last_use(graph))
    n = len(graph.nodes)
    # A view extends its base's life to its own last use (iterating in order handles chains).
    bases: dict[Node, Node] = {}
    for node in graph.nodes:
        if node.prim.view_of is not None:
            bases[node] = _base(node.inputs[node.prim.view_of].node, bases)
    for node, base in bases.items():
        last[base] = max(last.get(base, 0), last.get(node, 0))
    owned: dict[Node, int] = {}
    for node in graph.nodes:
        if node in bases or node.prim in (arg_p, const_p):
            continue
        owned[node] = sum(a.nbytes for a in node.out_avals)
    # a node never read dies right after it runs
    pos = {node: i for i, node in enumerate(graph.nodes)}
    dies_at: list[list[Node]] = [[] for _ in range(n + 1)]
    for node in owned:
        dies_at[min(last.get(node, pos[node]), n)].append(node)
    live = 0
    peak = 0
    for i, node in enumerate(graph.nodes):
        live += owned.get(node, 0)
        peak = max(peak, live + _inner_peak(node))
        for dead in dies_at[i]:
            live -= owned[dead]
    return peak
