"""Primitives of NumPy's one-dimensional numerics whose bits come from NumPy's own C loops:
`interp` and `correlate` (under `np.convolve` and `np.correlate`).

(Being written: see issue 13.)
"""

from __future__ import annotations

PRIMITIVES: tuple = ()
