"""`checkpoint` (alias `remat`), `checkpoint_policies` and `checkpoint_name`, as JAX's.

`checkpoint(f)` traces `f` into one `checkpoint` node: reverse mode keeps only its inputs (and
the residuals its policy saves) and recomputes the rest in the backward graph, trading compute
for memory (`tracegrad.transforms.custom_checkpoint`). Called on plain arrays outside any
transform, `f` simply runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from tracegrad import tree
from tracegrad.api.common import name_of
from tracegrad.api.subgraphs import leaf_aval, trace_subgraph
from tracegrad.core import Boxed, current_trace
from tracegrad.primitives import custom as cp
from tracegrad.transforms.custom_checkpoint import allows, bind_checkpoint


class Policy:
    """A named rematerialization policy: `param` is what the checkpoint node holds (plain
    values, so its graph prints, serializes and generates code). Calling it answers JAX's
    question for one operation, `policy(prim, *avals, **params) -> saveable?`."""

    def __init__(self, param: tuple, doc: str):
        self.param = param
        self.__doc__ = doc

    def __call__(self, prim, *avals, **params) -> bool:
        name = params.get("name") if prim is cp.checkpoint_name_p else None
        return allows(self.param, prim, avals, params, name)

    def __eq__(self, other) -> bool:
        return isinstance(other, Policy) and other.param == self.param

    def __hash__(self) -> int:
        return hash(self.param)

    def __repr__(self) -> str:
        kind, *rest = self.param
        return f"checkpoint_policies.{kind}" + (f"{tuple(rest[0])!r}" if rest else "")


def _names(kind: str, names) -> Policy:
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"checkpoint_policies.{kind}: names must be strings, got {n!r}")
    return Policy((kind, tuple(names)), f"Save the values marked by checkpoint_name: {kind}.")


class checkpoint_policies:  # noqa: N801 - JAX's name (a module there)
    """JAX's `jax.checkpoint_policies`: which residuals reverse mode may keep."""

    nothing_saveable = Policy(("nothing_saveable",), "Recompute everything (the default).")
    everything_saveable = Policy(("everything_saveable",), "Save everything (no remat).")
    dots_saveable = Policy(("dots_saveable",), "Save the results of matrix products.")
    checkpoint_dots = dots_saveable
    dots_with_no_batch_dims_saveable = Policy(
        ("dots_with_no_batch_dims_saveable",), "Save the results of products of 2-D operands."
    )
    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names: str) -> Policy:
        return _names("save_only_these_names", names)

    @staticmethod
    def save_any_names_but_these(*names: str) -> Policy:
        return _names("save_any_names_but_these", names)

    @staticmethod
    def save_anything_except_these_names(*names: str) -> Policy:
        return _names("save_anything_except_these_names", names)


def _policy_param(policy):
    if policy is None:
        return checkpoint_policies.nothing_saveable.param
    if isinstance(policy, Policy):
        return policy.param
    if callable(policy):
        return policy  # a user's policy: the graph then holds a callable (no JSON)
    raise TypeError(f"checkpoint: policy must be None or a policy function, got {policy!r}")


def _static(static_argnums, nargs: int, name: str) -> tuple[int, ...]:
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    out = []
    for i in nums:
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not -nargs <= i < nargs:
            raise ValueError(
                f"checkpoint({name}): static_argnums {i!r} is out of range for {nargs} "
                "positional arguments"
            )
        out.append(int(i) % nargs)
    return tuple(out)


def checkpoint(
    fun: Callable,
    *,
    prevent_cse: bool = True,
    policy: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
) -> Callable:
    """`fun` whose residuals reverse mode recomputes instead of keeping (`jax.checkpoint`).

    Args:
      fun: a function of arrays (pytrees of them).
      prevent_cse: accepted for JAX compatibility; the recomputation is always kept apart
        from the forward pass (simplification never merges across a checkpoint).
      policy: which residuals may be kept (`tg.checkpoint_policies`); None keeps none.
      static_argnums: positional arguments that are Python values, not arrays (they may be
        used in Python control flow).
    Returns:
      A function with `fun`'s signature and values.
    """
    param = _policy_param(policy)
    fname = name_of(fun)

    @functools.wraps(fun, updated=())
    def checkpointed(*args, **kwargs):
        nums = _static(static_argnums, len(args), fname)
        static = {i: args[i] for i in nums}
        dyn = (tuple(a for i, a in enumerate(args) if i not in static), dict(kwargs))
        leaves, in_tree = tree.flatten(dyn)
        if current_trace() is None and not any(isinstance(x, Boxed) for x in leaves):
            return fun(*args, **kwargs)
        avals = [leaf_aval(x, f"checkpoint({fname})") for x in leaves]

        def run(pos, kw):
            it = iter(pos)
            full = [static[i] if i in static else next(it) for i in range(len(args))]
            return fun(*full, **kw)

        run.__name__ = fname
        traced = trace_subgraph(run, in_tree, avals)
        out = bind_checkpoint(traced.graph, list(traced.consts) + list(leaves), param)
        return tree.unflatten(traced.out_tree, out)

    return checkpointed


remat = checkpoint


def checkpoint_name(x, name: str):
    """`x`, marked `name` for `checkpoint_policies.save_only_these_names` (and the other
    name policies): a no-op outside a checkpointed function."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    return tree.map(lambda v: cp.checkpoint_name(v, name) if isinstance(v, Boxed) else v, x)


__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]
