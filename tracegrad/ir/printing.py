"""`str(graph)`: a jaxpr-like listing with deterministic names, one line per node.

Values are named `a, b, ..., z, ba, bb, ...` in order of definition (inputs, then each node's
outputs); `value_names` is the one place that decides them, so the code generator writes the
same names. Scalar constants are shown inline where they are used; array constants get a
line of their own but their data is never dumped. Every walk is a loop: O(n), no recursion.
"""

from __future__ import annotations

import builtins
import itertools
import keyword

import numpy as np

from tracegrad.ir.graph import Edge, Graph, Node, const_p, sub_graphs
from tracegrad.ir.types import Aval

# Names a value must never take, because generated code uses them or Python reserves them.
_RESERVED = (
    frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | frozenset(dir(builtins))
    | {"np", "numpy"}
)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _letters(i: int) -> str:
    # a..z, ba..bz, ca.. : base 26 with a = 0 (jaxpr's scheme)
    s = ""
    while True:
        i, r = divmod(i, 26)
        s = _LETTERS[r] + s
        if i == 0:
            return s


def identifier(name: object, default: str = "f") -> str:
    """`name` made into a safe Python identifier: `<lambda>` -> `lambda_`, `2x` -> `f_2x`.

    Characters that cannot appear in an identifier become `_`; surrounding underscores
    are dropped; a name starting with a digit gets `default` in front; a keyword, builtin or
    `np` (which generated code must still reach) gets `_` behind; nothing left gives `default`.
    """
    if not isinstance(name, str):
        return default
    s = "".join(c if (c == "_" or c.isalnum()) and c.isascii() else "_" for c in name).strip("_")
    if not s:
        return default
    if s[0].isdigit():
        s = f"{default}_{s}"
    if s in _RESERVED:
        s += "_"
    return s if s.isidentifier() else default


def is_inline_const(node: Node) -> bool:
    """A constant the printer shows inline: a Python scalar or a 0-d array."""
    if node.prim is not const_p:
        return False
    value = node.params.get("value")
    return not isinstance(value, np.ndarray) or value.ndim == 0


def literal(value) -> str:
    """How an inline constant reads: `2.0`, `3`, `True`, `nan`; 0-d arrays add their type,
    `2.5:f32[]`."""
    if isinstance(value, np.ndarray | np.generic):
        return f"{np.asarray(value)[()]!s}:{Aval((), value.dtype).str_short()}"
    return repr(value)


def _fresh_names():
    for i in itertools.count():
        s = _letters(i)
        if s not in _RESERVED:
            yield s


def node_names(graph: Graph) -> dict[Node, tuple[str, ...]]:
    """The names of each node's outputs (see `value_names`), keyed by node: cheaper to build
    and to read than one `Edge` per value."""
    names: dict[Node, tuple[str, ...]] = {}
    fresh = _fresh_names().__next__
    for e in graph.inputs:
        if e.node not in names:
            names[e.node] = tuple(fresh() for _ in e.node.out_avals)
    for node in graph.nodes:
        for e in node.inputs:
            n = e.node
            if n not in names and not is_inline_const(n):
                names[n] = tuple(fresh() for _ in n.out_avals)
        if node not in names and not is_inline_const(node):
            avals = node.out_avals
            names[node] = (fresh(),) if len(avals) == 1 else tuple(fresh() for _ in avals)
    for e in graph.outputs:
        if e.node not in names and not is_inline_const(e.node):
            names[e.node] = tuple(fresh() for _ in e.node.out_avals)
    return names


def value_names(graph: Graph) -> dict[Edge, str]:
    """Name of every value of `graph`, in order of definition: inputs, then each node's outputs.

    Inline constants (see `is_inline_const`) get no name: they are written with `literal`.
    A value read before it is defined (which `verify` rejects, but printing a broken graph
    should still work) is named where it is first read. Keywords, soft keywords, builtins and
    `np` are skipped, so every name is a valid, unshadowing local in generated code; names are
    lowercase letters only, so anything else a code generator names (constants it passes in,
    helpers) can start with `_` and never collide.
    """
    return {
        Edge(node, i): name for node, ns in node_names(graph).items() for i, name in enumerate(ns)
    }


