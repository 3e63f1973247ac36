"""Taylor rules (`tg.jet`) of the control-flow primitives: `cond`, `scan` and `while_loop`.

Each rule is its jvp rule (`tracegrad.transforms.control`) with K coefficients where the jvp
has one tangent: the sub-graph's Taylor pass, traced once into a new sub-graph and cached on
the old one, becomes the new branch or body, and the coefficients ride along as extra operands
(a scan's consts, carry and xs; a while_loop's body consts and carry) and extra outputs. So a
loop stays one node, whatever its trip count, and the result is an ordinary node that `grad`,
`vmap` and `jit` transform again. A predicate or branch index is integer or bool: it carries
no series, and the loop's predicate reads the primal carry only.

Coefficients are tracked one by one (a mask per value: which of x_1..x_K may be nonzero), so the
straight line `tg.derivatives` feeds (x_2 = ... = x_K = 0) stays sparse through a branch or a
loop whose body keeps it sparse; a loop's carry takes every coefficient its body makes nonzero
from the start (a fixpoint, as the jvp's carried tangents), zeros where the input has none.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Graph
from tracegrad.ir.types import Aval, is_float
from tracegrad.primitives import control as cf
from tracegrad.primitives.series import order_of
from tracegrad.transforms.control import _interleave
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
from tracegrad.transforms.jet import taylor_pass
from tracegrad.transforms.vjp import value_reader

#: per value, which of its K coefficients may be nonzero
Mask = tuple[bool, ...]

# -- series as masks and flat operands --------------------------------------------------------


def masks_of(series, k: int) -> list[Mask]:
    """The mask of each value's series (None: no coefficient moves)."""
    return [(False,) * k if s is None else tuple(t is not None for t in s) for s in series]


def count(masks: Sequence[Mask]) -> int:
    """How many coefficients the masks mark (the extra operands or outputs they stand for)."""
    return sum(sum(m) for m in masks)


def flat_terms(series, masks: Sequence[Mask], avals: Sequence[Aval] | None) -> list:
    """The marked coefficients in order, zeros where one is marked but None; with `avals` each
    cast to its value's aval made strong (a loop or branch operand keeps one type)."""
    out = []
    for i, (s, m) in enumerate(zip(series, masks)):
        for j, b in enumerate(m):
            if not b:
                continue
            t = None if s is None else s[j]
            if avals is None:
                out.append(t)
            else:
                out.append(strong(zeros(avals[i]) if t is None else t, avals[i]))
    return out


def unflat_terms(values, masks: Sequence[Mask]) -> tuple:
    """One series per value (a list with None for unmarked terms; None if none is marked)."""
    it = iter(values)
    return tuple([next(it) if b else None for b in m] if any(m) else None for m in masks)


def _or(a: Sequence[Mask], b: Sequence[Mask]) -> list[Mask]:
    return [tuple(x or y for x, y in zip(p, q)) for p, q in zip(a, b)]


# -- the Taylor pass of a sub-graph, as a sub-graph ---------------------------------------------


def taylor_body(graph: Graph, masks, k: int, force=None, primal_outputs: bool = True):
    """`(graph', has)`: graph' takes graph's inputs, then the coefficients `masks` marks (value
    by value, in order); it returns graph's outputs (when `primal_outputs`), then the output
    coefficients `has` marks: those the pass finds nonzero and those `force` asks for (zeros
    if none). Traced once per masks, cached on `graph`."""
    masks = tuple(tuple(bool(b) for b in m) for m in masks)
    no, zero = (False,) * k, [None] * k
    force = tuple(tuple(m) for m in force) if force is not None else (no,) * len(graph.outputs)

    def build():
        n = len(graph.inputs)
        c_avals = [a.strengthen() for a, m in zip(graph.in_avals, masks) for b in m if b]
        out_avals = [a.strengthen() for a in graph.out_avals]
        has: list[Mask] = []

        def fn(*args):
            series = unflat_terms(args[n:], masks)
            env = eval_graph(graph, list(args[:n]), keep_all=True)
            read = value_reader(env)
            ss = taylor_pass(graph, read, series)
            has[:] = [
                tuple((t is not None or f) and is_float(a.dtype) for t, f in zip(s or zero, fm))
                for s, fm, a in zip(ss, force, out_avals)
            ]
            outs = [read(e.node)[e.index] for e in graph.outputs] if primal_outputs else []
            for s, m, a in zip(ss, has, out_avals):
                outs += [cast(zeros(a) if t is None else t, a) for t, b in zip(s or zero, m) if b]
            return outs

        g = trace_closed(fn, list(graph.in_avals) + c_avals, f"{graph.name}_jet")
        return g, tuple(has)

    return cached(graph, ("jet", masks, force, primal_outputs), build)


