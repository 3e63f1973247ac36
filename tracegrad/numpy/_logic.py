"""NumPy's predicates and index-returning functions (no derivative): isclose, allclose,
array_equal, nonzero, argwhere, count_nonzero, bincount, histogram, ..."""

__all__: list[str] = []
