"""Structured control flow: `cond`, `while_loop` and `scan`, primitives that hold sub-graphs.

Each holds its functions as sub-graphs in its params (DESIGN.md §1, §4), with the values they
close over as leading operands, so a loop is one node however many steps it takes:

- `cond(index, *operands, branches)`: `branches[index](*operands)`, the index clamped into
  range (jax.lax.switch's semantics); `cond` with a predicate is the two-branch case.
- `while_loop(*cond_consts, *body_consts, *init, cond_graph, body, n_cond_consts, n_consts,
  trips)`: `carry = body(carry)` while `cond_graph(carry)`; `trips` is the trip count of a
  loop first run on concrete values (eagerly, or under `tg.grad` without jit), recorded so
  reverse mode can run it backwards as a scan of that length; None under jit.
- `scan(*consts, *init, *xs, body, n_consts, n_carry, length, reverse)`: `body(consts, carry,
  x) -> (carry, y)` over the leading axis of `xs`, the ys stacked.

Shape and emit rules live here; the rules that run, differentiate or batch a sub-graph live in
`tracegrad.transforms.control`, which this module reaches lazily (the upward import DESIGN.md
§7 allows rules of primitives that hold sub-graphs). The host primitives `pure_callback` and
`debug_print` hold a Python callable or print: they are users' primitives in kind, outside
`PRIMITIVES` (a graph holding a callable cannot be serialized, and a print is an effect).
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import Trace, bind
from tracegrad.ir.graph import Graph, with_consts
from tracegrad.ir.primitive import READS_INPUTS, READS_NOTHING, Primitive, lazy_rule
from tracegrad.ir.types import Aval
from tracegrad.ir.types import avals_short as _short
from tracegrad.primitives import series


def _rules():
    # The rules of primitives holding sub-graphs run transforms on them (DESIGN.md §7)
    from tracegrad.transforms import control

    return control


def _rule(name: str):
    return lazy_rule(_rules, name)


def _taylor_rules():
    # The Taylor rules run the series pass on sub-graphs, as the jvp rules run transforms
    from tracegrad.transforms import control_taylor

    return control_taylor


def _taylor(name: str):
    return lazy_rule(_taylor_rules, name)


def _same_avals(what: str, got, want) -> None:
    """Sub-graph avals must match their operands exactly (shape, dtype and weak type)."""
    got, want = tuple(got), tuple(want)
    if got != want:
        raise TypeError(f"{what}: the sub-graph takes {_short(want)}, but got {_short(got)}")


def _graph(name: str, g) -> Graph:
    if not isinstance(g, Graph):
        raise TypeError(f"{name} must be a Graph, got {type(g).__name__}")
    return g


def _count(name: str, n) -> int:
    if type(n) is not int or n < 0:
        raise TypeError(f"{name} must be a non-negative int, got {n!r}")
    return n


# -- scan -------------------------------------------------------------------------------------


def scan(*operands, body, n_consts, n_carry, length, reverse=False):
    """`scan_p` on `consts + init + xs`; returns the final carry and the stacked ys (a tuple)."""
    return bind(
        scan_p, *operands, body=body, n_consts=n_consts, n_carry=n_carry, length=length,
        reverse=reverse,
    )  # fmt: skip


def _scan_shape(*avals, body, n_consts, n_carry, length, reverse):
    body = _graph("scan: body", body)
    _count("scan: n_consts", n_consts)
    _count("scan: n_carry", n_carry)
    _count("scan: length", length)
    if type(reverse) is not bool:
        raise TypeError(f"scan: reverse must be a bool, got {reverse!r}")
    n_xs = len(avals) - n_consts - n_carry
    if n_xs < 0:
        raise TypeError(f"scan: {len(avals)} operands for {n_consts} consts and {n_carry} carries")
    consts, init, xs = (
        avals[:n_consts],
        avals[n_consts : n_consts + n_carry],
        avals[n_consts + n_carry :],
    )
    for i, x in enumerate(xs):
        if not x.shape or x.shape[0] != length:
            raise TypeError(
                f"scan: xs operand {i} has shape {x.shape}, but a scan of length {length} "
                "needs a leading axis of that size"
            )
    x_avals = tuple(Aval(x.shape[1:], x.dtype) for x in xs)
    _same_avals("scan: body", tuple(consts) + tuple(init) + x_avals, body.in_avals)
    outs = body.out_avals
    if len(outs) < n_carry:
        raise TypeError(
            f"scan: the body returns {len(outs)} values, fewer than its {n_carry} carries"
        )
    if tuple(outs[:n_carry]) != tuple(init):
        raise TypeError(
            f"scan: the body's carry output {_short(outs[:n_carry])} differs from its carry input "
            f"{_short(init)}"
        )
    ys = tuple(Aval((length, *y.shape), y.dtype) for y in outs[n_carry:])
    return tuple(init) + ys


def _loop_emit(run: str, params: list[str], lines: list[str], names) -> list[str]:
    """A nested function `run` holding the loop (its temporaries die with it), and its call."""
    return [f"def {run}({', '.join(params)}):", *lines, f"{run}({', '.join(names)})"]


def _unpack(targets: list[str]) -> str:
    return ", ".join(targets) + ("," if len(targets) == 1 else "")


def _scan_text(names, body, n_consts, n_carry, length, reverse, stacked: bool) -> list[str]:
    """The loop of a scan; each step's outputs written into preallocated stacks (NumPy), or,
    `stacked`, collected and stacked after the loop (libraries whose arrays are immutable)."""
    n_xs = len(names) - n_consts - n_carry
    k = [f"_Lk{i}" for i in range(n_consts)]
    c = [f"_Lc{i}" for i in range(n_carry)]
    x = [f"_Lx{i}" for i in range(n_xs)]
    ys = body.out_avals[n_carry:]
    y = [f"_Ly{i}" for i in range(len(ys))]
    t = [f"_Lt{i}" for i in range(len(ys))]
    if stacked:
        lines = [f"    {b} = []" for b in y]
    else:
        lines = [
            f"    {b} = np.empty({(length, *a.shape)!r}, np.dtype({a.dtype.name!r}))"
            for b, a in zip(y, ys)
        ]
    steps = f"range({length - 1}, -1, -1)" if reverse else f"range({length})"
    lines.append(f"    for _Li in {steps}:")
    call = f"{body.name}({', '.join(k + c + [f'{v}[_Li]' for v in x])})"
    lines.append(f"        {_unpack(c + t)} = {call}" if c or t else f"        {call}")
    if stacked:
        lines += [f"        {b}.append({v})" for b, v in zip(y, t)]
        for b, a in zip(y, ys):
            order = f"{b}[::-1]" if reverse else b
            empty = f"np.zeros({(0, *a.shape)!r}, dtype=np.dtype({a.dtype.name!r}))"
            lines.append(f"    {b} = np.stack({order}) if {b} else {empty}")
    else:
        lines += [f"        {b}[_Li] = {v}" for b, v in zip(y, t)]
    lines.append(f"    return ({_unpack(c + y)})")
    return _loop_emit(f"{body.name}_loop", k + c + x, lines, names)


def _scan_emit(*names, body, n_consts, n_carry, length, reverse):
    return _scan_text(names, body, n_consts, n_carry, length, reverse, stacked=False)


def _scan_emit_array_api(*names, body, n_consts, n_carry, length, reverse):
    return _scan_text(names, body, n_consts, n_carry, length, reverse, stacked=True)


def _refused_array_api(why: str):
    def emit(*names, **params):
        raise NotImplementedError(why)

    return emit


scan_p = Primitive(
    "scan",
    impl=_rule("scan_impl"),
    shape=_scan_shape,
    jvp=_rule("scan_jvp"),
    vjp=_rule("scan_vjp"),
    taylor=_taylor("scan_taylor"),
    batch=_rule("scan_batch"),
    emit=_scan_emit,
    emit_array_api=_scan_emit_array_api,
    multiple_results=True,
    vjp_reads=READS_INPUTS,
)

# -- while_loop -------------------------------------------------------------------------------


def while_loop(*operands, cond_graph, body, n_cond_consts, n_consts, trips=None):
    """`while_loop_p` on `cond_consts + body_consts + init`; returns the final carry (a tuple)."""
    return bind(
        while_loop_p, *operands, cond_graph=cond_graph, body=body, n_cond_consts=n_cond_consts,
        n_consts=n_consts, trips=trips,
    )  # fmt: skip


def _while_shape(*avals, cond_graph, body, n_cond_consts, n_consts, trips):
    cond_graph = _graph("while_loop: cond_graph", cond_graph)
    body = _graph("while_loop: body", body)
    _count("while_loop: n_cond_consts", n_cond_consts)
    _count("while_loop: n_consts", n_consts)
    if trips is not None:
        _count("while_loop: trips", trips)
    if n_cond_consts + n_consts > len(avals):
        raise TypeError(f"while_loop: {len(avals)} operands for {n_cond_consts + n_consts} consts")
    cc = avals[:n_cond_consts]
    bc = avals[n_cond_consts : n_cond_consts + n_consts]
    init = avals[n_cond_consts + n_consts :]
    _same_avals("while_loop: cond_graph", tuple(cc) + tuple(init), cond_graph.in_avals)
    _same_avals("while_loop: body", tuple(bc) + tuple(init), body.in_avals)
    pred = cond_graph.out_avals
    if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != np.bool_:
        raise TypeError(f"while_loop: cond_graph must return one bool[] value, got {_short(pred)}")
    if tuple(body.out_avals) != tuple(init):
        raise TypeError(
            f"while_loop: the body's carry output {_short(body.out_avals)} differs from its carry "
            f"input {_short(init)}"
        )
    return tuple(init)


def _while_emit(*names, cond_graph, body, n_cond_consts, n_consts, trips):
    n_carry = len(names) - n_cond_consts - n_consts
    cc = [f"_Lq{i}" for i in range(n_cond_consts)]
    bc = [f"_Lk{i}" for i in range(n_consts)]
    c = [f"_Lc{i}" for i in range(n_carry)]
    lines = ["    _Ln = 0"] if trips is not None else []
    lines.append(f"    while {cond_graph.name}({', '.join(cc + c)})[0]:")
    step = f"{body.name}({', '.join(bc + c)})"
    lines.append(f"        {_unpack(c)} = {step}" if c else f"        {step}")
    if trips is not None:
        lines.append("        _Ln += 1")
        lines.append(f"    if _Ln != {trips!r}:")
        lines.append(f"        raise ValueError({TRIPS_MESSAGE!r}.format(_Ln, {trips!r}))")
    lines.append(f"    return ({_unpack(c)})")
    return _loop_emit(f"{body.name}_loop", cc + bc + c, lines, names)


#: a graph recorded from a concrete run of a while_loop is valid for loops of that trip count
TRIPS_MESSAGE = (
    "while_loop: the loop ran {} times, but this graph recorded it from a run of {} (a graph "
    "traced with concrete values records the path taken; trace with jit for one that does not)"
)

while_loop_p = Primitive(
    "while_loop",
    impl=_rule("while_impl"),
    shape=_while_shape,
    jvp=_rule("while_jvp"),
    vjp=_rule("while_vjp"),
    taylor=_taylor("while_taylor"),
    batch=_rule("while_batch"),
    emit=_while_emit,
    emit_array_api=_refused_array_api(
        "the loop tests its condition's value in Python each trip, which another library "
        "would compute eagerly (dask) or cannot give under its own tracing (jax.jit)"
    ),
    multiple_results=True,
    vjp_reads=READS_INPUTS,
)

# -- cond -------------------------------------------------------------------------------------


def cond(index, *operands, branches):
    """`branches[index](*operands)` (a tuple of outputs), the index clamped into range."""
    return bind(cond_p, index, *operands, branches=tuple(branches))


def _cond_shape(index, *operands, branches):
    if type(branches) is not tuple or not branches:
        raise TypeError("cond: branches must be a non-empty tuple of Graphs")
    for k, g in enumerate(branches):
        _graph(f"cond: branch {k}", g)
        _same_avals(f"cond: branch {k}", operands, g.in_avals)
    if index.shape != () or index.dtype.kind not in "biu":
        raise TypeError(
            f"cond: the index must be a bool or integer scalar, got {index.str_short()}"
        )
    first = branches[0].out_avals
    for k, g in enumerate(branches[1:], 1):
        if tuple(g.out_avals) != tuple(first):
            raise TypeError(
                f"cond: branch {k} returns {_short(g.out_avals)}, but branch 0 returns "
                f"{_short(first)}"
            )
    return tuple(first)


def _cond_emit(index, *operands, branches):
    fns = ", ".join(b.name for b in branches) + ("," if len(branches) == 1 else "")
    pick = f"min(max(int({index}), 0), {len(branches) - 1})"
    return f"({fns})[{pick}]({', '.join(operands)})"


cond_p = Primitive(
    "cond",
    impl=_rule("cond_impl"),
    shape=_cond_shape,
    jvp=_rule("cond_jvp"),
    vjp=_rule("cond_vjp"),
    taylor=_taylor("cond_taylor"),
    batch=_rule("cond_batch"),
    emit=_cond_emit,
    emit_array_api=_refused_array_api(
        "the branch is chosen by a Python `if` on the index's value, which another library "
        "would compute eagerly (dask) or cannot give under its own tracing (jax.jit)"
    ),
    multiple_results=True,
    vjp_reads=READS_INPUTS,
)

PRIMITIVES = (cond_p, while_loop_p, scan_p)

# -- host primitives: pure_callback and debug_print --------------------------------------------


def _callback_shape(*avals, callback, results, vmap_method, jvp_rule, vjp_rule):
    return tuple(results)


pure_callback_p = Primitive(
    "pure_callback",
    impl=_rule("callback_impl"),
    shape=_callback_shape,
    jvp=_rule("callback_jvp"),
    vjp=_rule("callback_vjp"),
    batch=_rule("callback_batch"),
    multiple_results=True,
    vjp_reads=READS_INPUTS,
)


def _print_shape(*avals, fmt, treedef):
    return tuple(avals)


def _print_jvp(primals, tangents, *, out, fmt, treedef):
    return tuple(tangents)  # the values pass through: so do their derivatives


def _print_vjp(cotangent, *primals, out, fmt, treedef):
    return tuple(cotangent)


debug_print_p = Primitive(
    "debug_print",
    impl=_rule("print_impl"),
    shape=_print_shape,
    jvp=_print_jvp,
    vjp=_print_vjp,
    batch=_rule("print_batch"),
    multiple_results=True,
    vjp_reads=READS_NOTHING,
    effect=True,
    taylor=series.LINEAR,
)

HOST_PRIMITIVES = (pure_callback_p, debug_print_p)

# -- effects ----------------------------------------------------------------------------------


class EffectTrace(Trace):
    """A trace whose graph keeps the nodes of effectful primitives (a `debug_print` whose
    outputs nothing reads): `effects` lists them, and `graph` starts its walk from them as
    well as from the outputs. The core's `Trace.graph` keeps only what the outputs reach."""

    effects: list

    def graph(self, inputs, outputs, *, in_tree=None, out_tree=None, name="f", prune=True) -> Graph:
        if not prune and self.parent is None:  # every node recorded, the effects' among them
            return super().graph(
                inputs, outputs, in_tree=in_tree, out_tree=out_tree, name=name, prune=False
            )
        reach: set = set()
        stack = [e.node for e in outputs] + list(getattr(self, "effects", ()))
        while stack:
            n = stack.pop()
            if n in reach:
                continue
            reach.add(n)
            stack.extend(e.node for e in n.inputs)
        nodes = with_consts([n for n in self.nodes if n in reach], outputs)
        return Graph(tuple(inputs), tuple(outputs), nodes, in_tree, out_tree, name)


def keep_effect(out) -> None:
    """Keep the node behind `out` (the outputs of an effectful primitive: a tuple of tracers)
    in the graph its trace builds, though no output of the trace reads it."""
    if not isinstance(out, tuple) or not out or not hasattr(out[0], "_trace"):
        return
    trace = out[0]._trace
    if not isinstance(trace, EffectTrace):
        if type(trace) is not Trace:  # a subclass of its own: swapping would drop its methods
            raise AssertionError(f"internal error: an effect under a {type(trace).__name__}")
        # a trace the core made: same state, plus the list of effects its graph keeps
        trace.__class__ = EffectTrace
    if not hasattr(trace, "effects"):
        trace.effects = []
    trace.effects.append(out[0].edge.node)


__all__ = [
    "EffectTrace",
    "HOST_PRIMITIVES",
    "PRIMITIVES",
    "cond",
    "cond_p",
    "debug_print_p",
    "keep_effect",
    "pure_callback_p",
    "scan",
    "scan_p",
    "while_loop",
    "while_loop_p",
]
