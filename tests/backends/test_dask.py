"""jit on dask arrays: lazy results equal NumPy's, shared work computed once, NumPy
parameters beside a chunked batch, the signature cache keyed on the library."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tests.backends.helpers import assert_close, to_dask

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


def mlp_loss(params, x, y):
    w1, b1, w2 = params
    h = np.tanh(x @ w1 + b1)
    return np.mean((h @ w2 - y) ** 2)


def _data(n=40):
    rng = np.random.default_rng(0)
    params = (rng.standard_normal((3, 5)), rng.standard_normal(5), rng.standard_normal((5, 2)))
    return params, rng.standard_normal((n, 3)), rng.standard_normal((n, 2))


def test_value_and_grad_of_an_mlp_on_a_chunked_batch_equals_numpy():
    params, x, y = _data()
    step = tg.jit(tg.value_and_grad(mlp_loss))
    value, grads = step(params, to_dask(x, 4), to_dask(y, 4))
    assert isinstance(value, da.Array) and all(isinstance(g, da.Array) for g in grads)
    value, grads = dask.compute(value, grads)
    want_value, want_grads = tg.value_and_grad(mlp_loss)(params, x, y)
    assert_close(value, want_value)
    for g, w in zip(grads, want_grads):
        assert_close(g, w)


def test_numpy_calls_keep_the_numpy_entry_and_the_cache_keys_on_the_library():
    params, x, y = _data()
    step = tg.jit(tg.value_and_grad(mlp_loss))
    plain = step(params, x, y)
    assert isinstance(plain[0], np.ndarray | np.generic)
    lazy = step(params, to_dask(x), to_dask(y))
    assert isinstance(lazy[0], da.Array)
    assert step.cache_info().currsize == 2
    step(params, to_dask(x, 3), to_dask(y, 3))  # other chunks, same signature
    assert step.cache_info().hits == 1
    assert_close(lazy[0].compute(), plain[0])


def test_one_compute_of_all_outputs_runs_the_shared_work_once():
    calls = []

    def counted(block):
        calls.append(block.shape)
        return block

    x = np.random.default_rng(1).standard_normal((12, 3))
    source = to_dask(x, 3).map_blocks(counted, dtype=x.dtype)
    f = tg.jit(lambda x: (np.sum(np.sin(x)), np.max(np.sin(x), axis=0)))
    a, b = f(source)
    calls.clear()
    dask.compute(a, b, scheduler="sync")
    assert len(calls) == 3  # each chunk of the input once, for both outputs
    calls.clear()
    a.compute(scheduler="sync")
    b.compute(scheduler="sync")
    assert len(calls) == 6  # one by one, the shared work is done again (documented)


def test_constants_and_numpy_arguments_join_the_dask_graph_as_single_chunks():
    w = np.arange(6.0).reshape(3, 2)
    f = tg.jit(lambda x, v: np.tanh(x @ w) * v)
    x = np.random.default_rng(2).standard_normal((10, 3))
    out = f(to_dask(x, 5), np.array([1.0, -1.0]))
    assert out.chunks == ((2, 2, 2, 2, 2), (2,))  # the batch axis keeps its chunks
    assert_close(out, np.tanh(x @ w) * np.array([1.0, -1.0]))


def test_float32_and_weak_scalars_keep_numpys_dtypes():
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    f = tg.jit(lambda x, s: np.exp(x * s) + 1)
    out = f(to_dask(x), 2.0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.compute(), np.exp(x * 2.0) + 1, rtol=1e-6)


def test_gradients_through_indexing_slicing_and_cumsum():
    x = np.random.default_rng(3).standard_normal((6, 4))
    idx = np.array([0, 2, 2, 5])

    def f(x):
        return np.sum(np.cumsum(x[idx] ** 2, axis=1)) + np.sum(x[1:5:2, ::3] ** 3)

    got = tg.jit(tg.grad(f))(to_dask(x, 3))
    assert_close(got, tg.grad(f)(x))


def test_a_scan_runs_on_dask():
    xs = np.random.default_rng(4).standard_normal((5, 3))

    def f(c, xs):
        return tg.lax.scan(lambda c, x: (c * 0.5 + np.sin(x), c * x), c, xs)

    c0 = np.ones(3)
    got = tg.jit(f)(c0, to_dask(xs, 2))
    want = f(c0, xs)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])


def test_scipy_special_functions_and_logsumexp():
    sp = pytest.importorskip("scipy.special")
    import tracegrad.scipy.special as tsp

    x = np.random.default_rng(5).uniform(0.1, 2.0, (8, 3))

    def f(x):
        return np.sum(sp.erf(x) * sp.gammaln(x + 1)) + np.sum(tsp.logsumexp(x, axis=1) ** 2)

    assert_close(tg.jit(f)(to_dask(x, 4)), f(x))
    assert_close(tg.jit(tg.grad(f))(to_dask(x, 4)), tg.grad(f)(x))


def test_an_index_array_of_several_axes():
    # dask takes 1-d index arrays only: the lowering takes the flattened array and reshapes
    idx = np.array([[0, 1], [2, 0]])
    x = np.arange(12.0).reshape(4, 3)

    def f(x):
        return np.sum(np.sin(x[idx]) * x[:, idx].sum(axis=(1, 2))[:2, None, None])

    assert_close(tg.jit(f)(to_dask(x)), f(x))
    assert_close(tg.jit(tg.grad(f))(to_dask(x)), tg.grad(f)(x))
