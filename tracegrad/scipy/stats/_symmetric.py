"""Symmetric distributions on the whole line: `t`, `cauchy`, `laplace`, `logistic` and
`vonmises`, with SciPy's formulas.

SciPy's `apply_where` and `np.where` branches become `where` over both branches, each fed a
stand-in where it is not taken, so the branch not taken can neither overflow nor put a NaN
into a derivative. t's cdf and vonmises' cdf and ppf are SciPy's functions, differentiable in
x but not in df or kappa (no closed form: asking raises).
"""

from __future__ import annotations

import math

import numpy as np

import tracegrad.numpy as tnp
import tracegrad.scipy.special as sc
from tracegrad.core import bind
from tracegrad.primitives import special as sp
from tracegrad.scipy.stats._distribution import rv_continuous
from tracegrad.scipy.stats._normal import _norm_logpdf, _norm_pdf

_LOG_PI = np.log(np.pi)


class t_gen(rv_continuous):  # noqa: N801 - SciPy's names
    """Student's t distribution with `df` degrees of freedom (df = inf is the normal)."""

    name = "t"
    shapes = ("df",)
    safe = (1.0,)
    open_everywhere = True

    def _pdf(self, x, df):
        normal = df == np.inf
        return tnp.where(normal, _norm_pdf(x), tnp.exp(self._logpdf(x, tnp.where(normal, 1.0, df))))

    def _logpdf(self, x, df):
        normal = df == np.inf
        dfs = tnp.where(normal, 1.0, df)
        value = (
            tnp.log(sc.poch(0.5 * dfs, 0.5))
            - 0.5 * (tnp.log(dfs) + np.log(np.pi))
            - (dfs + 1) / 2 * tnp.log1p(x * x / dfs)
        )
        return tnp.where(normal, _norm_logpdf(x), value)

    def _cdf(self, x, df):
        return sc.stdtr(df, x)

    def _sf(self, x, df):
        return sc.stdtr(df, -x)

    def _ppf(self, q, df):
        return sc.stdtrit(df, q)


class cauchy_gen(rv_continuous):  # noqa: N801
    """The Cauchy distribution."""

    name = "cauchy"
    open_everywhere = True

    def _pdf(self, x):
        return 1.0 / np.pi / (1.0 + x * x)

    def _logpdf(self, x):
        # SciPy's two formulas: log1p(x**2) below |x| = 1, 2 log|x| + log1p(x**-2) above
        absx = tnp.abs(x)
        small = absx < 1
        near = tnp.where(small, absx, 0.5)
        far = tnp.where(small, 2.0, absx)
        return tnp.where(
            small,
            -_LOG_PI - tnp.log1p(tnp.power(near, 2)),
            -_LOG_PI - (2 * tnp.log(far) + tnp.log1p(tnp.power(1 / far, 2))),
        )

    def _cdf(self, x):
        return tnp.arctan2(1, -x) / np.pi

    def _sf(self, x):
        return tnp.arctan2(1, x) / np.pi

    def _ppf(self, q):
        return bind(sp.cauchy_ppf_p, q, 0, 1)


class laplace_gen(rv_continuous):  # noqa: N801
    """The Laplace (double exponential) distribution. Its logpdf is SciPy's log(pdf), which
    underflows to -inf beyond |z| ~ 745, with a NaN derivative there, as SciPy's value."""

    name = "laplace"
    open_everywhere = True

    def _pdf(self, x):
        return 0.5 * tnp.exp(-abs(x))

    def _cdf(self, x):
        positive = x > 0
        right = 1.0 - 0.5 * tnp.exp(-tnp.where(positive, x, 0.0))
        left = 0.5 * tnp.exp(tnp.where(positive, 0.0, x))
        return tnp.where(positive, right, left)

    def _sf(self, x):
        return self._cdf(-x)

    def _ppf(self, q):
        upper = q > 0.5
        return tnp.where(
            upper,
            -tnp.log(2 * (1 - tnp.where(upper, q, 0.75))),
            tnp.log(2 * tnp.where(upper, 0.25, q)),
        )


class logistic_gen(rv_continuous):  # noqa: N801
    """The logistic distribution."""

    name = "logistic"
    open_everywhere = True

    def _logpdf(self, x):
        y = -tnp.abs(x)
        return y - 2.0 * sc.log1p(tnp.exp(y))

    def _cdf(self, x):
        return sc.expit(x)

    def _logcdf(self, x):
        return sc.log_expit(x)

    def _ppf(self, q):
        return sc.logit(q)

    def _sf(self, x):
        return sc.expit(-x)

    def _logsf(self, x):
        return sc.log_expit(-x)


class vonmises_gen(rv_continuous):  # noqa: N801
    """The von Mises distribution with concentration `kappa` (SciPy's: on the whole line,
    not wrapped)."""

    name = "vonmises"
    shapes = ("kappa",)
    safe = (1.0,)
    open_everywhere = True

    def _argcheck(self, kappa):
        return kappa >= 0

    def _pdf(self, x, kappa):
        return tnp.exp(kappa * sc.cosm1(x)) / (2 * math.pi * sc.i0e(kappa))

    def _logpdf(self, x, kappa):
        return kappa * sc.cosm1(x) - np.log(2 * np.pi) - tnp.log(sc.i0e(kappa))

    def _cdf(self, x, kappa):
        return bind(sp.von_mises_cdf_p, kappa, x)

    def _ppf(self, q, kappa):
        return bind(sp.vonmises_ppf_p, q, kappa)


t = t_gen()
cauchy = cauchy_gen()
laplace = laplace_gen()
logistic = logistic_gen()
vonmises = vonmises_gen()
