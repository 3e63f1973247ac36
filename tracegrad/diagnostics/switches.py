"""The context managers that set `tracegrad.config`'s debug switches for a block and restore
them after it (also as decorators, like `tg.torch.no_grad`)."""

from __future__ import annotations

import contextlib

from tracegrad import config


class _Switch(contextlib.ContextDecorator):
    """Sets `config.<name>` to `on` inside a `with` block; the previous value comes back."""

    name = ""

    def __init__(self, on: bool = True):
        self.on = bool(on)
        self._saved: list[bool] = []

    def __enter__(self):
        self._saved.append(getattr(config, self.name))
        setattr(config, self.name, self.on)
        return self

    def __exit__(self, *exc):
        setattr(config, self.name, self._saved.pop())
        return False

    def __repr__(self) -> str:
        return f"tg.{type(self).__name__}({self.on})"


class debug_nans(_Switch):
    """Raise FloatingPointError at the first NaN an operation creates, forward or backward,
    eager, interpreted, jitted, or in the tensors' backward (as `jax.debug_nans`)."""

    name = "debug_nans"


class debug_infs(_Switch):
    """Raise FloatingPointError at the first inf an operation creates (as `jax.debug_infs`)."""

    name = "debug_infs"


class provenance(_Switch):
    """Record each node's user source line (and a backward node's forward primitive)
    without checking values: error messages then name the lines."""

    name = "provenance"
