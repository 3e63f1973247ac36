"""Taylor rules of the reductions with products (prod, cumprod, masked prod, multiply_at), interp,
logsumexp and the linear algebra (NumPy's and SciPy's), against nested forward mode.

The oracle: along a curve x(t) = x + v_1 t + ... + v_K t^K through the inputs, the k-th Taylor
coefficient of f(x(t)) is the k-th derivative of t -> f(x(t)) at 0 over k!, and that derivative
is k nested `tg.jvp`s, which use only the primitives' jvp rules (checked against finite
differences elsewhere), never a Taylor rule. `tg.jet` is given the same curve as its input
series (`factorial_scaled=False`), curved (v_2..v_K random) and, for some, straight
(v_2..v_K = 0, the structural-zero path), at order 4 (so orders 1..3 are its leading terms).
Where JAX's jet has a rule (cumprod, logsumexp; its det fails at order 4), it is a second
oracle. float64, small sizes. Also: prod with zeros, jet of a gradient (the cholesky_vjp
primitive), grad of a jet (the rules differentiate again), and jet's error for a primitive
left without a rule (svd).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
import tracegrad.scipy.linalg as tsl
import tracegrad.scipy.special as tss
from tracegrad.primitives.linalg import inverses
from tracegrad.primitives.reduction import cumprod

ORDER = 4


def _curve(args, moving, terms):
    """g(t): `args` with args[i] + sum_k t^k terms[i][k-1] at each moving position i."""

    def g(t):
        full = list(args)
        for i in moving:
            x = args[i]
            for k, v in enumerate(terms[i], 1):
                x = x + (t**k) * v if k > 1 else x + t * v
            full[i] = x
        return full

    return g


def _nested(fn, order):
    """[fn'(0), ..., fn^(order)(0)] / k!: the Taylor coefficients by nested jvps, all orders
    from one nest (level k returns [fn, fn', ..., fn^(k)])."""
    level = lambda t: [fn(t)]  # noqa: E731
    for _ in range(order):

        def level(t, prev=level):
            values, tangents = tg.jvp(prev, (t,), (1.0,))
            return [*values, tangents[-1]]

    return [np.asarray(d) / math.factorial(k) for k, d in enumerate(level(0.0)[1:], 1)]


def _terms(rng, args, moving, curved, order=ORDER):
    out = {}
    for i in moving:
        shape, dtype = np.shape(args[i]), np.asarray(args[i]).dtype
        out[i] = []
        for k in range(order):
            v = rng.standard_normal(shape) if k == 0 or curved else np.zeros(shape)
            if dtype.kind == "c" and (k == 0 or curved):
                v = v + 1j * rng.standard_normal(shape)
            out[i].append(v.astype(dtype))
    return out


def _close(got, want, what, rtol=1e-8):
    """Each term to `rtol` of its largest entry (or of the largest term's, for a term that is
    zero up to rounding, as a cubic's fourth)."""
    top = max(np.max(np.abs(w), initial=0.0) for w in want)
    for k, (h, w) in enumerate(zip(got, want), 1):
        h, w = np.asarray(h), np.asarray(w)
        scale = max(np.max(np.abs(w), initial=0.0), 1e-6 * top, 1e-300)
        np.testing.assert_allclose(h, w, rtol=0, atol=rtol * scale, err_msg=f"{what}: term {k}")


def check(f, args, moving=None, seed=0, curved=(True,), rtol=1e-8, output=None):
    """jet of f(*args) along random curves in `moving` (default: every float argument) equals
    nested jvps; `output` picks one output of a tuple-valued f. `curved`: which kinds of curve
    (a straight line as well where a rule has a structural-zero path of its own worth a check;
    tests/primitives/test_taylor_rules.py runs every rule on straight lines too)."""
    args = [np.asarray(a) for a in args]
    if moving is None:
        moving = [i for i, a in enumerate(args) if a.dtype.kind in "fc"]
    pick = (lambda y: y) if output is None else (lambda y: y[output])
    rng = np.random.default_rng(seed)
    for c in curved:
        terms = _terms(rng, args, moving, c)
        g = _curve(args, moving, terms)
        want = _nested(lambda t, g=g: pick(f(*g(t))), ORDER)

        def h(*xs):
            full = list(args)
            for i, x in zip(moving, xs):
                full[i] = x
            return pick(f(*full))

        primal, got = tg.jet(
            h, tuple(args[i] for i in moving), tuple(terms[i] for i in moving), False
        )
        np.testing.assert_allclose(np.asarray(primal), np.asarray(pick(f(*args))), rtol=1e-12)
        _close(got, want, f"{getattr(f, '__name__', f)} curved={c}", rtol)


# -- reductions with products -----------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, (0, 2), None, ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_prod(axis, keepdims):
    x = np.random.default_rng(1).standard_normal((3, 5, 4))
    check(lambda a: tnp.prod(a, axis=axis, keepdims=keepdims), [x], curved=(False, True))


def test_prod_with_zeros_is_exact():
    # one zero in a slice (its derivative is the product of the others) and two zeros (the
    # first derivative is 0, the second is not): no division by x anywhere
    x = np.array([[2.0, 0.0, 3.0, -1.5, 0.5], [0.0, 1.0, 0.0, 2.0, 4.0], [0.0] * 5])
    check(lambda a: tnp.prod(a, axis=1), [x])
    v = np.ones_like(x)
    _, (d1, d2, d3) = tg.jet(lambda a: tnp.prod(a, axis=1), (x,), ([v, 0 * v, 0 * v],))
    # second row: (t)(1 + t)(t)(2 + t)(4 + t) = 8 t^2 + ...
    np.testing.assert_allclose([d1[1], d2[1], d3[1]], [0.0, 16.0, 6 * 14.0])
    assert np.isfinite([d1, d2, d3]).all()


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True), (True, True)])
def test_cumprod(axis, flags):
    x = np.random.default_rng(2).standard_normal((5, 6))
    x[1, 2] = x[3, 0] = 0.0
    check(lambda a: cumprod(a, (axis,), *flags), [x])


