"""The rules of `odeint_p` and `solve_ivp_p`: run the right-hand side with SciPy, and
differentiate an integration by integrating again (the adjoint method in reverse, the
sensitivity system in forward mode).

Each derivative is the same primitive once more, on an augmented right-hand side traced once
from the transforms of `func` and cached on it, so derivatives differentiate again (second
order by the same mechanism, as JAX's `odeint`). Reverse mode is JAX's `_odeint_rev` in
SciPy's terms: between output times, backwards, the state `(y, a, t0_bar, extra_bar)` follows
`dy/dt = f`, `da/dt = -a f_y`, `d(t0_bar)/dt = -a f_t`, `d(extra_bar)/dt = -a f_extra` (real
time: SciPy integrates in either direction); the output cotangent joins `a` at each output
time. Nothing is kept per solver step, so memory grows with `len(t)`, never with the steps.
Batching loops over the batch, so each example's values are SciPy's own, bit for bit.
"""

from __future__ import annotations

import functools
import importlib
import warnings

import numpy as np

from tracegrad.codegen.compiled import compile_graph
from tracegrad.interpret import eval_graph
from tracegrad.ir.graph import Graph
from tracegrad.ir.types import Aval, dtype_of, is_float, shape_of
from tracegrad.primitives import ode
from tracegrad.primitives.broadcasting import sum as _sum
from tracegrad.primitives.elementwise import astype
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import move_to_front, reshape
from tracegrad.transforms.control_common import cached, strong, trace_closed, zeros
from tracegrad.transforms.jvp import tangent_pass
from tracegrad.transforms.vjp import backward_pass, value_reader

_F64 = np.dtype(np.float64)


@functools.cache
def _si():
    """scipy.integrate, imported on first use."""
    return importlib.import_module("scipy.integrate")


# -- impl -------------------------------------------------------------------------------------


def _compiled(func: Graph):
    # generated code, compiled once per graph: SciPy calls the function at every step, and
    # the interpreter's per-node dispatch would cost several times the arithmetic
    return cached(func, "odeint_compiled", lambda: compile_graph(func).fn)


def odeint_impl(y0, t, *extra, func, tcrit, checked=False, **options):
    fn = _compiled(func)
    return (checked_odeint if checked else _si().odeint)(
        lambda _y, _t, *_a: fn(_y, _t, *_a)[0],
        y0,
        t,
        args=tuple(extra),
        tcrit=None if tcrit is None else np.array(tcrit),
        **options,
    )


def checked_odeint(*args, **kwargs):
    """SciPy's odeint, raising where it would warn that the integration failed (LSODA gave
    up: too much work, too much accuracy asked, ...) and return what it had. The
    integrations of a derivative run so: their numbers would be a wrong derivative, and a
    derivative is right or refused. Other warnings pass on as they were."""
    failure = _si().ODEintWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", failure)
        ys = _si().odeint(*args, **kwargs)
    failed = None
    for w in caught:
        if failed is None and issubclass(w.category, failure):
            failed = w.message
        elif not issubclass(w.category, failure):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if failed is not None:
        raise RuntimeError(
            f"tracegrad.scipy.integrate.odeint: an integration of the derivative failed: "
            f"{str(failed).partition(' Run with')[0]} Loosen rtol/atol or raise mxstep (the "
            "adjoint and sensitivity systems are larger than the forward one and may need more "
            "steps)"
        )
    return ys


def solve_ivp_impl(y0, t, *extra, func, method, t_end, **options):
    fn = _compiled(func)
    end = float(t[-1]) if t_end is None else t_end
    res = _si().solve_ivp(
        lambda _t, _y: fn(_y, _t, *extra)[0],
        (float(t[0]), end),
        y0,
        method=ode.METHODS[method],
        t_eval=t[1:],
        **ode.ivp_keywords(**options),
    )
    if res.status != 0:
        raise RuntimeError(ode.IVP_FAILED.format(res.message))
    if float(t[0]) == end:  # a span of length zero: SciPy ends without a step, at no time
        return np.tile(y0, (t.shape[0], 1))
    return np.concatenate((y0[None], res.y.T))


# -- helpers on arrays and tracers alike ------------------------------------------------------


def _row(x, i: int):
    """`x[i]` of a 2-D value (a 1-D one: the element as a 0-d value)."""
    s = shape_of(x)
    return reshape(slice_static(x, (i,) + (0,) * (len(s) - 1), (i + 1, *s[1:])), s[1:])


def _part(x, start: int, stop: int):
    """`x[start:stop]` of a 1-D value."""
    return slice_static(x, (start,), (stop,))


def _flat(x):
    return reshape(astype(x, _F64) if dtype_of(x) != _F64 else x, (int(np.prod(shape_of(x))),))


