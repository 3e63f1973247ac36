"""What the functional transforms share: tracing `f` into a graph, argnums and static
arguments, float checks, `has_aux` outputs, and gradients as NumPy values.

`trace_flat` runs `f` on fresh tracers, abstract (avals only: `make_graph`, `jit`) or
concrete (values too: one call of `grad`, so Python control flow on values works and the
path taken is recorded). Arguments that are themselves tracers of an enclosing trace become
inputs with their values; the caller re-runs the graph on them to record it one level up.

`Run` holds one concrete trace and the forward values at the caller's level: the same object
serves reverse mode (`grad`, `vjp`) and forward mode (`jvp`), at the top level and nested.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np
import optree

from tracegrad import tree
from tracegrad.core import Tracer, new_trace
from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Graph, Node, const_p
from tracegrad.ir.types import Aval, aval_of, interned_aval, is_float
from tracegrad.lending import array_chain
from tracegrad.transforms.simplify import simplify
from tracegrad.transforms.vjp import saved_reader, value_reader


@attrs.frozen
class Traced:
    """A traced call: the graph, the outer tracers it captured (extra trailing inputs), the
    values a concrete trace computed (per node), and the flat outputs as traced."""

    graph: Graph
    captured: tuple[Tracer, ...]
    values: dict[Node, object]
    out_tracers: tuple


def _input(trace, x, concrete: bool):
    if type(x) is np.ndarray:  # the common case first
        return trace.new_arg(interned_aval(x.shape, x.dtype), x if concrete else None)
    if isinstance(x, Aval):
        return trace.new_arg(x, None)
    if isinstance(x, Tracer):
        return trace.new_arg(x.aval, x.val if concrete else None)
    aval = aval_of(x)
    return trace.new_arg(aval, x if concrete else None)


def trace_flat(
    fn: Callable,
    flat_args: Sequence,
    *,
    concrete: bool,
    name: str = "f",
    in_tree=None,
    cse: bool = True,
    lent: list | None = None,
    reverse_only: bool = False,
    prune: bool = True,
) -> tuple[Traced, object]:
    """Trace `fn(*tracers) -> pytree` on one tracer per flat argument: (Traced, out_tree).

    `lent` and `reverse_only` are for a graph that lives only inside the caller's call (see
    `Trace`): the caller gives `lent` back (`lending.give_back`) once it is done with the graph.
    `prune` as in `Trace.graph`.
    """
    with new_trace(cse=cse, keep_values=concrete, lent=lent, reverse_only=reverse_only) as trace:
        in_tracers = [_input(trace, x, concrete) for x in flat_args]
        out = fn(*in_tracers)
        if type(out) is Tracer:  # one traced output: the common case, without a tree walk
            out_flat, out_tree = [out], _LEAF
        else:
            out_flat, out_tree = tree.flatten(out)
        out_edges = [trace.output_edge(o) for o in out_flat]
        inputs = [t.edge for t in in_tracers] + [t.edge for t in trace.captured.values()]
        if trace.reverse_only:  # the outputs are read whether or not a rule reads them
            for o, e in zip(out_flat, out_edges):
                if isinstance(o, Tracer) and o._trace is trace and o.val is not None:
                    trace.keep_output(e.node, e.index, o.val)
    graph = trace.graph(
        inputs, out_edges, in_tree=in_tree, out_tree=out_tree, name=name, prune=prune
    )
    return Traced(graph, tuple(trace.captured_outer), trace.values, tuple(out_flat)), out_tree


_LEAF = tree.structure(0)


def trace_function(
    f: Callable,
    args: tuple,
    kwargs: dict | None = None,
    *,
    concrete: bool,
    name: str | None = None,
    cse: bool = True,
) -> Traced:
    """Trace `f(*args, **kwargs)`; the graph's `in_tree` is that of `(args, kwargs)`."""
    kwargs = kwargs or {}
    flat, in_tree = tree.flatten((tuple(args), dict(kwargs)))

    def flat_fn(*tracers):
        a, k = tree.unflatten(in_tree, tracers)
        return f(*a, **k)

    traced, _ = trace_flat(
        flat_fn,
        flat,
        concrete=concrete,
        name=name or getattr(f, "__name__", "f"),
        in_tree=in_tree,
        cse=cse,
    )
    return traced


