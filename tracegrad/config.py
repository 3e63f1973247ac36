"""Switches, in one place. `debug`: verify every graph after every transform (slow)."""

from __future__ import annotations

import os

debug: bool = os.environ.get("TRACEGRAD_DEBUG", "") not in ("", "0")
