"""`tracegrad.extend`: a primitive defined in one block works under every transform, the code
generator, JSON and the tensors, as the built-in ones do; so does one made with HIPS
autograd's `primitive`/`defvjp`/`defjvp`. Oracles: closed forms, finite differences
(`check_grads`), the same computation written with built-in operations, and JAX where
installed. docs/extending.md's examples run here too."""

from __future__ import annotations

import pathlib
import re
import weakref

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import extend
from tracegrad.ir.primitive import lookup
from tracegrad.testing import assert_bitwise_equal

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "extending.md"


def test_the_worked_examples_of_the_docs_run():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), namespace)  # the blocks assert their results


# -- one block ------------------------------------------------------------------------------
# hypot(x, y) = sqrt(x^2 + y^2), with rules written in tracegrad.numpy.


def _hypot_jvp(primals, tangents, *, out):
    x, y = primals
    total = None
    for t, v in zip(tangents, (x, y)):
        if t is not None:
            term = t * v / out
            total = term if total is None else total + term
    return None if total is None else tnp.broadcast_to(total, np.shape(out))


def _hypot_vjp_x(g, x, y, *, out):
    return extend.unbroadcast(g * x / out, np.shape(x))


def _hypot_vjp_y(g, x, y, *, out):
    return extend.unbroadcast(g * y / out, np.shape(y))


def _hypot_shape(x, y):
    return extend.Aval(np.broadcast_shapes(x.shape, y.shape), np.result_type(x.dtype, y.dtype))


my_hypot_p = extend.Primitive(
    "my_hypot",
    impl=np.hypot,
    shape=_hypot_shape,
    jvp=_hypot_jvp,
    vjp=(_hypot_vjp_x, _hypot_vjp_y),
    batch=extend.elementwise_batch,
    emit=lambda x, y: f"np.hypot({x}, {y})",
    vjp_reads=extend.READS_ALL,
    layout=extend.Layout.ELEMENTWISE,
)


def my_hypot(x, y):
    return my_hypot_p.bind(x, y)


def _reference(x, y):
    return np.sqrt(x * x + y * y)


X = np.array([[0.5, -1.5, 2.0], [1.0, 0.3, -0.7]])
Y = np.array([1.2, -0.4, 0.9])


def test_a_new_primitive_runs_and_differentiates_like_its_built_in_twin():
    assert_bitwise_equal(my_hypot(X, Y), np.hypot(X, Y))
    loss = lambda x, y: np.sum(my_hypot(x, y) ** 2 * x)  # noqa: E731
    ref = lambda x, y: np.sum(_reference(x, y) ** 2 * x)  # noqa: E731
    for argnums in (0, 1, (0, 1)):
        got = tg.grad(loss, argnums=argnums)(X, Y)
        want = tg.grad(ref, argnums=argnums)(X, Y)
        for a, b in zip(tg.tree.leaves(got), tg.tree.leaves(want)):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    tg.check_grads(lambda x, y: my_hypot(x, y), (X, Y), order=3, modes=("fwd", "rev"))


def test_a_new_primitive_under_jvp_vmap_jacobians_and_hessians():
    _, t = tg.jvp(my_hypot, (X, Y), (np.ones_like(X), np.zeros_like(Y)))
    np.testing.assert_allclose(t, X / np.hypot(X, Y))
    batched = tg.vmap(my_hypot, in_axes=(0, None))(X, Y)
    assert_bitwise_equal(batched, np.hypot(X, Y))
    h = tg.hessian(lambda v: my_hypot(v[0], v[1]))(np.array([3.0, 4.0]))
    # d2/dv2 |v| = (I - v v^T / |v|^2) / |v|
    v = np.array([3.0, 4.0])
    np.testing.assert_allclose(h, (np.eye(2) - np.outer(v, v) / 25.0) / 5.0, rtol=1e-12)
    jr = tg.jacrev(my_hypot)(X[0], Y)
    jf = tg.jacfwd(my_hypot)(X[0], Y)
    np.testing.assert_allclose(jr, np.diag(X[0] / np.hypot(X[0], Y)), rtol=1e-12)
    np.testing.assert_allclose(jf, jr, rtol=1e-12)


def test_a_new_primitive_under_jit_prints_serializes_and_generates_code():
    f = tg.jit(lambda x, y: my_hypot(x, y) * 2.0)
    lowered = f.lower(X, Y)
    assert "np.hypot(a, b)" in lowered.source
    assert_bitwise_equal(f(X, Y), np.hypot(X, Y) * 2.0)
    g = tg.jit(tg.grad(lambda x, y: np.sum(my_hypot(x, y))))
    np.testing.assert_allclose(g(X, Y), X / np.hypot(X, Y), rtol=1e-12)
    graph = tg.make_graph(my_hypot)(X, Y)
    assert "c: f64[2,3] = my_hypot a b" in str(graph)
    loaded = tg.ir.loads(tg.ir.dumps(graph))
    assert str(loaded) == str(graph)
    assert_bitwise_equal(loaded(X, Y), np.hypot(X, Y))


