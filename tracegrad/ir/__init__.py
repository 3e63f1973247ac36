"""The IR: avals, primitives, nodes, edges and graphs, with printing, checking and JSON."""

from tracegrad.ir.graph import Edge, Graph, Node, Params, arg_node, arg_p, const_node, const_p, toposort
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval

__all__ = [
    "Aval", "Edge", "Graph", "Node", "Params", "Primitive", "arg_node", "arg_p", "const_node",
    "const_p", "toposort", "dumps", "loads", "to_dot", "verify",
]


def __getattr__(name):
    # dumps/loads/to_dot/verify need the primitive table, which imports the IR: load lazily.
    if name in ("dumps", "loads"):
        from tracegrad.ir import serialize

        return getattr(serialize, name)
    if name == "to_dot":
        from tracegrad.ir.dot import to_dot

        return to_dot
    if name == "verify":
        from tracegrad.ir.verify import verify

        return verify
    raise AttributeError(f"module 'tracegrad.ir' has no attribute {name!r}")
