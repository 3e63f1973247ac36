"""Buffer reuse: which dead intermediate or donated input a ufunc may write into (`out=`).

Planning only, apart from the text generation: `_plan_buffers` and `_plan_donations` read the
graph and return `{node: node whose array it writes into}`; the generator then writes those
calls with `out=`. The argument that this changes no bits and never raises the peak of live
bytes is the comment block below, and it depends on strides, so the planner tracks memory
order symbolically rather than trusting shapes and dtypes alone.
"""

from __future__ import annotations

import numpy as np

from tracegrad.ir.analysis import last_use
from tracegrad.ir.graph import Graph, Node, arg_p, const_p
from tracegrad.ir.layout import Layout

# -- buffer reuse -----------------------------------------------------------------------------
#
# `np.<ufunc>(x, y, out=d)` gives the same bits as `np.<ufunc>(x, y)`, NaN signs included (in
# place too, for more than one element: checked for every ufunc of the elementwise family on
# every pair of special values). But the result takes d's strides, and a later reduction or
# matmul reads memory in stride order, so d must have exactly the strides NumPy would have
# allocated. NumPy's iterator allocates a ufunc result contiguous in the axis order of its
# inputs (order "K"); the planner tracks that order symbolically as a *token*: "C" where it is
# known to be C order (matmul results, constants and reductions in C order) and otherwise the
# value whose unknown order it inherits (a graph input, a transpose). Inputs with at most one
# axis longer than 1 have no say in the order; inputs that disagree make it unknown. Two fresh
# arrays with equal shape (no size-1 axes, whose strides allocators set differently), dtype
# and token have equal strides. A buffer is taken only when nothing live may alias it (a
# view, or any value of a primitive not known to return a fresh array, keeps its inputs'
# buffers alive) and no allocation happens between its death and its reuse, so the peak of
# live bytes never rises above the interpreter's.


def takes_out(prim) -> bool:
    """Whether `prim` is a plain ufunc call that may write into a dead buffer (`out=`): an
    elementwise layout, a ufunc `impl`, and an `emit` that writes exactly `np.<ufunc>(...)`."""
    hit = prim.memo.get("takes_out")
    if hit is None:
        hit = prim.memo["takes_out"] = (
            prim.layout is Layout.ELEMENTWISE
            and isinstance(prim.impl, np.ufunc)
            and prim.emit is not None
            and not prim.multiple_results
            and _plain_call(prim)
        )
    return hit


def _plain_call(prim) -> bool:
    names = [f"x{k}" for k in range(prim.impl.nin)]
    try:
        text = prim.emit(*names)
    except TypeError:  # an emit that takes params is not a plain call
        return False
    return text == f"np.{prim.impl.__name__}({', '.join(names)})"


def _neutral(shape) -> bool:
    # at most one axis longer than 1: no say in the order NumPy's iterator picks
    return sum(1 for d in shape if d > 1) <= 1


