"""Programs written for HIPS autograd's `autograd.scipy` (after its examples: a Gaussian
mixture with logsumexp, black-box variational inference with norm.logpdf, a Gaussian process
with multivariate_normal.logpdf) run with tracegrad.scipy in its place: the same code, given
the modules of either library, has the same values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
import tracegrad.scipy.special as tsp_special
import tracegrad.scipy.stats as tsp_stats

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
asp_special = pytest.importorskip("autograd.scipy.special")
asp_stats = pytest.importorskip("autograd.scipy.stats")

TRACEGRAD = (tnp, tsp_special, tsp_stats, tg.grad)
AUTOGRAD = (anp, asp_special, asp_stats, autograd.grad)


_rs = np.random.RandomState(0)
MIXTURE_DATA = np.concatenate([_rs.randn(40) * 0.5 - 2.0, _rs.randn(60) * 0.8 + 1.5])


def mixture_program(np, special, stats, grad):
    """autograd's examples/gmm.py, one-dimensional: the log likelihood of a Gaussian
    mixture, logsumexp over the components of log weight + norm.logpdf."""
    data = MIXTURE_DATA

    def log_likelihood(params):
        log_weights = params["log_weights"] - special.logsumexp(params["log_weights"])
        scales = np.exp(params["log_scales"])
        logp = stats.norm.logpdf(data[:, None], params["means"], scales) + log_weights
        return np.sum(special.logsumexp(logp, axis=1))

    params = {
        "log_weights": np.array([0.1, -0.3, 0.2]),
        "means": np.array([-1.5, 0.0, 1.0]),
        "log_scales": np.array([-0.5, 0.0, 0.3]),
    }
    return log_likelihood(params), grad(log_likelihood)(params)


def vi_program(np, special, stats, grad):
    """autograd's examples/black_box_svi.py: the negative ELBO of a diagonal Gaussian
    approximation to a funnel-shaped target, with fixed reparametrization noise."""

    def log_density(x):
        mu, log_sigma = x[:, 0], x[:, 1]
        sigma_density = stats.norm.logpdf(log_sigma, 0, 1.35)
        mu_density = stats.norm.logpdf(mu, 0, np.exp(log_sigma))
        return sigma_density + mu_density

    noise = np.array([[0.3, -1.1], [1.7, 0.2], [-0.4, 0.9], [-1.3, -0.6], [0.8, 1.4]])

    def objective(params):
        mean, log_std = params[:2], params[2:]
        samples = noise * np.exp(log_std) + mean
        entropy = 0.5 * 2 * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)
        return -(entropy + np.mean(log_density(samples)))

    params = np.array([-0.5, 0.3, -1.0, -0.7])
    return objective(params), grad(objective)(params)


def gp_program(np, special, stats, grad):
    """autograd's examples/gaussian_process.py: the log marginal likelihood of a Gaussian
    process with a squared-exponential kernel, in its log hyperparameters."""
    x = np.linspace(-2.0, 2.0, 12)
    y = np.sin(2.0 * x) + 0.1 * np.cos(7.0 * x)

    def rbf(params, a, b):
        output_scale, length_scale = np.exp(params[0]), np.exp(params[1])
        diffs = (a[:, None] - b[None, :]) / length_scale
        return output_scale * np.exp(-0.5 * diffs**2)

    def log_marginal_likelihood(params):
        noise_scale = np.exp(params[2]) + 0.0001
        cov = rbf(params, x, x) + noise_scale * np.eye(len(x))
        prior_mean = params[3] * np.ones(len(x))
        return stats.multivariate_normal.logpdf(y, prior_mean, cov)

    params = np.array([0.2, -0.5, -2.0, 0.1])
    return log_marginal_likelihood(params), grad(log_marginal_likelihood)(params)


@pytest.mark.parametrize("program", [mixture_program, vi_program, gp_program])
def test_an_autograd_scipy_program_runs_with_tracegrad_scipy(program):
    value, gradient = program(*TRACEGRAD)
    want_value, want_gradient = program(*AUTOGRAD)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    tg.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12),
                gradient, want_gradient)  # fmt: skip