def _stack(rows):
    return concatenate([reshape(r, (1, *shape_of(r))) for r in rows], 0)


def _float_extras(avals) -> tuple[int, ...]:
    return tuple(i for i, a in enumerate(avals) if is_float(a.dtype))


def _refuse_complex(avals) -> None:
    for a in avals:
        if a.dtype.kind == "c":
            raise NotImplementedError(
                "tracegrad.scipy.integrate: derivatives of odeint and solve_ivp with respect to "
                f"complex args ({a.str_short()}) are not supported; pass real and imaginary parts "
                "as real args"
            )


def _rhs(func: Graph, y, t, extra):
    return eval_graph(func, [y, t, *extra])[0]


# -- reverse mode: the adjoint system ---------------------------------------------------------


def _adjoint_graph(func: Graph) -> Graph:
    """`(z, t, *extra) -> (dz/dt,)` with `z = (y, a, t0_bar, extra_bar)` flat: the adjoint
    system, traced once from the backward pass of `func`."""

    def build():
        y_av, t_av, *e_av = func.in_avals
        n = y_av.shape[0]
        floats = _float_extras(e_av)
        size = 2 * n + 1 + sum(int(np.prod(e_av[i].shape)) for i in floats)
        wrt = [True, True] + [i in floats for i in range(len(e_av))]

        def fn(z, t, *extra):
            y, a = _part(z, 0, n), _part(z, n, 2 * n)
            env = eval_graph(func, [y, t, *extra], keep_all=True)
            read = value_reader(env)
            f = read(func.outputs[0].node)[func.outputs[0].index]
            # the extras' cotangents in float64 (a float32 one, rounded, would make the
            # right-hand side too rough for the solver's tolerance)
            bars = backward_pass(func, read, [a], wrt, wide_inputs=True)
            avals = [y_av, t_av, *e_av]
            parts = [_flat(f)]
            for k, b in enumerate(bars):
                if k < 2 or k - 2 in floats:
                    b = zeros(avals[k]) if b is None else b
                    parts.append(-_flat(b))
            return [concatenate(parts, 0)]

        avals = [Aval((size,), _F64), t_av, *e_av]
        return trace_closed(fn, avals, f"{func.name}_adjoint")

    return cached(func, "odeint_adjoint", build)


def odeint_vjp(ys_bar, *primals, out, func, **options):
    # tolerances and step limits carry over (as JAX's); a first step, a minimum step and
    # critical times belong to the forward problem's time axis
    back = {**options, "tcrit": None, "h0": 0.0, "hmin": 0.0, "checked": True}
    return _adjoint(ode.odeint, back, ys_bar, primals, out, func)


def solve_ivp_vjp(ys_bar, *primals, out, func, **options):
    # each backward interval ends at its own (traced) time; the first step is the forward's
    back = {**options, "t_end": None, "first_step": None}
    return _adjoint(ode.solve_ivp, back, ys_bar, primals, out, func)


def _adjoint(solve, back: dict, ys_bar, primals, out, func: Graph) -> tuple:
    """The cotangents of `(y0, t, *extra)` by the adjoint method; `solve` binds the
    primitive again (with the options `back`) for each interval, backwards."""
    y0, t, *extra = primals
    e_av = func.in_avals[2:]
    floats = _float_extras(e_av)
    _refuse_complex(e_av[i] for i in floats)
    n, m = shape_of(y0)[0], shape_of(t)[0]
    aug = _adjoint_graph(func)
    a = _row(ys_bar, m - 1)
    t0_bar = np.zeros((1,), _F64)
    sizes = [int(np.prod(e_av[i].shape)) for i in floats]
    e_bar = np.zeros((sum(sizes),), _F64)
    t_bars = [None] * m
    for i in range(m - 1, 0, -1):
        g, y_i, t_i = _row(ys_bar, i), _row(out, i), _row(t, i)
        # moving the output time t[i] moves ys[i] along f; the rest flows back to t[0]
        t_bars[i] = _sum(_rhs(func, y_i, t_i, extra) * g, (0,))
        t0_bar = t0_bar - reshape(t_bars[i], (1,))
        z = concatenate([y_i, a, t0_bar, e_bar], 0)
        span = concatenate([_part(t, i, i + 1), _part(t, i - 1, i)], 0)
        z = _row(solve(z, span, *extra, func=aug, **back), 1)
        a = _part(z, n, 2 * n) + _row(ys_bar, i - 1)
        t0_bar, e_bar = _part(z, 2 * n, 2 * n + 1), _part(z, 2 * n + 1, shape_of(z)[0])
    t_bars[0] = reshape(t0_bar, ())
    bars: list = [None] * len(extra)
    k = 0
    for i, size in zip(floats, sizes):
        b = reshape(_part(e_bar, k, k + size), e_av[i].shape)
        bars[i] = b if e_av[i].dtype == _F64 else astype(b, e_av[i].dtype)
        k += size
    return (a, _stack(t_bars), *bars)


