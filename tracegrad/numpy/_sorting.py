"""Sorting, searching and order statistics with NumPy's signatures."""

__all__: list[str] = []
