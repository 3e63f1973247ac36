"""`verify(graph)`: check the IR's invariants and return the graph, or raise `ValueError`.

Inputs are `arg` nodes; every node appears once (single assignment) and reads only values
defined before it (graph inputs, earlier nodes, or constants); edges index existing outputs;
and re-running each primitive's shape rule reproduces the avals recorded on the node; the
sub-graphs a node holds (control flow) are verified too. One loop over each graph's nodes;
only the shallow nesting of sub-graphs recurses. Debug mode runs it after every transform.
"""

from __future__ import annotations

import inspect

from tracegrad.ir.graph import Edge, Graph, Node, arg_p, const_p, sub_graphs
from tracegrad.ir.printing import node_names
from tracegrad.ir.types import Aval


def _signature(prim):
    """(fewest inputs, most inputs or None, required param names, param names or None) of
    `prim.shape`, or None when the rule has no signature Python can read (memoized on the
    primitive)."""
    if "signature" not in prim.memo:
        prim.memo["signature"] = _read_signature(prim)
    return prim.memo["signature"]


def _read_signature(prim):
    try:
        sig = inspect.signature(prim.shape)
    except (TypeError, ValueError):
        return None
    lo, hi, required, allowed = 0, 0, set(), set()
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            hi = None if hi is None else hi + 1
            lo += p.default is p.empty
        elif p.kind is p.VAR_POSITIONAL:
            hi = None
        elif p.kind is p.KEYWORD_ONLY:
            allowed.add(p.name)
            if p.default is p.empty:
                required.add(p.name)
        elif p.kind is p.VAR_KEYWORD:
            allowed = None
    return lo, hi, frozenset(required), None if allowed is None else frozenset(allowed)


def check_signature(prim, n_inputs: int, param_names) -> str | None:
    """Why `prim` cannot take `n_inputs` arrays and these params (None when it can)."""
    sig = _signature(prim)
    if sig is None:
        return None
    lo, hi, required, allowed = sig
    if n_inputs < lo or (hi is not None and n_inputs > hi):
        want = f"{lo}" if hi == lo else f"at least {lo}" if hi is None else f"{lo} to {hi}"
        return f"{prim.name} takes {want} inputs, got {n_inputs}"
    names = set(param_names)
    missing = sorted(required - names)
    if missing:
        return f"{prim.name} needs params {missing}, which are missing"
    if allowed is not None and not names <= allowed:
        return f"{prim.name} has no params {sorted(names - allowed)} (it takes {sorted(allowed)})"
    return None


def expected_avals(prim, in_avals, params) -> tuple[Aval, ...]:
    """The output avals `prim`'s shape rule gives for these input avals and params."""
    out = prim.shape(*in_avals, **params)
    return tuple(prim.results(out))


def check_shape_rule(node: Node, in_avals) -> str | None:
    """Why `node.out_avals` disagree with its primitive's shape rule (None when they agree)."""
    try:
        want = expected_avals(node.prim, in_avals, node.params)
    except Exception as err:  # noqa: BLE001 - any rejection by the rule is the answer
        problem = check_signature(node.prim, len(in_avals), node.params)
        if problem is not None:
            return problem
        return f"its shape rule rejects its inputs {_avals(in_avals)}: {type(err).__name__}: {err}"
    if want != tuple(node.out_avals):
        return (
            f"its shape rule gives {_avals(want)} for inputs {_avals(in_avals)}, but the node "
            f"records {_avals(node.out_avals)}"
        )
    return None


def _avals(avals) -> str:
    return "(" + ", ".join(a.str_short() if isinstance(a, Aval) else repr(a) for a in avals) + ")"


def verify(graph: Graph) -> Graph:
    """Check `graph` (see the module docstring); returns it, so `verify(transform(g))` chains."""

    def fail(what: str, problem: str):
        raise ValueError(f"verify: {what}: {problem}")

    def where(k: int, node: Node) -> str:  # only on failure: naming costs a pass over the graph
        try:
            shown = ", ".join(node_names(graph).get(node, ()))
        except Exception:  # noqa: BLE001 - names only decorate the message of a broken graph
            shown = ""
        return f"node {k} ({node.prim.name}{' -> ' + shown if shown else ''})"

    defined: set[Node] = set()
    for i, e in enumerate(graph.inputs):
        if type(e) is not Edge or e.node.prim is not arg_p:
            kind = e.node.prim.name if isinstance(e, Edge) else type(e).__name__
            fail(f"graph input {i}", f"it is a {kind} value, not an `arg` node")
        if e.index != 0 or e.node.inputs or e.node.out_avals != (e.node.params.get("aval"),):
            fail(f"graph input {i}", "an `arg` node has no inputs and one output, its aval")
        defined.add(e.node)
    unlisted: set[Node] = set()  # constants read but not listed in graph.nodes (allowed)

    def read(e, k: int, node: Node | None, j: int) -> Aval:
        # `what` is formatted only on failure: most edges pass and cost a few lookups
        def what() -> str:
            return f"graph output {j}" if node is None else f"{where(k, node)}, input {j}"

        if type(e) is not Edge:
            fail(what(), f"it is a {type(e).__name__}, not an Edge")
        n = e.node
        if n not in defined and n not in unlisted:
            if n.prim is not const_p:
                fail(
                    what(),
                    f"it reads a {n.prim.name} node (#{id(n):x}) that is not defined "
                    "before it: not a graph input, not an earlier node, not a constant",
                )
            problem = check_shape_rule(n, ())
            if problem is not None:
                fail(
                    what(),
                    f"it reads a constant (not listed in graph.nodes) that is malformed: {problem}",
                )
            unlisted.add(n)
        if type(e.index) is not int or not 0 <= e.index < len(n.out_avals):
            fail(
                what(),
                f"it reads output {e.index} of a {n.prim.name} node, which has "
                f"{len(n.out_avals)} outputs",
            )
        return n.out_avals[e.index]

    for k, node in enumerate(graph.nodes):
        if node in defined:
            fail(where(k, node), "it appears twice (single assignment), or is also a graph input")
        if node.prim is arg_p:
            fail(where(k, node), "it is an `arg` node: arguments are graph inputs, not nodes")
        in_avals = [read(e, k, node, j) for j, e in enumerate(node.inputs)]
        problem = check_shape_rule(node, in_avals)
        if problem is not None:
            fail(where(k, node), problem)
        if node.params:
            for j, sub in enumerate(sub_graphs(node)):
                try:
                    verify(sub)  # (sub-graphs nest shallowly; each is checked with a loop)
                except ValueError as err:
                    fail(where(k, node), f"its sub-graph {j} ({sub.name!r:.40}) is bad: {err}")
        defined.add(node)
    for j, e in enumerate(graph.outputs):
        read(e, -1, None, j)
    return graph
