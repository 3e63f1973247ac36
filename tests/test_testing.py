"""tracegrad.testing itself: finite differences, check_grads, the program strategy, and the
bitwise comparison. A checker that cannot fail checks nothing, so each is shown failing too."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tests.test_random_programs import _discard_known_issues
from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval
from tracegrad.testing import (
    OPS,
    assert_bitwise_equal,
    available_ops,
    check_grads,
    numerical_jvp,
    programs,
    run_numpy,
    run_traced,
)

REV = ("rev",)
MODES = ("fwd", "rev")

# -- functions whose tracegrad derivative is deliberately wrong -----------------------------


def _same_aval(x: Aval) -> Aval:
    return Aval(x.shape, x.dtype)


# square with the derivative x instead of 2x, in both modes
wrong_square_p = Primitive(
    "wrong_square",
    impl=np.square,
    shape=_same_aval,
    jvp=lambda primals, tangents, *, out: None if tangents[0] is None else tangents[0] * primals[0],
    vjp=lambda bar, x, *, out: (bar * x,),
)

# 3x^2 with the derivative 3x instead of 6x: a cube built on it has a right first derivative
# and a wrong second one
wrong_three_x2_p = Primitive(
    "wrong_three_x2",
    impl=lambda x: 3.0 * x * x,
    shape=_same_aval,
    jvp=lambda primals, tangents, *, out: (
        None if tangents[0] is None else tangents[0] * primals[0] * 3.0
    ),
    vjp=lambda bar, x, *, out: (bar * x * 3.0,),
)
cube_p = Primitive(
    "cube",
    impl=lambda x: x * x * x,
    shape=_same_aval,
    jvp=lambda primals, tangents, *, out: (
        None if tangents[0] is None else tangents[0] * bind(wrong_three_x2_p, primals[0])
    ),
    vjp=lambda bar, x, *, out: (bar * bind(wrong_three_x2_p, x),),
)


def _x(n=5, dtype=np.float64, lo=-1.5, hi=1.3):
    return np.linspace(lo, hi, n).astype(dtype)


# -- numerical_jvp ---------------------------------------------------------------------------


def test_numerical_jvp_of_sin_is_cos_times_tangent():
    x = _x(7)
    t = np.linspace(1.0, -0.5, 7)
    got = numerical_jvp(np.sin, (x,), (t,))
    np.testing.assert_allclose(got, np.cos(x) * t, rtol=1e-10, atol=1e-12)


def test_numerical_jvp_of_a_product_sums_both_directions():
    x, y = _x(4), _x(4, lo=0.3, hi=2.0)
    tx, ty = np.array([1.0, 0.0, -1.0, 0.5]), np.array([0.25, 1.0, 0.0, -2.0])
    got = numerical_jvp(lambda a, b: a * b, (x, y), (tx, ty))
    np.testing.assert_allclose(got, tx * y + x * ty, rtol=1e-10, atol=1e-12)


def test_numerical_jvp_stencil_is_exact_for_quartics():
    # the 4th-order central stencil differentiates polynomials of degree <= 4 exactly,
    # whatever the step
    x, t = _x(5), np.ones(5)
    got = numerical_jvp(lambda a: a**4 - 2.0 * a**3, (x,), (t,), eps=0.5)
    np.testing.assert_allclose(got, 4 * x**3 - 6 * x**2, rtol=1e-12, atol=1e-12)
    # a second-order stencil would be off by eps^2 * f'''/6 here: the step really is used
    coarse = numerical_jvp(lambda a: np.sin(a), (x,), (t,), eps=0.5)
    assert np.max(np.abs(coarse - np.cos(x))) > 1e-5


def test_numerical_jvp_on_pytrees_float32_and_integers():
    x = _x(3, np.float32)
    y = np.float32(0.5) + _x(3, np.float32) ** 2
    n = np.array([1, 2, 3])  # an integer leaf: its tangent is ignored

    def f(d, k):
        return {"p": d["a"] * d["b"] * k, "q": (np.sin(d["a"]), k)}

    tx, ty = np.ones(3, np.float32), np.full(3, -0.5, np.float32)
    got = numerical_jvp(f, ({"a": x, "b": y}, n), ({"a": tx, "b": ty}, np.ones(3)))
    assert got["p"].dtype == np.float64
    expected_p = (tx * y + x * ty).astype(np.float64) * n
    np.testing.assert_allclose(got["p"], expected_p, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["q"][0], np.cos(x.astype(np.float64)), rtol=1e-4)
    np.testing.assert_array_equal(got["q"][1], np.zeros(3))


def test_numerical_jvp_needs_one_tangent_per_leaf():
    with pytest.raises(ValueError, match="numerical_jvp: args have 2 leaves but tangents have 1"):
        numerical_jvp(lambda a, b: a * b, (_x(), _x()), (_x(),))


# -- check_grads: passes on right derivatives ------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_check_grads_passes_on_correct_functions(dtype):
    x = _x(6, dtype).reshape(2, 3)
    w = _x(12, dtype, 0.2, 1.1).reshape(3, 4)
    y = _x(3, dtype, 0.5, 1.5)

    def f(x, w, y):
        h = np.tanh(x @ w)
        return np.sum(h * h) + np.sum(np.exp(np.sin(x)) * y)

    check_grads(f, (x, w, y), order=2, modes=MODES)


def test_check_grads_handles_pytrees_scalars_integers_and_non_float_outputs():
    x, y = _x(3), _x(3, lo=0.5, hi=2.0)
    counts = np.array([1, 2, 3])

    def f(d, scale, k):
        out = d["a"] * d["b"] * scale * k
        return {"out": out, "positive": out > 0, "sin": (np.sin(d["a"]),)}

    check_grads(f, ({"a": x, "b": y}, 1.5, counts), order=2, modes=REV)


def test_check_grads_float32_defaults_are_looser_than_float64():
    x = _x(8, np.float32)

    def f(x):
        return np.sum(np.exp(np.sin(x)) * x)

    check_grads(f, (x,), order=1, modes=REV)  # float32 defaults pass
    with pytest.raises(AssertionError, match=r"atol=1e-09, rtol=1e-09"):
        check_grads(f, (x,), order=1, modes=REV, atol=1e-9, rtol=1e-9)
    # a float32 argument makes the defaults float32's, whose step and tolerance are printed
    wrong = lambda x: np.sum(bind(wrong_square_p, x))  # noqa: E731
    with pytest.raises(AssertionError, match=r"eps=0.015625, atol=0.002, rtol=0.002"):
        check_grads(wrong, (x,), order=1, modes=REV)


# -- check_grads: catches wrong derivatives --------------------------------------------------


def test_check_grads_catches_a_wrong_vjp_and_names_argument_order_mode_and_element():
    def f(x, y):
        return np.sin(x) + bind(wrong_square_p, y)

    with pytest.raises(AssertionError) as info:
        check_grads(f, (_x(4), _x(4, lo=0.5, hi=1.5)), order=1, modes=REV)
    msg = str(info.value)
    assert "order 1, mode 'rev'" in msg
    assert "argument 1 (float64[4])" in msg
    assert "worst element of the cotangent at index (" in msg
    assert "expected" in msg and "got" in msg
    assert "argument 0" not in msg


def test_check_grads_names_the_leaf_of_a_pytree_argument():
    def f(x, d):
        return x * d["a"] + bind(wrong_square_p, d["b"])

    with pytest.raises(AssertionError, match=r"argument 1 \(leaf 1 of its pytree\)"):
        check_grads(f, (_x(3), {"a": _x(3), "b": _x(3)}), order=1, modes=REV)


def test_check_grads_catches_a_wrong_second_derivative_at_order_2_only():
    def f(x):
        return np.sum(bind(cube_p, x))

    x = _x(4, lo=0.5, hi=1.5)
    check_grads(f, (x,), order=1, modes=REV)  # the first derivative is right
    with pytest.raises(AssertionError) as info:
        check_grads(f, (x,), order=2, modes=REV)
    assert "order 2, mode 'rev' (applied to the 'rev'-mode derivative)" in str(info.value)
    assert "argument 0" in str(info.value)


def test_check_grads_catches_stop_gradient_hiding_half_the_derivative():
    # x * stop_gradient(x) has tracegrad derivative x; its true derivative is 2x
    with pytest.raises(AssertionError, match="argument 0"):
        check_grads(lambda x: x * tg.stop_gradient(x), (_x(4),), order=1, modes=REV)


def test_check_grads_fwd_catches_a_wrong_jvp():
    with pytest.raises(AssertionError) as info:
        check_grads(lambda x: bind(wrong_square_p, x), (_x(4),), order=1, modes=("fwd",))
    assert "order 1, mode 'fwd'" in str(info.value)
    assert "worst element of the output tangent at index (" in str(info.value)


def test_check_grads_rejects_bad_modes_and_orders():
    with pytest.raises(ValueError, match="modes must be a subset"):
        check_grads(np.sin, (_x(),), modes=("backward",))
    with pytest.raises(ValueError, match="order must be a positive int"):
        check_grads(np.sin, (_x(),), order=0, modes=REV)


# -- the program strategy --------------------------------------------------------------------


@given(data=st.data())
def test_program_source_execs_to_the_same_function(data):
    program = data.draw(programs(allow_size_zero=data.draw(st.booleans())), label="program")
    args = program.draw_inputs(data)
    namespace = {"np": np}
    exec(program.source, namespace)
    assert_bitwise_equal(namespace["program"](*args), program.fn(*args))
    assert program.source in repr(program)


@pytest.mark.parametrize("name", [op.name for op in OPS])
@settings(max_examples=5)
@given(data=st.data())
def test_each_row_writes_what_it_runs_and_traces_bitwise(name, data):
    assert name in available_ops(), f"tracegrad.numpy does not export what row {name!r} needs"
    program = data.draw(programs(ops=[name], max_ops=4), label="program")
    assert set(program.ops) <= {name}
    args = program.draw_inputs(data)
    namespace = {"np": np}
    exec(program.source, namespace)
    expected = run_numpy(program, args)
    assert_bitwise_equal(namespace["program"](*args), expected)
    _discard_known_issues(program)
    assert_bitwise_equal(run_traced(program, args), expected)


def test_run_traced_traces_abstractly():
    # run_traced goes through make_graph: Python control flow on a value cannot be traced
    def f(x):
        return x if np.sum(x) > 0 else -x

    x = np.arange(3.0)
    assert_bitwise_equal(run_numpy(f, (x,)), x)
    with pytest.raises(tg.ConcretizationError):
        run_traced(f, (x,))


@given(data=st.data())
def test_program_options_are_respected(data):
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    program = data.draw(programs(dtype=dtype, scalar_output=True, smooth=True, max_inputs=2))
    assert 1 <= len(program.inputs) <= 2
    assert all(s.dtype == dtype and 0 not in s.shape for s in program.inputs)
    smooth = set(available_ops(smooth=True))
    assert set(program.ops) <= smooth
    args = program.draw_inputs(data)
    assert all(a.dtype == dtype and np.all(np.abs(a) <= 2.0) for a in args)
    out = program.fn(*args)
    assert np.shape(out) == () and np.isfinite(out)
    assert program.source.rstrip().splitlines()[-1].startswith("    return np.sum(")


def test_programs_rejects_unknown_ops_and_dtypes():
    with pytest.raises(ValueError, match=r"unknown ops \['sine'\]"):
        programs(ops=["sin", "sine"])
    with pytest.raises(ValueError, match="float32 or float64"):
        programs(dtype=np.int32)


def test_available_ops_follow_tracegrad_numpy():
    import tracegrad.numpy as tnp

    names = available_ops()
    assert {"sin", "add", "multiply", "sum"} <= set(names)
    for op in OPS:
        assert (op.name in names) == all(hasattr(tnp, n) for n in op.needs)
    assert not {"abs", "relu", "maximum"} & set(available_ops(smooth=True))


@settings(max_examples=5)
@given(data=st.data())
def test_example_inputs_need_no_hypothesis_and_stay_in_the_domain(data):
    program = data.draw(programs(ops=["sin"]), label="program")
    args = program.example_inputs(seed=3)
    assert [a.shape for a in args] == [s.shape for s in program.inputs]
    assert all(np.all((a >= -2.0) & (a <= 2.0)) for a in args)


def test_import_does_not_need_hypothesis():
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "import numpy as np, tracegrad.testing as t\n"
        "t.assert_bitwise_equal(np.ones(2), np.ones(2))\n"
        "print(t.numerical_jvp(np.sin, (np.zeros(2),), (np.ones(2),)))\n"
        "try:\n    t.programs()\nexcept ImportError:\n    print('needs hypothesis')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "[1. 1.]" in out.stdout and "needs hypothesis" in out.stdout


# -- assert_bitwise_equal --------------------------------------------------------------------


def test_assert_bitwise_equal_accepts_equal_pytrees_and_nan():
    a = {"x": np.array([1.0, np.nan]), "y": (np.float32(2.0), 3)}
    assert_bitwise_equal(a, {"x": np.array([1.0, np.nan]), "y": (np.array(2.0, np.float32), 3)})


@pytest.mark.parametrize(
    ("actual", "expected", "match"),
    [
        (np.array([0.0, -0.0]), np.array([0.0, 0.0]), r"first at index \(1,\): got -0.0"),
        (np.ones(2, np.float32), np.ones(2), "dtypes differ: got float32, expected float64"),
        (np.ones((2, 1)), np.ones(2), r"shapes differ: got \(2, 1\), expected \(2,\)"),
        ((np.ones(2),), [np.ones(2)], "structures differ"),
        ((np.ones(2), np.zeros(2)), (np.ones(2), np.ones(2)), "leaf 1: values differ at 2 of 2"),
        (np.float64(0.1 + 0.2), np.float64(0.3), r"0x1.3333333333334p-2"),
    ],
)
def test_assert_bitwise_equal_reports_what_differs(actual, expected, match):
    with pytest.raises(AssertionError, match=match):
        assert_bitwise_equal(actual, expected)
