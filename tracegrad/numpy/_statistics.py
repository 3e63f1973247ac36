"""Statistics with NumPy's signatures: cov, corrcoef."""

__all__: list[str] = []
