"""`tg.checkpoint` (remat): the same derivatives as without it, in every mode and against
`jax.checkpoint`; residuals really recomputed in the backward graph (the forward graph keeps
only what the policy saves); policies and `checkpoint_name`; simplification never merging
across the boundary; graphs that print, serialize and run as code; errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.primitives import custom
from tracegrad.transforms.simplify import BARRIER_PRIMITIVES
from tracegrad.transforms.vjp import vjp_graph

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)
ad_checkpoint = pytest.importorskip("jax.ad_checkpoint")

RNG = np.random.default_rng(7)
X = RNG.standard_normal((3, 4))
WS = [RNG.standard_normal((4, 4)) * 0.5 for _ in range(4)]
P = tg.checkpoint_policies


def block(m, name):
    """Two tanh layers, the first one's output named `name` (for the name policies)."""

    def f(x, a, b):
        return m.tanh(name(m.tanh(x @ a), "h") @ b)

    return f


def chain(lib, m, policy, name):
    def loss(x, ws):
        step = lib.checkpoint(block(m, name), policy=policy)
        for i in range(0, len(ws), 2):
            x = step(x, ws[i], ws[i + 1])
        return m.sum(x * x)

    return loss


def plain(x, ws):
    for w in ws:
        x = np.tanh(x @ w)
    return np.sum(x * x)


def _jax_name(x, name):
    return ad_checkpoint.checkpoint_name(x, name)


POLICIES = {
    "default": (None, None),
    "everything": (P.everything_saveable, jax.checkpoint_policies.everything_saveable),
    "dots": (P.dots_saveable, jax.checkpoint_policies.dots_saveable),
    "names": (P.save_only_these_names("h"), jax.checkpoint_policies.save_only_these_names("h")),
    "all names but": (P.save_any_names_but_these("z"), None),
    "all but names": (P.save_anything_except_these_names("h"), None),
}


@pytest.mark.parametrize("policy", list(POLICIES))
def test_derivatives_equal_the_unchecked_ones_and_jax(policy):
    ours, theirs = POLICIES[policy]
    f = chain(tg, np, ours, tg.checkpoint_name)
    want = tg.grad(plain, argnums=(0, 1))(X, WS)
    np.testing.assert_array_equal(f(X, WS), plain(X, WS))
    for got in (tg.grad(f, argnums=(0, 1))(X, WS), tg.jit(tg.grad(f, argnums=(0, 1)))(X, WS)):
        for g, w in zip(tg.tree.leaves(got), tg.tree.leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)
    fj = chain(jax, jnp, theirs, _jax_name)
    np.testing.assert_allclose(tg.grad(f)(X, WS), jax.grad(fj)(X, WS), rtol=1e-12)
    np.testing.assert_allclose(
        tg.hessian(lambda v: f(v.reshape(X.shape), WS))(X.ravel()),
        jax.hessian(lambda v: fj(v.reshape(X.shape), WS))(X.ravel()),
        rtol=1e-10,
        atol=1e-13,
    )
    xs = np.stack([X, -X])
    np.testing.assert_allclose(
        tg.vmap(tg.grad(f), in_axes=(0, None))(xs, WS),
        jax.vmap(jax.grad(fj), in_axes=(0, None))(xs, WS),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        tg.jvp(lambda x: f(x, WS), (X,), (X,))[1],
        jax.jvp(lambda x: fj(x, WS), (X,), (X,))[1],
        rtol=1e-12,
    )


def _forward_residual_bytes(f) -> int:
    graph = tg.make_graph(f)(X, WS)
    split = vjp_graph(graph, [True, False])
    return sum(e.aval.size * 8 for e in split.forward.outputs[len(graph.outputs) :])


def test_the_forward_graph_keeps_only_what_the_policy_saves():
    kept = {
        p: _forward_residual_bytes(chain(tg, np, POLICIES[p][0], tg.checkpoint_name))
        for p in ("default", "names", "dots", "everything")
    }
    unchecked = _forward_residual_bytes(plain)
    # unchecked: two tanh outputs kept per block pair (the W are constants there: not kept)
    assert kept["default"] < kept["names"] < kept["dots"] <= kept["everything"]
    assert kept["default"] < unchecked


def test_the_recomputation_is_one_node_of_the_backward_graph():
    f = tg.checkpoint(lambda x: np.sin(np.sin(x)))
    split = vjp_graph(tg.make_graph(f)(X))
    forward = [n.prim.name for n in split.forward.nodes if n.prim.name not in ("arg", "const")]
    backward = [n.prim.name for n in split.linear.nodes if n.prim.name not in ("arg", "const")]
    assert forward == ["checkpoint"] and backward == ["checkpoint"]
    (residual,) = split.forward.outputs[1:]
    assert residual == split.forward.inputs[0]  # only the input is kept
    remat = [n.prim.name for n in split.linear.nodes[-1].params["body"].nodes]
    assert remat == ["sin", "cos", "cos", "multiply", "multiply"]  # the inner sin recomputed


