"""Batching: the `vmap` transform.

`batch_pass` runs a graph on batched values: each value travels with its batch axis (None
for unbatched values), and each node applies its primitive's batching rule, or the primitive
itself when nothing it reads is batched, so unbatched work stays unbatched. Like every pass
it binds ordinary primitives: on arrays it computes, on tracers it records, so `vmap`
composes with `grad`, `jvp` and itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrad.core import bind
from tracegrad.ir.analysis import free_schedule
from tracegrad.ir.graph import Graph, Node, const_p


def batch_pass(graph: Graph, args: Sequence, dims: Sequence[int | None]) -> tuple[list, list]:
    """Outputs of `graph` and their batch axes, given batched inputs."""
    env: dict[Node, tuple] = {}  # node -> (its output values, their batch axes)
    for e, a, d in zip(graph.inputs, args, dims):
        env[e.node] = ((a,), (d,))

    def read(e):
        """(value, batch axis) of edge `e` (a constant not listed in the graph is unbatched)."""
        node = e.node
        if node.prim is const_p:
            return node.params["value"], None
        outs, out_dims = env[node]
        return outs[e.index], out_dims[e.index]

    for node, free in zip(graph.nodes, free_schedule(graph)):
        prim = node.prim
        if prim is not const_p:
            vals, ds = [], []
            for e in node.inputs:
                v, d = read(e)
                vals.append(v)
                ds.append(d)
            if all(d is None for d in ds):
                outs = prim.results(bind(prim, *vals, **node.params))
                env[node] = (outs, (None,) * len(outs))
            else:
                if prim.batch is None:
                    raise NotImplementedError(
                        f"vmap: the primitive {prim.name!r} has no batching rule; give it one "
                        "(Primitive(..., batch=...)): tracegrad.extend.elementwise_batch for "
                        "an elementwise primitive, tracegrad.extend.loop_batch for any"
                    )
                out, out_dim = prim.batch(vals, ds, **node.params)
                env[node] = (prim.results(out), prim.results(out_dim))
        for dead in free:
            env.pop(dead, None)
    outs, out_dims = [], []
    for e in graph.outputs:
        v, d = read(e)
        outs.append(v)
        out_dims.append(d)
    return outs, out_dims