def _c_strides(a: np.ndarray) -> tuple[int, ...]:
    # what np.empty gives: C order, size-1 axes included
    strides, step = [], a.itemsize
    for d in reversed(a.shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _plan_buffers(graph: Graph) -> dict[Node, Node]:
    """`{node: dead node whose array it writes into}`, for ufunc nodes (see above)."""
    nodes = graph.nodes
    n = len(nodes)
    last = last_use(graph)
    token: dict[Node, object] = {}  # order token of the values whose order is known
    keys: dict[Node, tuple] = {}  # fresh arrays that may serve as buffers
    bases: dict[Node, frozenset] = {}  # buffers each value may alias (only non-empty sets)
    neutral: dict[tuple, bool] = {}

    def voters(inputs):
        # inputs with a say in the iterator's order; an input of unknown order is its own token
        out = []
        for e in inputs:
            shape = e.node.out_avals[e.index].shape
            nt = neutral.get(shape)
            if nt is None:
                nt = neutral[shape] = _neutral(shape)
            if not nt:
                out.append((token.get(e.node, e), shape))
        return out

    def aliases(node):
        found = None
        for e in node.inputs:
            b = bases.get(e.node)
            if b:
                found = b if found is None or found == b else found | b
        if found:
            bases[node] = found

    for node in nodes:
        prim = node.prim
        if prim is const_p:
            value = node.params["value"]
            if isinstance(value, np.ndarray) and value.strides == _c_strides(value):
                token[node] = "C"
            continue
        if prim is arg_p or prim.multiple_results:
            aliases(node)
            continue
        aval = node.out_avals[0]
        layout = prim.layout
        if layout is Layout.ELEMENTWISE:
            vs = voters(node.inputs)
            first = vs[0][0] if vs else "C"
            if all(t == first for t, _ in vs):  # one order, or none: C
                if first == "C" or all(shape == aval.shape for _, shape in vs):
                    token[node] = first
        elif layout is Layout.KEEPS_C:
            if all(token.get(e.node) == "C" for e in node.inputs if e.aval.shape):
                token[node] = "C"
        elif layout is Layout.C:
            token[node] = "C"
        elif layout is not Layout.DENSE:  # may return a view of (or the same array as) an input
            base = node.inputs[prim.view_of].node if prim.view_of is not None else None
            if layout is Layout.SAME and base in token:
                token[node] = token[base]  # the input itself
            elif layout is Layout.CONTIGUOUS or (
                layout is Layout.RESHAPED and token.get(base) == "C"
            ):
                token[node] = "C"  # a reshape of a C-contiguous array is one too
            aliases(node)
            continue
        # Only shapes without size-1 axes: NumPy's allocators place those differently, and
        # their strides matter to matmul (BLAS or not)
        shape = aval.shape
        if shape and min(shape) > 1 and not aval.weak_type:
            keys[node] = (shape, aval.dtype, token.setdefault(node, node))
            bases[node] = frozenset((node,))
    # when each buffer's memory is last read, through itself or anything that may alias it
    death: dict[Node, int] = {}
    others: dict[Node, int] = {}
    for i, node in enumerate(nodes):
        bs = bases.get(node)
        if bs:
            end = last.get(node, i)
            for b in bs:
                if end > death.get(b, -1):
                    death[b] = end
                if b is not node and end > others.get(b, -1):
                    others[b] = end
    dies_at: list[list[Node]] = [[] for _ in range(n)]
    for b, k in death.items():
        if k < n:
            dies_at[k].append(b)
    plan: dict[Node, Node] = {}
    used: set[Node] = set()
    pool: dict[tuple, list[Node]] = {}
    for i, node in enumerate(nodes):
        key = keys.get(node)
        if key is not None and takes_out(node.prim):
            buf = None
            # in place: an input that dies here, read only directly (never one element, as
            # no key has size-1 axes: NumPy would take its reduction loop, `out is x` with
            # zero strides, whose NaN propagation can pick the other operand's sign)
            for e in node.inputs:
                d = e.node
                if keys.get(d) == key and d not in used and death[d] == i and others.get(d, -1) < i:
                    buf = d
                    break
            if buf is None and pool.get(key):
                buf = pool[key].pop()
            if buf is not None:
                plan[node] = buf
                used.add(buf)
        if node.prim is not const_p and node.prim.view_of is None and node not in plan:
            pool.clear()  # an allocation: holding dead buffers past it could raise the peak
        for d in dies_at[i]:
            if d not in used:
                pool.setdefault(keys[d], []).append(d)
    return plan


# -- donated inputs ---------------------------------------------------------------------------


def _plan_donations(graph: Graph, donated: frozenset[int]) -> dict[Node, Node]:
    """`{node: donated input it writes into}`: the caller gave these input buffers up.

    A node qualifies when it is a plain ufunc, it is the last reader of the donated input, its
    result has the input's shape and dtype, the result is only returned (so its memory
    layout, the input's, cannot change a later reduction's bits), and no view of the input
    is read at or after it. This is the parameter update of a training step (`w - lr * g`):
    it then happens in place.
    """
    if not donated:
        return {}
    last = last_use(graph)
    n = len(graph.nodes)
    pos = {node: i for i, node in enumerate(graph.nodes)}
    returned_only = {e.node for e in graph.outputs}
    for node in graph.nodes:
        for e in node.inputs:
            returned_only.discard(e.node)
    out_counts: dict[Node, int] = {}
    for e in graph.outputs:
        out_counts[e.node] = out_counts.get(e.node, 0) + 1
    # views of each input: their last reads count as reads of the input
    view_last: dict[Node, int] = {}
    base_of: dict[Node, Node] = {}
    for node in graph.nodes:
        if node.prim.view_of is not None and node.inputs:
            src = node.inputs[node.prim.view_of].node
            base = base_of.get(src, src)
            base_of[node] = base
            view_last[base] = max(view_last.get(base, -1), last.get(node, pos[node]))
    plan: dict[Node, Node] = {}
    taken: set[Node] = set()
    for i, e in enumerate(graph.inputs):
        if i not in donated or not is_float_aval(e.aval):
            continue
        arg = e.node
        j = last.get(arg)
        if j is None or j >= n or view_last.get(arg, -1) > j:
            continue
        node = graph.nodes[j]
        if (
            takes_out(node.prim)
            and node not in plan
            and node in returned_only
            and out_counts.get(node) == 1
            and arg not in taken
            and node.out_avals[0] == e.aval.strengthen()
            and e.aval.shape
            and all(x.node is not arg for x in graph.outputs)
        ):
            plan[node] = arg
            taken.add(arg)
    return plan


def is_float_aval(aval) -> bool:
    return aval.dtype.kind in "fc"
