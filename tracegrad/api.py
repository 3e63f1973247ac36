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
from tracegrad.core import Boxed, Tracer
from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Node, const_p
from tracegrad.ir.types import Aval, aval_of, is_float
from tracegrad.primitives.elementwise import stop_gradient as sg
from tracegrad.tracing import Traced, trace_flat
from tracegrad.transforms.simplify import simplify
from tracegrad.transforms.vjp import backward_pass, value_reader, vjp_graph


def _fname(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def _argnums_tuple(argnums, nargs: int, fname: str, api: str) -> tuple[int, ...]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise ValueError(f"{api}({fname}): argnums must name at least one argument, got ()")
    for i in nums:
        if not isinstance(i, int | np.integer):
            raise TypeError(f"{api}({fname}): argnums must be ints, got {i!r}")
        if not -nargs <= i < nargs:
            raise TypeError(
                f"{api}({fname}): differentiating with respect to argnums={argnums} requires at "
                f"least {max(i, -i - 1) + 1} positional arguments, but {fname} was called with "
                f"{nargs}"
            )
    return tuple(int(i) % nargs for i in nums)


def _check_float_inputs(args: tuple, argnums: tuple[int, ...], fname: str, api: str) -> None:
    for i in argnums:
        leaves, paths = _leaves_with_paths(args[i])
        for x, path in zip(leaves, paths):
            aval = x.aval if isinstance(x, Tracer) else aval_of(x)
            if not is_float(aval.dtype):
                raise TypeError(
                    f"{api}({fname}) requires float inputs, but argument {i}{path} has dtype "
                    f"{aval.dtype.name}. Differentiate with respect to float arguments only "
                    "(convert with .astype(float), or leave this argument out of argnums)."
                )


def _leaves_with_paths(value) -> tuple[list, list[str]]:
    import optree

    paths, leaves, _ = optree.tree_flatten_with_path(
        value, none_is_leaf=False, namespace=tree.NAMESPACE
    )
    return leaves, ["".join(f"[{p!r}]" for p in path) for path in paths]


class _Run:
    """One concrete trace of `f` and the forward values at the caller's level.

    At the top level the trace's own values are the forward values; when the arguments are
    tracers of an enclosing transformation, the graph is simplified and re-run on them
    (recording it there), so each level of a nested derivative starts from a small graph.
    `graph` is the graph the derivative pass must walk.
    """

    def __init__(self, traced: Traced, flat_args: Sequence):
        self.traced = traced
        graph = traced.graph
        if is_nested(traced, flat_args):
            graph = simplified_level(graph, True)
            args = list(flat_args) + list(traced.captured)
            self.values = eval_graph(graph, args, keep_all=True)
        else:
            self.values = traced.values
        self.graph = graph
        self.read = value_reader(self.values)
        self.outputs = [self.read(e.node)[e.index] for e in graph.outputs]

    def release(self, node: Node) -> None:
        # the forward value of `node` is needed by no rule still to run (reverse order)
        if node.prim is not const_p:
            self.values.pop(node, None)


def is_nested(traced: Traced, flat_args: Sequence) -> bool:
    """Whether this call runs inside another transformation (its values are tracers)."""
    return bool(traced.captured) or any(isinstance(a, Tracer) for a in flat_args)


def simplified_level(graph, nested: bool):
    """A nested level's graph, simplified before it is differentiated so each level of a
    nested derivative starts small. Also directly under jit, which simplifies the whole graph
    afterwards: differentiating an unsimplified level gives a larger graph that the final pass
    cannot shrink back (tanh's 8th derivative: 447 nodes against 392), and the extra pass costs
    no measurable time on the first call (benchmarks/jit_overhead.py)."""
    return simplify(graph) if nested else graph


def _trace(f, args: tuple, kwargs: dict, argnums: tuple[int, ...], fname: str):
    """Trace f concretely with the differentiated arguments as tracers; the rest are closed over."""
    diff = tuple(args[i] for i in argnums)
    flat, diff_tree = tree.flatten(diff)

    def flat_fn(*tracers):
        vals = list(args)
        for i, sub in zip(argnums, tree.unflatten(diff_tree, tracers)):
            vals[i] = sub
        return f(*vals, **kwargs)

    traced, out_tree = trace_flat(flat_fn, flat, concrete=True, name=fname)
    return traced, out_tree, flat, diff_tree


def _split_aux(out_tree, outs, has_aux: bool, fname: str, api: str):
    """(main output leaves, aux pytree or None, main tree) from the flat outputs."""
    out = tree.unflatten(out_tree, list(range(len(outs))))
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple | list) and len(out) == 2):
        raise TypeError(
            f"{api}({fname}, has_aux=True) requires {fname} to return a pair (output, aux), "
            f"but it returned {type(out).__name__}"
            + (f" of length {len(out)}" if isinstance(out, tuple | list) else "")
        )
    return out[0], out[1]