def _loop_series(body: Graph, m_consts, m_carry, m_xs, k: int):
    """The carry masks a loop needs (a fixpoint: a coefficient the body makes nonzero in a
    carry is carried from the start) and the Taylor body that carries them."""
    n_carry, n_out = len(m_carry), len(body.outputs)
    carry = list(m_carry)
    while True:
        force = carry + [(False,) * k] * (n_out - n_carry)
        g, has = taylor_body(body, list(m_consts) + carry + list(m_xs), k, force)
        grown = _or(carry, has[:n_carry])
        if grown == carry:
            return carry, g, has
        carry = grown


# -- the rules --------------------------------------------------------------------------------


def scan_taylor(primals, series, *, out, body, n_consts, n_carry, length, reverse):
    k = order_of(series)
    nc, nk = n_consts, n_carry
    n_xs, n_ys = len(primals) - nc - nk, len(body.outputs) - nk
    m_c, m_k, m_x = split(masks_of(series, k), nc, nk)
    carry_m, g, has = _loop_series(body, m_c, m_k, m_x, k)
    counts = [count(m_c), count(carry_m), count(m_x)]
    g = reorder(
        g,
        _interleave([nc, nk, n_xs], counts),
        _interleave([nk, n_ys], [counts[1], count(has[nk:])]),
    )
    consts, init, xs = split(primals, nc, nk)
    s_c, s_k, s_x = split(series, nc, nk)
    c_av, k_av = body.in_avals[:nc], body.in_avals[nc : nc + nk]
    operands = (
        consts
        + flat_terms(s_c, m_c, c_av)
        + init
        + flat_terms(s_k, carry_m, k_av)
        + xs
        + flat_terms(s_x, m_x, None)
    )
    res = cf.scan(
        *operands, body=g, n_consts=nc + counts[0], n_carry=nk + counts[1], length=length,
        reverse=reverse,
    )  # fmt: skip
    _, c_carry, _, c_ys = split(res, nk, counts[1], n_ys)
    return unflat_terms(c_carry, carry_m) + unflat_terms(c_ys, has[nk:])


def while_taylor(primals, series, *, out, cond_graph, body, n_cond_consts, n_consts, trips):
    k = order_of(series)
    nq, nc = n_cond_consts, n_consts
    nk = len(primals) - nq - nc
    _, m_c, m_k = split(masks_of(series, k), nq, nc)
    carry_m, g, _ = _loop_series(body, m_c, m_k, [], k)
    counts = [count(m_c), count(carry_m)]
    g = reorder(g, _interleave([nc, nk], counts), _interleave([nk], [counts[1]]))
    c_av, k_av = body.in_avals[:nc], body.in_avals[nc:]
    t_avals = [a.strengthen() for a, m in zip(k_av, carry_m) for b in m if b]
    cc, bc, init = split(primals, nq, nc)
    _, s_c, s_k = split(series, nq, nc)
    operands = cc + bc + flat_terms(s_c, m_c, c_av) + init + flat_terms(s_k, carry_m, k_av)
    # the predicate reads the primal carry only: it ignores the coefficients' extra inputs
    res = cf.while_loop(
        *operands, cond_graph=with_inputs(cond_graph, t_avals), body=g, n_cond_consts=nq,
        n_consts=nc + counts[0], trips=trips,
    )  # fmt: skip
    return unflat_terms(res[nk:], carry_m)


def cond_taylor(primals, series, *, out, branches):
    index, *ops = primals
    k = order_of(series)
    masks = masks_of(series[1:], k)  # the index is an integer: it carries no series
    union = [(False,) * k] * len(branches[0].outputs)
    for b in branches:
        union = _or(union, taylor_body(b, masks, k, primal_outputs=False)[1])
    new = tuple(taylor_body(b, masks, k, union, primal_outputs=False)[0] for b in branches)
    terms = flat_terms(series[1:], masks, branches[0].in_avals)
    res = cf.cond(index, *ops, *terms, branches=new)
    return unflat_terms(res, union)


__all__ = [
    "cond_taylor",
    "count",
    "flat_terms",
    "masks_of",
    "scan_taylor",
    "taylor_body",
    "unflat_terms",
    "while_taylor",
]
