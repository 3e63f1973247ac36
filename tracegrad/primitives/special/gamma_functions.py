"""Gamma functions as primitives: gamma, gammaln, loggamma, gammasgn, rgamma, psi, beta,
betaln, poch, the zeta functions (Riemann's and Hurwitz's: psi's derivative) and the
incomplete gamma and beta functions. Their derivatives are closed forms in these very
primitives (psi -> zeta, gammainc -> its density in x); those in a shape parameter, which
have none, are refused.
"""

from __future__ import annotations

import math

from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.special._base import (
    _IN,
    ZERO,
    Refused,
    _u,
    exp,
    special,
    where,
)
from tracegrad.primitives.special.elementary import xlog1py, xlogy


def _rgamma_d(x, out):
    """d/dx 1/Gamma(x) = -psi(x)/Gamma(x); below 1/2 through the reflection 1/Gamma(x) =
    Gamma(1-x) sin(pi x)/pi, which stays finite (and right) at the poles of Gamma."""
    left = bind(ew.less_p, x, 0.5)
    xl = where(left, x, 0.0)
    xr = where(left, 1.0, x)
    g = gamma(1.0 - xl)
    reflected = g * (ew.cos(math.pi * xl) - psi(1.0 - xl) * ew.sin(math.pi * xl) / math.pi)
    return where(left, reflected, ew.negative(rgamma(xr) * psi(xr)))


def _gammainc_dx(a, x):
    """d/dx of the regularized lower incomplete gamma function: x**(a-1) e**-x / Gamma(a)."""
    return exp(xlogy(a - 1.0, x) - x - gammaln(a))


def _betainc_dx(a, b, x):
    """d/dx of the regularized incomplete beta function: x**(a-1) (1-x)**(b-1) / B(a, b)."""
    return exp(xlogy(a - 1.0, x) + xlog1py(b - 1.0, -x) - betaln(a, b))


_NO_A = Refused("the derivative in a (the shape parameter) has no closed form")
_NO_B = Refused("the derivative in b (the shape parameter) has no closed form")
_NO_S = Refused("the derivative of the Riemann zeta function in x has no closed form")
_NO_S2 = Refused("the derivative in x (the exponent of Hurwitz's zeta) has no closed form")


# fmt: off
gamma_p     = _u("gamma",     lambda x, out: out * psi(x))
gammaln_p   = _u("gammaln",   lambda x, out: psi(x), reads=_IN)
loggamma_p  = _u("loggamma",  lambda x, out: psi(x), reads=_IN)
gammasgn_p  = _u("gammasgn",  ZERO)
rgamma_p    = _u("rgamma",    _rgamma_d, reads=_IN)
psi_p       = _u("psi",       lambda x, out: zeta(2.0, x), reads=_IN)   # polygamma(1, x)
riemann_zeta_p = special("scipy.special._riemann_zeta", "scipy.special._ufuncs:_riemann_zeta",
                         _NO_S, label="scipy.special.zeta")
hurwitz_zeta_p = special("scipy.special._zeta", "scipy.special._ufuncs:_zeta", _NO_S2,
                         lambda s, q, out: ew.negative(s) * zeta(s + 1.0, q), reads=_IN,
                         label="scipy.special.zeta")
# two arguments
beta_p      = _u("beta",      lambda a, b, out: out * (psi(a) - psi(a + b)),
                              lambda a, b, out: out * (psi(b) - psi(a + b)))
betaln_p    = _u("betaln",    lambda a, b, out: psi(a) - psi(a + b),
                              lambda a, b, out: psi(b) - psi(a + b), reads=_IN)
poch_p      = _u("poch",      lambda z, m, out: out * (psi(z + m) - psi(z)),
                              lambda z, m, out: out * psi(z + m))
gammainc_p  = _u("gammainc",  _NO_A, lambda a, x, out: _gammainc_dx(a, x), reads=_IN)
gammaincc_p = _u("gammaincc", _NO_A, lambda a, x, out: ew.negative(_gammainc_dx(a, x)),
                 reads=_IN)
gammaincinv_p = _u("gammaincinv", _NO_A,
                   lambda a, y, out: exp(out - xlogy(a - 1.0, out) + gammaln(a)))
# three arguments
betainc_p   = _u("betainc",   _NO_A, _NO_B, lambda a, b, x, out: _betainc_dx(a, b, x), reads=_IN)
betaincc_p  = _u("betaincc",  _NO_A, _NO_B,
                 lambda a, b, x, out: ew.negative(_betainc_dx(a, b, x)), reads=_IN)
# fmt: on


PRIMITIVES = (
    gamma_p, gammaln_p, loggamma_p, gammasgn_p, rgamma_p, psi_p, riemann_zeta_p, hurwitz_zeta_p,
    beta_p, betaln_p, poch_p, gammainc_p, gammaincc_p, gammaincinv_p, betainc_p, betaincc_p,
)  # fmt: skip


def gammaln(x):
    return bind(gammaln_p, x)


def psi(x):
    return bind(psi_p, x)


def gamma(x):
    return bind(gamma_p, x)


def rgamma(x):
    return bind(rgamma_p, x)


def betaln(a, b):
    return bind(betaln_p, a, b)


def zeta(s, q):
    """The Hurwitz zeta function (SciPy's `zeta(x, q)` with `q`)."""
    return bind(hurwitz_zeta_p, s, q)
