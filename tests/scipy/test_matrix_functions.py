"""tracegrad.scipy.linalg's matrix functions and Sylvester-type solvers: SciPy's bits (eager,
traced, under jit), derivatives against jax.scipy.linalg (expm, expm_frechet), closed forms
(Daleckii-Krein for sqrtm and logm of a symmetric matrix, Kronecker systems for the Sylvester
and Lyapunov solvers, a dense solve for solve_banded) and finite differences to second order,
vmap against a loop, and the refusals. JAX has no derivative of sqrtm or solve_sylvester (its
schur has none), so those are checked against closed forms and finite differences."""

from __future__ import annotations

import warnings

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
RNG = np.random.default_rng(23)
A = RNG.standard_normal((N, N)) * 0.4  # expm's argument
E = RNG.standard_normal((N, N))
P = 1.5 * np.eye(N) + RNG.standard_normal((N, N)) * 0.15  # eigenvalues near 1.5: real roots
SPD = P @ P.T  # symmetric positive definite: closed forms by its eigendecomposition
C = RNG.standard_normal((N, 3))  # a right-hand side of solve_sylvester (N x M)
BM = 2 * np.eye(3) + RNG.standard_normal((3, 3)) * 0.2  # solve_sylvester's b (M x M)
W = RNG.standard_normal((N, N))  # the weights of a scalar loss
L, U = 1, 2
AB = RNG.standard_normal((L + U + 1, N))
AB[U] += 4.0  # a dominant main diagonal
BV = RNG.standard_normal(N)


def _bits(f, *args):
    """`f(tsl, ...)` equals `f(sl, ...)` bit for bit eagerly, traced and under jit."""
    want = f(sl, *args)
    ours = lambda *xs: f(tsl, *xs)  # noqa: E731
    assert_bitwise_equal(ours(*args), want)
    assert_bitwise_equal(run_traced(ours, args), want)
    assert_bitwise_equal(tg.jit(ours)(*args), want)


def _dense(ab, n, nlower, nupper):
    """The matrix whose band storage is `ab`: `A[i, j] = ab[nupper + i - j, j]`."""
    m = np.zeros((n, n), ab.dtype)
    for i in range(n):
        for j in range(max(0, i - nlower), min(n, i + nupper + 1)):
            m[i, j] = ab[nupper + i - j, j]
    return m


# -- values -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
def test_values(dtype):
    a, e, p, q, b = (x.astype(dtype) for x in (A, E, P, C, BM))
    _bits(lambda m, a: m.expm(a), a)
    _bits(lambda m, a, e: m.expm_frechet(a, e), a, e)
    _bits(lambda m, a, e: m.expm_frechet(a, e, compute_expm=False), a, e)
    _bits(lambda m, p: m.sqrtm(p), p)
    if dtype != np.float32:  # SciPy's float32 logm: see test_float32_logm
        _bits(lambda m, p: m.logm(p), p)
    _bits(lambda m, p, b, q: m.solve_sylvester(p, b, q), p, b, q)
    _bits(lambda m, p, e: m.solve_continuous_lyapunov(p, e), p, e)
    ab = AB.astype(dtype)
    _bits(lambda m, ab, v: m.solve_banded((L, U), ab, v), ab, BV.astype(dtype))
    _bits(lambda m, ab, v: m.solve_banded((L, U), ab, v), ab, C.astype(dtype))


def test_stacks_as_scipy():
    a = A + RNG.standard_normal((2, 1, N, N)) * 0.1
    _bits(lambda m, a: m.expm(a), a)
    _bits(lambda m, a: m.sqrtm(a), a + 1.5 * np.eye(N))
    _bits(lambda m, a, e: m.expm_frechet(a, e)[1], a, E)  # E broadcast to a's stack
    _bits(lambda m, a, q: m.solve_sylvester(a + 2 * np.eye(N), BM, q), a, C)
    _bits(lambda m, a: m.solve_continuous_lyapunov(a - 2 * np.eye(N), E), a)


