"""vmap: in_axes/out_axes, nesting, composition with grad, and its errors. The oracle is a
Python loop over the batch."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg


def loop(f, in_axes, *args, out_axis=0):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [
        f(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)])
        for b in range(size)
    ]
    return np.stack(outs, axis=out_axis)


def test_vmap_matches_a_loop_for_every_batch_axis():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 4))
    f = lambda x, w: np.tanh(x @ w).sum() + np.max(x)
    for axis in (0, 1, -1):
        xs = rng.standard_normal((5, 3)) if axis == 0 else rng.standard_normal((3, 5))
        got = tg.vmap(f, in_axes=(axis, None))(xs, w)
        want = loop(f, (axis % 2, None), xs, w)
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_unbatched_values_stay_unbatched():
    w = np.arange(6.0).reshape(2, 3)
    x = np.ones((4, 2))
    g = tg.make_graph(tg.vmap(lambda x, w: np.sin(w) + np.sum(x), in_axes=(0, None)))(x, w)
    # sin(w) is computed once, unbatched
    sins = [n for n in g.nodes if n.prim.name == "sin"]
    assert len(sins) == 1 and sins[0].out_avals[0].shape == (2, 3)


def test_out_axes_and_pytrees():
    xs = {"a": np.ones((3, 2)), "b": np.arange(3.0)}
    out = tg.vmap(lambda d: (d["a"] * d["b"], d["b"]), out_axes=(1, 0))(xs)
    assert out[0].shape == (2, 3) and out[1].shape == (3,)
    np.testing.assert_array_equal(out[0], (xs["a"] * xs["b"][:, None]).T)


def test_in_axes_pytree_prefix_and_none():
    p = {"w": np.ones(2), "s": np.array([1.0, 2.0, 3.0])}
    f = lambda p, x: p["w"] * p["s"] + x
    out = tg.vmap(f, in_axes=({"w": None, "s": 0}, None))(p, np.zeros(2))
    np.testing.assert_array_equal(out, p["s"][:, None] * p["w"])


def test_unbatched_output_is_broadcast():
    out = tg.vmap(lambda x: 2.0, in_axes=0)(np.ones(3))
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])


def test_nested_vmap_is_an_outer_product():
    a, b = np.arange(3.0), np.arange(4.0)
    out = tg.vmap(lambda x: tg.vmap(lambda y: x * y)(b))(a)
    np.testing.assert_array_equal(out, np.outer(a, b))


def test_per_example_gradients_equal_a_loop():
    rng = np.random.default_rng(2)
    w = rng.standard_normal(3)
    xs, ys = rng.standard_normal((6, 3)), rng.standard_normal(6)

    def loss(w, x, y):
        return (np.tanh(np.dot(x, w)) - y) ** 2

    got = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
    want = np.stack([tg.grad(loss)(w, x, y) for x, y in zip(xs, ys)])
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_grad_of_vmap_and_vmap_of_grad_agree():
    xs = np.linspace(-1, 1, 5)
    g1 = tg.grad(lambda x: np.sum(tg.vmap(np.sin)(x) ** 2))(xs)
    g2 = tg.vmap(tg.grad(lambda x: np.sin(x) ** 2))(xs)
    np.testing.assert_allclose(g1, g2, rtol=1e-15)
    np.testing.assert_allclose(g1, 2 * np.sin(xs) * np.cos(xs), rtol=1e-14)


def test_vmap_errors():
    with pytest.raises(ValueError, match="inconsistent batch sizes"):
        tg.vmap(lambda x, y: x + y)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"along axis 2, .* shape \(3, 4\)"):
        tg.vmap(np.sin, in_axes=2)(np.ones((3, 4)))
    with pytest.raises(ValueError, match="one entry per positional argument"):
        tg.vmap(lambda x, y: x, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="at least one batched argument"):
        tg.vmap(np.sin, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match="out_axes is None for an output that depends"):
        tg.vmap(np.sin, out_axes=None)(np.ones(3))
    with pytest.raises(tg.ConcretizationError):
        tg.vmap(lambda x: x if x > 0 else -x)(np.ones(3))


# -- axis_size ---------------------------------------------------------------------------------


def test_axis_size_broadcasts_when_nothing_is_batched_as_jax():
    jax = pytest.importorskip("jax")
    x = np.arange(3.0)
    ours = tg.vmap(lambda x: x * 2.0, in_axes=None, axis_size=4)(x)
    theirs = jax.vmap(lambda x: x * 2.0, in_axes=None, axis_size=4)(x)
    np.testing.assert_array_equal(ours, np.asarray(theirs))
    assert ours.shape == (4, 3)
    ours = tg.vmap(lambda: np.ones(2), axis_size=3, out_axes=1)()
    np.testing.assert_array_equal(ours, np.ones((2, 3)))
    # with batched arguments it is checked against their size
    np.testing.assert_array_equal(tg.vmap(np.sin, axis_size=3)(x), np.sin(x))


def test_axis_size_errors():
    x = np.arange(3.0)
    with pytest.raises(ValueError, match="axis_size is 4; leaf 0 of shape"):
        tg.vmap(np.sin, axis_size=4)(x)
    with pytest.raises(ValueError, match="or axis_size="):
        tg.vmap(np.sin, in_axes=None)(x)
    with pytest.raises(TypeError, match="axis_size must be a non-negative int"):
        tg.vmap(np.sin, axis_size=2.0)
    # JAX's axis_name names the axis for collectives, which tracegrad has none of: accepted
    np.testing.assert_array_equal(tg.vmap(np.sin, axis_name="i")(x), np.sin(x))
