"""Differences, integrals and sliding products with NumPy's signatures: diff, gradient,
trapezoid, interp, convolve, correlate, cumulative_sum, cumulative_prod."""

__all__: list[str] = []
