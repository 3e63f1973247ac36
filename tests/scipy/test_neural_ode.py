"""A neural ODE, as the example test of tracegrad.scipy.integrate.odeint: a small MLP's dynamics
fitted to a spiral by a few gradient steps, the gradients by the adjoint method checked against
HIPS autograd's odeint (the same method, its own code) on the same problem.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.scipy import integrate as ti

si = pytest.importorskip("scipy.integrate")

TRUE_A = np.array([[-0.1, 2.0], [-2.0, -0.1]])
Y0 = np.array([2.0, 0.0])
T = np.linspace(0.0, 1.5, 8)
TOL = {"rtol": 1e-10, "atol": 1e-10}


def _data():
    return si.odeint(lambda y, t: TRUE_A @ y, Y0, T, **TOL)


def _init(seed=0):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=(2, 8)) * 0.5,
        np.zeros(8),
        rng.normal(size=(8, 2)) * 0.5,
        np.zeros(2),
    ]


def mlp(y, t, w1, b1, w2, b2):
    """dy/dt: one tanh layer, plain NumPy code (it traces unmodified)."""
    return np.tanh(y @ w1 + b1) @ w2 + b2


def loss(params, data):
    ys = ti.odeint(mlp, Y0, T, args=tuple(params), **TOL)
    return tnp.mean((ys - data) ** 2)


def test_a_few_training_steps_decrease_the_loss():
    data = _data()
    params = _init()
    value_and_grad = tg.jit(tg.value_and_grad(loss))
    losses = []
    for _ in range(3):
        value, grads = value_and_grad(params, data)
        losses.append(float(value))
        params = [p - 0.05 * g for p, g in zip(params, grads)]
    losses.append(float(loss(params, data)))
    assert losses[-1] < losses[0]
    assert all(b < a for a, b in zip(losses, losses[1:]))


def test_gradients_agree_with_autograds_odeint():
    ag = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    from autograd.builtins import tuple as ag_tuple
    from autograd.scipy.integrate import odeint as ag_odeint

    data = _data()
    params = _init(1)

    def ag_loss(params):
        ys = ag_odeint(
            lambda y, t, *p: anp.tanh(anp.dot(y, p[0]) + p[1]) @ p[2] + p[3],
            Y0,
            T,
            ag_tuple(params),  # (autograd's tuple: one that holds traced values)
            **TOL,
        )
        return anp.mean((ys - data) ** 2)

    want = ag.grad(ag_loss)(params)
    got = tg.grad(loss)(params, data)
    for g, w in zip(got, want):  # two adjoint integrations, each to 1e-10
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
