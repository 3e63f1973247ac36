"""tracegrad.scipy.linalg: SciPy's bits (eager, traced, under jit, float32 too), derivatives
against jax.scipy.linalg and finite differences (second order for the solves), vmap against a
loop, the factor reused by the backward pass, the GP gradient, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import tracegrad as tg
import tracegrad.scipy.linalg as tsl
from tracegrad.testing import assert_bitwise_equal, check_grads, run_traced

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = pytest.importorskip("jax.numpy")
jsl = pytest.importorskip("jax.scipy.linalg")

N = 4
RNG = np.random.default_rng(17)
A = RNG.standard_normal((N, N)) + 3 * np.eye(N)  # well conditioned, LU pivots
SPD = A @ A.T / N + np.eye(N)
B = RNG.standard_normal((N, 2))
BV = RNG.standard_normal(N)
W = RNG.standard_normal((N, 2))  # the weights of a scalar loss


def _bits(f, *args):
    """`f` equals SciPy's call `want` bit for bit eagerly, traced and under jit."""
    want = f(sl, *args)
    ours = lambda *xs: f(tsl, *xs)  # noqa: E731
    assert_bitwise_equal(ours(*args), want)
    assert_bitwise_equal(run_traced(ours, args), want)
    assert_bitwise_equal(tg.jit(ours)(*args), want)


# -- values -------------------------------------------------------------------------------------


