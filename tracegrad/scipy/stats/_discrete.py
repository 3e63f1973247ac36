"""Discrete distributions: `poisson`, `binom`, `bernoulli`, `nbinom` and `geom`, with SciPy's
formulas (its private Boost functions for binom's and nbinom's pmf, cdf and ppf).

Differentiable in their continuous parameters (mu, p, and nbinom's n in its pmf). binom's
number of trials n: its pmf, cdf and sf refuse a derivative; its logpmf is SciPy's gammaln
formula, differentiated as written (the formula's continuous extension in n, as JAX and HIPS
autograd give). In k, a count, the pmfs and cdfs are steps (zero derivative; logpmf of a
non-integer k follows the formula too). The ppfs are integers: their derivative is zero.
"""

from __future__ import annotations

import tracegrad.numpy as tnp
import tracegrad.scipy.special as sc
from tracegrad.core import bind
from tracegrad.primitives import special as sp
from tracegrad.primitives.elementwise import stop_gradient
from tracegrad.scipy.stats._distribution import rv_discrete


def _binom_logpmf(x, n, p):
    k = tnp.floor(x)
    combiln = sc.gammaln(n + 1) - (sc.gammaln(k + 1) + sc.gammaln(n - k + 1))
    return combiln + sc.xlogy(k, p) + sc.xlog1py(n - k, -p)


class poisson_gen(rv_discrete):  # noqa: N801 - SciPy's names
    """The Poisson distribution with mean `mu`."""

    name = "poisson"
    shapes = ("mu",)
    safe = (1.0,)

    def _argcheck(self, mu):
        return mu >= 0

    def _logpmf(self, k, mu):
        return sc.xlogy(k, mu) - sc.gammaln(k + 1) - mu

    def _cdf(self, x, mu):
        return sc.pdtr(tnp.floor(x), mu)

    def _sf(self, x, mu):
        return sc.pdtrc(tnp.floor(x), mu)

    def _ppf(self, q, mu):
        # an integer: no derivative flows (SciPy's inverse in k has none in closed form)
        q, mu = stop_gradient(q), stop_gradient(mu)
        vals = bind(sp.pdtrik_ceil_p, q, mu)
        vals1 = tnp.maximum(vals - 1, 0)
        temp = sc.pdtr(vals1, mu)
        return tnp.where(temp >= q, vals1, vals)


class binom_gen(rv_discrete):  # noqa: N801
    """The binomial distribution: `n` trials (an integer) with success probability `p`."""

    name = "binom"
    shapes = ("n", "p")
    safe = (1.0, 0.5)

    def _argcheck(self, n, p):
        integral = n == tnp.round(n)
        return tnp.logical_and(tnp.logical_and(tnp.logical_and(n >= 0, integral), p >= 0), p <= 1)

    def _get_support(self, n, p):
        return self.a, n

    def _logpmf(self, x, n, p):
        return _binom_logpmf(x, n, p)

    def _pmf(self, x, n, p):
        return bind(sp.binom_pmf_p, x, n, p)

    def _cdf(self, x, n, p):
        return bind(sp.binom_cdf_p, tnp.floor(x), n, p)

    def _sf(self, x, n, p):
        return bind(sp.binom_sf_p, tnp.floor(x), n, p)

    def _ppf(self, q, n, p):
        return bind(sp.binom_ppf_p, q, n, p)


class bernoulli_gen(binom_gen):  # noqa: N801
    """The Bernoulli distribution: 1 with probability `p`, else 0."""

    name = "bernoulli"
    shapes = ("p",)
    safe = (0.5,)
    b = 1

    def _argcheck(self, p):
        return tnp.logical_and(p >= 0, p <= 1)

    def _get_support(self, p):
        return self.a, self.b

    def _logpmf(self, x, p):
        return _binom_logpmf(x, 1, p)

    def _pmf(self, x, p):
        return bind(sp.binom_pmf_p, x, 1, p)

    def _cdf(self, x, p):
        return bind(sp.binom_cdf_p, tnp.floor(x), 1, p)

    def _sf(self, x, p):
        return bind(sp.binom_sf_p, tnp.floor(x), 1, p)

    def _ppf(self, q, p):
        return bind(sp.binom_ppf_p, q, 1, p)


class nbinom_gen(rv_discrete):  # noqa: N801
    """The negative binomial distribution: failures before the `n`-th success, success
    probability `p`."""

    name = "nbinom"
    shapes = ("n", "p")
    safe = (1.0, 0.5)

    def _argcheck(self, n, p):
        return tnp.logical_and(tnp.logical_and(n > 0, p > 0), p <= 1)

    def _pmf(self, x, n, p):
        return bind(sp.nbinom_pmf_p, x, n, p)

    def _logpmf(self, x, n, p):
        coeff = sc.gammaln(n + x) - sc.gammaln(x + 1) - sc.gammaln(n)
        return coeff + n * tnp.log(p) + sc.xlog1py(x, -p)

    def _cdf(self, x, n, p):
        return bind(sp.nbinom_cdf_p, tnp.floor(x), n, p)

    def _logcdf(self, x, n, p):
        k = tnp.floor(x)
        cdf = self._cdf(k, n, p)
        upper = cdf > 0.5
        return tnp.where(
            upper,
            tnp.log1p(-sc.betainc(k + 1, n, 1 - p)),
            tnp.log(tnp.where(upper, 0.5, cdf)),
        )

    def _sf(self, x, n, p):
        return bind(sp.nbinom_sf_p, tnp.floor(x), n, p)

    def _ppf(self, q, n, p):
        return bind(sp.nbinom_ppf_p, q, n, p)


class geom_gen(rv_discrete):  # noqa: N801
    """The geometric distribution: trials up to the first success (k >= 1)."""

    name = "geom"
    shapes = ("p",)
    safe = (0.5,)
    a = 1

    def _argcheck(self, p):
        return tnp.logical_and(p <= 1, p > 0)

    def _pmf(self, k, p):
        return tnp.power(1 - p, k - 1) * p

    def _logpmf(self, k, p):
        return sc.xlog1py(k - 1, -p) + tnp.log(p)

    def _cdf(self, x, p):
        k = tnp.floor(x)
        return -tnp.expm1(tnp.log1p(-p) * k)

    def _sf(self, x, p):
        return tnp.exp(self._logsf(x, p))

    def _logsf(self, x, p):
        k = tnp.floor(x)
        return k * tnp.log1p(-p)

    def _ppf(self, q, p):
        vals = tnp.ceil(tnp.log1p(-q) / tnp.log1p(-p))
        temp = self._cdf(vals - 1, p)
        return tnp.where(tnp.logical_and(temp >= q, vals > 0), vals - 1, vals)


poisson = poisson_gen()
binom = binom_gen()
bernoulli = bernoulli_gen()
nbinom = nbinom_gen()
geom = geom_gen()
