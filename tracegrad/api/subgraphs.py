"""Tracing a user's function into a sub-graph, for the control-flow constructs of
`tracegrad.api.control_flow`: abstractly, with the values it closes over (an enclosing
transform's tracers, PyTorch-style tensors) turned into leading inputs, so their derivatives
flow through the primitive that holds the sub-graph.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from tracegrad import tree
from tracegrad.core import Boxed, Tracer, _current_trace, current_trace
from tracegrad.ir.graph import Graph
from tracegrad.ir.types import Aval, aval_of
from tracegrad.primitives import control as cf


class _FunctionTrace(cf.EffectTrace):
    """The trace of a function that becomes a sub-graph: abstract; a PyTorch-style tensor the
    function closes over becomes an input (and an operand of the primitive, recorded by the
    tensor when the primitive runs), as an outer tracer does, so its gradient flows."""

    def __init__(self, parent):
        super().__init__(parent, keep_values=False)
        self.effects = []
        self.tensors: dict[int, tuple[object, Tracer]] = {}

    def bind(self, prim, args, params):
        if any(isinstance(a, Boxed) and not isinstance(a, Tracer) for a in args):
            args = [
                self.tensor(a) if isinstance(a, Boxed) and not isinstance(a, Tracer) else a
                for a in args
            ]
        return super().bind(prim, args, params)

    def tensor(self, t) -> Tracer:
        hit = self.tensors.get(id(t))
        if hit is None:
            hit = self.tensors[id(t)] = (t, self.new_arg(aval_of(np.asarray(t._constant_value()))))
        return hit[1]


@contextlib.contextmanager
def _function_trace():
    # as core.new_trace, with the trace a sub-graph needs (the core's trace context variable)
    trace = _FunctionTrace(current_trace())
    token = _current_trace.set(trace)
    try:
        yield trace
    finally:
        _current_trace.reset(token)
        trace.alive = False
        trace._cse_table = {}
        trace._carries = {}


@attrs.frozen
class Traced:
    """A function as a sub-graph: inputs are its closure (`consts`, the values the primitive
    takes as leading operands) and then its arguments; `out_tree` structures its outputs."""

    graph: Graph
    consts: tuple
    out_tree: object

    @property
    def n_consts(self) -> int:
        return len(self.consts)


def leaf_aval(x, what: str) -> Aval:
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, Boxed):
        return aval_of(np.asarray(x._constant_value()))
    try:
        return aval_of(x)
    except TypeError:
        raise TypeError(
            f"{what}: values must be arrays, Python scalars or pytrees of them, got a "
            f"{type(x).__name__}"
        ) from None


_VALID = (np.ndarray, np.generic, bool, int, float, complex)


def _output_edge(trace: _FunctionTrace, o, name: str, k: int):
    if isinstance(o, Boxed) and not isinstance(o, Tracer):
        return trace.tensor(o).edge
    if not isinstance(o, (Tracer, *_VALID)):
        raise TypeError(
            f"function {name} traced for a control-flow construct returned a value of type "
            f"{type(o).__name__} at output component {k}, which is not a valid tracegrad type "
            "(arrays, Python scalars and pytrees of them are)"
        )
    return trace.output_edge(o)


def trace_subgraph(fn: Callable, args_tree, avals: Sequence[Aval], outputs=None) -> Traced:
    """`fn(*tree.unflatten(args_tree, tracers))` as a sub-graph. `outputs(out) -> pytree`
    checks and rearranges what `fn` returned before it is flattened."""
    name = getattr(fn, "__name__", type(fn).__name__)
    with _function_trace() as trace:
        args = [trace.new_arg(a) for a in avals]
        out = fn(*tree.unflatten(args_tree, args))
        if outputs is not None:
            out = outputs(out)
        flat, out_tree = tree.flatten(out)
        edges = [_output_edge(trace, o, name, k) for k, o in enumerate(flat)]
    tensors = list(trace.tensors.values())
    inputs = (
        [t.edge for t in trace.captured.values()]
        + [inner.edge for _, inner in tensors]
        + [t.edge for t in args]
    )
    graph = trace.graph(inputs, edges, name=name)
    consts = tuple(trace.captured_outer) + tuple(t for t, _ in tensors)
    return Traced(graph, consts, out_tree)


def structure_of(*parts):
    """The structure of the positional arguments `parts` (each a pytree)."""
    return tree.structure(tuple(parts))