def test_a_new_primitive_on_the_pytorch_style_tensors():
    x = tg.tensor(X, requires_grad=True)
    y = tg.tensor(Y, requires_grad=True)
    seen = []
    out = my_hypot(x, y)
    out.register_hook(lambda g: seen.append(g.numpy().copy()))
    assert out.grad_fn.name() == "MyHypotBackward0"
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), X / np.hypot(X, Y))
    np.testing.assert_allclose(y.grad.numpy(), np.sum(Y / np.hypot(X, Y), axis=0))
    np.testing.assert_array_equal(seen[0], np.ones((2, 3)))
    x2 = tg.tensor(X, requires_grad=True)
    (gx,) = tg.autograd.grad(my_hypot(x2, Y).sum(), x2, create_graph=True)
    (gxx,) = tg.autograd.grad(gx.sum(), x2)
    r = np.hypot(X, Y)
    np.testing.assert_allclose(gxx.numpy(), (r * r - X * X) / r**3, rtol=1e-12)


def test_a_constant_operands_cotangent_is_not_computed():
    calls = []

    def counted_x(g, x, y, *, out):
        calls.append("x")
        return _hypot_vjp_x(g, x, y, out=out)

    prim = extend.Primitive(
        "counted_hypot", impl=np.hypot, shape=_hypot_shape, vjp=(counted_x, _hypot_vjp_y)
    )
    tg.grad(lambda y: np.sum(prim.bind(X, y)))(Y)
    assert calls == []
    tg.grad(lambda x: np.sum(prim.bind(x, Y)))(X)
    assert calls == ["x"]


def test_jax_agrees_on_the_new_primitive():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def loss(x, y):
        return (my_hypot(x, y) ** 3).sum()

    def jloss(x, y):
        return (jnp.hypot(x, y) ** 3).sum()

    got = tg.grad(loss, argnums=(0, 1))(X, Y)
    want = jax.grad(jloss, argnums=(0, 1))(X, Y)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12)


# -- names, errors --------------------------------------------------------------------------


def test_a_second_primitive_with_a_taken_name_is_refused():
    with pytest.raises(ValueError, match=r"the name 'my_hypot' is taken by another primitive"):
        extend.Primitive("my_hypot", impl=np.hypot, shape=_hypot_shape)
    with pytest.raises(ValueError, match=r"the name 'sin' is taken"):
        extend.Primitive("sin", impl=np.sin, shape=lambda x: x)


def test_a_name_is_free_again_once_its_primitive_is_gone():
    prim = extend.Primitive("short_lived", impl=np.sin, shape=lambda x: x)
    ref = weakref.ref(prim)
    assert lookup("short_lived") is prim
    del prim
    assert ref() is None and lookup("short_lived") is None
    extend.Primitive("short_lived", impl=np.cos, shape=lambda x: x)  # no error


def test_loading_a_graph_of_an_undefined_primitive_names_it():
    prim = extend.Primitive("soon_gone", impl=np.sin, shape=lambda x: x)
    text = tg.ir.dumps(tg.make_graph(prim.bind)(np.ones(2)))
    del prim
    with pytest.raises(ValueError, match=r"unknown primitive 'soon_gone'"):
        tg.ir.loads(text)


def test_missing_rules_raise_errors_naming_the_primitive():
    bare = extend.Primitive("bare", impl=np.sin, shape=lambda x: x)
    x = np.ones(3)
    with pytest.raises(NotImplementedError, match=r"reverse mode: the primitive 'bare' has no vjp"):
        tg.grad(lambda x: np.sum(bare.bind(x)))(x)
    with pytest.raises(NotImplementedError, match=r"forward mode: the primitive 'bare' has no jvp"):
        tg.jvp(bare.bind, (x,), (x,))
    with pytest.raises(NotImplementedError, match=r"vmap: the primitive 'bare' has no batching"):
        tg.vmap(bare.bind)(np.ones((2, 3)))
    # no emit rule: jit calls the impl (same bits), export refuses
    assert_bitwise_equal(tg.jit(bare.bind)(x), np.sin(x))


def test_malformed_primitives_are_refused():
    with pytest.raises(ValueError, match="non-empty string"):
        extend.Primitive("", impl=np.sin, shape=lambda x: x)
    with pytest.raises(TypeError, match="impl must be a function"):
        extend.Primitive("no_impl", impl=None, shape=lambda x: x)
    with pytest.raises(TypeError, match="jvp must be a function or None"):
        extend.Primitive("bad_jvp", impl=np.sin, shape=lambda x: x, jvp=3)
    with pytest.raises(ValueError, match="vjp_reads may hold"):
        extend.Primitive("bad_reads", impl=np.sin, shape=lambda x: x, vjp_reads={"outputs"})
    with pytest.raises(ValueError, match="needs a view layout"):
        extend.Primitive("bad_view", impl=np.sin, shape=lambda x: x, view_of=0)


