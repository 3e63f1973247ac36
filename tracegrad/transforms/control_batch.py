"""Batching of the control-flow primitives: their sub-graphs traced once in batched form.

A scan or a while_loop batches its body (a carry that meets a batched value is batched from the
start); a batched while_loop predicate runs until every lane is done, each lane keeping its
carry once its own predicate is false (JAX's semantics); a cond with a batched index runs every
branch and each lane selects its result, as `jax.lax.cond` under vmap does.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Graph
from tracegrad.ir.types import Aval, shape_of
from tracegrad.primitives import control as cf
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.elementwise import astype, clip, equal, where
from tracegrad.primitives.reduction import any_p
from tracegrad.primitives.views import move_axis, move_to_front, reshape
from tracegrad.transforms.control_common import cached, cast, depends, split, trace_closed
from tracegrad.transforms.vmap import batch_pass

# -- batching ---------------------------------------------------------------------------------


def batch_body(graph: Graph, batched, force, size: int):
    """`(graph', out_batched)`: graph on batched inputs (those marked, batch axis first, of
    `size`); outputs marked in `force` get a batch axis first (broadcast in if need be), other
    batched outputs have theirs moved first, unbatched ones stay as they are."""
    batched, force = tuple(batched), tuple(force)

    def build():
        avals = [
            Aval((size, *a.shape), a.dtype) if b else a for a, b in zip(graph.in_avals, batched)
        ]
        out_b: list[bool] = []

        def fn(*args):
            outs, dims = batch_pass(graph, list(args), [0 if b else None for b in batched])
            res = []
            out_b.clear()
            for o, d, f, a in zip(outs, dims, force, graph.out_avals):
                if f:
                    res.append(cast(materialize(o, d, size), Aval((size, *a.shape), a.dtype)))
                elif d is not None:
                    res.append(move_to_front(o, d))
                else:
                    res.append(o)
                out_b.append(f or d is not None)
            return res

        g = trace_closed(fn, avals, f"{graph.name}_batched")
        return g, tuple(out_b)

    return cached(graph, ("batch", batched, force, size), build)


def scan_batch(args, dims, *, body, n_consts, n_carry, length, reverse):
    size = batch_size(args, dims)
    nc, nk = n_consts, n_carry
    b_c, b_k, b_x = split([d is not None for d in dims], nc, nk)
    n_ys = len(body.outputs) - nk
    while True:  # a carry that meets a batched value is batched from the start
        grown = [a or b for a, b in zip(b_k, depends(body, b_c + b_k + b_x)[:nk])]
        if grown == b_k:
            break
        b_k = grown
    g, out_b = batch_body(body, b_c + b_k + b_x, b_k + [False] * n_ys, size)
    consts, init, xs = split(args, nc, nk)
    d_c, d_k, d_x = split(dims, nc, nk)
    operands = (
        [move_to_front(a, d) for a, d in zip(consts, d_c)]
        + [materialize(a, d, size) if b else a for a, d, b in zip(init, d_k, b_k)]
        + [a if d is None else move_axis(a, d, 1) for a, d in zip(xs, d_x)]
    )
    res = cf.scan(*operands, body=g, n_consts=nc, n_carry=nk, length=length, reverse=reverse)
    out_dims = [0 if b else None for b in b_k] + [1 if b else None for b in out_b[nk:]]
    return tuple(res), tuple(out_dims)


def while_batch(args, dims, *, cond_graph, body, n_cond_consts, n_consts, trips):
    size = batch_size(args, dims)
    nq, nc = n_cond_consts, n_consts
    b_q, b_c, b_k = split([d is not None for d in dims], nq, nc)
    while True:
        grown = [a or b for a, b in zip(b_k, depends(body, b_c + b_k))]
        if grown == b_k:
            break
        b_k = grown
    pred_batched = depends(cond_graph, b_q + b_k)[0]
    cc, bc, init = split(args, nq, nc)
    d_q, d_c, d_k = split(dims, nq, nc)
    if pred_batched:
        b_k = [True] * len(b_k)  # each lane stops on its own: every carry is per lane
    cc = [move_to_front(a, d) for a, d in zip(cc, d_q)]
    bc = [move_to_front(a, d) for a, d in zip(bc, d_c)]
    init = [materialize(a, d, size) if b else a for a, d, b in zip(init, d_k, b_k)]
    g, _ = batch_body(body, b_c + b_k, b_k, size)
    if not pred_batched:
        c, _ = batch_body(cond_graph, b_q + b_k, [False], size)
        res = cf.while_loop(
            *cc, *bc, *init, cond_graph=c, body=g, n_cond_consts=nq, n_consts=nc, trips=trips
        )
    else:
        c, _ = batch_body(cond_graph, b_q + b_k, [True], size)
        body_sel, cond_any = _lanes(c, g, nq, nc, list(c.in_avals[:nq]) + list(g.in_avals))
        res = cf.while_loop(
            *cc, *cc, *bc, *init, cond_graph=cond_any, body=body_sel, n_cond_consts=nq,
            n_consts=nq + nc, trips=None,
        )  # fmt: skip
    return tuple(res), tuple(0 if b else None for b in b_k)


def _lanes(cond_b: Graph, body_b: Graph, nq: int, nc: int, avals):
    """A while loop over lanes that stop on their own, as JAX runs a batched predicate: loop
    while any lane goes on; a lane that is done keeps its carry (a select per step)."""
    cq, bq, carry_av = split(avals, nq, nc)

    def step(*args):
        q, b, carry = split(args, nq, nc)
        (pred,) = eval_graph(cond_b, q + carry)
        new = eval_graph(body_b, b + carry)
        return [
            cast(where(reshape(pred, pred.shape + (1,) * (len(shape_of(c)) - 1)), n, c), a)
            for n, c, a in zip(new, carry, carry_av)
        ]

    def any_lane(*args):
        (pred,) = eval_graph(cond_b, list(args))
        return [bind(any_p, pred, axis=(0,), keepdims=False)]

    body_sel = trace_closed(step, cq + bq + carry_av, f"{body_b.name}_lanes")
    cond_any = trace_closed(any_lane, cq + carry_av, f"{cond_b.name}_any")
    return body_sel, cond_any


def cond_batch(args, dims, *, branches):
    size = batch_size(args, dims)
    index, ops = args[0], list(args[1:])
    b_ops = [d is not None for d in dims[1:]]
    ops = [move_to_front(a, d) for a, d in zip(ops, dims[1:])]
    n_out = len(branches[0].outputs)
    if dims[0] is None:
        union = [False] * n_out
        for b in branches:
            union = [u or d for u, d in zip(union, depends(b, b_ops))]
        new = tuple(batch_body(b, b_ops, union, size)[0] for b in branches)
        res = cf.cond(index, *ops, branches=new)
        return tuple(res), tuple(0 if u else None for u in union)
    # a batched index: every branch runs on every lane, and each lane selects its own result
    index = move_to_front(index, dims[0])
    if index.dtype == np.bool_:
        index = astype(index, np.int64)
    index = clip(index, 0, len(branches) - 1)
    results = None
    for k, b in enumerate(branches):
        outs, out_dims = batch_pass(b, ops, [0 if x else None for x in b_ops])
        outs = [materialize(o, d, size) for o, d in zip(outs, out_dims)]
        if results is None:
            results = outs
            continue
        pick = equal(index, k)
        results = [
            where(reshape(pick, (size,) + (1,) * (len(shape_of(o)) - 1)), o, r)
            for o, r in zip(outs, results)
        ]
    return tuple(results), (0,) * n_out


__all__ = ["batch_body", "cond_batch", "scan_batch", "while_batch"]
