"""tracegrad.scipy.integrate: odeint's values are SciPy's bits (eagerly, traced, under jit);
its derivatives (adjoint reverse mode, sensitivity forward mode, second order) agree with
finite differences of SciPy at tight tolerances, a fine fixed-step RK4 under tg.grad, and
jax.experimental.ode; the adjoint's memory does not grow with the solver's steps; the
quadrature rules give SciPy's values and differentiate; bad input gets clear errors.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.primitives import ode as ode_p
from tracegrad.scipy import integrate as ti
from tracegrad.testing import check_grads

si = pytest.importorskip("scipy.integrate")

Y0 = np.array([1.0, 0.5])
T = np.linspace(0.0, 2.0, 5)
A, B = 1.3, 0.2
TIGHT = {"rtol": 1e-11, "atol": 1e-11}


def rhs(y, t, a, b):
    """A damped oscillator forced in time, written with tracegrad.numpy."""
    return tnp.stack([y[1], -a * y[0] - b * y[1] * tnp.sin(t)])


def rhs_np(y, t, a, b):
    """The same right-hand side for SciPy."""
    return np.array([y[1], -a * y[0] - b * y[1] * np.sin(t)])


def _fd(fn, x, eps=1e-4):
    """Central differences of `fn` at the float or 1-D array `x` (one column per element). The
    step is large for differences of an adaptive solver: its error (1e-11) over the step is the
    noise, the step squared the truncation error."""
    x = np.asarray(x, float)
    cols = []
    for e in np.eye(x.size).reshape((x.size, *x.shape)) if x.ndim else [np.float64(1.0)]:
        cols.append((fn(x + eps * e) - fn(x - eps * e)) / (2 * eps))
    return np.array(cols)


# -- values -----------------------------------------------------------------------------------


def test_values_are_scipys_bits_eager_traced_and_jitted():
    ref = si.odeint(rhs_np, Y0, T, args=(A, B))
    np.testing.assert_array_equal(ti.odeint(rhs, Y0, T, args=(A, B)), ref)
    graph = tg.make_graph(lambda y0, t: ti.odeint(rhs, y0, t, args=(A, B)))(Y0, T)
    np.testing.assert_array_equal(graph(Y0, T), ref)
    jitted = tg.jit(lambda y0, t, a: ti.odeint(rhs, y0, t, args=(a, B)))
    np.testing.assert_array_equal(jitted(Y0, T, A), ref)
    from tracegrad.codegen.compiled import compile_graph

    assert "_scipy_integrate.odeint(" in compile_graph(graph).source


def test_options_tfirst_scalar_y0_decreasing_t_and_closures_match_scipy():
    opts = {"rtol": 1e-9, "atol": 1e-10, "hmax": 0.3, "mxstep": 2000, "tcrit": [1.5]}
    ref = si.odeint(rhs_np, Y0, T, args=(A, B), **opts)
    np.testing.assert_array_equal(ti.odeint(rhs, Y0, T, args=(A, B), **opts), ref)
    ref = si.odeint(lambda t, y, a, b: rhs_np(y, t, a, b), Y0, T, args=(A, B), tfirst=True)
    got = ti.odeint(lambda t, y, a, b: rhs(y, t, a, b), Y0, T, args=(A, B), tfirst=True)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(
        ti.odeint(lambda y, t: -2.0 * y, 1.0, [0.0, 1.0]),
        si.odeint(lambda y, t: -2.0 * y, 1.0, [0.0, 1.0]),
    )
    back = T[::-1].copy()
    np.testing.assert_array_equal(
        ti.odeint(rhs, Y0, back, args=(A, B)), si.odeint(rhs_np, Y0, back, args=(A, B))
    )
    k = np.array([0.7, -0.4])
    np.testing.assert_array_equal(
        ti.odeint(lambda y, t: k * y, Y0, T), si.odeint(lambda y, t: k * y, Y0, T)
    )


def test_derivative_odeints_compile_once_per_graph():
    graph, _ = ti.trace_rhs(rhs, 2, (A, B), False)
    ti.odeint(rhs, Y0, T, args=(A, B))
    from tracegrad.transforms import ode

    assert ode._compiled(graph) is ode._compiled(graph)
    assert ode._adjoint_graph(graph) is ode._adjoint_graph(graph)


# -- reverse mode -----------------------------------------------------------------------------


def _loss(y0, t, a):
    ys = ti.odeint(rhs, y0, t, args=(a, B), **TIGHT)
    return tnp.sum(ys * ys) + tnp.sum(ys[:, 0] * tnp.arange(5.0))


def _loss_np(y0, t, a):
    ys = si.odeint(rhs_np, y0, t, args=(a, B), **TIGHT)
    return np.sum(ys * ys) + np.sum(ys[:, 0] * np.arange(5.0))


def test_gradients_in_y0_t_and_args_match_finite_differences():
    g_y0, g_t, g_a = tg.grad(_loss, argnums=(0, 1, 2))(Y0, T, A)
    np.testing.assert_allclose(g_y0, _fd(lambda x: _loss_np(x, T, A), Y0), rtol=1e-6)
    np.testing.assert_allclose(g_t, _fd(lambda x: _loss_np(Y0, x, A), T), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g_a, _fd(lambda x: _loss_np(Y0, T, x), A)[0], rtol=1e-6)


def test_gradient_in_a_float32_arg_is_the_float64_one_to_float32_precision():
    # the adjoint integrates the arg's cotangent in float64: one rounded to float32 at every
    # evaluation made the right-hand side too rough for the tolerance, and LSODA gave up
    def loss(k, y0):
        ys = ti.odeint(lambda y, t, k: k * tnp.sin(y) + tnp.cos(t) * 0.5, y0, T[:3], (k,), **TIGHT)
        return tnp.sum(ys**2)

    k64 = np.array([0.25, 0.28125])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ODEintWarning (excess work done)
        g32 = tg.grad(loss, argnums=(0, 1))(k64.astype(np.float32), Y0)
    g64 = tg.grad(loss, argnums=(0, 1))(k64, Y0)
    assert g32[0].dtype == np.float32 and g32[1].dtype == np.float64
    np.testing.assert_allclose(g32[0], g64[0], rtol=1e-6)
    np.testing.assert_allclose(g32[1], g64[1], rtol=1e-9)


def _rk4(f, y0, t, args, steps):
    """A fixed-step RK4 through the times `t`, `steps` steps per interval, with tracegrad ops
    (tg.grad differentiates through every step: the discretize-then-differentiate oracle)."""
    ys, y = [y0], y0
    for i in range(len(t) - 1):
        h = (t[i + 1] - t[i]) / steps
        for k in range(steps):
            s = t[i] + k * h
            k1 = f(y, s, *args)
            k2 = f(y + h / 2 * k1, s + h / 2, *args)
            k3 = f(y + h / 2 * k2, s + h / 2, *args)
            k4 = f(y + h * k3, s + h, *args)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return tnp.stack(ys)


def test_gradients_match_a_fine_fixed_step_rk4_under_grad():
    def rk4_loss(y0, t, a):
        ys = _rk4(rhs, y0, t, (a, B), 60)
        return tnp.sum(ys * ys) + tnp.sum(ys[:, 0] * tnp.arange(5.0))

    got = tg.grad(_loss, argnums=(0, 1, 2))(Y0, T, A)
    want = tg.grad(rk4_loss, argnums=(0, 1, 2))(Y0, T, A)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-8)


def test_gradients_match_jax_experimental_ode():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    from jax.experimental.ode import odeint as jodeint

    def jrhs(y, t, a):
        return jnp.stack([y[1], -a * y[0] - B * y[1] * jnp.sin(t)])

    def jloss(y0, t, a):
        ys = jodeint(jrhs, y0, t, a, rtol=1e-11, atol=1e-11)
        return jnp.sum(ys * ys) + jnp.sum(ys[:, 0] * jnp.arange(5.0))

    want = jax.grad(jloss, argnums=(0, 1, 2))(jnp.asarray(Y0), jnp.asarray(T), A)
    got = tg.grad(_loss, argnums=(0, 1, 2))(Y0, T, A)
    for g, w in zip(got, want):  # two solvers (LSODA, Dormand-Prince): their tolerances
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-7, atol=1e-8)


def test_gradient_flows_to_values_the_function_closes_over():
    k = np.array([0.7, -0.4])

    def loss(k):
        return tnp.sum(ti.odeint(lambda y, t: k * y, Y0, T, **TIGHT))

    want = _fd(lambda k: np.sum(si.odeint(lambda y, t: k * y, Y0, T, **TIGHT)), k)
    np.testing.assert_allclose(tg.grad(loss)(k), want, rtol=1e-6)


def test_second_derivative_in_an_arg_matches_finite_differences():
    # differences of the (tested) first derivative: second differences of a solver's values
    # would divide its error by the step squared
    h = tg.grad(tg.grad(_loss, argnums=2), argnums=2)(Y0, T, A)
    fd = _fd(lambda a: tg.grad(_loss, argnums=2)(Y0, T, a), A)[0]
    np.testing.assert_allclose(h, fd, rtol=1e-6)
    hy = tg.hessian(lambda y0: _loss(y0, T, A))(Y0)
    fd = _fd(lambda y: tg.grad(_loss)(y, T, A), Y0)
    np.testing.assert_allclose(hy, fd, rtol=1e-6)
    mixed = tg.jacfwd(tg.grad(_loss, argnums=1), argnums=2)(Y0, T, A)
    fd = _fd(lambda a: tg.grad(_loss, argnums=1)(Y0, T, a), A)[0]
    np.testing.assert_allclose(mixed, fd, rtol=1e-5, atol=1e-7)


def test_check_grads_both_modes_to_second_order():
    def f(y0, a):
        return ti.odeint(rhs, y0, T[:3], args=(a, B), **TIGHT)

    check_grads(f, (Y0, A), order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_grad_under_jit_equals_eager():
    g = tg.grad(_loss, argnums=(0, 1, 2))
    for a, b in zip(tg.jit(g)(Y0, T, A), g(Y0, T, A)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_adjoint_memory_does_not_grow_with_solver_steps():
    def f(y, t, a):
        return tnp.stack([y[1], -a * tnp.sin(y[0])])

    def peak(span):
        t = np.array([0.0, span])
        g = tg.grad(lambda y0, a: tnp.sum(ti.odeint(f, y0, t, (a,), mxstep=10**5)), (0, 1))
        g(Y0, 2.0)  # traced and compiled once
        tracemalloc.start()
        try:
            g(Y0, 2.0)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    def steps(span):
        fn = lambda y, t: np.array([y[1], -2.0 * np.sin(y[0])])  # noqa: E731
        out = si.odeint(fn, Y0, [0.0, span], mxstep=10**5, full_output=1)
        return out[1]["nst"][-1]

    assert steps(30.0) >= 10 * steps(1.0)
    assert peak(30.0) < 1.2 * peak(1.0)


# -- forward mode and batching ----------------------------------------------------------------


def test_jvp_matches_finite_differences():
    def f(y0, t, a):
        return ti.odeint(rhs, y0, t, args=(a, B), **TIGHT)

    d = (np.array([0.3, -0.2]), np.array([0.1, 0.0, 0.2, 0.0, -0.1]), 0.5)
    out, tan = tg.jvp(f, (Y0, T, A), d)
    np.testing.assert_array_equal(out, si.odeint(rhs_np, Y0, T, args=(A, B), **TIGHT))
    e = 1e-4

    def g(s):
        return si.odeint(rhs_np, Y0 + s * d[0], T + s * d[1], args=(A + s * d[2], B), **TIGHT)

    np.testing.assert_allclose(tan, (g(e) - g(-e)) / (2 * e), rtol=1e-6, atol=1e-8)


def test_vmap_is_a_loop_of_scipy_calls_bit_for_bit():
    y0s = np.stack([Y0, 2 * Y0, -Y0])
    a_s = np.array([1.0, 1.3, 0.4])
    got = tg.vmap(lambda y, a: ti.odeint(rhs, y, T, args=(a, B)))(y0s, a_s)
    for i in range(3):
        np.testing.assert_array_equal(got[i], si.odeint(rhs_np, y0s[i], T, args=(a_s[i], B)))
    per_example = tg.vmap(tg.grad(_loss, argnums=(0, 2)), in_axes=(0, None, 0))(y0s, T, a_s)
    for i in range(3):  # the derivative integrations batch the same way
        for got, want in zip(per_example, tg.grad(_loss, argnums=(0, 2))(y0s[i], T, a_s[i])):
            np.testing.assert_array_equal(got[i], want)
    jac = tg.jacrev(lambda y0: ti.odeint(rhs, y0, T, args=(A, B), **TIGHT)[-1])(Y0)
    fd = _fd(lambda y: si.odeint(rhs_np, y, T, args=(A, B), **TIGHT)[-1], Y0).T
    np.testing.assert_allclose(jac, fd, rtol=1e-6)


# -- bad input --------------------------------------------------------------------------------


def test_func_returning_the_wrong_size_is_named():
    with pytest.raises(RuntimeError, match=r"returned by func .*\(3, shape \(3,\)\).*y0 \(2\)"):
        ti.odeint(lambda y, t: tnp.ones(3), Y0, T)


def test_t_not_monotonic_is_refused():
    with pytest.raises(ValueError, match="monotonically increasing or monotonically decreasing"):
        ti.odeint(rhs, Y0, [0.0, 1.0, 0.5], args=(A, B))
    with pytest.raises(ValueError, match="monotonically"):  # under jit SciPy's own check
        tg.jit(lambda t: ti.odeint(rhs, Y0, t, args=(A, B)))(np.array([0.0, 1.0, 0.5]))


def test_y0_must_be_one_dimensional_and_real():
    with pytest.raises(ValueError, match="y0 must be one-dimensional, got shape \\(2, 2\\)"):
        ti.odeint(lambda y, t: -y, np.ones((2, 2)), T)
    with pytest.raises(TypeError, match="y0 is complex"):
        ti.odeint(lambda y, t: -y, np.ones(2) * 1j, T)


def test_unsupported_options_are_refused_with_what_to_do():
    with pytest.raises(NotImplementedError, match="Dfun=.*drop Dfun"):
        ti.odeint(rhs, Y0, T, args=(A, B), Dfun=lambda y, t, a, b: np.eye(2))
    with pytest.raises(NotImplementedError, match="full_output"):
        ti.odeint(rhs, Y0, T, args=(A, B), full_output=1)
    with pytest.raises(NotImplementedError, match="ml=1"):
        ti.odeint(rhs, Y0, T, args=(A, B), ml=1)
    with pytest.raises(NotImplementedError, match="rtol must be one float"):
        ti.odeint(rhs, Y0, T, args=(A, B), rtol=[1e-6, 1e-6])


def test_complex_args_get_no_silent_gradient():
    def loss(c):
        return tnp.sum(ti.odeint(lambda y, t, c: -tnp.real(c) * y, Y0, T, args=(c,)))

    with pytest.raises(NotImplementedError, match="complex args"):
        tg.grad(loss)(np.complex128(1 + 1j))


def test_the_primitive_checks_its_operands():
    graph, extra = ti.trace_rhs(rhs, 2, (A, B), False)
    opts = {k: None for k in ("rtol", "atol", "tcrit")}
    opts.update(h0=0.0, hmax=0.0, hmin=0.0, mxstep=0, mxhnil=0, mxordn=12, mxords=5)
    with pytest.raises(TypeError, match="func takes"):  # (the shape rule: traced abstractly)
        tg.make_graph(lambda y: ode_p.odeint(y, T, *extra, func=graph, **opts))(np.ones(3))
    with pytest.raises(TypeError, match="mxstep must be a non-negative int"):
        tg.make_graph(lambda y: ode_p.odeint(y, T, *extra, func=graph, **{**opts, "mxstep": -1}))(
            Y0
        )


# -- solve_ivp --------------------------------------------------------------------------------

T_EVAL = np.linspace(0.5, 3.0, 6)


def pend(t, y, a):
    return tnp.stack([y[1], -a * tnp.sin(y[0])])


def pend_np(t, y, a):
    return np.array([y[1], -a * np.sin(y[0])])


@pytest.mark.parametrize("method", ["RK45", "DOP853", "RK23"])
def test_solve_ivp_values_are_scipys_bits(method):
    kw = {"method": method, "args": (2.0,), "rtol": 1e-8, "atol": 1e-9}
    for t_eval in (T_EVAL, np.linspace(0.0, 3.0, 4)):  # (t_eval[0] == t_span[0] too)
        want = si.solve_ivp(pend_np, (0.0, 3.0), Y0, t_eval=t_eval, **kw)
        got = ti.solve_ivp(pend, (0.0, 3.0), Y0, t_eval=t_eval, **kw)
        np.testing.assert_array_equal(got.y, want.y)
        np.testing.assert_array_equal(got.t, want.t)
        assert got.success and got.status == 0
        jitted = tg.jit(
            lambda y0, t_eval: ti.solve_ivp(pend, (0.0, 3.0), y0, t_eval=t_eval, **kw).y
        )
        np.testing.assert_array_equal(jitted(Y0, t_eval), want.y)
    back = si.solve_ivp(pend_np, (3.0, 0.0), Y0, t_eval=T_EVAL[::-1], **kw)
    np.testing.assert_array_equal(
        ti.solve_ivp(pend, (3.0, 0.0), Y0, t_eval=T_EVAL[::-1], **kw).y, back.y
    )


def _ivp_loss(y0, t0, t_eval, a):
    kw = {"method": "DOP853", "rtol": 1e-11, "atol": 1e-11}
    return tnp.sum(ti.solve_ivp(pend, (t0, 3.0), y0, t_eval=t_eval, args=(a,), **kw).y ** 2)


def _ivp_loss_np(y0, t0, t_eval, a):
    kw = {"method": "DOP853", "rtol": 1e-11, "atol": 1e-11}
    return np.sum(si.solve_ivp(pend_np, (t0, 3.0), y0, t_eval=t_eval, args=(a,), **kw).y ** 2)


def test_solve_ivp_gradients_match_finite_differences():
    g_y0, g_t0, g_te, g_a = tg.grad(_ivp_loss, argnums=(0, 1, 2, 3))(Y0, 0.0, T_EVAL, 2.0)
    np.testing.assert_allclose(
        g_y0, _fd(lambda x: _ivp_loss_np(x, 0.0, T_EVAL, 2.0), Y0), rtol=1e-6
    )
    np.testing.assert_allclose(
        g_t0, _fd(lambda x: _ivp_loss_np(Y0, x, T_EVAL, 2.0), 0.0)[0], rtol=1e-6
    )
    inner = T_EVAL[:-1]  # (moving the last time past t_span[1] leaves SciPy's span)
    fd = _fd(lambda x: _ivp_loss_np(Y0, 0.0, np.append(x, 3.0), 2.0), inner)
    np.testing.assert_allclose(g_te[:-1], fd, rtol=1e-6)
    np.testing.assert_allclose(
        g_a, _fd(lambda x: _ivp_loss_np(Y0, 0.0, T_EVAL, x), 2.0)[0], rtol=1e-6
    )


def test_solve_ivp_forward_mode_second_order_and_vmap():
    kw = {"t_eval": T_EVAL, "rtol": 1e-10, "atol": 1e-10}

    def f(a):
        return ti.solve_ivp(pend, (0.0, 3.0), Y0, args=(a,), **kw).y

    def f_np(a):
        return si.solve_ivp(pend_np, (0.0, 3.0), Y0, args=(a,), **kw).y

    _, tan = tg.jvp(f, (2.0,), (1.0,))
    np.testing.assert_allclose(tan, _fd(f_np, 2.0)[0], rtol=1e-5, atol=1e-8)
    h = tg.grad(tg.grad(_ivp_loss, argnums=3), argnums=3)(Y0, 0.0, T_EVAL, 2.0)
    fd = _fd(lambda a: tg.grad(_ivp_loss, argnums=3)(Y0, 0.0, T_EVAL, a), 2.0)[0]
    np.testing.assert_allclose(h, fd, rtol=1e-6)
    y0s = np.stack([Y0, 0.5 * Y0])
    got = tg.vmap(lambda y0: ti.solve_ivp(pend, (0.0, 3.0), y0, t_eval=T_EVAL, args=(2.0,)).y)(y0s)
    for i in range(2):
        want = si.solve_ivp(pend_np, (0.0, 3.0), y0s[i], t_eval=T_EVAL, args=(2.0,)).y
        np.testing.assert_array_equal(got[i], want)


def test_solve_ivp_bad_input():
    with pytest.raises(NotImplementedError, match="pass t_eval to differentiate"):
        tg.grad(lambda y0: tnp.sum(ti.solve_ivp(pend, (0.0, 1.0), y0, args=(2.0,)).y))(Y0)
    plain = ti.solve_ivp(pend_np, (0.0, 1.0), Y0, args=(2.0,))  # no t_eval, nothing traced: SciPy's
    np.testing.assert_array_equal(plain.y, si.solve_ivp(pend_np, (0.0, 1.0), Y0, args=(2.0,)).y)
    with pytest.raises(NotImplementedError, match="method='Radau' is not supported"):
        ti.solve_ivp(pend, (0.0, 1.0), Y0, method="Radau", t_eval=T_EVAL[:1], args=(2.0,))
    with pytest.raises(NotImplementedError, match="events"):
        ti.solve_ivp(pend, (0.0, 1.0), Y0, t_eval=T_EVAL[:1], events=lambda t, y: y[0])
    with pytest.raises(RuntimeError, match=r"solve_ivp: the size of the array returned by func"):
        ti.solve_ivp(lambda t, y: tnp.ones(3), (0.0, 1.0), Y0, t_eval=T_EVAL[:1])
    with pytest.raises(ValueError, match="not within `t_span`"):  # SciPy's own check
        ti.solve_ivp(pend, (0.0, 1.0), Y0, t_eval=T_EVAL, args=(2.0,))
    with pytest.raises(RuntimeError, match="the integration failed"):
        ti.solve_ivp(lambda t, y: y**2, (0.0, 2.0), np.array([1.0]), t_eval=[1.5])


# -- quadrature of sampled data ---------------------------------------------------------------

X = np.array([0.0, 0.3, 0.7, 1.2, 1.4, 2.0, 2.9])
YS = np.sin(np.outer([1.0, 2.0, 0.5], X))


@pytest.mark.parametrize("n", [2, 3, 6, 7])
def test_quadrature_values_are_scipys_bits(n):
    x, y = X[:n], YS[:, :n]
    cases = [
        (ti.trapezoid, si.trapezoid, {}),
        (ti.trapezoid, si.trapezoid, {"x": x}),
        (ti.trapezoid, si.trapezoid, {"dx": 0.3}),
        (ti.simpson, si.simpson, {}),
        (ti.simpson, si.simpson, {"x": x}),
        (ti.simpson, si.simpson, {"dx": 0.3}),
        (ti.cumulative_trapezoid, si.cumulative_trapezoid, {"x": x}),
        (ti.cumulative_trapezoid, si.cumulative_trapezoid, {"dx": 0.3, "initial": 0}),
    ]
    for ours, theirs, kw in cases:
        want = theirs(y, **kw)
        np.testing.assert_array_equal(ours(y, **kw), want)
        np.testing.assert_array_equal(tg.jit(lambda y, ours=ours, kw=kw: ours(y, **kw))(y), want)
        np.testing.assert_array_equal(ours(y.T, axis=0, **kw), theirs(y.T, axis=0, **kw))


def test_quadrature_gradients_match_jax_and_finite_differences():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsi = jax.scipy.integrate
    got = tg.grad(lambda y, x: tnp.sum(ti.trapezoid(y, x=x) ** 2), (0, 1))(YS, X)
    want = jax.grad(lambda y, x: (jsi.trapezoid(y, x=x) ** 2).sum(), (0, 1))(YS, X)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12)
    for n in (6, 7):
        check_grads(lambda y, x: ti.simpson(y, x=x), (YS[:, :n], X[:n]), order=2)
        check_grads(lambda y, x: ti.cumulative_trapezoid(y, x=x), (YS[:, :n], X[:n]), order=1)


def test_quadrature_bad_input():
    with pytest.raises(ValueError, match="length of x along axis"):
        ti.cumulative_trapezoid(YS, x=X[:3])
    with pytest.raises(ValueError, match="`initial` must be `None` or `0`"):
        ti.cumulative_trapezoid(YS, initial=1.0)
    with pytest.raises(ValueError, match="length of x along axis"):
        ti.simpson(YS, x=X[:3])


def test_scipy_warnings_pass_through():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ti.odeint(rhs, Y0, [0.0, 100.0], args=(A, B), mxstep=5)
    assert any("Excess work" in str(w.message) for w in seen)


def test_a_failed_integration_of_a_derivative_raises_while_the_forward_one_passes():
    # mxstep = 130 is enough for this problem and not for its adjoint or sensitivity system:
    # SciPy would warn and return what it had, a wrong derivative
    t = np.linspace(0.0, 10.0, 3)

    def loss(p, mxstep=130):
        def f(y, s, p):
            return -p * y + tnp.sin(3 * s) * y * y

        return tnp.sum(ti.odeint(f, Y0, t, args=(p,), mxstep=mxstep, rtol=1e-10, atol=1e-10))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the forward integration succeeds: no warning)
        assert np.isfinite(loss(2.0))
    derivatives = {
        "grad": tg.grad(loss),
        "jit(grad)": tg.jit(tg.grad(loss)),
        "jvp": lambda p: tg.jvp(loss, (p,), (1.0,)),
    }
    for name, fn in derivatives.items():
        with pytest.raises(RuntimeError, match="integration of the derivative failed: Excess"):
            fn(2.0)
            pytest.fail(f"{name}: no error")
    # with room for the derivative's integrations, the same derivative is right
    np.testing.assert_allclose(
        tg.grad(loss)(2.0, 5000), _fd(lambda p: loss(p, 5000), 2.0)[0], rtol=1e-5
    )


def test_the_code_blocks_of_the_docs_run():
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "scipy_integrate.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) == 3
    for block in blocks:
        exec(compile(block, str(page), "exec"), {})  # the blocks assert their results
