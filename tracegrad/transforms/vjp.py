"""Reverse mode: the backward pass over a graph, and the vjp transform that splits it.

`vjp_step` is one node's share of reverse mode: the node's vjp rule applied to its output
cotangent and forward values, computing only the input cotangents that are needed (a
primitive whose vjp is given input by input never computes a constant operand's). The
functional `backward_pass` is a loop of steps over a graph in reverse, summing cotangents per
edge; the PyTorch-style tensors run their own loop over the same step (with hooks and saved
values, `tracegrad.torch.engine`). Rules bind ordinary primitives, so the same loop either
computes gradients right away (given arrays) or records a backward graph (given tracers);
`grad(grad(f))` and `create_graph` need nothing else. `vjp_graph` traces the loop with
abstract cotangents and splits the result by dependence: nodes that do not depend on a
cotangent are forward work (kept with the forward graph, their outputs become residuals);
the rest is the backward graph (DESIGN.md §4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tracegrad import config
from tracegrad.diagnostics import checks, provenance
from tracegrad.ir.graph import Edge, Graph, Node, arg_p, const_p
from tracegrad.ir.types import shape_of
from tracegrad.primitives.elementwise import astype, convert
from tracegrad.transforms.partial import Split, linear_split

#: `read(node)`: the forward values of `node`'s outputs, one per output (a tuple)
Reader = Callable[[Node], tuple]


def vjp_step(node: Node, bar, primals: Sequence, out, active, _diagnosed=False) -> tuple:
    """One cotangent per input of `node` (None where none flows), given its output
    cotangent `bar` and forward values as its vjp rule takes them; only inputs whose node is
    in `active` want one. The rule's results are not yet checked (see `conform`)."""
    if not _diagnosed and (config.provenance or config.debug_nans or config.debug_infs):
        return _diagnosed_step(node, bar, primals, out, active)
    prim = node.prim
    rule_of = prim.input_vjp
    if rule_of is None:
        if prim.vjp is None:
            raise NotImplementedError(
                f"reverse mode: the primitive {prim.name!r} has no vjp rule; give it one "
                "(Primitive(..., vjp=...)), or differentiate it in forward mode (tg.jvp)"
            )
        if getattr(prim.vjp, "takes_wanted", False):
            # a rule that builds one node for all its cotangents (checkpoint's backward) is
            # told which inputs want one, so it computes no others (HOOK: issue 19)
            wanted = tuple(e[0] in active for e in node.inputs)
            return prim.vjp(bar, *primals, out=out, wanted=wanted, **node.params)
        return prim.vjp(bar, *primals, out=out, **node.params)
    bars = []
    for i, e in enumerate(node.inputs):
        rule = rule_of(i) if e[0] in active else None
        bars.append(None if rule is None else rule(bar, *primals, out=out, **node.params))
    return bars


def _diagnosed_step(node: Node, bar, primals: Sequence, out, active) -> tuple:
    """`vjp_step` in debug mode (tracegrad.diagnostics): what the rule binds belongs to
    `node`'s derivative, and on arrays, where rules use NumPy's operators that no `bind`
    sees, the step's results are checked too."""
    origin = provenance.derivative(node)
    in_bars = provenance.within(origin, vjp_step, node, bar, primals, out, active, True)
    if checks.checking():
        checks.check_step(origin, bar, primals, out, in_bars)
    return in_bars


def active_nodes(graph: Graph, wrt: Sequence[bool]) -> set[Node]:
    """Nodes whose outputs depend on a differentiated input (`wrt[i]` for input i)."""
    active = set()
    for (node, k), w in zip(graph.inputs, wrt):
        if w and node.out_avals[k].dtype.kind in "fc":  # (`is_float`, without np.dtype)
            active.add(node)
    add = active.add  # (one lookup for the loop over every node)
    for node in graph.nodes:
        if node.prim.differentiable:
            for e in node.inputs:
                if e[0] in active:
                    add(node)
                    break
    return active


