"""Logarithms, entropies and SciPy's own elementary functions as primitives: xlogy, xlog1py,
entr, rel_entr, kl_div, spence, cosm1, and SciPy's expm1 and log1p (scipy.stats calls them;
their bits are not NumPy's). Each is one line of the table with its derivatives.
"""

from __future__ import annotations

import functools
import math

from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.special._base import (
    _IN,
    _OUT,
    _both,
    _greater,
    _greater_equal,
    _u,
    _xdivy,
    log,
    log1p,
    special,
    where,
)


def _entr_d(x, out):
    # -x log x: -(log x + 1) for x > 0 (+inf at 0, the one-sided limit); -inf below, constant
    nonneg = _greater_equal(x, 0)
    return where(nonneg, ew.negative(log(where(nonneg, x, 1.0)) + 1.0), 0.0)


def _spence_d(z, out):
    # spence(z) = integral from 1 to z of log(t) / (1 - t) dt; the limit at z = 1 is -1
    one = ew.equal(z, 1)
    zs = where(one, 2.0, z)
    return where(one, -1.0, log(zs) / (1.0 - zs))


def _rel_entr_parts(x, y):
    """(inside, x there, y there): rel_entr and kl_div are x log(x/y) for x, y > 0."""
    inside = _both(_greater(x, 0), _greater(y, 0))
    return inside, where(inside, x, 1.0), where(inside, y, 1.0)


def _rel_entr_dx(x, y, out, shift=1.0):
    inside, xs, ys = _rel_entr_parts(x, y)
    edge = _both(ew.equal(x, 0), _greater(y, 0))
    return where(inside, log(xs / ys) + shift, where(edge, -math.inf, 0.0))


def _rel_entr_dy(x, y, out):
    inside, xs, ys = _rel_entr_parts(x, y)
    return where(inside, ew.negative(xs / ys), 0.0)


def _kl_div_dy(x, y, out):
    inside, xs, ys = _rel_entr_parts(x, y)
    edge = _both(ew.equal(x, 0), _greater_equal(y, 0))
    return where(inside, 1.0 - xs / ys, where(edge, 1.0, 0.0))


# fmt: off
entr_p      = _u("entr",      _entr_d, reads=_IN)
spence_p    = _u("spence",    _spence_d, reads=_IN)
cosm1_p     = _u("cosm1",     lambda x, out: ew.negative(ew.sin(x)), reads=_IN)
# SciPy's own expm1 and log1p (scipy.stats' expon and logistic call them): not NumPy's bits
expm1_p     = special("scipy.special.expm1", "scipy.special:expm1", lambda x, out: out + 1.0,
                      reads=_OUT, label="scipy.special.expm1")
log1p_p     = special("scipy.special.log1p", "scipy.special:log1p",
                      lambda x, out: 1.0 / (1.0 + x), reads=_IN, label="scipy.special.log1p")
xlogy_p     = _u("xlogy",     lambda x, y, out: log(y), lambda x, y, out: _xdivy(x, y), reads=_IN)
xlog1py_p   = _u("xlog1py",   lambda x, y, out: log1p(y),
                              lambda x, y, out: _xdivy(x, 1.0 + y), reads=_IN)
rel_entr_p  = _u("rel_entr",  _rel_entr_dx, _rel_entr_dy, reads=_IN)
kl_div_p    = _u("kl_div",    functools.partial(_rel_entr_dx, shift=0.0), _kl_div_dy, reads=_IN)
# fmt: on


PRIMITIVES = (
    entr_p, spence_p, cosm1_p, expm1_p, log1p_p, xlogy_p, xlog1py_p, rel_entr_p, kl_div_p,
)  # fmt: skip


def cosm1(x):
    return bind(cosm1_p, x)


def xlogy(x, y):
    return bind(xlogy_p, x, y)


def xlog1py(x, y):
    return bind(xlog1py_p, x, y)
