"""The rewriting sweep (`_Pass`) and the identity rules it applies.

Over 600 lines: they share a module because each needs the other: the sweep looks rules up
in `_RULES`, and every rule queries the sweep (`const_fact`, `copy_ok`, `is_c`, `make`);
apart, they would need an import cycle. Besides the rules, the sweep folds constants (with
`constants`), shares equal nodes (CSE) and tracks the memory layout of each value, which
decides whether a rule may hand back an existing array in place of a fresh one.
"""

from __future__ import annotations

import numpy as np

from tracegrad.diagnostics import provenance
from tracegrad.ir import layout as lay
from tracegrad.ir.graph import Edge, Graph, Node, Params, const_p, with_consts
from tracegrad.ir.types import Aval
from tracegrad.ir.verify import expected_avals
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import views
from tracegrad.transforms.simplify.constants import (
    _as_const,
    _const_key,
    _evaluate,
    _footprint,
    _is_integer_zero,
    _is_negative_zero,
    _is_one,
    _is_positive_zero,
    _is_two,
    _params_key,
)
from tracegrad.transforms.simplify.graphs import (
    BARRIER_PRIMITIVES,
    OPEN_PRIMITIVES,
    _holds_graphs,
    _is_barrier,
    _live,
    _rebuild,
)
from tracegrad.transforms.simplify.powers import _pow_is_exact

# Folding limits: a folded result may have up to this many elements regardless of its inputs,
# and otherwise at most _FOLD_GROWTH times the elements its inputs hold in memory.
_FOLD_MIN_SIZE = 64
_FOLD_GROWTH = 2

# Layout classes of a value at run time (see the package docstring and tracegrad.ir.layout).
_C, _DENSE, _ANY = lay.C_ORDER, lay.DENSE, lay.ANY


# -- the rewriting loop ---------------------------------------------------------------------


def _other_params(params) -> tuple:
    return tuple((k, v) for k, v in params.items() if k != "body")


def _extension_key(node: Node):
    """The merge key of the loop `node`'s body extends, or None: a body derived for reverse
    mode records the body it extends (`_cache["residual_of"]`, see transforms.control)."""
    body = node.params.get("body")
    base = body._cache.get("residual_of") if isinstance(body, Graph) else None
    if base is None:
        return None
    return (node.prim, id(base), _other_params(node.params), node.inputs)


def _simplified_params(params):
    """`params` with every sub-graph simplified (the same object when none changes)."""
    from_passes = _simplify_graph  # (set by passes: the full simplification of a graph)
    out, changed = {}, False
    for k, v in params.items():
        if isinstance(v, Graph):
            new = from_passes(v)
        elif type(v) is tuple and v and all(isinstance(u, Graph) for u in v):
            new = tuple(from_passes(u) for u in v)
            new = v if all(a is b for a, b in zip(new, v)) else new
        else:
            new = v
        changed = changed or new is not v
        out[k] = new
    return Params(out) if changed else params


def _simplify_graph(graph: Graph) -> Graph:
    hit = graph._cache.get("simplified")
    if hit is None:
        hit = graph._cache["simplified"] = SIMPLIFY[0](graph)
        if hit is not graph:
            hit._cache["simplified"] = hit
            base = graph._cache.get("residual_of")
            if base is not None:  # (a simplified forward body still extends its loop's)
                hit._cache["residual_of"] = base
    return hit


#: `simplify` itself, registered by `passes` (which imports this module)
SIMPLIFY: list = []


