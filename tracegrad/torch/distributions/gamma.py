"""The gamma family: `Gamma`, `Dirichlet` (normalised gammas) and `Beta` (a two-part Dirichlet,
as in PyTorch). Their `rsample` uses implicit reparameterisation (Figurnov et al. 2018), as
PyTorch's does: a gamma draw `x` moves with its shape `a` as `dx/da = -(dF/da)(x; a) / f(x; a)`
(`F` the regularised incomplete gamma function, `f` the density), so the sample's CDF level stays
fixed. SciPy has no derivative of `gammainc` in `a`; a central difference in `a` (relative step
1e-5, error near 1e-10) stands in for PyTorch's series. The rule is once differentiable, as is
PyTorch's (`_standard_gamma_grad` has no derivative).
"""

from __future__ import annotations

import numpy as np
import scipy.special as _sc

import tracegrad.scipy.special as sc
from tracegrad.torch import ops
from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.distributions import constraints
from tracegrad.torch.distributions.distribution import (
    ExponentialFamily,
    broadcast_all,
)
from tracegrad.torch.function import Function, once_differentiable
from tracegrad.torch.generator import default_generator
from tracegrad.torch.tensor import Tensor


def _standard_gamma_grad(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """dx/da of a standard gamma draw at fixed CDF level, in float64."""
    h = 1e-5 * np.maximum(a, 1e-3)
    dcdf_da = (_sc.gammainc(a + h, x) - _sc.gammainc(a - h, x)) / (2 * h)
    log_pdf = (a - 1) * np.log(x) - x - _sc.gammaln(a)
    return -dcdf_da * np.exp(-log_pdf)


class _StandardGamma(Function):
    """A Gamma(a, 1) draw per element of `a`, differentiable in `a` (implicit rule)."""

    @staticmethod
    def forward(ctx, concentration):
        a = concentration.detach().numpy().astype(np.float64)
        x = default_generator._numpy().standard_gamma(a)  # NumPy's sampler, not ATen's
        x = np.maximum(x, np.finfo(concentration.dtype).tiny)  # PyTorch clamps to `tiny`
        out = tensor(x, dtype=concentration.dtype)
        ctx.save_for_backward(concentration, out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        concentration, x = ctx.saved_tensors
        a = concentration.detach().numpy().astype(np.float64)
        dx_da = _standard_gamma_grad(x.detach().numpy().astype(np.float64), a)
        return grad_output * tensor(dx_da, dtype=concentration.dtype)


def _standard_gamma(concentration):
    return _StandardGamma.apply(concentration)


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    variance = property(lambda self: self.concentration / self.rate.pow(2))

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(*shape)) / self.rate.expand(*shape)
        return value

    def log_prob(self, value):
        value = value if isinstance(value, Tensor) else tensor(value)
        value = value.type_as(self.rate)
        if self._validate_args:
            self._validate_sample(value)
        c, rate = self.concentration, self.rate
        return sc.xlogy(c, rate) + sc.xlogy(c - 1, value) - rate * value - sc.gammaln(c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return sc.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - ops.log(self.rate) + sc.gammaln(c) + (1.0 - c) * sc.digamma(c)


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        c = self.concentration
        return c * (total - c) / (total.pow(2) * (total + 1))

    @property
    def mode(self):
        """The interior mode; where every concentration is below 1 there is none, and PyTorch
        returns a vertex: the one-hot of the argmax of that 0/0 row, which is the first."""
        c_minus_1 = (self.concentration - 1).clamp(min=0.0)
        with np.errstate(invalid="ignore"):
            mode = c_minus_1 / c_minus_1.sum(-1, True)
        k = self.concentration.shape[-1]
        vertex = (ops.arange(k) == mode.argmax(dim=-1).unsqueeze(-1)).type_as(mode)
        corner = (self.concentration < 1).all(dim=-1, keepdim=True)
        return ops.where(corner, vertex, mode)

    def rsample(self, sample_shape=()):
        # normalised gammas: the implicit gradient of each gamma flows through the division
        # (an unbiased reparameterisation gradient; PyTorch's `_dirichlet_grad` is another)
        shape = self._extended_shape(sample_shape)
        gammas = _standard_gamma(self.concentration.expand(*shape))
        tiny = float(np.finfo(gammas.dtype).tiny)
        eps = float(np.finfo(gammas.dtype).eps)
        return (gammas / gammas.sum(-1, True)).clamp(min=tiny, max=1 - eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return sc.xlogy(c - 1.0, value).sum(-1) + sc.gammaln(c.sum(-1)) - sc.gammaln(c).sum(-1)

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (
            sc.gammaln(c).sum(-1)
            - sc.gammaln(a0)
            - (k - a0) * sc.digamma(a0)
            - ((c - 1.0) * sc.digamma(c)).sum(-1)
        )


class Beta(ExponentialFamily):
    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None) -> None:
        numbers = (int, float)
        if isinstance(concentration1, numbers) and isinstance(concentration0, numbers):
            both = tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            both = ops.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ops.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()
