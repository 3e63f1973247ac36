"""Products: matmul, dot, tensordot, einsum (and the functions built on them)."""

from __future__ import annotations

PRIMITIVES = ()
