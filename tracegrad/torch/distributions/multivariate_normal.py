"""`MultivariateNormal`, given one of `covariance_matrix`, `precision_matrix` or `scale_tril`.
Everything is computed from the lower Cholesky factor `L` (PyTorch's `_unbroadcasted_scale_tril`):
densities solve with `L` (no inverse), and `rsample` is `loc + L @ eps`, so gradients reach the
matrix through `cholesky` and `solve_triangular`'s own rules.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import tracegrad.numpy as tnp
import tracegrad.scipy.linalg as sl
from tracegrad.torch import linalg, ops
from tracegrad.torch.distributions import constraints
from tracegrad.torch.distributions.distribution import Distribution, kernel_sample


def _diagonal(m):
    return tnp.diagonal(m, axis1=-2, axis2=-1)


def _solve_lower(L, b):
    """`L^-1 b` for lower-triangular `L`, batch dimensions broadcast."""
    shape = np.broadcast_shapes(L.shape[:-2], b.shape[:-2])
    L = L.expand(*shape, *L.shape[-2:])
    b = b.expand(*shape, *b.shape[-2:])
    return sl.solve_triangular(L, b, lower=True)


def _precision_to_scale_tril(P):
    """PyTorch's route: the Cholesky factor of the flipped precision gives `L^-1`'s transpose."""
    Lf = linalg.cholesky(ops.flip(P, (-2, -1)))
    L_inv = ops.flip(Lf, (-2, -1)).transpose(-2, -1)
    eye = ops.eye(P.shape[-1], dtype=P.dtype)
    return _solve_lower(L_inv, eye)


def _matrix_arg(name: str, m, loc) -> tuple:
    if m.dim() < 2:
        raise ValueError(
            f"{name} must be at least two-dimensional, with optional leading batch dimensions"
        )
    return tuple(np.broadcast_shapes(m.shape[:-2], loc.shape[:-1]))


class MultivariateNormal(Distribution):
    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args=None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = (covariance_matrix, precision_matrix, scale_tril)
        if sum(m is not None for m in given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        if scale_tril is not None:
            batch_shape = _matrix_arg("scale_tril matrix", scale_tril, loc)
            self.scale_tril = scale_tril.expand(*batch_shape, *scale_tril.shape[-2:])
        elif covariance_matrix is not None:
            batch_shape = _matrix_arg("covariance_matrix", covariance_matrix, loc)
            shape = (*batch_shape, *covariance_matrix.shape[-2:])
            self.covariance_matrix = covariance_matrix.expand(*shape)
        else:
            batch_shape = _matrix_arg("precision_matrix", precision_matrix, loc)
            shape = (*batch_shape, *precision_matrix.shape[-2:])
            self.precision_matrix = precision_matrix.expand(*shape)
        self.loc = loc.expand(*batch_shape, loc.shape[-1])
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def _full(self, m):
        n = self._event_shape[0]
        return m.expand(*self._batch_shape, n, n)

    @functools.cached_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @functools.cached_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(ops.matmul(L, L.mT))

    @functools.cached_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        L_inv = _solve_lower(L, ops.eye(self._event_shape[0], dtype=L.dtype))
        return self._full(ops.matmul(L_inv.mT, L_inv))

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        variance = self._unbroadcasted_scale_tril.pow(2).sum(-1)
        return variance.expand(*self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = kernel_sample("normal", shape, self.loc.dtype)  # torch's `_standard_normal`
        L = self._unbroadcasted_scale_tril
        return self.loc + ops.matmul(L, eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return _diagonal(self._unbroadcasted_scale_tril).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(*self._batch_shape)


def _mahalanobis(L, x):
    """`x^T (L L^T)^-1 x` over the last dimension: `|L^-1 x|^2`."""
    return _solve_lower(L, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)
