"""Conversions that would drop a derivative are refused; taking a constant on purpose works.

Each pattern here returned a gradient of 0 without a word before (float(x), int(x),
complex(x), math.*(x), storing x into a NumPy array, a repeated argnum). Oracles: closed
forms, JAX (the repeated argnum; JAX itself fails there), and PyTorch for the tensors' warning.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np
import pytest

import tracegrad as tg

X = np.array([0.5, -1.25, 2.0])

# each takes a traced value that carries a derivative and converts it to a Python number
CONVERSIONS = {
    "float": lambda x: float(np.sum(x)) * x,
    "int": lambda x: int(np.sum(x)) * x,
    "complex": lambda x: complex(np.sum(x)).real * x,
    "round": lambda x: round(np.sum(x)) * x,
    "math.sin": lambda x: math.sin(np.sum(x)) * x,
    "math.exp": lambda x: math.exp(x[0]) * x,
    "math.isclose": lambda x: x * math.isclose(x[0], 0.5),
}


def _store(x):
    out = np.zeros(3)
    out[0] = x[1]
    return out * x


def _run(transform, f):
    if transform == "grad":
        return tg.grad(lambda x: np.sum(f(x)))(X)
    if transform == "value_and_grad":
        return tg.value_and_grad(lambda x: np.sum(f(x)))(X)
    if transform == "vjp":
        return tg.vjp(f, X)[1](np.ones(3))
    if transform == "jvp":
        return tg.jvp(f, (X,), (np.ones(3),))
    if transform == "linearize":
        return tg.linearize(f, X)[1](np.ones(3))
    if transform == "jacrev":
        return tg.jacrev(f)(X)
    if transform == "jacfwd":
        return tg.jacfwd(f)(X)
    if transform == "hessian":
        return tg.hessian(lambda x: np.sum(f(x)))(X)
    if transform == "vmap":
        return tg.vmap(f)(np.stack([X, X]))
    if transform == "jit":
        return tg.jit(f)(X)
    raise AssertionError(transform)


# jacfwd and hessian push tangents batched by vmap, but the primal values stay concrete
CONCRETE = ("grad", "value_and_grad", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian")
ABSTRACT = ("vmap", "jit")  # traced without values: there is no number at all


@pytest.mark.parametrize("transform", CONCRETE)
@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_a_conversion_that_would_drop_a_derivative_raises(name, transform):
    with pytest.raises(TypeError, match="would drop the derivative") as info:
        _run(transform, CONVERSIONS[name])
    text = str(info.value)
    # the operation, the user's line and the fixes
    assert "converting a traced f64[] value" in text or "converting a traced f64" in text
    assert "test_conversions.py" in text
    assert "x.item()" in text and "tg.stop_gradient(x)" in text and "x.at[i].set(v)" in text


@pytest.mark.parametrize("transform", ABSTRACT)
@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_a_conversion_under_abstract_tracing_raises_a_concretization_error(name, transform):
    with pytest.raises(tg.ConcretizationError, match="traced abstractly"):
        _run(transform, CONVERSIONS[name])


@pytest.mark.parametrize("transform", CONCRETE)
def test_storing_a_traced_value_into_a_numpy_array_raises(transform):
    # NumPy turns any error of an element store into its own ValueError; ours is the cause
    with pytest.raises(ValueError, match="setting an array element") as info:
        _run(transform, _store)
    cause = info.value.__cause__
    assert isinstance(cause, TypeError)
    assert "would drop the derivative" in str(cause) and "out[0] = x[1]" in str(cause)


def test_operator_index_of_a_float_is_numpys_type_error_and_of_an_integer_works():
    with pytest.raises(TypeError, match="integer"):
        tg.grad(lambda x: operator.index(x[0]) * x[0])(X)
    idx = np.array(2)
    g = tg.grad(lambda x, i: x[operator.index(i)] * 3.0)(X, idx)
    np.testing.assert_array_equal(g, [0.0, 0.0, 3.0])


def test_the_gradient_that_used_to_be_zero_is_now_refused_not_wrong():
    # before: tg.grad(lambda x: float(x) * x)(2.0) gave 2.0 (the float's derivative dropped)
    with pytest.raises(TypeError, match="would drop the derivative"):
        tg.grad(lambda x: float(x) * x)(2.0)


# -- what keeps working ----------------------------------------------------------------------


def test_item_takes_a_constant_on_purpose_with_zero_derivative():
    # x.item() * x: d/dx = x.item(), as in JAX and PyTorch
    g = tg.grad(lambda x: x.item() * x)(3.0)
    assert g == 3.0
    g = tg.grad(lambda x: float(tg.stop_gradient(x)) * x)(3.0)
    assert g == 3.0


def test_item_under_jit_and_vmap_has_no_single_value():
    with pytest.raises(tg.ConcretizationError, match="item"):
        tg.jit(lambda x: x.item() * x)(3.0)
    with pytest.raises(tg.ConcretizationError, match="item"):
        tg.vmap(lambda x: x.item() * x)(X)


def test_values_without_a_derivative_convert_to_python_numbers():
    def f(x, n):
        k = int(n)  # an integer input: no derivative
        count = int(np.sum(x > 0))  # a comparison: no derivative
        scale = float(np.floor(x[0]))  # floor: derivative zero by construction
        c = float(np.sum(np.ones(3)))  # a constant
        if x[0] > 0:  # control flow on concrete values
            return np.sum(x**k) * count + scale + c
        return np.sum(x)

    g = tg.grad(f)(X, np.array(2))
    np.testing.assert_allclose(g, 2 * X * 2)


def test_bool_and_comparisons_keep_working_under_concrete_tracing():
    g = tg.grad(lambda x: x * 2.0 if bool(x > 0) else -x)(1.5)
    assert g == 2.0


# -- duplicate argnums ------------------------------------------------------------------------


def _f(a, b):
    return np.sum(a * a * b)


def test_a_repeated_argnum_gets_its_gradient_at_every_position():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    ga, gb, ga2 = tg.grad(_f, argnums=(0, 1, 0))(a, b)
    np.testing.assert_array_equal(ga, 2 * a * b)
    np.testing.assert_array_equal(ga2, 2 * a * b)
    np.testing.assert_array_equal(gb, a * a)
    assert ga is not ga2  # NumPy arrays are mutable: each position gets its own
    (value, (g1, g2)) = tg.value_and_grad(_f, argnums=(1, 1))(a, b)
    np.testing.assert_array_equal(g1, a * a)
    np.testing.assert_array_equal(g2, a * a)
    j1, j2 = tg.jacrev(lambda a, b: a * b, argnums=(0, 0))(a, b)
    np.testing.assert_array_equal(j1, np.diag(b))
    np.testing.assert_array_equal(j2, np.diag(b))
    j1, j2 = tg.jacfwd(lambda a, b: a * b, argnums=(1, 1))(a, b)
    np.testing.assert_array_equal(j1, np.diag(a))
    np.testing.assert_array_equal(j2, np.diag(a))


# -- the tensors keep PyTorch's behaviour -----------------------------------------------------


def test_float_of_a_tensor_that_requires_grad_warns_as_torch_does():
    import tracegrad.torch as ttorch

    t = ttorch.tensor([2.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        value = float(t * 3)
    assert value == 6.0
    ours = str(record[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert t.item() == 2.0  # item() is silent
        assert int(t) == 2  # so is int()
        with ttorch.no_grad():
            assert float(t) == 2.0  # and float() outside grad mode
        assert float(t.detach()) == 2.0
    torch = pytest.importorskip("torch")
    tt = torch.tensor([2.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        float(tt * 3)
    theirs = str(record[0].message)
    assert theirs.startswith(ours)  # torch adds "(Triggered internally at ...)"


def test_tolist_and_the_math_rounding_functions_are_conversions_too():
    x = np.array([1.0, 2.0, 3.0])
    for f in (
        lambda x: np.sum(x * np.array(x.tolist())),
        lambda x: math.trunc(x[0]) * x[0],
        lambda x: math.floor(x[0]) * x[0],
        lambda x: math.ceil(x[0]) * x[0],
    ):
        with pytest.raises(TypeError, match="would drop the derivative"):
            tg.grad(f)(x)
    g = tg.grad(lambda x: x[0] * len(tg.stop_gradient(x).tolist()) + math.floor(x[1].item()))(x)
    np.testing.assert_array_equal(g, [3.0, 0.0, 0.0])
    assert tg.grad(lambda x, n: x[0] * sum(n.tolist()))(x, np.array([1, 2]))[0] == 3.0


def test_a_value_captured_from_an_outer_trace_converts_when_it_carries_no_derivative_there():
    x = np.array([1.0, 2.0])

    def outer(x):
        c = tg.stop_gradient(x)
        return tg.grad(lambda y: float(np.sum(c * 2)) * np.sum(y))(x)

    np.testing.assert_array_equal(outer(x), [6.0, 6.0])

    def carries(x):  # x carries the outer derivative: converting it inside is refused
        return np.sum(tg.grad(lambda y: float(np.sum(x * 2)) * np.sum(y))(x))

    with pytest.raises(TypeError, match="would drop the derivative"):
        tg.grad(carries)(x)


def test_argnums_may_be_numpy_integers():
    a, b = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    np.testing.assert_array_equal(tg.grad(_f, argnums=np.int64(1))(a, b), a * a)
