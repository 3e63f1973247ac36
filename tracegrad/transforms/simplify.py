"""Simplification: graph -> graph passes that keep every result bit for bit.

`dce` drops nodes no output reads; `cse` shares nodes equal on `(prim, inputs, params)`;
`fold_constants` evaluates nodes whose inputs are all constants; `identities` applies
algebraic identities; `simplify` runs them together to a fixed point. Each pass is one loop
over the nodes in topological order (no recursion, O(n)); unchanged nodes are reused, and a
pass that changes nothing returns its argument itself.

What "bit for bit" takes here (DESIGN.md §2: a simplified program gives exactly NumPy's bits):

- A replacement value has exactly the aval of the value it replaces (shape, dtype and weak
  type), so promotion downstream is unchanged.
- Signed zeros are values: `x + 0.0` is not `x` (`-0.0 + 0.0 == 0.0`), `x + (-0.0)` and
  `x - 0.0` are. `x * 0` is never folded (inf and nan). NumPy's `sum` turns `-0.0` into `0.0`
  even over a size-1 axis, so only integer sums over size-1 axes become reshapes.
- Memory layout is part of the result: NumPy reduces and multiplies in memory order, so
  `np.sum(x.T)` and `np.sum(np.ascontiguousarray(x.T))` differ in the last bits. A rewrite that
  swaps a fresh array for an existing one (`x * 1 -> x`) is applied only where both have the
  same strides: `x` known C-contiguous (or dense, with scalar partners), or of size <= 1. A
  static analysis tracks that from each primitive's declared `layout` (`tracegrad.ir.layout`:
  C order, dense, any); graph inputs may have any layout unless the caller promises
  C-contiguous arguments (`contiguous_inputs=True`).
  View-to-view rewrites (transpose of transpose, reshape or broadcast_to to the same shape)
  give identical views and need no condition; reshape of reshape needs a C-contiguous base.
- `x ** 2 -> x * x` only for the dtypes where NumPy's power gives the bits of `x * x`
  (checked once per dtype on special and random values), and `x ** 1 -> x` likewise.
- Two rewrites may change which NaN a NaN result carries (never whether it is NaN): CSE
  shares `a + b` with `b + a` (primitives declared `commutative`), which differ only when both
  operands are NaN with different payloads; `x * 1 -> x` keeps a quiet NaN but not a
  signalling one.
- A fresh output is never replaced by a graph input or constant (callers may write to it).
- Folding runs the primitive's own `impl` with floating-point errors raised: a node whose
  evaluation warns stays a node, so the warning still happens at run time. It does not fold
  into arrays much larger than its inputs (a broadcast of a scalar stays a `broadcast_to`).

Sub-graphs are never entered: a node whose params hold a `Graph` (custom rules, control flow,
and `checkpoint` once it exists) is opaque to every pass, and so is any primitive listed in
`BARRIER_PRIMITIVES` (where `checkpoint_p` belongs): nothing is folded into it, rewritten
through it or shared across it.
"""

from __future__ import annotations

import functools
import math
import struct
import warnings

import numpy as np

from tracegrad import config
from tracegrad.ir import layout as lay
from tracegrad.ir.graph import Edge, Graph, Node, Params, const_node, const_p, with_consts
from tracegrad.ir.types import Aval
from tracegrad.ir.verify import expected_avals, verify
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import views

__all__ = [
    "BARRIER_PRIMITIVES",
    "cse",
    "dce",
    "fold_constants",
    "identities",
    "simplify",
]

# Primitives no pass looks into or across (a `checkpoint` region: its residuals must be
# recomputed, not shared with the outside). `checkpoint_p` is to be added here when it lands.
BARRIER_PRIMITIVES: set = set()

MAX_ROUNDS = 8
# Folding limits: a folded result may have up to this many elements regardless of its inputs,
# and otherwise at most _FOLD_GROWTH times the elements its inputs hold in memory.
_FOLD_MIN_SIZE = 64
_FOLD_GROWTH = 2

# Layout classes of a value at run time (see the module docstring and tracegrad.ir.layout).
_C, _DENSE, _ANY = lay.C_ORDER, lay.DENSE, lay.ANY


# -- public passes --------------------------------------------------------------------------


def dce(graph: Graph) -> Graph:
    """`graph` without the nodes no output depends on."""
    outputs = graph.outputs
    nodes = with_consts(_live(graph.nodes, outputs), outputs)
    if nodes == graph.nodes:
        return graph
    return _debug_verify(_rebuild(graph, outputs, nodes))


