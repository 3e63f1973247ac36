"""Grad mode: whether operations on tensors record graph nodes (`no_grad`, `enable_grad`).

One `ContextVar`, so modes nest, follow threads and asyncio tasks, and unwind on exceptions.
Each class works as a context manager and as a decorator, as PyTorch's do.
"""

from __future__ import annotations

import functools
import warnings
from contextvars import ContextVar

_enabled: ContextVar[bool] = ContextVar("tracegrad_grad_enabled", default=True)


__all__ = [
    "detect_anomaly",
    "enable_grad",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]


def is_grad_enabled() -> bool:
    return _enabled.get()


class _Mode:
    """Sets grad mode to `self.mode` inside a `with` block or a decorated function."""

    mode = True

    def __enter__(self):
        self._token = _enabled.set(self.mode)
        return None

    def __exit__(self, *exc):
        _enabled.reset(self._token)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._clone(self):
                return fn(*args, **kwargs)

        return wrapper

    def _clone(self):
        return self.__class__()


class no_grad(_Mode):
    """Operations inside record nothing: results are leaves with `requires_grad=False`."""

    mode = False


class enable_grad(_Mode):
    """Recording back on, e.g. inside a `no_grad` block."""

    mode = True


class inference_mode(_Mode):
    """An alias of `no_grad` (PyTorch's inference tensors are not modelled): `mode=False`
    keeps recording as it is outside."""

    def __init__(self, mode: bool = True):
        self.enabled = mode

    def __enter__(self):
        self._token = _enabled.set(False if self.enabled else _enabled.get())

    def _clone(self):
        return inference_mode(self.enabled)


class set_grad_enabled(_Mode):
    """`set_grad_enabled(False)` as a context manager or decorator; called as a plain
    function it sets the mode for the rest of the current context, as in PyTorch."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = _enabled.get()
        _enabled.set(self.mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _enabled.set(self._prev)
        return False

    def __call__(self, fn):
        _enabled.set(self._prev)  # as a decorator it must not change the mode right away
        return super().__call__(fn)

    def _clone(self):
        prev = _enabled.get()
        clone = set_grad_enabled.__new__(set_grad_enabled)
        clone.mode, clone._prev = self.mode, prev
        _enabled.set(self.mode)
        return clone


# -- anomaly detection --------------------------------------------------------------------------

_anomaly: ContextVar[tuple[bool, bool]] = ContextVar("tracegrad_anomaly", default=(False, True))

_ANOMALY_WARNING = (
    "Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
    "enabled for debugging."
)


def is_anomaly_enabled() -> bool:
    return _anomaly.get()[0]


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly.get()[1]


class set_detect_anomaly:
    """Anomaly detection on or off: each recorded node keeps the stack that created it, and
    a backward pass that produces NaN names the node and shows that stack. Called as a
    function it sets the mode for the rest of the context, as in PyTorch."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = _anomaly.get()
        _anomaly.set((bool(mode), bool(check_nan)))

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _anomaly.set(self._prev)
        return False


class detect_anomaly:
    """Context manager and decorator: anomaly detection inside (it warns, as PyTorch's)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn(_ANOMALY_WARNING, UserWarning, stacklevel=2)
        self._token = _anomaly.set((True, self.check_nan))

    def __exit__(self, *exc):
        _anomaly.reset(self._token)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper
