"""The rules of `checkpoint` (rematerialization): residuals recomputed in the backward graph.

A checkpoint node's body returns the user's outputs, then the residuals its policy saves
(found when the node is bound: the forward half of the body's vjp, filtered by the policy).
Its vjp rule binds one new checkpoint node that reads the operands, the saved residuals and
the output cotangents: it depends on a cotangent, so `vjp_graph` puts it in the backward
graph, and the forward graph keeps only its operands and saved values. Inside it the forward
work is redone (saved values taken as known, so never recomputed) and the body's backward half
runs. The node is opaque to simplification (`BARRIER_PRIMITIVES`), so nothing merges the
recomputation with the forward pass.
"""

from __future__ import annotations

from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Edge, Graph, Node, const_p
from tracegrad.ir.types import is_float
from tracegrad.primitives import custom as cp
from tracegrad.primitives import einsum, products
from tracegrad.primitives.batching import batch_size
from tracegrad.primitives.views import move_to_front
from tracegrad.transforms.control import jvp_body
from tracegrad.transforms.control_batch import batch_body
from tracegrad.transforms.control_common import cached, cast, strong, trace_closed, zeros
from tracegrad.transforms.vjp import vjp_graph

NOTHING = ("nothing_saveable",)

#: the products JAX's `dots_saveable` means (its dot_general)
DOTS = frozenset(
    {
        products.matmul_p,
        products.dot_p,
        products.tensordot_p,
        products.vecdot_p,
        products.matvec_p,
        products.vecmat_p,
        einsum.einsum_p,
    }
)

POLICY_KINDS = (
    "nothing_saveable",
    "everything_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "save_only_these_names",
    "save_any_names_but_these",
    "save_anything_except_these_names",
)


def strip_names(graph: Graph) -> tuple[Graph, dict]:
    """`graph` without its checkpoint_name marks (each replaced by the value it marks), and
    the names of the values they marked (Edge -> name)."""
    if not any(n.prim is cp.checkpoint_name_p for n in graph.nodes):
        return graph, {}
    remap: dict[Edge, Edge] = {}
    names: dict[Edge, str] = {}
    for node in graph.nodes:
        ins = tuple(remap.get(e, e) for e in node.inputs)
        if node.prim is cp.checkpoint_name_p:
            remap[Edge(node, 0)] = ins[0]
            names[ins[0]] = node.params["name"]
        elif ins != node.inputs:
            new = Node(node.prim, ins, node.params, node.out_avals)
            for i in range(len(node.out_avals)):
                remap[Edge(node, i)] = Edge(new, i)
    outputs = [remap.get(e, e) for e in graph.outputs]
    stripped = Graph.from_outputs(graph.inputs, outputs, name=graph.name)
    return stripped, names


def allows(policy, prim, avals, params, name) -> bool:
    """Whether `policy` (a named policy's param, or a user's function with JAX's signature
    `policy(prim, *avals, **params)`) saves an output of `prim`; `name`: its checkpoint_name."""
    if callable(policy):
        return bool(policy(prim, *avals, **params))
    kind = policy[0]
    if kind in ("everything_saveable", "nothing_saveable"):
        return kind == "everything_saveable"
    if kind == "dots_saveable":
        return prim in DOTS
    if kind == "dots_with_no_batch_dims_saveable":
        return prim in DOTS and all(len(a.shape) <= 2 for a in avals)
    listed = policy[1]
    if kind == "save_only_these_names":
        return name in listed
    if kind == "save_any_names_but_these":
        return name is not None and name not in listed
    return name not in listed  # save_anything_except_these_names


def _saveable(r: Edge, policy, names: dict) -> bool:
    node = r.node
    avals = [e.aval for e in node.inputs]
    return allows(policy, node.prim, avals, dict(node.params), names.get(r))


def _split(graph: Graph):
    """The vjp split of `graph`, made once: the residuals a policy saves are edges of it."""
    return cached(graph, "checkpoint_split", lambda: vjp_graph(graph))


def saved_residuals(graph: Graph, policy, names: dict | None = None) -> list[Edge]:
    """The values the forward pass keeps for reverse mode over `graph` under `policy`: walking
    back from each residual the backward half reads, the first values the policy saves (as
    JAX, `dots_saveable` keeps `x @ W` and the backward graph recomputes `tanh` from it).
    `names`: the checkpoint_name of marked values (`strip_names`)."""
    if policy == NOTHING:
        return []
    fwd = _split(graph).forward
    inputs = {e.node for e in fwd.inputs}
    names = names or {}
    saved: list[Edge] = []
    seen: set[Edge] = set()
    stack = list(reversed(fwd.outputs[len(graph.outputs) :]))
    while stack:
        r = stack.pop()
        node = r.node
        if r in seen or node in inputs or node.prim is const_p:
            continue
        seen.add(r)
        if len(node.out_avals) == 1 and _saveable(r, policy, names):
            saved.append(r)
        else:
            stack.extend(reversed(node.inputs))
    return saved


