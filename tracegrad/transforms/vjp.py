"""Reverse mode: the backward pass over a graph, and the vjp transform that splits it.

`backward_pass` walks a graph's nodes in reverse, calling each primitive's vjp rule on the
forward values and summing cotangents per edge. It is written with `bind`-based operations
only, so the same loop either computes gradients right away (given arrays) or records a
backward graph (given tracers); `grad(grad(f))` and the shim's `create_graph` need nothing
else. `vjp_graph` traces that loop with abstract cotangents and splits the result by
dependence: nodes that do not depend on a cotangent are forward work (kept with the forward
graph, their outputs become residuals); the rest is the backward graph (DESIGN.md §4).

A vjp rule may return, in place of a cotangent, a zero-argument callable that computes it:
the pass calls it only if that input needs a cotangent (PyTorch's `needs_input_grad`), so
`X @ W` with a constant `X` never computes `X`'s cotangent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tracegrad.core import Tracer
from tracegrad.ir.graph import Edge, Graph, Node, const_p
from tracegrad.ir.types import is_float
from tracegrad.primitives.broadcasting import shape_of
from tracegrad.primitives.elementwise import astype
from tracegrad.transforms.partial import Split, linear_split

Reader = Callable[[Edge], object]


def active_nodes(graph: Graph, wrt: Sequence[bool]) -> set[Node]:
    """Nodes whose outputs depend on a differentiated input (`wrt[i]` for input i)."""
    active = {e.node for e, w in zip(graph.inputs, wrt) if w and is_float(e.aval.dtype)}
    for node in graph.nodes:
        if node.prim.differentiable and any(e.node in active for e in node.inputs):
            active.add(node)
    return active


class Cotangents:
    """Cotangents per edge, summed over the edge's uses; only active float edges keep one."""

    def __init__(self, active: set[Node]):
        self.active = active
        self.bars: dict[Node, object] = {}

    def add(self, edge: Edge, bar) -> None:
        if bar is None or edge.node not in self.active:
            return
        bar = force(bar)
        if bar is None:
            return
        bar = conform(bar, edge.node.out_avals[edge.index], "vjp", edge.node.prim.name)
        if bar is None:
            return
        node = edge.node
        if node.prim.multiple_results:
            slots = self.bars.get(node)
            if slots is None:
                slots = self.bars[node] = [None] * len(node.out_avals)
            old = slots[edge.index]
            slots[edge.index] = bar if old is None else old + bar
        else:
            old = self.bars.get(node)
            self.bars[node] = bar if old is None else old + bar

    def pop(self, node: Node):
        bar = self.bars.pop(node, None)
        if bar is not None and node.prim.multiple_results:
            return None if all(b is None for b in bar) else tuple(bar)
        return bar


def conform(value, aval, rule: str, prim_name: str):
    """A derivative value as the value it belongs to needs it: None for integer and bool
    values (they carry no derivative), the same shape (a rule's mistake otherwise), and the
    same dtype (a float32 value gets a float32 tangent or cotangent)."""
    if value is None or aval.dtype.kind not in "fc":  # only floats carry derivatives
        return None
    if shape_of(value) != aval.shape:
        kind = "cotangent" if rule == "vjp" else "tangent"
        raise ValueError(
            f"internal error: the {rule} of {prim_name} produced a {kind} of shape "
            f"{shape_of(value)} for a value of shape {aval.shape}"
        )
    dtype = getattr(value, "dtype", None)
    if dtype is None or dtype != aval.dtype:
        value = astype(value, aval.dtype)
    return value


def force(bar):
    """A cotangent from a vjp rule, calling it if the rule returned a thunk."""
    return bar() if callable(bar) and not isinstance(bar, Tracer) else bar


def call_vjp(prim, cotangent, *primals, out, **params) -> tuple:
    """`prim.vjp` with every cotangent computed (tests and tools that want them all)."""
    return tuple(force(b) for b in prim.vjp(cotangent, *primals, out=out, **params))


