"""SAMPLES rows for the sorting primitives."""

from __future__ import annotations

SAMPLES: dict = {}