def bind_checkpoint(graph: Graph, operands, policy) -> list:
    """The outputs of `graph` on `operands`, as one checkpoint node with `policy`."""

    def build():
        plain, names = strip_names(graph)
        saved = saved_residuals(plain, policy, names)
        if not saved:
            return plain, 0
        outputs = tuple(plain.outputs) + tuple(saved)
        body = Graph.from_outputs(plain.inputs, outputs, name=plain.name)
        body._cache["checkpoint_of"] = plain  # the split whose residuals it saves
        return body, len(saved)

    body, n_saved = cached(graph, ("checkpoint", policy), build)
    out = cp.checkpoint(*operands, body=body, n_saved=n_saved)
    return list(out[: len(out) - n_saved])


def checkpoint_impl(*args, body, n_saved):
    return tuple(eval_graph(body, list(args)))


def _target(body: Graph, n_saved: int, given: tuple[bool, ...]) -> Graph:
    """The graph whose vjp the backward node runs: the user's outputs (saved residuals then
    come in as known values), or, when a saved residual itself has a cotangent (a higher
    derivative through the backward node), the whole body, recomputed."""
    n_user = len(body.outputs) - n_saved
    if any(given[n_user:]):
        return body
    origin = body._cache.get("checkpoint_of")
    if origin is not None:
        return origin
    return cached(
        body,
        "checkpoint_user",
        lambda: Graph.from_outputs(body.inputs, body.outputs[:n_user], name=body.name),
    )


def _bwd_graph(body: Graph, n_saved: int, given: tuple[bool, ...], wanted: tuple[bool, ...]):
    """(operands, saved residuals, given output cotangents) -> cotangents of the wanted float
    operands, redoing the forward work the saved residuals do not cover; and the positions of
    those operands."""

    def build():
        target = _target(body, n_saved, given)
        split = _split(target)
        n_in, n_out = len(body.inputs), len(target.outputs)
        saved = body.outputs[len(body.outputs) - n_saved :]
        residuals = split.forward.outputs[n_out:]
        res_graph = Graph.from_outputs(split.forward.inputs, residuals, name=body.name)
        floats = [i for i, a in enumerate(body.in_avals) if is_float(a.dtype) and wanted[i]]
        out_avals = [a.strengthen() for a in target.out_avals]
        given_at = [k for k in range(n_out) if given[k]]

        def fn(*xs):
            operands, values = xs[:n_in], xs[n_in : n_in + n_saved]
            cts = dict(zip(given_at, xs[n_in + n_saved :]))
            known = {e.node: (v,) for e, v in zip(saved, values)}
            res = eval_graph(res_graph, list(operands), known=known) if residuals else []
            all_cts = [cts[k] if k in cts else zeros(out_avals[k]) for k in range(n_out)]
            bars = dict(zip(split.present, eval_graph(split.linear, list(res) + all_cts)))
            return [
                cast(bars[i], body.in_avals[i].strengthen())
                if i in bars
                else zeros(body.in_avals[i])
                for i in floats
            ]

        avals = list(body.in_avals) + [e.aval for e in saved]
        avals += [a.strengthen() for k, a in enumerate(body.out_avals) if given[k]]
        return trace_closed(fn, avals, f"{body.name}_remat"), floats

    return cached(body, ("remat", n_saved, given, wanted), build)


def checkpoint_vjp(cotangent, *primals, out, body, n_saved, wanted=None):
    n_user = len(body.outputs) - n_saved
    given = tuple(c is not None for c in cotangent)
    wanted = (True,) * len(primals) if wanted is None else tuple(wanted)
    cts = [strong(c, a) for c, a in zip(cotangent, body.out_avals) if c is not None]
    bwd, floats = _bwd_graph(body, n_saved, given, wanted)
    # one node reading a cotangent: the recomputation belongs to the backward graph
    got = cp.checkpoint(*primals, *out[n_user:], *cts, body=bwd, n_saved=0)
    bars: list = [None] * len(primals)
    for i, v in zip(floats, got):
        bars[i] = v
    return tuple(bars)


def checkpoint_jvp(primals, tangents, *, out, body, n_saved):
    nz = [t is not None for t in tangents]
    graph, has = jvp_body(body, nz, primal_outputs=False)
    ts = [strong(t, a) for t, a in zip(tangents, body.in_avals) if t is not None]
    # the policy chose when the node was bound; the tangent computation saves nothing
    res = iter(bind_checkpoint(graph, list(primals) + ts, NOTHING))
    return tuple(next(res) if h else None for h in has)


def checkpoint_batch(args, dims, *, body, n_saved):
    size = batch_size(args, dims)
    batched = [d is not None for d in dims]
    graph, out_b = batch_body(body, batched, [False] * len(body.outputs), size)
    moved = [move_to_front(a, d) for a, d in zip(args, dims)]
    res = cp.checkpoint(*moved, body=graph, n_saved=n_saved)
    return tuple(res), tuple(0 if b else None for b in out_b)


__all__ = [
    "DOTS",
    "NOTHING",
    "POLICY_KINDS",
    "allows",
    "bind_checkpoint",
    "checkpoint_batch",
    "checkpoint_impl",
    "checkpoint_jvp",
    "checkpoint_vjp",
    "saved_residuals",
]
