"""`tracegrad.scipy.special`: SciPy's special functions, traceable and differentiable.

Each ufunc is one primitive whose value is SciPy's own call (bit for bit, float32 too) and
whose derivatives are closed forms in tracegrad's operations (tracegrad.primitives.special), so
they differentiate again; `np.`-style calls of the ufuncs on traced values (`scipy.special.erf
(x)`) reach the same functions through `UFUNCS`. `logsumexp` is one primitive calling SciPy's;
`softmax`, `log_softmax`, `polygamma` and `multigammaln` are SciPy's own compositions, written
with tracegrad's operations in SciPy's order, so their values are SciPy's bits too.
"""

from __future__ import annotations

import operator

import numpy as np
import scipy.special as _sc
from numpy.lib.array_utils import normalize_axis_tuple

import tracegrad.numpy as tnp
from tracegrad.core import bind
from tracegrad.numpy._common import as_array, asarray_or_tracer, known_value, shape_of
from tracegrad.primitives import special as sp
from tracegrad.primitives.elementwise import stop_gradient

# name: (primitive, what its derivative is, or which argument is refused)
_UFUNCS = {
    "expit": (sp.expit_p, "expit(x) (1 - expit(x))"),
    "logit": (sp.logit_p, "1 / (x (1 - x))"),
    "log_expit": (sp.log_expit_p, "expit(-x)"),
    "erf": (sp.erf_p, "2 exp(-x**2) / sqrt(pi)"),
    "erfc": (sp.erfc_p, "-2 exp(-x**2) / sqrt(pi)"),
    "erfinv": (sp.erfinv_p, "sqrt(pi) exp(y**2) / 2 at y = erfinv(x)"),
    "erfcinv": (sp.erfcinv_p, "-sqrt(pi) exp(y**2) / 2 at y = erfcinv(x)"),
    "erfcx": (sp.erfcx_p, "2 x erfcx(x) - 2 / sqrt(pi)"),
    "ndtr": (sp.ndtr_p, "the normal density"),
    "ndtri": (sp.ndtri_p, "1 / (the normal density at ndtri(p))"),
    "log_ndtr": (sp.log_ndtr_p, "exp(-x**2/2 - log_ndtr(x)) / sqrt(2 pi), stable in both tails"),
    "ndtri_exp": (sp.ndtri_exp_p, "exp(y) / (the normal density at ndtri_exp(y))"),
    "gamma": (sp.gamma_p, "gamma(x) psi(x)"),
    "gammaln": (sp.gammaln_p, "psi(x)"),
    "loggamma": (sp.loggamma_p, "psi(x) (real arguments)"),
    "gammasgn": (sp.gammasgn_p, "zero: a sign"),
    "rgamma": (sp.rgamma_p, "-psi(x) / gamma(x), finite at the poles of gamma"),
    "psi": (sp.psi_p, "polygamma(1, x)"),
    "i0": (sp.i0_p, "i1(x)"),
    "i0e": (sp.i0e_p, "i1e(x) - sign(x) i0e(x)"),
    "i1": (sp.i1_p, "(i0(x) + iv(2, x)) / 2"),
    "i1e": (sp.i1e_p, "(i0e(x) + ive(2, x)) / 2 - sign(x) i1e(x)"),
    "j0": (sp.j0_p, "-j1(x)"),
    "j1": (sp.j1_p, "(j0(x) - jv(2, x)) / 2"),
    "y0": (sp.y0_p, "-y1(x)"),
    "y1": (sp.y1_p, "(y0(x) - yn(2, x)) / 2"),
    "entr": (sp.entr_p, "-(log(x) + 1)"),
    "spence": (sp.spence_p, "log(z) / (1 - z)"),
    "cosm1": (sp.cosm1_p, "-sin(x)"),
    "expm1": (sp.expm1_p, "expm1(x) + 1 (SciPy's expm1, not NumPy's: other bits)"),
    "log1p": (sp.log1p_p, "1 / (1 + x) (SciPy's log1p, not NumPy's: other bits)"),
    "beta": (sp.beta_p, "beta(a, b) (psi(a) - psi(a + b)) in a, likewise in b"),
    "betaln": (sp.betaln_p, "psi(a) - psi(a + b) in a, likewise in b"),
    "gammainc": (sp.gammainc_p, "x**(a-1) exp(-x) / gamma(a) in x; none in a (refused)"),
    "gammaincc": (sp.gammaincc_p, "-x**(a-1) exp(-x) / gamma(a) in x; none in a (refused)"),
    "gammaincinv": (sp.gammaincinv_p, "the inverse's, in y; none in a (refused)"),
    "iv": (sp.iv_p, "(iv(v-1, x) + iv(v+1, x)) / 2 in x; none in the order v (refused)"),
    "ive": (sp.ive_p, "(ive(v-1, x) + ive(v+1, x)) / 2 - sign(x) ive(v, x); none in v"),
    "jv": (sp.jv_p, "(jv(v-1, x) - jv(v+1, x)) / 2 in x; none in the order v (refused)"),
    "yn": (sp.yn_p, "(yn(n-1, x) - yn(n+1, x)) / 2 in x; zero in the integer order n"),
    "xlogy": (sp.xlogy_p, "log(y) in x, x / y in y"),
    "xlog1py": (sp.xlog1py_p, "log1p(y) in x, x / (1 + y) in y"),
    "rel_entr": (sp.rel_entr_p, "log(x / y) + 1 in x, -x / y in y"),
    "kl_div": (sp.kl_div_p, "log(x / y) in x, 1 - x / y in y"),
    "poch": (sp.poch_p, "poch(z, m) (psi(z + m) - psi(z)) in z, poch(z, m) psi(z + m) in m"),
    "stdtr": (sp.stdtr_p, "Student's t density in t; none in df (refused)"),
    "stdtrit": (sp.stdtrit_p, "the inverse's, in p; none in df (refused)"),
    "chdtr": (sp.chdtr_p, "the chi-square density in x; none in v (refused)"),
    "chdtrc": (sp.chdtrc_p, "minus the chi-square density in x; none in v (refused)"),
    "pdtr": (sp.pdtr_p, "minus the Poisson pmf at floor(k) in m; zero in k"),
    "pdtrc": (sp.pdtrc_p, "the Poisson pmf at floor(k) in m; zero in k"),
    "betainc": (sp.betainc_p, "x**(a-1) (1-x)**(b-1) / B(a, b) in x; none in a, b (refused)"),
    "betaincc": (sp.betaincc_p, "minus betainc's in x; none in a, b (refused)"),
}

