"""Bad input to the control-flow constructs: each a clear error (JAX's message where JAX has
one) or documented behaviour, checked here by reading the message."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

X = np.array([0.5, -0.25, 1.0])


# -- cond and switch --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "false_fun, fragment",
    [
        (lambda x: (x, x), r"cond branch outputs must have the same pytree structure"),
        (lambda x: x.astype(np.int64), r"The output of true_fun has type f64\[3\] but the "
         r"corresponding output of false_fun has type i64\[3\], so the dtypes do not match"),
        (lambda x: x[:2], r"has type f64\[2\], so the shapes do not match"),
    ],
    ids=["structure", "dtype", "shape"],
)  # fmt: skip
def test_branches_that_disagree_name_the_mismatch(false_fun, fragment):
    with pytest.raises(TypeError, match=fragment) as err:
        tg.cond(True, lambda x: x, false_fun, X)
    assert "true_fun is <lambda> at" in str(err.value)  # which functions, where


@pytest.mark.parametrize(
    "pred, fragment",
    [
        (None, r"^cond predicate is None$"),
        (np.array([True, False]), r"Pred must be a scalar, got \[ True False\] of shape \(2,\)"),
        ([True], r"Pred must be a scalar, got \[True\] of type <class 'list'>"),
        ("yes", r"Pred must be a scalar, got yes of type <class 'str'>"),
        (np.complex128(1j), r"Pred type must be either boolean or number, got complex128"),
    ],
    ids=["None", "array", "list", "str", "complex"],
)
def test_a_predicate_must_be_a_boolean_or_numeric_scalar(pred, fragment):
    with pytest.raises(TypeError, match=fragment):
        tg.cond(pred, lambda x: x, lambda x: -x, X)


def test_a_numeric_predicate_means_not_zero_as_in_jax():
    for pred, want in [(2.5, X), (0.0, -X), (np.int32(-3), X), (0, -X)]:
        np.testing.assert_array_equal(tg.cond(pred, lambda x: x, lambda x: -x, X), want)
    got = tg.jit(lambda p, x: tg.cond(p, lambda x: x, lambda x: -x, x))(np.float32(0.0), X)
    np.testing.assert_array_equal(got, -X)


def test_an_abstract_predicate_under_jit_cannot_pick_a_python_branch_but_cond_can():
    advice = r"static_argnums.*tracegrad\.numpy\.where.*tg\.cond/tg\.switch .*tg\.scan"
    with pytest.raises(tg.ConcretizationError, match=advice):
        tg.jit(lambda x: x if np.sum(x) > 0 else -x)(X)
    got = tg.jit(lambda x: tg.cond(np.sum(x) > 0, lambda x: x, lambda x: -x, x))(X)
    np.testing.assert_array_equal(got, X)


def test_cond_and_switch_argument_errors():
    with pytest.raises(
        TypeError, match="cond: true_fun and false_fun arguments should be callable"
    ):
        tg.cond(True, 1.0, lambda x: x, X)
    with pytest.raises(TypeError, match="if 'operand' keyword is passed then no positional"):
        tg.cond(True, lambda x: x, lambda x: x, X, operand=X)
    np.testing.assert_array_equal(tg.cond(False, lambda x: x, lambda x: 2 * x, operand=X), 2 * X)
    with pytest.raises(
        TypeError, match="switch: branches argument should be a sequence of callables"
    ):
        tg.switch(0, [np.sin, 2.0], X)
    with pytest.raises(TypeError, match=r"Index type must be an integer, got 1.0 as float64"):
        tg.switch(1.0, [np.sin, np.cos], X)
    with pytest.raises(
        TypeError, match=r"Branch index must be scalar, got \[0 1\] of shape \(2,\)"
    ):
        tg.switch(np.array([0, 1]), [np.sin, np.cos], X)
    with pytest.raises(ValueError, match=r"^Empty branch sequence$"):
        tg.switch(0, [], X)


def test_an_out_of_range_switch_index_is_clamped_as_documented():
    branches = [lambda x: x + 1.0, lambda x: x + 2.0, lambda x: x + 3.0]
    for index, want in [(-5, 1.0), (-1, 1.0), (0, 1.0), (2, 3.0), (3, 3.0), (99, 3.0)]:
        np.testing.assert_array_equal(tg.switch(index, branches, X), X + want)
        got = tg.jit(lambda i, x: tg.switch(i, branches, x))(np.int64(index), X)
        np.testing.assert_array_equal(got, X + want)
    assert (
        tg.switch(7, [lambda: "only one branch runs directly"]) == "only one branch runs directly"
    )


# -- loops ------------------------------------------------------------------------------------


def test_a_carry_whose_type_changes_in_the_body_is_an_error():
    with pytest.raises(
        TypeError,
        match=r"(?s)scan body function carry input and carry output must "
        r"have equal types.*carry\[0\] has type f64\[3\] but the corresponding "
        r"output carry component has type f64\[2\], so the shapes do not match",
    ):
        tg.scan(lambda c, x: ((c[0][:2], c[1]), x), (X, 0.0), X)  # fmt: skip
    with pytest.raises(
        TypeError,
        match=r"(?s)while_loop body function carry .*has type f32\[3\] but "
        r"the corresponding output carry component has type f64\[3\], so the "
        r"dtypes do not match",
    ):
        tg.while_loop(lambda c: np.sum(c) < 3, lambda c: c.astype(np.float64) + 1,
                      X.astype(np.float32))  # fmt: skip
    with pytest.raises(TypeError, match="must have the same pytree structure"):
        tg.scan(lambda c, x: ((c, c), x), X, X)
    with pytest.raises(
        TypeError,
        match="while_loop body function carry input and carry output "
        "must have the same pytree structure",
    ):
        tg.while_loop(lambda c: c[0] < 3, lambda c: c[0], (0.0, 1.0))  # fmt: skip


def test_a_python_scalar_carry_takes_the_type_the_body_gives_it_as_in_jax():
    assert tg.while_loop(lambda c: c < 3, lambda c: c + 1, 0.5) == 3.5
    out = tg.fori_loop(0, 3, lambda i, x: x + 1.0, 0)  # an int carry that the body makes float
    assert out == 3.0 and np.asarray(out).dtype == np.float64
    f32 = tg.fori_loop(0, 2, lambda i, x: x * np.float32(2.0), 1.0)  # weak f64 meets f32
    assert np.asarray(f32).dtype == np.float32 and f32 == 4.0


def test_cond_fun_must_return_a_boolean_scalar():
    with pytest.raises(
        TypeError,
        match=r"cond_fun must return a boolean scalar, but got output "
        r"type\(s\) \[bool\[3\]\]",
    ):
        tg.while_loop(lambda c: c > 0, lambda c: c - 1, X)  # fmt: skip
    with pytest.raises(TypeError, match=r"but got output type\(s\) \[f64~\[\]\]"):
        tg.while_loop(lambda c: 1.0, lambda c: c, 0.0)


@pytest.mark.parametrize(
    "call, error, fragment",
    [
        (lambda: tg.scan(lambda c, x: c, 0.0, X), TypeError, r"scan body output must be a pair, "
         r"got f64~\[\]\."),
        (lambda: tg.scan(lambda c, x: (c, x), 0.0, [X, X[:2]]), ValueError,
         r"scan got values with different leading axis sizes: 3, 2\."),
        (lambda: tg.scan(lambda c, x: (c, x), 0.0, X, length=4), ValueError,
         r"scan got `length` argument of 4 which disagrees with leading axis sizes \[3\]\."),
        (lambda: tg.scan(lambda c, x: (c, x), 0.0, None), ValueError,
         r"scan got no values to scan over and `length` not provided\."),
        (lambda: tg.scan(lambda c, x: (c, x), 0.0, 1.0), ValueError,
         r"scan got a value with no leading axis to scan over: xs leaf 0 has shape \(\)"),
        (lambda: tg.scan(lambda c, x: (c, x), 0.0, None, length=-1), ValueError,
         r"scan: length must be a non-negative int, got -1"),
        (lambda: tg.scan(lambda c, x: (c, x), 0.0, X, unroll=-1), ValueError,
         r"`unroll` must be a `bool` or a non-negative `int`\."),
        (lambda: tg.scan(lambda c, x: (c, x), 0.0, X, reverse="yes"), TypeError,
         r"scan: reverse must be a bool, got 'yes'"),
        (lambda: tg.scan(lambda c, x: (c, "y"), 0.0, X), TypeError,
         r"returned a value of type str at output component 1, which is not a valid tracegrad "
         r"type"),
        (lambda: tg.scan(1, 0.0, X), TypeError, r"scan: f argument should be a callable\."),
        (lambda: tg.scan(lambda c, x: (c, x), "c", X), TypeError,
         r"scan: values must be arrays, Python scalars or pytrees of them, got a str"),
        (lambda: tg.while_loop(1, lambda c: c, 0.0), TypeError,
         r"while_loop: body_fun and cond_fun arguments should be callable\."),
        (lambda: tg.fori_loop(0, 3, 1, 0.0), TypeError,
         r"fori_loop: body_fun argument should be callable\."),
        (lambda: tg.fori_loop(np.int16(0), np.int32(3), lambda i, x: x, 0.0), TypeError,
         r"lower and upper arguments to fori_loop must have equal types, got int16 and int32"),
        (lambda: tg.fori_loop(0.0, 3, lambda i, x: x, 0.0), TypeError,
         r"fori_loop: lower must be an integer scalar, got 0\.0"),
        (lambda: tg.jit(lambda n: tg.fori_loop(0, n, lambda i, x: x, 0.0, unroll=2))(3),
         ValueError, r"Can only use `unroll` in `fori_loop` if the loop bounds are statically "
         r"known\."),
    ],
)  # fmt: skip
def test_loop_argument_errors(call, error, fragment):
    with pytest.raises(error, match=fragment):
        call()


def test_mixed_bound_types_follow_jax_a_python_int_joins_a_numpy_one():
    assert tg.fori_loop(0, np.int32(3), lambda i, x: x + i, 0) == 3
    assert tg.fori_loop(np.int32(1), 3, lambda i, x: x + i, 0) == 3
    assert tg.fori_loop(5, 2, lambda i, x: x + 1.0, 0.0) == 0.0  # an empty range: no steps


def test_unroll_is_accepted_and_changes_nothing():
    step = lambda c, x: (c + x, c * x)  # noqa: E731
    for unroll in (1, 4, True, False, np.int64(2)):
        np.testing.assert_array_equal(
            tg.scan(step, 0.0, X, unroll=unroll)[1], tg.scan(step, 0.0, X)[1]
        )


def test_reverse_mode_of_a_while_loop_under_jit_names_fori_loop_and_scan():
    def f(x):
        return np.sum(
            tg.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, np.sin(c[1])), (0, x))[1]
        )

    fragment = (
        r"Reverse-mode differentiation does not work for tg.while_loop .*tg.fori_loop .*tg.scan"
    )
    with pytest.raises(ValueError, match=fragment):
        tg.jit(tg.grad(f))(X)
    with pytest.raises(ValueError, match=fragment):
        tg.vmap(tg.grad(f))(np.stack([X, X]))
    with pytest.raises(ValueError, match=fragment):  # traced bounds make fori_loop a while_loop
        tg.jit(tg.grad(lambda x, n: np.sum(tg.fori_loop(0, n, lambda i, v: np.sin(v), x))))(X, 3)
    # what works instead: eagerly, static bounds, scan; forward mode anywhere
    np.testing.assert_allclose(
        tg.grad(f)(X), np.cos(np.sin(np.sin(X))) * np.cos(np.sin(X)) * np.cos(X)
    )
    g = tg.jit(tg.grad(lambda x: np.sum(tg.fori_loop(0, 3, lambda i, v: np.sin(v), x))))(X)
    np.testing.assert_allclose(g, tg.grad(f)(X), rtol=1e-14)
    jvp = tg.jit(lambda x, t: tg.jvp(f, (x,), (t,)))(X, np.ones(3))
    np.testing.assert_allclose(jvp[1], np.sum(tg.grad(f)(X)), rtol=1e-14)


def test_a_while_loop_cannot_be_differentiated_inside_a_scan_body_either():
    """A loop inside a body is traced abstractly (the body runs for every step), so its trip
    count is unknown even eagerly: reverse mode refuses rather than guess."""

    def f(x):
        def step(c, _):
            return tg.while_loop(lambda v: np.sum(v) < 10.0, lambda v: v * 2.0, c), None

        return np.sum(tg.scan(step, x, None, length=2)[0])

    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        tg.grad(f)(np.array([1.0, 2.0]))
    jvp = tg.jvp(f, (np.array([1.0, 2.0]),), (np.ones(2),))  # forward mode works
    assert jvp[0] == 12.0 and jvp[1] == 8.0  # [1, 2] doubles twice; then the loop is done


def test_map_argument_errors():
    with pytest.raises(TypeError, match=r"map: f argument should be a callable\."):
        tg.map(3, X)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"map: batch_size must be a positive int, got"):
            tg.map(np.sin, X, batch_size=bad)


def test_a_function_returning_something_not_an_array_is_named():
    with pytest.raises(
        TypeError,
        match=r"function <lambda> traced for a control-flow construct returned a value of type "
        r"str at output component 1, which is not a valid tracegrad type",
    ):
        tg.cond(True, lambda x: (x, "a"), lambda x: (x, "b"), X)
