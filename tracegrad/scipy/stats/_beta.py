"""Distributions on an interval or a half-line with power-law densities: `beta`, `uniform` and
`pareto`, with SciPy's formulas.

beta's pdf, cdf and ppf are SciPy's (Boost's) functions: its pdf is differentiable in x and in
both shape parameters, its cdf in x only (the derivative in a shape parameter has no closed
form: asking raises).
"""

from __future__ import annotations

import tracegrad.numpy as tnp
import tracegrad.scipy.special as sc
from tracegrad.core import bind
from tracegrad.primitives import special as sp
from tracegrad.scipy.stats._distribution import rv_continuous


class beta_gen(rv_continuous):  # noqa: N801 - SciPy's names
    """The beta distribution on [0, 1] with shapes `a` and `b`."""

    name = "beta"
    shapes = ("a", "b")
    safe = (1.0, 1.0)
    a, b = 0.0, 1.0

    def _pdf(self, x, a, b):
        return bind(sp.beta_pdf_p, x, a, b)

    def _logpdf(self, x, a, b):
        lPx = sc.xlog1py(b - 1.0, -x) + sc.xlogy(a - 1.0, x)  # noqa: N806 - SciPy's name
        return lPx - sc.betaln(a, b)

    def _cdf(self, x, a, b):
        return sc.betainc(a, b, x)

    def _sf(self, x, a, b):
        return sc.betaincc(a, b, x)

    def _ppf(self, q, a, b):
        return bind(sp.beta_ppf_p, q, a, b)


class uniform_gen(rv_continuous):  # noqa: N801
    """The uniform distribution on [loc, loc + scale]."""

    name = "uniform"
    a, b = 0.0, 1.0

    def _pdf(self, x):
        return 1.0 * (x == x)

    def _cdf(self, x):
        return x

    def _ppf(self, q):
        return q


class pareto_gen(rv_continuous):  # noqa: N801
    """The Pareto distribution with shape `b`, on [1, inf) in standard units."""

    name = "pareto"
    shapes = ("b",)
    safe = (1.0,)
    a = 1.0

    def _pdf(self, x, b):
        return b * tnp.power(x, -b - 1)

    def _cdf(self, x, b):
        return 1 - tnp.power(x, -b)

    def _ppf(self, q, b):
        return tnp.power(1 - q, -1.0 / b)

    def _sf(self, x, b):
        return tnp.power(x, -b)


beta = beta_gen()
uniform = uniform_gen()
pareto = pareto_gen()
