"""`tracegrad.scipy.stats`: SciPy's distributions, traceable and differentiable.

Each distribution has SciPy's methods, signatures and values (`norm.logpdf(x, loc, scale)`,
`gamma.cdf(x, a)`, `norm(0, 2).logpdf(x)`), written with tracegrad's operations, so they are
differentiable in the data and in every continuous parameter (where a derivative has no closed
form, asking for it raises, naming the parameter). Outside the support a logpdf is -inf with a
zero derivative, never NaN.
"""

from tracegrad.scipy.stats._beta import beta, pareto, uniform
from tracegrad.scipy.stats._discrete import bernoulli, binom, geom, nbinom, poisson
from tracegrad.scipy.stats._distribution import rv_continuous, rv_discrete
from tracegrad.scipy.stats._gamma import chi2, expon, gamma
from tracegrad.scipy.stats._multivariate import dirichlet, multinomial, multivariate_normal
from tracegrad.scipy.stats._normal import lognorm, norm, truncnorm
from tracegrad.scipy.stats._symmetric import cauchy, laplace, logistic, t, vonmises

__all__ = [
    "bernoulli",
    "beta",
    "binom",
    "cauchy",
    "chi2",
    "dirichlet",
    "expon",
    "gamma",
    "geom",
    "laplace",
    "logistic",
    "lognorm",
    "multinomial",
    "multivariate_normal",
    "nbinom",
    "norm",
    "pareto",
    "poisson",
    "rv_continuous",
    "rv_discrete",
    "t",
    "truncnorm",
    "uniform",
    "vonmises",
]
