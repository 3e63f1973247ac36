"""The rules of `custom_jvp_call` and `custom_vjp_call`: a user's function run as a sub-graph and
differentiated with the user's rules (`tracegrad.api.custom_derivatives` makes the rule objects).

- custom_jvp: forward mode calls the jvp rule; reverse mode transposes the rule's tangent map
  (linear in the tangents: traced, then run backwards with `backward_pass`), as JAX does.
- custom_vjp: reverse mode runs fwd (the residuals are forward work, so `vjp_graph` keeps them
  with the forward graph) and bwd. Forward mode goes beyond JAX: bwd is linear in the output
  cotangent, so its transpose is the jvp; bwd is traced once per signature and transposed.
- Batching batches `call` and wraps the rules in `vmap`.

A value the function closes over (an outer tracer) is an operand, so the primal result is
right everywhere; a derivative with respect to it is refused (JAX's CustomVJPException), since
the rules only speak of the explicit arguments. The checkpoint rules live in
`custom_checkpoint`; this module re-exports them so the primitives find every rule here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tracegrad.core import Boxed, Tracer, bind, new_trace
from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Graph
from tracegrad.ir.types import Aval, aval_of, is_float
from tracegrad.primitives import custom as cp
from tracegrad.primitives.batching import batch_size
from tracegrad.primitives.broadcasting import sum as reduce_sum
from tracegrad.primitives.views import move_to_front
from tracegrad.transforms.control_batch import batch_body
from tracegrad.transforms.control_common import zeros
from tracegrad.transforms.custom_checkpoint import (
    checkpoint_batch,
    checkpoint_impl,
    checkpoint_jvp,
    checkpoint_vjp,
)
from tracegrad.transforms.custom_linear import check_linear
from tracegrad.transforms.vjp import backward_pass, value_reader

CLOSURE_MESSAGE = (
    "Detected differentiation of a {kind} function with respect to a closed-over value. "
    "That isn't supported because the custom {rule} rule only specifies how to differentiate "
    "the {kind} function with respect to explicit input parameters. Try passing the "
    "closed-over value into the {kind} function as an argument, and adapting the {kind} "
    "rules."
)


def aval_like(x) -> Aval:
    """The aval of a value a rule is given: a tracer's, a PyTorch-style tensor's, an array's."""
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, Boxed):
        return aval_of(np.asarray(x._constant_value()))
    return aval_of(x)


def custom_impl(*args, call, n_consts, **rules):
    return tuple(eval_graph(call, list(args)))


def _no_closure_derivative(kind: str, moving: bool) -> None:
    if moving:
        rule = "JVP" if kind == "custom_jvp" else "VJP"
        raise TypeError(CLOSURE_MESSAGE.format(kind=kind, rule=rule))


# -- tracing a rule into a graph ----------------------------------------------------------------


def trace_rule(fn: Callable, avals: Sequence[Aval], name: str, what: str) -> Graph:
    """`fn(*tracers) -> list` (None for a zero) traced abstractly into a graph of its inputs;
    a rule that closes over a traced value cannot be, and says so."""
    with new_trace(keep_values=False) as trace:
        args = [trace.new_arg(a) for a in avals]
        outs = fn(*args)
        edges = [trace.output_edge(np.zeros((), np.float64) if o is None else o) for o in outs]
    if trace.captured:
        raise TypeError(
            f"{what} closes over a traced value (of type {next(iter(trace.captured)).aval}) "
            "instead of taking it as an argument or residual; tracegrad must trace the rule on "
            "its own to transpose it. Pass the value as an argument of the custom function."
        )
    return trace.graph([t.edge for t in args], edges, name=name)


def transpose(graph: Graph, n_fixed: int, fixed: Sequence, cts: Sequence) -> list:
    """The transpose of `graph` as a linear map of its inputs after the first `n_fixed`
    (whose values are `fixed`), applied to `cts` (one per output, None for zero)."""
    lin = [a.strengthen() for a in graph.in_avals[n_fixed:]]
    env = eval_graph(graph, list(fixed) + [zeros(a) for a in lin], keep_all=True)
    wrt = [False] * n_fixed + [True] * len(lin)
    return backward_pass(graph, value_reader(env), list(cts), wrt)[n_fixed:]


def _wanted(wanted, n: int, n_consts: int, kind: str) -> tuple:
    """Which arguments want a cotangent (the vjp step says; all of them when called alone);
    a wanted closure value is refused (the rules do not speak of it)."""
    if wanted is None:
        return (False,) * n_consts + (True,) * (n - n_consts)
    _no_closure_derivative(kind, any(wanted[:n_consts]))
    return tuple(wanted)


def _selected(bars, wanted, n_consts: int) -> tuple:
    return (None,) * n_consts + tuple(b if w else None for b, w in zip(bars, wanted[n_consts:]))


# -- custom_jvp ---------------------------------------------------------------------------------


def custom_jvp_jvp(primals, tangents, *, out, call, jvp_rule, n_consts):
    _no_closure_derivative("custom_jvp", any(t is not None for t in tangents[:n_consts]))
    _, t_out = jvp_rule(list(primals[n_consts:]), list(tangents[n_consts:]))
    return tuple(t_out)


