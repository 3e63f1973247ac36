"""`custom_jvp` and `custom_vjp` with JAX's decorator API: a function with rules of its own.

The decorated function is traced into a sub-graph and bound as one `custom_jvp_call` or
`custom_vjp_call` node; the node holds rule objects (`tracegrad.api.custom_rules`), which call
the user's rules with pytrees as JAX does and check what they return (JAX's messages). Called
on plain arrays outside any transform, the function simply runs. Beyond JAX, a custom_vjp
function is forward-differentiable (its bwd rule is transposed: `tracegrad.transforms.custom`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence

import numpy as np

from tracegrad import tree
from tracegrad.api.common import name_of
from tracegrad.api.custom_rules import (
    CustomVJPPrimal,
    JvpRule,
    SymbolicZero,
    VjpRules,
    merge_args,
    value_aval,
)
from tracegrad.api.subgraphs import leaf_aval, trace_subgraph
from tracegrad.core import Boxed, bind, current_trace
from tracegrad.primitives import custom as cp
from tracegrad.primitives.elementwise import stop_gradient as _stop_gradient
from tracegrad.transforms.control_common import zeros

# -- arguments ---------------------------------------------------------------------------------


def _resolve_kwargs(fun, args, kwargs, kind: str, name: str) -> tuple:
    """Keyword arguments as positional ones (JAX's custom functions take positional ones)."""
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        bound.apply_defaults()
    except TypeError as err:
        raise TypeError(
            f"The input arguments to the {kind}-decorated function {name} could not be "
            f"resolved to positional-only arguments. Binding failed with the error:\n{err}"
        ) from None
    if bound.kwargs:
        raise TypeError(
            f"The input arguments to the {kind}-decorated function {name} could not be "
            "resolved to positional-only arguments (keyword-only parameters)"
        )
    return tuple(bound.args)


def _nondiff(argnums, nargs: int, kind: str, name: str) -> tuple[int, ...]:
    nums = []
    for i in argnums:
        if isinstance(i, bool) or not isinstance(i, int | np.integer):
            raise TypeError(f"{kind} {name}: nondiff_argnums must be ints, got {i!r}")
        if not -nargs <= i < nargs:
            raise ValueError(
                f"{kind} {name}: nondiff_argnums {i} is out of range for {nargs} arguments"
            )
        nums.append(int(i) % nargs)
    return tuple(sorted(set(nums)))


def _named(fun, static: dict) -> Callable:
    """`fun` of its differentiable arguments (the sub-graph keeps `fun`'s name)."""

    def call(*dyn):
        return fun(*merge_args(static, dyn))

    call.__name__ = name_of(fun)
    return call


def _tracing(leaves) -> bool:
    return current_trace() is not None or any(isinstance(x, Boxed) for x in leaves)


# -- custom_jvp ---------------------------------------------------------------------------------


class custom_jvp:  # noqa: N801 - JAX's name
    """A function with a custom forward-mode rule, as `jax.custom_jvp`.

    `f = custom_jvp(fun, nondiff_argnums=())`, then `f.defjvp(rule)` with
    `rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)` (primals and tangents
    are tuples of the other arguments). Reverse mode transposes the rule's tangent map, which
    must therefore be linear in the tangents (as JAX requires). With `symbolic_zeros=True` the
    rule receives `SymbolicZero` for tangents that are zero, and may return one.
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument, `jvp_i(g_i, primal_out, *primals) -> contribution`; None
        for an argument with no derivative. The tangent is the sum of the contributions."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            out = self.fun(*primals)
            parts = [f(t, out, *primals) for f, t in zip(jvps, tangents) if f is not None]
            if not parts:
                return out, tree.map(lambda o: zeros(value_aval(o)), out)
            return out, functools.reduce(lambda a, b: tree.map(np.add, a, b), parts)

        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = name_of(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_jvp", name)
        nums = _nondiff(self.nondiff_argnums, len(args), "custom_jvp", name)
        # a traced non-differentiable argument is a constant of the rules (JAX stops its
        # gradient the same way)
        static = {
            i: tree.map(lambda x: _stop_gradient(x) if isinstance(x, Boxed) else x, args[i])
            for i in nums
        }
        dyn = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, in_tree = tree.flatten(dyn)
        if not _tracing(leaves):
            return self.fun(*args)
        avals = [leaf_aval(x, f"custom_jvp function {name}") for x in leaves]
        traced = trace_subgraph(_named(self.fun, static), in_tree, avals)
        rule = JvpRule(self, static, in_tree, avals, traced.out_tree, traced.graph.out_avals)
        out = bind(
            cp.custom_jvp_call_p, *traced.consts, *leaves, call=traced.graph, jvp_rule=rule,
            n_consts=traced.n_consts,
        )  # fmt: skip
        return tree.unflatten(traced.out_tree, list(out))


# -- custom_vjp ---------------------------------------------------------------------------------


class custom_vjp:  # noqa: N801 - JAX's name
    """A function with a custom reverse-mode rule, as `jax.custom_vjp`.

    `f = custom_vjp(fun, nondiff_argnums=())`, then `f.defvjp(fwd, bwd)`:
    `fwd(*args) -> (out, residuals)` and `bwd(*nondiff_args, residuals, g) -> one cotangent
    per differentiable argument` (a tuple; None for none). Non-differentiable arguments must
    not be traced values (JAX's rule). Beyond JAX, `jvp`, `jacfwd` and `hessian` work: bwd is
    linear in `g`, and tracegrad transposes it (bwd must then be written with tracegrad's or
    NumPy's operations on the values it is given, so it traces).
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        functools.update_wrapper(self, fun, updated=())
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = None
        self.bwd = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = name_of(self.fun)
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve_kwargs(self.fun, args, kwargs, "custom_vjp", name)
        nums = _nondiff(self.nondiff_argnums, len(args), "custom_vjp", name)
        static = {i: args[i] for i in nums}
        for v in static.values():
            if any(isinstance(x, Boxed) for x in tree.leaves(v)):
                raise TypeError(
                    "Found a tracegrad tracer passed as an argument to a custom_vjp function in "
                    "a position indicated by nondiff_argnums as non-differentiable. Tracers "
                    "cannot be passed as non-differentiable arguments to custom_vjp functions; "
                    "instead, nondiff_argnums should only be used for arguments that can't be or "
                    "contain tracers, e.g. function-valued arguments. In particular, "
                    "array-valued arguments should typically not be indicated as "
                    "nondiff_argnums."
                )
        dyn = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, in_tree = tree.flatten(dyn)
        if not _tracing(leaves):
            return self.fun(*args)
        avals = [leaf_aval(x, f"custom_vjp function {name}") for x in leaves]
        traced = trace_subgraph(_named(self.fun, static), in_tree, avals)
        rules = VjpRules(self, static, in_tree, avals, traced.out_tree, traced.graph.out_avals)
        out = bind(
            cp.custom_vjp_call_p, *traced.consts, *leaves, call=traced.graph, vjp_rules=rules,
            n_consts=traced.n_consts,
        )  # fmt: skip
        return tree.unflatten(traced.out_tree, list(out))


__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp"]