def cse(graph: Graph, *, contiguous_inputs: bool = False) -> Graph:
    """Common-subexpression elimination: one node per `(prim, inputs, params)`; constants
    shared by value (scalars, bit for bit) or by identity (arrays of more than one element).
    `contiguous_inputs`: see `simplify`."""
    return _debug_verify(_Pass(graph, cse=True, c_inputs=contiguous_inputs).run())


def fold_constants(graph: Graph) -> Graph:
    """Nodes whose inputs are all constants, evaluated into constants (see the limits in the
    module docstring)."""
    return _debug_verify(_Pass(graph, fold=True).run())


def identities(graph: Graph, *, contiguous_inputs: bool = False) -> Graph:
    """Algebraic identities that keep results and dtypes bit for bit: `x*1`, `x/1`,
    `x + (-0.0)`, `x - 0.0`, `x**1`, `x**2 -> x*x`, `--x`, transpose of transpose, reshape of
    reshape, reshape/broadcast_to/astype to what the value already is, integer sums over
    size-1 axes. `contiguous_inputs`: see `simplify`."""
    return _debug_verify(_Pass(graph, rules=True, c_inputs=contiguous_inputs).run())


def simplify(
    graph: Graph, *, contiguous_inputs: bool = False, max_rounds: int = MAX_ROUNDS
) -> Graph:
    """All passes together, repeated until nothing changes (at most `max_rounds` times).

    With `contiguous_inputs=True` the result is exact only when every array argument is
    C-contiguous at run time (a caller such as `jit` can check `flags.c_contiguous` per call
    and key its cache on it); it lets the rules that need a known layout fire on values
    computed from the arguments. By default an argument may be any view.
    """
    for _ in range(max_rounds):
        sweep = _Pass(graph, cse=True, fold=True, rules=True, c_inputs=contiguous_inputs)
        graph = sweep.run()
        # One sweep in topological order sees every node after its inputs were final, so only
        # the nodes the rules created (say x*x for x**2) were not simplified themselves.
        if not sweep.created:
            break
    return _debug_verify(graph)


def _debug_verify(graph: Graph) -> Graph:
    return verify(graph) if config.debug else graph


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


# -- the rewriting loop ---------------------------------------------------------------------


