"""The rule objects a `custom_jvp_call` or `custom_vjp_call` node holds (made by
`tracegrad.api.custom_derivatives`): they call the user's rules on pytrees, as JAX does, check
what the rules return (JAX's messages), and wrap themselves in `vmap` under batching.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import optree

from tracegrad import tree
from tracegrad.api.batching import vmap
from tracegrad.api.common import name_of
from tracegrad.core import Boxed, Tracer
from tracegrad.ir.types import Aval, is_float
from tracegrad.primitives.elementwise import astype
from tracegrad.transforms.control_common import zeros
from tracegrad.transforms.custom import aval_like, unbatch_cotangent


class SymbolicZero:
    """A zero tangent or cotangent that is not materialized (JAX's `SymbolicZero`): rules
    defined with `symbolic_zeros=True` receive one where nothing flows, and may return one."""

    def __init__(self, aval: Aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)

    def __repr__(self) -> str:
        return f"SymbolicZero({self.aval.str_short()})"


class CustomVJPPrimal:
    """A primal argument of a custom_vjp fwd rule under `symbolic_zeros=True` (JAX's):
    `value`, and `perturbed`, whether a derivative may flow into it (True for floats)."""

    def __init__(self, value, perturbed: bool):
        self.value, self.perturbed = value, perturbed

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


# -- avals and messages ------------------------------------------------------------------------


def value_aval(x) -> Aval:
    """The aval of what a user's rule returned (a SymbolicZero's own)."""
    return x.aval if isinstance(x, SymbolicZero) else aval_like(x)


def merge_args(static: dict, dyn: Sequence) -> list:
    """The positional arguments: `static` (position -> value) with `dyn` in the other places."""
    it = iter(dyn)
    return [static[i] if i in static else next(it) for i in range(len(static) + len(dyn))]


def _typed(tree_def, leaves) -> str:
    return str(tree.unflatten(tree_def, [value_aval(x).str_short() for x in leaves])).replace(
        "'", ""
    )


def _same_type(a: Aval, b: Aval) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _keystrs(structure) -> list[str]:
    """JAX's `keystr` of each leaf of the arguments tuple: `[0]`, `[1]['w']`."""
    dummy = tree.unflatten(structure, [0] * structure.num_leaves)
    paths, _, _ = optree.tree_flatten_with_path(dummy, none_is_leaf=False, namespace=tree.NAMESPACE)
    return ["".join(f"[{p!r}]" for p in path) for path in paths]


def _fitted(v, aval: Aval):
    """A derivative `v` of the right shape given as a weakly typed scalar: of `aval`'s dtype."""
    dtype = aval.strengthen().dtype
    if isinstance(v, Tracer):
        return v if v.dtype == dtype else astype(v, dtype)
    if isinstance(v, Boxed):
        return v
    return np.asarray(v, dtype)


# -- custom_jvp ---------------------------------------------------------------------------------


class JvpRule:
    """The node's view of a custom_jvp rule: flat primals and tangents (None for zero) in,
    flat primal and tangent outputs (None for zero) out, checked as JAX checks them."""

    def __init__(self, owner, static: dict, in_tree, in_avals, out_tree, out_avals):
        self.owner, self.static = owner, static
        self.in_tree, self.in_avals = in_tree, list(in_avals)
        self.out_tree, self.out_avals = out_tree, list(out_avals)
        self.name = name_of(owner.fun)
        self.rule_name = self.__name__ = name_of(owner.jvp)
        self.graphs: dict = {}  # traced forms of the rule, per signature (transposition)

    def _tangent(self, t, aval: Aval):
        if t is not None:
            return t
        return SymbolicZero(aval.strengthen()) if self.owner.symbolic_zeros else zeros(aval)

    def __call__(self, primals: list, tangents: list):
        ts = [self._tangent(t, a) for t, a in zip(tangents, self.in_avals)]
        py_p = tree.unflatten(self.in_tree, list(primals))
        py_t = tree.unflatten(self.in_tree, ts)
        nondiff = [self.static[i] for i in sorted(self.static)]
        pair = self.owner.jvp(*nondiff, tuple(py_p), tuple(py_t))
        where = f"Custom JVP rule {self.rule_name} for function {self.name}"
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise TypeError(
                f"{where} must produce a pair (list or tuple of length two) representing "
                f"primal and tangent outputs, but got {pair}."
            )
        p_flat, p_tree = tree.flatten(pair[0])
        t_flat, t_tree = tree.flatten(pair[1])
        if p_tree != t_tree:
            raise TypeError(
                f"{where} must produce primal and tangent outputs with equal container (pytree) "
                f"structures, but got {p_tree} and {t_tree} respectively."
            )
        self._check_primals(where, p_flat, p_tree)
        return p_flat, [self._checked_tangent(t, p) for t, p in zip(t_flat, self.out_avals)]

    def _check_primals(self, where: str, p_flat, p_tree) -> None:
        intro = (
            f"{where} must produce a pair (list or tuple of length two) where the first element "
            "represents the primal output (equal in value to the output of the "
            f"custom_jvp-decorated function {self.name}, "
        )
        fun_types = str(tree.unflatten(self.out_tree, [a.str_short() for a in self.out_avals]))
        fun_types = fun_types.replace("'", "")
        if p_tree != self.out_tree:
            raise TypeError(
                f"{intro}and in particular of the same container/pytree structure), but instead "
                "the JVP rule output's first element had container/pytree structure:\n    "
                f"{_typed(p_tree, p_flat)}\nwhile the custom_jvp-decorated function "
                f"{self.name} had output container/pytree structure:\n    {fun_types}."
            )
        if not all(_same_type(value_aval(p), a) for p, a in zip(p_flat, self.out_avals)):
            raise TypeError(
                f"{intro}and in particular with leaves of the same shape/dtype), but instead the "
                f"JVP rule output's first element had shapes/dtypes of:\n    "
                f"{_typed(p_tree, p_flat)}\nwhile the custom_jvp-decorated function "
                f"{self.name} had output shapes/dtypes of:\n    {fun_types}"
            )

    def _checked_tangent(self, t, primal: Aval):
        if not is_float(primal.dtype):
            return None  # an integer output carries no derivative
        want = primal.strengthen()
        got = value_aval(t)
        weak_scalar = got.weak_type and got.shape == want.shape
        if not weak_scalar and not _same_type(got.strengthen(), want):
            raise TypeError(
                "Custom JVP rule must produce primal and tangent outputs with corresponding "
                f"shapes and dtypes. Expected {want.str_short()} (tangent type of "
                f"{want.str_short()}) but got {got.strengthen().str_short()}."
            )
        if isinstance(t, SymbolicZero):
            return None
        return _fitted(t, want) if weak_scalar else t

    def batched(self, mask: Sequence[bool], size: int) -> BatchedJvpRule:
        return BatchedJvpRule(self, tuple(mask), size)

    def __repr__(self) -> str:
        return f"custom_jvp({self.name}, jvp={self.rule_name})"


class BatchedJvpRule:
    """A custom_jvp rule under vmap: the rule vmapped over the arguments marked in `mask`
    (batch axis first); every output batched."""

    def __init__(self, inner, mask: tuple, size: int):
        self.inner, self.mask, self.size = inner, mask, size
        self.name = inner.name
        self.graphs: dict = {}

    def __call__(self, primals: list, tangents: list):
        idx = [i for i, t in enumerate(tangents) if t is not None]
        n = len(primals)

        def per_example(*xs):
            ts: list = [None] * n
            for i, t in zip(idx, xs[n:]):
                ts[i] = t
            outs, touts = self.inner(list(xs[:n]), ts)
            return list(outs), list(touts)

        axes = [0 if b else None for b in self.mask] + [0 if self.mask[i] else None for i in idx]
        run = vmap(per_example, in_axes=tuple(axes), axis_size=self.size)
        return run(*primals, *[tangents[i] for i in idx])

    def batched(self, mask, size: int) -> BatchedJvpRule:
        return BatchedJvpRule(self, tuple(mask), size)

    def __repr__(self) -> str:
        return f"vmap({self.inner!r})"


# -- custom_vjp ---------------------------------------------------------------------------------


class VjpRules:
    """The node's view of a custom_vjp's rules, on flat values: `fwd(args) -> (outs,
    residuals, residual tree)`, `bwd(residuals, residual tree, cotangents) -> one cotangent per
    argument leaf (None for none)`, each checked as JAX checks it."""

    def __init__(self, owner, static: dict, in_tree, in_avals, out_tree, out_avals):
        self.owner, self.static = owner, static
        self.in_tree, self.in_avals = in_tree, list(in_avals)
        self.out_tree, self.out_avals = out_tree, list(out_avals)
        self.name = name_of(owner.fun)
        self.graphs: dict = {}  # bwd traced per signature (forward mode transposes it)
        self.arg_trees = [tree.structure(a) for a in tree.unflatten(in_tree, self.in_avals)]
        self.keystrs = _keystrs(in_tree)

    def _nondiff(self) -> list:
        return [self.static[i] for i in sorted(self.static)]

    def fwd(self, args: list):
        if self.owner.symbolic_zeros:
            args = [CustomVJPPrimal(x, is_float(a.dtype)) for x, a in zip(args, self.in_avals)]
        dyn = tree.unflatten(self.in_tree, list(args))
        pair = self.owner.fwd(*merge_args(self.static, dyn))
        fwd_name, f = name_of(self.owner.fwd), self.name
        intro = f"Custom VJP fwd rule {fwd_name} for function {f} must produce a pair (list or "
        residuals = (
            "(equal to the output of the custom_vjp-decorated function "
            f"{f}) and the second element represents residuals (i.e. values stored from the "
            "forward pass for use on the backward pass), but "
        )
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise TypeError(
                f"{intro}tuple of length two) where the first element represents the primal "
                f"output {residuals.replace('(equal to the output', '(equal to those')}"
                f"instead of a pair the fwd rule {fwd_name} produced {pair}."
            )
        outs, out_tree = tree.flatten(pair[0])
        fun_types = str(tree.unflatten(self.out_tree, [a.str_short() for a in self.out_avals]))
        fun_types = fun_types.replace("'", "")
        if out_tree != self.out_tree:
            raise TypeError(
                f"{intro}tuple of length two) where the first element represents the primal "
                f"output {residuals}instead the fwd rule output's first element had "
                f"container/pytree structure:\n    {_typed(out_tree, outs)}\nwhile the "
                f"custom_vjp-decorated function {f} had output container/pytree structure:\n"
                f"    {fun_types}."
            )
        if not all(_same_type(value_aval(o), a) for o, a in zip(outs, self.out_avals)):
            raise TypeError(
                f"{intro}tuple of length two) where the first element represents the primal "
                f"output {residuals}instead the fwd rule output's first element had "
                f"shapes/dtypes of:\n    {_typed(out_tree, outs)}\nwhile the "
                f"custom_vjp-decorated function {f} had output shapes/dtypes of:\n    {fun_types}"
            )
        res, res_tree = tree.flatten(pair[1])
        return outs, res, res_tree

    def _cotangent(self, c, aval: Aval):
        if c is not None:
            return c
        return SymbolicZero(aval.strengthen()) if self.owner.symbolic_zeros else zeros(aval)

    def bwd(self, res: list, res_tree, cts: list) -> list:
        """bwd on flat residuals and output cotangents (None: zero, materialized unless the
        rule takes symbolic zeros)."""
        cts = [self._cotangent(c, a) for c, a in zip(cts, self.out_avals)]
        py_res = tree.unflatten(res_tree, list(res))
        py_cts = tree.unflatten(self.out_tree, list(cts))
        got = self.owner.bwd(*self._nondiff(), py_res, py_cts)
        n_args = len(self.arg_trees)
        if isinstance(got, list) and len(got) == n_args:
            got = tuple(got)
        flat = self._flat_cotangents(got, n_args)
        return [self._checked(c, a, k) for c, a, k in zip(flat, self.in_avals, self.keystrs)]

    def _flat_cotangents(self, got, n_args: int) -> list:
        def wrong():
            return TypeError(
                "Custom VJP bwd rule must produce an output with the same container (pytree) "
                "structure as the args tuple of the primal function, and in particular must "
                "produce a tuple of length equal to the number of arguments to the primal "
                f"function, but got bwd output structure {tree.structure(got)} for primal input "
                f"structure {self.in_tree}."
            )

        if not isinstance(got, tuple) or len(got) != n_args:
            raise wrong()
        flat: list = []
        for ct, structure in zip(got, self.arg_trees):
            if ct is None:
                flat += [None] * structure.num_leaves
                continue
            leaves, ct_tree = tree.flatten(ct)
            if ct_tree != structure:
                raise wrong()
            flat += leaves
        return flat

    def _checked(self, ct, aval: Aval, keystr: str):
        if ct is None or not is_float(aval.dtype):
            return None
        got = value_aval(ct)
        if isinstance(ct, SymbolicZero):
            if not _same_type(got.strengthen(), aval.strengthen()):
                raise ValueError(
                    "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does not "
                    f"match the corresponding input tangent shape/dtype: at output{keystr} the "
                    f"SymbolicZero had shape/dtype {got.str_short()} while the corresponding "
                    f"input had shape/dtype {aval.str_short()}. Consider just returning a None "
                    "here instead of a SymbolicZero object."
                )
            return None
        if got.weak_type and got.shape == aval.shape:
            return _fitted(ct, aval)
        if not _same_type(got, aval.strengthen()):
            raise ValueError(
                "Custom VJP bwd rule must produce an output with the same type as the args "
                f"tuple of the primal function, but at output{keystr} the bwd rule produced an "
                f"output of type {got.str_short()} corresponding to an input of type "
                f"{aval.str_short()}"
            )
        return ct

    def batched(self, mask, size: int) -> BatchedVjpRules:
        return BatchedVjpRules(self, tuple(mask), size)

    def __repr__(self) -> str:
        o = self.owner
        return f"custom_vjp({self.name}, fwd={name_of(o.fwd)}, bwd={name_of(o.bwd)})"


class BatchedVjpRules:
    """custom_vjp rules under vmap: fwd and bwd vmapped; the cotangent of an unbatched
    argument sums over the batch."""

    def __init__(self, inner, mask: tuple, size: int):
        self.inner, self.mask, self.size = inner, mask, size
        self.name = inner.name
        self.in_avals = inner.in_avals
        self.out_avals = [Aval((size, *a.shape), a.dtype) for a in inner.out_avals]
        self.graphs: dict = {}

    def fwd(self, args: list):
        res_tree = []

        def per_example(*xs):
            outs, res, t = self.inner.fwd(list(xs))
            res_tree[:] = [t]
            return list(outs), list(res)

        axes = tuple(0 if b else None for b in self.mask)
        outs, res = vmap(per_example, in_axes=axes, axis_size=self.size)(*args)
        return outs, res, res_tree[0]

    def bwd(self, res: list, res_tree, cts: list) -> list:
        n = len(res)

        def per_example(*xs):
            return list(self.inner.bwd(list(xs[:n]), res_tree, list(xs[n:])))

        cts = [zeros(a) if c is None else c for c, a in zip(cts, self.out_avals)]
        bars = vmap(per_example, in_axes=0, axis_size=self.size)(*res, *cts)
        return [unbatch_cotangent(b, m, a) for b, m, a in zip(bars, self.mask, self.in_avals)]

    def batched(self, mask, size: int) -> BatchedVjpRules:
        return BatchedVjpRules(self, tuple(mask), size)

    def __repr__(self) -> str:
        return f"vmap({self.inner!r})"


__all__ = [
    "BatchedJvpRule",
    "BatchedVjpRules",
    "CustomVJPPrimal",
    "JvpRule",
    "SymbolicZero",
    "VjpRules",
]
