"""Whether `x ** 2 -> x * x` and `x ** 1 -> x` keep NumPy's bits, probed once per dtype.

An empirical check rather than a proof: the rewrites are exact only where NumPy's `power`
happens to give the bits of a multiply (or of `x`), which depends on the dtype, so it is
tested on special values and random bit patterns, for arrays and NumPy scalars, and cached.
"""

from __future__ import annotations

import functools

import numpy as np

# -- x ** 2 == x * x, x ** 1 == x: checked once per dtype ---------------------------------------


@functools.cache
def _pow_is_exact(dtype: np.dtype) -> bool:
    """Whether `np.power(x, 2)` has the bits of `x * x`, and `np.power(x, 1)` those of `x`,
    for this dtype (exponents given as Python scalars or 0-d arrays), on special values and
    random bit patterns, for arrays and NumPy scalars."""
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return False
    x = _probe_values(dtype)
    with np.errstate(all="ignore"):
        for e2, e1 in ((2, 1), (2.0, 1.0), (np.asarray(2, dtype), np.asarray(1, dtype))):
            if not _same_bits(np.power(x, e2), x * x) or not _same_bits(np.power(x, e1), x):
                return False
            small = list(x[:64]) + [x[i : i + 1] for i in range(64)] + list(map(np.asarray, x[:64]))
            for s in small:
                if not _same_bits(np.power(s, e2), s * s) or not _same_bits(np.power(s, e1), s):
                    return False
    return True


def _probe_values(dtype: np.dtype) -> np.ndarray:
    fi = np.finfo(dtype)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, 3.0]
    specials += [fi.tiny, -fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.max]
    specials += [-fi.max, np.sqrt(fi.max), np.sqrt(fi.tiny), fi.eps, 1 + fi.eps]
    utype = np.dtype(f"u{dtype.itemsize}")
    rng = np.random.default_rng(0)
    bits = rng.integers(0, np.iinfo(utype).max, 4096, dtype=utype, endpoint=True)
    normal = rng.standard_normal(1024) * 10.0 ** rng.integers(-30, 30, 1024)
    with np.errstate(all="ignore"):
        return np.concatenate([np.asarray(specials, dtype), bits.view(dtype), normal.astype(dtype)])


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    u = f"u{a.dtype.itemsize}"
    return bool(np.array_equal(a.reshape(-1).view(u), b.reshape(-1).view(u)))
