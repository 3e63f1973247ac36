"""The distribution functions scipy.stats computes with, as primitives: Student's t, chi-square
and Poisson cdfs (stdtr, chdtr, pdtr, ...), the private Boost ufuncs of beta, binom, nbinom and
cauchy, truncnorm's log Gaussian mass and the von Mises cdf and ppf. Derivatives in the
continuous arguments are densities, written with tracegrad's operations; those with no
closed form (in df, a shape parameter, kappa) are refused, and counts have zero derivatives.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.special._base import (
    _IN,
    _LOG_SQRT_2PI,
    _OUT,
    ZERO,
    Refused,
    _greater_equal,
    _private,
    _scaled_exp,
    _u,
    exp,
    floor,
    log,
    log1p,
    special,
    where,
)
from tracegrad.primitives.special.bessel_functions import i0e
from tracegrad.primitives.special.elementary import cosm1, xlog1py, xlogy
from tracegrad.primitives.special.gamma_functions import (
    _NO_A,
    _NO_B,
    _gammainc_dx,
    betaln,
    gammaln,
    psi,
)


def _t_logpdf(t, df):
    """log of Student's t density (the derivative of stdtr in t)."""
    half = (df + 1.0) * 0.5
    return gammaln(half) - gammaln(df * 0.5) - 0.5 * log(df * math.pi) - half * log1p(t * t / df)


def _chdtr_dx(v, x):
    # chdtr(v, x) = gammainc(v/2, x/2) for x >= 0 and 0 below
    nonneg = _greater_equal(x, 0)
    xs = where(nonneg, x, 1.0)
    return where(nonneg, 0.5 * _gammainc_dx(v * 0.5, xs * 0.5), 0.0)


def _beta_pdf_dx(x, a, b, out):
    lb = betaln(a, b)
    return _scaled_exp(a - 1.0, xlogy(a - 2.0, x) + xlog1py(b - 1.0, -x) - lb) - _scaled_exp(
        b - 1.0, xlogy(a - 1.0, x) + xlog1py(b - 2.0, -x) - lb
    )


def _binom_pmf_dp(k, n, p, out):
    lc = gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)
    return _scaled_exp(k, lc + xlogy(k - 1.0, p) + xlog1py(n - k, -p)) - _scaled_exp(
        n - k, lc + xlogy(k, p) + xlog1py(n - k - 1.0, -p)
    )


def _binom_cdf_dp(k, n, p):
    # cdf(k) = betainc(n - k, k + 1, 1 - p) at k = floor(k)
    k = floor(k)
    return ew.negative(exp(xlogy(k, p) + xlog1py(n - k - 1.0, -p) - betaln(n - k, k + 1.0)))


def _nbinom_pmf_dp(k, n, p, out):
    lc = gammaln(n + k) - gammaln(k + 1.0) - gammaln(n)
    return _scaled_exp(n, lc + xlogy(n - 1.0, p) + xlog1py(k, -p)) - _scaled_exp(
        k, lc + xlogy(n, p) + xlog1py(k - 1.0, -p)
    )


def _nbinom_cdf_dp(k, n, p):
    # cdf(k) = betainc(n, k + 1, p) at k = floor(k)
    k = floor(k)
    return exp(xlogy(n - 1.0, p) + xlog1py(k, -p) - betaln(n, k + 1.0))


def _pdtr_dm(k, m):
    # pdtr(k, m) = gammaincc(floor(k) + 1, m): minus the Poisson pmf at floor(k)
    k = floor(k)
    return ew.negative(exp(xlogy(k, m) - m - gammaln(k + 1.0)))


def _von_mises_pdf(x, kappa):
    return exp(kappa * cosm1(x)) / (2 * math.pi * i0e(kappa))


def _norm_pdf_over_mass(z, out):
    """phi(z) / exp(out): the derivative of a log Gaussian mass in an end point."""
    return exp(-0.5 * (z * z) - _LOG_SQRT_2PI - out)


_NO_DF = Refused("the derivative in df (the degrees of freedom) has no closed form")
_NO_N = Refused("the derivative in n, the number of trials (a count), is not defined")
_NO_KAPPA = Refused("the derivative in kappa has no closed form")


# fmt: off
stdtr_p     = _u("stdtr",     _NO_DF, lambda df, t, out: exp(_t_logpdf(t, df)), reads=_IN)
stdtrit_p   = _u("stdtrit",   _NO_DF, lambda df, p, out: exp(ew.negative(_t_logpdf(out, df))),
                 reads=_OUT | _IN)
