"""The rules of the control-flow primitives: their sub-graphs run, differentiate and batch here.

The primitives (`tracegrad.primitives.control`) hold sub-graphs; their impl, jvp, vjp and batch
rules call this module. A rule builds new sub-graphs by tracing a transform of the old one (the
jvp of a body, the halves of its vjp, its batched form), cached on the old graph, and binds a
primitive again: on arrays it computes, on tracers it records, and the result differentiates
again like any rule's. Loops are never unrolled: a derived body is traced once, whatever the
trip count.

Reverse mode of a scan is JAX's: a forward scan whose body is the forward half of the body's
vjp stacks the values the backward half reads (residuals; loop-invariant ones are computed once,
outside the loop), and a scan in the opposite direction runs the backward half over them,
carrying the carry's cotangent and summing the consts'. `simplify` merges the forward scan with
the original one under jit (both read the same operands), so the forward work runs once there.
Batching lives in `control_batch`, the host primitives' rules in `host`, the shared tracing
tools in `control_common`; this module re-exports their rules, so the primitives find every
rule here.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from tracegrad.core import Tracer
from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Graph
from tracegrad.ir.types import is_float
from tracegrad.primitives import control as cf
from tracegrad.primitives.elementwise import astype
from tracegrad.transforms.control_batch import cond_batch, scan_batch, while_batch
from tracegrad.transforms.control_common import (
    cached,
    cast,
    reorder,
    split,
    strong,
    trace_closed,
    with_inputs,
    zeros,
)
from tracegrad.transforms.host import (
    callback_batch,
    callback_impl,
    callback_jvp,
    callback_vjp,
    print_batch,
    print_impl,
)
from tracegrad.transforms.jvp import tangent_pass
from tracegrad.transforms.vjp import backward_pass, value_reader, vjp_graph

# -- impl -------------------------------------------------------------------------------------


def scan_impl(*args, body, n_consts, n_carry, length, reverse):
    consts, carry, xs = split(args, n_consts, n_carry)
    ys = [np.empty((length, *a.shape), a.dtype) for a in body.out_avals[n_carry:]]
    for i in range(length - 1, -1, -1) if reverse else range(length):
        out = eval_graph(body, consts + carry + [x[i] for x in xs])
        carry = out[:n_carry]
        for buf, y in zip(ys, out[n_carry:]):
            buf[i] = y
    return tuple(carry) + tuple(ys)


def run_while(cond_graph, body, cond_consts, body_consts, carry, trips=None):
    """(final carry, trip count) of a while loop on values."""
    count = 0
    carry = list(carry)
    while eval_graph(cond_graph, list(cond_consts) + carry)[0]:
        carry = eval_graph(body, list(body_consts) + carry)
        count += 1
        if trips is not None and count > trips:
            break
    if trips is not None and count != trips:
        raise ValueError(
            cf.TRIPS_MESSAGE.format(f"over {trips}" if count > trips else count, trips)
        )
    return carry, count


#: [(cond_graph, body, operands, final carry)] of the loop `count_trips` last ran: the bind
#: that follows it, on the very same operands, takes the carry instead of running it again
_last_run: list = []


def count_trips(cond_graph, body, n_cond_consts, n_consts, operands) -> int:
    """The trip count of a while loop on the values `operands` (run here, and remembered)."""
    cc, bc, carry = split(operands, n_cond_consts, n_consts)
    out, count = run_while(cond_graph, body, cc, bc, carry)
    _last_run[:] = [(cond_graph, body, tuple(operands), out)]
    return count


def while_impl(*args, cond_graph, body, n_cond_consts, n_consts, trips):
    if _last_run:
        g, b, operands, out = _last_run.pop()
        same = len(operands) == len(args) and all(x is y for x, y in zip(operands, args))
        if same and g is cond_graph and b is body:
            return tuple(out)
    cc, bc, carry = split(args, n_cond_consts, n_consts)
    return tuple(run_while(cond_graph, body, cc, bc, carry, trips)[0])


def cond_impl(index, *operands, branches):
    k = min(max(int(index), 0), len(branches) - 1)
    return tuple(eval_graph(branches[k], list(operands)))


# -- forward mode -----------------------------------------------------------------------------


def jvp_body(graph: Graph, nonzero, force=None, primal_outputs: bool = True):
    """`(graph', has)`: graph' takes graph's inputs, then the tangents of the inputs marked in
    `nonzero`; it returns graph's outputs (when `primal_outputs`), then the tangents of the
    outputs marked in `has`: those that have one, and those `force` asks for (zeros if none)."""
    nonzero = tuple(bool(b) for b in nonzero)
    force = tuple(force) if force is not None else (False,) * len(graph.outputs)

    def build():
        n = len(graph.inputs)
        t_avals = [a.strengthen() for a, nz in zip(graph.in_avals, nonzero) if nz]
        out_avals = [a.strengthen() for a in graph.out_avals]
        has: list[bool] = []

        def fn(*args):
            it = iter(args[n:])
            tangents = [next(it) if nz else None for nz in nonzero]
            env = eval_graph(graph, list(args[:n]), keep_all=True)
            read = value_reader(env)
            ts = tangent_pass(graph, read, tangents)
            keep = [
                (t is not None or f) and is_float(a.dtype) for t, f, a in zip(ts, force, out_avals)
            ]
            has[:] = keep
            outs = [read(e.node)[e.index] for e in graph.outputs] if primal_outputs else []
            return outs + [
                cast(zeros(a) if t is None else t, a) for t, a, k in zip(ts, out_avals, keep) if k
            ]

        g = trace_closed(fn, list(graph.in_avals) + t_avals, f"{graph.name}_jvp")
        return g, tuple(has)

    return cached(graph, ("jvp", nonzero, force, primal_outputs), build)


def _loop_tangents(body, nz_consts, nz_carry, nz_xs):
    """The carry tangents a loop needs (a fixpoint: a carry whose tangent the body makes
    nonzero needs one from the start) and the jvp of the body that carries them."""
    n_out, n_carry = len(body.outputs), len(nz_carry)
    carry = list(nz_carry)
    while True:
        force = carry + [False] * (n_out - n_carry)
        g, has = jvp_body(body, nz_consts + carry + nz_xs, force)
        grown = [a or b for a, b in zip(carry, has[:n_carry])]
        if grown == carry:
            return carry, g, has
        carry = grown


def _interleave(n_primal: Sequence[int], n_tangent: Sequence[int]) -> list[int]:
    """Positions that turn `[p0, p1, .., t0, t1, ..]` (groups of primals, then of tangents)
    into `[p0, t0, p1, t1, ..]`."""
    starts_p, starts_t, k = [], [], 0
    for n in n_primal:
        starts_p.append(k)
        k += n
    for n in n_tangent:
        starts_t.append(k)
        k += n
    order: list[int] = []
    for sp, n, st, m in zip(starts_p, n_primal, starts_t, n_tangent):
        order += list(range(sp, sp + n)) + list(range(st, st + m))
    return order


def scan_jvp(primals, tangents, *, out, body, n_consts, n_carry, length, reverse):
    nz = [t is not None for t in tangents]
    nc, nk = n_consts, n_carry
    n_xs, n_ys = len(primals) - nc - nk, len(body.outputs) - nk
    nz_c, nz_k, nz_x = split(nz, nc, nk)
    carry_nz, g, has = _loop_tangents(body, nz_c, nz_k, nz_x)
    counts = [sum(nz_c), sum(carry_nz), sum(nz_x)]
    ins = _interleave([nc, nk, n_xs], counts)
    outs = _interleave([nk, n_ys], [sum(carry_nz), sum(has[nk:])])
    g = reorder(g, ins, outs)
    consts, init, xs = split(primals, nc, nk)
    t_c, t_k, t_x = split(tangents, nc, nk)
    c_av, k_av = body.in_avals[:nc], body.in_avals[nc : nc + nk]
    operands = (
        consts
        + [strong(t, a) for t, a in zip(t_c, c_av) if t is not None]
        + init
        + [strong(zeros(a) if t is None else t, a) for t, a, b in zip(t_k, k_av, carry_nz) if b]
        + xs
        + [t for t in t_x if t is not None]
    )
    res = cf.scan(
        *operands, body=g, n_consts=nc + counts[0], n_carry=nk + counts[1], length=length,
        reverse=reverse,
    )  # fmt: skip
    _, t_carry, _, t_ys = split(res, nk, counts[1], n_ys)
    it_k, it_y = iter(t_carry), iter(t_ys)
    return tuple(next(it_k) if b else None for b in carry_nz) + tuple(
        next(it_y) if b else None for b in has[nk:]
    )


def while_jvp(primals, tangents, *, out, cond_graph, body, n_cond_consts, n_consts, trips):
    nq, nc = n_cond_consts, n_consts
    nk = len(primals) - nq - nc
    nz = [t is not None for t in tangents]
    _, nz_c, nz_k = split(nz, nq, nc)
    carry_nz, g, _ = _loop_tangents(body, nz_c, nz_k, [])
    counts = [sum(nz_c), sum(carry_nz)]
    g = reorder(g, _interleave([nc, nk], counts), _interleave([nk], [counts[1]]))
    carry_avals = body.in_avals[nc:]
    t_avals = [a.strengthen() for a, b in zip(carry_avals, carry_nz) if b]
    cc, bc, init = split(primals, nq, nc)
    _, t_c, t_k = split(tangents, nq, nc)
    operands = (
        cc
        + bc
        + [strong(t, a) for t, a in zip(t_c, body.in_avals[:nc]) if t is not None]
        + init
        + [
            strong(zeros(a) if t is None else t, a)
            for t, a, b in zip(t_k, carry_avals, carry_nz)
            if b
        ]
    )
    res = cf.while_loop(
        *operands, cond_graph=with_inputs(cond_graph, t_avals), body=g, n_cond_consts=nq,
        n_consts=nc + counts[0], trips=trips,
    )  # fmt: skip
    it = iter(res[nk:])
    return tuple(next(it) if b else None for b in carry_nz)


def cond_jvp(primals, tangents, *, out, branches):
    index, *ops = primals
    nz = [t is not None for t in tangents[1:]]
    n_out = len(branches[0].outputs)
    union = [False] * n_out
    for b in branches:
        _, has = jvp_body(b, nz, primal_outputs=False)
        union = [u or h for u, h in zip(union, has)]
    new = tuple(jvp_body(b, nz, union, primal_outputs=False)[0] for b in branches)
    t_ops = [strong(t, a) for t, a in zip(tangents[1:], branches[0].in_avals) if t is not None]
    res = cf.cond(index, *ops, *t_ops, branches=new)
    it = iter(res)
    return tuple(next(it) if u else None for u in union)


# -- reverse mode: scan -----------------------------------------------------------------------


@attrs.frozen
class _ScanVjp:
    """A body's vjp, split for a loop.

    `res_body` is the body with the residuals its backward half reads per step as extra ys;
    `hoist` computes the loop-invariant residuals from the consts (once, outside the loop);
    `sources[r]` says where residual r comes from: ("stacked", k) the k-th extra y of
    `res_body`, ("hoisted", k), ("const", i) the i-th const operand, ("x", j) the j-th xs
    operand at this step. `linear` takes the residuals and one cotangent per body output and
    returns the cotangents of the body inputs listed in `present`."""

    res_body: Graph
    hoist: Graph
    sources: tuple
    linear: Graph
    present: tuple[int, ...]


def _scan_vjp_parts(body: Graph, n_consts: int, n_carry: int) -> _ScanVjp:
    def build():
        split = vjp_graph(body)
        fwd, n_out = split.forward, len(body.outputs)
        position = {e.node: i for i, e in enumerate(body.inputs)}
        variant = {e.node for e in body.inputs[n_consts:]}  # carry and x: change per step
        for node in fwd.nodes:
            if any(e.node in variant for e in node.inputs):
                variant.add(node)
        sources, stacked, hoisted = [], [], []
        for r in fwd.outputs[n_out:]:
            p = position.get(r.node)
            if p is not None and p < n_consts:
                sources.append(("const", p))
            elif p is not None and p >= n_consts + n_carry:
                sources.append(("x", p - n_consts - n_carry))
            elif r.node in variant:
                sources.append(("stacked", len(stacked)))
                stacked.append(r)
            else:
                sources.append(("hoisted", len(hoisted)))
                hoisted.append(r)
        res_body = Graph.from_outputs(
            fwd.inputs, tuple(fwd.outputs[:n_out]) + tuple(stacked), name=f"{body.name}_fwd"
        )
        res_body._cache["residual_of"] = body  # simplify merges it with a scan of `body`
        hoist = Graph.from_outputs(fwd.inputs[:n_consts], hoisted, name=f"{body.name}_hoist")
        return _ScanVjp(res_body, hoist, tuple(sources), split.linear, split.present)

    return cached(body, ("vjp", n_consts, n_carry), build)


def _weak(v) -> bool:
    return v.aval.weak_type if isinstance(v, Tracer) else isinstance(v, int | float | complex)


def _scan_bwd_body(body, parts: _ScanVjp, n_consts, n_carry, ct_ys: tuple[bool, ...]):
    """The backward body: (hoisted, const residuals, carry cotangents, const accumulators,
    stacked residuals, x residuals, given ys cotangents) -> (carry cotangents, accumulators,
    xs cotangents); and the positions each group stands for."""

    def build():
        consts_av, carry_av, x_av = split(body.in_avals, n_consts, n_carry)
        y_av = body.out_avals[n_carry:]
        present = set(parts.present)
        float_carry = [j for j, a in enumerate(carry_av) if is_float(a.dtype)]
        acc = [i for i in range(n_consts) if i in present]
        ct_x = [j for j in range(len(x_av)) if n_consts + n_carry + j in present]
        const_res = sorted({i for kind, i in parts.sources if kind == "const"})
        x_res = sorted({j for kind, j in parts.sources if kind == "x"})
        n_hoist, n_stack = len(parts.hoist.outputs), len(parts.res_body.outputs) - len(body.outputs)
        # one step's (stacked arrays are never weak: a Python scalar per step comes back strong)
        stack_av = [a.strengthen() for a in parts.res_body.out_avals[len(body.outputs) :]]
        given = [k for k, b in enumerate(ct_ys) if b]
        avals = (
            list(parts.hoist.out_avals)
            + [consts_av[i] for i in const_res]
            + [carry_av[j].strengthen() for j in float_carry]
            + [consts_av[i].strengthen() for i in acc]
            + stack_av
            + [x_av[j] for j in x_res]
            + [y_av[k].strengthen() for k in given]
        )

        def fn(*args):
            hoisted, cvals, ct_c, accs, stacked, xvals, ct_y = split(
                args, n_hoist, len(const_res), len(float_carry), len(acc), n_stack, len(x_res)
            )
            by = {
                "hoisted": hoisted,
                "stacked": stacked,
                "const": dict(zip(const_res, cvals)),
                "x": dict(zip(x_res, xvals)),
            }
            residuals = [by[kind][i] for kind, i in parts.sources]
            # a weak residual (a Python-scalar loop index or carry) comes back from its
            # stacked array strong; the linear body was traced with it weak
            residuals = [
                astype(r, a.dtype, weak=True) if a.weak_type and not _weak(r) else r
                for r, a in zip(residuals, parts.linear.in_avals)
            ]
            ct_carry = dict(zip(float_carry, ct_c))
            cts = [ct_carry.get(j, zeros(a)) for j, a in enumerate(carry_av)]
            ct_given = dict(zip(given, ct_y))
            cts += [ct_given.get(k, zeros(a)) for k, a in enumerate(y_av)]
            got = dict(zip(parts.present, eval_graph(parts.linear, residuals + cts)))
            new_c = [
                cast(got.get(n_consts + j, zeros(carry_av[j])), carry_av[j].strengthen())
                for j in float_carry
            ]
            new_acc = [cast(a + got[i], consts_av[i].strengthen()) for a, i in zip(accs, acc)]
            new_x = [cast(got[n_consts + n_carry + j], x_av[j].strengthen()) for j in ct_x]
            return new_c + new_acc + new_x

        g = trace_closed(fn, avals, f"{body.name}_bwd")
        groups = (const_res, float_carry, acc, x_res, ct_x)
        return g, groups

    return cached(body, ("vjp_bwd", n_consts, n_carry, ct_ys), build)


def scan_vjp(cotangent, *primals, out, body, n_consts, n_carry, length, reverse):
    cts = tuple(cotangent)
    nc, nk = n_consts, n_carry
    parts = _scan_vjp_parts(body, nc, nk)
    ct_ys = tuple(c is not None for c in cts[nk:])
    bwd, (const_res, float_carry, acc, x_res, ct_x) = _scan_bwd_body(body, parts, nc, nk, ct_ys)
    consts, init, xs = split(primals, nc, nk)
    stacked = []
    if any(kind == "stacked" for kind, _ in parts.sources):
        fwd = cf.scan(
            *primals, body=parts.res_body, n_consts=nc, n_carry=nk, length=length, reverse=reverse
        )
        stacked = list(fwd[len(body.outputs) :])
    hoisted = eval_graph(parts.hoist, consts) if parts.hoist.outputs else []
    carry_av = body.in_avals[nc : nc + nk]
    operands = (
        list(hoisted)
        + [consts[i] for i in const_res]
        + [
            strong(zeros(carry_av[j]) if cts[j] is None else cts[j], carry_av[j])
            for j in float_carry
        ]
        + [zeros(body.in_avals[i]) for i in acc]
        + stacked
        + [xs[j] for j in x_res]
        + [c for c in cts[nk:] if c is not None]
    )
    res = cf.scan(
        *operands, body=bwd, n_consts=len(hoisted) + len(const_res),
        n_carry=len(float_carry) + len(acc), length=length, reverse=not reverse,
    )  # fmt: skip
    ct_init, ct_consts, ct_xs = split(res, len(float_carry), len(acc))
    bars: list = [None] * len(primals)
    for i, v in zip(acc, ct_consts):
        bars[i] = v
    for j, v in zip(float_carry, ct_init):
        bars[nc + j] = v
    for j, v in zip(ct_x, ct_xs):
        bars[nc + nk + j] = v
    return tuple(bars)


def while_vjp(cotangent, *primals, out, cond_graph, body, n_cond_consts, n_consts, trips):
    if trips is None:
        raise ValueError(
            "Reverse-mode differentiation does not work for tg.while_loop (or tg.fori_loop with "
            "traced bounds) under jit, vmap or make_graph, where the trip count is not known: "
            "use tg.fori_loop with static bounds or tg.scan, or differentiate the loop outside "
            "jit, where tracegrad runs it on concrete values and records its trip count"
        )
    bars = scan_vjp(
        cotangent, *primals[n_cond_consts:], out=out, body=body, n_consts=n_consts,
        n_carry=len(primals) - n_cond_consts - n_consts, length=trips, reverse=False,
    )  # fmt: skip
    return (None,) * n_cond_consts + tuple(bars)


# -- reverse mode: cond -----------------------------------------------------------------------


def _cond_vjp_branch(branch: Graph, ct_given: tuple[bool, ...], want=None):
    """`(graph', present)`: graph' takes the operands and the given output cotangents and
    returns the cotangents of the operands in `want` (zeros where this branch gives none;
    default: those it gives)."""

    def build():
        n = len(branch.inputs)
        out_av = [a.strengthen() for a in branch.out_avals]
        in_av = [a.strengthen() for a in branch.in_avals]
        given = [k for k, b in enumerate(ct_given) if b]
        present: list[bool] = []

        def fn(*args):
            env = eval_graph(branch, list(args[:n]), keep_all=True)
            cts = [None] * len(out_av)
            for k, c in zip(given, args[n:]):
                cts[k] = c
            bars = backward_pass(branch, value_reader(env), cts, [True] * n)
            present[:] = [b is not None for b in bars]
            keep = present if want is None else want
            return [
                cast(zeros(a) if b is None else b, a) for b, a, w in zip(bars, in_av, keep) if w
            ]

        g = trace_closed(
            fn, list(branch.in_avals) + [out_av[k] for k in given], f"{branch.name}_vjp"
        )
        return g, tuple(present)

    return cached(branch, ("cond_vjp", ct_given, want), build)


def cond_vjp(cotangent, index, *operands, out, branches):
    cts = tuple(cotangent)
    given = tuple(c is not None for c in cts)
    union = [False] * len(operands)
    for b in branches:
        _, present = _cond_vjp_branch(b, given)
        union = [u or p for u, p in zip(union, present)]
    want = tuple(union)
    new = tuple(_cond_vjp_branch(b, given, want)[0] for b in branches)
    out_av = branches[0].out_avals
    given_cts = [strong(c, a) for c, a in zip(cts, out_av) if c is not None]
    res = cf.cond(index, *operands, *given_cts, branches=new)
    it = iter(res)
    return (None,) + tuple(next(it) if w else None for w in want)


__all__ = [
    "callback_batch",
    "callback_impl",
    "callback_jvp",
    "callback_vjp",
    "cast",
    "cond_batch",
    "cond_impl",
    "cond_jvp",
    "cond_vjp",
    "count_trips",
    "jvp_body",
    "print_batch",
    "print_impl",
    "run_while",
    "scan_batch",
    "scan_impl",
    "scan_jvp",
    "scan_vjp",
    "trace_closed",
    "while_batch",
    "while_impl",
    "while_jvp",
    "while_vjp",
]