class Cotangents:
    """Cotangents per edge, summed over the edge's uses (callers add only to active edges).

    `wide_inputs`: a graph input's real cotangent keeps a wider float dtype than the input's
    (float64 for a float32 input) instead of being rounded to it, for a caller that goes on
    computing with it (the adjoint system of an ODE, whose solver needs a smooth right-hand
    side: a float32-rounded one makes a tolerance of 1e-12 unreachable)."""

    def __init__(self, wide_inputs: bool = False):
        self.bars: dict = {}
        self.wide_inputs = wide_inputs

    def add(self, edge: Edge, bar) -> None:
        aval = edge[0].out_avals[edge[1]]
        dtype = aval.dtype
        # a cotangent already as its value needs it passes as it is (`conform` otherwise)
        if (
            getattr(bar, "dtype", None) is not dtype
            or dtype.kind not in "fc"
            or (bar.shape != aval.shape)
        ):
            if not (self.wide_inputs and _wider_input_cotangent(edge, aval, bar)):
                bar = conform(bar, aval, "vjp", edge[0].prim.name)
                if bar is None:
                    return
        old = self.bars.get(edge)
        self.bars[edge] = bar if old is None else old + bar

    def pop(self, node: Node):
        """`node`'s output cotangent as its vjp rule takes it (None when none arrived).

        Keys are plain `(node, index)` tuples, equal to the edges they were added under."""
        if not node.prim.multiple_results:
            return self.bars.pop((node, 0), None)
        bars = [self.bars.pop((node, i), None) for i in range(len(node.out_avals))]
        return None if all(b is None for b in bars) else tuple(bars)


def _wider_input_cotangent(edge: Edge, aval, bar) -> bool:
    """Whether `bar`, for `edge`, is a graph input's real cotangent of its shape in a wider
    float dtype than the input's (kept as it is with `Cotangents.wide_inputs`)."""
    dtype = getattr(bar, "dtype", None)
    return (
        edge[0].prim is arg_p
        and dtype is not None
        and dtype.kind == "f"
        and aval.dtype.kind == "f"
        and dtype.itemsize > aval.dtype.itemsize
        and shape_of(bar) == aval.shape
    )


def conform(value, aval, rule: str, prim_name: str):
    """A derivative value as the value it belongs to needs it: None for integer and bool
    values (they carry no derivative), the same shape (a rule's mistake otherwise), and the
    same dtype (a float32 value gets a float32 tangent or cotangent; a real value the real part
    of a complex cotangent)."""
    if value is None or aval.dtype.kind not in "fc":  # only floats carry derivatives
        return None
    if shape_of(value) != aval.shape:
        kind = "cotangent" if rule == "vjp" else "tangent"
        raise ValueError(
            f"internal error: the {rule} of {prim_name} produced a {kind} of shape "
            f"{shape_of(value)} for a value of shape {aval.shape}"
        )
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype == aval.dtype:  # (np.dtype(None) is float64: not `==`)
        return value
    is_complex = isinstance(value, complex) if dtype is None else dtype.kind == "c"
    if rule == "jvp" and is_complex and aval.dtype.kind != "c":
        # a real value's tangent is real: a cast would hide a wrong rule's imaginary part
        raise ValueError(
            f"internal error: the jvp of {prim_name} produced a complex tangent for a value "
            f"of dtype {aval.dtype.name}"
        )
    if dtype is None:  # a Python number (a real value takes the real part of a complex one)
        return astype(value.real if is_complex and aval.dtype.kind != "c" else value, aval.dtype)
    # a real value promoted into complex arithmetic takes the real part of its cotangent
    return convert(value, aval.dtype)


