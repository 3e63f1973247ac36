"""`tracegrad.scipy.integrate`: SciPy's `odeint` and `solve_ivp`, differentiable by integrating
again, and the sampled-data rules `trapezoid`, `simpson`, `cumulative_trapezoid`
(docs/scipy_integrate.md).

`odeint` traces `func` once into a sub-graph and binds `odeint_p`, whose values are SciPy's
own call: reverse mode is the adjoint method (one backward integration, memory independent of
the number of solver steps), forward mode the sensitivity system; values `func` closes over are
operands, so their derivatives flow (tracegrad.transforms.ode). The quadrature rules are SciPy's
arithmetic written with tracegrad.numpy, so their values are SciPy's bits.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate as _si
from scipy.integrate._ivp.ivp import OdeResult as _OdeResult

import tracegrad.numpy as tnp
from tracegrad import tree
from tracegrad.api.subgraphs import leaf_aval, trace_subgraph
from tracegrad.core import Boxed
from tracegrad.ir.types import Aval, dtype_of, shape_of
from tracegrad.numpy._common import asarray_or_tracer, known_value
from tracegrad.primitives import ode as _ode
from tracegrad.transforms.control_common import reorder

_F64 = np.dtype(np.float64)

# -- odeint -----------------------------------------------------------------------------------


def _refuse(**given) -> None:
    """odeint's arguments tracegrad does not take, each named with what to do instead."""
    why = {
        "Dfun": "without it LSODA approximates the Jacobian by finite differences, and the "
        "derivative systems would need Dfun's own derivatives; drop Dfun",
        "col_deriv": "it only concerns Dfun; drop it",
        "full_output": "the solver's diagnostics are not traced values; call "
        "scipy.integrate.odeint on NumPy arrays for them",
        "ml": "banded Jacobians are not supported (the derivative systems are not banded); "
        "drop ml and mu",
        "mu": "banded Jacobians are not supported (the derivative systems are not banded); "
        "drop ml and mu",
        "ixpr": "printing is a side effect of the solver; call scipy.integrate.odeint for it",
        "printmessg": "printing is a side effect of the solver; call scipy.integrate.odeint for it",
    }
    for name, value in given.items():
        if value is not None and value is not False and not (type(value) is int and value == 0):
            raise NotImplementedError(
                f"tracegrad.scipy.integrate.odeint: {name}={value!r} is not supported: {why[name]}"
            )


def _tolerance(name: str, v):
    if v is None:
        return None
    value = known_value(v) if isinstance(v, Boxed) else v
    if value is None or np.ndim(value) != 0:
        raise NotImplementedError(
            f"tracegrad.scipy.integrate.odeint: {name} must be one float (per-component "
            f"tolerances do not carry over to the derivative systems), got {v!r}"
        )
    return float(value)


def _float_1d(name: str, x, api: str = "odeint"):
    """`x` as SciPy's odeint takes it: a 1-D float64 array (a scalar as one element)."""
    x = asarray_or_tracer(x)
    s, dt = shape_of(x), np.dtype(dtype_of(x))
    if len(s) > 1:
        what = "Initial condition y0" if name == "y0" else "t"
        raise ValueError(
            f"tracegrad.scipy.integrate.{api}: {what} must be one-dimensional, got shape {s}"
            + (" (integrate a flattened state and reshape it inside func)" if name == "y0" else "")
        )
    if dt.kind == "c":
        raise TypeError(
            f"tracegrad.scipy.integrate.{api}: {name} is complex ({dt}); tracegrad integrates "
            "real systems: split it into real and imaginary parts"
        )
    if dt.kind not in "biuf":
        raise TypeError(f"tracegrad.scipy.integrate.{api}: {name} must be real numbers, got {dt}")
    if dt != _F64:
        x = tnp.asarray(x, dtype=_F64)
    return tnp.reshape(x, (1,)) if not s else x


