"""`kl_divergence(p, q)` and `register_kl`: closed forms for the pairs PyTorch registers among
the shim's families, found by PyTorch's dispatch (the most specific registered pair of base
classes). Where PyTorch writes infinities with masked assignment, these use `where`, which gives
the same values and the same zero gradient there.
"""

from __future__ import annotations

import functools
import math
import warnings

import tracegrad.scipy.special as sc
from tracegrad.torch import nn, ops
from tracegrad.torch.distributions.continuous import Exponential, Laplace, Normal, Uniform
from tracegrad.torch.distributions.discrete import Bernoulli, Categorical, Poisson
from tracegrad.torch.distributions.distribution import Distribution, ExponentialFamily
from tracegrad.torch.distributions.gamma import Beta, Dirichlet, Gamma
from tracegrad.torch.distributions.multivariate_normal import (
    MultivariateNormal,
    _diagonal,
    _mahalanobis,
    _solve_lower,
)

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}
_EULER = 0.57721566490153286060


def register_kl(type_p, type_q):
    """Decorator registering `fun(p, q)` for `kl_divergence` of the pair of types."""
    for name, t in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {t}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new pair may be more specific than a memoized match
        return fun

    return decorator


@functools.total_ordering
class _Match:
    """Orders pairs of types lexicographically by subclass: the smaller is more specific."""

    def __init__(self, *types) -> None:
        self.types = types

    def __eq__(self, other) -> bool:
        return self.types == other.types

    def __le__(self, other) -> bool:
        for x, y in zip(self.types, other.types, strict=True):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left, right = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left is not right:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({left_p.__name__}, {right_q.__name__})",
            RuntimeWarning,
            stacklevel=2,
        )
    return left


def kl_divergence(p: Distribution, q: Distribution):
    """KL(p || q), one value per batch entry."""
    key = type(p), type(q)
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
            f"{type(q).__name__}"
        )
    return fun(p, q)


def _inf_where(mask, t):
    return ops.where(mask, math.inf, t)


def _zero_where(mask, t):
    return ops.where(mask, 0.0, t)


def _infinite_like(t):
    return ops.full_like(t, math.inf)


def _x_log_x(t):
    return sc.xlogy(t, t)


def _softplus(x):
    return nn.functional.softplus(x)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """Reached only by pairs of different families (every family here registers its own
    pair): PyTorch's Bregman fallback refuses those with this message."""
    raise NotImplementedError(
        "The cross KL-divergence between different exponential families cannot"
        + " " * 29
        + "be computed using Bregman divergences"
    )


# -- the same family ---------------------------------------------------------------------------


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    t1 = _zero_where(p.probs == 0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    t2 = _zero_where(p.probs == 1, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    lg = sc.gammaln
    t1 = lg(q.concentration1) + lg(q.concentration0) + lg(sum_p)
    t2 = lg(p.concentration1) + lg(p.concentration0) + lg(sum_q)
    t3 = (p.concentration1 - q.concentration1) * sc.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * sc.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * sc.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    shape = t.shape
    t = _inf_where((q.probs == 0).expand(*shape), t)
    t = _zero_where((p.probs == 0).expand(*shape), t)
    return t.sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sc.gammaln(sum_p) - sc.gammaln(sum_q)
    t2 = (sc.gammaln(p.concentration) - sc.gammaln(q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = sc.digamma(p.concentration) - sc.digamma(sum_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = sc.gammaln(q.concentration) - sc.gammaln(p.concentration)
    t3 = (p.concentration - q.concentration) * sc.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ops.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with"
            + " " * 26
            + "different event shapes cannot be computed"
        )
    q_L, p_L = q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril
    half_term1 = _diagonal(q_L).log().sum(-1) - _diagonal(p_L).log().sum(-1)
    n = p.event_shape[0]
    term2 = _solve_lower(q_L, p_L).pow(2).sum((-2, -1))  # trace(X X^T), X = q_L^-1 p_L
    term3 = _mahalanobis(q_L, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)