chdtr_p     = _u("chdtr",     _NO_DF, lambda v, x, out: _chdtr_dx(v, x), reads=_IN)
chdtrc_p    = _u("chdtrc",    _NO_DF, lambda v, x, out: ew.negative(_chdtr_dx(v, x)), reads=_IN)
pdtr_p      = _u("pdtr",      ZERO, lambda k, m, out: _pdtr_dm(k, m), reads=_IN)
pdtrc_p     = _u("pdtrc",     ZERO, lambda k, m, out: ew.negative(_pdtr_dm(k, m)), reads=_IN)
# poisson's ppf starts from ceil(pdtrik(q, mu)), an integer: one step, not differentiable
pdtrik_ceil_p = special("scipy.special.pdtrik_ceil", "scipy.special:pdtrik", ZERO, ZERO, ceil=True,
                        label="poisson.ppf")
# the private ufuncs scipy.stats computes with (Boost's beta, binomial and negative binomial)
beta_pdf_p  = _private("_beta_pdf", _beta_pdf_dx,
                       lambda x, a, b, out: xlogy(out, x) + out * (psi(a + b) - psi(a)),
                       lambda x, a, b, out: xlog1py(out, -x) + out * (psi(a + b) - psi(b)),
                       used_by="beta.pdf")
beta_ppf_p  = _private("_beta_ppf", lambda q, a, b, out: 1.0 / beta_pdf(out, a, b), _NO_A, _NO_B,
                       used_by="beta.ppf")
binom_pmf_p = _private("_binom_pmf", ZERO, _NO_N, _binom_pmf_dp, reads=_IN, used_by="binom.pmf")
binom_cdf_p = _private("_binom_cdf", ZERO, _NO_N, lambda k, n, p, out: _binom_cdf_dp(k, n, p),
                       reads=_IN, used_by="binom.cdf")
binom_sf_p  = _private("_binom_sf", ZERO, _NO_N,
                       lambda k, n, p, out: ew.negative(_binom_cdf_dp(k, n, p)), reads=_IN,
                       used_by="binom.sf")
binom_ppf_p = _private("_binom_ppf", ZERO, ZERO, ZERO, used_by="binom.ppf")
nbinom_pmf_p = _private("_nbinom_pmf", ZERO,
                        lambda k, n, p, out: out * (psi(n + k) - psi(n)) + xlogy(out, p),
                        _nbinom_pmf_dp, used_by="nbinom.pmf")
nbinom_cdf_p = _private("_nbinom_cdf", ZERO, _NO_A,
                        lambda k, n, p, out: _nbinom_cdf_dp(k, n, p), reads=_IN,
                        used_by="nbinom.cdf")
nbinom_sf_p = _private("_nbinom_sf", ZERO, _NO_A,
                       lambda k, n, p, out: ew.negative(_nbinom_cdf_dp(k, n, p)), reads=_IN,
                       used_by="nbinom.sf")
nbinom_ppf_p = _private("_nbinom_ppf", ZERO, ZERO, ZERO, used_by="nbinom.ppf")
cauchy_ppf_p = _private("_cauchy_ppf",
                        lambda q, loc, s, out: math.pi * s * (1.0 + ((out - loc) / s) ** 2),
                        lambda q, loc, s, out: 1.0,
                        lambda q, loc, s, out: (out - loc) / s, used_by="cauchy.ppf")
# scipy.stats' own elementwise functions (not ufuncs; always float64)
log_gauss_mass_p = special(
    "scipy.stats._log_gauss_mass", "scipy.stats._continuous_distns:_log_gauss_mass",
    lambda a, b, out: ew.negative(_norm_pdf_over_mass(a, out)),
    lambda a, b, out: _norm_pdf_over_mass(b, out),
    dtype=np.float64, label="truncnorm (scipy.stats._continuous_distns._log_gauss_mass)")
von_mises_cdf_p = special(
    "scipy.stats.von_mises_cdf", "scipy.stats._stats:von_mises_cdf",
    _NO_KAPPA, lambda kappa, x, out: _von_mises_pdf(x, kappa), reads=_IN,
    dtype=np.float64, label="vonmises.cdf")
vonmises_ppf_p = special(
    "scipy.stats.vonmises_ppf", "scipy.stats:vonmises._ppf",
    lambda q, kappa, out: 1.0 / _von_mises_pdf(out, kappa), _NO_KAPPA,
    dtype=np.float64, label="vonmises.ppf")
# fmt: on


PRIMITIVES = (
    stdtr_p, stdtrit_p, chdtr_p, chdtrc_p, pdtr_p, pdtrc_p, pdtrik_ceil_p, beta_pdf_p, beta_ppf_p,
    binom_pmf_p, binom_cdf_p, binom_sf_p, binom_ppf_p, nbinom_pmf_p, nbinom_cdf_p, nbinom_sf_p,
    nbinom_ppf_p, cauchy_ppf_p, log_gauss_mass_p, von_mises_cdf_p, vonmises_ppf_p,
)  # fmt: skip


def beta_pdf(x, a, b):
    return bind(beta_pdf_p, x, a, b)
