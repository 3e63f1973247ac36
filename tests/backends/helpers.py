"""What the backend tests share: taking NumPy arguments into a library, reading results back,
and the comparison the issue asks for (1e-12 relative: dask sums in another order)."""

from __future__ import annotations

import numpy as np

from tracegrad.backends.libraries import library_of


def to_dask(a, parts: int = 2):
    """`a` as a dask array chunked along its first axis (Python scalars stay)."""
    import dask.array as da

    if not isinstance(a, np.ndarray) or a.ndim == 0:
        return a
    step = max(1, -(-a.shape[0] // parts))
    return da.from_array(a, chunks=(step, *a.shape[1:]))


def to_strict(a):
    import array_api_strict as xp

    return xp.asarray(a) if isinstance(a, np.ndarray | np.generic) else a


def back(x):
    """A library's array as NumPy's (dask computed)."""
    if library_of(x) == "dask":
        x = x.compute()
    if library_of(x) == "array_api_strict":
        return np.asarray(x._array)
    return np.asarray(x)


def assert_close(actual, expected, rtol: float = 1e-12) -> None:
    actual, expected = back(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if actual.size == 0:
        return
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(actual), finite)
    scale = max(1.0, float(np.max(np.abs(expected[finite]), initial=0.0)))
    np.testing.assert_allclose(actual[finite], expected[finite], rtol=rtol, atol=rtol * scale)