def _same_result(node: Node, ins) -> bool:
    """Whether `node`'s primitive on inputs `ins` gives the node's own output avals (shapes,
    dtypes and weak types: equal avals, so NumPy computes in the same dtype, to the same bits)."""
    prim = node.prim
    try:
        out = prim.results(prim.shape(*(e.aval for e in ins), **node.params))
    except (TypeError, ValueError):
        return False
    return tuple(out) == node.out_avals


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
        self.readers: dict[Node, int] | None = None  # reads per node, counted when needed
        self.facts: dict = {}  # (const node, predicate) -> bool, computed once
        self.created = 0  # nodes made by rules (not yet simplified themselves)
        # broadcasts that lost a reader to `unbroadcast`: a unary node on one, visited before
        # in this sweep, may now hoist it (`only_reader` counts readers), in one more sweep
        self.unread = 0
        # a loop whose body extends another loop's (the forward scan of a vjp): see `merged`
        self.extends: dict = {}
        self.early: set[Node] = set()
        if cse:
            for node in graph.nodes:
                if node.params and _holds_graphs(node):
                    key = _extension_key(node)
                    if key is not None:
                        self.extends.setdefault(key, node)
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
        if node in self.early:
            return
        ins = tuple([self.edge(e) for e in node.inputs])
        if _is_barrier(node):
            if node.prim not in OPEN_PRIMITIVES or node.prim in BARRIER_PRIMITIVES:
                self.set(node, self.emit(node, ins))
            elif not self.merged(node):
                self.visit_holder(node, ins)
            return
        if self.rules and len(ins) > 1 and node.prim.layout is lay.Layout.ELEMENTWISE:
            ins = self.unbroadcast(node, ins)
        if self.rules and len(ins) == 1 and self.only_reader(node, ins[0]):
            hoisted = self.hoist_broadcast(node, ins[0])
            if hoisted is not None:
                provenance.inherit(node, hoisted.node)  # tracegrad.diagnostics: the user's line
                self.new[node] = (hoisted,)
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
                    provenance.inherit(node, rep.node)  # tracegrad.diagnostics: the user's line
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

    def unbroadcast(self, node: Node, ins: tuple[Edge, ...]) -> tuple[Edge, ...]:
        """An elementwise node's operand `broadcast_to(x)` replaced by `x` itself where the
        node's shape is still the broadcast of its operands: NumPy's iterator gives `x` the
        zero strides the view had, so the values and the result's layout are the same and the
        view's call is gone (the 1/n of every mean's gradient, broadcast to the loss's
        shape before it multiplies the cotangent)."""
        shape = node.out_avals[0].shape
        new = None
        for k, e in enumerate(ins):
            while e.node.prim is bc.broadcast_to_p:  # (a broadcast of a broadcast: both)
                x = e.node.inputs[0]
                trial = list(new or ins)
                trial[k] = x
                if x.aval.dtype != e.aval.dtype or x.aval.weak_type != e.aval.weak_type:
                    # a broadcast Python number (a weak scalar: a mean's 1/n in a traced
                    # gradient) promotes as a number, not as the broadcast's array: only
                    # where the node's result is the same either way
                    if not (x.aval.weak_type and _same_result(node, trial)):
                        break
                elif np.broadcast_shapes(*(t.aval.shape for t in trial)) != shape:
                    break
                new = trial
                if self.reads(e.node) > 1:  # it may be left with one reader
                    self.unread += 1
                e = x
        return ins if new is None else tuple(new)

    def only_reader(self, node: Node, new: Edge) -> bool:
        """Whether `node`'s one input is a `broadcast_to` (before and after remapping) that
        nothing else reads (so moving it after the node adds no node)."""
        b = node.inputs[0].node
        if new.node.prim is not bc.broadcast_to_p or b.prim is not bc.broadcast_to_p:
            return False
        if b in self.out_nodes or node in self.out_nodes:  # (an output stays a fresh array)
            return False
        return self.reads(b) == 1

    def reads(self, node: Node) -> int:
        """How many inputs of the graph's nodes read `node` (counted once per sweep)."""
        if self.readers is None:
            self.readers = {}
            for n in self.graph.nodes:
                for e in n.inputs:
                    self.readers[e.node] = self.readers.get(e.node, 0) + 1
        return self.readers.get(node, 0)

    def hoist_broadcast(self, node: Node, b: Edge) -> Edge | None:
        """A unary elementwise node on `broadcast_to(x)` as `broadcast_to(node(x))`: the same
        values, computed on x's elements only, and still a broadcast that `unbroadcast` folds
        into the elementwise node reading it (the negated 1/n of a mean's gradient, which was
        an array of the loss's size: under dask, one chunk of the whole batch)."""
        prim = node.prim
        if prim.layout is not lay.Layout.ELEMENTWISE or prim.effect or prim.multiple_results:
            return None
        x = b.node.inputs[0]
        if x.aval.dtype != b.aval.dtype or x.aval.weak_type != b.aval.weak_type:
            return None
        out = node.out_avals[0]
        inner = self.make(prim, (x,), node.params, Aval(x.aval.shape, out.dtype, out.weak_type))
        if inner is None:
            return None
        return self.make(bc.broadcast_to_p, (inner,), {"shape": out.shape}, out)

    def visit_holder(self, node: Node, ins) -> None:
        """A node holding sub-graphs: its sub-graphs simplified (each on its own: nothing is
        folded into one or shared across its boundary), then shared if an equal node exists."""
        params = _simplified_params(node.params)
        if params is not node.params or ins != node.inputs:
            new = Node(node.prim, ins, params, node.out_avals)
            provenance.inherit(node, new)  # tracegrad.diagnostics: keep the user's line
        else:
            new = node
        key = self.key(new.prim, new.params, ins) if self.cse else None
        hit = self.table.get(key) if key is not None else None
        if hit is not None:
            self.set(node, hit)
            return
        self.append(new)
        if key is not None:
            self.table[key] = new
        self.set(node, new)

    def merged(self, node: Node) -> bool:
        """A scan whose body a later scan extends (the same loop on the same operands, with
        the residuals reverse mode reads as extra outputs): the later scan is emitted here and
        gives this one's outputs, so the loop runs once."""
        body = node.params.get("body")
        if not isinstance(body, Graph):
            return False
        key = (node.prim, id(body), _other_params(node.params), node.inputs)
        ext = self.extends.get(key)
        if ext is None or ext is node:
            return False
        self.visit(ext)
        self.early.add(ext)
        edges = self.new.get(ext) or ext.outputs
        self.new[node] = tuple(edges[: len(node.out_avals)])
        return True

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
            old, node = node, Node(node.prim, ins, node.params, node.out_avals)
            provenance.inherit(old, node)  # tracegrad.diagnostics: keep the user's line
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
        cls = lay.classify(prim.layout, classes, base)
        if cls == _DENSE and all(len(a.shape) <= 1 for a in avals):
            return _C  # in one dimension, dense with a positive stride is C order
        return cls

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
    # Integer sums are exact in any order; float sums turn -0.0 into 0.0 (package docstring).
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
