"""Bad input to the backends gets a clear error, each named here: two array libraries in one
call, a primitive without a lowering, a dask array of unknown chunk sizes, eager transforms
on another library's arrays, and the options that only NumPy arrays take."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tests.backends.helpers import to_dask, to_strict
from tracegrad.backends.libraries import BackendError, LoweringError
from tracegrad.extend import Primitive

da = pytest.importorskip("dask.array")
pytest.importorskip("array_api_strict")


def test_two_array_libraries_in_one_call():
    f = tg.jit(lambda a, b: a + b)
    with pytest.raises(
        BackendError,
        match=r"jit\(<lambda>\): arguments from two array libraries, "
        r"(dask and array_api_strict|array_api_strict and dask) \(leaf 1\)",
    ):
        f(to_dask(np.ones(4)), to_strict(np.ones(4)))


def test_a_primitive_without_a_lowering_names_itself_and_the_library():
    f = tg.jit(lambda a, b: np.einsum("ij,jk->ik", a, b))
    with pytest.raises(
        LoweringError,
        match=r"the primitive einsum has no lowering for "
        r"array_api_strict arrays: its code calls np.einsum",
    ):
        f(to_strict(np.ones((2, 2))), to_strict(np.ones((2, 2))))


def test_control_flow_that_branches_on_values_is_refused_with_the_reason():
    f = tg.jit(lambda x: tg.lax.cond(np.sum(x) > 0, np.sin, np.cos, x))
    with pytest.raises(
        LoweringError,
        match=r"the primitive cond has no lowering for dask "
        r"arrays: the branch is chosen by a Python `if`",
    ):
        f(to_dask(np.ones(4)))


def test_a_users_primitive_without_an_emit_rule_is_refused():
    twice = Primitive("test_backends.twice", impl=lambda x: 2 * x, shape=lambda x: x)
    f = tg.jit(lambda x: twice.bind(x))
    with pytest.raises(
        LoweringError,
        match=r"test_backends.twice has no lowering for dask "
        r"arrays: it has no emit rule",
    ):
        f(to_dask(np.ones(4)))
    np.testing.assert_array_equal(f(np.ones(4)), 2 * np.ones(4))  # NumPy still runs its impl


def test_a_dask_array_of_unknown_chunk_sizes():
    x = to_dask(np.arange(8.0))
    unknown = x[x > 3]
    with pytest.raises(
        BackendError,
        match=r"a dask array of unknown shape \(nan,\) .*"
        r"compute_chunk_sizes\(\)",
    ):
        tg.jit(np.sum)(unknown)


@pytest.mark.parametrize("transform", [tg.grad, tg.jacrev, tg.value_and_grad])
def test_eager_transforms_on_dask_arrays_point_to_jit(transform):
    with pytest.raises(
        TypeError,
        match=r"eager transforms run on NumPy arrays, got a dask "
        r"Array; .*tg.jit\(tg.grad\(f\)\)\(x\)",
    ):
        transform(lambda x: np.sum(x**2))(to_dask(np.ones(3)))


def test_the_interpreter_backend_runs_numpy_arrays_only():
    f = tg.jit(np.sin, backend="interpret")
    with pytest.raises(BackendError, match=r"backend='interpret' runs NumPy arrays only"):
        f(to_dask(np.ones(3)))


def test_donation_is_for_numpy_buffers():
    f = tg.jit(lambda x: x * 2, donate_argnums=0)
    with pytest.raises(BackendError, match=r"donate_argnums gives NumPy buffers"):
        f(to_dask(np.ones(3)))
