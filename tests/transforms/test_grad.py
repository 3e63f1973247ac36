"""The functional reverse-mode API: grad, value_and_grad, vjp, stop_gradient.

Oracles: analytic derivatives, central finite differences, and plain NumPy for values.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests import strategies as S
from tracegrad.extend import primitive


def fd_grad(f, x, eps=1e-6):
    """Central finite-difference gradient of a scalar function of one float64 array."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


# -- values and shapes ------------------------------------------------------------------------


def test_grad_of_numpy_code_matches_the_analytic_derivative():
    x = np.array([0.5, 1.0, 2.0])
    g = tg.grad(lambda x: np.sum(np.sin(x) * x))(x)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-15)
    assert isinstance(g, np.ndarray) and g.dtype == np.float64 and g.shape == (3,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gradient_has_the_input_dtype_and_shape(dtype):
    x = np.linspace(-1, 1, 6, dtype=dtype).reshape(2, 3)
    g = tg.grad(lambda x: np.sum(np.tanh(x) * 2.0))(x)
    assert g.dtype == dtype and g.shape == (2, 3)
    np.testing.assert_allclose(g, 2 * (1 - np.tanh(x) ** 2), rtol=1e-6)


def test_python_scalar_input_gives_a_float64_scalar():
    g = tg.grad(lambda x: x * x * 3.0)(2.0)
    assert float(g) == 12.0
    assert np.asarray(g).dtype == np.float64 and np.ndim(g) == 0


def test_value_and_grad_returns_the_forward_value_bit_for_bit():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(5).astype(np.float32)

    def f(x):
        return np.sum(np.exp(x) / (1.0 + x * x))

    value, g = tg.value_and_grad(f)(x)
    assert value == f(x) and np.asarray(value).dtype == np.float32
    np.testing.assert_allclose(g, fd_grad(lambda z: f(z.astype(np.float64)), x, 1e-3), rtol=2e-2)


def test_argnums_tuple_and_pytrees():
    Params = collections.namedtuple("Params", ["w", "b"])
    p = Params(np.array([1.0, 2.0]), np.array(0.5))
    data = {"x": np.array([3.0, -1.0]), "scale": 2.0}

    def loss(p, data):
        return data["scale"] * np.sum((p.w * data["x"] + p.b) ** 2)

    gp, gd = tg.grad(loss, argnums=(0, 1))(p, data)
    r = p.w * data["x"] + p.b
    assert isinstance(gp, Params)
    np.testing.assert_allclose(gp.w, 2 * 2 * r * data["x"])
    np.testing.assert_allclose(gp.b, 2 * 2 * np.sum(r))
    np.testing.assert_allclose(gd["x"], 2 * 2 * r * p.w)
    np.testing.assert_allclose(gd["scale"], np.sum(r**2))
    assert sorted(gd) == ["scale", "x"]


def test_none_in_a_pytree_is_an_empty_subtree():
    g = tg.grad(lambda d: np.sum(d["a"] ** 2))({"a": np.ones(2), "b": None})
    assert g["b"] is None
    np.testing.assert_array_equal(g["a"], [2.0, 2.0])


def test_has_aux_returns_aux_undifferentiated():
    def f(x):
        y = np.sin(x)
        return np.sum(y), {"y": y}

    g, aux = tg.grad(f, has_aux=True)(np.array([0.1, 0.2]))
    np.testing.assert_array_equal(aux["y"], np.sin(np.array([0.1, 0.2])))
    np.testing.assert_allclose(g, np.cos([0.1, 0.2]))
    (v, aux2), g2 = tg.value_and_grad(f, has_aux=True)(np.array([0.1, 0.2]))
    assert v == np.sum(np.sin([0.1, 0.2]))
    np.testing.assert_array_equal(g2, g)


def test_unused_input_gets_zero_gradient():
    g = tg.grad(lambda x, y: np.sum(x * 2.0), argnums=1)(np.ones(3), np.ones(2))
    np.testing.assert_array_equal(g, np.zeros(2))


def test_work_no_output_reads_is_not_differentiated():
    # the eager backward pass walks every recorded node (no reachability walk first): a node
    # no output reads gets no cotangent, so its rule never runs, here one that would raise
    @primitive
    def opaque(x):
        return x * 3.0

    x = np.array([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="VJP of opaque"):
        tg.grad(lambda x: np.sum(opaque(x)))(x)

    def f(x):
        opaque(np.sin(x))  # computed, never used
        return np.sum(x**2)

    np.testing.assert_array_equal(tg.grad(f)(x), 2 * x)
    np.testing.assert_array_equal(tg.jit(tg.grad(f))(x), 2 * x)
    np.testing.assert_array_equal(tg.grad(tg.grad(lambda s: f(s * x)))(1.0), 2 * np.sum(x**2))


def test_python_control_flow_on_values_records_the_path_taken():
    def f(x):
        if np.sum(x) > 0:
            return np.sum(x**3)
        return np.sum(-x)

    np.testing.assert_allclose(tg.grad(f)(np.array([1.0, 2.0])), [3.0, 12.0])
    np.testing.assert_allclose(tg.grad(f)(np.array([-1.0, -2.0])), [-1.0, -1.0])

    def g(x):
        while x < 10.0:
            x = x * 2.0
        return x

    assert tg.grad(g)(1.5) == 8.0  # 1.5 -> 12 after three doublings


def test_stop_gradient():
    f = lambda x: np.sum(x * tg.stop_gradient(x))
    np.testing.assert_allclose(tg.grad(f)(np.array([1.0, 3.0])), [1.0, 3.0])
    assert tg.stop_gradient(2.5) == 2.5


def test_closure_over_an_outer_tracer():
    # d/dx [d/dy (x * y**2)] at y = 3 is 2*y = 6
    f = lambda x: tg.grad(lambda y: x * y**2)(3.0)
    assert tg.grad(f)(1.7) == 6.0


# -- vjp --------------------------------------------------------------------------------------


def test_vjp_runs_f_once_and_vjp_fn_only_the_backward_graph():
    calls = []

    def f(x, y):
        calls.append(1)
        return np.sin(x) * y, np.sum(x)

    x, y = np.array([0.3, 0.9]), np.array([2.0, -1.0])
    (out, s), vjp_fn = tg.vjp(f, x, y)
    assert len(calls) == 1
    np.testing.assert_array_equal(out, np.sin(x) * y)
    for _ in range(3):
        gx, gy = vjp_fn((np.array([1.0, 1.0]), 1.0))
    assert len(calls) == 1
    np.testing.assert_allclose(gx, np.cos(x) * y + 1.0)
    np.testing.assert_allclose(gy, np.sin(x))


def test_vjp_fn_checks_the_cotangent():
    _, vjp_fn = tg.vjp(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(
        ValueError, match=r"cotangent of shape \(2,\) for an output of shape \(3,\)"
    ):
        vjp_fn(np.ones(2))
    with pytest.raises(TypeError, match="structure"):
        vjp_fn((np.ones(3), np.ones(3)))


def test_vjp_has_aux():
    out, vjp_fn, aux = tg.vjp(lambda x: (x * 3.0, "label"), np.ones(2), has_aux=True)
    assert aux == "label"
    np.testing.assert_array_equal(vjp_fn(np.ones(2))[0], [3.0, 3.0])


def test_grad_of_a_vjp_fn_is_second_order():
    # f(x) = sin(x); vjp_fn(u) = u cos(x); d/dx [vjp_fn(1)] = -sin(x)
    def first(x):
        _, vjp_fn = tg.vjp(np.sin, x)
        return vjp_fn(1.0)[0]

    assert abs(tg.grad(first)(0.4) - (-math.sin(0.4))) < 1e-15


# -- higher order -----------------------------------------------------------------------------


def test_nested_grad_of_sin_is_exact_to_order_8():
    d = np.sin
    expected = [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin]
    for k in range(1, 9):
        d = tg.grad(d)
        for x in (-1.3, 0.0, 0.7, 2.5):
            assert abs(d(x) - expected[(k - 1) % 4](x)) <= 1e-12, (k, x)


def _mlp_loss(n_layers=10, width=6, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(width, width)] * n_layers
    sizes = [math.prod(s) for s in shapes]
    x = rng.standard_normal((4, width))
    y = rng.standard_normal((4, width))

    def loss(p):
        h = x
        offset = 0
        for s, n in zip(shapes, sizes):
            w = np.reshape(p[offset : offset + n], s)
            h = np.tanh(h @ w)
            offset += n
        return np.mean((h - y) ** 2)

    p0 = rng.standard_normal(sum(sizes)) * 0.5
    return loss, p0


def test_hessian_vector_products_reverse_over_reverse():
    loss, p = _mlp_loss()
    v = np.random.default_rng(1).standard_normal(p.shape)
    hvp = tg.grad(lambda q: np.vdot(tg.grad(loss)(q), v))(p)
    eps = 1e-5
    g = tg.grad(loss)
    fd = (g(p + eps * v) - g(p - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hvp, fd, rtol=1e-5, atol=1e-8 * np.max(np.abs(fd)))


@given(data=st.data())
def test_grad_of_broadcast_binary_ops_matches_finite_differences(data):
    s1, s2 = S.broadcast_shapes(data, 2, min_side=1)
    x = S.array(data, s1)
    y = S.array(data, s2, lo=0.5, hi=2.0)

    def f(x, y):
        return np.sum(np.sin(x) * y + x / y - np.maximum(x, 0.1 * y) ** 2)

    gx, gy = tg.grad(f, argnums=(0, 1))(x, y)
    assert gx.shape == x.shape and gy.shape == y.shape
    np.testing.assert_allclose(gx, fd_grad(lambda z: f(z, y), x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gy, fd_grad(lambda z: f(x, z), y), rtol=1e-6, atol=1e-6)


# -- errors -----------------------------------------------------------------------------------


def test_grad_of_a_non_scalar_output_suggests_jacrev_or_vjp():
    with pytest.raises(
        TypeError, match=r"grad requires a scalar output, got shape \(3,\); use jacrev or vjp"
    ):
        tg.grad(lambda x: x * 2.0)(np.ones(3))


def test_grad_with_respect_to_an_integer_input_names_the_argument():
    with pytest.raises(TypeError, match=r"argument 1 has dtype int64"):
        tg.grad(lambda x, n: np.sum(x * n), argnums=1)(np.ones(3), np.arange(3))
    with pytest.raises(TypeError, match=r"argument 0\['k'\] has dtype bool"):
        tg.grad(lambda d: 1.0)({"k": np.array([True])})


def test_argnums_out_of_range():
    with pytest.raises(TypeError, match=r"argnums=2 requires at least 3 positional arguments"):
        tg.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)


def test_has_aux_requires_a_pair():
    with pytest.raises(TypeError, match=r"has_aux=True\) requires .* to return a pair"):
        tg.grad(lambda x: x * 2.0, has_aux=True)(1.0)
    with pytest.raises(TypeError, match="of length 3"):
        tg.grad(lambda x: (x, x, x), has_aux=True)(1.0)


def test_converting_a_tracer_to_an_array_names_stack():
    with pytest.raises(TypeError, match="tracegrad.numpy.stack"):
        tg.grad(lambda x: np.sum(np.asarray(x)))(np.ones(2))
    with pytest.raises(TypeError, match="tracegrad.numpy.stack"):
        tg.grad(lambda x: np.sum(np.array([x[0], x[1]])))(np.ones(2))


def test_escaped_tracer_is_a_clear_error():
    leaked = []

    def f(x):
        leaked.append(x)
        return x * 2.0

    tg.grad(f)(1.0)
    with pytest.raises(tg.EscapedTracerError, match="outside the transformation"):
        leaked[0] + 1.0


def test_unsupported_numpy_function_names_itself():
    with pytest.raises(NotImplementedError, match=r"np\.unwrap"):
        tg.grad(lambda x: np.sum(np.unwrap(x)))(np.ones(3))


def test_unsupported_function_of_a_numpy_submodule_names_its_module():
    # np.lib.stride_tricks.sliding_window_view, not np.sliding_window_view; and the advice is
    # one that works under a trace
    def windows(a):
        return np.lib.stride_tricks.sliding_window_view(np.ones(3) * a, 2).sum()

    with pytest.raises(
        NotImplementedError,
        match=r"np\.lib\.stride_tricks\.sliding_window_view has no tracegrad rule",
    ):
        tg.grad(windows)(2.0)
    with pytest.raises(NotImplementedError, match="compute it outside the differentiated"):
        tg.grad(lambda x: np.sum(np.unwrap(x)))(np.ones(3))


def test_traced_gradients_hold_no_full_size_constants():
    # The seed under tracing is a traced constant: the backward pass records
    # broadcast_to(1.0) instead of folding it (and what follows) into arrays of the input's size.
    def f(x):
        return np.sum(0.5 * np.tanh(x) ** 2)

    n = 10**5
    for graph in (
        tg.make_graph(tg.grad(f))(np.ones(n)),
        tg.jit(tg.grad(f)).lower(np.ones(n)).graph,
    ):
        sizes = [
            node.params["value"].size
            for node in graph.nodes
            if node.prim.name == "const" and isinstance(node.params["value"], np.ndarray)
        ]
        assert max(sizes, default=0) < 100, sizes
    x = np.linspace(-1.0, 1.0, 7)
    t = np.tanh(x)
    np.testing.assert_allclose(tg.jit(tg.grad(f))(x), t * (1 - t**2), rtol=1e-12)
