"""SAMPLES rows for SciPy's ODE solvers (tracegrad/primitives/ode.py), present with SciPy.

A smooth right-hand side from a small menu (linear, forced, pendulum-like), traced with
`make_graph` for the drawn size, over a few increasing times in [0, 1]; tolerances of 1e-12, so
the solver's error over the finite-difference step stays within `tol`. The solvers take only
float64 states and times, so the rows draw float64 whatever the dtype asked (the extra operand
is the dtype asked: a float32 coefficient promotes in the right-hand side).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import Sample
from tracegrad.api.jit import make_graph
from tracegrad.ir.types import Aval
from tracegrad.primitives import ode

_F64 = np.float64

# right-hand sides (y, t, k) -> dy/dt, k of y's shape
_RHS = [
    lambda y, t, k: -k * y,
    lambda y, t, k: k * np.sin(y) + np.cos(t) * 0.5,
    lambda y, t, k: y * (k - y) * 0.5 - t * y,
]

_ODEINT = {"rtol": 1e-12, "atol": 1e-12, "tcrit": None, "h0": 0.0, "hmax": 0.0, "hmin": 0.0,
           "mxstep": 5000, "mxhnil": 0, "mxordn": 12, "mxords": 5}  # fmt: skip
_IVP = {"method": 2, "t_end": None, "rtol": 1e-12, "atol": 1e-12, "first_step": None,
        "max_step": None}  # fmt: skip


def _problem(data, dtype):
    n = data.draw(st.integers(1, 3), label="n")
    m = data.draw(st.integers(1, 4), label="len(t)")
    y0 = S.array(data, (n,), _F64, -1.0, 1.0)
    k = S.array(data, (n,), dtype, 0.5, 1.5)
    gaps = S.array(data, (m,), _F64, 0.1, 0.3)
    t = np.cumsum(gaps) - gaps[0]  # t[0] = 0, increasing
    rhs = data.draw(st.sampled_from(_RHS), label="rhs")

    graph = make_graph(rhs)(y0, 0.0, k)
    assert graph.in_avals[1] == Aval((), _F64, weak_type=True)
    return (y0, t, k), graph


def _odeint(data, dtype):
    args, graph = _problem(data, dtype)
    return args, {"func": graph, **_ODEINT}


def _solve_ivp(data, dtype):
    args, graph = _problem(data, dtype)
    method = data.draw(st.sampled_from([1, 2]), label="method")  # RK45, DOP853
    return args, {"func": graph, **_IVP, "method": method}


SAMPLES = {
    ode.odeint_p: Sample(_odeint, tol=1e-4),
    ode.solve_ivp_p: Sample(_solve_ivp, tol=1e-4),
}