def split_static(args: tuple, static_argnums: Sequence[int], fname: str):
    """(static values, dynamic args, merge function) for `static_argnums`."""
    n = len(args)
    static = set()
    for i in static_argnums:
        if not -n <= i < n:
            raise ValueError(
                f"{fname}: static_argnums={tuple(static_argnums)} refers to argument {i}, but "
                f"the function was called with {n} positional arguments"
            )
        static.add(i % n)
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    statics = tuple((i, args[i]) for i in sorted(static))

    return statics, dyn, lambda dyn_args: merge_static(statics, dyn_args)


def merge_static(statics: tuple, dyn_args: tuple) -> tuple:
    """The full positional arguments from `(index, value)` static pairs and the rest."""
    if not statics:
        return tuple(dyn_args)
    static = dict(statics)
    it = iter(dyn_args)
    return tuple(static[i] if i in static else next(it) for i in range(len(dyn_args) + len(static)))


def name_of(f) -> str:
    """The name error messages give `f` (a callable object's type name when it has none)."""
    return getattr(f, "__name__", type(f).__name__)


def argnums_tuple(argnums, nargs: int, fname: str, api: str) -> tuple[int, ...]:
    if type(argnums) is int and 0 <= argnums < nargs:  # the common case (grad(f) of f(x, ...))
        return (argnums,)
    single = isinstance(argnums, int | np.integer)
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


def per_argnum(results: tuple, argnums, nums: tuple[int, ...], unique: tuple[int, ...]):
    """Results computed once per distinct argument (`unique`, in order) laid out as asked:
    one for an int `argnums`, else one per entry of `nums` (the normalised argnums), a
    repeated position getting its result again, copied (NumPy arrays are mutable). JAX means
    the same by `argnums=(0, 0)`; differentiating a repeated position twice would give it two
    tracers of which only the last reaches `f`."""
    if isinstance(argnums, int | np.integer):
        return results[0]
    by_position = dict(zip(unique, results))
    seen: set[int] = set()
    laid_out = []
    for i in nums:
        value = by_position[i]
        laid_out.append(tree.map(_copied, value) if i in seen else value)
        seen.add(i)
    return tuple(laid_out)


def _copied(v):
    return v.copy() if isinstance(v, np.ndarray) else v


def check_float_inputs(
    args: tuple, argnums: tuple[int, ...], fname: str, api: str, holomorphic: bool = False
) -> None:
    """The differentiated inputs are floats or complex; with `holomorphic`, complex (JAX's
    check and message); `jacfwd` also refuses complex inputs without it (as JAX: its basis
    would push only real directions)."""
    for i in argnums:
        arg = args[i]
        if not holomorphic and (
            type(arg) is float or (type(arg) is np.ndarray and arg.dtype.kind == "f")
        ):
            continue  # the commonest cases: one real float array or Python float (no pytree)
        for x in tree.leaves(arg):  # the common case first: real floats, no paths built
            if type(x) is np.ndarray:
                kind = x.dtype.kind
            else:
                kind = (x.aval if isinstance(x, Tracer) else aval_of(x)).dtype.kind
            if holomorphic or kind != "f":
                _check_leaves(arg, i, fname, api, holomorphic)
                break


def check_float_leaves(
    flat: Sequence, args: tuple, argnums: tuple[int, ...], fname: str, api: str, holomorphic: bool
) -> None:
    """`check_float_inputs` given the leaves `flat` of the differentiated arguments, which the
    caller has flattened anyway: real float leaves pass in one loop without another walk of
    the arguments; anything else gets `check_float_inputs`' checks and messages."""
    if not holomorphic:
        for x in flat:
            if type(x) is np.ndarray:
                if x.dtype.kind != "f":
                    break
            elif type(x) is not float:
                break
        else:
            return
    check_float_inputs(args, argnums, fname, api, holomorphic)


