"""jit: tracing once per signature, the cache, composition with every transform, and every
error path. Oracles: plain NumPy (bit for bit), the interpreter backend, counted calls."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.api.jit import RETRACE_WARNING_AFTER, RetraceWarning
from tracegrad.testing import assert_bitwise_equal


def test_values_are_bit_identical_to_numpy_and_traced_once_per_signature():
    calls = []

    def f(x, y):
        calls.append(1)
        return np.tanh(x @ y) * 2.0 + np.sum(x)

    jf = tg.jit(f)
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        x, y = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((4, 2)).astype(dtype)
        for _ in range(3):
            out = jf(x, y)
            np.testing.assert_array_equal(out, f(x, y), strict=True)
    # one trace per dtype signature (f's own direct calls above add one each)
    assert len(calls) == 2 * 1 + 2 * 3
    info = jf.cache_info()
    assert (info.hits, info.misses, info.currsize) == (4, 2, 2)


def test_retrace_on_new_shape_structure_weak_type_and_static_value(caplog):
    jf = tg.jit(lambda x, n: x * n, static_argnums=1)
    with caplog.at_level(logging.INFO, logger="tracegrad.jit"):
        jf(np.ones(3), 2)
        jf(np.ones(3), 2)
        jf(np.ones(4), 2)
        jf(np.ones(4), 3)
    assert jf.cache_info().misses == 3
    text = caplog.text
    assert "first signature" in text and "shapes/dtypes changed" in text
    assert "static arguments changed" in text
    jg = tg.jit(lambda x: x * 2)
    jg(1.0)
    jg(np.float64(1.0))  # a NumPy scalar is not weak: another signature
    assert jg.cache_info().misses == 2
    jh = tg.jit(lambda t: t[0])
    jh((np.ones(2),))
    jh([np.ones(2)])  # another pytree structure: re-traces, does not crash
    assert jh.cache_info().misses == 2


def test_python_scalars_keep_numpy_promotion():
    jf = tg.jit(lambda x, s: x * s)
    x = np.ones(3, np.float32)
    assert jf(x, 2.5).dtype == np.float32  # a weak Python float does not widen float32
    assert jf(x, np.float64(2.5)).dtype == np.float64


def test_retrace_warning():
    jf = tg.jit(lambda x: x + 1.0)
    with pytest.warns(RetraceWarning, match="traced 10 times"):
        for n in range(RETRACE_WARNING_AFTER):
            jf(np.ones(n + 1))


def test_closed_over_arrays_are_captured_at_trace_time():
    w = np.ones(3)
    jf = tg.jit(lambda x: x * w)
    np.testing.assert_array_equal(jf(np.ones(3)), np.ones(3))
    w[:] = 5.0  # documented: the cached entry keeps the value it was traced with
    np.testing.assert_array_equal(jf(np.ones(3)), np.ones(3))


def test_backends_agree_bit_for_bit():
    def f(x):
        return np.sum(np.sin(x) ** 2 + np.exp(-x)) / x.size

    x = np.linspace(-1, 1, 7, dtype=np.float32)
    a = tg.jit(f)(x)
    b = tg.jit(f, backend="interpret")(x)
    np.testing.assert_array_equal(a, b, strict=True)
    np.testing.assert_array_equal(a, f(x), strict=True)


def test_lower_gives_the_graph_and_the_source():
    lowered = tg.jit(lambda x: np.sin(x) * 2.0).lower(np.ones(3))
    assert isinstance(lowered.graph, tg.Graph)
    assert "np.sin" in lowered.source and "def " in lowered.source
    assert lowered.memory >= 0


def test_lower_takes_avals_as_make_graph_does_and_a_call_then_hits_its_entry():
    def loss(w, x):
        return np.sum(np.tanh(x @ w))

    f = tg.jit(tg.value_and_grad(loss))
    lowered = f.lower(tg.Aval((3, 2), np.float64), tg.Aval((4, 3), np.float64))
    w, x = np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.linspace(0.0, 1.0, 12).reshape(4, 3)
    assert lowered.graph == f.lower(w, x).graph  # the same entry
    assert_bitwise_equal(list(f(w, x)), list(lowered.graph(w, x)))
    assert f.cache_info().misses == 1
    assert tg.jit(np.sin).lower(tg.Aval((), np.float64, weak_type=True)).graph.in_avals[0].weak_type
    with pytest.raises(TypeError, match=r"tg\.Aval stands for an argument in \.lower\(\)"):
        f(tg.Aval((3, 2), np.float64), x)


def test_export_returns_the_functions_output_structure(tmp_path):
    def f(w, x):
        loss = np.sum(np.tanh(x @ w))
        return {"loss": loss, "parts": (loss * 2.0, [np.cos(w)])}, None, (np.sin(x),)

    w, x = np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.linspace(0.0, 1.0, 12).reshape(4, 3)
    path = tg.jit(f).lower(w, x).export(tmp_path / "model.py")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    got = namespace[namespace["__all__"][0]](w, x)
    want = f(w, x)
    assert tg.tree.structure(got) == tg.tree.structure(want)
    assert_bitwise_equal(tg.tree.leaves(got), tg.tree.leaves(want))


def test_export_refuses_an_output_it_cannot_rebuild_without_tracegrad(tmp_path):
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    lowered = tg.jit(lambda x: Pair(np.sin(x), x)).lower(np.ones(2))
    with pytest.raises(ValueError, match="output holds a Pair, which a module that needs only"):
        lowered.export(tmp_path / "m.py")


@pytest.mark.parametrize(
    "compose", ["jit_grad", "grad_jit", "vmap_jit", "jit_vmap", "jit_hessian", "jvp_jit"]
)
def test_jit_composes_with_every_transform(compose):
    a = np.array([[1.0, 0.5], [-0.3, 2.0]])

    def f(x):
        return np.sum(np.tanh(a @ x) ** 2)

    x = np.array([0.3, -0.8])
    if compose == "jit_grad":
        got, want = tg.jit(tg.grad(f))(x), tg.grad(f)(x)
    elif compose == "grad_jit":
        got, want = tg.grad(tg.jit(f))(x), tg.grad(f)(x)
    elif compose == "vmap_jit":
        xs = np.stack([x, 2 * x])
        got, want = tg.vmap(tg.jit(f))(xs), np.array([f(x), f(2 * x)])
    elif compose == "jit_vmap":
        xs = np.stack([x, 2 * x])
        got, want = tg.jit(tg.vmap(f))(xs), np.array([f(x), f(2 * x)])
    elif compose == "jit_hessian":
        got, want = tg.jit(tg.hessian(f))(x), tg.hessian(f)(x)
    else:
        got = tg.jvp(tg.jit(f), (x,), (np.ones(2),))[1]
        want = tg.jvp(f, (x,), (np.ones(2),))[1]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_grad_of_jit_reuses_the_cache():
    calls = []

    def f(x):
        calls.append(1)
        return np.sum(x**3)

    jf = tg.jit(f)
    g = tg.grad(jf)
    for _ in range(3):
        np.testing.assert_allclose(g(np.array([1.0, 2.0])), [3.0, 12.0])
    assert len(calls) == 1


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, what",
    [
        (lambda x: x if x > 0 else -x, "bool()"),
        (lambda x: int(x), "int()"),
        (lambda x: float(x), "float()"),
        (lambda x: np.zeros((x, 2)), "shape"),
        (lambda x: [1.0 for _ in range(x)], "shape"),
    ],
)
def test_concretization_errors_name_the_operation_line_and_fix(body, what):
    with pytest.raises(tg.ConcretizationError) as info:
        tg.jit(body)(np.int64(3) if what == "shape" else 1.0)
    msg = str(info.value)
    assert what.split("(")[0] in msg
    assert "test_jit.py:" in msg  # the user's source line
    assert "static_argnums" in msg and "where" in msg


def test_boolean_mask_under_jit_is_a_concretization_error():
    with pytest.raises(tg.ConcretizationError, match="boolean"):
        tg.jit(lambda x: x[x > 0])(np.array([1.0, -1.0]))


def test_static_argnums_fix_control_flow():
    jf = tg.jit(lambda x, n: x * n if n > 2 else -x, static_argnums=1)
    np.testing.assert_array_equal(jf(np.ones(2), 3), [3.0, 3.0])
    np.testing.assert_array_equal(jf(np.ones(2), 1), [-1.0, -1.0])


def test_unhashable_static_argument():
    with pytest.raises(TypeError, match=r"static argument 1 has the unhashable type list"):
        tg.jit(lambda x, s: x, static_argnums=1)(np.ones(2), [1, 2])


def test_static_argnums_out_of_range():
    with pytest.raises(ValueError, match=r"static_argnums=\(3,\) refers to argument 3"):
        tg.jit(lambda x: x, static_argnums=3)(np.ones(2))


def test_wrong_argument_count_is_the_functions_own_error():
    with pytest.raises(TypeError, match="positional argument"):
        tg.jit(lambda x, y: x + y)(np.ones(2))


def test_non_array_argument_suggests_static_argnums():
    with pytest.raises(TypeError, match="static_argnums"):
        tg.jit(lambda x, s: x)(np.ones(2), "label")


def test_escaped_tracer_under_jit():
    leaked = []

    def f(x):
        leaked.append(x)
        return x + 1.0

    tg.jit(f)(np.ones(2))
    with pytest.raises(tg.EscapedTracerError):
        leaked[0] * 2.0


def test_bad_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        tg.jit(lambda x: x, backend="cuda")


def test_donated_parameters_are_updated_in_place_with_the_same_bits():
    def step(p, x):
        g = tg.grad(lambda p: np.sum(np.tanh(x @ p["w"]) ** 2))(p)
        return {"w": p["w"] - 0.1 * g["w"]}

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    w0 = rng.standard_normal((3, 2))
    expected = tg.jit(step)({"w": w0.copy()}, x)["w"]
    p = {"w": w0.copy()}
    buffer = p["w"]
    js = tg.jit(step, donate_argnums=0)
    new = js(p, x)
    assert np.shares_memory(new["w"], buffer)  # written into the donated array
    assert new["w"] is not buffer and not buffer.flags.writeable  # the old object is spent
    np.testing.assert_array_equal(new["w"], expected, strict=True)
    new = js(new, x)  # the returned arrays donate in turn
    assert np.shares_memory(new["w"], buffer)
    with pytest.raises(ValueError, match="must be a writeable NumPy array"):
        ro = w0.copy()
        ro.flags.writeable = False
        js({"w": ro}, x)


def test_a_donated_array_passed_again_raises_as_jax_and_its_output_is_a_new_object():
    def sgd(w, b, g):
        return w - 0.1 * g, b - 0.1 * np.sum(g)

    w, b, g = np.ones((3, 2)), np.zeros(2), np.full((3, 2), 0.5)
    step = tg.jit(sgd, donate_argnums=(0, 1))
    w1, b1 = step(w, b, g)
    assert np.shares_memory(w1, w) and np.shares_memory(b1, b)  # both updates in place
    with pytest.raises(
        RuntimeError, match=r"argument leaf 0 \(shape \(3, 2\), float64\) was donated"
    ):
        step(w, b1, g)
    with pytest.raises(RuntimeError, match=r"argument leaf 1 .* was donated"):
        step(w1, b, g)
    with pytest.raises(RuntimeError, match=r"jit\(sin\): argument leaf 0 .* was donated"):
        tg.jit(np.sin)(w)  # to any jitted function
    with pytest.raises(ValueError, match="read-only"):
        w[0, 0] = 1.0  # NumPy itself refuses writes to a spent array
    expected = sgd(*sgd(np.ones((3, 2)), np.zeros(2), g), g)
    assert_bitwise_equal(list(step(w1, b1, g)), list(expected))
    del w, b  # their ids leave the registry with them: new arrays at those addresses run
    for _ in range(3):
        tg.jit(np.sin)(np.ones((3, 2)))


def test_donate_argnums_cannot_be_static():
    with pytest.raises(ValueError, match="both static and donated"):
        tg.jit(lambda x, n: x, static_argnums=1, donate_argnums=1)


def test_jit_of_a_nested_derivative_is_as_small_as_the_simplified_graph():
    # every level is simplified before it is differentiated, also directly under jit
    from tracegrad.transforms.simplify import simplify

    d = np.tanh
    for _ in range(6):
        d = tg.grad(d)
    jitted = tg.jit(d).lower(0.3).graph
    assert jitted.stats()["total"] <= simplify(tg.make_graph(d)(0.3)).stats()["total"]
    assert tg.jit(d)(0.3) == pytest.approx(d(0.3), rel=1e-12)


# -- static_argnames -------------------------------------------------------------------------


def _power(x, n, scale=1.0):
    return x**n * scale


def test_static_argnames_as_jax():
    x = np.arange(4.0)
    f = tg.jit(_power, static_argnames="n")
    assert_bitwise_equal(f(x, n=3), _power(x, 3))
    assert_bitwise_equal(f(x, 3), _power(x, 3))  # by position: static through the signature
    assert_bitwise_equal(f(x, n=2, scale=np.float64(2.0)), _power(x, 2, 2.0))  # scale traced
    assert f.cache_info().misses == 3
    f(x, n=3)
    assert f.cache_info().hits == 1
    # static_argnums also covers the parameter when it is passed by name
    g = tg.jit(lambda x, mode: x * 2 if mode == "double" else x, static_argnums=1)
    assert_bitwise_equal(g(x, mode="double"), x * 2)
    assert_bitwise_equal(g(x, "same"), x)
    # a static value is part of the key: Python control flow on it works
    h = tg.jit(lambda x, flip: -x if flip else x, static_argnames=("flip",))
    assert_bitwise_equal(h(x, flip=True), -x)
    assert_bitwise_equal(h.lower(x, flip=False).graph(x), x)


def test_static_argnames_errors():
    f = tg.jit(_power, static_argnames="n")
    with pytest.raises(TypeError, match="static argument 'n' has the unhashable type list"):
        f(np.ones(2), n=[2])
    with pytest.raises(TypeError, match="static_argnames must be strings"):
        tg.jit(_power, static_argnames=(1,))
    with pytest.raises(tg.ConcretizationError):  # not named static: traced
        tg.jit(lambda x, n: x if n > 1 else -x)(np.ones(2), n=np.int64(2))


def test_static_argnames_must_name_parameters_as_in_jax():
    with pytest.raises(ValueError, match=r"static_argnames \['z'\] are not parameters of"):
        tg.jit(_power, static_argnames=("z",))

    def positional_only(x, /, n):
        return x * n

    with pytest.raises(ValueError, match=r"\['x'\] are positional-only"):
        tg.jit(positional_only, static_argnames="x")
    # a function taking **kwargs takes any name
    assert_bitwise_equal(
        tg.jit(lambda x, **kw: x * kw["k"], static_argnames="k")(np.ones(2), k=3), np.full(2, 3.0)
    )


def test_transforms_of_a_jitted_function_compose_with_jit():
    """jit(grad(jit(f))) is the gradient: the wrappers take f's name and docstring, never its
    `__dict__` (a Jitted keeps its function and cache there; copying them onto the outer jit
    made it run f itself)."""

    def f(x):
        """f's docstring."""
        return np.sin(x) * x

    inner = tg.jit(f)
    want = np.cos(0.5) * 0.5 + np.sin(0.5)
    for t in (tg.grad, tg.jacfwd, tg.jacrev, lambda g: tg.value_and_grad(g)):
        outer = tg.jit(t(inner))
        got = outer(0.5)
        got = got[1] if isinstance(got, tuple) else got
        np.testing.assert_allclose(got, want, rtol=1e-15)
        assert outer.__name__ == "f" and outer.__doc__ == "f's docstring."
    np.testing.assert_array_equal(tg.jit(tg.vmap(inner))(np.full(2, 0.5)), f(np.full(2, 0.5)))
