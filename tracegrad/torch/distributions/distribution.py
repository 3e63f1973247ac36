"""`Distribution`: PyTorch's base class, shapes (`batch_shape`, `event_shape`), argument
validation with its messages, and the sampling plumbing shared by the families.

Every density is a composition of `tracegrad.torch` operations on the parameters, so `log_prob`,
`entropy` and `rsample` differentiate through the primitives' own rules. Random numbers come
from the global stream (`default_generator`, which `tracegrad.torch.manual_seed` seeds). Where
PyTorch's sampler calls a reproduced ATen kernel (`Normal`, `Uniform`, `Laplace`, `Exponential`,
`Bernoulli`, `Categorical`, `MultivariateNormal`'s noise), `kernel_sample` makes the same call,
so the same seed gives PyTorch's samples (`Laplace` then takes NumPy's log1p, torch SLEEF's,
and `MultivariateNormal` multiplies by the Cholesky factor with NumPy's matmul: equal to
rounding). `Poisson` and the gamma family (`Gamma`,
`Dirichlet`, `Beta`) draw with NumPy's samplers on the same twister (`draw`): the same seed gives
the same samples, not PyTorch's.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.distributions import constraints
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.generator import default_generator
from tracegrad.torch.grad_mode import no_grad
from tracegrad.torch.ops.random import _sample
from tracegrad.torch.tensor import Tensor

_VALIDATE_ARGS = [__debug__]  # PyTorch's default: validate unless Python runs with -O


def _shape_str(shape) -> str:
    return repr(tuple(shape))


def _shown(value) -> str:
    """A tensor as PyTorch's f-strings print it: a 0-d one as its number, others whole."""
    if isinstance(value, Tensor) and value.dim() == 0:
        return format(value.item())
    return str(value)


def broadcast_all(*values) -> tuple[Tensor, ...]:
    """PyTorch's `broadcast_all`: numbers take the first tensor's dtype (else the default
    dtype), then everything is expanded to the common shape."""
    dtype = next((v.dtype for v in values if isinstance(v, Tensor)), None)
    dtype = dtype if dtype is not None else get_default_dtype()
    tensors = [v if isinstance(v, Tensor) else tensor(v, dtype=dtype) for v in values]
    shape = np.broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t if t.shape == shape else t.expand(*shape) for t in tensors)


def kernel_sample(kind: str, shape, dtype, a=0.0, b=1.0) -> Tensor:
    """`torch.empty(shape, dtype=dtype)` filled in place as torch's samplers do, on the global
    stream: `uniform_(a, b)`, `normal_(a, b)` or `exponential_(a)` (kind "uniform", "normal" or
    "exponential")."""
    shape, dtype = tuple(shape), np.dtype(dtype)
    if kind == "exponential":
        values = default_generator._exponential(math.prod(shape), dtype, a).reshape(shape)
    else:
        values = _sample(default_generator, kind, shape, dtype, a, b)
    return Tensor._wrap(values)


def draw(make, shape, dtype) -> Tensor:
    """A tensor of `shape` and `dtype` from `make(rng, shape)` (a NumPy array), `rng` NumPy's
    samplers on the global stream's twister."""
    return tensor(np.asarray(make(default_generator._numpy(), tuple(shape))), dtype=dtype)


class Distribution:
    """The base of every distribution: `batch_shape` indexes independent distributions, each
    over values of `event_shape`; `sample(sample_shape)` returns `sample_shape + batch_shape +
    event_shape`."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        if value not in (True, False):
            raise ValueError
        _VALIDATE_ARGS[0] = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None) -> None:
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraint is constraints.dependent or param not in self.__dict__:
                    continue  # a parameter derived lazily from the one given is not checked
                value = self.__dict__[param]
                if not constraint.check(value).all():
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{_shape_str(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}"
                    )

    @property
    def _validate_args(self) -> bool:
        return self.__dict__.get("_validate_args_value", _VALIDATE_ARGS[0])

    @_validate_args.setter
    def _validate_args(self, value: bool) -> None:
        self.__dict__["_validate_args_value"] = value

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    def expand(self, batch_shape, _instance=None):
        """The same distribution repeated over a larger `batch_shape` (expanded parameters, no
        new validation). Tensors named in `arg_constraints` (and `_param`) are expanded, each
        keeping its event dimensions; a wrapped distribution (Beta's Dirichlet) is expanded in
        turn; anything else (MVN's unbroadcast Cholesky factor) is shared."""
        batch_shape = tuple(batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        names = set(self.arg_constraints) | {"_param"}
        n_batch = len(self._batch_shape)
        for key, value in self.__dict__.items():
            if key in names and isinstance(value, Tensor):
                value = value.expand(*batch_shape, *value.shape[n_batch:])
            elif isinstance(value, Distribution):
                value = value.expand(batch_shape)
            new.__dict__[key] = value
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """A sample that carries no gradient: `rsample` under `no_grad` where there is one."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        return self.sample((n,))

    def log_prob(self, value) -> Tensor:
        raise NotImplementedError

    def cdf(self, value) -> Tensor:
        raise NotImplementedError

    def icdf(self, value) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return ops.exp(self.entropy())

    def _extended_shape(self, sample_shape=()) -> tuple:
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def _validate_sample(self, value) -> None:
        """PyTorch's checks of a `log_prob` argument: a tensor, with the event shape on the
        right, broadcastable with the batch shape, inside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = len(value.shape) - len(self._event_shape)
        if tuple(value.shape[start:]) != self._event_shape:
            raise ValueError(
                f"The right-most size of value must match event_shape: "
                f"{_shape_str(value.shape)} vs {_shape_str(self._event_shape)}."
            )
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(value.shape), reversed(expected), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: "
                    f"{_shape_str(value.shape)} vs {_shape_str(expected)}."
                )
        support = self.support
        if not support.check(value).all():
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{_shape_str(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}"
            )

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        shown = []
        for p in names:
            value = self.__dict__[p]
            shown.append(f"{p}: {_shown(value) if value.numel() == 1 else _shape_str(value.shape)}")
        return f"{type(self).__name__}({', '.join(shown)})"


class ExponentialFamily(Distribution):
    """PyTorch's marker base of the exponential families (Normal, Bernoulli, Beta, Gamma,
    Dirichlet, Exponential, Poisson): `kl_divergence` between two different ones is refused
    with its message (kl.py), where other unregistered pairs get the generic one."""
