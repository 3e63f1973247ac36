"""Bessel functions as primitives: i0, i0e, i1, i1e, iv, ive, j0, j1, jv, y0, y1, yn. Their
derivatives are their recurrences (i0' = i1, jv' = (jv(v-1) - jv(v+1)) / 2, ...), written with
these very primitives; the derivative in a real order v has no closed form and is refused
(an integer order, yn's, has a zero one).
"""

from __future__ import annotations

from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.special._base import (
    _IN,
    ZERO,
    Refused,
    _not_tiny,
    _u,
)

_NO_ORDER = Refused("the derivative in the order v has no closed form")


# fmt: off
i0_p        = _u("i0",        lambda x, out: i1(x), reads=_IN)
i0e_p       = _u("i0e",       lambda x, out: i1e(x) - ew.sign(x) * out)
i1_p        = _u("i1",        lambda x, out: 0.5 * (i0(x) + iv(2, _not_tiny(x))), reads=_IN)
i1e_p       = _u("i1e",       lambda x, out: (
                  0.5 * (i0e(x) + ive(2, _not_tiny(x))) - ew.sign(x) * out))
j0_p        = _u("j0",        lambda x, out: ew.negative(j1(x)), reads=_IN)
j1_p        = _u("j1",        lambda x, out: 0.5 * (j0(x) - jv(2.0, x)), reads=_IN)
y0_p        = _u("y0",        lambda x, out: ew.negative(y1(x)), reads=_IN)
y1_p        = _u("y1",        lambda x, out: 0.5 * (y0(x) - yn(2.0, x)), reads=_IN)
iv_p        = _u("iv",        _NO_ORDER, lambda v, x, out: 0.5 * (iv(v - 1.0, x) + iv(v + 1.0, x)),
                 reads=_IN)
ive_p       = _u("ive",       _NO_ORDER, lambda v, x, out: (
                  0.5 * (ive(v - 1.0, x) + ive(v + 1.0, x)) - ew.sign(x) * out))
jv_p        = _u("jv",        _NO_ORDER, lambda v, x, out: 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)),
                 reads=_IN)
yn_p        = _u("yn",        ZERO, lambda n, x, out: 0.5 * (yn(n - 1, x) - yn(n + 1, x)),
                 reads=_IN)
# fmt: on


PRIMITIVES = (i0_p, i0e_p, i1_p, i1e_p, j0_p, j1_p, y0_p, y1_p, iv_p, ive_p, jv_p, yn_p)


def i0(x):
    return bind(i0_p, x)


def i0e(x):
    return bind(i0e_p, x)


def i1(x):
    return bind(i1_p, x)


def i1e(x):
    return bind(i1e_p, x)


def j0(x):
    return bind(j0_p, x)


def j1(x):
    return bind(j1_p, x)


def y0(x):
    return bind(y0_p, x)


def y1(x):
    return bind(y1_p, x)


def iv(v, x):
    return bind(iv_p, v, x)


def ive(v, x):
    return bind(ive_p, v, x)


def jv(v, x):
    return bind(jv_p, v, x)


def yn(n, x):
    return bind(yn_p, n, x)
