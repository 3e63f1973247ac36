"""Benchmarks (run as modules: `python -m benchmarks.grad_overhead`), never part of the tests.

Every library gets one thread: the variables are set here, before NumPy (and its BLAS) or
any peer is imported, because BLAS reads them once when it loads.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
