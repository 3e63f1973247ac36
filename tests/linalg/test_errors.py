"""Bad input to np.linalg's LAPACK-backed functions on traced values: each a test.

The oracle is NumPy's own error type (np.linalg.LinAlgError, ValueError, TypeError). Traced
(`make_graph`, `jit`), the message names the function and the shape, as docs/linalg.md
promises; outside a trace the call is NumPy's own, so the error is NumPy's. A matrix that is
not positive definite is found only when the value is computed: LinAlgError then, eager and
under jit, never a NaN. Refusals under differentiation are NotImplementedError.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy._core.overrides import array_function_dispatch

import tracegrad as tg
import tracegrad.numpy.linalg as tla

LinAlgError = np.linalg.LinAlgError
SQUARE_ONLY = ("inv", "det", "slogdet", "eigh", "eigvalsh", "cholesky", "eig", "eigvals")


def traced(f):
    """`f` traced into a graph (the checks of shapes and parameters run here)."""
    return lambda *args: tg.make_graph(f)(*args)


@pytest.mark.parametrize("name", SQUARE_ONLY)
def test_non_square_matrix(name):
    a = np.ones((2, 2, 3))
    fn = getattr(np.linalg, name)
    for run in (traced(fn), tg.jit(fn)):
        with pytest.raises(LinAlgError, match=rf"^{name}: .*square.*\(2, 2, 3\)"):
            run(a)
    with pytest.raises(LinAlgError, match="square"):  # NumPy's own message outside a trace
        getattr(tla, name)(a)


def test_one_dimensional_array_to_inv():
    for run in (traced(np.linalg.inv), tg.jit(np.linalg.inv), tla.inv):
        with pytest.raises(LinAlgError, match="1-dimensional array given"):
            run(np.ones(3))
    with pytest.raises(LinAlgError, match=r"^inv: 1-dimensional"):
        traced(np.linalg.inv)(np.ones(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_cholesky_of_a_matrix_not_positive_definite(dtype):
    a = np.array([[1.0, 2.0], [2.0, 1.0]], dtype)  # eigenvalues 3 and -1
    stack = np.stack([np.eye(2, dtype=dtype), a])  # one good matrix is not enough
    runs = {
        "eager": tla.cholesky,
        "np.linalg on tracers under jit": tg.jit(np.linalg.cholesky),
        "jit, upper": tg.jit(lambda a: np.linalg.cholesky(a, upper=True)),
        "grad": tg.grad(lambda a: np.sum(np.real(np.linalg.cholesky(a)))),
        "jit of grad": tg.jit(tg.grad(lambda a: np.sum(np.real(np.linalg.cholesky(a))))),
        "vmap": tg.vmap(np.linalg.cholesky),
    }
    for how, run in runs.items():
        for x in (a, stack) if how != "vmap" else (stack,):
            with pytest.raises(LinAlgError, match="not positive definite"):
                out = run(x)
                pytest.fail(f"{how}: no error, returned {out}")  # NaN would land here


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((3, 3), (4,)), ((3, 3), (4, 2)), ((3, 3), (2, 4, 2)), ((2, 3, 3), (3, 3, 1))],
)
def test_solve_with_mismatched_shapes(a_shape, b_shape):
    a, b = np.ones(a_shape) + np.eye(a_shape[-1]), np.ones(b_shape)
    with pytest.raises(ValueError):
        np.linalg.solve(a, b)  # NumPy refuses too
    for run in (traced(np.linalg.solve), tg.jit(np.linalg.solve)):
        with pytest.raises(ValueError, match=r"^solve: "):
            run(a, b)
    with pytest.raises(ValueError):
        tla.solve(a, b)


@pytest.mark.parametrize("name", ["eigh", "eigvalsh"])
def test_bad_uplo(name):
    fn = getattr(np.linalg, name)
    for run in (traced(lambda a: fn(a, UPLO="X")), tg.jit(lambda a: fn(a, UPLO="X"))):
        with pytest.raises(ValueError, match=rf"^{name}: UPLO argument must be 'L' or 'U'"):
            run(np.eye(2))
    with pytest.raises(ValueError, match="UPLO"):
        getattr(tla, name)(np.eye(2), "X")


@pytest.mark.parametrize("name", ["eigh", "eigvalsh"])
def test_lowercase_uplo_is_accepted_as_numpy_does(name):
    a = np.array([[2.0, 1.0], [5.0, 3.0]])  # not symmetric: 'l' must read the lower triangle
    want = getattr(np.linalg, name)(a, "l")
    got = tg.make_graph(lambda a: getattr(np.linalg, name)(a, "l"))(a)(a)
    np.testing.assert_array_equal(
        np.asarray(got[0] if name == "eigh" else got), want[0] if name == "eigh" else want
    )


def test_bad_qr_mode():
    for run in (
        traced(lambda a: np.linalg.qr(a, mode="bad")),
        tg.jit(lambda a: np.linalg.qr(a, mode="bad")),
    ):
        with pytest.raises(ValueError, match=r"^qr: Unrecognized mode 'bad'"):
            run(np.eye(2))
    with pytest.raises(ValueError, match="Unrecognized mode"):
        tla.qr(np.eye(2), mode="bad")


@pytest.mark.parametrize("name", ["inv", "det", "cholesky", "eigh", "svd", "qr", "pinv"])
def test_float16_input(name):
    a = np.eye(2, dtype=np.float16)
    fn = getattr(np.linalg, name)
    with pytest.raises(TypeError):
        fn(a)  # NumPy refuses float16 too
    for run in (traced(fn), tg.jit(fn)):
        with pytest.raises(TypeError, match=rf"^{name}: array type float16 is unsupported"):
            run(a)


def test_lstsq_with_a_three_dimensional_a():
    a, b = np.ones((2, 3, 3)), np.ones(3)
    for run in (traced(np.linalg.lstsq), tg.jit(np.linalg.lstsq), tla.lstsq):
        with pytest.raises(LinAlgError, match=r"^lstsq: 3-dimensional array given as a"):
            run(a, b)
    with pytest.raises(LinAlgError, match=r"^lstsq: 3-dimensional array given as b"):
        traced(np.linalg.lstsq)(np.eye(3), np.ones((2, 3, 3)))


def test_pinv_with_both_rcond_and_rtol():
    with pytest.raises(ValueError, match="can't be both set"):
        np.linalg.pinv(np.eye(2), 0.1, rtol=0.1)  # NumPy's rule
    for run in (
        traced(lambda a: np.linalg.pinv(a, 0.1, rtol=0.1)),
        tg.jit(lambda a: np.linalg.pinv(a, rcond=0.1, rtol=0.1)),
        lambda a: tla.pinv(a, 0.1, rtol=0.1),
    ):
        with pytest.raises(ValueError, match=r"^pinv: `rtol` and `rcond` can't be both set"):
            run(np.eye(2))


def _qr_loss(mode):
    return lambda a: np.sum(np.real(np.linalg.qr(a, mode=mode)[0]))


@pytest.mark.parametrize(
    "mode, shape, match",
    [("raw", (3, 3), "mode='raw'"), ("raw", (2, 3), "mode='raw'"), ("complete", (3, 2), "tall")],
)
def test_qr_modes_without_a_derivative_are_refused(mode, shape, match):
    a = np.eye(*shape) + 0.25
    want = rf"^qr: .*{match}.*differentiate mode='reduced'"
    for run in (
        tg.grad(_qr_loss(mode)),
        tg.jit(tg.grad(_qr_loss(mode))),
        lambda a: tg.jvp(lambda a: np.linalg.qr(a, mode=mode), (a,), (a,)),
    ):
        with pytest.raises(NotImplementedError, match=want):
            run(a)
    # their values are NumPy's, traced: only the derivative is refused
    out = tg.jit(lambda a: tuple(np.linalg.qr(a, mode=mode)))(a)
    for got, expected in zip(out, np.linalg.qr(a, mode=mode)):
        np.testing.assert_array_equal(got, expected)


@array_function_dispatch(lambda a: (a,), module="numpy.linalg")
def frobnicate(a):
    """A function of np.linalg with no tracegrad rule (every real one has one)."""
    return a


def test_an_unsupported_linalg_name_is_named():
    for run in (traced(frobnicate), tg.grad(lambda a: np.sum(frobnicate(a)))):
        with pytest.raises(
            NotImplementedError, match=r"np\.linalg\.frobnicate has no tracegrad rule"
        ):
            run(np.eye(2))
