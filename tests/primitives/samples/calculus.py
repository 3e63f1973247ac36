"""SAMPLES rows for the primitives of tracegrad.primitives.calculus."""

from __future__ import annotations

SAMPLES: dict = {}
