"""Switches, in one place. `debug`: verify every graph after every transform (slow).

`debug_nans` / `debug_infs`: raise FloatingPointError at the first NaN / inf a primitive
produces from values without one (`tracegrad.diagnostics`); `provenance`: record each node's
user source line (and, for backward nodes, the forward primitive they differentiate) without
checking values. Either debug switch records provenance too. Set them here, with
`tg.debug_nans()` / `tg.debug_infs()`, or with the environment variables below.
"""

from __future__ import annotations

import os


def _env(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


debug: bool = _env("TRACEGRAD_DEBUG")
debug_nans: bool = _env("TRACEGRAD_DEBUG_NANS")
debug_infs: bool = _env("TRACEGRAD_DEBUG_INFS")
provenance: bool = _env("TRACEGRAD_PROVENANCE")
