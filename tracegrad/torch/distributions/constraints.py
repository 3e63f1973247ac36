"""The constraints `validate_args` checks, with PyTorch's names and reprs (`GreaterThan(lower_bound=
0.0)`), since its messages print them. A check reads the value's NumPy array and returns a bool
array: validation is a test of the numbers, never part of a derivative.
"""

from __future__ import annotations

import numpy as np

from tracegrad.torch.tensor import Tensor


def _array(value) -> np.ndarray:
    return np.asarray(value.detach().numpy() if isinstance(value, Tensor) else value)


def _shown(value) -> str:
    """A bound as PyTorch's f-strings print it (a 0-d tensor as its number)."""
    if isinstance(value, Tensor) and value.dim() == 0:
        return format(value.item())
    return str(value)


class Constraint:
    """A set of values; `event_dim` dimensions on the right form one element."""

    is_discrete = False
    event_dim = 0

    def check(self, value) -> np.ndarray:
        raise NotImplementedError(type(self).__name__)

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Real(Constraint):
    def check(self, value):
        x = _array(value)
        return x == x  # NaN is the only real number that is not


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        x = _array(value)
        return (x == 0) | (x == 1)


class _Bounded(Constraint):
    """`GreaterThan`, `GreaterThanEq`, `LessThan`, `Interval`: bounds may be tensors."""

    def __init__(self, lower_bound=None, upper_bound=None, *, lower_closed=False, name=""):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self._lower_closed, self._name = lower_closed, name

    def check(self, value):
        x = _array(value)
        ok = np.ones(x.shape, bool)
        if self.lower_bound is not None:
            low = _array(self.lower_bound)
            ok = ok & ((low <= x) if self._lower_closed else (low < x))
        if self.upper_bound is not None:
            high = _array(self.upper_bound)
            ok = ok & ((x <= high) if self._name == "Interval" else (x < high))
        return ok

    def __repr__(self) -> str:
        bounds = {"lower_bound": self.lower_bound, "upper_bound": self.upper_bound}
        shown = ", ".join(f"{k}={_shown(v)}" for k, v in bounds.items() if v is not None)
        return f"{self._name}({shown})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: int) -> None:
        self.lower_bound = lower_bound

    def check(self, value):
        x = _array(value)
        return (x % 1 == 0) & (x >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: int, upper_bound: int) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        x = _array(value)
        return (x % 1 == 0) & (self.lower_bound <= x) & (x <= self.upper_bound)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Independent(Constraint):
    """`base` on each element, all of the rightmost `reinterpreted` dimensions together."""

    def __init__(self, base: Constraint, reinterpreted: int) -> None:
        self.base, self.reinterpreted = base, reinterpreted
        self.event_dim = base.event_dim + reinterpreted

    def check(self, value):
        ok = self.base.check(value)
        return ok.reshape(ok.shape[: ok.ndim - self.reinterpreted] + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base!r}, {self.reinterpreted})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        x = _array(value)
        return np.all(x >= 0, axis=-1) & (np.abs(x.sum(-1) - 1) < 1e-6)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value):
        x = _array(value).astype(np.float64)
        symmetric = np.isclose(x, np.swapaxes(x, -1, -2), atol=1e-6).all((-2, -1))
        with np.errstate(invalid="ignore"):
            positive = np.linalg.eigvalsh(x).min(-1) > 0 if x.size else np.ones(x.shape[:-2])
        return symmetric & positive


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        x = _array(value)
        lower = (np.tril(x) == x).all((-2, -1))
        return lower & (np.diagonal(x, axis1=-2, axis2=-1) > 0).all(-1)


class _Dependent(Constraint):
    """A constraint that depends on other parameters; never checked by itself."""

    def __repr__(self) -> str:
        return "DependentProperty()"


real = _Real()
boolean = _Boolean()
positive = _Bounded(0.0, name="GreaterThan")
nonnegative = _Bounded(0.0, lower_closed=True, name="GreaterThanEq")
unit_interval = _Bounded(0.0, 1.0, lower_closed=True, name="Interval")
nonnegative_integer = _IntegerGreaterThan(0)
real_vector = _Independent(real, 1)
simplex = _Simplex()
positive_definite = _PositiveDefinite()
lower_cholesky = _LowerCholesky()
dependent = _Dependent()


def independent(base: Constraint, reinterpreted: int) -> Constraint:
    return _Independent(base, reinterpreted)


def less_than(upper_bound) -> Constraint:
    return _Bounded(None, upper_bound, name="LessThan")


def greater_than(lower_bound) -> Constraint:
    return _Bounded(lower_bound, name="GreaterThan")


def interval(lower_bound, upper_bound) -> Constraint:
    return _Bounded(lower_bound, upper_bound, lower_closed=True, name="Interval")


def integer_interval(lower_bound: int, upper_bound: int) -> Constraint:
    return _IntegerInterval(lower_bound, upper_bound)