def _check_monotonic(t) -> None:
    v = known_value(t)
    if v is None:
        return  # under jit SciPy checks it when the integration runs
    d = np.diff(np.asarray(v))
    if not ((d >= 0).all() or (d <= 0).all()):
        raise ValueError(
            "tracegrad.scipy.integrate.odeint: the values in t must be monotonically increasing "
            "or monotonically decreasing; repeated values are allowed (SciPy's rule), got "
            f"{np.asarray(v)!r}"
        )


def _rhs_output(n: int, name: str, api: str):
    """Checks and converts what `func` returned to the 1-D float64 array SciPy makes of it."""

    def convert(out):
        out = tnp.asarray(out)
        size = int(np.prod(shape_of(out)))
        if size != n:
            raise RuntimeError(
                f"tracegrad.scipy.integrate.{api}: the size of the array returned by func "
                f"{name} ({size}, shape {shape_of(out)}) does not match the size of y0 ({n}); "
                "func must return dy/dt, one value per component of y"
            )
        if np.dtype(dtype_of(out)).kind == "c":
            raise TypeError(
                f"tracegrad.scipy.integrate.{api}: func {name} returned complex values; "
                "derivatives are for real systems"
            )
        if np.dtype(dtype_of(out)) != _F64:
            out = tnp.asarray(out, dtype=_F64)  # SciPy converts in C: the same bits
        return [tnp.reshape(out, (n,)) if shape_of(out) != (n,) else out]

    return convert


def trace_rhs(func, n: int, args: tuple, tfirst: bool, api: str = "odeint"):
    """`func` as the graph `(y, t, *arg leaves, *closure) -> (dy/dt,)` and the operands after
    `y0, t`: the arg leaves, then the values `func` closes over."""
    leaves, args_tree = tree.flatten(tuple(args))
    avals = [Aval((n,), _F64), Aval((), _F64, weak_type=True)]
    avals += [leaf_aval(x, f"{api}: args") for x in leaves]
    name = getattr(func, "__name__", type(func).__name__)

    def rhs(y, t, *flat):
        a = tree.unflatten(args_tree, list(flat))
        return func(t, y, *a) if tfirst else func(y, t, *a)

    rhs.__name__ = name if name.isidentifier() else "func"
    traced = trace_subgraph(
        rhs, tree.structure((0,) * len(avals)), avals, _rhs_output(n, name, api)
    )
    k, c = len(avals), traced.n_consts
    graph = reorder(traced.graph, list(range(c, c + k)) + list(range(c)), [0])
    return graph, [*leaves, *traced.consts]


def odeint(
    func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None,
    atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12,
    mxords=5, printmessg=0, tfirst=False,
):  # fmt: skip
    """`scipy.integrate.odeint`, differentiable in `y0`, `t`, `args` and what `func` closes over.

    Values are SciPy's own (LSODA), eagerly, traced and under `tg.jit`. Reverse mode is the
    adjoint method: one backward integration of `(y, a, t_bar, args_bar)` from each output
    time to the previous (tolerances `rtol`, `atol`, `mxstep`, `hmax` as given), so memory does
    not grow with the number of solver steps. Forward mode integrates the sensitivity system.
    Both are `odeint` again, so they differentiate again; where one of their integrations
    fails (LSODA gives up), the derivative raises a RuntimeError saying what to loosen, where
    SciPy would warn and return what it had (the forward integration warns as SciPy's does).
    Derivatives are for real args;
    `Dfun`, `full_output`, `ml`/`mu`, `ixpr` and `printmessg` are refused (NotImplementedError,
    saying what to do), as are per-component tolerances.

    Args:
        func: `func(y, t, *args) -> dy/dt` (`func(t, y, *args)` with `tfirst=True`), written
            with NumPy or tracegrad.numpy operations.
        y0: the initial state, 1-D (a scalar is one component).
        t: the output times, monotonic; `t[0]` is the initial time.
    Returns:
        `ys` of shape `(len(t), len(y0))`, `ys[0] == y0`.
    """
    _refuse(Dfun=Dfun, col_deriv=col_deriv, full_output=full_output, ml=ml, mu=mu, ixpr=ixpr,
            printmessg=printmessg)  # fmt: skip
    if not callable(func):
        raise TypeError(f"tracegrad.scipy.integrate.odeint: func must be callable, got {func!r}")
    if not isinstance(args, tuple):
        args = (args,)  # as SciPy
    y0, t = _float_1d("y0", y0), _float_1d("t", t)
    _check_monotonic(t)
    n = shape_of(y0)[0]
    graph, extra = trace_rhs(func, n, args, bool(tfirst))
    crit = None
    if tcrit is not None:
        crit = tuple(float(v) for v in np.asarray(tcrit, dtype=np.float64).ravel())
    return _ode.odeint(
        y0, t, *extra, func=graph, rtol=_tolerance("rtol", rtol), atol=_tolerance("atol", atol),
        tcrit=crit, h0=float(h0), hmax=float(hmax), hmin=float(hmin), mxstep=int(mxstep),
        mxhnil=int(mxhnil), mxordn=int(mxordn), mxords=int(mxords),
    )  # fmt: skip


# -- solve_ivp --------------------------------------------------------------------------------

_IVP_REFUSED = {
    "dense_output": "the interpolant is not a traced value; pass t_eval",
    "events": "event times are not differentiable here; pass t_eval",
    "vectorized": "tracegrad calls fun once per state; drop it (or vmap over states yourself)",
}


def solve_ivp(
    fun, t_span, y0, method="RK45", t_eval=None, dense_output=False, events=None,
    vectorized=False, args=None, **options,
):  # fmt: skip
    """`scipy.integrate.solve_ivp` with an explicit Runge-Kutta method (`RK23`, `RK45`,
    `DOP853`), differentiable in `y0`, `t_span[0]`, `t_eval`, `args` and what `fun` closes
    over, as `odeint`: the adjoint method in reverse (each backward interval solved by the same
    method and tolerances), the sensitivity system in forward mode.

    `t_eval` is required for derivatives: without it the output times are the solver's own
    choice, so only arrays (nothing traced) are accepted, and SciPy's own result is returned.
    Options: `rtol`, `atol`, `first_step`, `max_step`. The result has SciPy's fields; `t` and
    `y` (shape `(len(y0), len(t_eval))`) are SciPy's values bit for bit; `sol`, `t_events`
    and `y_events` are None, the solver's counters (`nfev`, `njev`, `nlu`) None, and a failed
    integration raises RuntimeError with SciPy's message (its partial output has no fixed
    shape). `t_span[1]` must be a number known when tracing (a static argument under jit).
    """
    for name, value in (("dense_output", dense_output), ("events", events),
                        ("vectorized", vectorized)):  # fmt: skip
        if value is not None and value is not False:
            raise NotImplementedError(
                f"tracegrad.scipy.integrate.solve_ivp: {name}={value!r} is not supported: "
                f"{_IVP_REFUSED[name]}"
            )
    if method not in _ode.METHODS:
        raise NotImplementedError(
            f"tracegrad.scipy.integrate.solve_ivp: method={method!r} is not supported; use one "
            f"of the explicit Runge-Kutta methods {_ode.METHODS} (or odeint, LSODA, for stiff "
            "problems)"
        )
    unknown = sorted(set(options) - {"rtol", "atol", "first_step", "max_step"})
    if unknown:
        raise NotImplementedError(
            f"tracegrad.scipy.integrate.solve_ivp: options {unknown} are not supported; "
            "rtol, atol, first_step and max_step are"
        )
    args = () if args is None else tuple(args)
    if t_eval is None:
        if any(isinstance(x, Boxed) for x in tree.flatten((t_span, y0, args))[0]):
            raise NotImplementedError(
                "tracegrad.scipy.integrate.solve_ivp: pass t_eval to differentiate (or trace) "
                "solve_ivp: without it the output times are the solver's own choice"
            )
        return _si.solve_ivp(fun, t_span, y0, method=method, args=args or None, **options)
    if len(t_span) != 2:
        raise ValueError("tracegrad.scipy.integrate.solve_ivp: t_span must be a pair (t0, tf)")
    t0, tf = t_span
    end = known_value(tf) if isinstance(tf, Boxed) else tf
    if end is None:
        raise NotImplementedError(
            "tracegrad.scipy.integrate.solve_ivp: t_span[1] must be a number known when tracing "
            "(mark it static under jit); the values at t_eval do not depend on it"
        )
    y0 = _float_1d("y0", y0, "solve_ivp")
    t_eval = _float_1d("t_eval", t_eval, "solve_ivp")
    t = tnp.concatenate([tnp.reshape(tnp.asarray(t0, dtype=_F64), (1,)), t_eval])
    graph, extra = trace_rhs(fun, shape_of(y0)[0], args, True, "solve_ivp")
    opts = {k: None if options.get(k) is None else float(options[k]) for k in ("first_step",
            "max_step")}  # fmt: skip
    ys = _ode.solve_ivp(
        y0, t, *extra, func=graph, method=_ode.METHODS.index(method), t_end=float(end),
        rtol=float(options.get("rtol", 1e-3)), atol=_tolerance("atol", options.get("atol", 1e-6)),
        **opts,
    )  # fmt: skip
    return _OdeResult(
        t=t_eval, y=tnp.transpose(ys[1:]), sol=None, t_events=None, y_events=None, nfev=None,
        njev=None, nlu=None, status=0,
        message="The solver successfully reached the end of the integration interval.",
        success=True,
    )  # fmt: skip


