"""Forward mode: jvp and linearize (thin wrappers over tracing and the tangent pass).

`jvp` traces `f` concretely once and pushes the tangents through the recorded nodes using the
values the trace kept. `linearize` splits the same pass so that `jvp_fn` runs only the linear
graph, reusing the forward values (residuals) of one evaluation of `f`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tracegrad import tree
from tracegrad.api.common import (
    Run,
    detached,
    is_nested,
    known_once,
    name_of,
    simplified_level,
    split_aux,
    to_output,
    trace_flat,
)
from tracegrad.core import Tracer
from tracegrad.interpret import eval_graph
from tracegrad.ir.types import aval_of, is_float
from tracegrad.lending import give_back
from tracegrad.transforms.jvp import linearize_graph, tangent_pass


def _aval(x):
    return x.aval if isinstance(x, Tracer) else aval_of(x)


def _check_tangents(fname, api, flat_p, p_tree, flat_t, t_tree):
    if p_tree != t_tree:
        raise TypeError(
            f"{api}({fname}): primal and tangent arguments must have the same tree structure, "
            f"got {p_tree} and {t_tree}"
        )
    for i, (p, t) in enumerate(zip(flat_p, flat_t)):
        pa, ta = _aval(p), _aval(t)
        if pa.shape != ta.shape:
            raise ValueError(
                f"{api}({fname}): the tangent of leaf {i} has shape {ta.shape}, but its primal "
                f"has shape {pa.shape}; they must be equal"
            )
        if pa.dtype.kind != "c" and ta.dtype.kind == "c":
            raise TypeError(
                f"{api}({fname}): the tangent of leaf {i} has dtype {ta.dtype.name}, but its "
                f"primal has dtype {pa.dtype.name}; a real primal takes a real tangent (as in "
                "JAX; a cast would drop the imaginary part)"
            )
        if is_float(pa.dtype) and not pa.weak_type and not ta.weak_type and pa.dtype != ta.dtype:
            raise TypeError(
                f"{api}({fname}): the tangent of leaf {i} has dtype {ta.dtype.name}, but its "
                f"primal has dtype {pa.dtype.name}; they must be equal"
            )


def _trace(f, primals, fname, lent=None):
    flat, in_tree = tree.flatten(tuple(primals))
    traced, out_tree = trace_flat(
        lambda *t: f(*tree.unflatten(in_tree, t)), flat, concrete=True, name=fname, lent=lent
    )
    return traced, out_tree, flat, in_tree


def _tangent_outputs(ts, outs):
    return [
        to_output(t, o) if t is not None or not isinstance(o, Tracer) else 0.0 * o
        for t, o in zip(ts, outs)
    ]


def jvp(f: Callable, primals, tangents, has_aux: bool = False):
    """`(f(*primals), J(primals) @ tangents)`: forward-mode differentiation, as `jax.jvp`.

    Args:
      f: a function of arrays (pytrees of them).
      primals, tangents: tuples (or lists) of the same structure, one entry per argument.
    Returns:
      `(out, tangent_out)` (`(out, tangent_out, aux)` with `has_aux`).
    """
    fname = name_of(f)
    if not isinstance(primals, tuple | list) or not isinstance(tangents, tuple | list):
        raise TypeError(
            f"jvp({fname}): primals and tangents must be tuples or lists of arguments, got "
            f"{type(primals).__name__} and {type(tangents).__name__}"
        )
    # the graph lives only inside this call: its constant arrays are borrowed, not copied
    lent: list = []
    try:
        return _jvp(f, fname, primals, tangents, has_aux, lent)
    finally:
        give_back(lent)


def _jvp(f, fname, primals, tangents, has_aux, lent):
    traced, out_tree, flat, in_tree = _trace(f, primals, fname, lent)
    flat_t, t_tree = tree.flatten(tuple(tangents))
    _check_tangents(fname, "jvp", flat, in_tree, flat_t, t_tree)
    run = Run(traced, flat)
    ts = tangent_pass(run.graph, run.read, list(flat_t) + [None] * len(traced.captured))
    outs = [to_output(o, o) if not isinstance(o, Tracer) else o for o in run.outputs]
    t_outs = _tangent_outputs(ts, run.outputs)
    out_vals = tree.unflatten(out_tree, outs)
    t_vals = tree.unflatten(out_tree, t_outs)
    if has_aux:
        main, aux = split_aux(out_tree, outs, True, fname, "jvp")
        return out_vals[0], t_vals[0], out_vals[1]
    return out_vals, t_vals


def linearize(f: Callable, *primals):
    """`(f(*primals), jvp_fn)` where `jvp_fn(*tangents)` runs only the linearized graph.

    The forward work (including what the derivative rules need, like `cos(x)` for `sin`) is
    done once here; each `jvp_fn` call evaluates the linear graph on the saved residuals.
    """
    fname = name_of(f)
    traced, out_tree, flat, in_tree = _trace(f, primals, fname)
    nested = is_nested(traced, flat)
    graph = simplified_level(traced.graph, nested)
    split = linearize_graph(graph, [True] * len(flat) + [False] * len(traced.captured))
    args = list(flat) + list(traced.captured)
    known = None if nested else known_once(split.forward, traced.values)
    fwd_out = eval_graph(split.forward, args, known=known)
    del known, traced  # the residuals are all that is left of the forward pass
    outs, residuals = fwd_out[: split.n_outputs], fwd_out[split.n_outputs :]
    residuals = detached(residuals, flat)
    out_avals = [e.aval for e in graph.outputs]

    def jvp_fn(*tangents):
        flat_t, t_tree = tree.flatten(tuple(tangents))
        _check_tangents(fname, "linearize", flat, in_tree, flat_t, t_tree)
        ts = [
            t if isinstance(t, Tracer) else np.asarray(t, _aval(p).strengthen().dtype)
            for t, p in zip(flat_t, flat)
        ]
        results = eval_graph(split.linear, list(residuals) + ts)
        full = [None] * len(out_avals)
        for k, r in zip(split.present, results):
            full[k] = r
        return tree.unflatten(out_tree, _tangent_outputs(full, outs))

    out_vals = tree.unflatten(
        out_tree, [to_output(o, o) if not isinstance(o, Tracer) else o for o in outs]
    )
    return out_vals, jvp_fn
