"""The gamma family: `gamma`, `chi2` and `expon`, with SciPy's formulas.

The cdfs are SciPy's incomplete gamma functions: differentiable in x, but not in the shape
parameter (no closed form; asking raises). expon calls SciPy's own expm1 and log1p, as SciPy
does (not NumPy's, whose bits differ).
"""

from __future__ import annotations

import numpy as np

import tracegrad.numpy as tnp
import tracegrad.scipy.special as sc
from tracegrad.scipy.stats._distribution import rv_continuous


class gamma_gen(rv_continuous):  # noqa: N801 - SciPy's names
    """The gamma distribution with shape `a` (scale is SciPy's `scale`, 1/rate)."""

    name = "gamma"
    shapes = ("a",)
    safe = (1.0,)
    a = 0.0

    def _logpdf(self, x, a):
        return sc.xlogy(a - 1.0, x) - x - sc.gammaln(a)

    def _cdf(self, x, a):
        return sc.gammainc(a, x)

    def _sf(self, x, a):
        return sc.gammaincc(a, x)

    def _ppf(self, q, a):
        return sc.gammaincinv(a, q)


class chi2_gen(rv_continuous):  # noqa: N801
    """The chi-square distribution with `df` degrees of freedom."""

    name = "chi2"
    shapes = ("df",)
    safe = (1.0,)
    a = 0.0

    def _logpdf(self, x, df):
        return sc.xlogy(df / 2.0 - 1, x) - x / 2.0 - sc.gammaln(df / 2.0) - (np.log(2) * df) / 2.0

    def _cdf(self, x, df):
        return sc.chdtr(df, x)

    def _sf(self, x, df):
        return sc.chdtrc(df, x)

    def _ppf(self, p, df):
        return 2 * sc.gammaincinv(df / 2, p)


class expon_gen(rv_continuous):  # noqa: N801
    """The exponential distribution (scale is SciPy's `scale`, 1/rate)."""

    name = "expon"
    a = 0.0

    def _pdf(self, x):
        return tnp.exp(-x)

    def _logpdf(self, x):
        return -x

    def _cdf(self, x):
        return -sc.expm1(-x)

    def _ppf(self, q):
        return -sc.log1p(-q)

    def _sf(self, x):
        return tnp.exp(-x)

    def _logsf(self, x):
        return -x


gamma = gamma_gen()
chi2 = chi2_gen()
expon = expon_gen()
