"""In-place NumPy on traced values: augmented assignment works (the name is rebound, as in
JAX), and every form whose result would be lost raises a clear error.

Oracles: the same function run as plain NumPy (values, bit for bit) and closed-form
derivatives; JAX for the gradients of augmented assignments.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.testing import assert_bitwise_equal

X = np.array([0.5, -1.25, 2.0])


def augmented(x):
    x += 1
    x *= 2.0
    x -= 0.5 * x
    x /= 3
    x **= 2
    acc = np.zeros(3)  # a NumPy array that becomes traced (as a JAX array would)
    acc += x
    acc *= x
    w = x[0]
    w -= 1.0 * x[1]
    return acc * w


TRANSFORMS = {
    "make_graph": lambda f, x: tg.make_graph(f)(x)(x),
    "jit": lambda f, x: tg.jit(f)(x),
    "jit_interpret": lambda f, x: tg.jit(f, backend="interpret")(x),
    "vmap": lambda f, x: tg.vmap(f)(np.stack([x, x]))[0],
    "grad_value": lambda f, x: tg.value_and_grad(lambda v: np.sum(f(v)))(x)[0],
}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_augmented_assignment_gives_numpys_values_under_every_transform(transform):
    expected = augmented(X.copy())
    got = TRANSFORMS[transform](augmented, X)
    if transform == "grad_value":
        expected = np.sum(expected)
    assert_bitwise_equal(got, expected)


def test_augmented_assignment_differentiates_as_jax_does():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)

    def jax_augmented(x):
        x += 1
        x *= 2.0
        x -= 0.5 * x
        x /= 3
        x **= 2
        acc = jnp.zeros(3)
        acc += x
        acc *= x
        w = x[0]
        w -= 1.0 * x[1]
        return acc * w

    ours = tg.jacrev(augmented)(X)
    theirs = np.asarray(jax.jacrev(jax_augmented)(jnp.asarray(X)))
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    np.testing.assert_allclose(tg.jacfwd(augmented)(X), theirs, rtol=1e-13)
    np.testing.assert_allclose(
        tg.grad(lambda v: np.sum(augmented(v)))(X),
        np.asarray(jax.grad(lambda v: jnp.sum(jax_augmented(v)))(jnp.asarray(X))),
        rtol=1e-13,
    )


def test_the_caller_array_is_not_changed():
    x = X.copy()
    tg.grad(lambda v: np.sum(augmented(v)))(x)
    np.testing.assert_array_equal(x, X)


# -- explicit out= loses its result: refused --------------------------------------------------


def _into_buffer(x):
    buf = np.zeros(3)
    np.add(x, 1, out=buf)
    return np.sum(buf)


def _into_itself(x):
    acc = np.zeros(3)
    np.add(acc, x, out=acc)  # the call reaches NumPy exactly as `acc += x` does
    return np.sum(acc)


def _out_tuple(x):
    buf = np.zeros(3)
    np.multiply(x, x, out=(buf,))
    return np.sum(buf)


def _traced_out(x):
    y = x * 1.0
    np.sin(x, out=y)
    return np.sum(y)


@pytest.mark.parametrize("f", [_into_buffer, _into_itself, _out_tuple, _traced_out])
def test_an_explicit_out_is_refused_naming_it(f):
    with pytest.raises(TypeError) as info:
        tg.grad(f)(X)
    text = str(info.value)
    assert "out=" in text and "left unchanged" in text and "use the returned value" in text


@pytest.mark.parametrize(
    "method, hint",
    [
        (lambda x: x.sort(), "np.sort"),
        (lambda x: x.fill(0.0), "full_like"),
        (lambda x: x.put([0], [1.0]), ".at[indices].set"),
        (lambda x: x.partition(1), "np.partition"),
    ],
)
def test_in_place_methods_are_refused_naming_the_function_to_use(method, hint):
    with pytest.raises(TypeError, match="in place") as info:
        tg.grad(lambda x: np.sum(method(x) or x))(X)
    assert hint in str(info.value)


def test_item_assignment_on_a_traced_value_names_at():
    def f(x):
        x[0] = 1.0
        return np.sum(x)

    with pytest.raises(TypeError, match=r"x.at\[i\].set\(v\)"):
        tg.grad(f)(X)


# -- NumPy's in-place casting and shapes -----------------------------------------------------


def test_augmented_assignment_keeps_the_targets_dtype_as_numpy():
    a32 = np.linspace(0, 1, 3, dtype=np.float32)
    b64 = np.linspace(0.3, 2, 3)

    def f(x, y):
        x = x * 1
        x += y  # in NumPy x stays float32 (computed in float64, cast back)
        acc = np.zeros(3, np.float32)
        acc += y
        return x, acc

    expected = f(a32.copy(), b64)
    for got in (tg.jit(f)(a32, b64), tg.make_graph(f)(a32, b64)(a32, b64)):
        assert_bitwise_equal(got, expected)
    g = tg.grad(lambda y: np.sum(f(a32, y)[0]) + np.sum(f(a32, y)[1]))(b64)
    assert g.dtype == np.float64 and np.all(g == 2.0)


def test_augmented_assignment_errors_are_numpys():
    def int_target(x):
        acc = np.zeros(3, np.int64)
        acc += x
        return acc

    def wider(x):
        acc = np.zeros(3)
        acc += x
        return acc

    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' output from dtype\('float64'\)"):
        int_target(X)  # NumPy's own error...
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' output from dtype\('float64'\)"):
        tg.jit(int_target)(X)  # ...and ours
    with pytest.raises(ValueError, match="non-broadcastable output operand with shape"):
        wider(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"non-broadcastable output operand with shape \(3,\)"):
        tg.jit(wider)(np.ones((2, 3)))