def _jvp_transposed(cotangent, primals, call, jvp_rule, n_consts) -> list:
    args = list(primals[n_consts:])
    avals = [aval_like(a) for a in args]
    key = ("transpose", tuple(avals))
    graph = jvp_rule.graphs.get(key)
    if graph is None:
        n = len(args)
        t_avals = [a.strengthen() for a in avals]

        def tangent_map(*xs):
            return list(jvp_rule(list(xs[:n]), list(xs[n:]))[1])

        what = f"the custom_jvp rule of {jvp_rule.name}"
        graph = trace_rule(tangent_map, avals + t_avals, f"{jvp_rule.name}_jvp", what)
        check_linear(graph, [False] * n + [True] * n, what, "tangents")
        jvp_rule.graphs[key] = graph
    return transpose(graph, len(args), args, cotangent)


def custom_jvp_vjp(cotangent, *primals, out, call, jvp_rule, n_consts, wanted=None):
    wanted = _wanted(wanted, len(primals), n_consts, "custom_jvp")
    return _selected(
        _jvp_transposed(cotangent, primals, call, jvp_rule, n_consts), wanted, n_consts
    )


def custom_jvp_batch(args, dims, *, call, jvp_rule, n_consts):
    size = batch_size(args, dims)
    batched = [d is not None for d in dims]
    graph, _ = batch_body(call, batched, [True] * len(call.outputs), size)
    moved = [move_to_front(a, d) for a, d in zip(args, dims)]
    rule = jvp_rule.batched(batched[n_consts:], size)
    out = bind(cp.custom_jvp_call_p, *moved, call=graph, jvp_rule=rule, n_consts=n_consts)
    return tuple(out), (0,) * len(out)


# -- custom_vjp ---------------------------------------------------------------------------------


def _forward(primals, out, vjp_rules, n_consts):
    """The residuals of fwd on the primals; a residual fwd returned as one of its outputs is
    read from the node's own output (computed once)."""
    outs, res, res_tree = vjp_rules.fwd(list(primals[n_consts:]))
    by_id = {id(o): k for k, o in enumerate(outs)}
    res = [out[by_id[id(r)]] if id(r) in by_id else r for r in res]
    return res, res_tree


def _vjp_bars(cotangent, primals, out, call, vjp_rules, n_consts) -> list:
    res, res_tree = _forward(primals, out, vjp_rules, n_consts)
    return vjp_rules.bwd(res, res_tree, list(cotangent))  # (None: no cotangent)


def custom_vjp_vjp(cotangent, *primals, out, call, vjp_rules, n_consts, wanted=None):
    wanted = _wanted(wanted, len(primals), n_consts, "custom_vjp")
    bars = _vjp_bars(cotangent, primals, out, call, vjp_rules, n_consts)
    return _selected(bars, wanted, n_consts)


def bwd_graph(vjp_rules, res, res_tree, ct_avals) -> Graph:
    """bwd traced once per signature: (residuals, cotangents) -> argument cotangents, checked
    linear in the cotangents (what forward mode transposes)."""
    r_avals = [aval_like(r) for r in res]
    key = ("bwd", tuple(r_avals), res_tree, tuple(ct_avals))
    graph = vjp_rules.graphs.get(key)
    if graph is None:
        n = len(r_avals)
        what = f"the custom_vjp bwd rule of {vjp_rules.name}"

        def fn(*xs):
            return list(vjp_rules.bwd(list(xs[:n]), res_tree, list(xs[n:])))

        try:
            graph = trace_rule(fn, r_avals + list(ct_avals), f"{vjp_rules.name}_bwd", what)
        except (TypeError, ValueError, NotImplementedError) as err:
            raise TypeError(
                f"forward-mode differentiation of the custom_vjp function {vjp_rules.name} "
                f"transposes its bwd rule, which must then be traceable with tracegrad's "
                f"operations; tracing it failed: {err}"
            ) from err
        check_linear(graph, [False] * n + [True] * len(ct_avals), what, "cotangents")
        vjp_rules.graphs[key] = graph
    return graph


def custom_vjp_jvp(primals, tangents, *, out, call, vjp_rules, n_consts):
    _no_closure_derivative("custom_vjp", any(t is not None for t in tangents[:n_consts]))
    res, res_tree = _forward(primals, out, vjp_rules, n_consts)
    ct_avals = [a.strengthen() for a in call.out_avals]
    graph = bwd_graph(vjp_rules, res, res_tree, ct_avals)
    return tuple(transpose(graph, len(res), res, list(tangents[n_consts:])))


def custom_vjp_batch(args, dims, *, call, vjp_rules, n_consts):
    size = batch_size(args, dims)
    batched = [d is not None for d in dims]
    graph, _ = batch_body(call, batched, [True] * len(call.outputs), size)
    moved = [move_to_front(a, d) for a, d in zip(args, dims)]
    rules = vjp_rules.batched(batched[n_consts:], size)
    out = bind(cp.custom_vjp_call_p, *moved, call=graph, vjp_rules=rules, n_consts=n_consts)
    return tuple(out), (0,) * len(out)


def unbatch_cotangent(bar, batched: bool, aval: Aval):
    """A per-example cotangent of an unbatched argument sums over the batch."""
    if bar is None or batched or not is_float(aval.dtype):
        return bar
    return reduce_sum(bar, (0,))


__all__ = [
    "bwd_graph",
    "checkpoint_batch",
    "checkpoint_impl",
    "checkpoint_jvp",
    "checkpoint_vjp",
    "custom_impl",
    "custom_jvp_batch",
    "custom_jvp_jvp",
    "custom_jvp_vjp",
    "custom_vjp_batch",
    "custom_vjp_jvp",
    "custom_vjp_vjp",
    "trace_rule",
    "transpose",
    "unbatch_cotangent",
]
