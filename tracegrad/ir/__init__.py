"""The IR: avals, primitives, nodes, edges and graphs, with printing, checking and JSON."""

from tracegrad.ir.dot import to_dot
from tracegrad.ir.graph import (
    Edge,
    Graph,
    Node,
    Params,
    arg_node,
    arg_p,
    const_node,
    const_p,
    toposort,
    with_consts,
)
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.serialize import dumps, loads
from tracegrad.ir.types import Aval
from tracegrad.ir.verify import verify

__all__ = [
    "Aval",
    "Edge",
    "Graph",
    "Node",
    "Params",
    "Primitive",
    "arg_node",
    "arg_p",
    "const_node",
    "const_p",
    "dumps",
    "loads",
    "to_dot",
    "toposort",
    "verify",
    "with_consts",
]