# -- quadrature of sampled data ---------------------------------------------------------------


def _axis_slices(nd: int, axis: int, s) -> tuple:
    out = [slice(None)] * nd
    out[axis] = s
    return tuple(out)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """`scipy.integrate.trapezoid`: SciPy's arithmetic, so SciPy's values; differentiable in
    `y`, `x` and `dx`."""
    y = tnp.asarray(y)
    nd = len(shape_of(y))
    dt = np.dtype(dtype_of(y))
    result_dtype = dt if dt.kind in "fc" else np.dtype(np.float64)  # SciPy's force_floating
    s1, s2 = _axis_slices(nd, axis, slice(1, None)), _axis_slices(nd, axis, slice(None, -1))
    if x is None:
        d = dx
    else:
        x = tnp.asarray(x)
        if len(shape_of(x)) == 1:
            d = x[1:] - x[:-1]
            d = d[tuple(slice(None) if k == axis % nd else None for k in range(nd))]
        else:
            x = tnp.broadcast_to(x, shape_of(y))
            d = x[s1] - x[s2]
    return tnp.sum(d * (y[s1] + y[s2]) / 2.0, axis=axis, dtype=result_dtype)


def cumulative_trapezoid(y, x=None, dx=1.0, axis=-1, initial=None):
    """`scipy.integrate.cumulative_trapezoid`: SciPy's arithmetic (a cumulative sum), so
    SciPy's values; differentiable in `y`, `x` and `dx`."""
    y = tnp.asarray(y)
    shape = shape_of(y)
    nd = len(shape)
    if shape[axis] == 0:
        raise ValueError("At least one point is required along `axis`.")
    if x is None:
        d = dx
    else:
        x = tnp.asarray(x)
        if len(shape_of(x)) == 1:
            d = tnp.diff(x)
            want = [1] * nd
            want[axis] = -1
            d = tnp.reshape(d, tuple(want))
        elif len(shape_of(x)) != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        else:
            d = tnp.diff(x, axis=axis)
        if shape_of(d)[axis] != shape[axis] - 1:
            raise ValueError("If given, length of x along axis must be the same as y.")
    s1, s2 = _axis_slices(nd, axis, slice(1, None)), _axis_slices(nd, axis, slice(None, -1))
    res = tnp.cumsum(d * (y[s1] + y[s2]) / 2.0, axis=axis)
    if initial is not None:
        if not np.isscalar(initial):
            raise ValueError("`initial` parameter should be a scalar.")
        if initial != 0:
            raise ValueError("`initial` must be `None` or `0`.")
        head = list(shape_of(res))
        head[axis] = 1
        res = tnp.concatenate((tnp.full(tuple(head), initial, dtype=dtype_of(res)), res), axis=axis)
    return res