class PassHooks:
    """What a caller may do at each node of the backward pass (the shim's hooks and saved
    values); the default does nothing. The functional transforms pass none.

    `before` runs only for the nodes in `special`, `after` only for those in `post`: most
    nodes have no hooks, and the pass skips the calls for them."""

    special: frozenset | set = frozenset()
    post: frozenset | set = frozenset()

    def primals(self, node: Node) -> tuple[list, object]:
        """The forward values `node`'s vjp rule reads: its inputs and its output(s)."""
        raise NotImplementedError

    def before(self, node: Node, bar):
        """`node`'s output cotangent before its rule runs; may replace it, or return None
        to stop the pass at this node."""
        return bar

    def after(self, node: Node, bar, in_bars) -> tuple:
        """The cotangents `node`'s rule returned for its inputs; may replace them."""
        return in_bars


def backward_pass(
    graph: Graph,
    read: Reader | None,
    out_bars: Sequence,
    wrt: Sequence[bool],
    release: Callable[[Node], None] | None = None,
    *,
    hooks: PassHooks | None = None,
    active: set[Node] | None = None,
) -> list:
    """Cotangents of `graph.inputs` (None where none flows) given the outputs' cotangents.

    `read(edge)` gives the forward value of an edge: arrays to compute gradients now, tracers
    to record them. `release(node)` is called once a node's forward value is no longer needed
    (its own rule has run), so a caller can free it, as PyTorch frees saved tensors. The shim
    passes `hooks` (which then also supply the forward values) and the `active` nodes, those
    between the outputs and the inputs it asks about.
    """
    if active is None:
        active = active_nodes(graph, wrt)
    bars = Cotangents(active)
    for e, b in zip(graph.outputs, out_bars):
        bars.add(e, b)
    special = hooks.special if hooks is not None else ()
    post = hooks.post if hooks is not None else ()
    for node in reversed(graph.nodes):
        bar = bars.pop(node) if node in active else None
        if bar is not None and node in special:
            bar = hooks.before(node, bar)
        if bar is not None and node.prim is not const_p:
            if hooks is not None:
                primals, out = hooks.primals(node)
            else:
                primals = [read(e) for e in node.inputs]
                if node.prim.multiple_results:
                    out = tuple(read(Edge(node, i)) for i in range(len(node.out_avals)))
                else:
                    out = read(Edge(node, 0))
            in_bars = node.prim.vjp(bar, *primals, out=out, **node.params)
            if node in post:
                in_bars = hooks.after(node, bar, in_bars)
            for e, b in zip(node.inputs, in_bars):
                if b is not None and e.node in active:  # constants take no cotangent
                    bars.add(e, b)
        if release is not None:
            release(node)
    return [bars.pop(e.node) for e in graph.inputs]


def value_reader(values: dict[Node, object], inputs: dict[Node, object] | None = None) -> Reader:
    """`read` over the values a concrete trace or an interpreter run kept (per node)."""

    def read(e: Edge):
        node = e.node
        if node.prim is const_p:
            return node.params["value"]
        v = values[node]
        return v[e.index] if node.prim.multiple_results else v

    return read


# -- the graph transform ----------------------------------------------------------------------


def vjp_graph(graph: Graph, wrt: Sequence[bool] | None = None) -> Split:
    """Split reverse-mode differentiation of `graph` into a forward and a backward graph.

    `split.linear` takes residuals and one cotangent per output and returns the cotangents of
    the inputs listed in `split.present` (positions in `graph.inputs`); the others are zero.
    """
    wrt = [True] * len(graph.inputs) if wrt is None else list(wrt)
    out_avals = [e.aval.strengthen() for e in graph.outputs]
    return linear_split(
        graph, lambda read, cts: backward_pass(graph, read, cts, wrt), out_avals, "bwd"
    )