class _Pass:
    """One sweep over `graph.nodes`: each node's inputs are remapped to their replacements,
    then (as enabled) it is folded, rewritten by an identity, or shared with an equal node."""

    def __init__(self, graph: Graph, *, cse=False, fold=False, rules=False, c_inputs=False):
        self.graph = graph
        self.cse, self.fold, self.rules = cse, fold, rules
        self.new: dict[Node, tuple[Edge, ...]] = {}  # old node -> its outputs' replacements
        self.nodes: list[Node] = []  # the new graph's nodes, in order
        self.rank: dict[Node, int] = {}  # position of each new node (commutative CSE order)
        self.layout: dict[Node, int] = {}
        self.fresh: dict[Node, bool] = {}
        self.table: dict = {}  # CSE: key -> node
        self.consts: dict = {}  # const key -> canonical const node
        self.out_nodes = {e.node for e in graph.outputs}
        self.facts: dict = {}  # (const node, predicate) -> bool, computed once
        self.created = 0  # nodes made by rules (not yet simplified themselves)
        n = len(graph.inputs)
        for i, e in enumerate(graph.inputs):
            self.rank[e.node] = i - n
            self.layout[e.node] = _C if c_inputs or e.aval.size <= 1 else _ANY
            self.fresh[e.node] = False

    def run(self) -> Graph:
        for node in self.graph.nodes:
            if node.prim is not const_p:
                self.visit(node)
            elif node not in self.new:  # (a constant may be listed after its first reader)
                self.new[node] = (self.add_const(node),)
        outputs = tuple(self.edge(e) for e in self.graph.outputs)
        nodes = with_consts(_live(self.nodes, outputs), outputs)
        if nodes == self.graph.nodes and outputs == self.graph.outputs:
            return self.graph
        return _rebuild(self.graph, outputs, nodes)

    def edge(self, e: Edge) -> Edge:
        """The replacement of an edge of the old graph."""
        new = self.new.get(e.node)
        if new is not None:
            return new[e.index]
        if e.node.prim is const_p:  # a constant read but not listed in graph.nodes
            self.new[e.node] = (self.add_const(e.node),)
            return self.new[e.node][0]
        return e  # a graph input (or a malformed edge, which verify reports)

    def visit(self, node: Node) -> None:
        ins = tuple([self.edge(e) for e in node.inputs])
        if _is_barrier(node):
            self.set(node, self.emit(node, ins))
            return
        if self.fold:
            folded = self.try_fold(node, ins)
            if folded is not None:
                self.new[node] = folded
                return
        if self.rules and len(node.out_avals) == 1:
            rule = _RULES.get(node.prim)
            if rule is not None:
                rep = rule(self, node, ins)
                if rep is not None:
                    if rep.aval != node.out_avals[0]:  # a rule's bug must not change avals
                        raise AssertionError(f"simplify: rewriting {node.prim} changed its aval")
                    self.new[node] = (rep,)
                    return
        key = self.key(node.prim, node.params, ins) if self.cse else None
        if key is not None:
            hit = self.table.get(key)
            if hit is not None:
                self.set(node, hit)
                return
        new = self.emit(node, ins)
        if key is not None:
            self.table[key] = new
        self.set(node, new)

    def set(self, old: Node, new: Node) -> None:
        """`old`'s outputs are `new`'s (nothing to record when `new` is `old` itself)."""
        if new is not old:
            n = len(new.out_avals)
            self.new[old] = (Edge(new, 0),) if n == 1 else tuple(Edge(new, i) for i in range(n))

    def key(self, prim, params, ins):
        """The CSE key of a node, or None when it must not be shared."""
        pkey = _params_key(params)
        if pkey is None:
            return None
        if prim.commutative and len(ins) == 2 and self.swappable(*ins):
            a, b = ins
            rank = self.rank
            if (rank.get(b.node, 0), b.index) < (rank.get(a.node, 0), a.index):
                ins = (b, a)
        return (prim, pkey, ins)

    def swappable(self, a: Edge, b: Edge) -> bool:
        # same dtype: the same loop either way; C layout: the same output strides either way
        return a.aval.dtype == b.aval.dtype and self.is_c(a) and self.is_c(b)

    def emit(self, node: Node, ins) -> Node:
        """`node` with inputs `ins` (the node itself when they did not change), appended."""
        if ins != node.inputs:
            node = Node(node.prim, ins, node.params, node.out_avals)
        self.append(node)
        return node

    def append(self, node: Node) -> None:
        self.rank[node] = len(self.nodes)
        self.nodes.append(node)
        self.layout[node] = self.layout_of(node)
        self.fresh[node] = self.fresh_of(node)

    def make(self, prim, ins, params, want: Aval) -> Edge | None:
        """A new node `prim(*ins, **params)` (shared if an equal one exists), or None when
        its aval would not be `want`."""
        params = Params(params)
        try:
            avals = expected_avals(prim, [e.aval for e in ins], params)
        except Exception:  # noqa: BLE001 - a rule's rejection means "do not rewrite"
            return None
        if avals != (want,):
            return None
        key = self.key(prim, params, ins) if self.cse else None
        if key is not None and key in self.table:
            return self.table[key].outputs[0]
        node = Node(prim, tuple(ins), params, avals)
        self.created += 1
        self.append(node)
        if key is not None:
            self.table[key] = node
        return Edge(node, 0)

    # -- constants -----------------------------------------------------------------------

    def add_const(self, node: Node) -> Edge:
        """The edge of `node`'s canonical constant (itself, unless CSE found an equal one)."""
        if self.cse:
            key = _const_key(node.params["value"])
            canon = self.consts.get(key)
            if canon is not None:
                return Edge(canon, 0)
            self.consts[key] = node
        self.append(node)
        return Edge(node, 0)

    def const_fact(self, e: Edge, name: str, pred) -> bool:
        node = e.node
        if node.prim is not const_p:
            return False
        k = (node, name)
        hit = self.facts.get(k)
        if hit is None:
            hit = self.facts[k] = bool(pred(node.params["value"]))
        return hit

    def try_fold(self, node: Node, ins) -> tuple[Edge, ...] | None:
        vals = []
        footprint = 0
        for e in ins:
            if e.node.prim is not const_p:
                return None
            v = e.node.params["value"]
            vals.append(v)
            footprint += _footprint(v)
        out_size = sum(a.size for a in node.out_avals)
        if out_size > max(_FOLD_MIN_SIZE, _FOLD_GROWTH * footprint):
            return None
        out = _evaluate(node.prim, vals, node.params)
        if out is None:
            return None
        outs = node.prim.results(out)
        consts = []
        for v, aval in zip(outs, node.out_avals):
            c = _as_const(v, aval)
            if c is None:
                return None
            consts.append(c)
        return tuple(self.add_const(c) for c in consts)

    # -- layout analysis -----------------------------------------------------------------

    def is_c(self, e: Edge) -> bool:
        return e.aval.size <= 1 or self.layout.get(e.node, _ANY) == _C

    def layout_of(self, node: Node) -> int:
        avals = node.out_avals
        if avals[0].size <= 1 and (len(avals) == 1 or all(a.size <= 1 for a in avals)):
            return _C
        prim = node.prim
        if prim is const_p:
            v = node.params["value"]
            if not isinstance(v, np.ndarray) or v.flags.c_contiguous:
                return _C
            return _DENSE if v.flags.f_contiguous else _ANY
        ins = node.inputs
        classes = [_C if self.is_c(e) else self.layout.get(e.node, _ANY) for e in ins]
        base = classes[prim.view_of] if prim.view_of is not None else _ANY
        return lay.classify(prim.layout, classes, base)

    def fresh_of(self, node: Node) -> bool:
        prim = node.prim
        if prim.layout.fresh:
            return True
        if prim.layout.view:  # a view of a fresh array may be handed out like it
            return self.fresh.get(node.inputs[prim.view_of].node, False)
        return False

    def copy_ok(self, node: Node, x: Edge, *others: Edge) -> bool:
        """May `node`'s output (a fresh copy-like result of `x` and `others`) be replaced by
        `x` itself? Only if `x` has the strides NumPy would give the result, and (for a graph
        output) `x` is not an input or constant the caller could then write to."""
        if node in self.out_nodes and not self.fresh.get(x.node, False):
            return False
        if not all(o.aval.size <= 1 or self.is_c(o) for o in others):
            return False
        if self.is_c(x):
            return True
        return self.layout.get(x.node) == _DENSE and all(o.aval.size <= 1 for o in others)

    def producer(self, e: Edge, prim) -> Node | None:
        """The node behind `e` if it is an (un-opaque) application of `prim`."""
        n = e.node
        return n if n.prim is prim and not _is_barrier(n) else None