@pytest.mark.parametrize("trans", [0, 1, 2, "T"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_values(trans, lower, unit):
    kw = dict(trans=trans, lower=lower, unit_diagonal=unit)
    _bits(lambda m, a, b: m.solve_triangular(a, b, **kw), A, B)
    _bits(lambda m, a, b: m.solve_triangular(a, b, **kw), A, BV)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
def test_values_across_dtypes(dtype):
    a, spd, b = (x.astype(dtype) for x in (np.round(A * 4), np.round(SPD * 4), np.round(B * 4)))
    _bits(lambda m, a, b: m.solve_triangular(a, b, lower=True), a, b)
    _bits(lambda m, k: m.cholesky(k), spd)
    _bits(lambda m, k, b: m.cho_solve(m.cho_factor(k, lower=True), b), spd, b)
    _bits(lambda m, a, b: m.lu_solve(m.lu_factor(a), b, trans=1), a, b)


@pytest.mark.parametrize("lower", [False, True])
def test_factor_values(lower):
    _bits(lambda m, k: m.cholesky(k, lower=lower), SPD)
    _bits(lambda m, k: m.cho_factor(k, lower=lower)[0], SPD)  # the other triangle too
    _bits(lambda m, k, b: m.cho_solve(m.cho_factor(k, lower=lower), b), SPD, B)
    _bits(lambda m, a: m.lu_factor(a), A)
    for t in (0, 1, 2):
        _bits(lambda m, a, b, t=t: m.lu_solve(m.lu_factor(a), b, trans=t), A, BV)


def test_stacks_broadcast_as_scipy():
    a = A + RNG.standard_normal((3, 1, N, N)) * 0.1
    _bits(lambda m, a, b: m.solve_triangular(a, b), a, B)
    _bits(lambda m, a, b: m.solve_triangular(a, b), a, BV)
    _bits(lambda m, a, b: m.lu_solve(m.lu_factor(a), b), a, B)
    _bits(lambda m, k, b: m.cho_solve(m.cho_factor(k), b), a @ np.swapaxes(a, -1, -2), BV)


def test_block_diag():
    args = (A, np.ones(2, np.float32), [[7]], np.zeros((0, 2)))
    assert_bitwise_equal(tsl.block_diag(*args), sl.block_diag(*args))
    assert_bitwise_equal(tsl.block_diag(), sl.block_diag())
    f = lambda a, b: tsl.block_diag(a, b).sum() * 2 + (tsl.block_diag(a, b) ** 2).sum()  # noqa: E731
    check_grads(f, (A, B), order=1)


def test_shared_numpy_primitives():
    """inv, det, eigh, svd are NumPy's primitives: NumPy's bits, SciPy's values to rounding."""
    assert_bitwise_equal(tsl.inv(A), np.linalg.inv(A))
    np.testing.assert_allclose(tsl.inv(A), sl.inv(A), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tsl.det(A), sl.det(A), rtol=1e-13)
    for lower in (True, False):
        w, v = tsl.eigh(SPD, lower=lower)
        w0, v0 = sl.eigh(SPD, lower=lower)
        np.testing.assert_allclose(w, w0, rtol=1e-13)
        np.testing.assert_allclose(np.abs(v), np.abs(v0), atol=1e-12)
        uplo = "L" if lower else "U"
        want = np.linalg.eigvalsh(SPD, UPLO=uplo)
        assert_bitwise_equal(tsl.eigh(SPD, lower=lower, eigvals_only=True), want)
    np.testing.assert_allclose(tsl.svd(A, compute_uv=False), sl.svd(A, compute_uv=False))
    assert len(tsl.svd(A)) == 3
    g = tg.grad(lambda a: tsl.det(a) + tsl.inv(a).sum() + tsl.svd(a, compute_uv=False).sum())
    want = jax.grad(lambda a: jsl.det(a) + jsl.inv(a).sum() + jsl.svd(a, compute_uv=False).sum())(A)
    np.testing.assert_allclose(g(A), want, rtol=1e-10)


# -- derivatives ----------------------------------------------------------------------------------


@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_derivatives(trans, lower, unit):
    kw = dict(trans=trans, lower=lower, unit_diagonal=unit)
    f = lambda a, b: tsl.solve_triangular(a, b, **kw)  # noqa: E731
    check_grads(f, (A, B), order=2)
    check_grads(f, (A, BV), order=1)
    loss = lambda m, a, b: (m.solve_triangular(a, b, **kw) * W).sum()  # noqa: E731
    got = tg.grad(lambda a, b: loss(tsl, a, b), argnums=(0, 1))(A, B)
    want = jax.grad(lambda a, b: loss(jsl, a, b), argnums=(0, 1))(A, B)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_derivatives(lower):
    """Against JAX through cho_solve (K symmetric: both differentiate its symmetric part), the
    factor's triangle against finite differences, cho_solve to second order."""

    def loss(m, s, b):
        k = s + s.T
        return (m.cho_solve(m.cho_factor(k, lower=lower), b) * W).sum()

    s = SPD / 2
    got = tg.grad(lambda s, b: loss(tsl, s, b), argnums=(0, 1))(s, B)
    want = jax.grad(lambda s, b: loss(jsl, s, b), argnums=(0, 1))(s, B)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    check_grads(lambda s: tsl.cholesky(s + s.T, lower=lower), (s,), order=1)
    c = sl.cho_factor(SPD, lower=lower)[0]
    check_grads(lambda c, b: tsl.cho_solve((c, lower), b), (c, B), order=2)
    check_grads(lambda c, b: tsl.cho_solve((c, lower), b), (c, BV), order=1)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_other_triangle_is_a(lower):
    """c's other triangle is a's entries (SciPy leaves them): their derivative is a's."""
    check_grads(lambda s: tsl.cho_factor(s + s.T, lower=lower)[0], (SPD / 2,), order=2)
    v = np.triu(np.ones((N, N)), 1)
    v = v if lower else v.T  # a direction in the triangle the factor does not read
    _, c_dot = tg.jvp(lambda k: tsl.cho_factor(k, lower=lower)[0], (SPD,), (v,))
    np.testing.assert_array_equal(np.where(v != 0, c_dot, 0), v)  # the factor moves with sym(v)


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_derivatives(trans):
    def loss(m, a, b):
        return (m.lu_solve(m.lu_factor(a), b, trans=trans) * W).sum()

    got = tg.grad(lambda a, b: loss(tsl, a, b), argnums=(0, 1))(A, B)
    want = jax.grad(lambda a, b: loss(jsl, a, b), argnums=(0, 1))(A, B)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    lu, piv = sl.lu_factor(A)
    f = lambda lu, b: tsl.lu_solve((lu, piv), b, trans=trans)  # noqa: E731
    check_grads(f, (lu, B), order=2)
    check_grads(f, (lu, BV), order=1)


def test_lu_factor_derivative_against_jax():
    v = RNG.standard_normal((N, N))
    _, lu_dot = tg.jvp(lambda a: tsl.lu_factor(a)[0], (A,), (v,))
    _, want = jax.jvp(lambda a: jsl.lu_factor(a)[0], (A,), (v,))
    np.testing.assert_allclose(lu_dot, want, rtol=1e-10, atol=1e-12)
    check_grads(lambda a: tsl.lu_factor(a)[0], (A,), order=2)


def test_backward_reuses_the_factor():
    """No factorisation in the backward pass: one potrf / getrf in the whole jit program."""

    def f(k, b):
        return tsl.cho_solve(tsl.cho_factor(k), b).sum() + tsl.lu_solve(tsl.lu_factor(k), b).sum()

    graph = tg.make_graph(tg.grad(f, argnums=(0, 1)))(SPD, B)
    names = [node.prim.name for node in graph.nodes]
    assert names.count("scipy.linalg.cho_factor") == 1
    assert names.count("scipy.linalg.lu_factor") == 1
    assert "linalg.inv" not in names and "linalg.cholesky" not in names


def test_vmap_matches_loop():
    a = A + RNG.standard_normal((3, N, N)) * 0.1
    b = RNG.standard_normal((3, N, 2))
    k = a @ np.swapaxes(a, -1, -2)
    cases = [
        (lambda a, b: tsl.solve_triangular(a, b, trans=1, lower=True), (a, b), (0, 0)),
        (lambda a, b: tsl.solve_triangular(a, b), (A, b[:, :, 0]), (None, 0)),
        (lambda a, b: tsl.lu_solve(tsl.lu_factor(a), b, trans=1), (a, B), (0, None)),
        (lambda k, b: tsl.cho_solve(tsl.cho_factor(k), b), (k, b[:, :, 0]), (0, 0)),
        (lambda a: tsl.lu_factor(a)[1], (a,), (0,)),
    ]
    for f, args, axes in cases:
        got = tg.vmap(f, in_axes=axes)(*args)
        pick = lambda x, ax, i: x if ax is None else x[i]  # noqa: E731
        want = np.stack([f(*[pick(x, ax, i) for x, ax in zip(args, axes)]) for i in range(3)])
        assert_bitwise_equal(got, want)
    # a per-example gradient
    g = tg.vmap(tg.grad(lambda k: tsl.cho_solve(tsl.cho_factor(k), BV).sum()))(k)
    want = np.stack([tg.grad(lambda k: tsl.cho_solve(tsl.cho_factor(k), BV).sum())(x) for x in k])
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_gp_gradient_matches_closed_form():
    from benchmarks.gp_likelihood import D, S, data, limit

    X, y = data(40)

    def f(X):
        k = X @ X.T / D + S * np.eye(X.shape[0])
        c = tsl.cho_factor(k, lower=True)
        return 0.5 * y @ tsl.cho_solve(c, y) + tg.numpy.sum(tg.numpy.log(tg.numpy.diagonal(c[0])))

    np.testing.assert_allclose(tg.jit(tg.grad(f))(X), limit(X, y), rtol=1e-9)


# -- refusals -------------------------------------------------------------------------------------


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        tsl.solve_triangular(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match="incompatible"):
        tsl.solve_triangular(A, np.ones(N + 1))
    with pytest.raises(ValueError, match="incompatible"):
        tsl.cho_solve((SPD, False), np.ones((N + 1, 2)))
    with pytest.raises(ValueError, match="square"):
        tsl.cho_factor(np.ones((3, 2)))
    with pytest.raises(ValueError, match="square"):
        tsl.lu_factor(np.ones((3, 2)))
    with pytest.raises(ValueError, match="incompatible"):
        tsl.lu_solve(sl.lu_factor(A), np.ones(N - 1))
    with pytest.raises(ValueError, match="trans"):
        tsl.solve_triangular(A, B, trans=3)
    with pytest.raises(ValueError, match="dimension greater than 2"):
        tsl.block_diag(np.ones((2, 2, 2)))
    with pytest.raises(np.linalg.LinAlgError):
        tsl.cholesky(-SPD)
    with pytest.raises(NotImplementedError, match="generalized"):
        tsl.eigh(SPD, SPD)
    with pytest.raises(NotImplementedError, match="gesdd"):
        tsl.svd(A, lapack_driver="gesvd")


@pytest.mark.parametrize("jit", [False, True])
def test_check_finite(jit):
    bad = A.copy()
    bad[1, 1] = np.nan
    wrap = tg.jit if jit else (lambda f: f)
    for f, args in [
        (lambda a, b: tsl.solve_triangular(a, b), (bad, B)),
        (lambda a, b: tsl.solve_triangular(a, b), (A, B * np.nan)),
        (lambda a: tsl.cho_factor(a)[0], (bad,)),
        (lambda a, b: tsl.lu_solve(tsl.lu_factor(a), b), (bad, B)),
        (lambda a: tsl.cholesky(a), (bad,)),
    ]:
        with pytest.raises(ValueError, match="infs or NaNs"):
            wrap(f)(*args)
    for f in (tsl.inv, tsl.det, tsl.eigh, tsl.svd):
        with pytest.raises(ValueError, match="infs or NaNs"):
            f(bad)
    # check_finite=False: SciPy's unchecked result, NaNs through
    got = tsl.solve_triangular(A, B * np.nan, check_finite=False)
    assert np.isnan(got).all()


def test_complex_derivatives_refused():
    c = A.astype(complex)
    with pytest.raises(NotImplementedError, match="complex"):
        tg.grad(lambda a: tsl.solve_triangular(a, BV).real.sum())(c)


def test_the_code_blocks_of_the_docs_run():
    import pathlib
    import re

    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "scipy_linalg.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(page), "exec"), {})  # the blocks assert their results