__all__ = [
    "UFUNCS",
    "digamma",
    "jn",
    "log_softmax",
    "logsumexp",
    "multigammaln",
    "polygamma",
    "sinc",
    "softmax",
    "zeta",
]


def _export(name: str, prim, derivative: str):
    arity = len(getattr(_sc, name).types[0].split("->")[0])
    label = f"tracegrad.scipy.special.{name}"

    def f(*args):
        if len(args) != arity:
            raise TypeError(f"{label}() takes {arity} positional arguments, got {len(args)}")
        return bind(prim, *(asarray_or_tracer(a) for a in args))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (
        f"`scipy.special.{name}`, traceable and differentiable: the value is SciPy's own call "
        f"(bit for bit); the derivative is {derivative}."
    )
    globals()[name] = f
    __all__.append(name)
    return f


UFUNCS: dict[np.ufunc, object] = {}
"""scipy.special's ufuncs -> the functions here (what `scipy.special.erf(tracer)` reaches)."""
for _name, (_prim, _derivative) in _UFUNCS.items():
    UFUNCS[getattr(_sc, _name)] = _export(_name, _prim, _derivative)

gamma, gammaln, psi = (UFUNCS[_sc.gamma], UFUNCS[_sc.gammaln], UFUNCS[_sc.psi])
digamma = psi
jn = UFUNCS[_sc.jv]  # scipy.special.jn is jv
sinc = tnp.sinc  # scipy.special.sinc is NumPy's


def zeta(x, q=None, out=None):
    """`scipy.special.zeta`: the Riemann zeta function, or Hurwitz's with `q`. Differentiable
    in q (-x zeta(x + 1, q)); the derivative in x has no closed form and is refused."""
    if out is not None:
        raise NotImplementedError("tracegrad.scipy.special.zeta: out= is not supported")
    if q is None:
        return bind(sp.riemann_zeta_p, asarray_or_tracer(x))
    return bind(sp.hurwitz_zeta_p, asarray_or_tracer(x), asarray_or_tracer(q))


