"""Multivariate distributions: `multivariate_normal`, `dirichlet` and `multinomial`, with
SciPy's signatures, checks and values.

multivariate_normal's logpdf is SciPy's own call (its eigendecomposition of cov, its values),
one primitive differentiable in x, mean and cov; dirichlet and multinomial are SciPy's
formulas. SciPy's checks on values (x in the simplex, p a probability vector) run whenever the
values are known, and are skipped under jit and vmap (as JAX does), where they cannot be.
"""

from __future__ import annotations

import warnings

import numpy as np

import tracegrad.numpy as tnp
import tracegrad.scipy.special as sc
from tracegrad.ir.types import dtype_of
from tracegrad.numpy._common import as_array, known_value, shape_of
from tracegrad.primitives import special as sp


def _squeeze_output(out):
    out = tnp.squeeze(out)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _float(x):
    x = as_array(x)
    return x if dtype_of(x) == np.float64 else tnp.astype(x, np.float64)


# -- multivariate_normal ----------------------------------------------------------------------


def _mvn_parameters(mean, cov):
    """SciPy's `_process_parameters_psd`: (dim, mean as a float vector, cov as a matrix)."""
    if mean is None:
        cov = _float(cov)
        dim = 1 if len(shape_of(cov)) < 2 else shape_of(cov)[0]
    else:
        mean = _float(mean)
        dim = int(np.prod(shape_of(mean)))
    mean = np.zeros(dim) if mean is None else _float(mean)
    cov = _float(cov)
    if dim == 1:
        mean, cov = tnp.reshape(mean, (1,)), tnp.reshape(cov, (1, 1))
    if len(shape_of(mean)) != 1 or shape_of(mean)[0] != dim:
        raise ValueError(f"Array 'mean' must be a vector of length {dim}.")
    ndim = len(shape_of(cov))
    if ndim == 0:
        cov = cov * np.eye(dim)
    elif ndim == 1:
        cov = tnp.diag(cov)
    elif ndim == 2 and shape_of(cov) != (dim, dim):
        rows, cols = shape_of(cov)
        if rows != cols:
            raise ValueError(
                "Array 'cov' must be square if it is two dimensional, but cov.shape = "
                f"{shape_of(cov)}."
            )
        raise ValueError(
            f"Dimension mismatch: array 'cov' is of shape {shape_of(cov)}, but 'mean' is a "
            f"vector of length {dim}."
        )
    elif ndim > 2:
        raise ValueError(f"Array 'cov' must be at most two-dimensional, but cov.ndim = {ndim}")
    return dim, mean, cov


def _mvn_quantiles(x, dim):
    x = _float(x)
    if len(shape_of(x)) == 0:
        return tnp.reshape(x, (1, 1))
    if len(shape_of(x)) == 1:
        return tnp.reshape(x, (-1, 1) if dim == 1 else (1, -1))
    return x


class multivariate_normal_gen:  # noqa: N801 - SciPy's names
    """The multivariate normal distribution (SciPy's `multivariate_normal`)."""

    name = "multivariate_normal"

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        """SciPy's value (its eigendecomposition of cov); differentiable in x, mean and cov
        (cov's lower triangle, the part SciPy reads). With allow_singular=True, points outside
        the support are -inf with a zero derivative, and the derivative in cov is refused."""
        dim, mean, cov = _mvn_parameters(mean, cov)
        x = _mvn_quantiles(x, dim)
        return _squeeze_output(sp.mvn_logpdf(x, mean, cov, allow_singular))

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        """exp(logpdf), as SciPy computes it."""
        dim, mean, cov = _mvn_parameters(mean, cov)
        x = _mvn_quantiles(x, dim)
        return _squeeze_output(tnp.exp(sp.mvn_logpdf(x, mean, cov, allow_singular)))

    def cdf(self, *args, **kwds):
        raise NotImplementedError(
            "tracegrad.scipy.stats.multivariate_normal.cdf is not supported: SciPy integrates it "
            "numerically (with random quasi-Monte Carlo points), which has no derivative rule"
        )

    logcdf = cdf

    def __call__(self, mean=None, cov=1, allow_singular=False):
        return multivariate_normal_frozen(mean, cov, allow_singular)


