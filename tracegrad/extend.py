"""`tracegrad.extend`: define new primitives the way the built-in ones are defined.

A primitive is one block: `Primitive(name, impl=..., shape=..., jvp=..., vjp=..., batch=...,
emit=...)` with the rule protocol of `tracegrad.ir.primitive` (DESIGN.md §2); `.bind(*arrays,
**params)` applies it. Rules written with `tracegrad.numpy` (or plain `np.*` calls, which reach
it on traced values) differentiate again, so a new primitive works under `grad` of any order,
`jvp`, `vmap`, `jit` (its `emit` text appears in the generated source; without `emit` the code
generator calls its `impl`), printing, `ir.dumps`/`loads` (found by name while it is
defined) and the PyTorch-style tensors. See docs/extending.md for a worked example.

For code ported from HIPS autograd, `primitive`, `defvjp`, `defjvp` (and their `_argnum`
forms, `def_linear`, `notrace_primitive`) are a thin layer over the same `Primitive`: the
decorated function becomes a primitive whose rules are the ones registered for it.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable

import numpy as np

import tracegrad.numpy as tnp
from tracegrad.core import Boxed, Tracer, bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import (
    READS_ALL,
    READS_INDICES,
    READS_INPUTS,
    READS_NOTHING,
    READS_OUTPUT,
    Primitive,
    lookup,
    per_input,
    rule_for,
    unregister,
)
from tracegrad.ir.types import Aval, aval_of, shape_of
from tracegrad.primitives.batching import batch_size
from tracegrad.primitives.batching import elementwise_batch as _elementwise_batch
from tracegrad.primitives.broadcasting import unbroadcast
from tracegrad.primitives.views import move_to_front

__all__ = [
    "READS_ALL",
    "READS_INDICES",
    "READS_INPUTS",
    "READS_NOTHING",
    "READS_OUTPUT",
    "Aval",
    "Layout",
    "Primitive",
    "def_linear",
    "defjvp",
    "defjvp_argnum",
    "defvjp",
    "defvjp_argnum",
    "elementwise_batch",
    "lookup",
    "loop_batch",
    "notrace_primitive",
    "per_input",
    "primitive",
    "rule_for",
    "unbroadcast",
]

#: `batch=elementwise_batch`: the batching rule of an elementwise primitive with NumPy
#: broadcasting (batch axes moved to the front, the primitive applied once to the batch).
elementwise_batch = rule_for(_elementwise_batch)


def _loop_batch(prim):
    ref = weakref.ref(prim)

    def batch(args, dims, **params):
        p = ref()
        size = batch_size(args, dims)
        fronts = [a if d is None else move_to_front(a, d) for a, d in zip(args, dims)]
        if size == 0:  # no example to run: zeros of the per-example output shapes
            avals = [_example_aval(a, d) for a, d in zip(args, dims)]
            outs = p.results(p.shape(*avals, **params))
            zeros = [np.zeros((0,) + a.shape, a.dtype) for a in outs]
            return p.result(zeros), p.result([0] * len(zeros))
        rows = []
        for b in range(size):
            example = [a if d is None else a[b] for a, d in zip(fronts, dims)]
            rows.append(p.results(bind(p, *example, **params)))
        stacked = [tnp.stack([row[k] for row in rows]) for k in range(len(rows[0]))]
        return p.result(stacked), p.result([0] * len(stacked))

    return batch


def _example_aval(a, d) -> Aval:
    aval = a.aval if hasattr(a, "aval") else aval_of(a)
    if d is None:
        return aval
    return Aval(aval.shape[:d] + aval.shape[d + 1 :], aval.dtype)


#: `batch=loop_batch`: batching by applying the primitive to each example and stacking the
#: results. Always right, and as slow as a Python loop over the batch: give a primitive a
#: rule of its own where vmap's speed matters.
loop_batch = rule_for(_loop_batch)


# -- HIPS autograd's interface ----------------------------------------------------------------


class _Rules:
    """The rules registered for one function with `defvjp` / `defjvp` (autograd's tables)."""

    def __init__(self, fun: Callable):
        self.name = getattr(fun, "__name__", "function")
        self.vjp_of: Callable | None = None  # (argnum, ans, args, kwargs) -> (g -> cotangent)
        self.jvp_of: Callable | None = None  # (argnum, g, ans, args, kwargs) -> tangent


def primitive(fun: Callable) -> Callable:
    """HIPS autograd's `@primitive`: `fun` becomes a primitive of its own, opaque to tracing,
    whose derivatives are the ones given with `defvjp` / `defjvp`.

    Positional arguments that are arrays (traced or not) are the primitive's inputs; other
    positional arguments (Python numbers, None, strings, tuples) and all keyword arguments
    are params: static, as in autograd, where only boxed arguments are differentiated. `fun`
    returns one array. Its output shape is found by running `fun` on zeros of the input
    shapes, once per signature (so `fun` must not depend on values for its output's shape).
    """
    rules = _Rules(fun)
    name = _primitive_name(fun)
    old = lookup(name)
    if old is not None and _ORIGINS.get(old) == name:
        unregister(old)  # the same function defined again (a notebook cell run twice)
    prim = Primitive(
        name,
        impl=functools.partial(_call, fun),
        shape=functools.partial(_shape, fun),
        jvp=functools.partial(_hips_jvp, rules),
        vjp=per_input(functools.partial(_hips_vjp_rule, rules)),
        batch=loop_batch,
    )
    _ORIGINS[prim] = name

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        inputs, statics = _split(args)
        params = dict(kwargs)
        for reserved in ("out", "statics", "n_args"):
            if reserved in params:
                raise TypeError(
                    f"{name}: a primitive made with tracegrad.extend.primitive cannot take a "
                    f"keyword argument named {reserved!r} (the rules use that name)"
                )
        return bind(prim, *inputs, statics=statics, n_args=len(args), **params)

    wrapped._tracegrad_rules = rules
    wrapped.primitive = prim
    return wrapped


_ORIGINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _primitive_name(fun) -> str:
    qual = getattr(fun, "__qualname__", getattr(fun, "__name__", "function"))
    module = getattr(fun, "__module__", None)
    return qual if module in (None, "__main__") else f"{module}.{qual}"


def _is_input(a) -> bool:
    # arrays (traced or not) are inputs; Python numbers, None, strings and tuples are static
    # data, as in autograd, where only boxed values are differentiated
    return isinstance(a, Boxed | np.ndarray | np.generic)


def _split(args) -> tuple[list, tuple]:
    """(array-like positional arguments, ((position, value), ...) of the others)."""
    inputs, statics = [], []
    for i, a in enumerate(args):
        if _is_input(a):
            inputs.append(a)
        else:
            statics.append((i, a))
    return inputs, tuple(statics)


def _full_args(inputs, statics, n_args) -> list:
    """The original positional arguments from the primitive's inputs and static ones."""
    fixed = dict(statics)
    it = iter(inputs)
    return [fixed[i] if i in fixed else next(it) for i in range(n_args)]


def _positions(statics, n_args) -> list[int]:
    """Positional index (autograd's argnum) of each input of the primitive."""
    fixed = {i for i, _ in statics}
    return [i for i in range(n_args) if i not in fixed]


def _call(fun, *inputs, statics, n_args, **kwargs):
    out = fun(*_full_args(inputs, statics, n_args), **kwargs)
    if isinstance(out, tuple | list):
        raise TypeError(
            f"{getattr(fun, '__name__', fun)}: a primitive made with tracegrad.extend.primitive "
            "returns one array; for several outputs define a tracegrad.extend.Primitive with "
            "multiple_results=True"
        )
    return out


def _shape(fun, *avals, statics, n_args, **kwargs):
    zeros = [np.zeros(a.shape, a.dtype) for a in avals]
    with np.errstate(all="ignore"):
        out = np.asarray(_call(fun, *zeros, statics=statics, n_args=n_args, **kwargs))
    return Aval(out.shape, out.dtype)


def _hips_vjp_rule(rules: _Rules, k: int):
    """Input k's rule: autograd's vjp maker for that argnum, applied to the cotangent."""

    def rule(g, *inputs, out, statics, n_args, **kwargs):
        argnum = _positions(statics, n_args)[k]
        if rules.vjp_of is None:
            raise NotImplementedError(f"VJP of {rules.name} wrt argnum {argnum} not defined")
        args = _full_args(inputs, statics, n_args)
        return rules.vjp_of(argnum, out, args, kwargs)(g)

    return rule


def _hips_jvp(rules: _Rules, primals, tangents, *, out, statics, n_args, **kwargs):
    args = _full_args(primals, statics, n_args)
    total = None
    for argnum, t in zip(_positions(statics, n_args), tangents):
        if t is None:
            continue
        if rules.jvp_of is None:
            raise NotImplementedError(f"JVP of {rules.name} wrt argnum {argnum} not defined")
        term = rules.jvp_of(argnum, t, out, args, kwargs)
        if term is not None:
            term = (
                tnp.broadcast_to(term, shape_of(out)) if shape_of(term) != shape_of(out) else term
            )
            total = term if total is None else total + term
    return total


def _rules_of(fun) -> _Rules:
    rules = getattr(fun, "_tracegrad_rules", None)
    if rules is None:
        raise TypeError(
            f"{getattr(fun, '__name__', fun)!r} is not a primitive: decorate it with "
            "tracegrad.extend.primitive first"
        )
    return rules


def defvjp_argnum(fun, vjpmaker) -> None:
    """`vjpmaker(argnum, ans, args, kwargs)` returns `g -> cotangent of args[argnum]`."""
    _rules_of(fun).vjp_of = vjpmaker


def defvjp(fun, *vjpmakers, argnums=None) -> None:
    """HIPS autograd's `defvjp`: one maker per argument, `maker(ans, *args, **kwargs)`
    returning `g -> cotangent` (None for an argument with a zero gradient)."""
    argnums = range(len(vjpmakers)) if argnums is None else argnums
    makers = dict(zip(argnums, vjpmakers))
    name = _rules_of(fun).name

    def vjp_of(argnum, ans, args, kwargs):
        if argnum not in makers:
            raise NotImplementedError(f"VJP of {name} wrt argnum {argnum} not defined")
        maker = makers[argnum]
        if maker is None:
            return lambda g: None  # a zero gradient: no cotangent flows to this argument
        return maker(ans, *args, **kwargs)

    defvjp_argnum(fun, vjp_of)


def defjvp_argnum(fun, jvpmaker) -> None:
    """`jvpmaker(argnum, g, ans, args, kwargs)` returns the output tangent for a tangent `g`
    of `args[argnum]`."""
    _rules_of(fun).jvp_of = jvpmaker


def defjvp(fun, *jvpfuns, argnums=None) -> None:
    """HIPS autograd's `defjvp`: one function per argument, `jvp(g, ans, *args, **kwargs)`
    returning the output tangent; None for a zero tangent, "same" for `fun` itself (linear)."""
    argnums = range(len(jvpfuns)) if argnums is None else argnums
    funs = dict(zip(argnums, jvpfuns))
    name = _rules_of(fun).name

    def jvp_of(argnum, g, ans, args, kwargs):
        if argnum not in funs:
            raise NotImplementedError(f"JVP of {name} wrt argnum {argnum} not defined")
        f = funs[argnum]
        if f is None:
            return None
        if f == "same":
            return fun(*_replaced(args, argnum, g), **kwargs)
        return f(g, ans, *args, **kwargs)

    defjvp_argnum(fun, jvp_of)


def def_linear(fun) -> None:
    """`fun` is linear in each argument: its jvp is `fun` with the argument replaced by its
    tangent."""
    defjvp_argnum(
        fun, lambda argnum, g, ans, args, kwargs: fun(*_replaced(args, argnum, g), **kwargs)
    )


def _replaced(args, argnum, g) -> list:
    new = list(args)
    new[argnum] = g
    return new


def notrace_primitive(fun: Callable) -> Callable:
    """HIPS autograd's `notrace_primitive`: `fun` runs on values and its result is a constant
    (no derivative flows through it), as `tg.stop_gradient` of its result."""

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        values = [_value(a) for a in args]
        return fun(*values, **{k: _value(v) for k, v in kwargs.items()})

    return wrapped


def _value(a):
    if isinstance(a, Tracer):
        return a._concrete("tracegrad.extend.notrace_primitive (it runs on values)")
    if isinstance(a, Boxed):  # a PyTorch-style tensor: its array
        return a._constant_value()
    return a