def _check_leaves(arg, i: int, fname: str, api: str, holomorphic: bool) -> None:
    """`check_float_inputs` for argument `i`, its leaves named by their paths."""
    leaves, paths = leaves_with_paths(arg)
    for x, path in zip(leaves, paths):
        aval = x.aval if isinstance(x, Tracer) else aval_of(x)
        if holomorphic and aval.dtype.kind != "c":
            raise TypeError(
                f"{api} with holomorphic=True requires inputs with complex dtype, but got "
                f"{aval.dtype.name}."
            )
        if not is_float(aval.dtype):
            raise TypeError(
                f"{api}({fname}) requires float inputs, but argument {i}{path} has dtype "
                f"{aval.dtype.name}. Differentiate with respect to float arguments only "
                "(convert with .astype(float), or leave this argument out of argnums)."
            )
        if api == "jacfwd" and not holomorphic and aval.dtype.kind == "c":
            raise TypeError(
                "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.floating), but got {aval.dtype.name}. For holomorphic "
                "differentiation, pass holomorphic=True. For differentiation of "
                "non-holomorphic functions involving complex inputs or integer inputs, use "
                "tracegrad.jvp directly."
            )


def check_output_dtype(dtype, api: str, holomorphic: bool) -> None:
    """JAX's check of a differentiated output's dtype in reverse mode (`grad`, `jacrev`): real
    unless `holomorphic`, then complex. A complex output's cotangent seeds would push only its
    real part back, which is not the derivative of a complex function."""
    dtype = np.dtype(dtype)
    if holomorphic:
        if dtype.kind != "c":
            raise TypeError(
                f"{api} with holomorphic=True requires outputs with complex dtype, but got "
                f"{dtype.name}."
            )
        return
    if dtype.kind == "f":
        return
    if dtype.kind == "c":
        raise TypeError(
            f"{api} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
            "holomorphic=True. For differentiation of non-holomorphic functions involving "
            "complex outputs, use tracegrad.vjp directly."
        )
    raise TypeError(
        f"{api} requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
        f"but got {dtype.name}. For differentiation of functions with integer outputs, use "
        "tracegrad.vjp directly."
    )


def leaves_with_paths(value) -> tuple[list, list[str]]:
    paths, leaves, _ = optree.tree_flatten_with_path(
        value, none_is_leaf=False, namespace=tree.NAMESPACE
    )
    return leaves, ["".join(f"[{p!r}]" for p in path) for path in paths]


class Run:
    """One concrete trace of `f` and the forward values at the caller's level.

    At the top level the trace's own values are the forward values; when the arguments are
    tracers of an enclosing transformation, the graph is simplified and re-run on them
    (recording it there), so each level of a nested derivative starts from a small graph.
    `graph` is the graph the derivative pass must walk.
    """

    def __init__(self, traced: Traced, flat_args: Sequence, reverse_only: bool = False):
        self.traced = traced
        graph = traced.graph
        if is_nested(traced, flat_args):
            graph = simplified_level(graph, True)
            args = list(flat_args) + list(traced.captured)
            self.values = eval_graph(graph, args, keep_all=True)
            self.read = value_reader(self.values)
        else:
            self.values = traced.values
            # a trace made `reverse_only` kept only what reverse rules read
            self.read = (saved_reader if reverse_only else value_reader)(self.values)
        self.graph = graph
        self.outputs = [self.read(e.node)[e.index] for e in graph.outputs]


class _TakenOnce(dict):
    """Values an interpreter run reads once each (`eval_graph`'s `known`): handed over on
    first read, so from then on the run's own schedule decides when each is freed."""

    def __getitem__(self, node):
        return self.pop(node)


