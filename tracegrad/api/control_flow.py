"""Structured control flow with jax.lax's signatures: cond, switch, while_loop, fori_loop,
scan and map.

Each traces its functions once, abstractly, into sub-graphs and binds a primitive of
`tracegrad.primitives.control`: under `jit` a Python loop would unroll into one node per step
and a Python `if` on a traced value cannot be decided, while these stay one node. Values the
functions close over (tracers of an enclosing transform, PyTorch-style tensors) become
operands, so their derivatives flow. Carries, operands and outputs are pytrees; the checks and
their messages follow JAX's. Two things go beyond JAX: a `while_loop` first run on concrete
values (outside jit) records its trip count, so reverse mode can run it backwards; and under
`tg.disable_jit()` every construct runs as plain Python on concrete values, for debugging.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import optree

from tracegrad import tree
from tracegrad.api.batching import vmap
from tracegrad.api.jit import jit_disabled
from tracegrad.api.subgraphs import (
    Traced,
    leaf_aval,
    structure_of,
    trace_subgraph,
)
from tracegrad.core import Boxed, Tracer, bind
from tracegrad.errors import ConcretizationError
from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Edge, Graph, arg_node
from tracegrad.ir.types import Aval, dtype_of, shape_of
from tracegrad.primitives import control as cf
from tracegrad.primitives.elementwise import astype, clip, not_equal_p
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import reshape
from tracegrad.transforms.control import count_trips
from tracegrad.transforms.control_common import cast, trace_closed

_NO_OPERAND = object()


def _describe(fn) -> str:
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__name__", type(fn).__name__)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def _types_differ(a: Aval, b: Aval) -> str:
    if a.shape != b.shape:
        return "the shapes do not match"
    if a.dtype != b.dtype:
        return "the dtypes do not match"
    return "the weak types do not match"


def _value(x):
    """The concrete value behind an operand, or None when it has none (abstractly traced)."""
    if isinstance(x, Tracer):
        return x.val
    if isinstance(x, Boxed):
        return x._constant_value()
    return x


def _is_concrete(x) -> bool:
    return not isinstance(x, Tracer) or x.val is not None


# -- loops: carries keep one type -------------------------------------------------------------


def _carry_paths(init) -> list[str]:
    paths, _, _ = optree.tree_flatten_with_path(init, none_is_leaf=False, namespace=tree.NAMESPACE)
    return ["".join(f"[{p!r}]" for p in path) for path in paths]


def _fixed_carry(api: str, init, trace_with: Callable):
    """Trace a loop body until its carry keeps one type, as JAX does: a weakly typed input
    carry (a Python scalar) takes the type the body gives it, a weakly typed output is cast to
    the input's type; any other change of shape or dtype is an error. `trace_with(avals,
    casts)` traces the body with carry avals `avals`, casting carry outputs where `casts` has
    an aval, and returns (traced, carry output avals). Returns (traced, init leaves, avals)."""
    leaves, init_tree = tree.flatten(init)
    avals = [leaf_aval(x, api) for x in leaves]
    casts: list = [None] * len(avals)
    paths = _carry_paths(init)
    for _ in range(2 * len(avals) + 2):
        traced, outs = trace_with(avals, casts)
        changed = False
        for i, (a, b) in enumerate(zip(avals, outs)):
            if a == b:
                continue
            if a.shape == b.shape and a.weak_type:
                avals[i] = Aval(a.shape, b.dtype)  # promoted, as JAX promotes a weak carry
                leaves[i] = astype(leaves[i], b.dtype)
                casts[i] = None
            elif a.shape == b.shape and a.dtype == b.dtype and b.weak_type:
                casts[i] = a
            else:
                raise TypeError(
                    f"{api} body function carry input and carry output must have equal types, "
                    f"but they differ:\n\nThe input carry component carry{paths[i]} has type "
                    f"{a.str_short()} but the corresponding output carry component has type "
                    f"{b.str_short()}, so {_types_differ(a, b)}.\n\nRevise the function so that "
                    "all output types match the corresponding input types."
                )
            changed = True
        if not changed:
            return traced, leaves, avals
    raise AssertionError(f"internal error: {api}'s carry types did not settle")


def _check_carry_tree(api: str, init_tree, out_tree) -> None:
    if out_tree != init_tree:
        raise TypeError(
            f"{api} body function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\nThe input carry is {init_tree} but the carry "
            f"output is {out_tree}.\n\nRevise the function so that the carry output has the same "
            "pytree structure as the carry input."
        )


def _cast_outputs(flat, casts):
    return [o if c is None else astype(o, c.dtype) for o, c in zip(flat, casts)]


# -- scan -------------------------------------------------------------------------------------


def _check_unroll(unroll) -> None:
    if isinstance(unroll, bool):
        return
    if not isinstance(unroll, int | np.integer) or unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")


def _scan_length(xs_leaves, length) -> int:
    sizes = []
    for i, x in enumerate(xs_leaves):
        s = shape_of(x)
        if not s:
            raise ValueError(
                f"scan got a value with no leading axis to scan over: xs leaf {i} has shape ()"
            )
        sizes.append(s[0])
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, int | np.integer) or length < 0:
            raise ValueError(f"scan: length must be a non-negative int, got {length!r}")
        length = int(length)
        if sizes and any(s != length for s in sizes):
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with leading axis "
                f"sizes {sizes}."
            )
        return length
    if not sizes:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(set(sizes)) > 1:
        shown = ", ".join(str(s) for s in sizes)
        raise ValueError(f"scan got values with different leading axis sizes: {shown}.")
    return sizes[0]


def scan(f: Callable, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    """Loop `f(carry, x) -> (carry, y)` over the leading axis of `xs`, as `jax.lax.scan`.

    Returns `(final carry, stacked ys)`. `xs` may be None (then `length` gives the number of
    steps); `reverse` runs from the last element to the first (ys keep their positions).
    `unroll` is accepted for JAX compatibility and changes nothing: tracegrad never unrolls
    (the generated code is one Python `for` over a nested function of the body).
    """
    if not callable(f):
        raise TypeError("scan: f argument should be a callable.")
    _check_unroll(unroll)
    if type(reverse) is not bool:
        raise TypeError(f"scan: reverse must be a bool, got {reverse!r}")
    xs_leaves, xs_tree = tree.flatten(xs)
    length = _scan_length(xs_leaves, length)
    if jit_disabled() and length > 0:
        return _scan_python(f, init, xs, length, reverse)
    x_avals = [Aval(a.shape[1:], a.dtype) for a in (leaf_aval(x, "scan") for x in xs_leaves)]
    init_tree = tree.structure(init)
    y_tree = []

    def trace_with(carry_avals, casts):
        args_tree = structure_of(
            tree.unflatten(init_tree, carry_avals), tree.unflatten(xs_tree, x_avals)
        )

        def outputs(out):
            if not isinstance(out, tuple | list) or len(out) != 2:
                shown = out.aval.str_short() if isinstance(out, Tracer) else type(out).__name__
                raise TypeError(f"scan body output must be a pair, got {shown}.")
            carry, y = out
            c_flat, c_tree = tree.flatten(carry)
            _check_carry_tree("scan", init_tree, c_tree)
            y_flat, yt = tree.flatten(y)
            y_tree[:] = [yt]
            return _cast_outputs(c_flat, casts) + y_flat

        traced = trace_subgraph(f, args_tree, list(carry_avals) + x_avals, outputs)
        return traced, traced.graph.out_avals[: len(carry_avals)]

    traced, leaves, _ = _fixed_carry("scan", init, trace_with)
    out = cf.scan(
        *traced.consts, *leaves, *xs_leaves, body=traced.graph, n_consts=traced.n_consts,
        n_carry=len(leaves), length=length, reverse=reverse,
    )  # fmt: skip
    n = len(leaves)
    return tree.unflatten(init_tree, list(out[:n])), tree.unflatten(y_tree[0], list(out[n:]))


def _index(x, i: int):
    """`x[i]` on the leading axis, for values of any kind (arrays, tracers, tensors)."""
    s = shape_of(x)
    if isinstance(x, np.ndarray):
        return x[i]
    limits = (i + 1,) + s[1:]
    return reshape(slice_static(x, (i,) + (0,) * (len(s) - 1), limits), s[1:])


def _stack(values):
    """The values stacked on a new leading axis (arrays, tracers or tensors alike)."""
    if all(isinstance(v, np.ndarray | np.generic | float | int | complex | bool) for v in values):
        return np.stack(values)
    return concatenate([reshape(v, (1, *shape_of(v))) for v in values], 0)


def _scan_python(f, init, xs, length, reverse):
    """`scan` as the plain Python loop it means (under disable_jit)."""
    carry, ys = init, [None] * length
    for i in range(length - 1, -1, -1) if reverse else range(length):
        out = f(carry, tree.map(lambda x, i=i: _index(x, i), xs))
        if not isinstance(out, tuple | list) or len(out) != 2:
            raise TypeError(f"scan body output must be a pair, got {type(out).__name__}.")
        carry, ys[i] = out
    return carry, tree.map(lambda *v: _stack(v), *ys)


# -- map --------------------------------------------------------------------------------------


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 - jax.lax.map's name
    """`f` applied to each slice of `xs` along its leading axis, results stacked, as
    `jax.lax.map` (a scan without a carry). With `batch_size`, `f` is vmapped over batches of
    that many slices (a scan over batches, the remainder after it)."""
    if not callable(f):
        raise TypeError("map: f argument should be a callable.")
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"map: batch_size must be a positive int, got {batch_size!r}")
    leaves, xs_tree = tree.flatten(xs)
    n = _scan_length(leaves, None)
    n_batches, rest = divmod(n, batch_size)
    parts = []
    if n_batches:
        head = [
            reshape(
                slice_static(
                    x, (0,) * len(shape_of(x)), (n_batches * batch_size, *shape_of(x)[1:])
                ),
                (n_batches, batch_size, *shape_of(x)[1:]),
            )
            for x in leaves
        ]
        ys = scan(lambda _, x: ((), vmap(f)(x)), (), tree.unflatten(xs_tree, head))[1]
        parts.append(tree.map(lambda y: reshape(y, (n_batches * batch_size, *shape_of(y)[2:])), ys))
    if rest:
        tail = [
            slice_static(x, (n - rest,) + (0,) * (len(shape_of(x)) - 1), shape_of(x))
            for x in leaves
        ]
        parts.append(vmap(f)(tree.unflatten(xs_tree, tail)))
    if len(parts) == 1:
        return parts[0]
    return tree.map(lambda a, b: concatenate([a, b], 0), parts[0], parts[1])


# -- while_loop and fori_loop -----------------------------------------------------------------


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """`while cond_fun(val): val = body_fun(val)`, as `jax.lax.while_loop`.

    Beyond JAX, reverse mode works on a loop run on concrete values (outside jit: eagerly, or
    under `tg.grad`): its trip count is recorded and the loop is differentiated as a scan of
    that length. Under jit (or vmap, make_graph) reverse mode raises and names fori_loop and
    scan, whose trip counts are static; forward mode works everywhere.
    """
    if not (callable(cond_fun) and callable(body_fun)):
        raise TypeError("while_loop: body_fun and cond_fun arguments should be callable.")
    if jit_disabled():
        val = init_val
        try:
            while cond_fun(val):
                val = body_fun(val)
            return val
        except ConcretizationError:
            pass
    init_tree = tree.structure(init_val)
    conds = []

    def trace_with(avals, casts):
        args_tree = structure_of(tree.unflatten(init_tree, avals))
        c = trace_subgraph(cond_fun, args_tree, avals)
        pred = c.graph.out_avals
        if len(pred) != 1 or pred[0].shape != () or pred[0].dtype != np.bool_:
            shown = ", ".join(a.str_short() for a in pred)
            raise TypeError(
                f"cond_fun must return a boolean scalar, but got output type(s) [{shown}]."
            )
        conds[:] = [c]

        def outputs(out):
            flat, out_tree = tree.flatten(out)
            _check_carry_tree("while_loop", init_tree, out_tree)
            return _cast_outputs(flat, casts)

        b = trace_subgraph(body_fun, args_tree, avals, outputs)
        return b, b.graph.out_avals

    body, leaves, _ = _fixed_carry("while_loop", init_val, trace_with)
    cond = conds[0]
    operands = [*cond.consts, *body.consts, *leaves]
    trips = _trip_count(cond, body, leaves, operands)
    out = cf.while_loop(
        *operands, cond_graph=cond.graph, body=body.graph, n_cond_consts=cond.n_consts,
        n_consts=body.n_consts, trips=trips,
    )  # fmt: skip
    return tree.unflatten(init_tree, list(out))


def _trip_count(cond: Traced, body: Traced, leaves, operands) -> int | None:
    """The loop's trip count when it runs on concrete values that a derivative may flow
    through (tracers of a concrete trace, tensors): the loop is run here on the values and the
    count recorded, so reverse mode can run it backwards. None otherwise (under jit its
    values are abstract; on plain arrays nothing is differentiated)."""
    if not any(isinstance(x, Boxed) for x in operands):
        return None
    if not all(_is_concrete(x) for x in operands):
        return None
    vals = [_value(x) for x in operands]
    return count_trips(cond.graph, body.graph, cond.n_consts, body.n_consts, vals)


def _bound(x, name: str):
    dtype = dtype_of(x)
    if shape_of(x) != () or dtype.kind not in "iu":
        raise TypeError(
            f"fori_loop: {name} must be an integer scalar, got {getattr(x, 'aval', x)!r}"
        )
    return dtype


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll=None):
    """`for i in range(lower, upper): val = body_fun(i, val)`, as `jax.lax.fori_loop`.

    With concrete bounds (Python or NumPy integers, or values known while tracing) it is a
    scan of `upper - lower` steps, so reverse mode works under jit too; with traced bounds it
    is a while_loop. `unroll` is accepted for JAX compatibility (tracegrad never unrolls).
    """
    if not callable(body_fun):
        raise TypeError("fori_loop: body_fun argument should be callable.")
    lo_dtype, hi_dtype = _bound(lower, "lower"), _bound(upper, "upper")
    if lo_dtype != hi_dtype:
        lo_weak = isinstance(lower, int) or (isinstance(lower, Tracer) and lower.aval.weak_type)
        hi_weak = isinstance(upper, int) or (isinstance(upper, Tracer) and upper.aval.weak_type)
        if lo_weak == hi_weak or lo_dtype.kind != hi_dtype.kind:
            raise TypeError(
                "lower and upper arguments to fori_loop must have equal types, got "
                f"{lo_dtype.name} and {hi_dtype.name}"
            )
    if _is_concrete(lower) and _is_concrete(upper):
        lo, hi = int(np.asarray(_value(lower))), int(np.asarray(_value(upper)))
        if jit_disabled():
            val = init_val
            for i in range(lo, hi):
                val = body_fun(i, val)
            return val

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        return scan(step, (lo, init_val), None, length=max(hi - lo, 0))[0][1]
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError(
            "Can only use `unroll` in `fori_loop` if the loop bounds are statically known."
        )

    def cond_fun(carry):
        return carry[0] < carry[1]

    def body(carry):
        i, hi, val = carry
        return i + 1, hi, body_fun(i, val)

    return while_loop(cond_fun, body, (lower, upper, init_val))[2]


# -- cond and switch --------------------------------------------------------------------------


def _operands(operands, operand, api: str) -> tuple:
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(
            "if 'operand' keyword is passed then no positional operands can be passed, got "
            f"operand={operand!r} and positional operands {operands!r}"
        )
    return (operand,)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, as `jax.lax.cond`.

    `pred` is a bool scalar; a number is taken as `pred != 0` (as JAX does). Both functions
    are traced; only the one taken runs. Their outputs must agree in structure, shape and
    dtype. Under vmap with a batched predicate both run and each lane selects its result.
    """
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("cond: true_fun and false_fun arguments should be callable.")
    operands = _operands(operands, operand, "cond")
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or len(shape_of(pred)) != 0:
        what = f"type {type(pred)}" if isinstance(pred, Sequence) else f"shape {shape_of(pred)}."
        raise TypeError(f"Pred must be a scalar, got {pred} of {what}")
    dtype = leaf_aval(pred, "cond").dtype
    if dtype.kind != "b":
        if dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {dtype}.")
        pred = bind(not_equal_p, pred, 0) if isinstance(pred, Boxed) else pred != 0
    if jit_disabled() and _is_concrete(pred):
        return true_fun(*operands) if _value(pred) else false_fun(*operands)
    names = ("false_fun", "true_fun")
    return _switch(pred, (false_fun, true_fun), operands, names, "cond", reference=1)


def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
    """`branches[index](*operands)`, as `jax.lax.switch`; an `index` out of range is clamped
    into it (as JAX does): below 0 runs the first branch, past the end the last."""
    branches = tuple(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("switch: branches argument should be a sequence of callables.")
    operands = _operands(operands, operand, "switch")
    if len(shape_of(index)) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {shape_of(index)}.")
    dtype = leaf_aval(index, "switch").dtype
    if dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {dtype}")
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    if isinstance(index, Boxed):
        index = clip(index, 0, len(branches) - 1)
    else:
        index = min(max(int(index), 0), len(branches) - 1)
    if jit_disabled() and _is_concrete(index):
        return branches[int(np.asarray(_value(index)))](*operands)
    names = tuple(f"branch {k}" for k in range(len(branches)))
    return _switch(index, branches, operands, names, "switch")


def _switch(index, fns, operands, names, api: str, reference: int = 0):
    """`fns[index](*operands)` as a cond node; each function's outputs are checked against
    those of `fns[reference]` (true_fun's for cond, as JAX words its messages)."""
    flat, in_tree = tree.flatten(tuple(operands))
    avals = [leaf_aval(x, api) for x in flat]
    traced = [trace_subgraph(f, in_tree, avals) for f in fns]
    first = traced[0]
    for k in range(len(fns)):
        if k != reference:
            _check_branches(api, fns, names, traced, reference, k)
    traced = _strong_outputs(traced)
    consts, graphs = _joined_consts(traced)
    out = cf.cond(index, *consts, *flat, branches=graphs)
    return tree.unflatten(first.out_tree, list(out))


def _check_branches(api, fns, names, traced, r: int, k: int) -> None:
    a, b = traced[r], traced[k]
    n0, nk = names[r], names[k]
    where = f"{n0} is {_describe(fns[r])}\n{nk} is {_describe(fns[k])}"
    if a.out_tree != b.out_tree:
        raise TypeError(
            f"{api} branch outputs must have the same pytree structure, but they differ:\n\n"
            f"{where}\n\n{n0} output is {a.out_tree} but {nk} output is {b.out_tree}.\n\n"
            f"Revise {n0} and/or {nk} so that they have the same pytree structure."
        )
    for x, y in zip(a.graph.out_avals, b.graph.out_avals):
        if x.shape != y.shape or x.dtype != y.dtype:
            raise TypeError(
                f"{api} branches must have equal output types but they differ.\n\n{where}\n\n"
                f"The output of {n0} has type {x.str_short()} but the corresponding output of "
                f"{nk} has type {y.str_short()}, so {_types_differ(x, y)}.\n\n"
                f"Revise {n0} and/or {nk} so that all output types match."
            )


def _strong_outputs(traced: list[Traced]) -> list[Traced]:
    """Branches whose outputs differ only in weak type return the strong type (a Python
    scalar in one branch and an array in another give an array)."""
    avals = list(zip(*(t.graph.out_avals for t in traced)))
    want = [a[0] if all(x == a[0] for x in a) else a[0].strengthen() for a in avals]
    if all(t.graph.out_avals == tuple(want) for t in traced):
        return traced
    fixed = []
    for t in traced:
        g = t.graph

        def fn(*args, g=g):
            return [cast(o, a) for o, a in zip(eval_graph(g, list(args)), want)]

        fixed.append(Traced(trace_closed(fn, g.in_avals, g.name), t.consts, t.out_tree))
    return fixed


def _joined_consts(traced: list[Traced]):
    """One list of consts for all branches (each branch reads its own and ignores the rest),
    and each branch's graph taking them all, then the operands."""
    consts, seen = [], {}
    for t in traced:
        for c in t.consts:
            if id(c) not in seen:
                seen[id(c)] = len(consts)
                consts.append(c)
    graphs = []
    for t in traced:
        g, own = t.graph, {id(c): e for c, e in zip(t.consts, t.graph.inputs)}
        ins = []
        for c in consts:
            e = own.get(id(c))
            ins.append(e if e is not None else Edge(arg_node(leaf_aval(c, "cond")), 0))
        ins += list(g.inputs[t.n_consts :])
        graphs.append(Graph(tuple(ins), g.outputs, g.nodes, name=g.name))
    return consts, tuple(graphs)


__all__ = ["cond", "fori_loop", "map", "scan", "switch", "while_loop"]