def test_loop_batching_matches_a_loop_for_any_primitive():
    prim = extend.Primitive(
        "row_norms",
        impl=lambda x: np.sqrt(np.sum(x * x, axis=-1)),
        shape=lambda x: extend.Aval(x.shape[:-1], x.dtype),
        batch=extend.loop_batch,
    )
    xs = np.arange(24.0).reshape(2, 3, 4)
    got = tg.vmap(prim.bind, in_axes=1)(xs)
    assert_bitwise_equal(got, np.stack([prim.impl(xs[:, i]) for i in range(3)]))
    assert tg.vmap(prim.bind)(np.zeros((0, 3, 4))).shape == (0, 3)


# -- HIPS autograd's interface --------------------------------------------------------------


@extend.primitive
def logsumexp(x, axis=None):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis)) + np.squeeze(m, axis)


def _lse_vjp(ans, x, axis=None):
    return lambda g: np.expand_dims(g, axis or ()) * np.exp(x - np.expand_dims(ans, axis or ()))


extend.defvjp(logsumexp, _lse_vjp)
extend.defjvp(
    logsumexp,
    lambda g, ans, x, axis=None: np.sum(g * np.exp(x - np.expand_dims(ans, axis or ())), axis),
)


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def test_a_hips_autograd_primitive_under_every_transform():
    m = np.max(X, axis=1, keepdims=True)
    assert_bitwise_equal(logsumexp(X, 1), np.log(np.sum(np.exp(X - m), axis=1)) + np.squeeze(m, 1))
    np.testing.assert_allclose(tg.grad(lambda x: np.sum(logsumexp(x, 1)))(X), _softmax(X, 1))
    _, t = tg.jvp(lambda x: logsumexp(x, 1), (X,), (np.ones_like(X),))
    np.testing.assert_allclose(t, np.ones(2))
    s = _softmax(X[0], None)
    np.testing.assert_allclose(tg.hessian(logsumexp)(X[0]), np.diag(s) - np.outer(s, s), atol=1e-15)
    np.testing.assert_allclose(tg.vmap(logsumexp)(X), np.log(np.sum(np.exp(X), 1)), rtol=1e-15)
    tg.check_grads(lambda x: logsumexp(x, 1), (X,), order=2)
    f = tg.jit(lambda x: logsumexp(x, 1))
    assert "_impl0(a, " in f.lower(X).source
    assert_bitwise_equal(f(X), logsumexp(X, 1))
    graph = tg.make_graph(lambda x: logsumexp(x, 1))(X)
    assert_bitwise_equal(tg.ir.loads(tg.ir.dumps(graph))(X), logsumexp(X, 1))
    x = tg.tensor(X, requires_grad=True)
    logsumexp(x, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _softmax(X, 1))


def test_hips_autograd_agrees_on_the_ported_primitive():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    from autograd.extend import defvjp as ag_defvjp
    from autograd.extend import primitive as ag_primitive

    @ag_primitive
    def ag_logsumexp(x, axis=None):
        m = anp.max(x, axis=axis, keepdims=True)
        return anp.log(anp.sum(anp.exp(x - m), axis=axis)) + anp.squeeze(m, axis)

    ag_defvjp(
        ag_logsumexp,
        lambda ans, x, axis=None: (
            lambda g: anp.expand_dims(g, axis) * anp.exp(x - anp.expand_dims(ans, axis))
        ),
    )
    want = autograd.grad(lambda x: anp.sum(ag_logsumexp(x, 1) ** 2))(X)
    got = tg.grad(lambda x: np.sum(logsumexp(x, 1) ** 2))(X)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_hips_autograd_forms_none_same_and_linear():
    @extend.primitive
    def scale_add(x, y, c):
        return c * x + y

    extend.defvjp(scale_add, lambda ans, x, y, c: lambda g: c * g, None)
    extend.defjvp(scale_add, "same", None)
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    gx, gy = tg.grad(lambda x, y: np.sum(scale_add(x, y, 3.0)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [3.0, 3.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0])  # declared None: a zero gradient
    _, t = tg.jvp(lambda x: scale_add(x, y, 3.0), (x,), (np.ones(2),))
    np.testing.assert_array_equal(t, 3.0 * np.ones(2) + y)  # "same": the function itself

    @extend.primitive
    def double(x):
        return 2.0 * x

    extend.def_linear(double)
    np.testing.assert_array_equal(tg.jvp(double, (x,), (np.ones(2),))[1], [2.0, 2.0])
    with pytest.raises(NotImplementedError, match=r"VJP of double wrt argnum 0 not defined"):
        tg.grad(lambda x: np.sum(double(x)))(x)


def test_a_hips_primitive_defined_again_replaces_the_old_one():
    def make():
        @extend.primitive
        def redefined(x):
            return x + 1.0

        return redefined

    first, second = make(), make()  # as a notebook cell run twice
    assert lookup(second.primitive.name) is second.primitive
    assert_bitwise_equal(first(np.ones(2)), second(np.ones(2)))


def test_notrace_primitive_gives_a_constant():
    @extend.notrace_primitive
    def count_positive(x):
        return int(np.sum(x > 0))

    g = tg.grad(lambda x: np.sum(x) * count_positive(x))(np.array([1.0, -1.0, 2.0]))
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])
    with pytest.raises(tg.ConcretizationError, match="notrace_primitive"):
        tg.jit(lambda x: x * count_positive(x))(np.ones(2))
