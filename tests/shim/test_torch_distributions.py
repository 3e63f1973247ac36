"""`tracegrad.torch.distributions` against `torch.distributions`.

Each case builds the same distribution in both libraries from the same float64 (or float32)
parameters; `log_prob`, `entropy`, `mean`, `variance`, `stddev` and `kl_divergence` are compared by
value and by the gradient `.backward()` leaves on the parameters. Sampling is checked by the
moments of 10^4 seeded draws, and `rsample`'s gradients by their expectations (that the
families drawing with torch's kernels give torch's samples after the same seed:
tests/shim/test_global_rng.py).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tracegrad.torch as tgt
from tracegrad.torch import distributions as TD
from tracegrad.torch.distributions import kl as tkl
from tracegrad.torch.distributions.gamma import _standard_gamma_grad
from tracegrad.torch.distributions.kl import kl_divergence, register_kl

torch = pytest.importorskip("torch")
from tests.shim.torch_oracle import normalize_torch_message  # noqa: E402

rng = np.random.default_rng(0)
POS = rng.uniform(0.5, 2.0, (3,))
POS2 = rng.uniform(0.5, 2.0, (3,))
REAL = rng.normal(size=(3,))
PROBS = rng.uniform(0.1, 0.9, (3,))
SIMPLEX = rng.uniform(0.2, 1.0, (2, 4))
UNIT = rng.uniform(0.05, 0.95, (3,))
ON_SIMPLEX = SIMPLEX / SIMPLEX.sum(-1, keepdims=True)
A = rng.normal(size=(2, 3, 3))
COV = A @ np.swapaxes(A, -1, -2) + 3 * np.eye(3)
TRIL = np.linalg.cholesky(COV)

# name: (parameters, constructor of (lib, D, *params), a value in the support)
CASES = {
    "Normal": ((REAL, POS), lambda D, m, s: D.Normal(m, s), REAL + 0.3),
    "Uniform": ((REAL - 1, REAL + POS), lambda D, lo, hi: D.Uniform(lo, hi), REAL - 0.5),
    "Laplace": ((REAL, POS), lambda D, m, s: D.Laplace(m, s), REAL - 0.4),
    "Exponential": ((POS,), lambda D, r: D.Exponential(r), POS2),
    "Gamma": ((POS, POS2), lambda D, c, r: D.Gamma(c, r), POS2 + 0.1),
    "Beta": ((POS, POS2), lambda D, a, b: D.Beta(a, b), UNIT),
    "Dirichlet": (
        (SIMPLEX * 3,),
        lambda D, c: D.Dirichlet(c),
        ON_SIMPLEX,
    ),
    "Poisson": ((POS * 2,), lambda D, r: D.Poisson(r), np.array([0.0, 2.0, 5.0])),
    "Bernoulli-probs": ((PROBS,), lambda D, p: D.Bernoulli(probs=p), np.array([0.0, 1.0, 1.0])),
    "Bernoulli-logits": ((REAL,), lambda D, lg: D.Bernoulli(logits=lg), np.array([1.0, 0, 1])),
    "Categorical-probs": ((SIMPLEX,), lambda D, p: D.Categorical(probs=p), np.array([[0, 3]]).T),
    "Categorical-logits": ((SIMPLEX,), lambda D, lg: D.Categorical(logits=lg), np.array([1, 2])),
    "MVN-cov": ((REAL, COV), lambda D, m, c: D.MultivariateNormal(m, c), REAL + 0.5),
    "MVN-precision": (
        (REAL, COV),
        lambda D, m, p: D.MultivariateNormal(m, precision_matrix=p),
        np.stack([REAL, -REAL]),
    ),
    "MVN-tril": ((REAL, TRIL), lambda D, m, t: D.MultivariateNormal(m, scale_tril=t), REAL - 1),
}
ENTROPY_FREE = {"Poisson"}  # PyTorch raises NotImplementedError


def _build(lib, D, name, dtype):
    params, make, _ = CASES[name]
    leaves = [lib.tensor(np.asarray(p), dtype=dtype, requires_grad=True) for p in params]
    return leaves, make(D, *leaves)


def _value(lib, name, dtype):
    value = CASES[name][2]
    kind = lib.int64 if name.startswith("Categorical") else dtype
    return lib.tensor(np.asarray(value), dtype=kind)


def _both(name, fn, dtype_name="float64"):
    """`fn(lib, dist, dtype, name)` in both libraries; its value and the parameters'
    gradients."""
    out = []
    for lib, D in ((tgt, TD), (torch, torch.distributions)):
        dtype = getattr(lib, dtype_name)
        leaves, dist = _build(lib, D, name, dtype)
        result = fn(lib, dist, dtype, name)
        result.sum().backward()
        grads = [None if x.grad is None else x.grad.detach().numpy() for x in leaves]
        out.append((result.detach().numpy(), grads))
    return out


def _assert_same(ours, theirs, rtol):
    (v1, g1), (v2, g2) = ours, theirs
    np.testing.assert_allclose(v1, v2, rtol=rtol, atol=rtol)
    for a, b in zip(g1, g2, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


STATS = {
    "log_prob": lambda lib, d, dt, name: d.log_prob(_value(lib, name, dt)),
    "entropy": lambda lib, d, dt, name: d.entropy(),
    "mean": lambda lib, d, dt, name: d.mean,
    "variance": lambda lib, d, dt, name: d.variance,
    "stddev": lambda lib, d, dt, name: d.stddev,
}


@pytest.mark.parametrize("stat", sorted(STATS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_statistics_and_gradients_match_torch(name, stat):
    if stat == "entropy" and name in ENTROPY_FREE:
        pytest.skip("no entropy in PyTorch")
    if name.startswith("Categorical") and stat in ("mean", "variance", "stddev"):
        pytest.skip("NaN by definition; checked in test_categorical_moments_are_nan")
    ours, theirs = _both(name, STATS[stat])
    _assert_same(ours, theirs, 1e-9)
    ours32, theirs32 = _both(name, STATS[stat], "float32")
    _assert_same(ours32, theirs32, 2e-4)
    assert ours32[0].dtype == theirs32[0].dtype


FUNCTIONS = {
    # name: (the case, what is computed); PyTorch differentiates these in every parameter
    "Normal.cdf": ("Normal", lambda lib, d, dt: d.cdf(lib.tensor(REAL, dtype=dt))),
    "Normal.icdf": ("Normal", lambda lib, d, dt: d.icdf(lib.tensor(UNIT, dtype=dt))),
    "Laplace.cdf": ("Laplace", lambda lib, d, dt: d.cdf(lib.tensor(REAL, dtype=dt))),
    "Laplace.icdf": ("Laplace", lambda lib, d, dt: d.icdf(lib.tensor(UNIT, dtype=dt))),
    "Uniform.cdf": ("Uniform", lambda lib, d, dt: d.cdf(lib.tensor(REAL - 0.5, dtype=dt))),
    "Uniform.icdf": ("Uniform", lambda lib, d, dt: d.icdf(lib.tensor(UNIT, dtype=dt))),
    "Exponential.cdf": ("Exponential", lambda lib, d, dt: d.cdf(lib.tensor(POS, dtype=dt))),
    "Exponential.icdf": ("Exponential", lambda lib, d, dt: d.icdf(lib.tensor(UNIT, dtype=dt))),
    "Normal.mode": ("Normal", lambda lib, d, dt: d.mode),
    "Gamma.mode": ("Gamma", lambda lib, d, dt: d.mode),
    "Beta.mode": ("Beta", lambda lib, d, dt: d.mode),
    "Dirichlet.mode": ("Dirichlet", lambda lib, d, dt: d.mode),
    "Normal.perplexity": ("Normal", lambda lib, d, dt: d.perplexity()),
}


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_cdf_icdf_mode_match_torch(fn):
    name, compute = FUNCTIONS[fn]
    ours, theirs = _both(name, lambda lib, d, dt, _: compute(lib, d, dt))
    _assert_same(ours, theirs, 1e-9)


def test_discrete_modes_and_supports_match_torch():
    def run(lib, D):
        probs = lib.tensor([0.2, 0.5, 0.7])
        cat = D.Categorical(probs=lib.tensor([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]]))
        return [
            D.Bernoulli(probs).mode,
            D.Bernoulli(probs).enumerate_support(),
            D.Bernoulli(probs).enumerate_support(expand=False),
            cat.mode,
            cat.enumerate_support(),
            cat.enumerate_support(False),
            D.Poisson(lib.tensor([0.5, 2.5])).mode,
            D.Dirichlet(lib.tensor([[0.5, 0.3, 0.2], [0.2, 0.9, 0.3]])).mode,
        ]

    for ours, theirs in zip(run(tgt, TD), run(torch, torch.distributions), strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype.name == str(theirs.dtype)[6:]


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Gamma", "Beta", "MVN-tril", "Dirichlet"])
def test_log_prob_gradient_in_the_value_matches_torch(name):
    grads = []
    for lib, D in ((tgt, TD), (torch, torch.distributions)):
        _, dist = _build(lib, D, name, lib.float64)
        value = lib.tensor(np.asarray(CASES[name][2]), dtype=lib.float64, requires_grad=True)
        dist.log_prob(value).sum().backward()
        grads.append(value.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-9)


@pytest.mark.parametrize("given", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_matrices_match_torch(given):
    matrix = {"covariance_matrix": COV, "precision_matrix": COV, "scale_tril": TRIL}[given]
    out = []
    for lib, D in ((tgt, TD), (torch, torch.distributions)):
        d = D.MultivariateNormal(lib.tensor(REAL), **{given: lib.tensor(matrix)})
        out.append([d.covariance_matrix, d.precision_matrix, d.scale_tril, d.variance])
    for ours, theirs in zip(*out, strict=True):
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9)


@pytest.mark.parametrize(
    "name", ["Normal", "Beta", "Categorical-logits", "MVN-tril", "Bernoulli-logits"]
)
def test_expand_matches_torch(name):
    out = []
    for lib, D in ((tgt, TD), (torch, torch.distributions)):
        leaves, dist = _build(lib, D, name, lib.float64)
        big = dist.expand((4, *dist.batch_shape))
        value = _value(lib, name, lib.float64)
        log_prob = big.log_prob(value)
        log_prob.sum().backward()
        shapes = (tuple(big.batch_shape), tuple(big.sample((2,)).shape), repr(big))
        grads = [x.grad.numpy() for x in leaves]
        out.append((shapes, log_prob.detach().numpy(), grads))
    (s1, v1, g1), (s2, v2, g2) = out
    assert s1[:2] == s2[:2] and s1[2] == normalize_torch_message(s2[2])
    np.testing.assert_allclose(v1, v2, rtol=1e-9)
    for a, b in zip(g1, g2, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9)


def test_categorical_moments_are_nan():
    d = TD.Categorical(probs=tgt.tensor(SIMPLEX))
    assert d.mean.shape == (2,) and np.isnan(d.mean.numpy()).all()
    assert d.variance.dtype == tgt.float64


def test_shapes_flags_and_reprs_match_torch():
    for name in CASES:
        _, ours = _build(tgt, TD, name, tgt.float64)
        _, theirs = _build(torch, torch.distributions, name, torch.float64)
        assert ours.batch_shape == tuple(theirs.batch_shape), name
        assert ours.event_shape == tuple(theirs.event_shape), name
        assert ours.has_rsample == theirs.has_rsample, name
        assert repr(ours) == normalize_torch_message(repr(theirs)), name
        assert tuple(ours.sample((5,)).shape) == tuple(theirs.sample((5,)).shape), name
        assert ours.sample().dtype.name == str(theirs.sample().dtype)[6:], name


# -- errors ------------------------------------------------------------------------------------


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the oracle's type is what is compared
        return type(e), normalize_torch_message(str(e))
    return None


ERRORS = {
    "scale": lambda lib, D: D.Normal(lib.tensor([0.0, 1.0]), lib.tensor([-1.0, 1.0])),
    "nan-loc": lambda lib, D: D.Laplace(lib.tensor([math.nan]), lib.tensor([1.0])),
    "support": lambda lib, D: D.Exponential(lib.tensor(1.0)).log_prob(lib.tensor([-1.0, 1.0])),
    "broadcast": lambda lib, D: D.Normal(lib.zeros(3), 1.0).log_prob(lib.zeros(2)),
    "event": lambda lib, D: D.Dirichlet(lib.ones(3)).log_prob(lib.ones(2) / 2),
    "low-high": lambda lib, D: D.Uniform(lib.tensor(1.0), lib.tensor(0.0)),
    "neither": lambda lib, D: D.Bernoulli(),
    "both": lambda lib, D: D.Bernoulli(probs=0.3, logits=0.0),
    "probs": lambda lib, D: D.Bernoulli(probs=lib.tensor([1.5])),
    "simplex": lambda lib, D: D.Categorical(probs=lib.tensor(1.0)),
    "category": lambda lib, D: D.Categorical(logits=lib.zeros(3)).log_prob(lib.tensor([3])),
    "poisson-value": lambda lib, D: D.Poisson(lib.tensor([1.0])).log_prob(lib.tensor([0.5])),
    "mvn-args": lambda lib, D: D.MultivariateNormal(lib.zeros(2)),
    "mvn-loc": lambda lib, D: D.MultivariateNormal(lib.tensor(0.0), lib.eye(2)),
    "mvn-cov-dim": lambda lib, D: D.MultivariateNormal(lib.zeros(2), lib.ones(2)),
    "mvn-pd": lambda lib, D: D.MultivariateNormal(lib.zeros(2), -lib.eye(2)),
    "mvn-tril": lambda lib, D: D.MultivariateNormal(lib.zeros(2), scale_tril=lib.ones(2, 2)),
    "dirichlet-dim": lambda lib, D: D.Dirichlet(lib.tensor(1.0)),
    "beta": lambda lib, D: D.Beta(lib.tensor([1.0]), lib.tensor([0.0])),
    "gamma": lambda lib, D: D.Gamma(lib.tensor([1.0]), lib.tensor([0.0])),
    "poisson-entropy": lambda lib, D: D.Poisson(lib.tensor([1.0])).entropy(),
    "bernoulli-rsample": lambda lib, D: D.Bernoulli(lib.tensor([0.5])).rsample(),
    "kl-missing": lambda lib, D: D.kl_divergence(D.Uniform(0.0, 1.0), D.Poisson(1.0)),
    "kl-families": lambda lib, D: D.kl_divergence(D.Poisson(1.0), D.Normal(0.0, 1.0)),
    "kl-mvn-shapes": lambda lib, D: D.kl_divergence(
        D.MultivariateNormal(lib.zeros(2), lib.eye(2)),
        D.MultivariateNormal(lib.zeros(3), lib.eye(3)),
    ),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    ours = _error(lambda: ERRORS[case](tgt, TD))
    theirs = _error(lambda: ERRORS[case](torch, torch.distributions))
    assert theirs is not None
    assert ours == theirs


def test_validate_args_can_be_switched_off():
    d = TD.Normal(tgt.tensor([0.0]), tgt.tensor([-1.0]), validate_args=False)
    with np.errstate(invalid="ignore"):
        assert np.isnan(d.log_prob(tgt.tensor([0.0])).numpy()).all()
    TD.Distribution.set_default_validate_args(False)
    try:
        TD.Exponential(tgt.tensor(-1.0))
    finally:
        TD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="Expected parameter rate"):
        TD.Exponential(tgt.tensor(-1.0))


# -- KL ----------------------------------------------------------------------------------------

FAMILIES = {
    "Normal": lambda lib, D, x, y: D.Normal(x - 1, y),
    "Laplace": lambda lib, D, x, y: D.Laplace(x, y * 2),
    "Uniform": lambda lib, D, x, y: D.Uniform(x * 0.1, x * 0.1 + y),
    "Exponential": lambda lib, D, x, y: D.Exponential(y),
    "Gamma": lambda lib, D, x, y: D.Gamma(y, x),
    "Beta": lambda lib, D, x, y: D.Beta(x, y),
    "Dirichlet": lambda lib, D, x, y: D.Dirichlet(lib.stack([x, y, x * y], -1)),
    "Poisson": lambda lib, D, x, y: D.Poisson(x * y),
    "Bernoulli": lambda lib, D, x, y: D.Bernoulli(probs=x / (x + y)),
    "Categorical": lambda lib, D, x, y: D.Categorical(logits=lib.stack([x, y, -x], -1)),
    "MultivariateNormal": lambda lib, D, x, y: D.MultivariateNormal(
        lib.stack([x, y], -1), scale_tril=lib.tensor(TRIL[0, :2, :2], dtype=x.dtype) * y[0]
    ),
}
OURS = {getattr(TD, n) for n in FAMILIES}
TORCH_PAIRS = sorted(
    (p.__name__, q.__name__)
    for p, q in torch.distributions.kl._KL_REGISTRY
    if p.__name__ in FAMILIES and q.__name__ in FAMILIES
)


def test_registered_pairs_are_torchs():
    ours = sorted((p.__name__, q.__name__) for p, q in tkl._KL_REGISTRY if p in OURS)
    assert ours == TORCH_PAIRS


@pytest.mark.parametrize("pair", TORCH_PAIRS, ids="-".join)
def test_kl_divergence_matches_torch(pair):
    x0, y0 = np.array([0.3, 0.6, 0.9]), np.array([0.7, 1.2, 2.0])
    results = []
    for lib, D in ((tgt, TD), (torch, torch.distributions)):
        x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(y0, dtype=lib.float64, requires_grad=True)
        u = lib.tensor(y0[::-1].copy(), dtype=lib.float64, requires_grad=True)
        p = FAMILIES[pair[0]](lib, D, x, y)
        q = FAMILIES[pair[1]](lib, D, y, u)
        kl = D.kl_divergence(p, q)
        finite = np.isfinite(kl.detach().numpy()).all()
        if kl.requires_grad and finite:
            kl.sum().backward()
        grads = [None if t.grad is None else t.grad.numpy() for t in (x, y, u)]
        results.append((kl.detach().numpy(), grads))
    _assert_same(*results, 1e-7)  # digamma and trigamma: SciPy vs ATen, ~1e-8


def test_register_kl_dispatch_and_ambiguity():
    class MyNormal(TD.Normal):
        pass

    @register_kl(MyNormal, TD.Normal)
    def _mine(p, q):
        return tgt.tensor(42.0)

    try:
        assert kl_divergence(MyNormal(0.0, 1.0), TD.Normal(0.0, 1.0)).item() == 42.0
        assert kl_divergence(TD.Normal(0.0, 1.0), MyNormal(0.0, 2.0)).item() != 42.0
        register_kl(TD.Normal, MyNormal)(lambda p, q: tgt.tensor(7.0))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0))
        assert "Ambiguous kl_divergence(MyNormal, MyNormal)" in str(caught[0].message)
    finally:
        for key in [k for k in tkl._KL_REGISTRY if MyNormal in k]:
            del tkl._KL_REGISTRY[key]
        tkl._KL_MEMOIZE.clear()


# -- sampling ----------------------------------------------------------------------------------

N = 10_000
SAMPLED = {
    "Normal": lambda: TD.Normal(tgt.tensor([0.5, -1.0]), tgt.tensor([1.0, 3.0])),
    "Uniform": lambda: TD.Uniform(tgt.tensor([0.0, -2.0]), tgt.tensor([1.0, 5.0])),
    "Laplace": lambda: TD.Laplace(tgt.tensor([0.5, -1.0]), tgt.tensor([1.0, 2.0])),
    "Exponential": lambda: TD.Exponential(tgt.tensor([0.5, 3.0])),
    "Gamma": lambda: TD.Gamma(tgt.tensor([0.3, 4.0]), tgt.tensor([1.0, 2.0])),
    "Beta": lambda: TD.Beta(tgt.tensor([0.5, 3.0]), tgt.tensor([2.0, 1.5])),
    "Dirichlet": lambda: TD.Dirichlet(tgt.tensor([0.5, 2.0, 3.0])),
    "Poisson": lambda: TD.Poisson(tgt.tensor([0.5, 7.0])),
    "Bernoulli": lambda: TD.Bernoulli(logits=tgt.tensor([-1.0, 2.0])),
    "Categorical": lambda: TD.Categorical(probs=tgt.tensor([[0.2, 0.3, 0.5], [0.9, 0.0, 0.1]])),
    "MVN": lambda: TD.MultivariateNormal(
        tgt.tensor([1.0, -1.0]), tgt.tensor([[2.0, 0.8], [0.8, 1.0]])
    ),
}


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_sample_moments_and_seeding(name):
    d = SAMPLED[name]()
    tgt.manual_seed(5)
    x = d.sample((N,)).numpy().astype(np.float64)
    tgt.manual_seed(5)
    np.testing.assert_array_equal(d.sample((N,)).numpy(), x)  # same seed, same draws
    assert not d.sample((2,)).requires_grad
    if name == "Categorical":
        freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(freq, d.probs.numpy(), atol=0.02)
        return
    mean, var = d.mean.numpy(), d.variance.numpy()
    np.testing.assert_allclose(x.mean(0), mean, atol=5 * np.sqrt(var / N).max())
    np.testing.assert_allclose(x.var(0), var, rtol=0.1)
    if name == "MVN":
        np.testing.assert_allclose(np.cov(x.T), d.covariance_matrix.numpy(), atol=0.1)
    assert d.support.check(tgt.tensor(x)).all()


RSAMPLED = {
    # name: (constructor of the parameter leaves, the expectation of the sample as a function)
    "Normal": (lambda m, s: TD.Normal(m, s), lambda m, s: m),
    "Uniform": (lambda a, b: TD.Uniform(a, a + b), lambda a, b: a + b / 2),
    "Laplace": (lambda m, s: TD.Laplace(m, s), lambda m, s: m),
    "Exponential": (lambda r, _: TD.Exponential(r), lambda r, _: 1 / r),
    "Gamma": (lambda c, r: TD.Gamma(c, r), lambda c, r: c / r),
    "Beta": (lambda a, b: TD.Beta(a, b), lambda a, b: a / (a + b)),
}


@pytest.mark.parametrize("name", sorted(RSAMPLED))
def test_rsample_gradient_is_the_gradient_of_the_expectation(name):
    """E[d x / d theta] = d E[x] / d theta for a reparameterised x; and |x| checks the
    dependence on the scale too, where the mean alone has none."""
    make, expectation = RSAMPLED[name]
    p = tgt.tensor([0.8, 2.0], dtype=tgt.float64, requires_grad=True)
    q = tgt.tensor([1.5, 0.7], dtype=tgt.float64, requires_grad=True)
    tgt.manual_seed(11)
    x = make(p, q).rsample((N,))
    assert x.requires_grad
    (x.mean(0).sum()).backward()
    p2 = tgt.tensor([0.8, 2.0], dtype=tgt.float64, requires_grad=True)
    q2 = tgt.tensor([1.5, 0.7], dtype=tgt.float64, requires_grad=True)
    expectation(p2, q2).sum().backward()
    for got, want in ((p.grad, p2.grad), (q.grad, q2.grad)):
        want = np.zeros(2) if want is None else want.numpy()
        got = np.zeros(2) if got is None else got.numpy()
        np.testing.assert_allclose(got, want, atol=0.06, rtol=0.06)


def test_normal_rsample_scale_gradient_is_the_noise():
    s = tgt.tensor(2.0, dtype=tgt.float64, requires_grad=True)
    tgt.manual_seed(3)
    x = TD.Normal(tgt.tensor(1.0, dtype=tgt.float64), s).rsample((N,))
    x.abs().mean().backward()  # x = 1 + s z, so d|x|/ds = sign(x) z per draw
    z = (x.detach().numpy() - 1) / 2
    np.testing.assert_allclose(s.grad.numpy(), np.mean(np.sign(1 + 2 * z) * z), rtol=1e-12)


def test_dirichlet_rsample_gradient_matches_the_mean():
    c = tgt.tensor([0.7, 1.5, 3.0], dtype=tgt.float64, requires_grad=True)
    tgt.manual_seed(2)
    x = TD.Dirichlet(c).rsample((N,))
    np.testing.assert_allclose(x.sum(-1).detach().numpy(), 1.0, rtol=1e-12)
    weights = tgt.tensor([1.0, -2.0, 0.5], dtype=tgt.float64)
    (x.mean(0) * weights).sum().backward()
    c2 = tgt.tensor([0.7, 1.5, 3.0], dtype=tgt.float64, requires_grad=True)
    ((c2 / c2.sum()) * weights).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), c2.grad.numpy(), atol=0.03)


def test_standard_gamma_grad_matches_torch():
    a = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 100.0, 0.8, 3.0])
    x = np.array([1e-5, 0.2, 1.0, 3.0, 8.0, 110.0, 5.0, 0.01])
    theirs = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    # PyTorch's series and asymptotic forms are good to ~1e-4; the difference quotient to ~1e-9
    np.testing.assert_allclose(_standard_gamma_grad(x, a), theirs, rtol=2e-4)


def test_gamma_rsample_is_once_differentiable():
    c = tgt.tensor([1.5], dtype=tgt.float64, requires_grad=True)
    x = TD.Gamma(c, 1.0).rsample()
    (g,) = tgt.autograd.grad(x.sum(), c, create_graph=True)
    assert not g.requires_grad


# importing the subpackage sets the attribute already; being listed in `__all__` is the wiring
@pytest.mark.skipif("distributions" not in tgt.__all__, reason="torch.distributions needs SciPy")
def test_wired_as_torch_distributions():
    assert tgt.distributions is TD
    assert tgt.distributions.Normal is TD.Normal
    assert tgt.distributions.kl_divergence is kl_divergence
    assert tgt.distributions.kl.kl_divergence is kl_divergence
