"""JAX's functional index updates, `x.at[index].set/add/multiply/min/max/get`.

Oracles: NumPy for values (`y = x.copy(); y[i] = v` and `np.add.at` and its siblings, bit for
bit, repeated indices included), JAX for gradients (`jax.numpy` arrays have the same `.at`),
finite differences through `tg.check_grads`, and a Python loop for `vmap`. The primitives'
own rules are checked from their SAMPLES rows in tests/primitives.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.testing import assert_bitwise_equal, check_grads

X = np.arange(12.0).reshape(3, 4) / 7 + 0.5
INDICES = {
    "int": (1,),
    "negative": (-1, 2),
    "slice": (slice(None), slice(1, None, 2)),
    "repeats": ([0, 2, 0], 1),
    "array2d": (np.array([[0, 1], [2, 0]]),),
    "mask": (X > 1.0,),
    "ellipsis": (Ellipsis, [3, 0]),
}


def _numpy_update(mode, x, index, v):
    y = x.copy()
    if mode == "set":
        y[index] = v
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum, "max": np.maximum}[mode].at(
            y, index, v
        )
    return y


def _values(x, index, dtype):
    shape = x[index].shape
    return (np.arange(np.prod(shape), dtype=dtype).reshape(shape) - 2.0) / 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("where", list(INDICES))
def test_values_are_numpys_bit_for_bit(where, mode, dtype):
    x = X.astype(dtype)
    index = INDICES[where]
    v = _values(x, index, dtype)
    expected = _numpy_update(mode, x, index, v)
    assert_bitwise_equal(getattr(tnp.at(x)[index], mode)(v), expected)
    f = lambda x, v: getattr(x.at[index], mode)(v)  # noqa: E731
    if where != "mask":  # a mask's shape needs concrete values: not under make_graph or jit
        assert_bitwise_equal(tg.make_graph(f)(x, v)(x, v), expected)
        assert_bitwise_equal(tg.jit(f)(x, v), expected)
    if mode != "multiply" or where not in ("repeats", "array2d"):  # refused: see below
        value, _ = tg.vjp(f, x, v)
        assert_bitwise_equal(value, expected)


JAX_CASES = [
    (where, mode)
    for where in ("int", "slice", "repeats", "array2d", "ellipsis")
    for mode in ("set", "add", "min", "max", "multiply")
    # multiply's derivative needs indices without repeats (refused otherwise: next test)
    if not (mode == "multiply" and where in ("repeats", "array2d"))
]


@pytest.mark.parametrize("where, mode", JAX_CASES)
def test_gradients_match_jax(where, mode):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    index = INDICES[where]
    v = _values(X, index, np.float64) + 0.01  # no ties between x and the updates
    # JAX differentiates multiply only when promised unique indices
    options = {"unique_indices": True} if mode == "multiply" else {}
    weights = np.cos(np.arange(12.0)).reshape(3, 4)

    def ours(x, v):  # tnp.at(x): x is also a plain array when check_grads evaluates it
        return np.sum(getattr(tnp.at(x)[index], mode)(v) * weights)

    def theirs(x, v):
        jindex = tuple(jnp.asarray(i) if isinstance(i, list | np.ndarray) else i for i in index)
        return jnp.sum(getattr(x.at[jindex], mode)(v, **options) * weights)

    g_ours = tg.grad(ours, argnums=(0, 1))(X, v)
    g_theirs = jax.grad(theirs, argnums=(0, 1))(jnp.asarray(X), jnp.asarray(v))
    for a, b in zip(g_ours, g_theirs):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12, atol=1e-15)
    check_grads(ours, (X, v), order=2, modes=("fwd", "rev"))


def test_multiply_with_repeated_indices_computes_but_refuses_to_differentiate():
    index = ([0, 2, 0], 1)
    v = np.array([2.0, 3.0, 4.0])
    assert_bitwise_equal(tnp.at(X)[index].multiply(v), _numpy_update("multiply", X, index, v))
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        tg.grad(lambda x: np.sum(x.at[index].multiply(v)))(X)
    # without repeats (known from the concrete indices, or promised) it differentiates
    g = tg.grad(lambda x: np.sum(x.at[[0, 2], 1].multiply(v[:2])))(X)
    expected = np.ones_like(X)
    expected[[0, 2], 1] = v[:2]
    assert_bitwise_equal(g, expected)
    g = tg.jit(tg.grad(lambda x, i: np.sum(x.at[i, 1].multiply(v[:2], unique_indices=True))))(
        X, np.array([0, 2])
    )
    assert_bitwise_equal(g, expected)


def test_set_with_repeats_sends_the_cotangent_to_the_update_that_won():
    # NumPy's rule: the last write wins; the overwritten update gets no gradient
    g = tg.grad(lambda v: np.sum(tnp.zeros(3).at[[1, 1, 2]].set(v) * [1.0, 2.0, 3.0]))(
        np.array([5.0, 6.0, 7.0])
    )
    assert_bitwise_equal(g, np.array([0.0, 2.0, 3.0]))


def test_traced_indices_under_jit_and_vmap():
    def f(x, i, v):
        return x.at[i].add(v)

    i = np.array([2, 0, 2])
    v = np.ones((3, 4))
    assert_bitwise_equal(tg.jit(f)(X, i, v), _numpy_update("add", X, i, v))
    xs, is_, vs = np.stack([X, X * 2]), np.stack([i, i[::-1]]), np.stack([v, v * 3])
    got = tg.vmap(f)(xs, is_, vs)
    want = np.stack([_numpy_update("add", xs[k], is_[k], vs[k]) for k in range(2)])
    assert_bitwise_equal(got, want)
    got = tg.vmap(f, in_axes=(None, 0, None))(X, is_, v)
    want = np.stack([_numpy_update("add", X, is_[k], v) for k in range(2)])
    assert_bitwise_equal(got, want)


def test_get_subtract_divide_power_and_the_options():
    x = X.copy()
    assert_bitwise_equal(tnp.at(x)[1:, 2].get(), x[1:, 2])
    assert_bitwise_equal(tnp.at(x)[0].subtract(1.5), _numpy_update("add", x, 0, -1.5))
    y = x.copy()
    y[0] = y[0] / 2.0
    np.testing.assert_allclose(tnp.at(x)[0].divide(2.0), y, rtol=1e-15)
    y = x.copy()
    y[2] = y[2] ** 2
    assert_bitwise_equal(tnp.at(x)[2].power(2), y)
    # broadcast and cast to x's dtype, as in JAX
    got = tnp.at(x.astype(np.float32))[0].set(2)
    assert got.dtype == np.float32 and np.all(got[0] == 2)
    # arrays from tracegrad.numpy's creation functions have .at outside a trace
    assert_bitwise_equal(tnp.zeros(3).at[1].set(4.0), np.array([0.0, 4.0, 0.0]))
    assert isinstance(tnp.arange(3.0), np.ndarray) and hasattr(tnp.arange(3.0), "at")
    assert repr(tnp.at(x)).startswith("_IndexUpdateHelper(")


def test_errors_name_the_operation_and_the_fix():
    with pytest.raises(NotImplementedError, match="out-of-bounds index raises IndexError"):
        tnp.at(X)[0].set(1.0, mode="clip")
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        tnp.at(X)[0].add(1.0, wrong=True)
    with pytest.raises(TypeError, match=r"divide\(\) on an int64 array"):
        tnp.at(np.arange(3))[0].divide(2)
    with pytest.raises(IndexError):
        tnp.at(X)[5].set(1.0)
    with pytest.raises(ValueError):
        tnp.at(X)[0].set(np.ones(3))  # shapes that do not broadcast


def test_divide_is_jax_and_numpy_bits_and_jit_takes_tnp_arrays():
    x = np.arange(1.0, 30.0)
    v = np.arange(1.0, 30.0)[::-1] * 1.7
    assert_bitwise_equal(tnp.at(x)[:].divide(v), x / v)
    g = tg.grad(lambda v: np.sum(tnp.at(x)[2:4].divide(v)))(np.array([2.0, 4.0]))
    np.testing.assert_allclose(g, -x[2:4] / np.array([2.0, 4.0]) ** 2, rtol=1e-15)
    # the arrays tracegrad.numpy returns are accepted wherever NumPy arrays are
    assert_bitwise_equal(tg.jit(lambda a: a * 2)(tnp.zeros(3)), np.zeros(3))
    assert_bitwise_equal(
        tg.jit(tg.grad(lambda a: np.sum(a**2)))(tnp.linspace(0, 1, 3)), np.linspace(0, 2, 3)
    )
    assert_bitwise_equal(tg.jit(lambda a: a + 1, donate_argnums=0)(tnp.ones(2)), np.full(2, 2.0))