UFUNCS[_sc._ufuncs._riemann_zeta] = lambda x: zeta(x)
UFUNCS[_sc._ufuncs._zeta] = zeta


def polygamma(n, x):
    """`scipy.special.polygamma`: SciPy's own formula, `where(n == 0, psi(x), (-1)**(n+1)
    gamma(n+1) zeta(n+1, x))`, so the values are SciPy's and the derivative in x is
    polygamma(n + 1, x). `n` is an integer order (no derivative)."""
    n, x = as_array(n), as_array(x)
    fac2 = tnp.power(-1.0, n + 1) * gamma(n + 1.0) * zeta(n + 1, x)
    return tnp.where(n == 0, psi(x), fac2)


def multigammaln(a, d):
    """`scipy.special.multigammaln`: log of the multivariate gamma function of dimension `d` (a
    Python int), SciPy's own sum of gammaln terms. SciPy's check that a > (d - 1)/2 runs when
    the value of `a` is known (not under jit or vmap, where it is skipped, as in JAX)."""
    a = as_array(a)
    d = np.asarray(d)[()]
    if not np.isscalar(d) or (np.floor(d) != d):
        raise ValueError("d should be a positive integer (dimension)")
    value = known_value(a)
    if value is not None and np.any(np.asarray(value) <= 0.5 * (d - 1)):
        raise ValueError(f"condition a ({value}) > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    res = (d * (d - 1) * 0.25) * np.log(np.pi)
    terms = tnp.stack([a - (j - 1.0) / 2 for j in range(1, d + 1)])
    return res + tnp.sum(gammaln(terms), axis=0)


def _axes(axis, shapes) -> tuple[int, ...]:
    rank = max(len(np.broadcast_shapes(*shapes)), 1)  # SciPy makes a 0-d `a` 1-d
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, int | np.integer):
        axis = (operator.index(axis),)
    return tuple(sorted(normalize_axis_tuple(axis, rank)))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """`scipy.special.logsumexp`: SciPy's own call (its values, edge cases and dtypes: a
    Python-number `b` promotes weakly). Its derivative is the softmax, b exp(a - out) (times
    the sign with `return_sign`), and exp(a - out) in `b`; where a whole slice sums to zero
    (all -inf, or weights 0) the result is -inf with a zero derivative, not NaN."""
    a = asarray_or_tracer(a)
    b = None if b is None else asarray_or_tracer(b)
    args = (a,) if b is None else (a, b)
    axes = _axes(axis, [shape_of(v) for v in args])
    return sp.logsumexp(a, b, axis=axes, keepdims=keepdims, return_sign=return_sign)


def _softmax_axes(x, axis):
    return None if axis is None else _axes(axis, [shape_of(x)])


def softmax(x, axis=None):
    """`scipy.special.softmax`: SciPy's steps, exp(x - max) / sum(exp(x - max)); the max is a
    constant to differentiation (softmax does not change when x shifts), as in JAX."""
    x = as_array(x)
    axis = _softmax_axes(x, axis)
    x_max = tnp.max(x, axis=axis, keepdims=True)
    exp_x_shifted = tnp.exp(x - stop_gradient(x_max))
    return exp_x_shifted / tnp.sum(exp_x_shifted, axis=axis, keepdims=True)


def log_softmax(x, axis=None):
    """`scipy.special.log_softmax`: SciPy's steps, (x - m) - log(sum(exp(x - m))) with m the
    max (0 where it is not finite); m is a constant to differentiation (the result does not
    change when x shifts)."""
    x = as_array(x)
    axis = _softmax_axes(x, axis)
    x_max = tnp.max(x, axis=axis, keepdims=True)
    x_max = tnp.where(tnp.isfinite(x_max), x_max, 0)
    tmp = x - stop_gradient(x_max)
    s = tnp.sum(tnp.exp(tmp), axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # a slice of -inf: SciPy's NaN
        return tmp - tnp.log(s)
