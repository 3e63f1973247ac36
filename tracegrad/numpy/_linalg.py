"""_linalg functions with NumPy's signatures."""

__all__: list[str] = []