def known_once(graph: Graph, values: dict) -> dict:
    """The values a concrete trace kept, as `eval_graph(graph, ..., known=)` should take them
    when `graph` extends the traced graph (vjp's and linearize's forward graphs): each handed
    over once, and moved out of `values` (emptied) so that the trace no longer holds them.

    A trace made `reverse_only` kept only some values (and of a node with several outputs
    perhaps only some). The nodes of `graph` whose values nothing computed from the
    outputs and residuals needs get a placeholder instead of being computed again; the
    others missing are computed (none, when the rules read only what they declare)."""
    known = _TakenOnce(
        (n, v) for n, v in values.items() if len(v) == 1 or all(x is not None for x in v)
    )
    values.clear()
    need: set[Node] = set()
    stack = [e.node for e in graph.outputs]
    while stack:
        node = stack.pop()
        if node in need or node in known or node.prim is const_p:
            continue
        need.add(node)
        stack.extend(e.node for e in node.inputs)
    inputs = {e.node for e in graph.inputs}
    for node in graph.nodes:
        if node not in need and node not in known and node not in inputs:
            if node.prim is not const_p:
                known[node] = (None,) * len(node.out_avals)  # read by nothing that runs
    return known


def detached(residuals: Sequence, args: Sequence) -> list:
    """`residuals` (what a returned vjp_fn or jvp_fn keeps) with every array that shares
    memory with one of the caller's arrays `args` copied: an argument itself, or a view of
    one (matmul's rule keeps `x.T`). The caller may write into its arrays once the call has
    returned, and the function it got must not see that (its constants are copies already)."""
    theirs = {id(a) for x in args if isinstance(x, np.ndarray) for a in array_chain(x)}
    if not theirs:
        return list(residuals)
    kept = []
    for r in residuals:
        if isinstance(r, np.ndarray) and any(id(a) in theirs for a in array_chain(r)):
            r = r.copy()
            r.flags.writeable = False
        kept.append(r)
    return kept


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


def trace_args(
    f,
    args: tuple,
    kwargs: dict,
    argnums: tuple[int, ...],
    flat: list,
    diff_tree,
    fname: str,
    lent: list | None = None,
    reverse_only: bool = False,
):
    """Trace f concretely with the differentiated arguments as tracers (`flat`, `diff_tree`:
    `tree.flatten` of `tuple(args[i] for i in argnums)`); the rest are closed over (`lent`
    and `reverse_only` as in `trace_flat`). Returns (Traced, out_tree)."""

    def flat_fn(*tracers):
        vals = list(args)
        for i, sub in zip(argnums, tree.unflatten(diff_tree, tracers)):
            vals[i] = sub
        return f(*vals, **kwargs)

    return trace_flat(
        flat_fn,
        flat,
        concrete=True,
        name=fname,
        lent=lent,
        reverse_only=reverse_only,
        prune=False,  # read once, by the backward pass
    )


def split_aux(out_tree, outs, has_aux: bool, fname: str, api: str):
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


def to_output(v, like):
    """A gradient as a NumPy value of the input's shape and dtype."""
    if type(v) is np.ndarray and type(like) is np.ndarray:  # the common case first
        if v.dtype == like.dtype and v.shape == like.shape:
            return v
    elif v is like and isinstance(v, np.generic):  # a NumPy scalar value: itself
        return v
    aval = like.aval if isinstance(like, Tracer) else aval_of(like)
    if isinstance(v, Tracer):
        return v
    if v is None:
        return (
            np.zeros(aval.shape, aval.strengthen().dtype)
            if aval.shape or not aval.weak_type
            else aval.dtype.type(0)  # np.float64(0.0), or np.complex128(0j) for a complex
        )
    arr = np.asarray(v, dtype=aval.dtype)
    return arr if aval.shape or isinstance(like, np.ndarray) else arr[()]
