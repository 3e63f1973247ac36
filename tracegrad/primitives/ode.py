"""`odeint_p` and `solve_ivp_p`: SciPy's `odeint` (LSODA) and `solve_ivp` (explicit Runge-Kutta)
as primitives holding the ODE's right-hand side as a sub-graph, so a whole integration is one
node whose derivatives are integrations too.

Operands are `y0` (1-D float64), `t` (1-D float64) and `extra`, the values the right-hand side
reads besides `y` and `t` (odeint's `args`, then the values its function closes over). The
param `func` is a graph `(y, t, *extra) -> (dy/dt,)`, `t` a weakly typed scalar (SciPy passes
a Python float); the output is `ys` of shape `(len(t), len(y0))`, SciPy's own values, `ys[0]`
being `y0` at `t[0]` (solve_ivp_p's `t` is `t_span[0]` followed by `t_eval`). The
impl, jvp, vjp and batch rules run or transform the sub-graph, so they live in
`tracegrad.transforms.ode`, reached lazily (the upward import DESIGN.md §7 allows rules of
primitives holding sub-graphs). SciPy is imported on first use, never by `import tracegrad`.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.graph import Graph
from tracegrad.ir.primitive import READS_ALL, Primitive, lazy_rule
from tracegrad.ir.types import Aval

#: odeint's keyword arguments the primitive takes as params, in SciPy's order
OPTIONS = ("rtol", "atol", "tcrit", "h0", "hmax", "hmin", "mxstep", "mxhnil", "mxordn", "mxords")


def _rules():
    # The rules of primitives holding sub-graphs run transforms on them (DESIGN.md §7)
    from tracegrad.transforms import ode

    return ode


def _rule(name: str):
    return lazy_rule(_rules, name)


def odeint(y0, t, *extra, func, checked=False, **options):
    """`odeint_p` on `(y0, t, *extra)`: `func(y, t, *extra)` integrated from `t[0]` through
    the times `t`; the options are odeint's, named in `OPTIONS` (all of them). `checked`: a
    failed integration raises instead of returning SciPy's numbers with its `ODEintWarning`
    (the integrations of a derivative, whose warned numbers would be a wrong derivative)."""
    return bind(odeint_p, y0, t, *extra, func=func, checked=checked, **options)


def _check_operands(name: str, y0: Aval, t: Aval, extra, func) -> Aval:
    """The operands and the right-hand side's graph agree; the output's aval."""
    if not isinstance(func, Graph):
        raise TypeError(f"{name}: func must be a Graph, got {type(func).__name__}")
    f64 = np.dtype(np.float64)
    if y0.ndim != 1 or y0.dtype != f64:
        raise TypeError(f"{name}: y0 must be a 1-D float64 array, got {y0.str_short()}")
    if t.ndim != 1 or t.dtype != f64 or t.shape[0] < 1:
        raise TypeError(f"{name}: t must be a non-empty 1-D float64 array, got {t.str_short()}")
    want = (Aval(y0.shape, f64), Aval((), f64, weak_type=True))
    got = tuple(func.in_avals)
    same_extra = len(got) == 2 + len(extra) and all(
        g.shape == e.shape and g.dtype == e.dtype for g, e in zip(got[2:], extra)
    )
    if got[:2] != want or not same_extra:
        shown = ", ".join(a.str_short() for a in (*want, *extra))
        taken = ", ".join(a.str_short() for a in got)
        raise TypeError(f"{name}: func takes ({taken}), but the operands are ({shown})")
    outs = tuple(func.out_avals)
    if len(outs) != 1 or outs[0].shape != y0.shape or outs[0].dtype != f64:
        shown = ", ".join(a.str_short() for a in outs)
        raise TypeError(
            f"{name}: func must return one float64 array of y's shape {y0.shape}, got ({shown})"
        )
    return Aval((t.shape[0], y0.shape[0]), f64)


def _odeint_shape(
    y0: Aval, t: Aval, *extra: Aval, func, rtol, atol, tcrit, h0, hmax, hmin, mxstep, mxhnil,
    mxordn, mxords, checked=False,
):  # fmt: skip
    options = dict(rtol=rtol, atol=atol, tcrit=tcrit, h0=h0, hmax=hmax, hmin=hmin,
                   mxstep=mxstep, mxhnil=mxhnil, mxordn=mxordn, mxords=mxords)  # fmt: skip
    for name in ("rtol", "atol", "h0", "hmax", "hmin"):
        v = options[name]
        if not (type(v) is float or (v is None and name in ("rtol", "atol"))):
            raise TypeError(f"odeint: {name} must be a float, got {v!r}")
    for name in ("mxstep", "mxhnil", "mxordn", "mxords"):
        if type(options[name]) is not int or options[name] < 0:
            raise TypeError(f"odeint: {name} must be a non-negative int, got {options[name]!r}")
    if type(checked) is not bool:
        raise TypeError(f"odeint: checked must be a bool, got {checked!r}")
    tcrit = options["tcrit"]
    if tcrit is not None and not (type(tcrit) is tuple and all(type(v) is float for v in tcrit)):
        raise TypeError(f"odeint: tcrit must be None or a tuple of floats, got {tcrit!r}")
    return _check_operands("odeint", y0, t, extra, func)


def _odeint_emit(y0, t, *extra, func, checked=False, **options):
    # the impl's call, word for word: SciPy calls the graph's function (a nested function
    # returning a tuple) on each step, with odeint's args the extra operands (a checked
    # integration through the impl's own check)
    args = ", ".join(extra) + ("," if len(extra) == 1 else "")
    kw = "".join(
        f", {k}=np.array({v!r})" if k == "tcrit" and v is not None else f", {k}={v!r}"
        for k, v in options.items()
    )
    rhs = f"lambda _y, _t, *_a: {func.name}(_y, _t, *_a)[0]"
    if checked:
        call = f"_tracegrad_ode.checked_odeint({rhs}, {y0}, {t}, args=({args}){kw})"
        return ["import tracegrad.transforms.ode as _tracegrad_ode", call]
    call = f"_scipy_integrate.odeint({rhs}, {y0}, {t}, args=({args}){kw})"
    return ["import scipy.integrate as _scipy_integrate", call]


odeint_p = Primitive(
    "odeint",
    impl=_rule("odeint_impl"),
    shape=_odeint_shape,
    jvp=_rule("odeint_jvp"),
    vjp=_rule("odeint_vjp"),
    batch=_rule("odeint_batch"),
    emit=_odeint_emit,
    vjp_reads=READS_ALL,
)

# -- solve_ivp --------------------------------------------------------------------------------

#: solve_ivp's explicit Runge-Kutta methods (their steps need no Jacobian); the param `method`
#: is an index into it (generated code writes no strings a param holds)
METHODS = ("RK23", "RK45", "DOP853")
IVP_OPTIONS = ("method", "t_end", "rtol", "atol", "first_step", "max_step")


def solve_ivp(y0, t, *extra, func, **options):
    """`solve_ivp_p` on `(y0, t, *extra)`: SciPy's solve_ivp from `t[0]` to `t_end` (None:
    `t[-1]`) evaluated at `t[1:]`, with `y0` as the first row."""
    return bind(solve_ivp_p, y0, t, *extra, func=func, **options)


def _solve_ivp_shape(
    y0: Aval, t: Aval, *extra: Aval, func, method, t_end, rtol, atol, first_step, max_step
):
    options = dict(method=method, t_end=t_end, rtol=rtol, atol=atol, first_step=first_step,
                   max_step=max_step)  # fmt: skip
    m = options["method"]
    if type(m) is not int or not 0 <= m < len(METHODS):
        raise TypeError(f"solve_ivp: method must be an index into {METHODS}, got {m!r}")
    for name in ("rtol", "atol"):
        if type(options[name]) is not float:
            raise TypeError(f"solve_ivp: {name} must be a float, got {options[name]!r}")
    for name in ("t_end", "first_step", "max_step"):
        if options[name] is not None and type(options[name]) is not float:
            raise TypeError(f"solve_ivp: {name} must be None or a float, got {options[name]!r}")
    return _check_operands("solve_ivp", y0, t, extra, func)


def ivp_keywords(rtol, atol, first_step, max_step) -> dict:
    """solve_ivp's keyword arguments for the options (SciPy's defaults where None)."""
    kw = {"rtol": rtol, "atol": atol}
    if first_step is not None:
        kw["first_step"] = first_step
    if max_step is not None:
        kw["max_step"] = max_step
    return kw


#: what a failed integration raises (SciPy returns fewer values, which no graph can hold)
IVP_FAILED = "tracegrad.scipy.integrate.solve_ivp: the integration failed: {}"


def _solve_ivp_emit(y0, t, *extra, func, method, t_end, **options):
    # the impl's steps, word for word (tracegrad.transforms.ode.solve_ivp_impl)
    args = "".join(f", {e}" for e in extra)
    kw = "".join(f", {k}={v!r}" for k, v in ivp_keywords(**options).items())
    end = f"float({t}[-1])" if t_end is None else repr(t_end)
    return [
        "import scipy.integrate as _scipy_integrate",
        f"_Lr = _scipy_integrate.solve_ivp(lambda _t, _y: {func.name}(_y, _t{args})[0], "
        f"(float({t}[0]), {end}), {y0}, method={METHODS[method]!r}, t_eval={t}[1:]{kw})",
        f"if _Lr.status != 0: raise RuntimeError({IVP_FAILED!r}.format(_Lr.message))",
        # a span of length zero: SciPy reaches its end without a step, at no output time
        f"np.concatenate(({y0}[None], _Lr.y.T)) if float({t}[0]) != {end} else "
        f"np.tile({y0}, ({t}.shape[0], 1))",
    ]


solve_ivp_p = Primitive(
    "solve_ivp",
    impl=_rule("solve_ivp_impl"),
    shape=_solve_ivp_shape,
    jvp=_rule("solve_ivp_jvp"),
    vjp=_rule("solve_ivp_vjp"),
    batch=_rule("solve_ivp_batch"),
    emit=_solve_ivp_emit,
    vjp_reads=READS_ALL,
)

PRIMITIVES = (odeint_p, solve_ivp_p)

__all__ = [
    "IVP_FAILED",
    "IVP_OPTIONS",
    "METHODS",
    "OPTIONS",
    "PRIMITIVES",
    "ivp_keywords",
    "odeint",
    "odeint_p",
    "solve_ivp",
    "solve_ivp_p",
]
