"""Custom derivative rules and checkpointing: primitives that hold a function as a sub-graph.

- `custom_jvp_call(*consts, *args, call, jvp_rule, n_consts)` and `custom_vjp_call(...,
  vjp_rules, ...)` run `call` (the user's function, its closure first) and differentiate it
  with the user's rules, Python callables held in the params: like the host primitives of
  `control` they stay outside `PRIMITIVES`, and a graph holding them cannot be serialized.
- `checkpoint(*args, body, n_saved)` runs `body`, whose last `n_saved` outputs are the residuals
  its policy let reverse mode keep (chosen when it was bound); the others are recomputed in the
  backward graph. `checkpoint_name(x, name)` marks a value for the name policies while a
  checkpoint's body is traced; the marks are read and stripped when the checkpoint is bound.

Shape and emit rules live here; the rules that run, differentiate and batch sub-graphs live in
`tracegrad.transforms.custom`, reached lazily (the upward import DESIGN.md §7 allows).
"""

from __future__ import annotations

from tracegrad.core import bind
from tracegrad.ir.graph import Graph
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_ALL, READS_INPUTS, READS_NOTHING, Primitive, lazy_rule
from tracegrad.ir.types import avals_short as _short
from tracegrad.primitives import series


def _rules():
    # The rules of primitives holding sub-graphs run transforms on them (DESIGN.md §7)
    from tracegrad.transforms import custom

    return custom


def _rule(name: str):
    return lazy_rule(_rules, name)


def _taylor_rules():
    # The Taylor rules run the series pass on sub-graphs, as the jvp rules run transforms
    from tracegrad.transforms import custom_taylor

    return custom_taylor


def _taylor(name: str):
    return lazy_rule(_taylor_rules, name)


def _operands(what: str, avals, graph) -> None:
    if not isinstance(graph, Graph):
        raise TypeError(f"{what} must be a Graph, got {type(graph).__name__}")
    if tuple(avals) != tuple(graph.in_avals):
        raise TypeError(
            f"{what}: the sub-graph takes {_short(graph.in_avals)}, but got {_short(avals)}"
        )


def _count(what: str, n, limit: int) -> None:
    if type(n) is not int or not 0 <= n <= limit:
        raise TypeError(f"{what} must be an int in [0, {limit}], got {n!r}")


# -- custom_jvp_call / custom_vjp_call ---------------------------------------------------------


def _custom_jvp_shape(*avals, call, jvp_rule, n_consts):
    _operands("custom_jvp_call: call", avals, call)
    _count("custom_jvp_call: n_consts", n_consts, len(avals))
    return tuple(call.out_avals)


custom_jvp_call_p = Primitive(
    "custom_jvp_call",
    impl=_rule("custom_impl"),
    shape=_custom_jvp_shape,
    jvp=_rule("custom_jvp_jvp"),
    vjp=_rule("custom_jvp_vjp"),
    taylor=_taylor("custom_taylor"),
    batch=_rule("custom_jvp_batch"),
    multiple_results=True,
    vjp_reads=READS_INPUTS,
)


def _custom_vjp_shape(*avals, call, vjp_rules, n_consts):
    _operands("custom_vjp_call: call", avals, call)
    _count("custom_vjp_call: n_consts", n_consts, len(avals))
    return tuple(call.out_avals)


custom_vjp_call_p = Primitive(
    "custom_vjp_call",
    impl=_rule("custom_impl"),
    shape=_custom_vjp_shape,
    jvp=_rule("custom_vjp_jvp"),
    vjp=_rule("custom_vjp_vjp"),
    taylor=_taylor("custom_taylor"),
    batch=_rule("custom_vjp_batch"),
    multiple_results=True,
    vjp_reads=READS_ALL,
)

CUSTOM_PRIMITIVES = (custom_jvp_call_p, custom_vjp_call_p)

# -- checkpoint --------------------------------------------------------------------------------


def checkpoint(*operands, body, n_saved):
    """`checkpoint_p` on `operands`: the outputs of `body`, its saved residuals last."""
    return bind(checkpoint_p, *operands, body=body, n_saved=n_saved)


def _checkpoint_shape(*avals, body, n_saved):
    _operands("checkpoint: body", avals, body)
    _count("checkpoint: n_saved", n_saved, len(body.outputs))
    return tuple(body.out_avals)


def _checkpoint_emit(*names, body, n_saved):
    return f"{body.name}({', '.join(names)})"


checkpoint_p = Primitive(
    "checkpoint",
    impl=_rule("checkpoint_impl"),
    shape=_checkpoint_shape,
    jvp=_rule("checkpoint_jvp"),
    vjp=_rule("checkpoint_vjp"),
    taylor=_taylor("checkpoint_taylor"),
    batch=_rule("checkpoint_batch"),
    emit=_checkpoint_emit,
    multiple_results=True,
    vjp_reads=READS_ALL,
)


def checkpoint_name(x, name: str):
    """`x`, marked `name` for the `save_only_these_names` policies."""
    return bind(checkpoint_name_p, x, name=name)


def _name_shape(x, *, name):
    if type(name) is not str:
        raise TypeError(f"checkpoint_name: name must be a str, got {name!r}")
    return x


def _name_jvp(primals, tangents, *, out, name):
    return tangents[0]  # a mark, not a computation: the tangent passes through


def _name_vjp(cotangent, x, *, out, name):
    return (cotangent,)


def _name_batch(args, dims, *, name):
    return checkpoint_name(args[0], name), dims[0]


checkpoint_name_p = Primitive(
    "checkpoint_name",
    impl=lambda x, *, name: x,
    shape=_name_shape,
    jvp=_name_jvp,
    vjp=_name_vjp,
    batch=_name_batch,
    # no emit: generated code may hold only validated literals, and a name is a user's string
    vjp_reads=READS_NOTHING,
    layout=Layout.SAME,
    taylor=series.LINEAR,
)

# the vjp step tells these rules which operands want a cotangent: one backward node (or one
# call of the user's bwd) computes them all, so it must know which to compute, and a closed-
# over value that wants one is refused
for _p in (custom_jvp_call_p, custom_vjp_call_p, checkpoint_p):
    _p.vjp.takes_wanted = True

PRIMITIVES = (checkpoint_p,)
# a mark read when a checkpoint is bound and stripped from its body then: it never reaches a
# finished graph (so it is outside PRIMITIVES, as the host primitives are)
NAME_PRIMITIVES = (checkpoint_name_p,)

__all__ = [
    "CUSTOM_PRIMITIVES",
    "NAME_PRIMITIVES",
    "PRIMITIVES",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_name_p",
    "checkpoint_p",
    "custom_jvp_call_p",
    "custom_vjp_call_p",
]