class multivariate_normal_frozen:  # noqa: N801
    """`multivariate_normal(mean, cov)`: the parameters checked once, as SciPy's."""

    def __init__(self, mean=None, cov=1, allow_singular=False):
        self.dim, self.mean, self.cov = _mvn_parameters(mean, cov)
        self.allow_singular = allow_singular

    def logpdf(self, x):
        return multivariate_normal.logpdf(x, self.mean, self.cov, self.allow_singular)

    def pdf(self, x):
        return multivariate_normal.pdf(x, self.mean, self.cov, self.allow_singular)


# -- dirichlet --------------------------------------------------------------------------------


def _dirichlet_alpha(alpha):
    alpha = as_array(alpha)
    value = known_value(alpha)
    if value is not None and np.min(value) <= 0:
        raise ValueError("All parameters must be greater than 0")
    if len(shape_of(alpha)) != 1:
        raise ValueError(
            f"Parameter vector 'a' must be one dimensional, but a.shape = {shape_of(alpha)}."
        )
    return alpha


def _dirichlet_x(alpha, x):
    """SciPy's `_dirichlet_check_input`: x's last entry appended when it is left out, and the
    checks that x is in the simplex (when its value is known)."""
    x = as_array(x)
    k, xs = shape_of(alpha)[0], shape_of(x)
    if xs[0] + 1 != k and xs[0] != k:
        raise ValueError(
            "Vector 'x' must have either the same number of entries as, or one entry fewer "
            f"than, parameter vector 'a', but alpha.shape = {shape_of(alpha)} and x.shape = "
            f"{xs}."
        )
    if xs[0] != k:
        last = 1 - tnp.sum(x, 0)
        if len(xs) > 2:
            raise ValueError(
                "The input must be one dimensional or a two dimensional matrix containing the "
                "entries."
            )
        x = tnp.concatenate([x, tnp.reshape(last, (1,) + shape_of(last))])
    value, a = known_value(x), known_value(alpha)
    if value is not None:
        _dirichlet_check_values(np.asarray(value), None if a is None else np.asarray(a))
    return x


def _dirichlet_check_values(x, alpha):
    if np.min(x) < 0:
        raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
    if np.max(x) > 1:
        raise ValueError("Each entry in 'x' must be smaller or equal one.")
    if alpha is not None:
        alphalt1 = alpha < 1
        if x.shape != alpha.shape:
            alphalt1 = np.repeat(alphalt1, x.shape[-1], axis=-1).reshape(x.shape)
        if np.sum(np.logical_and(x == 0, alphalt1)):
            raise ValueError(
                "Each entry in 'x' must be greater than zero if its alpha is less than one."
            )
    if (np.abs(np.sum(x, 0) - 1.0) > 10e-10).any():
        raise ValueError(
            "The input vector 'x' must lie within the normal simplex. but np.sum(x, 0) = "
            f"{np.sum(x, 0)}."
        )


def _dirichlet_logpdf(x, alpha):
    lnB = tnp.sum(sc.gammaln(alpha)) - sc.gammaln(tnp.sum(alpha))  # noqa: N806 - SciPy's
    return -lnB + tnp.sum(tnp.transpose(sc.xlogy(alpha - 1, tnp.transpose(x))), 0)


class dirichlet_gen:  # noqa: N801
    """The Dirichlet distribution (SciPy's `dirichlet`): x has the entries of alpha along its
    first axis (or all but the last)."""

    name = "dirichlet"

    def logpdf(self, x, alpha):
        """SciPy's formula; differentiable in x and alpha."""
        alpha = _dirichlet_alpha(alpha)
        x = _dirichlet_x(alpha, x)
        return _squeeze_output(_dirichlet_logpdf(x, alpha))

    def pdf(self, x, alpha):
        """exp(logpdf), as SciPy computes it."""
        alpha = _dirichlet_alpha(alpha)
        x = _dirichlet_x(alpha, x)
        return _squeeze_output(tnp.exp(_dirichlet_logpdf(x, alpha)))

    def __call__(self, alpha):
        return dirichlet_frozen(alpha)


