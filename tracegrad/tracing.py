"""Tracing a Python function into a `Graph`: the one entry point every transform uses.

`trace_function` runs `f` on fresh tracers, abstract (avals only: `make_graph`, `jit`) or
concrete (values too: one call of `grad`, so Python control flow on values works and the
path taken is recorded). Arguments that are themselves tracers of an enclosing trace become
inputs with their values; the caller re-runs the graph on them to record it one level up.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import attrs

from tracegrad import tree
from tracegrad.core import Tracer, new_trace
from tracegrad.ir.graph import Graph, Node
from tracegrad.ir.types import Aval, aval_of


@attrs.frozen
class Traced:
    """A traced call: the graph, the outer tracers it captured (extra trailing inputs), the
    values a concrete trace computed (per node), and the flat outputs as traced."""

    graph: Graph
    captured: tuple[Tracer, ...]
    values: dict[Node, object]
    out_tracers: tuple


def _input(trace, x, concrete: bool):
    if isinstance(x, Aval):
        return trace.new_arg(x, None)
    if isinstance(x, Tracer):
        return trace.new_arg(x.aval, x.val if concrete else None)
    aval = aval_of(x)
    return trace.new_arg(aval, x if concrete else None)


def trace_flat(
    fn: Callable,
    flat_args: Sequence,
    *,
    concrete: bool,
    name: str = "f",
    in_tree=None,
    cse: bool = True,
) -> tuple[Traced, object]:
    """Trace `fn(*tracers) -> pytree` on one tracer per flat argument: (Traced, out_tree)."""
    with new_trace(cse=cse, keep_values=concrete) as trace:
        in_tracers = [_input(trace, x, concrete) for x in flat_args]
        out = fn(*in_tracers)
        out_flat, out_tree = tree.flatten(out)
        out_edges = [trace.output_edge(o) for o in out_flat]
        inputs = [t.edge for t in in_tracers] + [t.edge for t in trace.captured.values()]
    graph = trace.graph(inputs, out_edges, in_tree=in_tree, out_tree=out_tree, name=name)
    return Traced(graph, tuple(trace.captured_outer), trace.values, tuple(out_flat)), out_tree


def trace_function(
    f: Callable,
    args: tuple,
    kwargs: dict | None = None,
    *,
    concrete: bool,
    name: str | None = None,
    cse: bool = True,
) -> Traced:
    """Trace `f(*args, **kwargs)`; the graph's `in_tree` is that of `(args, kwargs)`."""
    kwargs = kwargs or {}
    flat, in_tree = tree.flatten((tuple(args), dict(kwargs)))

    def flat_fn(*tracers):
        a, k = tree.unflatten(in_tree, tracers)
        return f(*a, **k)

    traced, _ = trace_flat(
        flat_fn,
        flat,
        concrete=concrete,
        name=name or getattr(f, "__name__", "f"),
        in_tree=in_tree,
        cse=cse,
    )
    return traced


def split_static(args: tuple, static_argnums: Sequence[int], fname: str):
    """(static values, dynamic args, merge function) for `static_argnums`."""
    n = len(args)
    static = set()
    for i in static_argnums:
        if not -n <= i < n:
            raise ValueError(
                f"{fname}: static_argnums={tuple(static_argnums)} refers to argument {i}, but "
                f"the function was called with {n} positional arguments"
            )
        static.add(i % n)
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    statics = tuple((i, args[i]) for i in sorted(static))

    return statics, dyn, lambda dyn_args: merge_static(statics, dyn_args)


def merge_static(statics: tuple, dyn_args: tuple) -> tuple:
    """The full positional arguments from `(index, value)` static pairs and the rest."""
    if not statics:
        return tuple(dyn_args)
    static = dict(statics)
    it = iter(dyn_args)
    return tuple(static[i] if i in static else next(it) for i in range(len(dyn_args) + len(static)))


def make_graph(f: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., Graph]:
    """`make_graph(f)(*args)` traces `f` abstractly and returns its `Graph`.

    Arguments may be arrays, Python scalars or `tg.Aval(shape, dtype)`; only their shapes and
    dtypes matter. Arguments named in `static_argnums` are baked into the graph.
    """
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    name = getattr(f, "__name__", "f")

    @functools.wraps(f)
    def graph_of(*args, **kwargs) -> Graph:
        _, dyn, merge = split_static(args, static_argnums, "make_graph")
        traced = trace_function(
            lambda *d, **k: f(*merge(d), **k), dyn, kwargs, concrete=False, name=name
        )
        if traced.captured:
            raise TypeError(
                f"make_graph({name}): the function closes over values traced by an enclosing "
                "transformation; pass them as arguments instead"
            )
        return traced.graph

    return graph_of