def test_prod_where():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5))
    x[0, 0] = 0.0
    mask = rng.random((3, 5)) > 0.3
    check(lambda a: tnp.prod(a, axis=1, where=mask, initial=1.5), [x])
    check(lambda a: tnp.prod(a, axis=(0, 1), where=mask, keepdims=True), [x])


def test_multiply_at():
    rng = np.random.default_rng(5)
    x, v = rng.standard_normal((6, 3)), rng.standard_normal((2, 3))
    idx = np.array([4, 1])
    check(lambda a, b: tnp.at(a)[idx].multiply(b), [x, v])
    check(lambda a, b: tnp.at(a)[idx].multiply(b), [x, v], moving=[1])
    check(lambda a: tnp.at(a)[2, 1].multiply(3.0), [x])


def test_interp():
    rng = np.random.default_rng(6)
    xp = np.sort(rng.random(6)) * 4
    fp = rng.standard_normal(6)
    # inside, below, beyond, and points in each interval
    x = np.concatenate([np.linspace(xp[0] + 0.01, xp[-1] - 0.01, 7), [xp[0] - 1, xp[-1] + 1]])
    check(lambda a, b, c: tnp.interp(a, b, c), [x, xp, fp])
    check(lambda a, b, c: tnp.interp(a, b, c, left=-2.0, right=3.0), [x, xp, fp])
    check(lambda c, lo, hi: tnp.interp(x, xp, c, left=lo, right=hi), [fp, -2.0, 3.0])


@pytest.mark.parametrize("sign", [False, True])
def test_logsumexp(sign):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    out = 0 if sign else None
    check(lambda x: tss.logsumexp(x, axis=1, return_sign=sign), [a], output=out)
    check(lambda x, w: tss.logsumexp(x, axis=0, b=w, return_sign=sign), [a, b], output=out)
    check(lambda x: tss.logsumexp(x, keepdims=True, return_sign=sign), [a], output=out)


def test_an_empty_logsumexp_slice_is_constant():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 5))
    a[1] = -np.inf
    series = [rng.standard_normal(a.shape) for _ in range(ORDER)]
    _, got = tg.jet(lambda x: tss.logsumexp(x, 1), (a,), (series,))
    assert all(np.asarray(t)[1] == 0.0 and np.isfinite(t).all() for t in got)


def test_cumprod_and_logsumexp_match_jax_jet():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jet = pytest.importorskip("jax.experimental.jet").jet
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4))
    x[0, 1] = 0.0
    series = [rng.standard_normal(x.shape) for _ in range(ORDER)]
    pairs = [
        (lambda a: jax.numpy.cumprod(a, 1), lambda a: tnp.cumprod(a, 1)),
        (lambda a: jax.scipy.special.logsumexp(a, 1), lambda a: tss.logsumexp(a, 1)),
    ]
    for theirs, ours in pairs:
        want = jax.jit(lambda a, s, f=theirs: jet(f, (a,), (s,))[1])(x, series)
        _close(tg.jet(ours, (x,), (series,))[1], want, "vs jax")


# -- NumPy's linear algebra -------------------------------------------------------------------


def _matrix(rng, n, shift=3.0, stack=()):
    return shift * np.eye(n) + 0.5 * rng.standard_normal((*stack, n, n))


