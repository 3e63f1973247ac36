"""Programs written for HIPS autograd (`import autograd.numpy as np`) run with
`tracegrad.numpy` in its place, unchanged.

Each program below is written once, against a module `np` it receives, in the style of
autograd's own examples (logistic regression, a softmax network, an RNN, a fluid simulation
with semi-Lagrangian advection, a mixture model, a small physics rollout). It runs twice: with
`autograd.numpy` under `autograd.grad` (the oracle) and with `tracegrad.numpy` under
`tg.grad`. Forward values agree bit for bit (both are NumPy underneath), gradients and
Hessian-vector products to rounding.
"""

from __future__ import annotations

import numpy as onp
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.testing import assert_bitwise_equal

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
differential_operators = pytest.importorskip("autograd.differential_operators")

RNG = onp.random.default_rng(0)


def logistic_regression(np, w, inputs, targets):
    def sigmoid(x):
        return 0.5 * (np.tanh(x / 2.0) + 1)

    preds = sigmoid(np.dot(inputs, w))
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities)) + 0.01 * np.dot(w, w)


def softmax_network(np, params, inputs, targets):
    """autograd's neural_net.py: tanh layers, a log-softmax written with logsumexp."""

    def logsumexp(x):
        m = np.max(x, axis=1, keepdims=True)
        return m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))

    (w1, b1), (w2, b2) = params
    hidden = np.tanh(np.dot(inputs, w1) + b1)
    outputs = np.dot(hidden, w2) + b2
    log_probs = outputs - logsumexp(outputs)
    return -np.mean(np.sum(log_probs * targets, axis=1))


def rnn(np, params, inputs):
    """autograd's rnn.py: the hidden state and the input concatenated at each step, outputs
    collected in a Python list and stacked."""
    w_hidden, w_out = params
    hidden = np.zeros((inputs.shape[1], w_hidden.shape[1]))
    outputs = []
    for x in inputs:
        hidden = np.tanh(np.dot(np.concatenate((x, hidden), axis=1), w_hidden))
        outputs.append(np.dot(hidden, w_out))
    outputs = np.array(outputs)
    return np.sum(outputs**2) / outputs.size + np.var(outputs)


def fluid_simulation(np, velocity):
    """autograd's fluidsim.py: advection by bilinear interpolation from back-traced positions
    (floor, astype(int), modular wrap-around, fancy indexing) and a pressure projection."""
    vx, vy = velocity[0], velocity[1]
    rows, cols = vx.shape

    def project(vx, vy):
        h = 1.0 / vx.shape[0]
        div = (
            -0.5
            * h
            * (
                np.roll(vx, -1, axis=0)
                - np.roll(vx, 1, axis=0)
                + np.roll(vy, -1, axis=1)
                - np.roll(vy, 1, axis=1)
            )
        )
        p = np.zeros(vx.shape)
        for _ in range(6):
            p = (
                div
                + np.roll(p, 1, axis=0)
                + np.roll(p, -1, axis=0)
                + np.roll(p, 1, axis=1)
                + np.roll(p, -1, axis=1)
            ) / 4.0
        vx = vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
        vy = vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
        return vx, vy

    def advect(f, vx, vy):
        cell_ys, cell_xs = np.meshgrid(np.arange(rows), np.arange(cols))
        center_xs = (cell_xs - vx).ravel()
        center_ys = (cell_ys - vy).ravel()
        left_ix = np.floor(center_xs).astype(int)
        top_ix = np.floor(center_ys).astype(int)
        rw = center_xs - left_ix
        bw = center_ys - top_ix
        left_ix = np.mod(left_ix, rows)
        right_ix = np.mod(left_ix + 1, rows)
        top_ix = np.mod(top_ix, cols)
        bot_ix = np.mod(top_ix + 1, cols)
        flat_f = (1 - rw) * ((1 - bw) * f[left_ix, top_ix] + bw * f[left_ix, bot_ix]) + rw * (
            (1 - bw) * f[right_ix, top_ix] + bw * f[right_ix, bot_ix]
        )
        return np.reshape(flat_f, (rows, cols))

    for _ in range(3):
        vx, vy = project(vx, vy)
        vx, vy = advect(vx, vx, vy), advect(vy, vx, vy)
    return np.sum(vx**2 + vy**2) + np.mean(np.abs(vx - vy))