def _to_output(v, like):
    """A gradient as a NumPy value of the input's shape and dtype."""
    aval = like.aval if isinstance(like, Tracer) else aval_of(like)
    if isinstance(v, Tracer):
        return v
    if v is None:
        return (
            np.zeros(aval.shape, aval.strengthen().dtype)
            if aval.shape or not aval.weak_type
            else np.float64(0.0)
        )
    arr = np.asarray(v, dtype=aval.dtype)
    return arr if aval.shape or isinstance(like, np.ndarray) else arr[()]


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """`(f(*args), gradient)` of a scalar-valued `f` with respect to `args[argnums]`.

    Args:
      f: a function of NumPy arrays and Python scalars (pytrees of them) returning a scalar.
      argnums: which positional argument(s) to differentiate; an int gives one gradient, a
        tuple gives a tuple of gradients.
      has_aux: `f` returns `(value, aux)`; aux is returned beside the value, not differentiated.
    Returns:
      A function returning `(value, grad)` (`((value, aux), grad)` with `has_aux`).
    """
    fname = _fname(f)

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), fname, "grad")
        _check_float_inputs(args, nums, fname, "grad")
        traced, out_tree, flat, diff_tree = _trace(f, args, kwargs, nums, fname)
        main, aux = _split_aux(out_tree, traced.out_tracers, has_aux, fname, "grad")
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
        if not is_float(out_aval.dtype):
            raise TypeError(
                f"grad requires a float output, got dtype {out_aval.dtype.name} from {fname}"
            )
        run = _Run(traced, flat)
        graph = run.graph
        seeds = [None] * len(graph.outputs)
        seeds[k] = 1.0
        out_k = run.outputs[k]
        if isinstance(out_k, Tracer) and out_k._trace.alive:
            seeds[k] = out_k._trace.constant(1.0)  # traced: no full-size folded constants
        n_in = len(flat)
        wrt = [True] * n_in + [False] * len(traced.captured)
        bars = backward_pass(graph, run.read, seeds, wrt, release=run.release)[:n_in]
        grads = [_to_output(b, x) for b, x in zip(bars, flat)]
        grads_tree = tree.unflatten(diff_tree, grads)
        value = run.outputs[k]
        value = _to_output(value, value) if not isinstance(value, Tracer) else value
        g = grads_tree[0] if isinstance(argnums, int) else grads_tree
        if has_aux:
            aux_val = tree.unflatten(out_tree, run.outputs)[1]
            return (value, aux_val), g
        return value, g

    return value_and_grad_f


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False):
    """The gradient of a scalar-valued `f` with respect to `args[argnums]` (as `jax.grad`)."""
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def vjp(f: Callable, *primals, has_aux: bool = False):
    """`(f(*primals), vjp_fn)`; `vjp_fn(cotangent)` returns one cotangent per primal.

    `f` runs once. `vjp_fn` runs only the backward graph, on residuals the forward graph
    computed, so it can be called many times cheaply (and differentiated again).
    """
    fname = _fname(f)
    flat, in_tree = tree.flatten(primals)
    traced, out_tree = trace_flat(
        lambda *t: f(*tree.unflatten(in_tree, t)), flat, concrete=True, name=fname
    )
    main, aux = _split_aux(out_tree, traced.out_tracers, has_aux, fname, "vjp")
    main_idx = tree.leaves(main)
    main_tree = tree.structure(main)
    nested = is_nested(traced, flat)
    graph = simplified_level(traced.graph, nested)
    wrt = [True] * len(flat) + [False] * len(traced.captured)
    split = vjp_graph(graph, wrt)
    args = list(flat) + list(traced.captured)
    fwd_out = eval_graph(split.forward, args, known=None if nested else traced.values)
    outs, residuals = fwd_out[: split.n_outputs], fwd_out[split.n_outputs :]
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
            cts[k] = c if isinstance(c, Tracer) else np.asarray(c, aval.strengthen().dtype)
        for k, aval in enumerate(out_avals):
            if cts[k] is None:
                cts[k] = np.zeros(aval.shape, aval.strengthen().dtype)
        bars = eval_graph(split.linear, list(residuals) + cts)
        full = [None] * len(flat)
        for i, b in zip(split.present, bars):
            if i < len(flat):
                full[i] = b
        return tree.unflatten(in_tree, [_to_output(b, x) for b, x in zip(full, flat)])

    out_vals = tree.unflatten(
        out_tree, [_to_output(o, o) if not isinstance(o, Tracer) else o for o in outs]
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


__all__ = ["grad", "stop_gradient", "value_and_grad", "vjp", "Aval"]