def _spd(rng, n):
    b = rng.standard_normal((n, n))
    return b @ b.T + n * np.eye(n)


@pytest.mark.parametrize("stack", [(), (2,)])
def test_inv_det_slogdet_adjugate(stack):
    rng = np.random.default_rng(10)
    a = _matrix(rng, 3, stack=stack)
    check(tnp.linalg.inv, [a], curved=(False, True))
    check(inverses.inv_or_nan, [a])
    check(tnp.linalg.det, [a])
    check(lambda x: tnp.linalg.slogdet(x)[1], [a])
    check(inverses.adjugate, [a])
    a[..., 0, 0] = -a[..., 0, 0] - 4.0  # a negative determinant: the sign stays put
    check(lambda x: tnp.linalg.slogdet(x)[1], [a])
    check(tnp.linalg.det, [a])


def test_complex_slogdet_moves_the_sign():
    rng = np.random.default_rng(11)
    a = _matrix(rng, 3) + 0.5j * rng.standard_normal((3, 3))
    for out in (0, 1):
        check(lambda x, o=out: tnp.linalg.slogdet(x)[o], [a], rtol=1e-7)


def test_solve():
    rng = np.random.default_rng(12)
    a, b, v = _matrix(rng, 3, stack=(2,)), rng.standard_normal((2, 3, 2)), rng.standard_normal(3)
    check(tnp.linalg.solve, [a, b], curved=(False, True))
    check(tnp.linalg.solve, [a, v])
    check(tnp.linalg.solve, [a, b], moving=[1])
    check(tnp.linalg.solve, [a, v], moving=[0])


def test_eigh_and_eigvalsh():
    # distinct eigenvalues; the eigenvectors' series continues LAPACK's vectors smoothly
    rng = np.random.default_rng(22)
    a = _spd(rng, 4)
    check(lambda x: tnp.linalg.eigh(x)[0], [a], curved=[True])
    check(lambda x: tnp.linalg.eigh(x, UPLO="U")[1], [a])
    check(tnp.linalg.eigvalsh, [a], curved=[False])
    b = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    h = b @ b.conj().T + np.eye(3)
    check(lambda x: tnp.linalg.eigh(x)[1], [h], curved=[True], rtol=1e-7)


def test_eig_and_eigvals():
    # a real matrix with a complex pair, and a complex one; distinct eigenvalues
    rng = np.random.default_rng(25)
    m = rng.standard_normal((3, 3))
    check(lambda x: tnp.linalg.eig(x)[1], [m], curved=[True], rtol=1e-7)
    check(tnp.linalg.eigvals, [m], curved=[False], rtol=1e-7)
    c = m + 1j * rng.standard_normal((3, 3))
    check(lambda x: tnp.linalg.eig(x)[1], [c], curved=[False], rtol=1e-7)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_qr(shape):
    # tall (reduced, r) and wide (q square, r's extra columns q^H y); complex: r's diagonal
    # stays real, the jvp's gauge
    rng = np.random.default_rng(26)
    a = rng.standard_normal(shape)
    check(lambda x: tnp.linalg.qr(x)[0], [a], curved=[True])
    check(lambda x: tnp.linalg.qr(x, mode="r"), [a], curved=[False])
    c = a + 1j * rng.standard_normal(shape)
    check(lambda x: tnp.linalg.qr(x)[1], [c], curved=[True], rtol=1e-7)


def test_qr_complete_of_a_tall_matrix_is_refused():
    a = np.random.default_rng(27).standard_normal((4, 3))
    with pytest.raises(NotImplementedError, match="qr: mode='complete' of a tall matrix"):
        tg.jet(lambda x: tnp.linalg.qr(x, mode="complete")[0], (a,), ([a],))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    a = _spd(np.random.default_rng(13), 4)
    check(lambda x: tnp.linalg.cholesky(x, upper=upper), [a])


# -- SciPy's linear algebra -------------------------------------------------------------------


@pytest.mark.parametrize(("lower", "trans"), [(True, 0), (False, 1)])
def test_solve_triangular(lower, trans):
    rng = np.random.default_rng(14)
    a, b, v = _matrix(rng, 3), rng.standard_normal((3, 2)), rng.standard_normal(3)
    check(lambda x, y: tsl.solve_triangular(x, y, trans=trans, lower=lower), [a, b])
    unit = lambda x, y: tsl.solve_triangular(x, y, trans, lower, unit_diagonal=True)  # noqa: E731
    check(unit, [a, v], curved=[True])


