"""Error functions, the normal distribution's and the logistic's, as primitives: expit, logit,
log_expit, erf, erfc, erfinv, erfcinv, erfcx, ndtr, ndtri, log_ndtr, ndtri_exp. Each is one
line of the table: SciPy's ufunc and its derivative (an exponential, written with tracegrad's
operations, so it differentiates again).
"""

from __future__ import annotations

from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series
from tracegrad.primitives.special._base import (
    _IN,
    _OUT,
    _SQRT_2PI,
    _SQRT_PI,
    _u,
    exp,
)

# fmt: off
expit_p     = _u("expit",     lambda x, out: out * (1.0 - out), reads=_OUT,
                 taylor=series.unary(series.logistic_terms))
logit_p     = _u("logit",     lambda x, out: 1.0 / (x * (1.0 - x)), reads=_IN)
log_expit_p = _u("log_expit", lambda x, out: expit(ew.negative(x)), reads=_IN)
erf_p       = _u("erf",       lambda x, out: (2 / _SQRT_PI) * exp(ew.negative(x * x)), reads=_IN)
erfc_p      = _u("erfc",      lambda x, out: (-2 / _SQRT_PI) * exp(ew.negative(x * x)), reads=_IN)
erfinv_p    = _u("erfinv",    lambda x, out: (_SQRT_PI / 2) * exp(out * out), reads=_OUT)
erfcinv_p   = _u("erfcinv",   lambda x, out: (-_SQRT_PI / 2) * exp(out * out), reads=_OUT)
erfcx_p     = _u("erfcx",     lambda x, out: 2.0 * x * out - 2 / _SQRT_PI)
ndtr_p      = _u("ndtr",      lambda x, out: exp(-0.5 * (x * x)) / _SQRT_2PI, reads=_IN)
ndtri_p     = _u("ndtri",     lambda x, out: _SQRT_2PI * exp(0.5 * (out * out)), reads=_OUT)
log_ndtr_p  = _u("log_ndtr",  lambda x, out: exp(-0.5 * (x * x) - out) / _SQRT_2PI)
ndtri_exp_p = _u("ndtri_exp", lambda y, out: _SQRT_2PI * exp(y + 0.5 * (out * out)))
# fmt: on


PRIMITIVES = (
    expit_p, logit_p, log_expit_p, erf_p, erfc_p, erfinv_p, erfcinv_p, erfcx_p, ndtr_p, ndtri_p,
    log_ndtr_p, ndtri_exp_p,
)  # fmt: skip


def expit(x):
    return bind(expit_p, x)
