"""Sorting and order statistics: sort and argsort (and what builds on them).

(Being written: see issue 13.)
"""

from __future__ import annotations

PRIMITIVES: tuple = ()
