"""NumPy's NaN-ignoring reductions (nansum, nanmean, nanmax, nanmedian, ...), computed as
NumPy's `numpy/lib/_nanfunctions_impl.py` computes them."""

__all__: list[str] = []
