"""The JAX conveniences that go with traced control flow: `eval_shape`, `pure_callback` (host
NumPy code inside a traced program) and `debug_print` (`tg.debug.print`: values printed when the
program runs, from the interpreter and from generated code alike).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tracegrad import tree
from tracegrad.api.common import name_of, trace_function
from tracegrad.core import Boxed, Tracer, bind
from tracegrad.ir.types import Aval, aval_of
from tracegrad.primitives import control as cf
from tracegrad.transforms.host import VMAP_METHODS


def _as_aval(x) -> Aval:
    if isinstance(x, Aval):
        return x
    if isinstance(x, Tracer):
        return x.aval
    if isinstance(x, Boxed):
        v = np.asarray(x._constant_value())
        return Aval(v.shape, v.dtype)
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # jax.ShapeDtypeStruct, arrays, ...
        return Aval(tuple(x.shape), np.dtype(x.dtype), bool(getattr(x, "weak_type", False)))
    if isinstance(x, bool | int | float | complex):
        return aval_of(x)
    raise TypeError(
        f"eval_shape: arguments must be arrays, Python scalars or objects with .shape and "
        f".dtype (pytrees of them), got a {type(x).__name__}"
    )


def eval_shape(f: Callable, *args, **kwargs):
    """The shapes and dtypes `f(*args, **kwargs)` would return, as a pytree of `tg.Aval`
    (shape, dtype, weak_type: what `jax.eval_shape`'s ShapeDtypeStruct holds), computed by
    tracing `f` abstractly: nothing runs. Arguments may be arrays, Python scalars, `tg.Aval`s
    or anything with `.shape` and `.dtype`."""
    avals = tree.map(_as_aval, (tuple(args), dict(kwargs)))
    a, k = avals
    traced = trace_function(f, a, k, concrete=False, name=name_of(f))
    if traced.captured:
        raise TypeError(
            f"eval_shape({name_of(f)}): the function closes over values traced by an enclosing "
            "transformation; pass them as arguments instead"
        )
    g = traced.graph
    return tree.unflatten(g.out_tree, list(g.out_avals))


# -- pure_callback ----------------------------------------------------------------------------


def pure_callback(
    callback: Callable,
    result_shape_dtypes,
    *args,
    vmap_method: str | None = None,
    jvp: Callable | None = None,
    vjp: Callable | None = None,
    **kwargs,
):
    """Call the host function `callback(*args, **kwargs)` on NumPy arrays from inside a
    traced program, as `jax.pure_callback`: it runs when the program runs (eagerly, in the
    interpreter, in generated code), and must return arrays of `result_shape_dtypes` (a pytree
    of objects with `.shape` and `.dtype`). It must be pure: a traced program may run it any
    number of times, or not at all when its result is unused.

    Derivatives: tracegrad cannot see into `callback`, so differentiating through it raises,
    unless a rule is given (beyond JAX, which asks for custom_jvp), written with tracegrad's
    or NumPy's operations (so it traces and differentiates again):
      jvp(primals, tangents) -> tangents of the results, with `primals` and `tangents` tuples
        like `args` (a tangent is None where an argument has none);
      vjp(cotangents, *args) -> one cotangent per positional argument (None for none), with
        `cotangents` structured like the results.
    Keyword arguments reach the callback but take no derivative; pass a differentiated value
    positionally. `vmap_method` is JAX's: None (vmap raises), "sequential" (one call per
    example), "expand_dims" (one call, unbatched arguments with a size-1 leading axis),
    "broadcast_all" (one call, every argument with the full batch axis).
    """
    if not callable(callback):
        raise TypeError(f"pure_callback: callback must be callable, got {type(callback).__name__}")
    if vmap_method not in VMAP_METHODS:
        raise ValueError(
            f"vmap_method must be one of the allowed methods {list(VMAP_METHODS)}, but got: "
            f"{vmap_method}"
        )
    result_leaves, result_tree = tree.flatten(result_shape_dtypes)
    results = tuple(_as_aval(r).strengthen() for r in result_leaves)
    flat, in_tree = tree.flatten((tuple(args), dict(kwargs)))
    n_pos = len(tree.leaves(tuple(args)))
    if (jvp is not None or vjp is not None) and any(
        isinstance(x, Boxed) and np.dtype(_as_aval(x).dtype).kind in "fc" for x in flat[n_pos:]
    ):
        raise TypeError(
            "pure_callback: a derivative rule is given, but a keyword argument is a traced "
            "float value, whose derivative the rule cannot see; pass it positionally"
        )

    def host(*leaves):
        a, k = tree.unflatten(in_tree, [np.asarray(v) if _is_array(v) else v for v in leaves])
        return tree.leaves(callback(*a, **k))

    out = bind(
        cf.pure_callback_p,
        *flat,
        callback=host,
        results=results,
        vmap_method=vmap_method,
        jvp_rule=None if jvp is None else _flat_jvp(jvp, in_tree, n_pos, result_tree),
        vjp_rule=None if vjp is None else _flat_vjp(vjp, in_tree, n_pos, result_tree, len(flat)),
    )
    return tree.unflatten(result_tree, list(out))


def _is_array(v) -> bool:
    return isinstance(v, np.ndarray | np.generic)


def _flat_jvp(jvp, in_tree, n_pos, result_tree):
    def rule(primals, tangents):
        a, _ = tree.unflatten(in_tree, list(primals))
        ta, _ = tree.unflatten(in_tree, list(tangents))
        out = jvp(tuple(a), tuple(ta))
        return tuple(_leaves_like(out, result_tree, "jvp"))

    return rule


def _flat_vjp(vjp, in_tree, n_pos, result_tree, n_flat):
    def rule(cotangents, primals):
        a, _ = tree.unflatten(in_tree, list(primals))
        cts = tree.unflatten(result_tree, list(cotangents))
        bars = vjp(cts, *a)
        if not isinstance(bars, tuple | list) or len(bars) != len(a):
            raise TypeError(
                f"pure_callback: vjp must return one cotangent per positional argument "
                f"({len(a)}), got {bars!r:.80}"
            )
        flat = []
        for arg, bar in zip(a, bars):
            n = len(tree.leaves(arg))
            flat += [None] * n if bar is None else tree.leaves(bar)
        return tuple(flat) + (None,) * (n_flat - len(flat))

    return rule


def _leaves_like(out, structure, what):
    leaves = tree.leaves(out)
    if len(leaves) != structure.num_leaves:
        raise TypeError(
            f"pure_callback: {what} returned {len(leaves)} values for {structure.num_leaves} "
            "results"
        )
    return leaves


# -- debug.print ------------------------------------------------------------------------------


def debug_print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:
    """Print `fmt.format(*args, **kwargs)` with the values of traced arrays, when the program
    runs, as `jax.debug.print`: at once on concrete values (eagerly, under `tg.grad`), and
    each time a jitted program runs, from the generated code too (the print is a node that
    dead-code elimination keeps though nothing reads it). Under vmap it prints the batch
    together; a value may print more than once where a transformation runs it again (the
    forward half of a gradient, say). `ordered` is accepted for JAX compatibility: prints run
    in program order, always."""
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: fmt must be a string, got {type(fmt).__name__}")
    flat, treedef = tree.flatten((tuple(args), dict(kwargs)))
    out = bind(cf.debug_print_p, *flat, fmt=fmt, treedef=treedef)
    cf.keep_effect(out)


__all__ = ["debug_print", "eval_shape", "pure_callback"]