def test_lyapunov_is_its_own_call():
    """solve_continuous_lyapunov is SciPy's own function (values agree with solve_sylvester to
    rounding only)."""
    x = tsl.solve_continuous_lyapunov(P, E)
    np.testing.assert_allclose(x, sl.solve_sylvester(P, P.T, E), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(P @ x + x @ P.T, E, atol=1e-12)


# -- derivatives: expm and expm_frechet against JAX ------------------------------------------------


def _block(a, e):
    return np.block([[a, e], [np.zeros_like(a), a]])


def test_expm_derivatives_against_jax():
    def loss(m, a):
        return (m.expm(a) * W).sum()

    # JAX's gradient and Hessian-vector product (one JAX call: its expm compiles slowly)
    want_g, want_hvp = jax.jvp(jax.grad(lambda a: loss(jsl, a)), (A,), (E,))
    g, hvp = tg.jvp(tg.grad(lambda a: loss(tsl, a)), (A,), (E,))
    np.testing.assert_allclose(g, want_g, rtol=1e-10)
    np.testing.assert_allclose(hvp, want_hvp, rtol=1e-9, atol=1e-11)
    # the jvp is the Fréchet derivative: SciPy's, and the corner of expm of the block matrix
    _, got = tg.jvp(tsl.expm, (A,), (E,))
    np.testing.assert_allclose(got, sl.expm_frechet(A, E)[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, sl.expm(_block(A, E))[:N, N:], rtol=1e-12, atol=1e-14)
    check_grads(tsl.expm, (A,), order=2)


def test_expm_frechet_derivatives_against_jax():
    """Against JAX's expm of the block matrix [[A, E], [0, A]] (whose blocks are expm(A) and
    L(A, E)), to second order by finite differences."""

    def loss(x, l_ae):
        return (x * W).sum() + (l_ae * W.T).sum() ** 2

    def jax_loss(a, e):
        m = jsl.expm(jnp.block([[a, e], [jnp.zeros_like(a), a]]))
        return loss(m[:N, :N], m[:N, N:])

    got = tg.grad(lambda a, e: loss(*tsl.expm_frechet(a, e)), argnums=(0, 1))(A, E)
    want = jax.grad(jax_loss, argnums=(0, 1))(A, E)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
    check_grads(lambda a, e: tsl.expm_frechet(a, e), (A, E), order=2)
    check_grads(lambda e: tsl.expm_frechet(A, e, compute_expm=False), (E,), order=1)


def test_expm_backward_is_one_frechet_call():
    """The gradient of expm reads the forward input and calls expm_frechet once (no block
    matrix of size 2n at first order)."""
    graph = tg.make_graph(tg.grad(lambda a: (tsl.expm(a) * W).sum()))(A)
    names = [node.prim.name for node in graph.nodes]
    assert names.count("scipy.linalg.expm_frechet") == 1
    assert all(
        node.out_avals[0].shape[-1] == N for node in graph.nodes if "frechet" in node.prim.name
    )


# -- sqrtm and logm: closed forms -----------------------------------------------------------------


def _daleckii_krein(f, df, a, e):
    """The Fréchet derivative of a matrix function of a symmetric `a` in direction `e`:
    `Q (Q^T e Q * F) Q^T` with F the divided differences of `f` at the eigenvalues."""
    w, q = np.linalg.eigh(a)
    diff = w[:, None] - w[None, :]
    same = np.abs(diff) < 1e-9
    fd = np.where(same, df(w)[:, None], (f(w)[:, None] - f(w)[None, :]) / np.where(same, 1, diff))
    return q @ ((q.T @ e @ q) * fd) @ q.T


@pytest.mark.parametrize("name", ["sqrtm", "logm"])
def test_matrix_function_derivatives_closed_form(name):
    f, df = {"sqrtm": (np.sqrt, lambda w: 0.5 / np.sqrt(w)), "logm": (np.log, lambda w: 1 / w)}[
        name
    ]
    fn = getattr(tsl, name)
    _, got = tg.jvp(fn, (SPD,), (E,))
    np.testing.assert_allclose(got, _daleckii_krein(f, df, SPD, E), rtol=1e-9, atol=1e-11)
    # reverse mode is the adjoint, and the derivatives of a nonsymmetric matrix agree with
    # finite differences to second order
    g = tg.grad(lambda a: (fn(a) * W).sum())(SPD)
    np.testing.assert_allclose((g * E).sum(), (got * W).sum(), rtol=1e-10)
    check_grads(fn, (P[:3, :3],), order=2)  # 3 x 3: logm's second order is logm of 4n x 4n


def test_logm_is_the_inverse_of_expm_frechet():
    """L_exp(logm(A), L_log(A, E)) = E."""
    _, l_log = tg.jvp(tsl.logm, (P,), (E,))
    np.testing.assert_allclose(sl.expm_frechet(sl.logm(P), l_log)[1], E, rtol=1e-9, atol=1e-11)


def test_logm_gives_the_same_bits_every_call_and_leaves_np_random_alone():
    # SciPy's logm draws 1-norm probes from np.random's global state: run from a fixed seed,
    # then the caller's state is restored
    rng = np.random.default_rng(3)
    mats = [rng.standard_normal((6, 6)) * 0.5 + 3 * np.eye(6) for _ in range(40)]
    graph = tg.make_graph(tsl.logm)(mats[0])  # traced: the primitive, as under grad or jit
    jitted = tg.jit(tsl.logm)
    np.random.seed(7)
    before = np.random.get_state()
    got = [graph(a) for a in mats]
    assert_bitwise_equal([graph(a) for a in mats], got)
    assert_bitwise_equal([jitted(a) for a in mats], got)
    after = np.random.get_state()
    assert before[2:] == after[2:] and np.array_equal(before[1], after[1])
    for a, g in zip(mats, got):
        np.testing.assert_allclose(g, sl.logm(a), rtol=1e-12, atol=1e-13)


def test_logm_of_a_stack_gives_each_matrix_its_own_bits():
    # SciPy's batched logm carries np.random's stream from one matrix's probes to the next,
    # so a matrix would get other last bits in a stack (vmap) than alone: here it does not
    rng = np.random.default_rng(15)
    stack = 2 * np.eye(6) + 0.3 * rng.standard_normal((3, 6, 6))
    alone = [tsl.logm(m) for m in stack]
    np.random.seed(0)
    assert not np.array_equal(sl.logm(stack), alone)  # (the case this test is about)
    assert_bitwise_equal(list(tsl.logm(stack)), alone)
    assert_bitwise_equal(list(tsl.logm(stack[None].repeat(2, 0))[1]), alone)
    assert_bitwise_equal(list(tg.vmap(tsl.logm)(stack)), alone)


def test_sqrtm_jvp_solves_the_sylvester_equation():
    x, dx = tg.jvp(tsl.sqrtm, (P,), (E,))
    np.testing.assert_allclose(x @ dx + dx @ x, E, rtol=1e-10, atol=1e-12)


# -- the solvers: Kronecker closed forms ----------------------------------------------------------


def _kron(a, b):
    """K with vec(A X + X B) = K vec(X), column-major vec: the Sylvester operator as a matrix."""
    return np.kron(np.eye(len(b)), a) + np.kron(b.T, np.eye(len(a)))


def _vec(x):
    return x.T.reshape(-1)


def _unit(shape, k):
    e = np.zeros(shape)
    e.flat[k] = 1.0
    return e


def _kron_gradient(k, w, rhs_of):
    """The gradient of <w, X> in an input of the equation K vec(X) = vec(Q): component k is
    <w, dX> with K vec(dX) = vec(rhs_of(k)), the implicit function theorem on the Kronecker
    system (`rhs_of(k)`: the right-hand side of a unit change of that input's entry k)."""
    s = np.linalg.solve(k.T, _vec(w))  # one adjoint solve, then one product per entry
    return lambda shape: np.array(
        [s @ _vec(rhs_of(_unit(shape, i))) for i in range(int(np.prod(shape)))]
    ).reshape(shape)


def test_solve_sylvester_against_kronecker():
    x = tsl.solve_sylvester(P, BM, C)
    k = _kron(P, BM)
    np.testing.assert_allclose(_vec(x), np.linalg.solve(k, _vec(C)), rtol=1e-12)
    w = W[:, :3]
    got = tg.grad(lambda a, b, q: (tsl.solve_sylvester(a, b, q) * w).sum(), argnums=(0, 1, 2))(
        P, BM, C
    )
    grads = [
        _kron_gradient(k, w, lambda da: -da @ x)(P.shape),
        _kron_gradient(k, w, lambda db: -x @ db)(BM.shape),
        _kron_gradient(k, w, lambda dq: dq)(C.shape),
    ]
    for g, v in zip(got, grads):
        np.testing.assert_allclose(g, v, rtol=1e-10, atol=1e-12)
    check_grads(tsl.solve_sylvester, (P, BM, C), order=2)


def test_solve_continuous_lyapunov_against_kronecker():
    a = P - 3 * np.eye(N)  # stable: eigenvalues near -1.5
    x = tsl.solve_continuous_lyapunov(a, E)
    k = _kron(a, a.T)
    np.testing.assert_allclose(_vec(x), np.linalg.solve(k, _vec(E)), rtol=1e-12)
    got = tg.grad(lambda a, q: (tsl.solve_continuous_lyapunov(a, q) * W).sum(), argnums=(0, 1))(
        a, E
    )
    grads = [
        _kron_gradient(k, W, lambda da: -da @ x - x @ da.T)(a.shape),
        _kron_gradient(k, W, lambda dq: dq)(E.shape),
    ]
    for g, v in zip(got, grads):
        np.testing.assert_allclose(g, v, rtol=1e-10, atol=1e-12)
    check_grads(tsl.solve_continuous_lyapunov, (a, E), order=2)


@pytest.mark.parametrize("lu", [(1, 2), (0, 0), (2, 0), (0, 1)])
def test_solve_banded_derivatives(lu):
    """Against the dense solve: b's cotangent A^-T w, ab's the entries of -(A^-T w) x^T that
    the band stores (zero on the corners SciPy never reads)."""
    nl, nu = lu
    ab = RNG.standard_normal((nl + nu + 1, N))
    ab[nu] += 4.0
    dense = _dense(ab, N, nl, nu)
    f = lambda ab, b: tsl.solve_banded(lu, ab, b)  # noqa: E731
    for b in (BV, C):
        x = np.linalg.solve(dense, b)
        np.testing.assert_allclose(f(ab, b), x, rtol=1e-12)
        w = RNG.standard_normal(b.shape)
        g = np.linalg.solve(dense.T, w)
        a_bar = -np.outer(g, x) if b.ndim == 1 else -g @ x.T
        ab_bar = np.zeros_like(ab)
        for r in range(nl + nu + 1):
            for j in range(N):
                if 0 <= j + r - nu < N:  # ab[r, j] holds A[j + r - u, j]
                    ab_bar[r, j] = a_bar[j + r - nu, j]
        got = tg.grad(lambda ab, b, w=w: (f(ab, b) * w).sum(), argnums=(0, 1))(ab, b)
        np.testing.assert_allclose(got[0], ab_bar, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[1], g, rtol=1e-10, atol=1e-12)
    check_grads(f, (ab, C), order=2)


# -- vmap and jit ----------------------------------------------------------------------------------


def test_vmap_matches_loop():
    a = A + RNG.standard_normal((3, N, N)) * 0.1
    q = RNG.standard_normal((3, N, 3))
    ab = RNG.standard_normal((3, L + U + 1, N))
    ab[:, U] += 4.0
    cases = [
        (tsl.expm, (a,), (0,)),
        (lambda a, e: tsl.expm_frechet(a, e)[1], (a, E), (0, None)),
        (tsl.sqrtm, (a + 1.5 * np.eye(N),), (0,)),
        (tsl.logm, (a + 1.5 * np.eye(N),), (0,)),
        (lambda a, q: tsl.solve_sylvester(a + 2 * np.eye(N), BM, q), (a, q), (0, 0)),
        (lambda q: tsl.solve_sylvester(P, BM, q), (q,), (0,)),
        (lambda a: tsl.solve_continuous_lyapunov(a - 2 * np.eye(N), E), (a,), (0,)),
        (lambda ab, b: tsl.solve_banded((L, U), ab, b), (ab, q[:, :, 0]), (0, 0)),
        (lambda ab, b: tsl.solve_banded((L, U), ab, b), (AB, q), (None, 0)),
    ]
    for f, args, axes in cases:
        got = tg.vmap(f, in_axes=axes)(*args)
        pick = lambda x, ax, i: x if ax is None else x[i]  # noqa: E731
        want = np.stack([f(*[pick(x, ax, i) for x, ax in zip(args, axes)]) for i in range(3)])
        assert_bitwise_equal(got, want)
    g = tg.vmap(tg.grad(lambda a: (tsl.expm(a) * W).sum()))(a)
    want = np.stack([tg.grad(lambda a: (tsl.expm(a) * W).sum())(x) for x in a])
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_jit_of_grad_matches_eager():
    def f(a, q, ab):
        s = tsl.sqrtm(a + 1.5 * np.eye(N))
        x = tsl.solve_sylvester(s, BM, q) + tsl.solve_banded((L, U), ab, q)
        return (tsl.expm(a) * W).sum() + (x**2).sum() + tsl.logm(s).sum()

    args = (A * 0.2, C, AB)
    eager = tg.grad(f, argnums=(0, 1, 2))(*args)
    for g, j in zip(eager, tg.jit(tg.grad(f, argnums=(0, 1, 2)))(*args)):
        np.testing.assert_allclose(j, g, rtol=1e-12, atol=1e-14)
    check_grads(f, args, order=1)


# -- complex results, deprecations and refusals ---------------------------------------------------


def test_real_matrix_with_complex_root():
    """SciPy's complex result for a plain array; traced, a clear refusal."""
    neg = np.diag([-1.0, 2.0, 3.0])
    for name in ("sqrtm", "logm"):
        fn, want = getattr(tsl, name), getattr(sl, name)(neg)
        assert want.dtype == np.complex128
        assert_bitwise_equal(fn(neg), want)
        with pytest.raises(ValueError, match=f"{name}: .*complex.*astype\\(complex\\)"):
            tg.jit(fn)(neg)
        with pytest.raises(ValueError, match="negative real axis"):
            tg.grad(lambda a, fn=fn: fn(a).sum())(neg)
        # a complex matrix: values work (SciPy's bits), derivatives are refused
        _bits(lambda m, a, name=name: getattr(m, name)(a), neg.astype(complex))


@pytest.mark.filterwarnings("ignore:logm result may be inaccurate")  # SciPy's, at float32
def test_float32_logm():
    """SciPy's float32 logm is complex128 for most matrices (float32 rounding above its float64
    tolerance): plain arrays get SciPy's value, traced ones a refusal that says to use float64."""
    p = P.astype(np.float32)
    assert_bitwise_equal(tsl.logm(p), sl.logm(p))
    if sl.logm(p).dtype.kind == "c":
        with pytest.raises(ValueError, match="pass float64"):
            tg.jit(tsl.logm)(p)


def test_deprecated_arguments_as_scipy():
    with pytest.warns(DeprecationWarning, match="disp"):
        x, err = tsl.sqrtm(P, disp=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        x0, err0 = sl.sqrtm(P, disp=False)
        f0, ferr0 = sl.logm(P, disp=False)
    assert_bitwise_equal(x, x0)
    np.testing.assert_allclose(err, err0, rtol=1e-6, atol=1e-30)
    with pytest.warns(DeprecationWarning, match="blocksize"):
        tsl.sqrtm(P, blocksize=64)
    with pytest.warns(DeprecationWarning, match="disp"):
        f, ferr = tsl.logm(P, disp=False)
    assert_bitwise_equal(f, f0)
    np.testing.assert_allclose(ferr, ferr0, rtol=1e-6, atol=1e-30)


def test_complex_derivatives_refused():
    c = P.astype(complex)
    for fn in (tsl.expm, tsl.sqrtm, tsl.logm, lambda a: tsl.solve_sylvester(a, a, a)):
        with pytest.raises(NotImplementedError, match="complex"):
            tg.grad(lambda a, fn=fn: fn(a).real.sum())(c)
    with pytest.raises(NotImplementedError, match="complex"):
        tg.grad(lambda ab: tsl.solve_banded((L, U), ab, BV).real.sum())(AB.astype(complex))


def test_bad_input():
    square = np.ones((3, 2))
    for fn in (tsl.expm, tsl.sqrtm, tsl.logm):
        with pytest.raises(ValueError, match="square"):
            tg.jit(fn)(square)
    with pytest.raises(ValueError, match="square"):
        tsl.expm(square)
    with pytest.raises(ValueError, match="expm_frechet: A .* and E .* one shape"):
        tsl.expm_frechet(A, np.ones((N + 1, N + 1)))
    with pytest.raises(NotImplementedError, match="blockEnlarge"):
        tsl.expm_frechet(A, E, method="blockEnlarge")
    with pytest.raises(ValueError, match="solve_sylvester: expected a square"):
        tsl.solve_sylvester(square, BM, C)
    with pytest.raises(ValueError, match="solve_sylvester: a .* q must be"):
        tsl.solve_sylvester(P, BM, np.ones((N, 4)))
    with pytest.raises(ValueError, match="solve_continuous_lyapunov: a .* and q"):
        tsl.solve_continuous_lyapunov(P, np.ones((N, 3)))
    with pytest.raises(ValueError, match="l \\+ u \\+ 1 = 3 rows for \\(l, u\\) = \\(1, 1\\)"):
        tsl.solve_banded((1, 1), AB, BV)  # AB has 4 rows
    with pytest.raises(ValueError, match="non-negative"):
        tsl.solve_banded((-1, 4), AB, BV)
    with pytest.raises(ValueError, match="solve_banded: shapes of ab .* and b .* incompatible"):
        tsl.solve_banded((L, U), AB, np.ones(N + 1))
    with pytest.raises(ValueError, match="infs or NaNs"):
        tsl.solve_banded((L, U), AB * np.nan, BV)
    with pytest.raises(ValueError, match="infs or NaNs"):
        tg.jit(lambda a, e: tsl.expm_frechet(a, e))(A * np.nan, E)
