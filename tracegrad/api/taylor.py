"""Taylor mode: `jet`, and the higher derivatives built on it (`derivatives`, `taylor`).

`jet` pushes a truncated power series through a function once (`jax.experimental.jet.jet`'s
signature and conventions): every primitive's `taylor` rule maps its inputs' coefficients to
its output's in O(K^2) operations, where nested `grad` rebuilds and re-differentiates the
whole graph K times (a graph that about doubles per order). `f` is traced concretely, as for
`jvp`, and the series pass runs over the trace, so `jet` nests inside `grad`, `vmap` and `jit`
and takes their functions in turn.

Internally the coefficients are Taylor's (derivative / k!) and a zero is None, so a straight
input line (x_2 = ... = x_K = 0: `derivatives`) costs one product per order where a dense
series costs K.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tracegrad import tree
from tracegrad.api.common import Run, name_of, to_output, trace_flat
from tracegrad.core import Tracer
from tracegrad.ir.types import aval_of
from tracegrad.transforms.jet import taylor_pass

__all__ = ["derivatives", "jet", "taylor"]


def _is_zero(t) -> bool:
    """A coefficient known to be zero now (a concrete all-zero array): a structural zero."""
    if isinstance(t, Tracer):
        return False
    arr = np.asarray(t)
    return arr.dtype.kind in "biufc" and not arr.any()


def _aval(x):
    return x.aval if isinstance(x, Tracer) else aval_of(x)


def series_of(fn: Callable, primals: tuple, series: tuple) -> list:
    """The Taylor coefficients (None for zero) of the single output of `fn(*primals)` along
    `series` (per input: None, or its K coefficients): the pass the rules call on a function
    (an elementwise primitive's derivative, a composite definition)."""
    k = next(len(s) for s in series if s is not None)
    traced, _ = trace_flat(fn, list(primals), concrete=True, name=name_of(fn))
    if not traced.graph.outputs:  # a structural zero (a partial derivative given as None)
        return [None] * k
    run = Run(traced, list(primals))
    ins = list(series) + [None] * len(traced.captured)
    (out,) = taylor_pass(run.graph, run.read, ins)
    return [None] * k if out is None else out


def _run(f, flat_primals, flat_series, fname):
    """(flat outputs, per output its K coefficients or None) of f along the series."""
    traced, out_tree = trace_flat(f, flat_primals, concrete=True, name=fname)
    run = Run(traced, flat_primals)
    outs = taylor_pass(run.graph, run.read, list(flat_series) + [None] * len(traced.captured))
    values = [to_output(o, o) if not isinstance(o, Tracer) else o for o in run.outputs]
    return values, outs, out_tree


def _dense(terms, like, k: int) -> list:
    """K coefficients as arrays: zeros where the pass found a structural zero."""
    if terms is None:
        terms = [None] * k
    return [
        to_output(t, like) if t is not None or not isinstance(like, Tracer) else 0.0 * like
        for t in terms
    ]


def _check_jet_args(primals, series):
    if not isinstance(primals, tuple | list) or not isinstance(series, tuple | list):
        raise TypeError(
            "jet: primals and series must be tuples or lists with one entry per argument, got "
            f"{type(primals).__name__} and {type(series).__name__}"
        )
    if len(primals) != len(series):
        raise ValueError(
            f"jet: {len(primals)} primals but {len(series)} series; give one series (a list of "
            "its terms) per argument"
        )
    try:
        (order,) = set(map(len, series))
    except ValueError:
        raise ValueError("jet terms have inconsistent lengths for different arguments") from None
    except TypeError:
        raise TypeError("jet: each argument's series must be a list or tuple of terms") from None
    for i, (x, terms) in enumerate(zip(primals, series)):
        if tree.structure(x).num_leaves != 1 or tree.leaves(x)[0] is not x:
            raise ValueError(f"primal value at position {i} is not an array")
        shape = _aval(x).shape
        for j, t in enumerate(terms):
            if tree.structure(t).num_leaves != 1 or tree.leaves(t)[0] is not t:
                raise ValueError(f"term {j} for argument {i} is not an array")
            if _aval(t).shape != shape:
                raise ValueError(
                    f"jet: term {j} for argument {i} has shape {_aval(t).shape}, but the "
                    f"primal has shape {shape}; they must be equal"
                )
    return order


def jet(fun: Callable, primals, series, factorial_scaled: bool = True):
    """Taylor-mode differentiation, as `jax.experimental.jet.jet`.

    Args:
      fun: a function of arrays returning an array or a pytree of arrays.
      primals: one array per positional argument of `fun`: the point x.
      series: per argument, its K higher terms: with `factorial_scaled` (the default) the
        derivatives x'(0), x''(0), ... of a curve x(t) through the point; otherwise the
        Taylor coefficients x^(k)(0) / k!.
    Returns:
      `(primals_out, series_out)`: `fun(*primals)`, and per output leaf its K terms along
      the curve, scaled as the input: `jet(np.sin, (0.,), ([1., 0., 0.],))` is
      `(0., [1., 0., -1.])`, the first three derivatives of sin(t).
    """
    order = _check_jet_args(primals, series)
    fname = name_of(fun)
    flat_s = []
    for x, terms in zip(primals, series):
        coeffs = []
        for j, t in enumerate(terms):
            if _is_zero(t):
                coeffs.append(None)
                continue
            if not isinstance(t, Tracer):
                t = np.asarray(t, dtype=_aval(x).strengthen().dtype)
            coeffs.append(t / math.factorial(j + 1) if factorial_scaled else t)
        flat_s.append(coeffs if any(c is not None for c in coeffs) else None)
    values, outs, out_tree = _run(fun, list(primals), flat_s, fname)
    out_series = []
    for v, terms in zip(values, outs):
        dense = _dense(terms, v, order)
        if factorial_scaled:
            dense = [_scaled(t, math.factorial(j + 1)) for j, t in enumerate(dense)]
        out_series.append(dense)
    return tree.unflatten(out_tree, values), tree.unflatten(out_tree, out_series)


def _scaled(t, factor: int):
    if factor == 1:
        return t
    if isinstance(t, Tracer):
        return t * float(factor)
    return to_output(np.multiply(t, factor, dtype=np.result_type(t)), t)


def _check_order(order, api: str) -> int:
    if isinstance(order, bool) or not isinstance(order, int | np.integer) or order < 0:
        raise ValueError(f"{api}: order must be a non-negative integer, got {order!r}")
    return int(order)


def _line(f, args, argnums: int, order: int, api: str):
    """(value, [Taylor coefficients 1..order]) of f along x + t at args[argnums]."""
    if not isinstance(argnums, int):
        raise TypeError(f"{api}: argnums must be one integer position, got {argnums!r}")
    x = args[argnums]
    fname = name_of(f)
    if not isinstance(x, Tracer):
        x = np.asarray(x)
        if x.dtype.kind not in "fc":
            raise TypeError(
                f"{api}({fname}) requires a float argument, but argument {argnums} has dtype "
                f"{x.dtype.name}. Convert it with .astype(float)."
            )
        x = x if x.shape else x[()]
    aval = _aval(x)
    ones = np.ones(aval.shape, aval.strengthen().dtype)

    def at(xx):
        full_args = list(args)
        full_args[argnums] = xx
        return f(*full_args)

    values, outs, out_tree = _run(
        at, [x], [[ones] + [None] * (order - 1)] if order else [None], fname
    )
    if len(values) != 1:
        raise TypeError(
            f"{api}({fname}) requires a function with one array output, but it returned {out_tree}"
        )
    (value,), (terms,) = values, outs
    return value, _dense(terms, value, order) if order else []


def derivatives(f: Callable, order: int, argnums: int = 0) -> Callable:
    """`derivatives(f, order=k)(x)`: the list `[f(x), f'(x), ..., f^(k)(x)]`, by one Taylor
    pass along x + t.

    `f` maps an array to an array elementwise (each output entry depends only on the input
    entry at the same position, as `np.sin(x) * np.exp(-x**2)`), so one pass gives every
    point's derivatives at once. For a function that mixes entries, the k-th entry is the k-th
    derivative along the all-ones direction; use `jet` for another direction.
    """
    order = _check_order(order, "derivatives")

    def derivs(*args):
        value, terms = _line(f, args, argnums, order, "derivatives")
        return [value, *(_scaled(t, math.factorial(j + 1)) for j, t in enumerate(terms))]

    derivs.__name__ = f"derivatives_{name_of(f)}"
    return derivs


def taylor(f: Callable, x, order: int) -> list:
    """The k + 1 Taylor coefficients `[f(x), f'(x), f''(x) / 2!, ..., f^(k)(x) / k!]` of an
    elementwise `f` at `x`, by one Taylor pass."""
    order = _check_order(order, "taylor")
    value, terms = _line(f, (x,), 0, order, "taylor")
    return [value, *terms]
