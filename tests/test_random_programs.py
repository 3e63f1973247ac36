"""Random NumPy programs (`tracegrad.testing.programs`) against NumPy itself.

The program's `fn` calls NumPy directly, so running it on arrays is the oracle: the traced
graph must give the same bits, survive a JSON round trip, and have derivatives that agree
with finite differences.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.testing import (
    assert_bitwise_equal,
    available_ops,
    check_grads,
    numerical_jvp,
    programs,
    run_numpy,
    run_traced,
)

DTYPES = pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, "mixed"], ids=["float32", "float64", "mixed"]
)


# Known tracegrad bugs that random programs find, each reproduced by a test_known_issue_*
# below (xfail): {description: predicate on a Program}. Programs that would hit one are
# discarded, so the rest of the space is still checked; delete the entry (and exclusion) when
# its test starts passing.
KNOWN_ISSUES: dict = {}
ORDER2_OPS = available_ops(smooth=True)


def _discard_known_issues(program) -> None:
    for hits in KNOWN_ISSUES.values():
        assume(not hits(program))


# -- forward values: bit for bit -------------------------------------------------------------


@DTYPES
@given(data=st.data())
def test_interpreted_graph_equals_numpy_bitwise(dtype, data):
    zero = data.draw(st.booleans(), label="size-0 axes")
    program = data.draw(programs(dtype=dtype, allow_size_zero=zero), label="program")
    _discard_known_issues(program)
    args = program.draw_inputs(data)
    assert_bitwise_equal(run_traced(program, args), run_numpy(program, args))


@given(data=st.data())
def test_scalar_programs_equal_numpy_bitwise(data):
    program = data.draw(programs(scalar_output=True), label="program")
    _discard_known_issues(program)
    args = program.draw_inputs(data)
    expected = run_numpy(program, args)
    assert np.shape(expected) == ()
    assert_bitwise_equal(run_traced(program, args), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@given(data=st.data())
def test_json_round_trip_keeps_printed_form_and_results(dtype, data):
    program = data.draw(programs(dtype=dtype), label="program")
    _discard_known_issues(program)
    args = program.draw_inputs(data)
    graph = tg.make_graph(program.fn)(*args)
    text = tg.ir.dumps(graph)
    assert json.loads(text)["format"] == "tracegrad.graph"
    loaded = tg.ir.loads(text)
    assert str(loaded) == str(graph)
    assert_bitwise_equal(loaded(*args), run_numpy(program, args))


# -- derivatives against finite differences --------------------------------------------------


@DTYPES
@given(data=st.data())
def test_vjp_of_random_programs_matches_finite_differences(dtype, data):
    program = data.draw(programs(dtype=dtype, scalar_output=True, smooth=True), label="program")
    _discard_known_issues(program)
    args = program.draw_inputs(data)
    check_grads(program.fn, args, order=1, modes=("rev",), **program.grad_tolerances)


@DTYPES
@given(data=st.data())
def test_grad_of_random_programs_matches_finite_differences(dtype, data):
    program = data.draw(programs(dtype=dtype, scalar_output=True, smooth=True), label="program")
    _discard_known_issues(program)
    args = program.draw_inputs(data)
    grads = tg.grad(program.fn, argnums=tuple(range(len(args))))(*args)
    assert len(grads) == len(args)
    for g, a in zip(grads, args):
        assert np.shape(g) == a.shape and np.asarray(g).dtype == a.dtype
    rng = np.random.default_rng(0)
    directions = [(rng.integers(-8, 9, a.shape) / 8.0).astype(a.dtype) for a in args]
    expected = float(numerical_jvp(program.fn, args, directions))
    got = sum(float(np.sum(np.asarray(g, np.float64) * v)) for g, v in zip(grads, directions))
    tol = program.grad_tolerances["rtol"]
    scale = max(1.0, abs(float(run_numpy(program, args))), abs(expected))
    scale *= sum(v.size for v in directions) or 1
    assert abs(got - expected) <= tol * scale, (got, expected)


@DTYPES
@given(data=st.data())
def test_second_derivatives_of_random_programs(dtype, data):
    program = data.draw(
        programs(dtype=dtype, scalar_output=True, smooth=True, max_ops=6, ops=ORDER2_OPS),
        label="program",
    )
    _discard_known_issues(program)
    args = program.draw_inputs(data)
    check_grads(program.fn, args, order=2, modes=("rev",), **program.grad_tolerances)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@given(data=st.data())
def test_forward_mode_of_random_programs(dtype, data):
    program = data.draw(
        programs(dtype=dtype, scalar_output=True, smooth=True, max_ops=6, ops=ORDER2_OPS),
        label="program",
    )
    _discard_known_issues(program)
    args = program.draw_inputs(data)
    check_grads(program.fn, args, order=2, modes=("fwd", "rev"), **program.grad_tolerances)


# -- bugs random programs found: a regression test, and the known issues reproduced ------------


def test_take_with_an_empty_index_list():
    # found by random programs: [] must be an integer index, as NumPy reads it
    x = np.arange(3.0)
    f = lambda x: np.take(x, [], axis=0)  # noqa: E731
    assert_bitwise_equal(run_traced(f, (x,)), f(x))


def test_take_keeps_numpy_memory_layout_for_a_later_sum():
    # np.take returns C order; a later sum adds in memory order, so the layout decides bits
    x = np.array([[[2.0]], [[1.0]]], np.float32)

    def f(x):
        return np.sum(np.sin(np.sin(np.take(x, [0, 0, 0], axis=1))))

    assert_bitwise_equal(run_traced(f, (x,)), f(x))


def test_second_derivative_of_prod_at_a_zero():
    # was NaN while cumprod's rules divided by x
    x = np.array([0.0, 2.0])

    def grad_prod(x):
        return tg.vjp(lambda x: np.prod(x), x)[1](1.0)[0]

    # d/dx of (x1, x0) along (1, 1) is (1, 1)
    (hvp,) = tg.vjp(grad_prod, x)[1](np.ones(2))
    np.testing.assert_array_equal(hvp, [1.0, 1.0])
    np.testing.assert_array_equal(
        tg.hessian(np.prod)(np.array([0.0, 2.0, 3.0])), [[0, 3, 2], [3, 0, 0], [2, 0, 0]]
    )
    # two zeros: each exclusive product holds at most one of them, so prod stays exact
    np.testing.assert_array_equal(
        tg.hessian(np.prod)(np.array([0.0, 0.0, 2.0])), [[0, 2, 0], [2, 0, 0], [0, 0, 0]]
    )


def test_second_derivative_of_cumprod_with_two_zeros():
    # once a known issue: a rule that left out a product's only zero missed the cross term
    # of two zeros; the doubling scan's rules are products and sums, exact at any zeros
    def f(x):
        return np.sum(np.cumprod(x) * np.arange(1.0, 5.0))

    x = np.array([2.0, 0.0, 3.0, 0.0])
    # the exact Hessian (PyTorch agrees): d2/dx1 dx3 = 4 * 2 * 3 = 24
    expected = [[0, 11, 0, 0], [11, 0, 6, 24], [0, 6, 0, 0], [0, 24, 0, 0]]
    np.testing.assert_array_equal(tg.hessian(f)(x), expected)
    np.testing.assert_array_equal(tg.jacrev(tg.grad(f))(x), expected)


def test_cumprod_derivatives_at_subnormal_values_are_finite():
    # dividing by x overflowed here (float32 1e-45): the scan multiplies only
    x = np.array([1e-45, 2.0, 3.0], np.float32)
    _, t = tg.jvp(np.cumprod, (x,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(t, [1.0, 2.0, 6.0], rtol=1e-6)
    g = tg.grad(lambda x: np.sum(np.cumprod(x)))(x)
    np.testing.assert_allclose(g, [1.0 + 2.0 + 6.0, 0.0, 0.0], atol=1e-40)