# -- forward mode: the sensitivity system -----------------------------------------------------


def _sensitivity_graph(func: Graph, nonzero: tuple[bool, ...]) -> Graph:
    """`(z, t, *extra, *extra_dots) -> (dz/dt,)` with `z = (y, y_dot)`: the system and its
    linearisation, for the extra operands marked in `nonzero` moving too."""

    def build():
        y_av, t_av, *e_av = func.in_avals
        n = y_av.shape[0]
        moving = [k for k, nz in enumerate(nonzero) if nz]
        dot_avals = [e_av[k].strengthen() for k in moving]

        def fn(z, t, *rest):
            extra, dots = rest[: len(e_av)], rest[len(e_av) :]
            y, y_dot = _part(z, 0, n), _part(z, n, 2 * n)
            env = eval_graph(func, [y, t, *extra], keep_all=True)
            read = value_reader(env)
            tangents = [y_dot, None] + [None] * len(e_av)
            for k, d in zip(moving, dots):
                tangents[2 + k] = d
            (f_dot,) = tangent_pass(func, read, tangents)
            f = read(func.outputs[0].node)[func.outputs[0].index]
            f_dot = zeros(y_av) if f_dot is None else f_dot
            return [concatenate([_flat(f), _flat(f_dot)], 0)]

        avals = [Aval((2 * n,), _F64), t_av, *e_av, *dot_avals]
        return trace_closed(fn, avals, f"{func.name}_sensitivity")

    return cached(func, ("odeint_sensitivity", nonzero), build)


def odeint_jvp(primals, tangents, *, out, func, **options):
    return _sensitivity(ode.odeint, {**options, "checked": True}, primals, tangents, out, func)


def solve_ivp_jvp(primals, tangents, *, out, func, **options):
    return _sensitivity(ode.solve_ivp, options, primals, tangents, out, func)


def _sensitivity(solve, options: dict, primals, tangents, out, func: Graph):
    """The tangent of `ys` by the sensitivity system, `solve` (the primitive again, with the
    same options) integrating `(y, y_dot)` through the same times."""
    y0, t, *extra = primals
    y0_dot, t_dot, *e_dots = tangents
    e_av = func.in_avals[2:]
    nonzero = tuple(d is not None and is_float(a.dtype) for d, a in zip(e_dots, e_av))
    _refuse_complex(a for a, nz in zip(e_av, nonzero) if nz)
    if y0_dot is None and t_dot is None and not any(nonzero):
        return None
    n, m = shape_of(y0)[0], shape_of(t)[0]
    z_dot = zeros(Aval((n,), _F64)) if y0_dot is None else y0_dot
    if t_dot is not None:  # starting later is starting from y0 moved back along f
        z_dot = z_dot - _rhs(func, y0, _row(t, 0), extra) * _row(t_dot, 0)
    sens = _sensitivity_graph(func, nonzero)
    dots = [strong(d, a) for d, a, nz in zip(e_dots, e_av, nonzero) if nz]
    zs = solve(concatenate([y0, z_dot], 0), t, *extra, *dots, func=sens, **options)
    ys_dot = slice_static(zs, (0, n), (m, 2 * n))
    if t_dot is not None:  # ... and each output time moves its value along f
        moved = [_rhs(func, _row(out, i), _row(t, i), extra) * _row(t_dot, i) for i in range(m)]
        ys_dot = ys_dot + _stack(moved)
    return ys_dot


# -- batching ---------------------------------------------------------------------------------


def odeint_batch(args, dims, *, func, **options):
    return _batch(ode.odeint, args, dims, func, options)


def solve_ivp_batch(args, dims, *, func, **options):
    return _batch(ode.solve_ivp, args, dims, func, options)


def _batch(solve, args, dims, func: Graph, options: dict):
    """One integration per example, stacked: each example's values are SciPy's own (a host
    solver gains nothing from one bigger system, whose error control would couple them)."""
    size = next(shape_of(x)[d] for x, d in zip(args, dims) if d is not None)
    fronted = [move_to_front(x, d) for x, d in zip(args, dims)]
    outs = []
    for b in range(size):
        one = [x if d is None else _row(x, b) for x, d in zip(fronted, dims)]
        outs.append(solve(*one, func=func, **options))
    return _stack(outs), 0


__all__ = [
    "odeint_batch",
    "odeint_impl",
    "odeint_jvp",
    "odeint_vjp",
    "solve_ivp_batch",
    "solve_ivp_impl",
    "solve_ivp_jvp",
    "solve_ivp_vjp",
]
