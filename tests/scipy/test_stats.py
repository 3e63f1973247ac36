"""tracegrad.scipy.stats: every method SciPy has among logpdf/pdf/logpmf/pmf/cdf/logcdf/sf/
logsf/ppf, for every distribution of the issue — SciPy's bits (outside a trace, traced, under
jit, frozen), derivatives in every continuous parameter against finite differences (and
first and second derivatives against jax.scipy.stats where it has the method), vmap against a
loop, broadcast parameters, float32 data; values outside the support (-inf or 0 with a zero
gradient, never NaN); and the derivatives refused for having no closed form."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats as st

import tracegrad as tg
import tracegrad.scipy.stats as ts
from tests.scipy.harness import check_function
from tracegrad.testing import assert_bitwise_equal

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
js = pytest.importorskip("jax.scipy.stats")

METHODS = ("logpdf", "pdf", "logpmf", "pmf", "cdf", "logcdf", "sf", "logsf", "ppf")
TAILS = ("cdf", "logcdf", "sf", "logsf", "ppf")


def _x(lo, hi, n=5):
    return np.linspace(lo, hi, n)


def _col(*values):
    """A parameter varying along a new first axis: it broadcasts against the points."""
    return np.array(values)[:, None]


Q = _x(0.1, 0.9, 4)  # the points of every ppf (not 0.5, the kink of laplace's)
K = np.arange(5.0)

# name: (points, the parameters (shapes, then loc and scale) by position, their names)
CASES = {
    "norm": (_x(-2.5, 2.5), (_col(0.3, -0.5), np.array(1.5)), ("loc", "scale")),
    "t": (_x(-2.5, 2.5), (_col(3.5, 7.0), np.array(0.3), np.array(1.5)), ("df", "loc", "scale")),
    "gamma": (_x(0.2, 4), (_col(2.5, 1.3), np.array(0.1), np.array(1.5)), ("a", "loc", "scale")),
    "beta": (_x(0.1, 0.9), (_col(2.5, 1.2), np.array(1.5)), ("a", "b")),
    "chi2": (_x(0.2, 6), (_col(3.0, 4.5),), ("df",)),
    "expon": (_x(0.2, 4), (_col(0.1, -0.2), np.array(1.5)), ("loc", "scale")),
    "laplace": (_x(-2.5, 2.6), (_col(0.3, -0.4), np.array(1.5)), ("loc", "scale")),
    "logistic": (_x(-2.5, 2.5), (_col(0.3, -0.4), np.array(1.5)), ("loc", "scale")),
    "cauchy": (_x(-2.5, 2.5), (_col(0.3, -0.4), np.array(1.5)), ("loc", "scale")),
    "uniform": (_x(0.2, 1.8), (_col(0.1, -0.1), np.array(2.0)), ("loc", "scale")),
    "lognorm": (_x(0.2, 4), (_col(0.7, 1.1), np.array(-0.1), np.array(1.5)), ("s", "loc", "scale")),
    "pareto": (_x(1.6, 4), (_col(2.5, 1.5), np.array(0.2)), ("b", "loc")),
    "vonmises": (_x(-2.5, 2.5), (_col(2.0, 0.7),), ("kappa",)),
    "truncnorm": (_x(-0.9, 1.9), (_col(-1.0, -1.5), np.array(2.0)), ("a", "b")),
    "poisson": (K, (_col(2.5, 0.7),), ("mu",)),
    "binom": (K, (np.array(8), _col(0.4, 0.65)), ("n", "p")),
    "nbinom": (K, (_col(3.5, 2.0), np.array(0.4)), ("n", "p")),
    "bernoulli": (np.array([0.0, 1.0]), (_col(0.3, 0.8),), ("p",)),
    "geom": (K + 1.0, (_col(0.3, 0.6),), ("p",)),
}

# (distribution, method): the parameters whose derivative has no closed form (refused)
REFUSED = {
    **{("t", m): ("df",) for m in TAILS},
    **{("gamma", m): ("a",) for m in TAILS},
    **{("chi2", m): ("df",) for m in TAILS},
    **{("beta", m): ("a", "b") for m in TAILS},
    **{("vonmises", m): ("kappa",) for m in TAILS},
    # (binom's logpmf is SciPy's gammaln formula: in n its continuous extension, as JAX's)
    **{("binom", m): ("n",) for m in ("pmf", "cdf", "logcdf", "sf", "logsf")},
    **{("nbinom", m): ("n",) for m in ("cdf", "logcdf", "sf", "logsf")},
}
# finite differences of these lose digits: SciPy's own value is only that accurate
TOLERANCE = {("vonmises", "cdf"): 1e-4, ("vonmises", "sf"): 1e-4, ("vonmises", "ppf"): 1e-4}


def _methods(name):
    return [m for m in METHODS if hasattr(getattr(st, name), m)]


ALL = [(name, m) for name in CASES for m in _methods(name)]


def _differentiated(name, method):
    """The positions (in (x, *params)) to differentiate: the continuous parameters, and the
    points of a continuous distribution (a ppf's q included)."""
    _, params, names = CASES[name]
    refused = REFUSED.get((name, method), ())
    discrete = hasattr(getattr(st, name), "pmf")
    wrt = [] if discrete and method != "ppf" else [0]
    wrt += [i + 1 for i, (p, n) in enumerate(zip(params, names)) if n not in refused]
    if discrete and method == "ppf":
        return []  # a count: its derivative is zero (test_a_discrete_ppf_has_zero_derivatives)
    return [i for i in wrt if i == 0 or params[i - 1].dtype.kind == "f"]


# points that keep finite differences finite (bernoulli's logsf is -inf at k = 1)
SAFE_POINTS = {("bernoulli", "logsf"): np.array([0.0])}


def _args(name, method):
    x, params, _ = CASES[name]
    return (Q if method == "ppf" else SAFE_POINTS.get((name, method), x), *params)


def test_every_distribution_and_method_of_the_issue_exists():
    for name in CASES:
        for method in _methods(name):
            assert callable(getattr(getattr(ts, name), method)), (name, method)
    for name in ("dirichlet", "multivariate_normal", "multinomial"):
        assert hasattr(ts, name)


@pytest.mark.parametrize("name, method", ALL)
def test_method(name, method):
    ours, theirs = getattr(getattr(ts, name), method), getattr(getattr(st, name), method)
    args = _args(name, method)
    wrt = _differentiated(name, method)
    check_function(ours, theirs, args, wrt=wrt, order=2, label=f"{name}.{method}",
                   rtol=TOLERANCE.get((name, method)))  # fmt: skip
    # frozen, as SciPy's: norm(loc, scale).logpdf(x)
    frozen = getattr(getattr(ts, name)(*args[1:]), method)
    assert_bitwise_equal(frozen(args[0]), theirs(*args), f"{name}(...).{method}")
    under_jit = tg.jit(lambda x, *p: getattr(getattr(ts, name)(*p), method)(x))(*args)
    assert_bitwise_equal(under_jit, theirs(*args), f"frozen {name}.{method} under jit")


@pytest.mark.parametrize("name", [n for n in CASES if hasattr(getattr(st, n), "pmf")])
def test_a_discrete_ppf_has_zero_derivatives(name):
    q, *params = _args(name, "ppf")
    floats = [i for i, p in enumerate(params) if p.dtype.kind == "f"]

    def total(*ps):
        full = list(params)
        for i, p in zip(floats, ps):
            full[i] = p
        return np.sum(getattr(ts, name).ppf(q, *full))

    for g in tg.grad(total, argnums=tuple(range(len(floats))))(*(params[i] for i in floats)):
        np.testing.assert_array_equal(g, np.zeros_like(g))


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_points_and_keyword_parameters(name):
    x, params, names = CASES[name]
    method = _methods(name)[0]
    kwargs = dict(zip(names, params))
    x32 = x.astype(np.float32)
    ours = getattr(getattr(ts, name), method)(x32, **kwargs)
    assert_bitwise_equal(ours, getattr(getattr(st, name), method)(x32, **kwargs), name)


# -- derivatives against jax.scipy.stats ------------------------------------------------------

# JAX's compile time (some 20 s for every method) limits the oracle to the log densities, in
# every argument to second order; every method is checked against finite differences to second
# order in test_method
SECOND = ("logpdf", "logpmf")
JAX_CASES = [
    (name, m, i)
    for name, m in ALL
    if m in SECOND and hasattr(getattr(js, name, None), m)
    for i in _differentiated(name, m)
]


def _broadcast(args):
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return [np.broadcast_to(np.asarray(a, np.float64), shape) for a in args]


def _in(fn, args, i, xp):
    return lambda v: fn(*[v if j == i else xp.asarray(a) for j, a in enumerate(args)])


@pytest.fixture(scope="module")
def jax_derivatives():
    """Every JAX oracle's first and second (diagonal) derivatives, in one jit."""

    def derivatives(all_args):
        out = {}
        for (name, method, i), args in all_args.items():
            f = _in(getattr(getattr(js, name), method), args, i, jax.numpy)
            g = jax.grad(lambda v, f=f: f(v).sum())
            out[name, method, i] = (g(args[i]), jax.grad(lambda v, g=g: g(v).sum())(args[i]))
        return out

    cases = {case: _broadcast(_args(case[0], case[1])) for case in JAX_CASES}
    return jax.jit(derivatives)(cases)


@pytest.mark.parametrize("name, method, i", JAX_CASES)
def test_derivatives_match_jax(name, method, i, jax_derivatives):
    args = _broadcast(_args(name, method))
    f = _in(getattr(getattr(ts, name), method), args, i, np)
    first = tg.grad(lambda v: np.sum(f(v)))
    want1, want2 = jax_derivatives[name, method, i]
    np.testing.assert_allclose(first(args[i]), want1, rtol=1e-9, atol=1e-12)
    second = tg.grad(lambda v: np.sum(first(v)))(args[i])
    np.testing.assert_allclose(second, want2, rtol=1e-7, atol=1e-10)


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name, method", sorted(REFUSED))
def test_derivatives_without_a_closed_form_are_refused(name, method):
    if not hasattr(getattr(st, name), method):
        pytest.fail(f"{name} has no {method}: REFUSED lists it by mistake")
    args = _args(name, method)
    _, _, names = CASES[name]
    for param in REFUSED[name, method]:
        i = names.index(param) + 1
        f = _in(getattr(getattr(ts, name), method), _broadcast(args), i, np)
        value = np.asarray(args[i], np.float64)
        with pytest.raises(NotImplementedError, match=r"(has no closed form|not defined)"):
            tg.grad(lambda v, f=f: np.sum(f(v)))(np.broadcast_to(value, np.shape(f(value))))


# -- outside the support, invalid parameters --------------------------------------------------

OUTSIDE = {
    "gamma": (np.array([-1.0, 0.0 - 1e-3]), (2.5,)),
    "beta": (np.array([-0.5, 1.5]), (2.5, 1.5)),
    "expon": (np.array([-1.0, -1e-3]), ()),
    "uniform": (np.array([-0.5, 1.5]), ()),
    "pareto": (np.array([0.5, 0.99]), (2.5,)),
    "lognorm": (np.array([-1.0, 0.0]), (0.7,)),
    "chi2": (np.array([-1.0, -2.0]), (3.0,)),
    "truncnorm": (np.array([-1.5, 2.5]), (-1.0, 2.0)),
    "poisson": (np.array([-1.0, 2.5]), (2.5,)),
    "binom": (np.array([-1.0, 9.0]), (8, 0.4)),
}


@pytest.mark.parametrize("name", sorted(OUTSIDE))
def test_outside_the_support_the_log_density_is_minus_inf_with_a_zero_gradient(name):
    x, shapes = OUTSIDE[name]
    dist = getattr(ts, name)
    method = "logpmf" if hasattr(dist, "logpmf") else "logpdf"
    logp = getattr(dist, method)
    assert_bitwise_equal(logp(x, *shapes), getattr(getattr(st, name), method)(x, *shapes))
    assert np.all(logp(x, *shapes) == -np.inf)
    params = [np.float64(s) for s in shapes]
    floats = [i for i, p in enumerate(params) if not float(p).is_integer() or name != "binom"]

    def total(x, *ps):
        full = list(params)
        for i, p in zip(floats, ps):
            full[i] = p
        return np.sum(getattr(dist, method.removeprefix("log"))(x, *full))

    grads = tg.grad(total, argnums=tuple(range(1 + len(floats))))(x, *(params[i] for i in floats))
    for g in grads:
        np.testing.assert_array_equal(g, np.zeros_like(g))


def test_invalid_parameters_give_scipy_nan_and_no_nan_gradient_elsewhere():
    x = np.array([0.5, 1.0])
    scale = np.array([-1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_bitwise_equal(ts.norm.logpdf(x, 0.0, scale), st.norm.logpdf(x, 0.0, scale))
    g = tg.grad(lambda s: np.sum(np.nan_to_num(ts.norm.logpdf(x, 0.0, s), nan=0.0)))(scale)
    assert g[0] == 0.0 and np.isfinite(g[1])


def test_frozen_distributions_check_their_parameters_and_name_their_methods():
    frozen = ts.norm(0.5, 2.0)
    assert_bitwise_equal(frozen.cdf(1.0), st.norm(0.5, 2.0).cdf(1.0))
    with pytest.raises(AttributeError, match="frozen norm has no attribute 'logpmf'"):
        frozen.logpmf(1.0)
    with pytest.raises(TypeError, match=r"gamma.freeze\(\): missing a required argument: 'a'"):
        ts.gamma()


# -- the multivariate distributions -----------------------------------------------------------

MEAN = np.array([0.5, -0.3, 0.1])
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
POINTS = np.array([[0.1, 0.2, 0.3], [1.5, -1.0, 0.4], [-0.7, 0.3, 2.0], [0.0, 0.0, 0.0]])


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
def test_multivariate_normal(method):
    ours, theirs = getattr(ts.multivariate_normal, method), getattr(st.multivariate_normal, method)
    check_function(ours, theirs, (POINTS, MEAN, COV), order=1, label=f"mvn.{method}")
    assert_bitwise_equal(getattr(ts.multivariate_normal(MEAN, COV), method)(POINTS),
                         theirs(POINTS, MEAN, COV))  # fmt: skip
    # gradients in x, mean and cov and the Hessian in mean against JAX's (one jit: eager JAX
    # takes ten times longer)
    jf = getattr(js.multivariate_normal, method)

    def theirs_sum(x, m, c):
        return jf(x, m, c).sum()

    def oracle(x, m, c):
        return jax.grad(theirs_sum, (0, 1, 2))(x, m, c), jax.hessian(theirs_sum, 1)(x, m, c)

    want, want_hess = jax.jit(oracle)(POINTS, MEAN, COV)
    got = tg.grad(lambda x, m, c: np.sum(ours(x, m, c)), (0, 1, 2))(POINTS, MEAN, COV)
    # SciPy reads cov's lower triangle: JAX's symmetric gradient folds onto it
    w = np.asarray(want[2])
    want = (want[0], want[1], np.tril(w + w.T - np.diag(np.diag(w))))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    hess = tg.hessian(lambda m: np.sum(ours(POINTS, m, COV)))(MEAN)
    np.testing.assert_allclose(hess, want_hess, rtol=1e-9)


def test_multivariate_normal_edge_cases():
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    x = np.array([[0.5, 0.5], [0.5, -0.5]])  # the second point is off the support
    out = ts.multivariate_normal.logpdf(x, np.zeros(2), singular, allow_singular=True)
    assert_bitwise_equal(out, st.multivariate_normal.logpdf(x, np.zeros(2), singular, True))
    assert out[1] == -np.inf
    g = tg.grad(lambda v: ts.multivariate_normal.logpdf(v, np.zeros(2), singular, True)[1])(x)
    np.testing.assert_array_equal(g, np.zeros_like(x))
    with pytest.raises(NotImplementedError, match="allow_singular=True.*rank of cov changes"):
        tg.grad(lambda c: ts.multivariate_normal.logpdf(x[0], np.zeros(2), c, True))(singular)
    with pytest.raises(NotImplementedError, match="multivariate_normal.cdf is not supported"):
        ts.multivariate_normal.cdf(x, np.zeros(2), np.eye(2))
    scalar = ts.multivariate_normal.logpdf(0.3, 0.1, 2.0)  # SciPy's 1-d conventions
    assert_bitwise_equal(scalar, st.multivariate_normal.logpdf(0.3, 0.1, 2.0))


ALPHA = np.array([1.5, 2.0, 3.5])
SIMPLEX = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]).T  # SciPy's points are columns


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
def test_dirichlet(method):
    ours, theirs = getattr(ts.dirichlet, method), getattr(st.dirichlet, method)
    # SciPy checks that x is on the simplex: the harness's perturbed batch is not (vmap below)
    # and off it (as finite differences in x go): the derivative in x against JAX's below
    check_function(ours, theirs, (SIMPLEX, ALPHA), wrt=(1,), vmap=False, label=method)
    alphas = np.stack([ALPHA, ALPHA * 0.5])
    assert_bitwise_equal(tg.vmap(lambda a: ours(SIMPLEX, a))(alphas),
                         np.stack([theirs(SIMPLEX, a) for a in alphas]))  # fmt: skip
    assert_bitwise_equal(getattr(ts.dirichlet(ALPHA), method)(SIMPLEX), theirs(SIMPLEX, ALPHA))
    jf = getattr(js.dirichlet, method)

    def theirs_sum(x, a):
        return jf(x, a).sum()

    def oracle(x, a):
        return jax.hessian(theirs_sum, 1)(x, a), jax.grad(theirs_sum)(x, a)

    want_hess, want_grad = jax.jit(oracle)(SIMPLEX, ALPHA)
    got = tg.hessian(lambda a: np.sum(ours(SIMPLEX, a)))(ALPHA)
    np.testing.assert_allclose(got, want_hess, rtol=1e-9)
    got = tg.grad(lambda x: np.sum(ours(x, ALPHA)))(SIMPLEX)
    np.testing.assert_allclose(got, want_grad, rtol=1e-9)


def test_dirichlet_checks_its_points_as_scipy():
    with pytest.raises(ValueError, match="sum"):
        ts.dirichlet.logpdf(np.array([0.5, 0.6, 0.2]), ALPHA)


@pytest.mark.filterwarnings("ignore:Some rows of `p` do not sum:FutureWarning")  # vmap's batch
@pytest.mark.parametrize("method", ["logpmf", "pmf"])
def test_multinomial(method):
    x, p = np.array([[2.0, 1.0, 3.0], [0.0, 4.0, 2.0]]), np.array([0.2, 0.5, 0.3])
    ours, theirs = getattr(ts.multinomial, method), getattr(st.multinomial, method)
    # no finite differences: off the simplex SciPy replaces p's last entry (JAX's below)
    check_function(lambda x, p: ours(x, 6, p), lambda x, p: theirs(x, 6, p), (x, p), order=0)
    assert_bitwise_equal(getattr(ts.multinomial(6, p), method)(x), theirs(x, 6, p))
    jf = getattr(js.multinomial, method)
    got = tg.grad(lambda q: np.sum(ours(x, 6, q)))(p)
    # JAX's takes one outcome at a time (it sums x over every axis)
    want = sum(jax.grad(lambda q, r=r: jf(r.astype(int), 6, q))(p) for r in x)
    np.testing.assert_allclose(got, want, rtol=1e-9)
