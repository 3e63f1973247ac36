"""Provenance diagnostics: `debug_nans` / `debug_infs` and where each node came from.

`tg.debug_nans()` and `tg.debug_infs()` switch `tracegrad.config.debug_nans` / `debug_infs`
on inside a `with` block (as `jax.debug_nans`); while either is on, nodes record their origin
(`provenance`) and every primitive's result is checked (`checks`). See docs/debugging.md.
"""

from __future__ import annotations

from tracegrad.diagnostics.switches import debug_infs, debug_nans, provenance

__all__ = ["debug_infs", "debug_nans", "provenance"]