def format_param(value) -> str:
    """One param value as the printer shows it (user strings are escaped by `repr`)."""
    if isinstance(value, Graph):
        return "{" + identifier(value.name) + "}"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, Aval):
        return value.str_short()
    if isinstance(value, np.ndarray):
        return f"<array {Aval(value.shape, value.dtype).str_short()}>"
    if isinstance(value, tuple) and any(isinstance(v, Graph | np.dtype | Aval) for v in value):
        inner = ", ".join(format_param(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if callable(value):
        return f"<function {identifier(getattr(value, '__name__', None), 'fn')}>"
    return repr(value)


def format_params(params) -> str:
    if not params:
        return ""
    return "[" + ", ".join(f"{k}={format_param(v)}" for k, v in params.items()) + "]"


class _Writer:
    """Formats references and binders, caching what repeats (avals' short forms, literals)."""

    def __init__(self, graph: Graph):
        self.names = node_names(graph)
        self.short: dict[Aval, str] = {}

    def aval(self, a: Aval) -> str:
        s = self.short.get(a)
        if s is None:
            s = self.short[a] = a.str_short()
        return s

    def ref(self, e: Edge) -> str:
        ns = self.names.get(e.node)
        if ns is None:
            if is_inline_const(e.node):
                return literal(e.node.params["value"])
            return "?"
        return ns[e.index] if 0 <= e.index < len(ns) else "?"  # out of range: verify says so

    def binders(self, node: Node) -> str:
        ns = self.names[node]
        avals = node.out_avals
        if len(avals) == 1:
            return f"{ns[0]}: {self.aval(avals[0])}"
        return ", ".join(f"{n}: {self.aval(a)}" for n, a in zip(ns, avals))

    def const_line(self, node: Node) -> str:
        value = node.params.get("value")
        summary = ""
        if isinstance(value, np.ndarray) and 0 < value.size <= 6:
            text = np.array2string(value, separator=", ", max_line_width=10**6, threshold=10)
            summary = f"[value={' '.join(text.split())}]"  # one line, whatever the ndim
        return f"  {self.binders(node)} = const{summary}"


def format_graph(graph: Graph) -> str:
    """The listing `str(graph)` shows (see the module docstring)."""
    raw = graph.name if isinstance(graph.name, str) else repr(graph.name)
    return "\n".join([f"# graph {_comment(raw)}", *_graph_lines(graph, "")])


def _graph_lines(graph: Graph, indent: str) -> list[str]:
    """The listing without its provenance line, each line after `indent`. A node holding
    sub-graphs is followed by their listings, indented one step further (as a jaxpr's);
    the nesting of sub-graphs is shallow, the walk over each graph's nodes a loop."""
    w = _Writer(graph)
    lines = []
    args = ", ".join(f"{w.ref(e)}: {w.aval(e.aval)}" for e in graph.inputs)
    lines.append(f"graph {identifier(graph.name)}({args}):")
    shown: set[Node] = {e.node for e in graph.inputs}
    append = lines.append
    for node in graph.nodes:
        prim = node.prim
        if prim is const_p:
            if node not in shown and not is_inline_const(node):
                append(w.const_line(node))
            shown.add(node)
            continue
        for e in node.inputs:  # an array constant used but not listed: show it where it is read
            n = e.node
            if n.prim is const_p and n not in shown and not is_inline_const(n):
                shown.add(n)
                append(w.const_line(n))
        params = format_params(node.params) if node.params else ""
        if node.inputs:
            append(f"  {w.binders(node)} = {prim.name}{params} {' '.join(map(w.ref, node.inputs))}")
        else:
            append(f"  {w.binders(node)} = {prim.name}{params}")
        if node.params:
            for sub in sub_graphs(node):
                lines.extend(_graph_lines(sub, "    "))
    append(f"  return {', '.join(map(w.ref, graph.outputs))}")
    return [indent + line for line in lines] if indent else lines


def _comment(text: str) -> str:
    # user text inside a comment: one line, control characters escaped
    return text.encode("unicode_escape").decode("ascii")
