"""`to_dot(graph)`: Graphviz text for a graph, with the printer's names (no dependencies).

One dot node per graph input, per node and per constant; one `->` edge per node input, from
the value's producer to its reader. Outputs are drawn bold and say which result they are.
Every user-provided string (the graph's name, string params) goes through `_quote`.
"""

from __future__ import annotations

from tracegrad.ir.graph import Edge, Graph, Node, const_p
from tracegrad.ir.printing import format_params, is_inline_const, literal, node_names


def _quote(text: str) -> str:
    """`text` as a DOT double-quoted string: backslashes, quotes and line breaks escaped."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    out = out.replace("\r", "\\r").replace("\n", "\\n")
    return f'"{out}"'


def to_dot(graph: Graph) -> str:
    """The graph as a Graphviz `digraph`: `dot -Tsvg` renders it."""
    names = node_names(graph)
    ids: dict[Node, str] = {}
    lines = [
        f"digraph {_quote(str(graph.name))} {{",
        "  rankdir=TB;",
        '  node [shape=box, fontname="monospace"];',
    ]
    outputs: dict[Node, list[str]] = {}
    for j, e in enumerate(graph.outputs):
        outputs.setdefault(e.node, []).append(str(j))

    def declare(node: Node, label: str, attrs: str = "") -> str:
        ident = f"n{len(ids)}"
        ids[node] = ident
        outs = outputs.get(node)
        if outs:
            label += "\nreturn " + ", ".join(outs)
            attrs += ", style=bold, peripheries=2"
        lines.append(f"  {ident} [label={_quote(label)}{attrs}];")
        return ident

    def value_label(node: Node) -> str:
        return "\n".join(
            f"{n}: {a.str_short()}"
            for n, a in zip(names.get(node, ("?",) * len(node.out_avals)), node.out_avals)
        )

    def producer(e: Edge) -> str:
        ident = ids.get(e.node)
        if ident is None:  # a constant (or broken reference) not declared yet
            if is_inline_const(e.node):
                ident = declare(e.node, literal(e.node.params["value"]), ", shape=plaintext")
            else:
                ident = declare(e.node, f"{value_label(e.node)}\nconst", ", shape=note")
        return ident

    for e in graph.inputs:
        if e.node not in ids:
            declare(e.node, f"{value_label(e.node)}\narg", ", shape=ellipse")
    for node in graph.nodes:
        if node in ids:
            continue
        if node.prim is const_p:
            producer(Edge(node, 0))
            continue
        sources = [(producer(e), e) for e in node.inputs]
        ident = declare(node, f"{value_label(node)}\n{node.prim.name}{format_params(node.params)}")
        for j, (src, e) in enumerate(sources):
            # edge label: which input of the reader; tail label: which output of the producer
            tail = f", taillabel={e.index}" if len(e.node.out_avals) > 1 else ""
            lines.append(f"  {src} -> {ident} [label={j}{tail}];")
    for e in graph.outputs:
        producer(e)
    lines.append("}")
    return "\n".join(lines)
