"""The same jitted call on a dask.distributed cluster of two worker processes: results equal
NumPy's (the parameter, a NumPy array beside the chunked batch, is one single-chunk task of
the graph, so the scheduler sends it to each worker once per call)."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tests.backends.helpers import assert_close, to_dask

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")


def loss(w, x, y):
    z = x @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_value_and_grad_on_a_local_cluster_equals_numpy(client):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4000, 8))
    y = (x @ rng.standard_normal(8) > 0).astype(np.float64)
    w = rng.standard_normal(8) * 0.1
    value, grad = tg.jit(tg.value_and_grad(loss))(w, to_dask(x, 8), to_dask(y, 8))
    value, grad = client.compute([value, grad], sync=True)
    want_value, want_grad = tg.value_and_grad(loss)(w, x, y)
    assert_close(value, want_value)
    assert_close(grad, want_grad)


def test_a_scatter_runs_on_the_workers(client):
    # the vjp of integer-array indexing is the one task that gathers (docs/backends.md); its
    # function is shipped by value, so the workers need nothing of tracegrad
    x = np.random.default_rng(1).standard_normal((40, 3))
    idx = np.array([0, 5, 5, 39])

    def f(x):
        return np.sum(np.tanh(x[idx]) ** 2)

    grad = tg.jit(tg.grad(f))(to_dask(x, 4))
    assert_close(client.compute(grad, sync=True), tg.grad(f)(x))
