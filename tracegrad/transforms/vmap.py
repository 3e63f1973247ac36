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
    env: dict[Node, tuple] = {}
    for e, a, d in zip(graph.inputs, args, dims):
        env[e.node] = (a, d)
    for node, free in zip(graph.nodes, free_schedule(graph)):
        if node.prim is const_p:
            env[node] = (node.params["value"], None)
        else:
            vals, ds = [], []
            for e in node.inputs:
                v, d = _read(env, e)
                vals.append(v)
                ds.append(d)
            if all(d is None for d in ds):
                out = bind(node.prim, *vals, **node.params)
                out_dim = (None,) * len(node.out_avals) if node.prim.multiple_results else None
            else:
                rule = node.prim.batch
                if rule is None:
                    raise NotImplementedError(
                        f"vmap: the primitive {node.prim.name!r} has no batching rule"
                    )
                out, out_dim = rule(vals, ds, **node.params)
            env[node] = (out, out_dim)
        for dead in free:
            del env[dead]
    outs, out_dims = [], []
    for e in graph.outputs:
        v, d = _read(env, e)
        outs.append(v)
        out_dims.append(d)
    return outs, out_dims


def _read(env, e):
    """(value, batch axis) of edge `e` (a constant not listed in the graph is unbatched)."""
    v, d = env[e.node] if e.node in env else (e.node.params["value"], None)
    if e.node.prim.multiple_results:
        v, d = v[e.index], d[e.index]
    return v, d
