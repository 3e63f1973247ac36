"""`tracegrad.torch.distributions`: PyTorch's common distributions over the shim's tensors.

`Distribution` (distribution.py) holds the shapes, validation and messages; the families are in
continuous.py (location-scale and closed-form samplers), gamma.py (Gamma, Beta, Dirichlet, with
implicit reparameterisation), discrete.py and multivariate_normal.py; `kl_divergence` dispatches
over the closed forms in kl.py (same family) and kl_cross.py (pairs of families).
"""

from tracegrad.torch.distributions import constraints, kl_cross  # noqa: F401 - registers pairs
from tracegrad.torch.distributions.continuous import Exponential, Laplace, Normal, Uniform
from tracegrad.torch.distributions.discrete import Bernoulli, Categorical, Poisson
from tracegrad.torch.distributions.distribution import Distribution
from tracegrad.torch.distributions.gamma import Beta, Dirichlet, Gamma
from tracegrad.torch.distributions.kl import kl_divergence, register_kl
from tracegrad.torch.distributions.multivariate_normal import MultivariateNormal

__all__ = [
    "Bernoulli",
    "Beta",
    "Categorical",
    "Dirichlet",
    "Distribution",
    "Exponential",
    "Gamma",
    "Laplace",
    "MultivariateNormal",
    "Normal",
    "Poisson",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