def backward_pass(
    graph: Graph,
    read: Reader,
    out_bars: Sequence,
    wrt: Sequence[bool],
    free: dict | None = None,
    wide_inputs: bool = False,
) -> list:
    """Cotangents of `graph.inputs` (None where none flows) given the outputs' cotangents.

    `read(node)` gives the forward values of a node's outputs: arrays to compute gradients
    now, tracers to record them. `free`, the table (node -> values) that `read` reads from
    (its entries of one value are read from it directly), loses each node's entry once its
    own rule has run (no rule still to run reads it), so the values are freed as PyTorch
    frees saved tensors. (A table rather than a callback: one C call per node.)
    `wide_inputs`: see `Cotangents`.
    """
    active = active_nodes(graph, wrt)
    bars = Cotangents(wide_inputs)
    for e, b in zip(graph.outputs, out_bars):
        if b is not None and e.node in active:
            bars.add(e, b)
    pending = bars.bars
    # `read`'s own table: a node's one kept value is read from it directly (`read` for the rest)
    kept = free.get if free is not None else _nothing
    diagnosing = config.provenance or config.debug_nans or config.debug_infs
    for node in reversed(graph.nodes):
        if node in active:
            prim = node.prim
            if prim.multiple_results:
                bar = bars.pop(node)
                out = tuple(read(node)) if bar is not None else None
            else:  # the common case, written out
                bar = pending.pop((node, 0), None)
                if bar is not None:
                    got = kept(node)
                    out = got[0] if got is not None and len(got) == 1 else read(node)[0]
            if bar is not None:
                inputs = node.inputs
                primals = []
                for src, k in inputs:
                    got = kept(src)
                    if got is not None and len(got) == 1:
                        primals.append(got[0])
                    elif src.prim is const_p:  # a constant holds its value (as `read` says)
                        primals.append(src.params["value"])
                    else:
                        primals.append(read(src)[k])
                rule_of = None if diagnosing else prim.input_vjp
                if rule_of is None:
                    for e, b in zip(inputs, vjp_step(node, bar, primals, out, active)):
                        if b is not None and e[0] in active:  # constants take no cotangent
                            bars.add(e, b)
                else:  # `vjp_step` of rules given input by input, written out (one per node)
                    params = node.params
                    for i, e in enumerate(inputs):
                        if e[0] in active:
                            rule = rule_of(i)
                            if rule is not None:
                                b = rule(bar, *primals, out=out, **params)
                                if b is not None:
                                    bars.add(e, b)
        if free is not None:
            free.pop(node, None)
    return [bars.pop(e.node) for e in graph.inputs]


def _nothing(node: Node) -> None:
    return None


def value_reader(values: dict[Node, tuple]) -> Reader:
    """`read` over the values a concrete trace or an interpreter run kept (one tuple of
    output values per node; constants hold their own)."""

    def read(node: Node) -> tuple:
        found = values.get(node)
        if found is None:  # a constant (kept on the node, not in the table)
            return (node.params["value"],)
        return found

    return read


def saved_reader(values: dict[Node, tuple]) -> Reader:
    """`read` over the values a trace kept for reverse mode alone (`Trace.reverse_only`): a
    value no vjp rule reads was not kept, and reads as a `stand_in` of its shape and dtype
    (what the rules read of it), as the PyTorch-style tensors read a node that saved nothing."""
    get = values.get
    made: dict[Node, tuple] = {}  # stand-ins, made once per node (its readers share them)

    def read(node: Node) -> tuple:
        found = get(node)
        if found is not None:
            if len(found) > 1 and any(v is None for v in found):  # some outputs not kept
                return tuple(stand_in(a) if v is None else v for v, a in zip(found, node.out_avals))
            return found
        if node.prim is const_p:
            return (node.params["value"],)
        found = made.get(node)
        if found is None:
            avals = node.out_avals
            found = made[node] = (
                (stand_in(avals[0]),) if len(avals) == 1 else tuple([stand_in(a) for a in avals])
            )
        return found

    return read


_STAND_INS: dict = {}


def stand_in(aval):
    """A value of `aval`'s shape and dtype for a rule that reads only those: a broadcast zero
    (no memory), or a Python zero for a weak scalar; cached per aval, since building one costs
    more than the rule."""
    value = _STAND_INS.get(aval)
    if value is None:
        if aval.weak_type:
            value = aval.dtype.type(0).item()
        else:
            value = np.broadcast_to(np.zeros((), aval.dtype), aval.shape)
        if len(_STAND_INS) > 4096:
            _STAND_INS.clear()
        _STAND_INS[aval] = value
    return value


def call_vjp(prim, cotangent, *primals, out, **params) -> tuple:
    """`prim.vjp` with every cotangent computed (tests and tools that want them all)."""
    return prim.vjp(cotangent, *primals, out=out, **params)


# -- the graph transform ----------------------------------------------------------------------


def vjp_graph(graph: Graph, wrt: Sequence[bool] | None = None) -> Split:
    """Split reverse-mode differentiation of `graph` into a forward and a backward graph.

    `split.linear` takes residuals and one cotangent per output and returns the cotangents of
    the inputs listed in `split.present` (positions in `graph.inputs`); the others are zero.
    """
    wrt = [True] * len(graph.inputs) if wrt is None else list(wrt)
    out_avals = [e.aval.strengthen() for e in graph.outputs]
    return linear_split(
        graph, lambda read, cts: backward_pass(graph, read, cts, wrt), out_avals, "bwd"
    )