def _divide_or_zero(num, den):
    """`np.true_divide(num, den, out=zeros, where=den != 0)`, SciPy's guard, differentiable
    (the divisor is replaced where it is zero, so no NaN reaches a gradient)."""
    nonzero = den != 0
    return tnp.where(nonzero, num / tnp.where(nonzero, den, 1.0), 0.0)


def _basic_simpson(y, start, stop, x, dx, axis):
    nd = len(shape_of(y))
    s0 = _axis_slices(nd, axis, slice(start, stop, 2))
    s1 = _axis_slices(nd, axis, slice(start + 1, stop + 1, 2))
    s2 = _axis_slices(nd, axis, slice(start + 2, stop + 2, 2))
    if x is None:
        return tnp.sum(y[s0] + 4.0 * y[s1] + y[s2], axis=axis) * (dx / 3.0)
    h = tnp.diff(x, axis=axis)
    h0 = tnp.asarray(h[s0], dtype=float)
    h1 = tnp.asarray(h[s1], dtype=float)
    hsum, hprod = h0 + h1, h0 * h1
    h0divh1 = _divide_or_zero(h0, h1)
    tmp = (hsum / 6.0) * (
        y[s0] * (2.0 - _divide_or_zero(1.0, h0divh1))
        + y[s1] * (hsum * _divide_or_zero(hsum, hprod))
        + y[s2] * (2.0 - h0divh1)
    )
    return tnp.sum(tmp, axis=axis)


def simpson(y, *, x=None, dx=1.0, axis=-1):
    """`scipy.integrate.simpson` (Cartwright's correction of the last interval for an even
    number of samples): SciPy's arithmetic, so SciPy's values; differentiable in `y`, `x`."""
    y = tnp.asarray(y)
    nd = len(shape_of(y))
    n = shape_of(y)[axis]
    last_dx = dx
    if x is not None:
        x = tnp.asarray(x)
        if len(shape_of(x)) == 1:
            want = [1] * nd
            want[axis] = shape_of(x)[0]
            x = tnp.reshape(x, tuple(want))
        elif len(shape_of(x)) != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        if shape_of(x)[axis] != n:
            raise ValueError("If given, length of x along axis must be the same as y.")
    if n % 2:
        return _basic_simpson(y, 0, n - 2, x, dx, axis)
    at = [_axis_slices(nd, axis, k) for k in (-1, -2, -3)]
    if n == 2:
        if x is not None:
            last_dx = x[at[0]] - x[at[1]]
        return 0.0 + 0.5 * last_dx * (y[at[0]] + y[at[1]])
    result = _basic_simpson(y, 0, n - 3, x, dx, axis)
    if x is None:
        h = (np.float64(dx), np.float64(dx))
    else:
        diffs = tnp.asarray(tnp.diff(x, axis=axis), dtype=np.float64)
        h = [
            tnp.squeeze(diffs[_axis_slices(nd, axis, slice(-2, -1, 1))], axis=axis),
            tnp.squeeze(diffs[_axis_slices(nd, axis, slice(-1, None, 1))], axis=axis),
        ]
    alpha = _divide_or_zero(2 * h[1] ** 2 + 3 * h[0] * h[1], 6 * (h[1] + h[0]))
    beta = _divide_or_zero(h[1] ** 2 + 3.0 * h[0] * h[1], 6 * h[0])
    eta = _divide_or_zero(1 * h[1] ** 3, 6 * h[0] * (h[0] + h[1]))
    result = result + (alpha * y[at[0]] + beta * y[at[1]] - eta * y[at[2]])
    return result + 0.0


__all__ = ["cumulative_trapezoid", "odeint", "simpson", "solve_ivp", "trapezoid"]
