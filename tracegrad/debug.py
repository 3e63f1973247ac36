"""`tracegrad.debug`: `tg.debug.print(fmt, *args, **kwargs)`, as `jax.debug.print` (values of
traced arrays printed when the program runs; see `tracegrad.api.conveniences.debug_print`)."""

from tracegrad.api.conveniences import debug_print as print  # noqa: A001 - jax.debug's name

__all__ = ["print"]