# -- identity rules: (pass, node, new inputs) -> replacement edge or None ------------------------


def _kind(aval: Aval) -> str:
    return aval.dtype.kind


def _mul_rule(p: _Pass, node: Node, ins):
    out = node.out_avals[0]
    if _kind(out) not in "fiub":
        return None
    a, b = ins
    for x, c in ((a, b), (b, a)):
        if x.aval == out and p.const_fact(c, "one", _is_one) and p.copy_ok(node, x, c):
            return x
    return None


def _div_rule(p: _Pass, node: Node, ins):
    out = node.out_avals[0]
    x, c = ins
    if _kind(out) == "f" and x.aval == out and p.const_fact(c, "one", _is_one):
        return x if p.copy_ok(node, x, c) else None
    return None


def _add_rule(p: _Pass, node: Node, ins):
    out = node.out_avals[0]
    kind = _kind(out)
    if kind not in "fiub":
        return None
    a, b = ins
    for x, c in ((a, b), (b, a)):
        if x.aval != out:
            continue
        if kind == "f":
            ok = p.const_fact(c, "-0.0", _is_negative_zero)
        else:
            ok = p.const_fact(c, "int0", _is_integer_zero)
        if ok and p.copy_ok(node, x, c):
            return x
    return None


def _sub_rule(p: _Pass, node: Node, ins):
    out = node.out_avals[0]
    x, c = ins
    if _kind(out) not in "fiu" or x.aval != out:
        return None
    if _kind(out) == "f":
        ok = p.const_fact(c, "+0", _is_positive_zero)
    else:
        ok = p.const_fact(c, "int0", _is_integer_zero)
    return x if ok and p.copy_ok(node, x, c) else None


