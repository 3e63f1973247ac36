"""The functional API: grad, value_and_grad, vjp (thin wrappers over tracing and transforms).

Each call traces `f` concretely once (so Python control flow on values works), then either
runs the backward pass right away (`grad`) or splits it into forward and backward graphs
(`vjp`, whose `vjp_fn` runs only the backward graph). Arguments that are tracers of an
enclosing transformation make the same steps record into that transformation's trace: this
is all that nested derivatives need.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from tracegrad import tree
from tracegrad.api.common import (
    Run,
    argnums_tuple,
    check_float_leaves,
    check_output_dtype,
    detached,
    is_nested,
    known_once,
    name_of,
    per_argnum,
    simplified_level,
    split_aux,
    to_output,
    trace_args,
    trace_flat,
)
from tracegrad.core import Boxed, Tracer
from tracegrad.interpret import eval_graph
from tracegrad.ir.types import aval_of
from tracegrad.lending import give_back
from tracegrad.primitives.elementwise import stop_gradient as sg
from tracegrad.transforms.vjp import backward_pass, vjp_graph


def value_and_grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """`(f(*args), gradient)` of a scalar-valued `f` with respect to `args[argnums]`.

    Args:
      f: a function of NumPy arrays and Python scalars (pytrees of them) returning a scalar.
      argnums: which positional argument(s) to differentiate; an int gives one gradient, a
        tuple gives a tuple of gradients.
      has_aux: `f` returns `(value, aux)`; aux is returned beside the value, not differentiated.
      holomorphic: `f` is promised to be holomorphic: complex inputs and a complex output,
        whose gradient is the complex derivative f'(z) (as `jax.grad`). Without it the output
        must be real; the gradient of a real `f` of complex `z` is then JAX's (and HIPS
        autograd's) df/dx - i df/dy, the conjugate of PyTorch's `.grad`.
    Returns:
      A function returning `(value, grad)` (`((value, aux), grad)` with `has_aux`).
    """
    fname = name_of(f)

    @functools.wraps(f, updated=())  # not f.__dict__: a Jitted keeps its state there
    def value_and_grad_f(*args, **kwargs):
        nums = argnums_tuple(argnums, len(args), fname, "grad")
        # a repeated argnum is differentiated once
        unique = nums if len(nums) == 1 else tuple(dict.fromkeys(nums))
        flat, diff_tree = tree.flatten(tuple([args[i] for i in unique]))
        check_float_leaves(flat, args, unique, fname, "grad", holomorphic)
        # The graph lives only inside this call: its constant arrays are borrowed, not
        # copied (read-only until the call returns), and the trace keeps only the values
        # the backward pass reads, each freed after its last reader (the memory of a
        # handwritten gradient, benchmarks/memory.py).
        lent: list = []
        try:
            return _value_and_grad(args, kwargs, nums, unique, flat, diff_tree, lent)
        except ValueError as e:
            if lent and "read-only" in str(e):
                e.add_note(_READ_ONLY_NOTE.format(fname=fname))
            raise
        finally:
            give_back(lent)

    def _value_and_grad(args, kwargs, nums, unique, flat, diff_tree, lent):
        traced, out_tree = trace_args(
            f, args, kwargs, unique, flat, diff_tree, fname, lent=lent, reverse_only=True
        )
        if not has_aux and len(traced.out_tracers) == 1:  # one output: the main one
            main, main_leaves = None, [0]
        else:
            main, aux = split_aux(out_tree, traced.out_tracers, has_aux, fname, "grad")
            main_leaves = tree.leaves(main)
        if len(main_leaves) != 1:
            raise TypeError(
                f"grad({fname}) requires a scalar output, got a {type(main).__name__} of "
                f"{len(main_leaves)} values; use jacrev or vjp"
            )
        k = main_leaves[0]
        out_aval = traced.graph.outputs[k].aval
        if out_aval.shape != ():
            raise TypeError(
                f"grad requires a scalar output, got shape {out_aval.shape}; use jacrev or vjp"
            )
        check_output_dtype(out_aval.dtype, "grad", holomorphic)
        run = Run(traced, flat, reverse_only=True)
        graph = run.graph
        seeds = [None] * len(graph.outputs)
        out_k = run.outputs[k]
        if isinstance(out_k, Tracer) and out_k._trace.alive:
            seeds[k] = out_k._trace.constant(1.0)  # traced: no full-size folded constants
        else:  # the seed as the backward pass takes it (`conform`'s 0-d array), made directly
            seeds[k] = np.array(1, out_aval.dtype)
        n_in = len(flat)
        wrt = [True] * n_in + [False] * len(traced.captured)
        bars = backward_pass(graph, run.read, seeds, wrt, free=run.values)[:n_in]
        grads = [to_output(b, x) for b, x in zip(bars, flat)]
        grads_tree = tree.unflatten(diff_tree, grads)
        value = run.outputs[k]
        value = to_output(value, value) if not isinstance(value, Tracer) else value
        g = per_argnum(tuple(grads_tree), argnums, nums, unique)
        if has_aux:
            aux_val = tree.unflatten(out_tree, run.outputs)[1]
            return (value, aux_val), g
        return value, g

    return value_and_grad_f


_READ_ONLY_NOTE = (
    "tracegrad: the arrays grad({fname}) uses as constants are read-only until the call "
    "returns (the gradient reads them, and they are not copied). Write into a copy "
    "(np.copy) instead of an array the function has already used."
)


def grad(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
):
    """The gradient of a scalar-valued `f` with respect to `args[argnums]` (as `jax.grad`;
    `holomorphic` as in `value_and_grad`)."""
    vg = value_and_grad(f, argnums, has_aux, holomorphic)

    @functools.wraps(f, updated=())  # not f.__dict__: a Jitted keeps its state there
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def vjp(f: Callable, *primals, has_aux: bool = False):
    """`(f(*primals), vjp_fn)`; `vjp_fn(cotangent)` returns one cotangent per primal.

    `f` runs once. `vjp_fn` runs only the backward graph, on residuals the forward graph
    computed, so it can be called many times cheaply (and differentiated again).
    """
    fname = name_of(f)
    flat, in_tree = tree.flatten(primals)
    # The trace keeps only what the backward rules read (the forward graph below computes
    # the residuals from those), and its constants are copies: vjp_fn outlives this call.
    traced, out_tree = trace_flat(
        lambda *t: f(*tree.unflatten(in_tree, t)),
        flat,
        concrete=True,
        name=fname,
        reverse_only=True,
    )
    main, aux = split_aux(out_tree, traced.out_tracers, has_aux, fname, "vjp")
    main_idx = tree.leaves(main)
    main_tree = tree.structure(main)
    nested = is_nested(traced, flat)
    graph = simplified_level(traced.graph, nested)
    wrt = [True] * len(flat) + [False] * len(traced.captured)
    split = vjp_graph(graph, wrt)
    args = list(flat) + list(traced.captured)
    known = None if nested else known_once(split.forward, traced.values)
    fwd_out = eval_graph(split.forward, args, known=known)
    del known, traced  # the residuals are all that is left of the forward pass
    outs, residuals = fwd_out[: split.n_outputs], fwd_out[split.n_outputs :]
    residuals = detached(residuals, flat)
    out_avals = [e.aval for e in graph.outputs]

    def vjp_fn(cotangent):
        ct_flat, ct_tree = tree.flatten(cotangent)
        if ct_tree != main_tree:
            raise TypeError(
                f"vjp_fn of {fname}: the cotangent must have the structure of the output "
                f"({main_tree}), got {ct_tree}"
            )
        cts = [None] * len(out_avals)
        for k, c in zip(main_idx, ct_flat):
            aval = out_avals[k]
            c_aval = c.aval if isinstance(c, Tracer) else aval_of(c)
            if c_aval.shape != aval.shape:
                raise ValueError(
                    f"vjp_fn of {fname}: cotangent of shape {c_aval.shape} for an output of "
                    f"shape {aval.shape}; they must be equal"
                )
            if c_aval.dtype.kind == "c" and aval.dtype.kind != "c":
                raise ValueError(
                    f"vjp_fn of {fname}: a cotangent of dtype {c_aval.dtype.name} for an output "
                    f"of dtype {aval.dtype.name}; a real output takes a real cotangent (as in "
                    "JAX; a cast would drop the imaginary part)"
                )
            cts[k] = c if isinstance(c, Tracer) else np.asarray(c, aval.strengthen().dtype)
        for k, aval in enumerate(out_avals):
            if cts[k] is None:
                cts[k] = np.zeros(aval.shape, aval.strengthen().dtype)
        bars = eval_graph(split.linear, list(residuals) + cts)
        full = [None] * len(flat)
        for i, b in zip(split.present, bars):
            if i < len(flat):
                full[i] = b
        return tree.unflatten(in_tree, [to_output(b, x) for b, x in zip(full, flat)])

    out_vals = tree.unflatten(
        out_tree, [to_output(o, o) if not isinstance(o, Tracer) else o for o in outs]
    )
    if has_aux:
        return out_vals[0], vjp_fn, out_vals[1]
    return out_vals, vjp_fn


def stop_gradient(x):
    """`x` as a constant for differentiation (pytrees too), as `jax.lax.stop_gradient`; on a
    PyTorch-style tensor, `t.detach()`."""

    def constant(v):
        if isinstance(v, Tracer):
            return sg(v)
        return v._stop_gradient() if isinstance(v, Boxed) else v

    return tree.map(constant, x)


__all__ = ["grad", "stop_gradient", "value_and_grad", "vjp"]
