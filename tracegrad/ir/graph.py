"""The immutable IR: `Node`, `Edge`, `Graph`.

A `Node` is one application of a primitive; an `Edge` names one of its outputs (PyTorch's
`Edge(function, input_nr)`). Nodes point at their producers through edges and never change
after they are built, so any set of nodes reachable from some outputs is a valid graph, and
transforms build new graphs instead of editing old ones. Every walk over nodes is iterative:
a chain of 10^6 nodes must not hit Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

import attrs
import numpy as np

from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import SCALAR_AVALS, Aval, aval_of, interned_aval


class Params(dict):
    """A node's params: a read-only dict of plain values with a cached hash.

    A dict subclass, so `**params` stays as fast as for a plain dict. Values are ints,
    floats, strings, tuples, dtypes or sub-graphs; the `const` primitive's array makes its
    params unhashable, which is how hash-consing knows to leave constants alone.
    """

    __slots__ = ("_hash",)

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            h = hash(tuple(sorted(self.items())))
            self._hash = h
            return h

    def key(self) -> tuple:
        """A hashable key that tells floats apart by their bits (0.0 and -0.0 are equal as
        values, but a node built with one is not the node built with the other)."""
        items = []
        for k, v in self.items():  # (a loop, not a generator: bind builds one key per op)
            t = type(v)
            items.append((k, v) if t is int or t is bool or t is str else (k, _bits(v)))
        items.sort()
        return tuple(items)

    def _readonly(self, *args, **kwargs):
        raise TypeError("Params are immutable; build a new node with attrs.evolve")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _readonly  # type: ignore

    def __reduce__(self):  # dicts pickle through __setitem__
        return (Params, (dict(self),))


EMPTY_PARAMS = Params()


def _bits(v):
    t = type(v)
    if t is float:
        return ("float", v.hex())
    if t is tuple:
        for x in v:
            if type(x) is float or type(x) is tuple:
                return tuple([_bits(x) for x in v])
        return v  # no float inside (axes, shapes): itself, without a new tuple
    return v


class _NodeFields:
    """A `Node`'s storage, the slots its attrs class reuses; a node is built as one of these
    (which can be written) and then made a `Node` (which cannot: see `Node.__new__`)."""

    __slots__ = ("prim", "inputs", "params", "out_avals", "__weakref__")


@attrs.frozen(eq=False, repr=False, weakref_slot=True, init=False)
class Node(_NodeFields):
    prim: Primitive
    inputs: tuple[Edge, ...]
    params: Params
    out_avals: tuple[Aval, ...]

    def __new__(cls, prim: Primitive, inputs: tuple, params: Params, out_avals: tuple):
        # A node is made per traced or recorded operation: filling a writeable object's slots
        # and then giving it the frozen class costs half of attrs' frozen `__init__` (one
        # `object.__setattr__` call per field), and the node is as immutable afterwards.
        node = _NodeFields()
        node.prim = prim
        node.inputs = inputs
        node.params = params
        node.out_avals = out_avals
        node.__class__ = cls
        return node

    def __reduce__(self):  # copies and pickles pass the fields to `__new__`
        return (type(self), (self.prim, self.inputs, self.params, self.out_avals))

    @property
    def outputs(self) -> tuple[Edge, ...]:
        # built on demand: a node holding its own edges would be a reference cycle, and graphs
        # must be freed by reference counting alone (the PyTorch-style tensors rely on it)
        return tuple(Edge(self, i) for i in range(len(self.out_avals)))

    def __repr__(self) -> str:  # shallow: never walks the inputs
        return f"Node({self.prim.name}, #{id(self):x})"


class Edge(tuple):
    """`(node, index)`: output `index` of `node` (PyTorch's `Edge(function, input_nr)`).

    A tuple, so that hashing and comparing edges, which key many tables, run in C; two edges
    are equal when they name the same output of the same node.
    """

    __slots__ = ()

    def __new__(cls, node: Node, index: int = 0):
        return tuple.__new__(cls, (node, index))

    node: Node = property(itemgetter(0))  # type: ignore[assignment]
    index: int = property(itemgetter(1))  # type: ignore[assignment]

    @property
    def aval(self) -> Aval:
        return self[0].out_avals[self[1]]

    def __getnewargs__(self):
        return tuple(self)

    def __repr__(self) -> str:
        return f"Edge({self[0]!r}, {self[1]})"


#: `new_edge(Edge, (node, i))` is `Edge(node, i)` without `Edge.__new__`'s Python frame (a
#: third of the cost), for the paths that make one edge per traced or recorded operation
new_edge = tuple.__new__


def _arg_impl(*args, **params):
    raise RuntimeError("tracegrad: an `arg` node has no value of its own; it is a graph input")


def _const_shape(*, value):
    if type(value) is np.ndarray or type(value) in (bool, int, float, complex):
        return aval_of(value)  # the common cases: shared avals, no np.shape
    weak = isinstance(value, int | float | complex) and not isinstance(value, bool)
    return Aval(np.shape(value), _const_dtype(value), weak)


def _const_dtype(value):
    if isinstance(value, bool):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float64)
    if isinstance(value, complex):
        return np.dtype(np.complex128)
    return value.dtype


# Graph inputs are `arg` nodes (fx placeholders); constants captured while tracing are
# `const` nodes holding a read-only array or a Python scalar (kept as a Python scalar so
# NumPy 2's weak promotion applies when it is used).
arg_p = Primitive("arg", impl=_arg_impl, shape=lambda *, aval: aval)
const_p = Primitive("const", impl=lambda *, value: value, shape=_const_shape, emit=None)


def sub_graphs(node: Node) -> list[Graph]:
    """The sub-graphs a node holds in its params (control flow's bodies and branches), in
    params order; a param may be one graph or a tuple of them."""
    found = []
    for v in node.params.values():
        if isinstance(v, Graph):
            found.append(v)
        elif type(v) is tuple:
            found.extend(u for u in v if isinstance(u, Graph))
    return found


def arg_node(aval: Aval) -> Node:
    return Node(arg_p, (), Params(aval=aval), (aval,))


def const_node(value) -> Node:
    if isinstance(value, np.ndarray):
        if value.flags.writeable:
            value = value.copy()
            value.flags.writeable = False
        if type(value) is np.ndarray:  # the common cases (an array, a Python scalar) inline
            aval = interned_aval(value.shape, value.dtype)
            return Node(const_p, (), Params(value=value), (aval,))
    aval = SCALAR_AVALS.get(type(value)) or _const_shape(value=value)
    return Node(const_p, (), Params(value=value), (aval,))


def is_scalar_const(node: Node) -> bool:
    return node.prim is const_p and not isinstance(node.params["value"], np.ndarray)


def with_consts(nodes: Sequence[Node], outputs: Sequence[Edge] = ()) -> tuple[Node, ...]:
    """`nodes` with every `const` node they (or `outputs`) read put first, once each.

    Constants have no inputs, so putting them first keeps the order topological.
    """
    present = set(nodes)
    consts: list[Node] = []
    for edges in [n.inputs for n in nodes] + [outputs]:
        for e in edges:
            src = e[0]
            if src.prim is const_p and src not in present:
                present.add(src)
                consts.append(src)
    return tuple(consts) + tuple(nodes)


def toposort(
    outputs: Iterable[Edge], stop: frozenset[Node] | set[Node] = frozenset()
) -> list[Node]:
    """Nodes reachable from `outputs`, producers before consumers (iterative DFS post-order).

    Nodes in `stop` (and `arg` nodes) are treated as leaves and left out of the result.
    """
    order: list[Node] = []
    visited: set[Node] = set()
    stack: list[tuple[Node, bool]] = [(e.node, False) for e in reversed(list(outputs))]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in visited or node in stop or node.prim is arg_p:
            continue
        visited.add(node)
        stack.append((node, True))
        for e in reversed(node.inputs):
            if e.node not in visited:
                stack.append((e.node, False))
    return order


@attrs.frozen(eq=False, repr=False)
class Graph:
    """Inputs (edges of `arg` nodes), outputs, and the nodes between them in topological order.

    The pytree structures make the graph callable like the function it came from. Analyses
    (use counts, last uses, peak bytes) are computed on demand and cached in `_cache`; the
    graph itself never changes.
    """

    inputs: tuple[Edge, ...]
    outputs: tuple[Edge, ...]
    nodes: tuple[Node, ...]
    in_tree: Any = None
    out_tree: Any = None
    name: str = "f"
    _cache: dict = attrs.field(factory=dict, init=False, repr=False)

    @classmethod
    def from_outputs(cls, inputs: Sequence[Edge], outputs: Sequence[Edge], **kw) -> Graph:
        return cls(tuple(inputs), tuple(outputs), tuple(toposort(outputs)), **kw)

    @property
    def in_avals(self) -> tuple[Aval, ...]:
        return tuple(e.aval for e in self.inputs)

    @property
    def out_avals(self) -> tuple[Aval, ...]:
        return tuple(e.aval for e in self.outputs)

    def __call__(self, *args, **kwargs):
        # Reaches upward to the interpreter (DESIGN.md §7): a graph runs like its function.
        from tracegrad.interpret import call_graph

        return call_graph(self, args, kwargs)

    def __str__(self) -> str:
        # The printer reads graphs, nodes and edges from this module: it prints like a program.
        from tracegrad.ir.printing import format_graph

        return format_graph(self)

    def __repr__(self) -> str:
        n_in, n_nodes, n_out = len(self.inputs), len(self.nodes), len(self.outputs)
        return f"<Graph {self.name}: {n_in} inputs, {n_nodes} nodes, {n_out} outputs>"

    def stats(self) -> dict[str, int]:
        """Node counts by primitive name (with `"total"`), e.g. to watch nested grads grow."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.prim.name] = counts.get(node.prim.name, 0) + 1
        counts = dict(sorted(counts.items()))
        counts["total"] = len(self.nodes)
        return counts