def _pow_rule(p: _Pass, node: Node, ins):
    out = node.out_avals[0]
    x, c = ins
    if _kind(out) != "f" or c.aval.shape != () or not _pow_is_exact(out.dtype):
        return None
    if x.aval == out and p.const_fact(c, "one", _is_one) and p.copy_ok(node, x, c):
        return x
    if p.const_fact(c, "two", _is_two) and x.aval.dtype == out.dtype:
        return p.make(ew.multiply_p, (x, x), {}, out)
    return None


def _neg_rule(p: _Pass, node: Node, ins):
    inner = p.producer(ins[0], ew.negative_p)
    if inner is None:
        return None
    x = inner.inputs[0]
    out = node.out_avals[0]
    if x.aval == out and p.copy_ok(node, x):
        return x
    return None


def _positive_rule(p: _Pass, node: Node, ins):
    (x,) = ins
    if x.aval == node.out_avals[0] and p.copy_ok(node, x):
        return x
    return None


def _transpose_rule(p: _Pass, node: Node, ins):
    (x,) = ins
    out = node.out_avals[0]
    perm = node.params["axes"]
    inner = p.producer(x, views.transpose_p)
    if inner is not None:
        first = inner.params["axes"]
        x = inner.inputs[0]
        perm = tuple(first[i] for i in perm)
    if perm == tuple(range(len(perm))):
        return x if x.aval == out else None
    if inner is None:
        return None
    return p.make(views.transpose_p, (x,), {"axes": perm}, out)


def _reshape_rule(p: _Pass, node: Node, ins):
    (x,) = ins
    out = node.out_avals[0]
    if x.aval == out:
        return x  # np.reshape to the same shape: a view with the same strides
    inner = p.producer(x, views.reshape_p)
    if inner is not None and p.is_c(inner.inputs[0]):
        base = inner.inputs[0]
        if base.aval == out:
            return base
        return p.make(views.reshape_p, (base,), {"shape": node.params["shape"]}, out)
    return None


def _broadcast_to_rule(p: _Pass, node: Node, ins):
    (x,) = ins
    return x if x.aval == node.out_avals[0] else None  # the same view


def _astype_rule(p: _Pass, node: Node, ins):
    (x,) = ins
    if x.aval == node.out_avals[0] and p.copy_ok(node, x):
        return x
    return None


def _sum_rule(p: _Pass, node: Node, ins):
    # Integer sums are exact in any order; float sums turn -0.0 into 0.0 (module docstring).
    (x,) = ins
    out = node.out_avals[0]
    if _kind(out) not in "iu" or out.dtype != x.aval.dtype:
        return None
    if any(x.aval.shape[a] != 1 for a in node.params["axis"]):
        return None
    if not (p.is_c(x) and p.copy_ok(node, x)):  # the sum's result is C-contiguous
        return None
    if x.aval == out:
        return x
    return p.make(views.reshape_p, (x,), {"shape": out.shape}, out)


_RULES = {
    ew.multiply_p: _mul_rule,
    ew.divide_p: _div_rule,
    ew.add_p: _add_rule,
    ew.subtract_p: _sub_rule,
    ew.power_p: _pow_rule,
    ew.negative_p: _neg_rule,
    ew.positive_p: _positive_rule,
    ew.astype_p: _astype_rule,
    views.transpose_p: _transpose_rule,
    views.reshape_p: _reshape_rule,
    bc.broadcast_to_p: _broadcast_to_rule,
    bc.sum_p: _sum_rule,
}

# -- constants ------------------------------------------------------------------------------


def _is_one(v) -> bool:
    return bool(np.all(np.asarray(v) == 1))


def _is_two(v) -> bool:
    return bool(np.all(np.asarray(v) == 2))


def _float_zero(v, negative: bool) -> bool:
    a = np.asarray(v)
    if a.dtype.kind != "f":
        return False
    return bool(np.all(a == 0) and np.all(np.signbit(a) == negative))


def _is_negative_zero(v) -> bool:
    """The additive identity of floats: every element is -0.0."""
    return _float_zero(v, True)


def _is_positive_zero(v) -> bool:
    """What `x - c` may subtract from a float `x`: +0.0 (or an integer 0, cast to +0.0)."""
    return _float_zero(v, False) or _is_integer_zero(v)


def _is_integer_zero(v) -> bool:
    a = np.asarray(v)
    return a.dtype.kind in "iub" and bool(np.all(a == 0))