def test_simplification_does_not_merge_across_the_boundary():
    def f(x):
        y = np.sin(x) * 2.0
        return np.sum(tg.checkpoint(lambda v: np.sin(v) * 2.0)(x) + y)

    graph = tg.jit(tg.value_and_grad(f)).lower(X).graph
    names = [n.prim.name for n in graph.nodes]
    assert names.count("checkpoint") == 2  # the forward node and its recomputation
    assert names.count("sin") == 1  # the outer sin, not shared with the one inside
    forward, backward = [n for n in graph.nodes if n.prim is custom.checkpoint_p]
    assert [n.prim.name for n in forward.params["body"].nodes] == ["const", "sin", "multiply"]
    assert "cos" in [n.prim.name for n in backward.params["body"].nodes]
    assert custom.checkpoint_p in BARRIER_PRIMITIVES


def test_the_graph_prints_serializes_and_runs_as_code():
    f = chain(tg, np, P.save_only_these_names("h"), tg.checkpoint_name)
    graph = tg.make_graph(tg.grad(f))(X, WS)
    text = str(graph)
    assert "checkpoint[body={f}, n_saved=1]" in text and "checkpoint_name" not in text
    again = tg.ir.loads(tg.ir.dumps(graph))
    assert str(again) == text
    want = tg.grad(f)(X, WS)
    np.testing.assert_array_equal(again(X, WS), want)
    np.testing.assert_array_equal(tg.jit(tg.grad(f))(X, WS), want)


def test_static_argnums_and_closures():
    def f(x, n, c):
        for _ in range(n):  # a static argument may drive Python control flow
            x = np.sin(x) * c
        return x

    g = tg.checkpoint(f, static_argnums=(1,))

    def loss(x, c):
        return np.sum(tg.checkpoint(lambda v: g(v, 3, c) * c)(x))  # closes over a traced c

    want = tg.grad(lambda x, c: np.sum(f(x, 3, c) * c), argnums=(0, 1))(X, 0.7)
    got = tg.grad(loss, argnums=(0, 1))(X, 0.7)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_outside_any_transform_the_function_simply_runs():
    seen = []

    def f(x):
        seen.append(type(x))
        return x * 2

    assert tg.checkpoint(f)(X) is not None and seen == [np.ndarray]
    assert tg.remat is tg.checkpoint
    assert tg.checkpoint_name(X, "a") is X


def test_a_user_policy_with_jax_signature():
    calls = []

    def policy(prim, *avals, **params):
        calls.append(prim.name)
        return prim.name == "matmul"

    f = chain(tg, np, policy, tg.checkpoint_name)
    np.testing.assert_allclose(tg.grad(f)(X, WS), tg.grad(plain)(X, WS), rtol=1e-13, atol=1e-15)
    assert "matmul" in calls
    assert P.dots_saveable(custom.checkpoint_p) is False  # a policy answers JAX's question
    assert P.everything_saveable(custom.checkpoint_p) is True


def test_errors():
    with pytest.raises(TypeError, match="policy must be None or a policy function"):
        tg.checkpoint(np.sin, policy="dots")
    with pytest.raises(ValueError, match=r"static_argnums 2 is out of range for 1"):
        tg.grad(tg.checkpoint(np.sin, static_argnums=2))(0.5)
    with pytest.raises(TypeError, match="checkpoint_name: name must be a str, got int"):
        tg.checkpoint_name(X, 3)
    with pytest.raises(TypeError, match="names must be strings, got 1"):
        P.save_only_these_names(1)
    with pytest.raises(tg.ConcretizationError):
        tg.grad(tg.checkpoint(lambda x: x if x > 0 else -x))(0.5)


def test_pytorch_style_tensors_go_through_the_same_transform():
    torch = tg.torch
    x = torch.tensor(X, requires_grad=True)
    w = torch.tensor(WS[0], requires_grad=True)  # closed over: its gradient flows too
    y = tg.checkpoint(lambda v: np.tanh(np.tanh(v @ w) @ w))(x)
    assert y.grad_fn.name() == "CheckpointBackward0"
    y.sum().backward()
    want = tg.grad(lambda v, w: np.sum(np.tanh(np.tanh(v @ w) @ w)), argnums=(0, 1))(X, WS[0])
    np.testing.assert_allclose(x.grad.numpy(), want[0], rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), want[1], rtol=1e-14)


def test_a_checkpointed_scan_body():
    def loss(x, ws, remat):
        def step(c, w):
            body = lambda c: np.tanh(c @ w)  # noqa: E731
            return (tg.checkpoint(body) if remat else body)(c), None

        return np.sum(tg.scan(step, x, np.stack(ws))[0])

    want = tg.grad(loss)(X, WS, False)
    for grad in (tg.grad(loss), tg.jit(tg.grad(loss), static_argnums=2)):
        np.testing.assert_allclose(grad(X, WS, True), want, rtol=1e-14)
    np.testing.assert_allclose(tg.jacfwd(loss)(X, WS, True), want, rtol=1e-14)
