"""The JAX conveniences that go with control flow (eval_shape, pure_callback, debug.print,
the `tracegrad.lax` namespace) and the PyTorch-style tensors as operands of the constructs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.torch as torch
from tests import strategies as S
from tracegrad.codegen import source

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


# -- the tracegrad.lax namespace --------------------------------------------------------------

LAX_NAMES = (
    "associative_scan cond dynamic_slice dynamic_update_slice fori_loop map scan select "
    "stop_gradient switch while_loop"
).split()


@pytest.mark.parametrize("name", LAX_NAMES)
def test_the_lax_namespace_has_jax_laxs_names(name):
    assert name in tg.lax.__all__ and hasattr(jax.lax, name)
    assert callable(getattr(tg.lax, name))


@pytest.mark.parametrize("name", ["cond", "switch", "while_loop", "fori_loop", "scan", "map"])
def test_control_flow_is_at_the_top_level_too(name):
    assert getattr(tg, name) is getattr(tg.lax, name)


@given(data=st.data(), start=st.integers(-6, 6))
def test_dynamic_slices_clamp_and_differentiate_as_jax(data, start):
    x = S.array(data, (5, 4), np.float64, -1.0, 1.0)
    u = S.array(data, (2, 3), np.float64, -1.0, 1.0)
    i = np.int64(start)

    def slice_loss(lax, m):
        return lambda x, i: m.sum(m.sin(lax.dynamic_slice(x, (i, 1), (2, 3))))

    def update_loss(lax, m):
        return lambda x, u, i: m.sum(m.sin(lax.dynamic_update_slice(x, u, (i, i))) * x)

    for f, j, args, nums in [
        (slice_loss(tg.lax, np), slice_loss(jax.lax, jnp), (x, i), (0,)),
        (update_loss(tg.lax, np), update_loss(jax.lax, jnp), (x, u, i), (0, 1)),
    ]:
        np.testing.assert_allclose(f(*args), j(*args), rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(tg.jit(f)(*args), j(*args), rtol=1e-13, atol=1e-300)
        want = jax.grad(j, argnums=nums)(*args)
        for got in (tg.grad(f, argnums=nums)(*args), tg.jit(tg.grad(f, argnums=nums))(*args)):
            for g, w in zip(got, want):  # (atol: XLA flushes subnormal numbers to zero)
                np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-300)


def _recurrence(p, q):
    """(a1, b1) then (a2, b2): x -> a2 (a1 x + b1) + b2, an associative combination (the
    composition of affine maps): its prefixes solve a linear recurrence."""
    (a1, b1), (a2, b2) = p, q
    return a1 * a2, b1 * a2 + b2


def _sequential(elems, reverse):
    """The prefixes one after another, the plain loop associative_scan must agree with."""
    a, b = elems
    order = range(len(a) - 1, -1, -1) if reverse else range(len(a))
    out, acc = {}, None
    for i in order:
        acc = (a[i], b[i]) if acc is None else _recurrence(acc, (a[i], b[i]))
        out[i] = acc
    return tg.numpy.stack([out[i][0] for i in range(len(a))]), tg.numpy.stack(
        [out[i][1] for i in range(len(a))]
    )


@given(data=st.data(), n=st.integers(1, 9), reverse=st.booleans())
def test_associative_scan_is_the_sequential_prefix_in_value_and_gradient(data, n, reverse):
    a = S.array(data, (n, 2), np.float64, 0.5, 1.0)
    b = S.array(data, (n, 2), np.float64, -1.0, 1.0)

    def loss(scan):
        return lambda a, b: np.sum(np.cos(scan((a, b), reverse)[1]))

    parallel = loss(lambda e, r: tg.lax.associative_scan(_recurrence, e, r))
    sequential = loss(_sequential)
    np.testing.assert_allclose(parallel(a, b), sequential(a, b), rtol=1e-13)
    got = tg.grad(parallel, argnums=(0, 1))(a, b)
    want = tg.grad(sequential, argnums=(0, 1))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_is_jaxs_algorithm(reverse):
    x = np.linspace(-1.0, 1.0, 14).reshape(7, 2)  # an odd length: the uneven split
    np.testing.assert_array_equal(
        tg.lax.associative_scan(np.add, x, reverse), jax.lax.associative_scan(jnp.add, x, reverse)
    )
    got = tg.lax.associative_scan(_recurrence, (x + 2.0, x), reverse, axis=0)
    want = jax.lax.associative_scan(_recurrence, (x + 2.0, x), reverse)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-15)
    with pytest.raises(ValueError, match=r"must have the same first dimension"):
        tg.lax.associative_scan(_recurrence, (x, x[:3]))


def test_select_refuses_what_jax_refuses():
    a, b = np.ones(3), np.zeros(3)
    np.testing.assert_array_equal(tg.lax.select(np.array([True, False, True]), a, b), [1, 0, 1])
    with pytest.raises(TypeError, match=r"select cases must have the same shapes"):
        tg.lax.select(True, a, np.zeros(2))
    with pytest.raises(TypeError, match=r"requires arguments to have the same dtypes"):
        tg.lax.select(True, a, b.astype(np.float32))
    with pytest.raises(TypeError, match=r"`which` must be boolean type, got int64"):
        tg.lax.select(np.int64(1), a, b)
    with pytest.raises(TypeError, match=r"must be scalar or have the same shape as cases"):
        tg.lax.select(np.array([True, False]), a, b)
    with pytest.raises(TypeError, match=r"slice_sizes must be less than or equal to operand"):
        tg.lax.dynamic_slice(a, (0,), (4,))
    with pytest.raises(TypeError, match=r"update shape \(4,\) must be of the operand's rank"):
        tg.lax.dynamic_update_slice(a, np.ones(4), (0,))


# -- eval_shape -------------------------------------------------------------------------------


def test_eval_shape_gives_jaxs_shapes_and_dtypes_without_running():
    calls = []

    def f(x, y, *, k):
        calls.append(1)
        h, ys = tg.scan(lambda c, v: (c + v @ y, c * 2), x, np.ones((5, 3)) * k)
        return {"h": h, "ys": ys, "s": np.sum(h).astype(np.float32)}

    args = (np.ones(2), np.ones((3, 2)))
    got = tg.eval_shape(f, *args, k=2.0)
    want = jax.eval_shape(
        lambda x, y, k: {"h": x, "ys": jnp.zeros((5, 2)), "s": jnp.float32(0)}, *args, 2.0
    )
    assert sorted(got) == sorted(want)
    for key in want:
        assert (got[key].shape, got[key].dtype) == (want[key].shape, want[key].dtype), key
    # anything with .shape and .dtype stands for an array; nothing is computed
    spec = jax.ShapeDtypeStruct((2,), np.float32)
    assert tg.eval_shape(lambda v: v * 2, spec) == tg.Aval((2,), np.dtype(np.float32))
    assert len(calls) == 1
    with pytest.raises(TypeError, match=r"eval_shape: arguments must be arrays.*got a str"):
        tg.eval_shape(lambda v: v, "x")


# -- pure_callback ----------------------------------------------------------------------------


def _sorted(x):
    return tg.pure_callback(np.sort, tg.eval_shape(lambda v: v, x), x)


def test_pure_callback_runs_host_code_eagerly_jitted_and_in_generated_code():
    x = np.array([3.0, 1.0, 2.0])
    for f in (_sorted, tg.jit(_sorted)):
        np.testing.assert_array_equal(f(x), [1.0, 2.0, 3.0])
    g = tg.make_graph(_sorted)(x)
    np.testing.assert_array_equal(tg.codegen.compile_graph(g).fn(x)[0], [1.0, 2.0, 3.0])
    out = tg.jit(lambda xs: tg.scan(lambda c, v: (c + _sorted(v), c), np.zeros(3), xs))(
        np.stack([x, -x])
    )
    np.testing.assert_array_equal(out[0], [-2.0, 0.0, 2.0])


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_pure_callback_batches_as_its_vmap_method_says(method):
    seen = []

    def host(a, b):
        seen.append((a.shape, b.shape))
        return a * b

    def f(a, b):
        return tg.pure_callback(host, jax.ShapeDtypeStruct((2,), np.float64), a, b,
                                vmap_method=method)  # fmt: skip

    a, b = np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0])
    np.testing.assert_array_equal(tg.vmap(f, in_axes=(0, None))(a, b), a * b)
    shapes = {"sequential": [((2,), (2,))] * 3, "expand_dims": [((3, 2), (1, 2))],
              "broadcast_all": [((3, 2), (3, 2))]}  # fmt: skip
    assert seen == shapes[method]
    with pytest.raises(NotImplementedError, match=r"vmap is only supported for pure_callback"):
        tg.vmap(lambda v: tg.pure_callback(np.sin, v[0], v))(a)


def test_pure_callback_has_no_derivative_unless_one_is_given():
    x = np.array([0.5, 1.5])
    with pytest.raises(ValueError, match=r"pure_callback: the callback has no derivative.*vjp="):
        tg.grad(lambda v: np.sum(_sorted(v)))(x)
    with pytest.raises(ValueError, match=r"pure_callback: the callback has no derivative.*jvp="):
        tg.jvp(_sorted, (x,), (x,))

    def sin(v):
        return tg.pure_callback(np.sin, v, v, jvp=lambda p, t: np.cos(p[0]) * t[0],
                                vjp=lambda ct, v: (ct * np.cos(v),))  # fmt: skip

    def loss(v):
        return np.sum(sin(v) ** 2)

    want = 2 * np.sin(x) * np.cos(x)
    np.testing.assert_allclose(tg.grad(loss)(x), want, rtol=1e-15)
    np.testing.assert_allclose(tg.jit(tg.grad(loss))(x), want, rtol=1e-15)
    np.testing.assert_allclose(tg.jvp(sin, (x,), (np.ones(2),))[1], np.cos(x), rtol=1e-15)


def test_pure_callback_errors():
    x = np.ones(2)
    with pytest.raises(TypeError, match=r"returned a value of shape \(3,\).*says f64\[2\]"):
        tg.pure_callback(lambda v: np.ones(3), x, x)
    with pytest.raises(TypeError, match=r"pure_callback: callback must be callable"):
        tg.pure_callback(3, x, x)
    with pytest.raises(ValueError, match=r"vmap_method must be one of the allowed methods"):
        tg.pure_callback(np.sin, x, x, vmap_method="loop")


# -- debug.print ------------------------------------------------------------------------------


def _printing(x):
    tg.debug.print("x = {}, twice {two}", x, two=x * 2)
    return x + 1


def test_debug_print_prints_eagerly_and_each_time_a_jitted_program_runs(capsys):
    _printing(np.array([1.0, 2.0]))
    assert capsys.readouterr().out == "x = [1. 2.], twice [2. 4.]\n"
    f = tg.jit(_printing)
    f(np.array([1.0, 2.0]))
    f(np.array([0.5, 0.0]))  # the cached program prints too: the print is in its code
    assert capsys.readouterr().out == "x = [1. 2.], twice [2. 4.]\nx = [0.5 0. ], twice [1. 0.]\n"
    assert "_impl0(" in source(tg.make_graph(_printing)(np.ones(2)))  # kept, though unread


def test_debug_print_inside_a_jitted_loop_prints_every_step(capsys):
    def step(c, x):
        tg.debug.print("step {} {}", c, x)
        return c + x, c

    out = tg.jit(lambda xs: tg.scan(step, 0.0, xs))(np.arange(3.0))
    assert capsys.readouterr().out == "step 0.0 0.0\nstep 0.0 1.0\nstep 1.0 2.0\n"
    assert out[0] == 3.0
    tg.grad(lambda v: np.sum(_printing(v)))(np.ones(2))  # passes derivatives through
    assert capsys.readouterr().out == "x = [1. 1.], twice [2. 2.]\n"
    with pytest.raises(TypeError, match=r"debug.print: fmt must be a string, got int"):
        tg.debug.print(3, np.ones(2))


# -- PyTorch-style tensors as operands --------------------------------------------------------

XS = np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 0.1]])


def _scan_loss(m_sum, a, w, xs):
    c, ys = tg.scan(lambda c, x: (np.sin(c) * x * w + c, c * x), a, xs)
    return m_sum(c) + m_sum(ys * ys)


def test_backward_through_a_scan_gives_tg_grads_answer():
    a0, w0 = np.array([0.5, -0.3]), np.array([1.5, 0.7])
    a = torch.tensor(a0, requires_grad=True)
    w = torch.tensor(w0, requires_grad=True)  # closed over by the body: an operand too
    loss = _scan_loss(lambda t: t.sum(), a, w, torch.tensor(XS))
    loss.backward()
    want = tg.grad(lambda a, w: _scan_loss(np.sum, a, w, XS), argnums=(0, 1))(a0, w0)
    np.testing.assert_allclose(a.grad.numpy(), want[0], rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), want[1], rtol=1e-14)


@pytest.mark.parametrize("construct", ["fori_loop", "while_loop", "cond"])
def test_backward_through_the_other_constructs_gives_tg_grads_answer(construct):
    def run(a, w):
        if construct == "fori_loop":
            return tg.fori_loop(0, 3, lambda i, v: np.cos(v) * w, a)
        if construct == "while_loop":  # run on concrete values: its trip count is recorded
            return tg.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, np.cos(c[1]) * w),
                                 (0, a))[1]  # fmt: skip
        return tg.cond(np.sum(a) > 0, lambda v: np.cos(v) * w, lambda v: v * v, a)

    a0, w0 = np.array([0.5, -0.3]), np.array([1.5, 0.7])
    a = torch.tensor(a0, requires_grad=True)
    w = torch.tensor(w0, requires_grad=True)
    run(a, w).sum().backward()
    want = tg.grad(lambda a, w: np.sum(run(a, w)), argnums=(0, 1))(a0, w0)
    np.testing.assert_allclose(a.grad.numpy(), want[0], rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), want[1], rtol=1e-14)


def test_eval_shape_and_pure_callback_rule_errors():
    x = np.ones(2)
    with pytest.raises(TypeError, match=r"eval_shape\(<lambda>\): the function closes over values"):
        tg.grad(lambda v: np.sum(tg.eval_shape(lambda u: u * v, x)[0]))(x)

    def bad_vjp(v):
        return tg.pure_callback(np.sin, v, v, v, vjp=lambda ct, a, b: (ct,))

    with pytest.raises(TypeError, match=r"vjp must return one cotangent per positional argument"):
        tg.grad(lambda v: np.sum(bad_vjp(v)))(x)

    def bad_jvp(v):
        return tg.pure_callback(np.sin, v, v, jvp=lambda p, t: (t[0], t[0]))

    with pytest.raises(TypeError, match=r"pure_callback: jvp returned 2 values for 1 results"):
        tg.jvp(bad_jvp, (x,), (x,))

    def keyword(v):
        return tg.pure_callback(lambda a, b: a * b, v, v, b=v, vjp=lambda c, a: (c,))

    with pytest.raises(TypeError, match=r"a keyword argument is a traced float value"):
        tg.grad(lambda v: np.sum(keyword(v)))(x)


def test_graphs_holding_host_code_or_prints_refuse_json_clearly():
    """A callback is a Python callable and a print's argument structure a Python object:
    neither has a JSON form, and dumps says which param of which node stops it."""
    x = np.ones(2)
    with pytest.raises(ValueError, match=r"node 0 \(pure_callback\), param 'callback' is a Python"):
        tg.ir.dumps(tg.make_graph(_sorted)(x))
    with pytest.raises(ValueError, match=r"node \d+ \(debug_print\), param 'treedef' has type"):
        tg.ir.dumps(tg.make_graph(_printing)(x))