def _const_key(v):
    """Constants equal by this key are interchangeable: Python scalars by type and bits (so
    0.0 and -0.0, or two NaN payloads, stay apart), arrays of one element by dtype, shape and
    bytes, larger arrays by identity (never compared by value)."""
    if isinstance(v, bool | int):
        return (type(v), v)
    if isinstance(v, float):
        return (float, struct.pack("<d", v))
    if isinstance(v, complex):
        return (complex, struct.pack("<dd", v.real, v.imag))
    if isinstance(v, np.ndarray) and v.size <= 1:
        return ("array", v.dtype.str, v.shape, v.tobytes())
    return ("id", id(v))  # the node holding `v` lives in the table, so the id is not reused


def _params_key(params):
    """`params` as a CSE key in which floats compare by bits (a `pad` with -0.0 is not one
    with 0.0), or None when they are unhashable."""
    if not params:
        return ()
    try:
        return tuple((k, _bits_key(v)) for k, v in params.items())
    except TypeError:
        return None


def _bits_key(v):
    if type(v) is float:
        return (float, struct.pack("<d", v))
    if type(v) is tuple:
        return tuple(_bits_key(u) for u in v)
    hash(v)  # raises TypeError for what cannot be a key
    return v


def _footprint(v) -> int:
    """Elements an input holds in memory (a broadcast view holds only its distinct ones)."""
    if not isinstance(v, np.ndarray):
        return 1
    return math.prod(d for d, s in zip(v.shape, v.strides) if s != 0)


def _evaluate(prim, vals, params):
    """`prim.impl(*vals, **params)`, or None if it raises or warns (then it stays a node,
    and the warning or error happens at run time as it would without simplification)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="raise"):
                return prim.impl(*vals, **params)
    except Exception:  # noqa: BLE001 - any failure means "do not fold"
        return None


def _as_const(v, aval: Aval) -> Node | None:
    """A const node holding `v` with exactly `aval`, or None. A weak 0-d value is a Python
    scalar (as `tracegrad.core._weak_value` keeps it); a strong one a read-only 0-d array.
    Arrays keep their strides (no copy): layout is part of the result."""
    if aval.weak_type and not aval.shape:
        if isinstance(v, np.ndarray | np.generic):
            v = v.item()
    elif isinstance(v, np.generic):
        v = np.asarray(v)
    if isinstance(v, np.ndarray) and v.flags.writeable:
        try:
            v.flags.writeable = False
        except ValueError:
            return None
    if not isinstance(v, np.ndarray | bool | int | float | complex):
        return None
    node = const_node(v)
    return node if node.out_avals == (aval,) else None


# -- x ** 2 == x * x, x ** 1 == x: checked once per dtype ---------------------------------------


@functools.cache
def _pow_is_exact(dtype: np.dtype) -> bool:
    """Whether `np.power(x, 2)` has the bits of `x * x`, and `np.power(x, 1)` those of `x`,
    for this dtype (exponents given as Python scalars or 0-d arrays), on special values and
    random bit patterns, for arrays and NumPy scalars."""
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return False
    x = _probe_values(dtype)
    with np.errstate(all="ignore"):
        for e2, e1 in ((2, 1), (2.0, 1.0), (np.asarray(2, dtype), np.asarray(1, dtype))):
            if not _same_bits(np.power(x, e2), x * x) or not _same_bits(np.power(x, e1), x):
                return False
            small = list(x[:64]) + [x[i : i + 1] for i in range(64)] + list(map(np.asarray, x[:64]))
            for s in small:
                if not _same_bits(np.power(s, e2), s * s) or not _same_bits(np.power(s, e1), s):
                    return False
    return True


def _probe_values(dtype: np.dtype) -> np.ndarray:
    fi = np.finfo(dtype)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, 3.0]
    specials += [fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max]
    specials += [-fi.max, np.sqrt(fi.max), np.sqrt(fi.tiny), fi.eps, 1 + fi.eps]
    utype = np.dtype(f"u{dtype.itemsize}")
    rng = np.random.default_rng(0)
    bits = rng.integers(0, np.iinfo(utype).max, 4096, dtype=utype, endpoint=True)
    normal = rng.standard_normal(1024) * 10.0 ** rng.integers(-30, 30, 1024)
    with np.errstate(all="ignore"):
        return np.concatenate([np.asarray(specials, dtype), bits.view(dtype), normal.astype(dtype)])


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    u = f"u{a.dtype.itemsize}"
    return bool(np.array_equal(a.reshape(-1).view(u), b.reshape(-1).view(u)))