def mixture_log_likelihood(np, params, data):
    """A Gaussian mixture in one dimension: log-sum-exp over components, weights by softmax."""
    logits, means, log_scales = params
    log_weights = logits - np.log(np.sum(np.exp(logits)))
    scales = np.exp(log_scales)
    z = (data[:, None] - means[None, :]) / scales[None, :]
    log_probs = -0.5 * z**2 - log_scales - 0.5 * np.log(2 * np.pi) + log_weights
    m = np.max(log_probs, axis=1)
    return np.sum(m + np.log(np.sum(np.exp(log_probs - m[:, None]), axis=1)))


def pendulum_rollout(np, theta0, omega0, length):
    """A Python loop of explicit steps, state kept in small arrays built with np.array, the
    trajectory stacked and clipped, and a loss on its last angle."""
    state = np.array([theta0, omega0])
    trajectory = []
    for _ in range(20):
        theta, omega = state[0], state[1]
        alpha = -9.81 / length * np.sin(theta) - 0.1 * omega
        state = state + 0.05 * np.array([omega, alpha])
        trajectory.append(state)
    trajectory = np.stack(trajectory)
    angles = np.clip(trajectory[:, 0], -1.0, 1.0)
    return np.sum(angles**2) + np.where(trajectory[-1, 1] > 0, 1.0, -1.0) * trajectory[-1, 0]


def _data():
    inputs = RNG.normal(size=(12, 4))
    targets = (RNG.random(12) > 0.5).astype(float)
    onehot = onp.eye(3)[RNG.integers(0, 3, 12)]
    params = [
        (RNG.normal(size=(4, 5)) * 0.5, RNG.normal(size=5) * 0.1),
        (RNG.normal(size=(5, 3)) * 0.5, onp.zeros(3)),
    ]
    rnn_params = (RNG.normal(size=(2 + 6, 6)) * 0.4, RNG.normal(size=(6, 2)) * 0.4)
    sequence = RNG.normal(size=(5, 3, 2))
    velocity = RNG.normal(size=(2, 6, 6)) * 0.4
    mixture = (RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=3) * 0.1)
    points = RNG.normal(size=20) * 2
    return {
        "logistic_regression": (logistic_regression, (RNG.normal(size=4) * 0.3, inputs, targets)),
        "softmax_network": (softmax_network, (params, inputs, onehot)),
        "rnn": (rnn, (rnn_params, sequence)),
        "fluid_simulation": (fluid_simulation, (velocity,)),
        "mixture_log_likelihood": (mixture_log_likelihood, (mixture, points)),
        "pendulum_rollout": (pendulum_rollout, (0.4, -0.2, 1.5)),
    }


PROGRAMS = _data()


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_values_and_gradients_match_hips_autograd(name):
    program, args = PROGRAMS[name]
    expected = program(anp, *args)
    assert_bitwise_equal(program(tnp, *args), expected)
    # the first argument (parameters), or each of the pendulum's three scalars
    argnums = (0, 1, 2) if name == "pendulum_rollout" else 0
    g_theirs = autograd.grad(lambda *a: program(anp, *a), argnums)(*args)
    value, g_ours = tg.value_and_grad(lambda *a: program(tnp, *a), argnums)(*args)
    assert_bitwise_equal(value, expected)
    for ours, theirs in zip(tg.tree.leaves(g_ours), tg.tree.leaves(g_theirs)):
        onp.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "name", ["logistic_regression", "softmax_network", "mixture_log_likelihood"]
)
def test_hessian_vector_products_match_hips_autograd(name):
    program, args = PROGRAMS[name]
    flat, unflatten = _flatten(args[0])
    v = RNG.normal(size=flat.size)

    def theirs(flat):
        return program(anp, unflatten(flat, anp), *args[1:])

    def ours(flat):
        return program(tnp, unflatten(flat, tnp), *args[1:])

    hvp_theirs = differential_operators.hessian_vector_product(theirs)(flat, v)
    hvp_ours = tg.jvp(tg.grad(ours), (flat,), (v,))[1]
    onp.testing.assert_allclose(hvp_ours, hvp_theirs, rtol=1e-9, atol=1e-12)


def _flatten(params):
    """A flat vector and its inverse (written with the module given, so it traces)."""
    leaves = tg.tree.leaves(params)
    shapes = [onp.shape(leaf) for leaf in leaves]
    sizes = [int(onp.prod(s)) for s in shapes]
    treedef = tg.tree.structure(params)

    def unflatten(flat, np):
        parts, start = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(np.reshape(flat[start : start + size], shape))
            start += size
        return tg.tree.unflatten(treedef, parts)

    return onp.concatenate([onp.ravel(leaf) for leaf in leaves]), unflatten
