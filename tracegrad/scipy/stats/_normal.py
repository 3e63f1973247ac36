"""The normal family: `norm`, `lognorm` and `truncnorm`, with SciPy's formulas.

Each standard form is SciPy's expression in SciPy's order (so the values are SciPy's bits);
truncnorm's log Gaussian mass is SciPy's own function, one primitive whose derivative is the
density at the end points over the mass.
"""

from __future__ import annotations

import math

import numpy as np

import tracegrad.numpy as tnp
import tracegrad.scipy.special as sc
from tracegrad.core import bind
from tracegrad.primitives import special as sp
from tracegrad.scipy.stats._distribution import rv_continuous

_norm_pdf_C = np.sqrt(2 * np.pi)
_norm_pdf_logC = np.log(_norm_pdf_C)


def _norm_pdf(x):
    return tnp.exp(-tnp.power(x, 2) / 2.0) / _norm_pdf_C


def _norm_logpdf(x):
    return -tnp.power(x, 2) / 2.0 - _norm_pdf_logC


class norm_gen(rv_continuous):  # noqa: N801 - SciPy's names
    """The normal distribution: `loc` is the mean, `scale` the standard deviation."""

    name = "norm"
    open_everywhere = True

    def _pdf(self, x):
        return _norm_pdf(x)

    def _logpdf(self, x):
        return _norm_logpdf(x)

    def _cdf(self, x):
        return sc.ndtr(x)

    def _logcdf(self, x):
        return sc.log_ndtr(x)

    def _sf(self, x):
        return sc.ndtr(-x)

    def _logsf(self, x):
        return sc.log_ndtr(-x)

    def _ppf(self, q):
        return sc.ndtri(q)


class lognorm_gen(rv_continuous):  # noqa: N801
    """The log-normal distribution with shape `s` (the log's standard deviation)."""

    name = "lognorm"
    shapes = ("s",)
    safe = (1.0,)
    a = 0.0

    def _logpdf(self, x, s):
        # SciPy's apply_where(x != 0, ..., fill_value=-inf), on a stand-in x where x == 0
        nonzero = x != 0
        xs = tnp.where(nonzero, x, 1.0)
        value = -tnp.power(tnp.log(xs), 2) / (2 * tnp.power(s, 2)) - tnp.log(
            s * xs * np.sqrt(2 * np.pi)
        )
        return tnp.where(nonzero, value, -math.inf)

    def _cdf(self, x, s):
        return sc.ndtr(tnp.log(x) / s)

    def _logcdf(self, x, s):
        return sc.log_ndtr(tnp.log(x) / s)

    def _sf(self, x, s):
        return sc.ndtr(-(tnp.log(x) / s))

    def _logsf(self, x, s):
        return sc.log_ndtr(-(tnp.log(x) / s))

    def _ppf(self, q, s):
        return tnp.exp(s * sc.ndtri(q))


def _log_gauss_mass(a, b):
    """log(ndtr(b) - ndtr(a)), SciPy's own function (stable in both tails)."""
    return bind(sp.log_gauss_mass_p, a, b)


def _log_sum(log_p, log_q):
    return sc.logsumexp(tnp.stack(tnp.broadcast_arrays(log_p, log_q)), axis=0)


class truncnorm_gen(rv_continuous):  # noqa: N801
    """The standard normal truncated to [a, b] (in standard units), then shifted and scaled."""

    name = "truncnorm"
    shapes = ("a", "b")
    safe = (-1.0, 1.0)

    def _argcheck(self, a, b):
        return a < b

    def _get_support(self, a, b):
        return a, b

    def _inside(self, a, b):
        # a point of [a, b]: the middle, or one step inside a half-infinite end
        lo, hi = tnp.isfinite(a), tnp.isfinite(b)
        a0, b0 = tnp.where(lo, a, 0.0), tnp.where(hi, b, 0.0)
        middle = (a0 + b0) / 2
        return tnp.where(lo, tnp.where(hi, middle, a0 + 1.0), tnp.where(hi, b0 - 1.0, 0.0))

    def _logpdf(self, x, a, b):
        return _norm_logpdf(x) - _log_gauss_mass(a, b)

    def _logcdf(self, x, a, b):
        # SciPy's: the mass below x, or (avoiding cancellation) log1p of minus the mass above
        logcdf = _log_gauss_mass(a, x) - _log_gauss_mass(a, b)
        logsf = _log_gauss_mass(x, b) - _log_gauss_mass(a, b)
        return tnp.where(logcdf > -0.1, tnp.log1p(-tnp.exp(logsf)), logcdf)

    def _cdf(self, x, a, b):
        return tnp.exp(self._logcdf(x, a, b))

    def _logsf(self, x, a, b):
        logsf = _log_gauss_mass(x, b) - _log_gauss_mass(a, b)
        logcdf = _log_gauss_mass(a, x) - _log_gauss_mass(a, b)
        return tnp.where(logsf > -0.1, tnp.log1p(-tnp.exp(logcdf)), logsf)

    def _sf(self, x, a, b):
        return tnp.exp(self._logsf(x, a, b))

    def _ppf(self, q, a, b):
        mass = _log_gauss_mass(a, b)
        left = sc.ndtri_exp(_log_sum(sc.log_ndtr(a), tnp.log(q) + mass))
        right = -sc.ndtri_exp(_log_sum(sc.log_ndtr(-b), tnp.log1p(-q) + mass))
        return tnp.where(a < 0, left, right)


norm = norm_gen()
lognorm = lognorm_gen()
truncnorm = truncnorm_gen()
