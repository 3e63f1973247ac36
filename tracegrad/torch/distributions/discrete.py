"""The discrete families: `Bernoulli` and `Categorical` (given `probs` or `logits`; the other is
derived lazily and cached, as PyTorch's `lazy_property` does) and `Poisson`. Their samples are
integers in floating or int64 tensors and carry no gradient: PyTorch has no `rsample` for them.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import tracegrad.scipy.special as sc
from tracegrad.torch import ops
from tracegrad.torch.distributions import constraints
from tracegrad.torch.distributions.distribution import (
    Distribution,
    ExponentialFamily,
    broadcast_all,
    draw,
)


def _clamp_probs(probs):
    eps = float(np.finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _enumerated(values, batch_shape, expand):
    """The support along a new leading dimension, broadcast against (or expanded to) the
    batch shape."""
    values = values.reshape(-1, *(1,) * len(batch_shape))
    return values.expand(-1, *batch_shape) if expand else values


def _bce_with_logits(logits, target):
    """`binary_cross_entropy_with_logits(..., reduction='none')`, in its stable form."""
    return logits.clamp(min=0) - logits * target + ops.log1p(ops.exp(-logits.abs()))


class Bernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @functools.cached_property
    def logits(self):
        probs = _clamp_probs(self.probs)
        return ops.log(probs) - ops.log1p(-probs)

    @functools.cached_property
    def probs(self):
        return ops.sigmoid(self.logits)

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))
    param_shape = property(lambda self: self._param.shape)

    @property
    def mode(self):
        mode = (self.probs >= 0.5).type_as(self.probs)
        return ops.where(self.probs == 0.5, math.nan, mode)

    def enumerate_support(self, expand=True):
        values = ops.arange(2, dtype=self._param.dtype)
        return _enumerated(values, self._batch_shape, expand)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return ops.bernoulli(self.probs.detach().expand(*shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)


class Categorical(Distribution):
    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self._param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            self._param = self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    @functools.cached_property
    def logits(self):
        return ops.log(_clamp_probs(self.probs))

    @functools.cached_property
    def probs(self):
        return ops.softmax(self.logits, -1)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    param_shape = property(lambda self: self._param.shape)

    @property
    def mean(self):
        return ops.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    variance = mean

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    def enumerate_support(self, expand=True):
        values = ops.arange(self._num_events, dtype=np.int64)
        return _enumerated(values, self._batch_shape, expand)

    def sample(self, sample_shape=()):
        """PyTorch's: `multinomial` with replacement of each batch entry's probabilities, all
        the samples of one entry at once, as int64."""
        shape = self._extended_shape(sample_shape)
        count = math.prod(shape[: len(shape) - len(self._batch_shape)])
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        return ops.multinomial(probs_2d, count, True).T.reshape(shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = np.broadcast_shapes(value.shape, self.logits.shape)
        log_pmf = self.logits.expand(*shape)
        index = value.expand(*shape[:-1], 1)
        return log_pmf.gather(-1, index).squeeze(-1)

    def entropy(self):
        min_real = float(np.finfo(self.logits.dtype).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)


class Poisson(ExponentialFamily):
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate)
    variance = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        rate = np.broadcast_to(self.rate.detach().numpy().astype(np.float64), shape)
        return draw(lambda rng, s: rng.poisson(rate, s), shape, self.rate.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return sc.xlogy(value, rate) - rate - sc.gammaln(value + 1)