def test_scipy_cholesky_cho_factor_and_cho_solve():
    rng = np.random.default_rng(15)
    a, b = _spd(rng, 3), rng.standard_normal((3, 2))
    check(lambda x: tsl.cholesky(x, lower=False), [a])
    check(lambda x: tsl.cho_factor(x, lower=True)[0], [a])
    check(lambda x, y: tsl.cho_solve(tsl.cho_factor(x, lower=True), y), [a, b], curved=[True])
    check(lambda x, y: tsl.cho_solve(tsl.cho_factor(x), y), [a, b[:, 0]], curved=[False])


def test_lu_factor():
    a = np.random.default_rng(16).standard_normal((3, 3))  # with row exchanges
    check(lambda x: tsl.lu_factor(x)[0], [a], curved=[True])


@pytest.mark.parametrize("lower", [False, True])
def test_jet_of_a_gradient_through_the_cholesky_factor(lower):
    # the gradient of the factor is the cholesky_vjp primitive: its series, by composition
    rng = np.random.default_rng(24)
    a, w = _spd(rng, 3), rng.standard_normal((3, 3))
    check(tg.grad(lambda x: tnp.sum(tsl.cho_factor(x, lower=lower)[0] * w)), [a], curved=[True])


@pytest.mark.parametrize("trans", [0, 1])
def test_lu_solve(trans):
    # in the factor: the series of lu_factor's output moves lu_solve's factor
    rng = np.random.default_rng(17)
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    solve = lambda x, y: tsl.lu_solve(tsl.lu_factor(x), y, trans=trans)  # noqa: E731
    check(solve, [a, b], curved=[True])
    check(solve, [a, b[:, 1]], moving=[0], curved=[False])
    check(lambda y: tsl.lu_solve(tsl.lu_factor(a), y, trans=trans), [b])


def test_expm_logm_sqrtm():
    rng = np.random.default_rng(18)
    a = _matrix(rng, 3, shift=2.0)
    check(tsl.expm, [a])
    check(tsl.logm, [a], rtol=1e-7)
    check(tsl.sqrtm, [a])


def test_expm_frechet():
    rng = np.random.default_rng(19)
    a, e = _matrix(rng, 2, shift=1.0), rng.standard_normal((2, 2))
    check(lambda x, y: tsl.expm_frechet(x, y)[1], [a, e], curved=[True])
    check(lambda x: tsl.expm_frechet(x, e)[0], [a], curved=[False])


def test_sylvester_lyapunov_banded():
    rng = np.random.default_rng(20)
    a, b, q = _matrix(rng, 3), _matrix(rng, 2, shift=2.0), rng.standard_normal((3, 2))
    check(tsl.solve_sylvester, [a, b, q])
    check(tsl.solve_continuous_lyapunov, [a, q @ q.T])
    ab = rng.standard_normal((4, 5))
    ab[2] += 4.0  # (l, u) = (1, 2): the main diagonal is row u
    rhs = rng.standard_normal((5, 2))
    check(lambda x, y: tsl.solve_banded((1, 2), x, y), [ab, rhs])
    check(lambda x, y: tsl.solve_banded((1, 2), x, y), [ab, rhs[:, 0]])


def test_a_primitive_left_without_a_rule_is_named():
    a = _spd(np.random.default_rng(21), 3)
    with pytest.raises(NotImplementedError, match="jet: the primitive 'linalg.svd' has no"):
        tg.jet(lambda x: tnp.linalg.svd(x)[1], (a,), ([np.eye(3)],))


def test_the_rules_differentiate_again():
    # grad of a jet term equals grad of the same term by nested jvps: the rules are written
    # with tracegrad operations, so reverse mode goes through them
    rng = np.random.default_rng(23)
    a, v = _matrix(rng, 3), rng.standard_normal((3, 3))

    def by_jet(x):
        f = lambda y: tnp.linalg.det(y) + tnp.sum(tnp.linalg.inv(y)) + tnp.prod(y)  # noqa: E731
        return tg.jet(f, (x,), ([v, 0 * v, 0 * v],))[1][2]

    def by_jvp(x):
        f = lambda y: tnp.linalg.det(y) + tnp.sum(tnp.linalg.inv(y)) + tnp.prod(y)  # noqa: E731
        g = lambda t: f(x + t * v)  # noqa: E731
        d1 = lambda t: tg.jvp(g, (t,), (1.0,))[1]  # noqa: E731
        d2 = lambda t: tg.jvp(d1, (t,), (1.0,))[1]  # noqa: E731
        return tg.jvp(d2, (0.0,), (1.0,))[1]

    np.testing.assert_allclose(tg.grad(by_jet)(a), tg.grad(by_jvp)(a), rtol=1e-9)