class dirichlet_frozen:  # noqa: N801
    def __init__(self, alpha):
        self.alpha = _dirichlet_alpha(alpha)

    def logpdf(self, x):
        return dirichlet.logpdf(x, self.alpha)

    def pdf(self, x):
        return dirichlet.pdf(x, self.alpha)


# -- multinomial ------------------------------------------------------------------------------


def _multinomial_parameters(n, p):
    """SciPy's `_process_parameters`: p as float64 with its last entry adjusted where the row
    does not sum to 1 (SciPy warns then), n as ints, and where either is invalid."""
    eps = np.finfo(np.result_type(dtype_of(as_array(p)), np.float32)).eps * 10
    p = _float(p)
    p_adjusted = 1.0 - tnp.sum(p[..., :-1], axis=-1)
    i_adjusted = tnp.abs(1 - tnp.sum(p, axis=-1)) > eps
    p = tnp.concatenate(
        [p[..., :-1], tnp.where(i_adjusted, p_adjusted, p[..., -1])[..., None]], axis=-1
    )
    adjusted = known_value(i_adjusted)
    if adjusted is not None and np.any(adjusted):
        warnings.warn(
            f"Some rows of `p` do not sum to 1.0 within tolerance of {eps=}. Currently, the "
            "last element of these rows is adjusted to compensate, but this condition will "
            "produce NaNs beginning in SciPy 1.18.0. Please ensure that rows of `p` sum to 1.0 "
            "to avoid futher disruption.",
            FutureWarning,
            stacklevel=3,
        )
    pcond = tnp.logical_or(tnp.any(p < 0, axis=-1), tnp.any(p > 1, axis=-1))
    n = tnp.astype(as_array(n), np.int_)
    return n, p, tnp.logical_or(n < 0, pcond)


def _multinomial_quantiles(x, n, p):
    x = as_array(x)
    xx = tnp.astype(x, np.int_)
    if len(shape_of(xx)) == 0:
        raise ValueError("x must be an array.")
    size = int(np.prod(shape_of(xx)))
    if size != 0 and shape_of(xx)[-1] != shape_of(p)[-1]:
        raise ValueError(
            f"Size of each quantile should be size of p: received {shape_of(xx)[-1]}, but "
            f"expected {shape_of(p)[-1]}."
        )
    cond = tnp.logical_or(tnp.any(xx != x, axis=-1), tnp.any(xx < 0, axis=-1))
    return xx, tnp.logical_or(cond, tnp.sum(xx, axis=-1) != n)


def _multinomial_logpmf(x, n, p):
    n, p, npcond = _multinomial_parameters(n, p)
    x, xcond = _multinomial_quantiles(x, n, p)
    x = tnp.where(xcond[..., None], 0, x)  # a valid stand-in: no NaN reaches p's derivative
    result = sc.gammaln(n + 1) + tnp.sum(sc.xlogy(x, p) - sc.gammaln(x + 1), axis=-1)
    result = tnp.where(xcond, -np.inf, result)
    return tnp.where(npcond, np.nan, result)


class multinomial_gen:  # noqa: N801
    """The multinomial distribution (SciPy's `multinomial`): counts x of n trials with
    probabilities p; differentiable in p."""

    name = "multinomial"

    def logpmf(self, x, n, p):
        """SciPy's formula: -inf where x is not a valid outcome, NaN where n or p is invalid."""
        return _scalar(_multinomial_logpmf(x, n, p))

    def pmf(self, x, n, p):
        """exp(logpmf), as SciPy computes it."""
        return _scalar(tnp.exp(_multinomial_logpmf(x, n, p)))

    def __call__(self, n, p):
        return multinomial_frozen(n, p)


def _scalar(out):
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


class multinomial_frozen:  # noqa: N801
    def __init__(self, n, p):
        self.n, self.p = n, p

    def logpmf(self, x):
        return multinomial.logpmf(x, self.n, self.p)

    def pmf(self, x):
        return multinomial.pmf(x, self.n, self.p)


multivariate_normal = multivariate_normal_gen()
dirichlet = dirichlet_gen()
multinomial = multinomial_gen()
